//! Other tools' formats → trajectories.
//!
//! - [`copilot`]: GitHub Copilot NES workspace recordings (`*.recording.w.json`) →
//!   `recorded` trajectories with the recording's `nextUserEdit` as gold next edit.
//! - [`historian`]: Historian's testset (commit URLs per language) → the repositories
//!   and commits `nextedit import historian-testset` fetches.
//! - [`contextbench`]: ContextBench gold rows plus an agent's reads (a Benchkit trace
//!   or a prediction's `traj_data`) → `imported` trajectories with gold context.
//! - [`zed_example`]: Zed's edit-prediction eval examples (markdown) → typed examples
//!   (repository, revision, edit history, cursor, expected alternatives) and back;
//!   [`zed_patch`] reads their diffs the way Zed applies them; [`zed_session`] makes
//!   an example the trajectory `import zed-examples` stores.
//!
//! Pure like [`crate::core::trajectory`]: text and parsed JSON in, [`crate::core::trajectory::Trajectory`]
//! out; the CLI reads the files and stores the results.

pub mod contextbench;
pub mod copilot;
pub mod historian;
pub mod zed_example;
pub mod zed_patch;
pub mod zed_session;
