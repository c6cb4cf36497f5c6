//! The trajectory domain: what a developer (or a commit) did, as data.
//!
//! One schema serves recorded sessions, commit-derived sessions and imported ones
//! (`schemas/trajectory.schema.json`). A trajectory holds:
//!
//! - `files`: every file the session touched, with its text when first seen;
//! - `events`: the ordered stream of what happened (raw content changes, opens,
//!   saves, reads, editor signals, suggestions), each with a timestamp;
//! - `edits`: the coalesced edits with stable ids (one per developer-perceived edit);
//! - `order`: the partial order over edits (edges with a kind and reasons).
//!
//! The types: [`Trajectory`], [`Event`] (a [`Change`], a [`Read`], a [`Signal`], …),
//! [`Edit`], [`PartialOrder`]. [`EditIndex`] is an edit's position in `edits`, and
//! [`Trajectory::edit_index`] the one id → index lookup: files and the database name
//! edits by id, replay works with positions.
//!
//! Coordinates follow ARCHITECTURE.md's invariant 2: 0-based lines, half-open ranges,
//! byte offsets into UTF-8 text. Architecture invariant: this module does no I/O, no
//! async, no SQLite.

mod annotations;
mod apply;
mod coalesce;
mod erase;
mod jsonl;
mod offer;
mod path;
mod reason;
mod signal;
mod slice;

pub use annotations::{Annotations, RefutedReason};
pub use apply::{ApplyError, apply_byte_edit};
#[cfg(test)]
pub(crate) use coalesce::recorded_for_tests;
pub use coalesce::{
    CoalesceConfig, coalesce, recompute_recorded_edits, recompute_recorded_edits_with,
};
pub use erase::without_files;
pub use jsonl::{JsonlRecord, jsonl_records, write_jsonl};
pub use offer::{Offer, OfferEdit};
pub use path::{PathError, RelPath, TrajectoryPathError};
pub use reason::{DependencyKind, ReasonKind};
pub use signal::{
    ReplayStepSignal, SignalKind, SignalRange, StepCall, SuggestionEvent, SuggestionSignal,
};
pub use slice::{SliceBound, SliceError, SliceSpec, slice};

use serde::{Deserialize, Serialize};

/// Value of the `format` field that identifies a nextedit trajectory document.
pub const TRAJECTORY_FORMAT: &str = "nextedit.trajectory";
/// Version of the trajectory JSON format this build reads and writes.
pub const TRAJECTORY_VERSION: u32 = 1;

/// A whole session: header, files, events, coalesced edits and their partial order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Always [`TRAJECTORY_FORMAT`].
    pub format: String,
    /// Always [`TRAJECTORY_VERSION`] for documents written by this build.
    pub version: u32,
    /// Who, where and when.
    pub session: SessionInfo,
    /// Files the session touched, each with its base text.
    pub files: Vec<FileEntry>,
    /// Everything that happened, in order.
    pub events: Vec<Event>,
    /// Coalesced edits with stable ids.
    #[serde(default)]
    pub edits: Vec<Edit>,
    /// Partial order over `edits`.
    #[serde(default)]
    pub order: PartialOrder,
    /// What the session is scored against beyond its own edits (imported benchmarks, `--gold`).
    #[serde(default, skip_serializing_if = "Gold::is_empty")]
    pub gold: Gold,
    /// What the language server offered (recorded sessions; `recorded:SERVER` and
    /// `nextedit live` read it, no suggester ever sees it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offers: Vec<Offer>,
}

impl Trajectory {
    /// An empty trajectory for a session header.
    pub fn new(session: SessionInfo) -> Trajectory {
        Trajectory {
            format: TRAJECTORY_FORMAT.to_string(),
            version: TRAJECTORY_VERSION,
            session,
            files: Vec::new(),
            events: Vec::new(),
            edits: Vec::new(),
            order: PartialOrder::default(),
            gold: Gold::default(),
            offers: Vec::new(),
        }
    }

