//! Replay: walk a trajectory step by step, ask a suggester for next edits, score it.
//!
//! Architecture invariant: the suggester sees only the start state plus the gold
//! edits applied so far (HumanEvo's lesson); gold `after` texts never cross the
//! [`crate::engine::suggest::Suggester`] boundary (the engine offers them through
//! [`crate::engine::suggest::Suggester::gold_feed`], which only the test-only [`FedSuggester`] accepts).

pub mod answers;
pub mod context;
mod engine;
mod historian;
pub mod judge_case;
pub mod matching;
mod oracle;
pub mod state;
mod worktree;
pub mod yardsticks;

pub use engine::{
    ContentScore, IgnoreProgress, KeepSteps, ObserverError, OrderMode, PredictionRecord,
    ReplayConfig, ReplayError, ReplayHooks, ReplayObserver, ReplayOutcome, StepRecord,
    content_scores, reapply, replay,
};
pub use historian::HistorianLog;
pub use oracle::FedSuggester;
pub use worktree::{DirWorkspace, Workspace, write_inside};
