//! Stored sessions as the trajectories every command works on.
//!
//! One way to turn "session N" (or a trajectory JSON file named on the command line)
//! into a [`Trajectory`] ([`load_session_trajectory`]: refreshed commit facts, slice,
//! pause re-cut, a recorded session's dependency order, its offers): `sessions export`,
//! `replay --session`, `context` and the reports all load through here, so a linked
//! commit, a slice and a recorded session's dependency order mean the same thing
//! everywhere. [`SessionArg`] reads a SESSION argument (an id or a trajectory file).
//! [`edited_files`] gives the final texts `sessions link` looks for in the
//! repository's commits. Must not print or parse command lines.

use crate::store::OfferRead;
use crate::store::SessionRead;
use std::path::{Path, PathBuf};

use crate::core::trajectory::{
    CoalesceConfig, SessionKind, SliceError, SliceSpec, Trajectory, recompute_recorded_edits_with,
    slice,
};
use crate::engine::history::link::EditedFile;
use crate::store::{Database, StoreError};

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
    /// `nextedit live` was given a session that was not recorded through the proxy.
    #[error("session {0} is not a recorded session (it has no offers)")]
    NotRecorded(String),
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
    ) && let Ok(info) =
        crate::engine::history::link::commit_info(Path::new(workspace), &commit.sha)
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
    if trajectory.session.kind == SessionKind::Recorded {
        // The offers the server made, for `nextedit live` and `recorded:SERVER`; a
        // slice keeps those made inside its window about its files.
        let (first, last) = (
            trajectory.events.first().map_or(0, |e| e.seq),
            trajectory.events.last().map_or(0, |e| e.seq),
        );
        let files: Vec<&str> = trajectory.files.iter().map(|f| f.path.as_str()).collect();
        trajectory.offers = offers_of(&db.offers(id)?, &trajectory)
            .into_iter()
            .filter(|o| {
                spec.is_everything()
                    || (o.seq >= first && o.seq <= last && files.contains(&o.file.as_str()))
            })
            .collect();
    }
    if trajectory.session.kind == SessionKind::Recorded && !trajectory.edits.is_empty() {
        trajectory.order = crate::engine::history::recorded_order(&trajectory);
    }
    Ok(trajectory)
}

/// The sessions `nextedit live` (and `report --live`) measure: each SESSION argument
/// (an id in the database at `db_path`, opened only when one is named, or a trajectory
/// file with its offers) with its answers' outcomes.
pub fn load_live_sessions(
    db_path: &Path,
    args: &[String],
    config: crate::engine::live::LiveConfig,
) -> Result<Vec<crate::engine::live::SessionLive>, SessionLoadError> {
    let mut db = None;
    let mut sessions = Vec::new();
    for arg in args {
        let trajectory = match SessionArg::parse(arg) {
            SessionArg::Stored(id) => {
                if db.is_none() {
                    db = Some(Database::open_existing(db_path)?);
                }
                let db = db.as_ref().expect("opened above");
                load_session_trajectory(db, id, &SliceSpec::default(), None)?
            }
            SessionArg::File(file) => read_trajectory_file(&file)?,
        };
        if trajectory.session.kind != SessionKind::Recorded {
            return Err(SessionLoadError::NotRecorded(arg.clone()));
        }
        sessions.push(crate::engine::live::SessionLive::of(
            arg,
            &trajectory,
            &trajectory.offers,
            config,
        ));
    }
    Ok(sessions)
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

/// Why a session's edited files could not be listed for `sessions link`.
#[derive(Debug, thiserror::Error)]
pub enum EditedFilesError {
    /// The database could not give the session's documents.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An edited file is not inside the repository.
    #[error("session {id}: {path} lies outside the repository {}", root.display())]
    OutsideRepository {
        /// The session.
        id: i64,
        /// The document's path as stored.
        path: String,
        /// The repository's work tree.
        root: PathBuf,
        /// Why the path is not under the root.
        source: std::path::StripPrefixError,
    },
}

/// The final texts of the files session `id` edited, with paths relative to the
/// repository work tree `root` (a stored relative path is taken from `workspace`).
/// Excluded files, files without changes and files whose text was never stored are
/// left out.
pub fn edited_files(
    db: &Database,
    id: i64,
    workspace: Option<&Path>,
    root: &Path,
) -> Result<Vec<EditedFile>, EditedFilesError> {
    let mut files = Vec::new();
    for doc in db.documents(id)? {
        if doc.excluded || doc.changes == 0 {
            continue;
        }
        let Some(text) = db.document_text(id, &doc.uri, None)? else {
            continue;
        };
        let path = Path::new(&doc.path);
        let absolute = match (workspace, path.is_absolute()) {
            (Some(workspace), false) => workspace.join(path),
            _ => path.to_path_buf(),
        };
        let absolute = absolute.canonicalize().unwrap_or(absolute);
        let relative =
            absolute
                .strip_prefix(root)
                .map_err(|source| EditedFilesError::OutsideRepository {
                    id,
                    path: doc.path.clone(),
                    root: root.to_owned(),
                    source,
                })?;
        files.push(EditedFile {
            path: relative.to_string_lossy().into_owned(),
            text,
        });
    }
    Ok(files)
}
/// A session's stored offers in the trajectory's terms: files by the trajectory's
/// path for their URI, times in milliseconds, the server named from the session's
/// command. Offers about excluded documents and edits of documents that were not
/// open at the answer (no byte offsets) are left out.
fn offers_of(
    stored: &[crate::store::StoredOffer],
    trajectory: &crate::core::trajectory::Trajectory,
) -> Vec<crate::engine::live::Offer> {
    let server = crate::engine::live::server_name(&trajectory.session.server_command);
    let file_of = |uri: &str, path: Option<&String>| {
        trajectory
            .files
            .iter()
            .find(|f| f.uri.as_deref() == Some(uri))
            .map(|f| f.path.clone())
            .or_else(|| path.cloned())
            .unwrap_or_else(|| uri.to_string())
    };
    stored
        .iter()
        .filter(|s| !s.excluded)
        .map(|s| {
            let o = &s.offer;
            crate::engine::live::Offer {
                seq: o.seq,
                rank: o.rank,
                request_seq: o.request_seq,
                t_ms: o.t_ns as f64 / 1e6,
                latency_ms: o.latency_ns as f64 / 1e6,
                kind: o.kind,
                method: o.method.clone(),
                file: file_of(&o.uri, s.path.as_ref()),
                line: o.position.map(|p| p.0),
                col_byte: o.position.map(|p| p.1),
                label: o.label.clone(),
                text: o.text.clone(),
                edits: o
                    .edits
                    .iter()
                    .filter_map(|e| match e.at {
                        crate::core::record::OfferSpan::Bytes(start, end) => {
                            Some(crate::engine::live::OfferEdit {
                                file: file_of(&e.uri, None),
                                start_byte: start,
                                end_byte: end,
                                text: e.text.clone(),
                            })
                        }
                        crate::core::record::OfferSpan::Lsp(_) => None,
                    })
                    .collect(),
                list_size: o.list_size,
                server: server.clone(),
            }
        })
        .collect()
}