    /// True when the edits are sequential (recorded: each in the text the earlier ones
    /// left, with `start_byte`), not on one shared base (commit).
    pub fn has_sequential_edits(&self) -> bool {
        self.edits.iter().any(|e| e.start_byte.is_some())
    }
    /// The position in `edits` of the edit with this id: the one id → index lookup
    /// (order edges, initial candidates, stored steps and runs name edits by id).
    pub fn edit_index(&self, id: &str) -> Option<EditIndex> {
        self.edits.iter().position(|e| e.id == id).map(EditIndex)
    }

    /// A trajectory's JSON read without each edit's analysis (its annotations, context
    /// lines and structural path), which replaying and scoring a trajectory never read
    /// and a derived commit keeps most of its memory in (a quarter of it is left);
    /// everything else as `serde_json::from_str` reads it.
    pub fn from_json_lean(json: &str) -> serde_json::Result<Trajectory> {
        let lean: LeanTrajectory = serde_json::from_str(json)?;
        Ok(Trajectory {
            format: lean.format,
            version: lean.version,
            session: lean.session,
            files: lean.files,
            events: lean.events,
            edits: lean.edits.into_iter().map(LeanEdit::into_edit).collect(),
            order: lean.order,
            gold: lean.gold,
            offers: lean.offers,
        })
    }

    /// [`Trajectory::edit_index`] for many ids: every edit's position by id (the
    /// first, when ids repeat), built once (a lookup per id would scan every edit).
    pub fn edit_indices(&self) -> std::collections::HashMap<&str, EditIndex> {
        let mut indices = std::collections::HashMap::with_capacity(self.edits.len());
        for (i, edit) in self.edits.iter().enumerate() {
            indices.entry(edit.id.as_str()).or_insert(EditIndex(i));
        }
        indices
    }

    /// The edit at a position.
    pub fn edit(&self, index: EditIndex) -> &Edit {
        &self.edits[index.0]
    }
}

/// The position of an edit in [`Trajectory::edits`]: files and the database name edits
/// by id, replay works with positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EditIndex(pub usize);

/// Gold answers a trajectory carries: the context a task needs (ContextBench `gold_ctx`)
/// and the edits a benchmark expects next (Copilot NES `nextUserEdit`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Gold {
    /// Regions a developer needs to read for the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<ContextRegion>,
    /// Ids of edits (in `edits`) that are the benchmark's expected answer rather than history.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub next_edits: Vec<String>,
    /// Where the gold came from (`contextbench`, `copilot-nes`, a file name…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The benchmark's id of the task (ContextBench `inst_id`, a Copilot recording's
    /// name); stored sessions get a database id, so results are labelled with this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// Ids of edits replay applies silently before it starts, never asked for (an
    /// imported example's edit history but its last edit, which is the initial one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub applied: Vec<String>,
    /// Other right answers of gold edits (Zed's expected patch alternatives): a
    /// prediction matching an edit or any of its alternatives is a hit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
}

/// Another right answer in place of gold edit `of`: lines `start_line..` of the edit's
/// file, in the text every other edit leaves (the state replay asks for `of` in),
/// whose `before_text` becomes `after_text`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alternative {
    /// Id of the gold edit this is an alternative of.
    pub of: String,
    /// First replaced line (0-based).
    pub start_line: usize,
    /// The replaced lines (whole lines, with their breaks).
    pub before_text: String,
    /// The new lines.
    pub after_text: String,
}

impl Gold {
    /// True when the trajectory carries no gold beyond its edits.
    pub fn is_empty(&self) -> bool {
        self.context.is_empty()
            && self.next_edits.is_empty()
            && self.source.is_none()
            && self.instance_id.is_none()
            && self.applied.is_empty()
            && self.alternatives.is_empty()
    }
}

/// A region of a file, as gold context.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ContextRegion {
    /// File path (relative to the workspace).
    pub file: String,
    /// Lines of the region (0-based, half-open).
    pub lines: LineRange,
}

/// Where a trajectory came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionKind {
    /// Recorded live by `nextedit proxy`.
    Recorded,
    /// Derived from a git commit by `nextedit derive`.
    Commit,
    /// Imported from another tool's format (ContextBench, Copilot NES, …).
    Imported,
}

