//! Next-edit suggesters: the trait replay drives, the process protocol adapter, the
//! OpenAI-compatible endpoint adapter and the built-in baselines.
//!
//! Architecture invariant: a suggester only ever sees what [`protocol`] messages
//! carry: the current state, applied edits, and what `--reveal` allows. Gold
//! answers never cross this boundary (the test-only oracle gets them from the
//! replay engine through its own constructor, not through the trait).

mod builtin;
pub mod openai;
mod process;
pub mod prompt;
pub mod propagate;
pub mod protocol;
pub mod sandbox;

pub use builtin::NoopSuggester;
pub use process::{
    DEFAULT_GIVE_UP_AFTER, DEFAULT_INIT_TIMEOUT, MAX_LINE_BYTES, ProcessSuggester,
    become_subreaper, kill_all,
};
pub use propagate::PropagateSuggester;

use std::time::Duration;

use protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult,
};

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
        )
    }

    /// Short machine-readable kind for result tables (`timeout`, `crash`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            SuggestError::Spawn { .. } => "spawn",
            SuggestError::Timeout { .. } => "timeout",
            SuggestError::Crashed { .. } => "crash",
            SuggestError::BadJson { .. } => "bad_json",
            SuggestError::HugeOutput { .. } => "huge_output",
            SuggestError::Response { .. } => "error_response",
            SuggestError::BadResult { .. } => "bad_result",
            SuggestError::Unreachable { .. } => "unreachable",
            SuggestError::GaveUp { .. } => "gave_up",
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
    /// Ends the trajectory and releases resources.
    fn shutdown(&mut self);
}
