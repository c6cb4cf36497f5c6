//! Stored sessions as the trajectories every command works on.
//!
//! One way to turn "session N" (or a trajectory JSON file named on the command line)
//! into a [`Trajectory`]: `sessions export`, `replay --session`, `context` and the
//! reports all load through here, so a linked commit, a slice and a recorded
//! session's dependency order mean the same thing everywhere.

use std::path::Path;

use crate::store::{Database, StoreError};
use crate::trajectory::{
    CoalesceConfig, SessionKind, SliceError, SliceSpec, Trajectory, recompute_recorded_edits_with,
    slice,
};

/// Why a session could not be loaded as a trajectory.
#[derive(Debug, thiserror::Error)]
pub enum SessionLoadError {
    /// The database could not give the session.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The slice does not fit the session.
    #[error("cannot slice session {id}")]
    Slice {
        /// The session.
        id: i64,
        /// What was wrong with the slice.
        source: SliceError,
    },
    /// `--pause-ms` is not a usable number of milliseconds.
    #[error("--pause-ms must be a number of milliseconds ≥ 0, not {0}")]
    Pause(f64),
    /// A trajectory file could not be read.
    #[error("SESSION `{arg}`: not a session id or a readable file")]
    Unreadable {
        /// The argument as given.
        arg: String,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// A trajectory file is not a trajectory document.
    #[error("`{arg}` is not a trajectory JSON document")]
    NotTrajectory {
        /// The argument as given.
        arg: String,
        /// Why parsing failed.
        source: serde_json::Error,
    },
}

/// A stored session as a trajectory, sliced by `spec`, its recorded edits re-cut at
/// `pause_ms` when given; a recorded session also gets the dependency edges between
/// its edits (its natural order stays the recorded one).
pub fn load_session_trajectory(
    db: &Database,
    id: i64,
    spec: &SliceSpec,
    pause_ms: Option<f64>,
) -> Result<Trajectory, SessionLoadError> {
    let mut trajectory = db.trajectory(id)?;
    // A linked commit's parent, message and project come from the session's repository.
    if let (Some(commit), Some(workspace)) = (
        &mut trajectory.session.commit,
        &trajectory.session.workspace,
    ) && let Ok(info) = crate::history::link::commit_info(Path::new(workspace), &commit.sha)
    {
        *commit = info;
    }
    if !spec.is_everything() {
        trajectory =
            slice(&trajectory, spec).map_err(|source| SessionLoadError::Slice { id, source })?;
    }
    if let Some(pause_ms) = pause_ms
        && trajectory.session.kind == SessionKind::Recorded
    {
        if !(pause_ms.is_finite() && pause_ms >= 0.0) {
            return Err(SessionLoadError::Pause(pause_ms));
        }
        recompute_recorded_edits_with(&mut trajectory, CoalesceConfig { pause_ms });
    }
    if trajectory.session.kind == SessionKind::Recorded && !trajectory.edits.is_empty() {
        trajectory.order = crate::history::recorded_order(&trajectory);
    }
    Ok(trajectory)
}

/// What a SESSION argument names: a stored session id, or a trajectory JSON file (a
/// file of that name wins over a number).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionArg {
    /// A session id in the database.
    Stored(i64),
    /// A trajectory JSON file.
    File(String),
}

impl SessionArg {
    /// Reads a SESSION argument.
    pub fn parse(arg: &str) -> SessionArg {
        match arg.parse::<i64>() {
            Ok(id) if !Path::new(arg).exists() => SessionArg::Stored(id),
            _ => SessionArg::File(arg.to_string()),
        }
    }
}

/// Reads a trajectory JSON file named on the command line.
pub fn read_trajectory_file(arg: &str) -> Result<Trajectory, SessionLoadError> {
    let text = std::fs::read_to_string(arg).map_err(|source| SessionLoadError::Unreadable {
        arg: arg.to_string(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| SessionLoadError::NotTrajectory {
        arg: arg.to_string(),
        source,
    })
}