impl SessionKind {
    /// The lowercase name used in JSON, SQLite and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Recorded => "recorded",
            SessionKind::Commit => "commit",
            SessionKind::Imported => "imported",
        }
    }

    /// Parses the lowercase name; `None` for anything else.
    pub fn parse(name: &str) -> Option<SessionKind> {
        match name {
            "recorded" => Some(SessionKind::Recorded),
            "commit" => Some(SessionKind::Commit),
            "imported" => Some(SessionKind::Imported),
            _ => None,
        }
    }
}

/// Session header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Identifier: the database id for stored sessions, else a free-form name.
    pub id: String,
    /// Where the trajectory came from.
    pub kind: SessionKind,
    /// Workspace root directory (recorded) or repository path (commit), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Git HEAD of the workspace when recording started, if it was a git repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_head: Option<String>,
    /// The commit a commit-derived trajectory comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<CommitInfo>,
    /// Where the repository comes from, as its source named it (an imported Zed
    /// example's `repository_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_url: Option<String>,
    /// Argv of the language server behind the proxy (recorded sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_command: Vec<String>,
    /// Negotiated LSP position encoding that recorded positions were converted from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_encoding: Option<String>,
    /// Start, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// End, RFC 3339 UTC; absent while a session is still running or was cut off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<String>,
}

impl SessionInfo {
    /// A header with an id and a kind, everything else unset.
    pub fn new(id: impl Into<String>, kind: SessionKind) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            kind,
            workspace: None,
            git_head: None,
            commit: None,
            repository_url: None,
            server_command: Vec::new(),
            position_encoding: None,
            started_at: None,
            ended_at: None,
        }
    }
}

/// The commit behind a commit-derived trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitInfo {
    /// Full hex id of the commit.
    pub sha: String,
    /// Full hex id of its (only) parent; `None` for a root commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Commit message; kept here, but replay reveals it only when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Project name (e.g. the repository directory name), used in result file names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// One file of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Path relative to the workspace when it lies inside it, else the URI.
    pub path: String,
    /// The LSP URI, for recorded sessions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Language id (LSP `languageId`, or derived from the extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Text when the session first saw the file; `None` if the file did not exist
    /// (added in a commit) or its text was excluded from recording.
    #[serde(default)]
    pub base_text: Option<String>,
    /// Text at the end of the session, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_text: Option<String>,
    /// True when privacy rules kept this file's text out of the recording.
    #[serde(default, skip_serializing_if = "is_false")]
    pub excluded: bool,
    /// How a commit changed the file: `added`, `deleted`, `modified`, `renamed`,
    /// `type_changed` (commit-derived sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Path in the parent commit when the file was renamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// Why the file changed but has no edits (binary, vendored, generated, not UTF-8…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

