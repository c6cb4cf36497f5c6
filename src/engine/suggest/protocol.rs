//! The suggester protocol's messages (schemas/suggester.schema.json, docs/suggesters.md).
//!
//! JSON-RPC 2.0, one JSON object per line over the suggester process's stdio.
//! nextedit sends `initialize` once per trajectory, then `suggest` at every step and
//! `generate` when no suggested edit kept the flow, then `shutdown` (a completion task
//! asks `complete` instead of `suggest`). Coordinates are
//! *current*: 0-based, half-open line ranges in the files as they are at that step.
//! Nothing from the future is ever sent: no gold `after` text, no later edits, and
//! the commit message and changed-file list only when `--reveal` allows them.

use serde::{Deserialize, Serialize};

/// Version of this protocol.
pub const PROTOCOL_VERSION: u32 = 1;

/// What the run chose to reveal to the suggester (all off by default: Historian leaks them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Revealed {
    /// The commit message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_message: Option<String>,
    /// Every path the commit (or session) changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changed_files: Option<Vec<String>>,
}

/// `initialize` params: once per trajectory, after the worktree holds the start state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InitializeParams {
    /// [`PROTOCOL_VERSION`].
    pub protocol_version: u32,
    /// Absolute path of the scratch worktree.
    pub worktree: String,
    /// Main language of the trajectory (`python`, `go`, …), if known.
    #[serde(default)]
    pub language: Option<String>,
    /// Project name (only with `--reveal commit`).
    #[serde(default)]
    pub project: Option<String>,
    /// Trajectory name: opaque and run-local (`trajectory-N`); the commit sha or
    /// session id only with `--reveal commit`.
    pub trajectory: String,
    /// What `--reveal` allowed.
    #[serde(default)]
    pub revealed: Revealed,
}

/// What a suggester says about itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct InitializeResult {
    /// Name for reports.
    #[serde(default)]
    pub name: Option<String>,
    /// Version for reports.
    #[serde(default)]
    pub version: Option<String>,
}

/// An edit already applied, as the suggester may see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AppliedEdit {
    /// Path relative to the worktree.
    pub file: String,
    /// Lines the edit's text occupies now (current coordinates, half-open).
    pub start_line: usize,
    /// End (exclusive).
    pub end_line: usize,
    /// Text it replaced.
    pub before: String,
    /// Text it inserted.
    pub after: String,
    /// Step at which it was applied (0 = the initial edit).
    pub step: usize,
}

/// A file's current content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileContent {
    /// Path relative to the worktree.
    pub path: String,
    /// Whole text.
    pub text: String,
}

/// `suggest` params: which edits come next?
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuggestParams {
    /// Step number (1-based; step 0 is the initial edit).
    pub step: usize,
    /// Absolute path of the worktree (holds exactly the current state).
    pub worktree: String,
    /// Language, if known.
    #[serde(default)]
    pub language: Option<String>,
    /// Applied edits in application order.
    pub prior_edits: Vec<AppliedEdit>,
    /// Current content of the files this step concerns.
    pub files: Vec<FileContent>,
}

/// One suggested edit; the list order is the ranking (best first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuggestedEdit {
    /// Path relative to the worktree.
    pub file: String,
    /// First line replaced (current coordinates).
    pub start_line: usize,
    /// End of the replaced lines (exclusive); equal to `start_line` for an insertion.
    pub end_line: usize,
    /// New text for those lines (whole lines, with their line breaks).
    pub text: String,
    /// Optional confidence in [0, 1]; informational, the order is the ranking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// A location the suggester read while answering (scored with ContextBench metrics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuggesterRead {
    /// Path relative to the worktree.
    pub file: String,
    /// First line (0-based).
    pub start_line: usize,
    /// End (exclusive); `None` for the whole file.
    #[serde(default)]
    pub end_line: Option<usize>,
}

/// `suggest` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SuggestResult {
    /// Ranked edits, best first; empty for "no suggestion".
    #[serde(default)]
    pub edits: Vec<SuggestedEdit>,
    /// What it read, if it reports that.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<SuggesterRead>,
}

/// `generate` params: write the edit at this location (the gold text is never sent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateParams {
    /// Step number.
    pub step: usize,
    /// Absolute path of the worktree.
    pub worktree: String,
    /// Language, if known.
    #[serde(default)]
    pub language: Option<String>,
    /// Applied edits in application order.
    pub prior_edits: Vec<AppliedEdit>,
    /// Current content of the files this step concerns (the target file first).
    pub files: Vec<FileContent>,
    /// File to edit.
    pub file: String,
    /// First line to replace (current coordinates).
    pub start_line: usize,
    /// End (exclusive); equal to `start_line` for an insertion.
    pub end_line: usize,
}

impl GenerateParams {
    /// The current text of the location to write (empty for an insertion).
    pub fn location_text(&self) -> String {
        self.files
            .iter()
            .find(|f| f.path == self.file)
            .map(|f| {
                f.text
                    .split_inclusive('\n')
                    .skip(self.start_line)
                    .take(self.end_line.saturating_sub(self.start_line))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// `generate` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerateResult {
    /// The new text for the location.
    pub text: String,
    /// What it read, if it reports that.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<SuggesterRead>,
}

/// `complete` params: fill the hole of a completion task (`nextedit tasks run`).
/// The worktree holds the task's state with the hole empty; the ground truth is never sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteParams {
    /// Task id (opaque to the suggester).
    pub task: String,
    /// Absolute path of the worktree (the task's state, the file holding `prefix + suffix`).
    pub worktree: String,
    /// Language, if known.
    #[serde(default)]
    pub language: Option<String>,
    /// File with the hole, relative to the worktree.
    pub file: String,
    /// 0-based line of the cursor (the hole's start).
    pub line: usize,
    /// Byte column of the cursor in that line.
    pub column: usize,
    /// The file's text before the cursor.
    pub prefix: String,
    /// The file's text after the hole.
    pub suffix: String,
    /// Scenario name (`full_block`, `incomplete_suffix`, `inner_block`, `rag`,
    /// `added_function`, `session_pause`).
    pub scenario: String,
    /// Hints and retrieved context, best first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<CompleteContext>,
}

/// One piece of context a `complete` call carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompleteContext {
    /// Path relative to the worktree.
    pub file: String,
    /// First line (0-based).
    pub start_line: usize,
    /// End line (exclusive).
    pub end_line: usize,
    /// The text.
    pub text: String,
}

/// `complete` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CompleteResult {
    /// The text that fills the hole (may be empty).
    pub text: String,
    /// What it read, if it reports that.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reads: Vec<SuggesterRead>,
}
