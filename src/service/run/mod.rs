//! Replay runs as a library service: [`plan`] (which trajectories, in which order,
//! with which settings), [`execute`](mod@execute) (workers, resume, the observer that
//! stores each step, clean-up on signals; repetition groups), `worker` (each worker's
//! scratch directory, sandbox and suggester), `scratch` (the run's scratch directory),
//! `store` (the narrow store the service goes through), [`report`] (the figures a
//! report shows, computed from the store), [`figures`] (those figures as named numbers,
//! their intervals over repetitions and the comparison with a baseline run), [`json`]
//! and [`text`] (the one place their printed JSON, and their tables, are built),
//! [`shard`] (a run as a plan of shards for many machines, and shard runs merged into
//! one), [`drill`] (each step's gold edit and predictions as diffs), [`html`] (the
//! self-contained HTML page of `report --html`), [`definition`] (how a run was scored,
//! over which trajectories), [`common`] (the steps compared runs share, and a view of
//! the store holding only those), [`yardsticks`] (a run's means of the field's other
//! yardsticks, per step from the replay engine), [`judge`] (what a judge model said
//! over a run's steps) and [`verdict`] (whether too many of a run's calls failed).
//!
//! Architecture invariant: the service never prints. What it has to say goes through
//! [`RunEvents`], which the CLI implements; runs are written only through the narrow
//! [`RunStore`] and read through [`RunRead`], which it extends. Errors are [`RunError`]
//! (`thiserror`).

pub mod common;
pub mod definition;
pub mod drill;
pub mod execute;
pub mod figures;
pub mod html;
pub mod json;
pub mod judge;
pub mod plan;
pub mod plan_file;
pub mod report;
mod scratch;
pub mod shard;
mod store;
pub mod text;
pub mod verdict;
mod worker;
pub mod yardsticks;

pub use crate::store::{RunRead, RunStore};
pub use execute::{ALLOWED_IDS_KEPT, Executed, execute, execute_group, install_process_guards};
pub use plan::{
    Collected, MatchKind, Order, Reasserted, Reveal, RunRequest, RunSettings, SandboxMode,
    SandboxState,
};
pub use report::{Compared, RunReport};
pub use store::{NewSteps, StepPages};

use crate::engine::history::HistoryError;
use crate::engine::replay::ReplayError;
use crate::service::sessions::SessionLoadError;
use crate::store::{StoreError, StoredStep};

/// What a run has to tell the person who started it; the CLI prints it.
pub trait RunEvents: Sync {
    /// A message for stderr (the CLI prefixes `nextedit: `).
    fn note(&self, message: &str);
    /// What `--range` selected, before any work starts.
    fn selected(&self, range: &str, selection: &crate::engine::history::Selection);
    /// A trajectory was replayed (or resumed): which steps it added (`new`, to read
    /// them again later) and those steps, in order, read back from the store as they
    /// are taken (a long trajectory's steps are never all in memory).
    fn replayed(
        &self,
        new: &NewSteps,
        steps: &mut dyn Iterator<Item = Result<StoredStep, RunError>>,
    ) -> Result<(), RunError>;
    /// The workers start on `trajectories` trajectories (progress counts towards it).
    fn started(&self, trajectories: usize) {
        let _ = trajectories;
    }
    /// A trajectory could not be replayed and is skipped: why, as one line.
    fn failed(&self, key: &str, error: &str) {
        self.note(&format!("skipping {key}: {error}"));
    }
}

/// Why a run could not be planned, executed or reported.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The database failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A git repository could not be read.
    #[error(transparent)]
    History(#[from] HistoryError),
    /// A stored session could not be loaded.
    #[error(transparent)]
    Session(#[from] SessionLoadError),
    /// The replay could not run.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// An `openai:` suggester spec is not usable.
    #[error(transparent)]
    OpenAiSpec(#[from] crate::engine::suggest::openai::SpecError),
    /// A commit range could not be read.
    #[error("reading the range {range:?}")]
    Range {
        /// The range as given.
        range: String,
        /// Why.
        #[source]
        source: HistoryError,
    },
    /// A start commit could not be checked out.
    #[error("{what}")]
    Checkout {
        /// Which commit of which repository.
        what: String,
        /// Why.
        #[source]
        source: HistoryError,
    },
    /// A file-system operation failed.
    #[error("{what}")]
    Io {
        /// What was being done, naming the path.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The settings stored with a run do not parse.
    #[error("run {run} has settings this nextedit cannot read")]
    Settings {
        /// Run id.
        run: i64,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// A stored or given text is not a trajectory.
    #[error("{what} is not a trajectory")]
    NotATrajectory {
        /// The trajectory, as the message names it.
        what: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// Anything else, said in full.
    #[error("{0}")]
    Other(String),
    /// Shard runs could not be merged.
    #[error(transparent)]
    Merge(#[from] shard::MergeError),
    /// A resumed run's command line does not repeat what the run was made with.
    #[error(transparent)]
    Resume(#[from] crate::service::resume::ResumeError),
    /// The results could not be printed.
    #[error("cannot print the results")]
    Print(#[source] std::io::Error),
}

impl RunError {
    /// An I/O error with what was being done.
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RunError {
        let what = what.into();
        move |source| RunError::Io { what, source }
    }
}

/// An error and its causes on one line, `outer: inner: …` (as `anyhow`'s `{:#}`).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        line.push_str(": ");
        line.push_str(&cause.to_string());
        source = cause.source();
    }
    line
}
