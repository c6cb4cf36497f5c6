//! What a language server offered in a recorded session, in the trajectory's terms
//! (files by path, milliseconds since the session started): the input of `nextedit
//! live` and of the `recorded:SERVER` suggester. A recorded trajectory's `offers` are
//! loaded with the stored session from the `offers` table (by
//! `sessions::load_session_trajectory`); never sent to a suggester through the protocol.

use serde::{Deserialize, Serialize};

use crate::core::lsp::OfferKind;

/// One edit an offer would make: bytes of a file's text at the time of the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfferEdit {
    /// File path (as in the trajectory's `files`).
    pub file: String,
    /// First replaced byte.
    pub start_byte: usize,
    /// End of the replaced bytes (exclusive).
    pub end_byte: usize,
    /// Inserted text.
    pub text: String,
}

/// One offered item, as the `offers` table holds it, with paths and times in the
/// trajectory's terms (milliseconds since the session started, files by path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Offer {
    /// Seq of the answer message (the session's one order of everything).
    pub seq: u64,
    /// 0-based position in the answer as sent.
    pub rank: usize,
    /// Seq of the request it answers (the items of one answer share it).
    pub request_seq: u64,
    /// Time of the answer, milliseconds since the session started.
    pub t_ms: f64,
    /// Request to answer, milliseconds.
    pub latency_ms: f64,
    /// What kind of proposal.
    #[serde(with = "kind_name")]
    pub kind: OfferKind,
    /// LSP method of the request.
    pub method: String,
    /// The document the request was about.
    pub file: String,
    /// Request position: 0-based line, when it has one.
    pub line: Option<usize>,
    /// Request position: byte column in the text at the answer.
    pub col_byte: Option<usize>,
    /// Completion label or code action title.
    pub label: Option<String>,
    /// The text it would insert at the position.
    pub text: String,
    /// The edits it would make, in the texts at the answer.
    pub edits: Vec<OfferEdit>,
    /// Items in the answer.
    pub list_size: usize,
    /// The language server that made it (the session's server command's program name).
    pub server: String,
}

impl Offer {
    /// Time of the request, milliseconds since the session started.
    pub fn request_t_ms(&self) -> f64 {
        self.t_ms - self.latency_ms
    }
}

/// `OfferKind` by its `offers.kind` name in JSON.
mod kind_name {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use crate::core::lsp::OfferKind;

    pub fn serialize<S: Serializer>(kind: &OfferKind, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(kind.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<OfferKind, D::Error> {
        let name = String::deserialize(d)?;
        OfferKind::parse(&name)
            .ok_or_else(|| D::Error::custom(format!("unknown offer kind {name:?}")))
    }
}
