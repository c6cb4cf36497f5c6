//! Next-edit suggesters: the trait replay drives (and the tasks runner, through its
//! `complete` call, `Unsupported` by default), the process protocol adapter, the
//! OpenAI-compatible endpoint adapter, the language-server adapter, the built-in
//! baselines and the response cache around any of them.
//!
//! This file also holds the typed step vocabulary replay, store and reports share:
//! [`Call`], [`CallFailure`] (a [`FailureKind`] and the message), [`StepRead`] (the one
//! shape a read has from the engine to the report) and the [`GoldFeed`] hook.
//!
//! Architecture invariant: a suggester only ever sees what [`protocol`] messages
//! carry: the current state, applied edits, and what `--reveal` allows. Gold
//! answers never cross this boundary: the engine offers them through
//! [`Suggester::gold_feed`], which only the test-only fed built-ins
//! (`replay::FedSuggester`) accept; every other suggester keeps the default `None`.

pub mod build;
mod builtin;
pub mod cache;
mod complete;
pub mod complete_once;
pub mod lsp;
pub mod lsp_edits;
mod lsp_server;
mod lsp_step;
pub mod openai;
mod process;
pub mod prompt;
pub mod propagate;
pub mod protocol;
pub mod recorded;
pub mod retrieve;

pub use builtin::NoopSuggester;
pub use complete::complete_call;
pub use process::{DEFAULT_GIVE_UP_AFTER, DEFAULT_INIT_TIMEOUT, MAX_LINE_BYTES, ProcessSuggester};
pub use propagate::PropagateSuggester;
pub use recorded::RecordedSuggester;
pub use retrieve::RetrieveSuggester;

use std::time::Duration;

use crate::base::sys::limits::Limit;
use protocol::{
    CompleteParams, CompleteResult, GenerateParams, GenerateResult, InitializeParams,
    InitializeResult, SuggestParams, SuggestResult, SuggestedEdit,
};

/// One call of the suggester protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    /// `initialize`: start of a trajectory.
    Initialize,
    /// `suggest`: ranked next edits.
    Suggest,
    /// `generate`: the text of one location.
    Generate,
    /// `complete`: the text of a completion task's hole (`nextedit tasks run`).
    Complete,
    /// `judge`: a judge model's answer about a step's prediction (`replay --judge`);
    /// never a suggester's call, only the response cache's.
    Judge,
}

impl Call {
    /// The protocol's method name (also the database's `call` column).
    pub fn key(self) -> &'static str {
        match self {
            Call::Initialize => "initialize",
            Call::Suggest => "suggest",
            Call::Generate => "generate",
            Call::Complete => "complete",
            Call::Judge => "judge",
        }
    }

    /// The call named `key`, if it is one.
    pub fn from_key(key: &str) -> Option<Call> {
        [
            Call::Initialize,
            Call::Suggest,
            Call::Generate,
            Call::Complete,
            Call::Judge,
        ]
        .into_iter()
        .find(|c| c.key() == key)
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// The kind of a failed call, one per [`SuggestError`] variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// [`SuggestError::Spawn`].
    Spawn,
    /// [`SuggestError::Timeout`].
    Timeout,
    /// [`SuggestError::Crashed`].
    Crash,
    /// [`SuggestError::BadJson`].
    BadJson,
    /// [`SuggestError::HugeOutput`].
    HugeOutput,
    /// [`SuggestError::Response`].
    ErrorResponse,
    /// [`SuggestError::BadResult`].
    BadResult,
    /// [`SuggestError::Unreachable`].
    Unreachable,
    /// [`SuggestError::GaveUp`].
    GaveUp,
    /// [`SuggestError::NotCached`].
    NotCached,
    /// [`SuggestError::Unsupported`]: the suggester does not implement the call.
    Unsupported,
    /// [`SuggestError::Limit`]: its process tree hit a limit and was killed.
    Limit(Limit),
}

