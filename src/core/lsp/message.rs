//! Message envelopes: what kind of JSON-RPC message a body is, borrowed from its bytes
//! ([`Envelope`] with its [`MessageKind`]; [`Direction`], which side sent it).

use serde::Deserialize;
use serde_json::value::RawValue;

/// Which way a message travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Direction {
    /// Editor (client) to language server.
    ClientToServer,
    /// Language server to editor.
    ServerToClient,
}

impl Direction {
    /// Short name used in the database: `c2s` or `s2c`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToServer => "c2s",
            Direction::ServerToClient => "s2c",
        }
    }

    /// The other direction.
    pub fn reverse(self) -> Direction {
        match self {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        }
    }
}

/// JSON-RPC message kind, by shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// `method` and `id`.
    Request,
    /// `method`, no `id`.
    Notification,
    /// `id`, no `method`, with `result` or `error`.
    Response,
    /// Valid JSON but none of the above (or a batch array).
    Other,
}

impl MessageKind {
    /// Lowercase name used in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Notification => "notification",
            MessageKind::Response => "response",
            MessageKind::Other => "other",
        }
    }
}

/// A decoded envelope borrowing from the body bytes; payloads stay raw JSON.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    /// Request/response kind.
    pub kind: MessageKind,
    /// Method name for requests and notifications.
    pub method: Option<String>,
    /// The id's raw JSON text (`1` and `"1"` are different ids).
    pub id: Option<&'a str>,
    /// Raw `params`.
    pub params: Option<&'a RawValue>,
    /// Raw `result` (present even when it is `null`).
    pub result: Option<&'a RawValue>,
    /// Raw `error`.
    pub error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct WireEnvelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// Keeps `null` as `Some(null)`: a key that is present with a null value still counts.
fn present<'de, D>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    <&'de RawValue>::deserialize(deserializer).map(Some)
}

impl<'a> Envelope<'a> {
    /// Decodes a message body. Errors for non-JSON or non-object bodies.
    pub fn parse(body: &'a [u8]) -> Result<Envelope<'a>, serde_json::Error> {
        let wire: WireEnvelope<'a> = serde_json::from_slice(body)?;
        let id = wire.id.map(RawValue::get).filter(|id| *id != "null");
        let kind = match (
            &wire.method,
            id,
            wire.result.is_some() || wire.error.is_some(),
        ) {
            (Some(_), Some(_), _) => MessageKind::Request,
            (Some(_), None, _) => MessageKind::Notification,
            (None, _, true) => MessageKind::Response,
            _ => MessageKind::Other,
        };
        Ok(Envelope {
            kind,
            method: wire.method,
            id,
            params: wire.params,
            result: wire.result,
            error: wire.error,
        })
    }

    /// `params` decoded into a type; `None` if absent or of another shape.
    pub fn params_as<T: Deserialize<'a>>(&self) -> Option<T> {
        serde_json::from_str(self.params?.get()).ok()
    }

    /// `result` decoded into a type; `None` if absent or of another shape.
    pub fn result_as<T: Deserialize<'a>>(&self) -> Option<T> {
        serde_json::from_str(self.result?.get()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let req = Envelope::parse(
            br#"{"jsonrpc":"2.0","id":"7","method":"textDocument/hover","params":{}}"#,
        )
        .unwrap();
        assert_eq!(
            (req.kind, req.id, req.method.as_deref()),
            (
                MessageKind::Request,
                Some("\"7\""),
                Some("textDocument/hover")
            )
        );
        let null_result = Envelope::parse(br#"{"jsonrpc":"2.0","id":7,"result":null}"#).unwrap();
        assert_eq!(null_result.kind, MessageKind::Response);
        assert_eq!(null_result.result.unwrap().get(), "null");
        let note =
            Envelope::parse(br#"{"jsonrpc":"2.0","method":"$/nextedit/cursor","params":{"a":1}}"#)
                .unwrap();
        assert_eq!(note.kind, MessageKind::Notification);
        let err = Envelope::parse(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#,
        )
        .unwrap();
        assert_eq!((err.kind, err.id), (MessageKind::Response, None));
        assert!(Envelope::parse(b"[1,2]").is_err());
        assert!(Envelope::parse(b"not json").is_err());
    }
}