impl FileEntry {
    /// A file known by its path and base text, with everything else unset.
    pub fn new(path: impl Into<String>, base_text: Option<String>) -> FileEntry {
        FileEntry {
            path: path.into(),
            uri: None,
            language: None,
            base_text,
            final_text: None,
            excluded: false,
            status: None,
            old_path: None,
            skipped: None,
        }
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// One thing that happened, with a time relative to the session start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the session's event stream (strictly increasing).
    pub seq: u64,
    /// Milliseconds since the session started (monotonic clock).
    pub t_ms: f64,
    /// What happened.
    #[serde(flatten)]
    pub body: EventBody,
}

impl Event {
    /// The file this event concerns, if any.
    pub fn file(&self) -> Option<&str> {
        match &self.body {
            EventBody::Open { file, .. }
            | EventBody::Save { file }
            | EventBody::Close { file }
            | EventBody::Suggestion { file, .. } => Some(file),
            EventBody::Change(change) => Some(&change.file),
            EventBody::Read(read) => Some(&read.file),
            EventBody::Signal(signal) => signal.file.as_deref(),
        }
    }
}

/// The kinds of events, tagged by `type` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventBody {
    /// A document was opened with this text (the text is in `files[].base_text`
    /// for the first open, repeated here only when it differs from the tracked text).
    Open {
        /// File path (as in `files`).
        file: String,
        /// Document version.
        version: i64,
        /// Text at open when it differs from what the session already had.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// One raw content change, as the editor sent it.
    Change(Change),
    /// The document was saved.
    Save {
        /// File path.
        file: String,
    },
    /// The document was closed.
    Close {
        /// File path.
        file: String,
    },
    /// Something the developer looked at.
    Read(Read),
    /// An editor signal (cursor, selection, visible ranges, focus).
    Signal(Signal),
    /// A suggestion shown to the developer (or produced in replay).
    Suggestion {
        /// File path.
        file: String,
        /// Lines the suggestion replaces.
        lines: LineRange,
        /// Proposed text.
        text: String,
        /// Where it came from (suggester name, LSP method…).
        source: String,
    },
}

/// Who or what made a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Typed by the developer (no other evidence).
    #[default]
    User,
    /// A formatting response or format-on-save.
    Format,
    /// A code action or `workspace/applyEdit`.
    CodeAction,
    /// A rename's workspace edit.
    Rename,
    /// A completion item's text edit.
    Completion,
    /// A change from outside the editor (file reload, checkout).
    External,
    /// A commit's diff (derived sessions).
    Commit,
}

impl Origin {
    /// Every origin, in declaration order.
    pub const ALL: [Origin; 7] = [
        Origin::User,
        Origin::Format,
        Origin::CodeAction,
        Origin::Rename,
        Origin::Completion,
        Origin::External,
        Origin::Commit,
    ];

    /// The snake-case name used in JSON, SQLite and the CLI.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Format => "format",
            Origin::CodeAction => "code_action",
            Origin::Rename => "rename",
            Origin::Completion => "completion",
            Origin::External => "external",
            Origin::Commit => "commit",
        }
    }

    /// Parses the snake-case name; `None` for anything else.
    pub fn parse(name: &str) -> Option<Origin> {
        Origin::ALL.into_iter().find(|o| o.as_str() == name)
    }
}

/// One content change with both texts, so any version can be rebuilt and undone.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// File path.
    pub file: String,
    /// Document version after this change.
    pub version: i64,
    /// Byte offset where the replaced text starts, in the text before the change.
    pub start_byte: usize,
    /// Byte offset where the replaced text ends (exclusive), in the text before.
    pub end_byte: usize,
    /// First line touched (0-based), in the text before.
    pub start_line: usize,
    /// Last line touched (0-based, inclusive), in the text before.
    pub end_line: usize,
    /// Last line of the inserted text (0-based, inclusive), in the text after.
    pub new_end_line: usize,
    /// Replaced text.
    pub before: String,
    /// Inserted text.
    pub after: String,
    /// Who or what made it.
    #[serde(default)]
    pub origin: Origin,
}

/// A location the developer (or a suggester) read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Read {
    /// File path.
    pub file: String,
    /// Lines read: half-open `[start, end)`, 0-based.
    pub lines: LineRange,
    /// How it was read: an LSP method (`textDocument/hover`, …) or `open`.
    pub via: String,
    /// Whether this is the place the request was made at or a place the answer pointed to.
    pub role: ReadRole,
}

/// The role of a read location within a request/response pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadRole {
    /// The file was opened (the whole file).
    Open,
    /// The position or range the request was made at.
    Request,
    /// A location returned in the response (definition target, reference…).
    Target,
}

impl ReadRole {
    /// The lowercase name used in JSON and SQLite.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadRole::Open => "open",
            ReadRole::Request => "request",
            ReadRole::Target => "target",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(name: &str) -> Option<ReadRole> {
        match name {
            "open" => Some(ReadRole::Open),
            "request" => Some(ReadRole::Request),
            "target" => Some(ReadRole::Target),
            _ => None,
        }
    }
}

