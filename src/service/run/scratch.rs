//! A run's scratch directory, which never outlives its run: removed when the run ends
//! (on error paths too), on SIGINT/SIGTERM (the run marked interrupted first), and,
//! when its process died in a way nothing can catch (SIGKILL, the kernel's
//! out-of-memory killer), by the next run that starts, which marks the dead run
//! interrupted in its database.
//!
//! The process holds an exclusive `flock` on the directory for as long as it lives; the
//! kernel releases it however the process ends, so a directory whose lock can be taken
//! has lost its owner. The directory's `owner` file (written once the lock is held)
//! names the database and the run.

use crate::store::RunStore;
use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::{RunError, RunEvents};
use crate::base::sys::files::lock_exclusive;
use crate::store::Database;

/// The name every run's scratch directory starts with, in the temporary directory.
const PREFIX: &str = "nextedit-replay-";
/// The file inside naming the run's database and id.
const OWNER: &str = "owner.json";

/// Which run a scratch directory serves.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Owner {
    /// The run's database (absolute).
    db: PathBuf,
    /// The run's id.
    run: i64,
}

/// Scratch directories in use and their runs, for the signal handler.
static SCRATCH: Mutex<Vec<(PathBuf, Owner)>> = Mutex::new(Vec::new());

/// A run's scratch directory: created locked, removed on drop.
pub(super) struct RunScratch {
    /// Dropped first: the directory is removed while the lock is still held.
    _dir: tempfile::TempDir,
    /// The directory's canonical path.
    root: PathBuf,
    _lock: File,
}

impl RunScratch {
    /// Creates the scratch directory of run `run` of the database at `db`, registered
    /// (for the signal handler) before anything is written into it.
    pub(super) fn create(db: &Path, run: i64) -> Result<RunScratch, RunError> {
        let mut registered = SCRATCH.lock().expect("scratch lock");
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir()
            .map_err(RunError::io("cannot create a scratch directory"))?;
        let root = dir
            .path()
            .canonicalize()
            .map_err(RunError::io("cannot resolve the scratch directory"))?;
        let lock = File::open(&root).map_err(RunError::io("cannot open the scratch directory"))?;
        lock_exclusive(&lock, false).map_err(RunError::io("cannot lock the scratch directory"))?;
        let owner = Owner {
            db: std::path::absolute(db).unwrap_or_else(|_| db.to_path_buf()),
            run,
        };
        std::fs::write(
            root.join(OWNER),
            serde_json::to_string(&owner).expect("an owner serialises"),
        )
        .map_err(RunError::io("cannot write into the scratch directory"))?;
        registered.push((root.clone(), owner));
        Ok(RunScratch {
            _dir: dir,
            root,
            _lock: lock,
        })
    }

    /// The directory (canonical).
    pub(super) fn path(&self) -> &Path {
        &self.root
    }
}

impl Drop for RunScratch {
    fn drop(&mut self) {
        // Then `dir` removes the directory as it drops, and the lock goes last.
        if let Ok(mut registered) = SCRATCH.lock() {
            registered.retain(|(dir, _)| dir != &self.root);
        }
    }
}

/// Why an interrupted run stopped, as its trajectories in progress keep it.
fn signal_reason(signal: i32) -> String {
    let name = match signal {
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        other => format!("signal {other}"),
    };
    format!("interrupted by {name}")
}

/// What the next run says of a run whose process ended without a word.
const DIED: &str =
    "the process running it ended before it finished (killed, out of memory, or crashed)";

/// On SIGINT/SIGTERM: stop the suggester processes, mark the runs in progress
/// interrupted, remove their scratch directories, then exit like the signal would.
pub(super) fn clean_up_on_signals() -> Result<(), RunError> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(RunError::io("cannot install signal handlers"))?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            crate::base::sys::jail::kill_all();
            // The lock is held so no new scratch directory appears meanwhile.
            let registered = SCRATCH.lock();
            let registered: Vec<(PathBuf, Owner)> =
                registered.as_ref().map(|r| r.to_vec()).unwrap_or_default();
            for (_, owner) in &registered {
                let _ = Database::open_existing(&owner.db)
                    .and_then(|mut db| db.interrupt_run(owner.run, &signal_reason(signal)));
            }
            // Workers may still be writing a checkout into a directory being removed
            // (and so re-create parts of it): remove until nothing is left.
            for _ in 0..10 {
                for (dir, _) in &registered {
                    let _ = std::fs::remove_dir_all(dir);
                }
                if registered.iter().all(|(d, _)| !d.exists()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

/// Removes the scratch directories of this user whose process is gone (their lock is
/// free), marking each one's run interrupted in its database; says so through
/// `events`. Directories of live runs, of other users and without an owner file
/// (being created, or made by an older build) are left alone.
pub(super) fn remove_abandoned(events: &dyn RunEvents) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let me = crate::base::sys::process::euid();
    for entry in entries.flatten() {
        let path = entry.path();
        let ours = entry.file_name().to_string_lossy().starts_with(PREFIX)
            && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if !ours {
            continue;
        }
        let Some(owner) = read_owner(&path) else {
            continue;
        };
        let Ok(lock) = File::open(&path) else {
            continue;
        };
        if lock_exclusive(&lock, false).is_err() {
            continue;
        }
        let marked =
            Database::open_existing(&owner.db).and_then(|mut db| db.interrupt_run(owner.run, DIED));
        let run = format!("run {} of {}", owner.run, owner.db.display());
        let run = match marked {
            Ok(true) => format!("{run} was left running: now marked interrupted"),
            Ok(false) => format!("{run} is not running"),
            Err(e) => format!("{run} cannot be marked interrupted: {e}"),
        };
        let what = "the scratch directory of a replay whose process ended without removing it";
        events.note(&match std::fs::remove_dir_all(&path) {
            Ok(()) => format!("removed {}, {what}; {run}", path.display()),
            Err(e) => format!("cannot remove {}, {what}: {e}; {run}", path.display()),
        });
    }
}

/// The owner file of a scratch directory, if it is a small regular file that parses.
fn read_owner(dir: &Path) -> Option<Owner> {
    let path = dir.join(OWNER);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return None;
    }
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}
