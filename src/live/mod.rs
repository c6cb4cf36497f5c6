//! What became of the offers a language server made in a recorded session
//! (`nextedit live`): the typed offers ([`Offer`]), each offer's outcome and what
//! happened next (`outcome`, with the inserted text tracked through later edits by
//! `span`), the figures over one or many sessions (`figures`), their text and JSON
//! forms (`text`, `json`) and the preference-training lines of `sessions export
//! --offers` (`json::export_line`). Pure: offers and a trajectory in, typed values out; the
//! outcome is computed when read, never stored, so it can be recomputed.

pub mod figures;
pub mod json;
pub mod outcome;
pub mod span;
pub mod text;

pub use figures::{GroupBy, LiveFigures, SessionLive, figures};
pub use outcome::{
    Aftermath, DismissReason, Evidence, LiveConfig, OfferOutcome, Outcome, RightButNotTaken,
    analyse,
};

use serde::{Deserialize, Serialize};

/// What kind of proposal an offer was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OfferKind {
    /// An item of a `textDocument/completion` list.
    Completion,
    /// An item of a `textDocument/inlineCompletion` answer.
    InlineCompletion,
    /// A code action with edits.
    CodeAction,
    /// A rename's workspace edit.
    Rename,
    /// A `workspace/applyEdit` proposal.
    ApplyEdit,
}

impl OfferKind {
    /// Every kind, in declaration order.
    pub const ALL: [OfferKind; 5] = [
        OfferKind::Completion,
        OfferKind::InlineCompletion,
        OfferKind::CodeAction,
        OfferKind::Rename,
        OfferKind::ApplyEdit,
    ];

    /// The snake-case name of the `offers.kind` column.
    pub fn as_str(self) -> &'static str {
        match self {
            OfferKind::Completion => "completion",
            OfferKind::InlineCompletion => "inline_completion",
            OfferKind::CodeAction => "code_action",
            OfferKind::Rename => "rename",
            OfferKind::ApplyEdit => "apply_edit",
        }
    }

    /// Parses the snake-case name; `None` for anything else.
    pub fn parse(name: &str) -> Option<OfferKind> {
        OfferKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

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

/// The program name of a server command (`/usr/bin/pyright-langserver --stdio` →
/// `pyright-langserver`), the name `--by server` groups by and `recorded:SERVER` matches.
pub fn server_name(command: &[String]) -> String {
    // `node …/pyright-langserver.js` or `python -m pylsp`: the first argument that is
    // not an interpreter names the server.
    const INTERPRETERS: [&str; 6] = ["node", "python", "python3", "env", "npx", "uvx"];
    let base = |arg: &str| {
        let name = arg.rsplit('/').next().unwrap_or(arg);
        name.strip_suffix(".js").unwrap_or(name).to_string()
    };
    command
        .iter()
        .map(|arg| base(arg))
        .find(|name| !name.starts_with('-') && !INTERPRETERS.contains(&name.as_str()))
        .unwrap_or_default()
}

/// Whether an offer's server matches `wanted` (`recorded:pyright` matches
/// `pyright-langserver`): the server name contains it.
pub fn server_matches(server: &str, wanted: &str) -> bool {
    server.contains(wanted)
}