/// An editor signal sent by the nextedit editor plugins (`$/nextedit/*`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Signal {
    /// `cursor`, `selection`, `visible_ranges`, `focus`, `suggestion`, `replay_step`, …
    pub kind: SignalKind,
    /// File path, when the signal concerns a document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The notification's params as the editor sent them.
    pub payload: serde_json::Value,
}

/// A half-open, 0-based line range `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LineRange {
    /// First line.
    pub start: usize,
    /// One past the last line.
    pub end: usize,
}

impl LineRange {
    /// A range from `start` (inclusive) to `end` (exclusive).
    pub fn new(start: usize, end: usize) -> LineRange {
        LineRange { start, end }
    }

    /// Number of lines in the range.
    pub fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// True for an empty range (a position between lines, e.g. an insertion point).
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }
}

/// What an edit does to lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EditKind {
    /// Adds lines, removes none.
    Insert,
    /// Removes lines, adds none.
    Delete,
    /// Replaces lines with others.
    Replace,
}

/// A coalesced edit: one change a person would describe as one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Edit {
    /// Stable id within the trajectory (`e0`, `e1`, …).
    pub id: String,
    /// File path (as in `files`).
    pub file: String,
    /// Insert, delete or replace.
    pub kind: EditKind,
    /// Lines replaced, in the version before all edits of the trajectory (parent).
    pub before_lines: LineRange,
    /// Lines inserted, in the version after all edits (child).
    pub after_lines: LineRange,
    /// Byte offset of the replaced text in the file's text just before this edit, for
    /// sequential (recorded) edits; `None` for edits that share one base (commits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_byte: Option<usize>,
    /// Replaced text (whole lines for commit edits).
    pub before_text: String,
    /// Inserted text.
    pub after_text: String,
    /// Unchanged lines just above the edit (for display and matching).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_before: Vec<String>,
    /// Unchanged lines just below the edit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_after: Vec<String>,
    /// Enclosing definitions (class/function signatures), outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub structural_path: Vec<String>,
    /// Who or what made the edit.
    #[serde(default)]
    pub origin: Origin,
    /// `seq` of the raw change events this edit was coalesced from (recorded sessions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<u64>,
    /// Analysis results (hunk index, identifiers defined/used, reverted edit, …).
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
}

impl Edit {
    /// A whole-line edit replacing `before_text` at base line `start` by `after_text`
    /// (its after-lines are left at the same start; derive computes real child ranges).
    pub fn lines(
        id: impl Into<String>,
        file: impl Into<String>,
        start: usize,
        before_text: &str,
        after_text: &str,
    ) -> Edit {
        let (n_before, n_after) = (
            before_text.split_inclusive('\n').count(),
            after_text.split_inclusive('\n').count(),
        );
        Edit {
            id: id.into(),
            file: file.into(),
            kind: match (n_before, n_after) {
                (0, _) => EditKind::Insert,
                (_, 0) => EditKind::Delete,
                _ => EditKind::Replace,
            },
            before_lines: LineRange::new(start, start + n_before),
            after_lines: LineRange::new(start, start + n_after),
            start_byte: None,
            before_text: before_text.to_string(),
            after_text: after_text.to_string(),
            context_before: Vec::new(),
            context_after: Vec::new(),
            structural_path: Vec::new(),
            origin: Origin::default(),
            events: Vec::new(),
            annotations: Annotations::default(),
        }
    }
}

/// [`Trajectory`] as [`Trajectory::from_json_lean`] reads it (the same fields, with
/// the same defaults).
#[derive(Deserialize)]
struct LeanTrajectory {
    format: String,
    version: u32,
    session: SessionInfo,
    files: Vec<FileEntry>,
    events: Vec<Event>,
    #[serde(default)]
    edits: Vec<LeanEdit>,
    #[serde(default)]
    order: PartialOrder,
    #[serde(default)]
    gold: Gold,
    #[serde(default)]
    offers: Vec<Offer>,
}

/// [`Edit`] without its analysis: the fields not named here are skipped unread.
#[derive(Deserialize)]
struct LeanEdit {
    id: String,
    file: String,
    kind: EditKind,
    before_lines: LineRange,
    after_lines: LineRange,
    #[serde(default)]
    start_byte: Option<usize>,
    before_text: String,
    after_text: String,
    #[serde(default)]
    origin: Origin,
    #[serde(default)]
    events: Vec<u64>,
}