impl FailureKind {
    /// Short machine-readable key for result tables and the database (`timeout`, `crash`, …).
    pub fn key(self) -> &'static str {
        match self {
            FailureKind::Spawn => "spawn",
            FailureKind::Timeout => "timeout",
            FailureKind::Crash => "crash",
            FailureKind::BadJson => "bad_json",
            FailureKind::HugeOutput => "huge_output",
            FailureKind::ErrorResponse => "error_response",
            FailureKind::BadResult => "bad_result",
            FailureKind::Unreachable => "unreachable",
            FailureKind::GaveUp => "gave_up",
            FailureKind::NotCached => "not_cached",
            FailureKind::Unsupported => "unsupported",
            FailureKind::Limit(Limit::Pids) => "limit_pids",
            FailureKind::Limit(Limit::Memory) => "limit_memory",
            FailureKind::Limit(Limit::Disk) => "limit_disk",
            // Suggesters' time limits are their calls' time-outs.
            FailureKind::Limit(Limit::Time) => "timeout",
        }
    }

    /// Every kind, in declaration order.
    pub const ALL: [FailureKind; 14] = [
        FailureKind::Spawn,
        FailureKind::Timeout,
        FailureKind::Crash,
        FailureKind::BadJson,
        FailureKind::HugeOutput,
        FailureKind::ErrorResponse,
        FailureKind::BadResult,
        FailureKind::Unreachable,
        FailureKind::GaveUp,
        FailureKind::NotCached,
        FailureKind::Unsupported,
        FailureKind::Limit(Limit::Pids),
        FailureKind::Limit(Limit::Memory),
        FailureKind::Limit(Limit::Disk),
    ];

    /// The kind named `key`, if it is one.
    pub fn from_key(key: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.key() == key)
    }
}

impl std::fmt::Display for FailureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.key())
    }
}

/// A failed call as a replay step keeps it: its kind and the error's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallFailure {
    /// What kind of failure.
    pub kind: FailureKind,
    /// The error's message (its `Display`).
    pub message: String,
}

impl From<&SuggestError> for CallFailure {
    fn from(error: &SuggestError) -> CallFailure {
        CallFailure {
            kind: error.failure_kind(),
            // What a suggester or its server said: printed and stored, so masked and cut.
            message: crate::base::secrets::scrub(&error.to_string()).into_owned(),
        }
    }
}

/// `kind: message`, the form step results print.
impl std::fmt::Display for CallFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// Where a suggester's read was learnt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadSource {
    /// Listed in the call's result.
    Reported,
    /// Recorded by a `nextedit proxy` in front of the suggester's language server.
    Lsp,
}

impl ReadSource {
    /// The database's `source` column.
    pub fn key(&self) -> &'static str {
        match self {
            ReadSource::Reported => "reported",
            ReadSource::Lsp => "lsp",
        }
    }

    /// The source named `key`; anything but `lsp` was reported.
    pub fn from_key(key: &str) -> ReadSource {
        if key == "lsp" {
            ReadSource::Lsp
        } else {
            ReadSource::Reported
        }
    }
}

/// A location a suggester read while answering one call of a replay step: the one
/// shape a read has from the engine through the store to the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRead {
    /// The call it read during (one ContextBench step per call that read something).
    pub call: Call,
    /// Reported in the result, or recorded by a proxy.
    pub source: ReadSource,
    /// Path relative to the worktree.
    pub file: String,
    /// First line (0-based, the step's current coordinates).
    pub start_line: usize,
    /// End (exclusive); `None` for the whole file.
    pub end_line: Option<usize>,
    /// LSP method or tool name, when known.
    pub via: Option<String>,
}

/// Gold answers the replay engine offers at each step to a suggester that accepts
/// them ([`Suggester::gold_feed`]): only the test-only fed built-ins do.
pub trait GoldFeed {
    /// The gold edits allowed at this step, and the same locations with their current text.
    fn offer_suggestions(&self, gold: Vec<SuggestedEdit>, unchanged: Vec<SuggestedEdit>);
    /// The gold text of the location `generate` is about to ask for.
    fn offer_generation(&self, text: String);
}

