//! The recorder's spill file: records that do not fit in memory while the
//! database is unavailable wait on disk instead of being dropped.
//!
//! A spill file is a SQLite database of the same schema (so writing and replaying
//! reuse the store, and what it holds is already filtered and masked like the
//! database itself), private (0600) and next to the database:
//! `.<db file name>.spill-<pid>.db`. It is replayed into the database as soon as
//! the database takes writes again, then removed. One left behind (the database
//! stayed unavailable until the proxy had to exit) is adopted by the next proxy
//! recording into the same database.

use std::path::{Path, PathBuf};

use crate::core::record::Record;
use crate::store::{Database, NewSession, SessionRead, SessionStore, SpillStore, StoreError};

/// An open spill file.
pub struct Spill {
    path: PathBuf,
    db: Database,
    session: i64,
    /// Frames (message records) it holds.
    pub frames: u64,
}

/// Frames in a batch of records: each frame gives exactly one message record.
pub fn frames_in(records: &[Record]) -> u64 {
    records
        .iter()
        .filter(|r| matches!(r, Record::Message(_)))
        .count() as u64
}

/// Where this process spills for `db`.
pub fn spill_path(db: &Path, pid: u32) -> PathBuf {
    let name = db.file_name().map_or_else(
        || "nextedit.db".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    db.with_file_name(format!(".{name}.spill-{pid}.db"))
}

impl Spill {
    /// Creates this process's spill file for `db` (0600, in the database's directory).
    pub fn create(db: &Path, new: &NewSession) -> Result<Spill, StoreError> {
        // A file of that name is another (dead) process's leftover with the same pid:
        // it waits for adoption, so this one takes another name.
        let mut path = spill_path(db, std::process::id());
        let mut n = 1;
        while path.exists() {
            path = spill_path(db, std::process::id()).with_extension(format!("{n}.db"));
            n += 1;
        }
        let mut spill_db = Database::open(&path)?;
        let session = spill_db.begin_session(new)?;
        Ok(Spill {
            path,
            db: spill_db,
            session,
            frames: 0,
        })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends records.
    pub fn write(&mut self, records: &[Record]) -> Result<(), StoreError> {
        self.db.write_records(self.session, records)?;
        self.frames += frames_in(records);
        Ok(())
    }

    /// Copies everything into `db`'s session `into` (then [`Spill::discard`] it).
    pub fn replay_into(&self, db: &mut Database, into: i64) -> Result<(), StoreError> {
        db.absorb(&self.path, self.session, Some(into)).map(|_| ())
    }

    /// Deletes the file (once replayed, or its records counted lost by the caller).
    pub fn discard(self) {
        let path = self.path.clone();
        drop(self.db);
        remove_files(&path);
    }

    /// Leaves the file for a later proxy: notes which session it continues and how it ended.
    pub fn leave(
        mut self,
        into: Option<i64>,
        end: crate::store::SessionEnd,
        dropped: u64,
    ) -> Result<PathBuf, StoreError> {
        self.db.end_session(self.session, end, dropped)?;
        self.db.set_spill_target(into)?;
        Ok(self.path)
    }
}

/// Replays spill files other (finished) proxies left next to `db` into it;
/// returns how many frames were recovered, per file.
pub fn adopt_leftovers(db: &mut Database) -> Vec<(PathBuf, Result<u64, StoreError>)> {
    let path = db.path().to_path_buf();
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let prefix = format!(".{name}.spill-");
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir.to_path_buf(),
        None => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        // `<pid>.db`, or `<pid>.<n>.db` when the pid's name was taken.
        let Some(pid) = file
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix(".db"))
            .and_then(|rest| rest.split('.').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || alive(pid) {
            continue;
        }
        let spill = entry.path();
        out.push((spill.clone(), adopt(db, &spill)));
    }
    out
}

fn adopt(db: &mut Database, spill: &Path) -> Result<u64, StoreError> {
    let contents = Database::open_existing(spill)?.spill_contents()?;
    // The session it continues may be gone (deleted since): then it becomes its own.
    let target =
        (contents.target).filter(|id| db.sessions().is_ok_and(|s| s.iter().any(|s| s.id == *id)));
    let into = db.absorb(spill, contents.session, target)?;
    if target.is_some() {
        db.take_end(spill, contents.session, into)?;
    }
    remove_files(spill);
    Ok(contents.frames)
}

fn alive(pid: u32) -> bool {
    crate::base::sys::process::exists(pid)
}

fn remove_files(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(side));
    }
}