impl LeanEdit {
    fn into_edit(self) -> Edit {
        Edit {
            id: self.id,
            file: self.file,
            kind: self.kind,
            before_lines: self.before_lines,
            after_lines: self.after_lines,
            start_byte: self.start_byte,
            before_text: self.before_text,
            after_text: self.after_text,
            context_before: Vec::new(),
            context_after: Vec::new(),
            structural_path: Vec::new(),
            origin: self.origin,
            events: self.events,
            annotations: Annotations::default(),
        }
    }
}

/// The partial order over edits.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PartialOrder {
    /// Directed or mutual relations between edits.
    #[serde(default)]
    pub edges: Vec<OrderEdge>,
    /// Edits a session can naturally start with (minimal in-degree).
    #[serde(default)]
    pub initial: Vec<String>,
    /// A deterministic total order consistent with the edges (or the real temporal order).
    #[serde(default)]
    pub natural: Vec<String>,
    /// Where the order came from (`derived`, `recorded`, `editflow-annotation`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// How two edits relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKind {
    /// `from` naturally comes before `to`.
    Before,
    /// Either may come first and each suggests the other (EditFlow's bi-directional).
    Bi,
}

/// An edge of the partial order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderEdge {
    /// Edit id.
    pub from: String,
    /// Edit id.
    pub to: String,
    /// `before` or `bi`.
    pub kind: OrderKind,
    /// Why the edge exists (one entry per dependency found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<EdgeReason>,
}

/// One reason for an order edge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EdgeReason {
    /// `def_use`, `import_use`, `signature_call`, `clone`, `test_impl`, `move`, `annotated`, …
    pub kind: ReasonKind,
    /// Human-readable detail, e.g. the symbol name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_json_is_flat_and_tagged() {
        let event = Event {
            seq: 3,
            t_ms: 1.5,
            body: EventBody::Save {
                file: "a.py".into(),
            },
        };
        let json = serde_json::to_string(&event).unwrap();
        assert_eq!(json, r#"{"seq":3,"t_ms":1.5,"type":"save","file":"a.py"}"#);
        let back: Event = serde_json::from_str(&json).unwrap();
        assert_eq!(back, event);
    }

    #[test]
    fn a_lean_read_leaves_out_only_each_edits_analysis() {
        let mut t = Trajectory::new(SessionInfo::new("s", SessionKind::Recorded));
        t.files.push(FileEntry::new("a.py", Some("x = 1\n".into())));
        t.events.push(Event {
            seq: 1,
            t_ms: 2.0,
            body: EventBody::Save {
                file: "a.py".into(),
            },
        });
        // Every field of an edit set (a struct literal: a new field must be named here).
        let analysed = Edit {
            id: "e0".into(),
            file: "a.py".into(),
            kind: EditKind::Replace,
            before_lines: LineRange::new(0, 1),
            after_lines: LineRange::new(0, 1),
            start_byte: Some(0),
            before_text: "x = 1\n".into(),
            after_text: "x = 2\n".into(),
            context_before: vec!["above\n".into()],
            context_after: vec!["below\n".into()],
            structural_path: vec!["def f():".into()],
            origin: Origin::Format,
            events: vec![1],
            annotations: Annotations {
                hunk: Some(0),
                ..Annotations::default()
            },
        };
        t.edits.push(analysed.clone());
        t.order.natural = vec!["e0".into()];
        t.order.source = Some("recorded".into());
        t.gold.next_edits = vec!["e0".into()];
        let lean = Trajectory::from_json_lean(&serde_json::to_string(&t).unwrap()).unwrap();
        t.edits[0] = Edit {
            context_before: Vec::new(),
            context_after: Vec::new(),
            structural_path: Vec::new(),
            annotations: Annotations::default(),
            ..analysed
        };
        assert_eq!(lean, t);
    }
}