/// Where the engine hands a recorded session's offers to the suggester that replays
/// them ([`Suggester::offers_feed`]): only `recorded:SERVER` takes them; they never go
/// through the protocol.
pub trait OffersFeed {
    /// The offers of the trajectory about to be replayed (empty for one without).
    fn session(&self, offers: &[crate::core::trajectory::Offer]);
    /// The step's window in session time: from the end of the last applied edit to
    /// the start of the next edit of the session (milliseconds).
    fn window(&self, since_ms: f64, until_ms: f64);
}

/// Why a suggester call failed (recorded as that step's failure; the run goes on).
#[derive(Debug, thiserror::Error)]
pub enum SuggestError {
    /// The process could not be started.
    #[error("cannot start suggester `{command}`: {source}")]
    Spawn {
        /// Command line.
        command: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// No answer within the per-call timeout.
    #[error("suggester did not answer `{method}` within {after:?}")]
    Timeout {
        /// Method.
        method: String,
        /// Timeout.
        after: Duration,
    },
    /// The process exited (or closed its output) during the call.
    #[error("suggester exited during `{method}` ({status}){}", if stderr.is_empty() { String::new() } else { format!("; its stderr ended with:\n{stderr}") })]
    Crashed {
        /// Method.
        method: String,
        /// Exit status.
        status: String,
        /// Last lines of its stderr.
        stderr: String,
    },
    /// It printed a line that is not JSON.
    #[error("suggester answered `{method}` with a line that is not JSON: {line:?}")]
    BadJson {
        /// Method.
        method: String,
        /// The line (first 200 characters).
        line: String,
    },
    /// It printed a line longer than [`MAX_LINE_BYTES`].
    #[error("suggester answered `{method}` with a {bytes}-byte line (limit {MAX_LINE_BYTES})")]
    HugeOutput {
        /// Method.
        method: String,
        /// Line length.
        bytes: usize,
    },
    /// It answered with a JSON-RPC error.
    #[error("suggester failed `{method}` with code {code}: {message}")]
    Response {
        /// Method.
        method: String,
        /// Error code.
        code: i64,
        /// Error message.
        message: String,
    },
    /// It failed this many times in a row: the rest of the trajectory does not ask it.
    #[error(
        "not asked: the suggester failed {failures} times in a row in this trajectory (last: {last})"
    )]
    GaveUp {
        /// Failures in a row.
        failures: u32,
        /// The last failure.
        last: String,
    },
    /// An HTTP endpoint (`openai:`) could not be reached or broke the connection.
    #[error("cannot reach {url}: {reason}")]
    Unreachable {
        /// The request's URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// `--cache read-only` and the call is not in the response cache.
    #[error("not in the response cache (--cache read-only): `{call}`{at}")]
    NotCached {
        /// Method.
        call: String,
        /// ` of step N`, ` of task ID`, or nothing for `initialize`.
        at: String,
    },
    /// A failure served from the response cache, as it was recorded.
    #[error("{}", .0.message)]
    Cached(CallFailure),
    /// The suggester does not implement this call.
    #[error("suggester `{suggester}` does not answer `{method}`")]
    Unsupported {
        /// Method.
        method: String,
        /// The suggester's name.
        suggester: String,
    },
    /// Its process tree hit a limit (`--pids`, `--memory`, `--disk`) and was killed.
    #[error("{limit} ({}): the suggester's processes were killed during `{method}`", .limit.flag())]
    Limit {
        /// Method.
        method: String,
        /// The limit.
        limit: Limit,
    },
    /// Its result does not have the protocol's shape, or names impossible locations.
    #[error("suggester's `{method}` result is invalid: {reason}")]
    BadResult {
        /// Method.
        method: String,
        /// What is wrong.
        reason: String,
    },
}

impl SuggestError {
    /// Whether the process must be restarted before the next call.
    pub fn kills_process(&self) -> bool {
        !matches!(
            self,
            SuggestError::Response { .. }
                | SuggestError::BadResult { .. }
                | SuggestError::GaveUp { .. }
                | SuggestError::NotCached { .. }
                | SuggestError::Cached(_)
                | SuggestError::Unsupported { .. }
        )
    }

