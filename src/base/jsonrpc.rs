//! JSON-RPC 2.0 for nextedit's clients: the message shapes (request, notification and
//! result bodies), request ids ([`RequestIds`]), and what a message is once decoded
//! ([`Incoming`]: request, notification, response) and what an answer holds
//! ([`Response`]: a result, or the [`ErrorObject`] with code, message and data), which
//! each client turns into its own typed error. No transport, no processes.
//!
//! Both clients build and decode their messages here and keep only their transport:
//! [`crate::engine::lsp_client`] frames them with `Content-Length` headers for language
//! servers, `suggest::process` writes one per line for suggester programs.
//! The proxy uses neither: it forwards bytes and decodes envelopes borrowed from them
//! ([`crate::core::lsp::Envelope`]), never re-serialising a message.

use serde::Serialize;
use serde_json::{Value, json};

/// A request id this side allocated (ids start at 1 and only grow).
pub type RequestId = i64;

/// Allocates the ids of one connection's requests.
#[derive(Debug)]
pub struct RequestIds {
    next: RequestId,
}

impl Default for RequestIds {
    fn default() -> RequestIds {
        RequestIds { next: 1 }
    }
}

impl RequestIds {
    /// The next id.
    pub fn next_id(&mut self) -> RequestId {
        let id = self.next;
        self.next += 1;
        id
    }
}

/// A request's body.
pub fn request<P: Serialize>(id: RequestId, method: &str, params: P) -> Vec<u8> {
    encode(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// A notification's body.
pub fn notification<P: Serialize>(method: &str, params: P) -> Vec<u8> {
    encode(json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// The body of a successful response to the other side's request `id` (its raw JSON).
pub fn result_response(id: &Value, result: Value) -> Vec<u8> {
    encode(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn encode(message: Value) -> Vec<u8> {
    message.to_string().into_bytes()
}

/// A JSON-RPC error object (`code`, `message`, optional `data`).
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    /// Error code (0 when the object has none).
    pub code: i64,
    /// Message (empty when the object has none).
    pub message: String,
    /// Extra data, as sent.
    pub data: Option<Value>,
}

impl ErrorObject {
    /// Reads an `error` member leniently: a peer's malformed error is still an error.
    fn from_value(error: &Value) -> ErrorObject {
        ErrorObject {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            data: error.get("data").cloned(),
        }
    }
}

/// A decoded message, by which members it has (`method`, `id`; present even if `null`).
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The other side asks something (`method` and `id`).
    Request {
        /// The id, as sent (answered with the same JSON).
        id: Value,
        /// The method.
        method: String,
        /// The whole message.
        message: Value,
    },
    /// The other side tells something (`method`, no `id`).
    Notification {
        /// The method.
        method: String,
        /// The whole message.
        message: Value,
    },
    /// An answer (`id`, no `method`).
    Response(Response),
    /// Neither.
    Other,
}

/// An answer to a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id, as sent.
    pub id: Value,
    /// `result` (`null` when absent), or the `error` object.
    pub outcome: Result<Value, ErrorObject>,
}

impl Response {
    /// Reads a message as an answer, whatever else it holds: its `id` (`null` when
    /// absent) and its `error` if it has one (even `null`), else its `result`.
    pub fn from_message(mut message: Value) -> Response {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let outcome = match message.get("error") {
            Some(error) => Err(ErrorObject::from_value(error)),
            None => Ok(message
                .get_mut("result")
                .map(Value::take)
                .unwrap_or(Value::Null)),
        };
        Response { id, outcome }
    }

    /// The id when it is one this side could have allocated.
    pub fn request_id(&self) -> Option<RequestId> {
        self.id.as_i64()
    }
}

impl Incoming {
    /// Decodes a parsed message.
    pub fn decode(message: Value) -> Incoming {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (method, message.get("id").cloned()) {
            (Some(method), Some(id)) => Incoming::Request {
                id,
                method,
                message,
            },
            (Some(method), None) => Incoming::Notification { method, message },
            (None, Some(_)) => Incoming::Response(Response::from_message(message)),
            (None, None) => Incoming::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let mut ids = RequestIds::default();
        assert_eq!((ids.next_id(), ids.next_id()), (1, 2));
        let parsed = |body: Vec<u8>| serde_json::from_slice::<Value>(&body).unwrap();
        assert_eq!(
            parsed(request(3, "suggest", json!({"b": 1, "a": 2}))),
            json!({"jsonrpc": "2.0", "id": 3, "method": "suggest", "params": {"a": 2, "b": 1}})
        );
        assert_eq!(
            parsed(notification("exit", Value::Null)),
            json!({"jsonrpc": "2.0", "method": "exit", "params": null})
        );
        assert_eq!(
            parsed(result_response(&json!("x"), json!([null]))),
            json!({"jsonrpc": "2.0", "id": "x", "result": [null]})
        );
    }

    #[test]
    fn decoding() {
        let response = |v: Value| match Incoming::decode(v) {
            Incoming::Response(response) => response,
            other => panic!("not a response: {other:?}"),
        };
        let ok = response(json!({"jsonrpc": "2.0", "id": 4, "result": {"x": 1}}));
        assert_eq!(
            (ok.request_id(), ok.outcome),
            (Some(4), Ok(json!({"x": 1})))
        );
        let no_result = response(json!({"jsonrpc": "2.0", "id": "4"}));
        assert_eq!(
            (no_result.request_id(), no_result.outcome),
            (None, Ok(Value::Null))
        );
        let error = response(json!({"jsonrpc": "2.0", "id": 5, "result": 1,
                                    "error": {"code": -32601, "message": "no", "data": [1]}}));
        assert_eq!(
            error.outcome,
            Err(ErrorObject {
                code: -32601,
                message: "no".into(),
                data: Some(json!([1]))
            })
        );
        let odd = response(json!({"id": 6, "error": "broken"}));
        assert_eq!(
            odd.outcome,
            Err(ErrorObject {
                code: 0,
                message: String::new(),
                data: None
            })
        );
        assert!(matches!(
            Incoming::decode(json!({"jsonrpc": "2.0", "id": null, "method": "m"})),
            Incoming::Request {
                id: Value::Null,
                ..
            }
        ));
        assert!(matches!(
            Incoming::decode(json!({"jsonrpc": "2.0", "method": "m"})),
            Incoming::Notification { .. }
        ));
        assert_eq!(Incoming::decode(json!({"jsonrpc": "2.0"})), Incoming::Other);
        assert_eq!(Incoming::decode(json!([1])), Incoming::Other);
        // An answer that also names a method is still read as an answer when asked.
        let odd = Response::from_message(json!({"id": 7, "method": "m", "error": null}));
        assert_eq!((odd.request_id(), odd.outcome.is_err()), (Some(7), true));
    }
}
