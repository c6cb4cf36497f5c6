//! The records the recorder emits: one row-to-be for the store each (messages,
//! session facts, documents, snapshots, edits, reads, signals, offers), and the
//! session-wide sequence that numbers them. Plain data, no logic.

use serde_json::Value;

use super::document::{ChangeSpan, LspRange, PositionEncoding};
use crate::core::lsp::{Direction, MessageKind, OfferKind};
use crate::core::trajectory::{LineRange, Origin, ReadRole};

/// The session's sequence numbers: every frame and every record that has a `seq`
/// takes the next one, whichever tracker makes it.
#[derive(Debug, Default)]
pub(super) struct Sequence {
    last: u64,
}

impl Sequence {
    /// The next number (the first is 1).
    pub(super) fn next(&mut self) -> u64 {
        self.last += 1;
        self.last
    }

    /// The number taken last (0 before the first).
    pub(super) fn last(&self) -> u64 {
        self.last
    }
}

/// One row-to-be for the store.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A message as seen on the wire.
    Message(MessageRecord),
    /// Something learned about the session (workspace, encoding, peers).
    Session(SessionFact),
    /// A document seen for the first time.
    Document(DocumentRecord),
    /// Full text of a document at open (or save with text), or a close marker.
    Snapshot(SnapshotRecord),
    /// One content change.
    Edit(EditRecord),
    /// A read.
    Read(ReadRecord),
    /// An editor signal.
    Signal(SignalRecord),
    /// One item a server offered (written again, same key, when a resolve changed it).
    Offer(OfferRecord),
}

/// A message's metadata and (optionally) its redacted bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRecord {
    /// Session-wide sequence number.
    pub seq: u64,
    /// Nanoseconds since the session started.
    pub t_ns: u64,
    /// Direction.
    pub dir: Direction,
    /// Request, response, notification, other; `None` when the body is not JSON.
    pub kind: Option<MessageKind>,
    /// Method (requests, notifications; responses get their request's method).
    pub method: Option<String>,
    /// Raw id text.
    pub id: Option<String>,
    /// Frame size in bytes (header + body).
    pub size: usize,
    /// Redacted frame bytes, when raw recording is on and the message is not about an excluded file.
    pub raw: Option<Vec<u8>>,
    /// How many secrets were masked in `raw`.
    pub redactions: usize,
    /// Why the frame is not a valid message, if it is not.
    pub invalid: Option<String>,
    /// Whether the proxy consumed it instead of forwarding (editor signals).
    pub consumed: bool,
}

/// Facts about the session learned from the traffic.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionFact {
    /// The workspace root (from the command line or `initialize`).
    Workspace(String),
    /// The position encoding in effect.
    PositionEncoding(PositionEncoding),
    /// `clientInfo` name and version.
    Client(String),
    /// `serverInfo` name and version.
    Server(String),
    /// Another workspace folder (multi-root): `dir` on disk, `prefix` its path as
    /// the privacy rules see it (relative to the workspace root, else absolute).
    Root {
        /// The folder.
        dir: String,
        /// Its path for the privacy rules.
        prefix: String,
    },
}

/// A document's identity.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRecord {
    /// The LSP URI.
    pub uri: String,
    /// Path relative to the workspace when inside it, else the URI's path (or the URI).
    pub path: String,
    /// LSP language id.
    pub language_id: Option<String>,
    /// Privacy rules keep its text out of the database.
    pub excluded: bool,
    /// Sequence number of the message that first named it.
    pub first_seq: u64,
}

/// Kind of a snapshot row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotKind {
    /// didOpen (full text).
    Open,
    /// didSave (text when the editor included it).
    Save,
    /// didClose (no text).
    Close,
}

impl SnapshotKind {
    /// Lowercase name used in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            SnapshotKind::Open => "open",
            SnapshotKind::Save => "save",
            SnapshotKind::Close => "close",
        }
    }
}

/// A document text at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotRecord {
    /// Sequence number.
    pub seq: u64,
    /// Time.
    pub t_ns: u64,
    /// Document URI.
    pub uri: String,
    /// Open, save or close.
    pub kind: SnapshotKind,
    /// Document version (saves and closes carry the tracked version).
    pub version: i64,
    /// Redacted text; `None` for closes, saves without text, and excluded files.
    pub text: Option<String>,
    /// Secrets masked in `text`.
    pub redactions: usize,
}

/// One content change.
#[derive(Debug, Clone, PartialEq)]
pub struct EditRecord {
    /// Sequence number.
    pub seq: u64,
    /// Time.
    pub t_ns: u64,
    /// Document URI.
    pub uri: String,
    /// Version after the change.
    pub version: i64,
    /// Index of the change within its didChange.
    pub change_index: usize,
    /// Canonical coordinates and both texts (redacted).
    pub span: ChangeSpan,
    /// Secrets masked in the texts.
    pub redactions: usize,
    /// Who or what made it (a tool's edit matched by [`super::origin`], else the user).
    pub origin: Origin,
}

/// A read location.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadRecord {
    /// Sequence number.
    pub seq: u64,
    /// Time.
    pub t_ns: u64,
    /// Document URI read.
    pub uri: String,
    /// Method that caused it (`open` for didOpen).
    pub via: String,
    /// Request position, response target, or open.
    pub role: ReadRole,
    /// Lines, half-open.
    pub lines: LineRange,
    /// Raw id of the request, if any.
    pub request_id: Option<String>,
}

/// An editor signal.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalRecord {
    /// Sequence number.
    pub seq: u64,
    /// Time.
    pub t_ns: u64,
    /// `cursor`, `selection`, `visible_ranges`, `focus` (or another `$/nextedit/` suffix).
    pub kind: String,
    /// Document URI, if the signal names one.
    pub uri: Option<String>,
    /// Params as sent.
    pub payload: Value,
}

/// One item of an answer that offers the developer something (a completion item, an
/// inline completion, a code action, a rename, an applied edit): a row of `offers`.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferRecord {
    /// Sequence number of the answer (of the request itself for `workspace/applyEdit`).
    pub seq: u64,
    /// 0-based position in the answer as sent.
    pub rank: usize,
    /// Sequence number of the request it answers.
    pub request_seq: u64,
    /// Time of the answer.
    pub t_ns: u64,
    /// Request to answer.
    pub latency_ns: u64,
    /// What kind of offer.
    pub kind: OfferKind,
    /// LSP method of the request.
    pub method: String,
    /// Document the request was about.
    pub uri: String,
    /// Request position: 0-based line and byte column, in the text at the request.
    pub position: Option<(usize, usize)>,
    /// Completion label, inline item's filter text, code action title.
    pub label: Option<String>,
    /// The text it inserts at the position (its main edit's text, snippets expanded).
    pub text: String,
    /// Every edit it makes, in byte offsets of the texts at the answer.
    pub edits: Vec<OfferEdit>,
    /// Items in the answer (also those past the recorded ones).
    pub list_size: usize,
    /// The answer is a `CompletionList` with `isIncomplete` (typing asks again).
    pub incomplete: bool,
}

/// One edit of an offer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferEdit {
    /// Document URI.
    pub uri: String,
    /// Where it applies: byte offsets in the document's text at the answer, or, for a
    /// document that was not open then, the LSP range as sent.
    pub at: OfferSpan,
    /// The new text.
    pub text: String,
}

/// Where an offer's edit applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferSpan {
    /// Byte offsets `start..end` in the open document's text.
    Bytes(usize, usize),
    /// An LSP range (line, character) in a document that was not open.
    Lsp(LspRange),
}