    /// Short machine-readable kind for result tables (`timeout`, `crash`, …).
    pub fn kind(&self) -> &'static str {
        self.failure_kind().key()
    }

    /// The kind of this failure.
    pub fn failure_kind(&self) -> FailureKind {
        match self {
            SuggestError::Spawn { .. } => FailureKind::Spawn,
            SuggestError::Timeout { .. } => FailureKind::Timeout,
            SuggestError::Crashed { .. } => FailureKind::Crash,
            SuggestError::BadJson { .. } => FailureKind::BadJson,
            SuggestError::HugeOutput { .. } => FailureKind::HugeOutput,
            SuggestError::Response { .. } => FailureKind::ErrorResponse,
            SuggestError::BadResult { .. } => FailureKind::BadResult,
            SuggestError::Unsupported { .. } => FailureKind::Unsupported,
            SuggestError::Unreachable { .. } => FailureKind::Unreachable,
            SuggestError::GaveUp { .. } => FailureKind::GaveUp,
            SuggestError::NotCached { .. } => FailureKind::NotCached,
            SuggestError::Cached(failure) => failure.kind,
            SuggestError::Limit { limit, .. } => FailureKind::Limit(*limit),
        }
    }
}

/// A next-edit suggester, driven step by step by replay.
pub trait Suggester: Send {
    /// Name for reports.
    fn name(&self) -> String;
    /// Starts a trajectory.
    fn initialize(&mut self, params: &InitializeParams) -> Result<InitializeResult, SuggestError>;
    /// Ranked next edits for the current state.
    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError>;
    /// New text for a given location.
    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError>;
    /// Fills a completion task's hole (`nextedit tasks run`). A suggester that cannot
    /// answer it says so with [`SuggestError::Unsupported`], the default.
    fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        let _ = params;
        Err(SuggestError::Unsupported {
            method: "complete".to_string(),
            suggester: self.name(),
        })
    }
    /// Ends the trajectory and releases resources.
    fn shutdown(&mut self);
    /// Whether `suggest` and `generate` look at a request's history and files
    /// (`prior_edits`, `files`). Building them costs every applied edit and every file
    /// touched so far at every step, quadratic over a long trajectory: a suggester that
    /// answers without them (`builtin:noop`, the gold-fed built-ins) says `false` and is
    /// sent them empty, but for the file `generate` writes in. `true` by default.
    fn needs_history(&self) -> bool {
        true
    }
    /// Where the engine may put gold answers before each call: `None` (the default) for
    /// every real suggester; only the test-only fed built-ins take them.
    fn gold_feed(&self) -> Option<&dyn GoldFeed> {
        None
    }
    /// Where the engine may put a recorded session's offers and each step's window:
    /// `None` (the default) for every suggester but `recorded:SERVER`.
    fn offers_feed(&self) -> Option<&dyn OffersFeed> {
        None
    }
}

/// Failures in a row within one trajectory, and when to stop asking: the give-up rule
/// that every suggester talking to something outside nextedit (a process, an endpoint)
/// shares.
#[derive(Debug, Clone)]
pub struct FailureStreak {
    limit: u32,
    count: u32,
    last: String,
}

impl FailureStreak {
    /// A streak that gives up after `limit` failures in a row (at least one).
    pub fn new(limit: u32) -> FailureStreak {
        FailureStreak {
            limit: limit.max(1),
            count: 0,
            last: String::new(),
        }
    }

    /// `Err(GaveUp)` once the streak has reached its limit: the call is not made.
    pub fn check(&self) -> Result<(), SuggestError> {
        if self.count >= self.limit {
            return Err(SuggestError::GaveUp {
                failures: self.count,
                last: self.last.clone(),
            });
        }
        Ok(())
    }

    /// Counts one more failure in a row.
    pub fn fail(&mut self, error: &SuggestError) {
        self.count += 1;
        self.last = format!("{}: {error}", error.kind());
    }

    /// Ends the streak (an answer came, or a new trajectory starts).
    pub fn reset(&mut self) {
        self.count = 0;
        self.last.clear();
    }
}
