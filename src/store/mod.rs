//! The SQLite database: schema, migrations, batched writes, queries.
//!
//! The schema (version [`SCHEMA_VERSION`]) is a wire format: other tools may query it,
//! so columns are only ever added by numbered migrations: `schema.sql` (v1: sessions),
//! `runs.sql` (v2: replay runs, trajectories, steps, predictions, errors), `v3.sql`
//! (session→commit links, suggester reads per replay step), `v4.sql` (the response
//! cache, repetitions, cache use per call), `v5.sql` (`runs.shard`, the plan a shard
//! run belongs to), `v6.sql` (completion task runs: `task_runs`, `task_run_tasks`,
//! `task_answers` and the `task_executions` cache, read and written by `tasks`),
//! `v7.sql` (the offers a language server made in a recorded session), `v8.sql` (the
//! limit a task's test run hit, `limit_hit` of `task_answers` and `task_executions`),
//! `v9.sql` (why a task is non-discriminating, `excluded` and `excluded_output` of
//! `task_run_tasks`), `v10.sql` (how a task's tests were chosen,
//! `task_run_tasks.tests_selection`, and the per-state `task_coverage_maps`) and
//! `v11.sql` (the field's other yardsticks of each replay step, `run_step_yardsticks`)
//! `v12.sql` (a judge model's verdict on each replay step, `run_step_judgements`) and
//! `v13.sql` (which right answer a step's content was scored against,
//! `run_steps.content_answer`).
//!
//! The database file is created with mode 0600 in a 0700 directory; SQLite gives
//! its `-wal` and `-shm` files the same mode. Many processes (several proxies) may
//! write to one database at once: WAL mode, a busy timeout, one writer per process.
//!
//! Opening: a new database is built in a private temporary file and put in place
//! migrated, so no process sees a half-made one; the file is `flock`ed while it is
//! made, so one whose lock is free and that is older than 10 s was left by a killed
//! maker, and the next open in its directory removes it, with its SQLite side files. A
//! file that is not a nextedit database (not SQLite, no nextedit tables, or empty for a
//! command that only reads) or that holds triggers (nextedit creates none) is refused
//! before anything is written to it.
//!
//! [`Database`] itself only opens, checks and migrates the file. What it stores is
//! reached through one trait per aggregate, each implemented for [`Database`] once, in
//! its own file: [`SessionStore`] (`sessions.rs`: the session row and the recorder's
//! rows) and [`SessionRead`] (`session_read.rs`), [`OfferRead`] (`offers.rs`),
//! [`RunStore`] (`runs.rs`) and [`RunRead`] (`run_read.rs`), [`RunResults`]
//! (`results.rs`), [`RunMerge`] (`merge.rs`), [`TaskStore`] (`tasks.rs`),
//! [`AnswerCache`] (`cache.rs`), [`SpillStore`] (`spill.rs`) and [`Erase`]
//! (`erase.rs`). Traits rather than handles (`db.runs().record_step(…)`): callers keep
//! calling `db.record_step(…)` on the one `Database` they hold, a `use` names the
//! aggregates a module touches, and a service can take the narrow trait it needs
//! (`&mut dyn RunStore`) or give its own view of one (a report's common steps implement
//! [`RunRead`]) without a forwarding copy.

mod cache;
mod erase;
mod judgements;
mod merge;
mod offers;
mod results;
mod run_read;
mod runs;
mod session_read;
mod sessions;
mod spill;
mod tasks;
mod values;

pub use cache::{AnswerCache, ResponseCache};
pub use erase::{Erase, Erasure};
pub use merge::{MergedRun, RunMerge, RunRows};
pub use offers::{OfferRead, StoredOffer};
pub use results::{ResultPrediction, ResultStep, RunResults};
pub use runs::{
    CallTally, RunMeasurements, RunRead, RunStore, RunSummary, RunTrajectory, StepDetail,
    StepFailure, StepFlow, StepSet, StoredContent, StoredPrediction, StoredStep,
};
pub use session_read::{DocumentSummary, SessionRead, SessionSummary};
pub use sessions::{NewSession, SessionEnd, SessionStore};
pub use spill::{SpillContents, SpillStore};
pub use tasks::{CachedExecution, StoredAnswer, StoredTask, TaskRunRow, TaskStore};
pub use values::{RunStatus, SessionStatus, TrajectoryStatus, text_of};

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

/// The tables that hold a recorded session's rows (keyed by `session_id`), each with
/// how its rows name a document: the one list that deleting a session, purging a
/// file and copying a spill file go through (a test checks it against the schema).
const SESSION_TABLES: [(&str, NamesDocument); 7] = [
    ("messages", NamesDocument::InRawBytes),
    ("documents", NamesDocument::ByUri),
    ("snapshots", NamesDocument::ByUri),
    ("edits", NamesDocument::ByUri),
    ("reads", NamesDocument::ByUri),
    ("signals", NamesDocument::ByUri),
    ("offers", NamesDocument::ByUri),
];

/// How the rows of a session table name the document they are about (what purging a
/// file deletes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamesDocument {
    /// A `uri` column.
    ByUri,
    /// Somewhere in the raw message bytes (`messages.raw`).
    InRawBytes,
}

/// Version of the schema this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 13;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// Creating the file or its directory failed.
    #[error("cannot create database {path}: {source}")]
    Create {
        /// The database file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The database was written by a newer nextedit.
    #[error(
        "database {path} has schema version {found}, newer than this nextedit understands ({SCHEMA_VERSION}); upgrade nextedit"
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
    },
    /// The database file does not exist (read-only commands never create one).
    #[error("no database at {0} (record a session first, or pass --db)")]
    Missing(PathBuf),
    /// The file is not a nextedit database; nothing was written to it.
    #[error(
        "{path} is not a nextedit database: {why} (nothing was written to it; pass the database nextedit wrote with --db)"
    )]
    NotNextedit {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// The database holds triggers, which nextedit never creates: they would run on
    /// every row nextedit writes.
    #[error(
        "database {path} holds triggers nextedit did not create ({names}): they would fire on the rows nextedit writes; use another database, or drop them (DROP TRIGGER name) if they are yours"
    )]
    ForeignTriggers {
        /// The database file.
        path: PathBuf,
        /// The triggers' names.
        names: String,
    },
    /// A table has a column this nextedit does not know (a database made by something
    /// else, or by a newer nextedit).
    #[error("database {path}: table {table} has a column {column:?} this nextedit does not know")]
    UnknownColumn {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The column.
        column: String,
    },
    /// A column holds a value this nextedit does not know (a database made by
    /// something else, or by a newer nextedit).
    #[error(
        "database {path}: table {table}, column {column} holds {value:?}, a value this nextedit does not know"
    )]
    UnknownValue {
        /// The database file.
        path: PathBuf,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// The value (secrets masked).
        value: String,
    },
    /// No session with this id.
    #[error("no session {0} in the database")]
    NoSession(i64),
    /// No replay run with this id.
    #[error("no replay run {0} in the database")]
    NoRun(i64),
    /// No document matching the name in the session.
    #[error("session {session} has no document matching {name:?}{hint}")]
    NoDocument {
        /// Session id.
        session: i64,
        /// What was asked for.
        name: String,
        /// Candidates, pre-formatted.
        hint: String,
    },
    /// Stored edits do not apply (a corrupted or hand-edited database).
    #[error("session {session}, {uri}: edit at seq {seq} does not apply: {source}")]
    Inconsistent {
        /// Session id.
        session: i64,
        /// Document.
        uri: String,
        /// Offending row.
        seq: u64,
        /// What went wrong.
        #[source]
        source: crate::core::trajectory::ApplyError,
    },
}

/// An open nextedit database.
pub struct Database {
    conn: Connection,
    path: PathBuf,
    /// Former mode of a file that was readable by others, fixed at open.
    fixed: Option<u32>,
}

/// The default database path: `$NEXTEDIT_DB`, else `$XDG_DATA_HOME/nextedit/nextedit.db`,
/// else `~/.local/share/nextedit/nextedit.db`.
pub fn default_path() -> PathBuf {
    if let Some(db) = std::env::var_os("NEXTEDIT_DB").filter(|v| !v.is_empty()) {
        return PathBuf::from(db);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("nextedit").join("nextedit.db")
}

impl Database {
    /// Opens (creating if needed, mode 0600) and migrates the database at `path`.
    /// A symbolic link there is refused; an existing file readable by others is
    /// made private ([`Database::fixed_permissions`] says so).
    pub fn open(path: &Path) -> Result<Database, StoreError> {
        let fixed = create_private(path)?;
        let conn = Connection::open(path).map_err(|source| sqlite(path, source))?;
        let mut db = Database {
            conn,
            path: path.to_path_buf(),
            fixed: None,
        };
        db.fixed = fixed;
        db.configure(true)?;
        db.migrate()?;
        Ok(db)
    }

    /// The mode the file had when [`Database::open`] made it private (0600), if it was not.
    pub fn fixed_permissions(&self) -> Option<u32> {
        self.fixed
    }

    /// Opens an existing database; never creates one.
    pub fn open_existing(path: &Path) -> Result<Database, StoreError> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(|source| sqlite(path, source))?;
        let mut db = Database {
            conn,
            path: path.to_path_buf(),
            fixed: None,
        };
        db.configure(false)?;
        db.migrate()?;
        Ok(db)
    }

    /// Runs a query and collects its rows (the one place row errors get the path).
    fn rows<T, P: rusqlite::Params>(
        &self,
        sql: &str,
        params: P,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(sql)
            .map_err(|source| sqlite(&self.path, source))?;
        stmt.query_map(params, row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|source| sqlite(&self.path, source))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this process may write the database: takes the write lock and lets it
    /// go again, changing nothing.
    pub fn check_writable(&self) -> Result<(), StoreError> {
        self.conn
            .execute_batch("BEGIN IMMEDIATE; ROLLBACK;")
            .map_err(|source| StoreError::Sqlite {
                path: self.path.clone(),
                source,
            })
    }

    /// The underlying connection, for tests that check rows with their own SQL (the
    /// `testing` feature; the library reaches the tables only through its traits).
    #[cfg(any(test, feature = "testing"))]
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Before anything is written (switching to WAL writes the header, migrating
    /// writes the schema): the file is a nextedit database, or an empty file a new one
    /// may be created in (`empty_ok`); it holds no trigger (nextedit creates none, and
    /// one would run on the rows nextedit writes).
    fn check_ours(&self, empty_ok: bool) -> Result<(), StoreError> {
        let not_ours = |why: &str| StoreError::NotNextedit {
            path: self.path.clone(),
            why: why.to_string(),
        };
        let read = |sql: &str| -> Result<i64, StoreError> {
            self.conn.query_row(sql, [], |row| row.get(0)).map_err(|e| {
                match e.sqlite_error_code() {
                    Some(rusqlite::ErrorCode::NotADatabase) => {
                        not_ours("it is not a SQLite database")
                    }
                    _ => sqlite(&self.path, e),
                }
            })
        };
        let version = read("PRAGMA user_version")?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                path: self.path.clone(),
                found: version,
            });
        }
        let objects = read("SELECT count(*) FROM sqlite_master")?;
        if version == 0 && objects == 0 {
            return match empty_ok {
                true => Ok(()),
                false => Err(not_ours("it is empty")),
            };
        }
        let has_sessions =
            read("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sessions'")?;
        if version == 0 || has_sessions == 0 {
            return Err(not_ours(
                "it is a SQLite database without nextedit's tables",
            ));
        }
        let triggers = self.rows(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name",
            [],
            |row| row.get::<_, String>(0),
        )?;
        if !triggers.is_empty() {
            return Err(StoreError::ForeignTriggers {
                path: self.path.clone(),
                names: crate::base::secrets::scrub(&triggers.join(", ")).into_owned(),
            });
        }
        Ok(())
    }

    /// Waits for other processes' locks, checks the file is ours ([`Self::check_ours`]:
    /// `empty_ok` for a database that may be created), then switches to WAL.
    fn configure(&mut self, empty_ok: bool) -> Result<(), StoreError> {
        let busy_ms = std::env::var("NEXTEDIT_BUSY_TIMEOUT_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5000);
        self.conn
            .busy_timeout(Duration::from_millis(busy_ms))
            .map_err(|source| sqlite(&self.path, source))?;
        self.check_ours(empty_ok)?;
        // Switching to WAL needs a moment alone with the file, and the busy handler
        // does not cover it: retry while another process holds it.
        let mut attempts = 0;
        loop {
            match self
                .conn
                .execute_batch("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")
            {
                Ok(()) => return Ok(()),
                Err(e) if is_busy(&e) && attempts < 100 => {
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(source) => return Err(sqlite(&self.path, source)),
            }
        }
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let path = self.path.clone();
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(|source| sqlite(&path, source))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew {
                path,
                found: version,
            });
        }
        if version == SCHEMA_VERSION {
            return Ok(());
        }
        // IMMEDIATE takes the write lock first, so this re-check cannot race another
        // process migrating the same new file.
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(|source| sqlite(&path, source))?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(|source| sqlite(&path, source))?;
        // Numbered migrations: each brings version N-1 to N.
        if version < 1 {
            tx.execute_batch(include_str!("schema.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 2 {
            tx.execute_batch(include_str!("runs.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 3 {
            tx.execute_batch(include_str!("v3.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 4 {
            tx.execute_batch(include_str!("v4.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 5 {
            tx.execute_batch(include_str!("v5.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 6 {
            tx.execute_batch(include_str!("v6.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 7 {
            tx.execute_batch(include_str!("v7.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 8 {
            tx.execute_batch(include_str!("v8.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 9 {
            tx.execute_batch(include_str!("v9.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 10 {
            tx.execute_batch(include_str!("v10.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 11 {
            tx.execute_batch(include_str!("v11.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 12 {
            tx.execute_batch(include_str!("v12.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        if version < 13 {
            tx.execute_batch(include_str!("v13.sql"))
                .map_err(|source| sqlite(&path, source))?;
        }
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(|source| sqlite(&path, source))?;
        tx.commit().map_err(|source| sqlite(&path, source))
    }
}

impl StoreError {
    /// Whether retrying later may succeed (another process holds the database's lock).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Sqlite { source, .. } if is_busy(source))
    }
}

/// Whether SQLite reported the database busy or locked by someone else.
fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// The store's error for what SQLite (or reading a row) said about the database at
/// `path`: a value this build does not know ([`values::stored`]) is named as such.
fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::FromSqlConversionFailure(_, _, error) = &source
        && let Some(unknown) = error.downcast_ref::<values::UnknownValue>()
    {
        return StoreError::UnknownValue {
            path: path.to_path_buf(),
            table: unknown.table.to_string(),
            column: unknown.column.to_string(),
            value: unknown.value.clone(),
        };
    }
    StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates the directory (0700) and the database (0600, migrated) if they do not
/// exist: built in a private temporary file next to it and put in place in one step,
/// so no process ever sees a half-made database (an empty file is never nextedit's:
/// reading commands refuse one). Refuses a symbolic link at `path` (SQLite would
/// follow it and create the file with the umask's mode); makes an existing file (and
/// its `-wal`/`-shm`) 0600 if others could read it, returning its former mode. First
/// removes what killed makers left beside it ([`remove_abandoned_new`]).
fn create_private(path: &Path) -> Result<Option<u32>, StoreError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    remove_abandoned_new(dir);
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Err(StoreError::Create {
                path: path.to_path_buf(),
                source: std::io::Error::other(
                    "it is a symbolic link; give the real file's path (a database must be a private regular file)",
                ),
            });
        }
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 == 0 {
            return Ok(None);
        }
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            let file = PathBuf::from(file);
            if std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).map_err(
                    |source| StoreError::Create {
                        path: file.clone(),
                        source,
                    },
                )?;
            }
        }
        return Ok(Some(mode));
    }
    let err = |source| StoreError::Create {
        path: path.to_path_buf(),
        source,
    };
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(err)?;
    }
    // tempfile creates it 0600, and removes it if this fails; locked while it is made,
    // so that one a killed process left (lock free) is told from one being made.
    let new = tempfile::Builder::new()
        .prefix(NEW_PREFIX)
        .suffix(".db")
        .tempfile_in(dir)
        .map_err(err)?;
    lock(new.as_file(), true).map_err(err)?;
    let mut db = Database {
        conn: Connection::open(new.path()).map_err(|source| sqlite(path, source))?,
        path: path.to_path_buf(),
        fixed: None,
    };
    db.migrate()?;
    drop(db);
    match new.persist_noclobber(path) {
        Ok(_) => Ok(None),
        // Another process made it first: theirs is as good.
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(err(e.error)),
    }
}

/// The name of a database being made starts with this (then it is renamed into place).
const NEW_PREFIX: &str = ".nextedit-new-";
/// How old a database being made must be, with its lock free, to be taken as abandoned
/// (its maker locks it right after creating it: never so long).
const ABANDONED_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// An exclusive `flock(2)` on `file` (held until it is closed; the kernel drops it
/// however its process ends); `wait`: blocks until it is free, else whether it was.
fn lock(file: &std::fs::File, wait: bool) -> std::io::Result<bool> {
    match crate::base::sys::files::lock_exclusive(file, wait) {
        Ok(()) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock && !wait => Ok(false),
        Err(error) => Err(error),
    }
}

/// Removes the databases being made in `dir` that their maker abandoned (killed while
/// making one: nothing could remove it): this user's, older than [`ABANDONED_AFTER`],
/// their lock free; with their SQLite side files. Best effort: what cannot be read or
/// removed is left.
fn remove_abandoned_new(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let me = crate::base::sys::process::euid();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(NEW_PREFIX) && name.ends_with(".db")) {
            continue;
        }
        let path = entry.path();
        let abandoned = std::fs::symlink_metadata(&path).is_ok_and(|m| {
            m.is_file()
                && m.uid() == me
                && m.modified()
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= ABANDONED_AFTER)
        }) && std::fs::File::open(&path)
            .is_ok_and(|f| lock(&f, false).unwrap_or(false));
        if abandoned {
            for suffix in ["-journal", "-wal", "-shm", ""] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let _ = std::fs::remove_file(file);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Database, RunRead, RunStatus, RunStore, SESSION_TABLES, SessionRead};

    /// Every table of the schema with a `session_id` column, as a database this build
    /// makes has them: a table added by a migration and not to [`SESSION_TABLES`] would
    /// keep its rows when a session is deleted or a file purged.
    #[test]
    fn every_session_owned_table_is_in_the_one_list() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(&dir.path().join("tables.db")).unwrap();
        let owned = db
            .rows(
                "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) c
                  WHERE m.type = 'table' AND c.name = 'session_id' ORDER BY m.name",
                [],
                |row| row.get::<_, String>(0),
            )
            .unwrap();
        let mut listed: Vec<String> = SESSION_TABLES.iter().map(|(t, _)| t.to_string()).collect();
        listed.sort();
        assert_eq!(owned, listed);
    }

    /// A status this build does not know, read from a database, is an error naming the
    /// table, the column and the value; a known one reads back as written.
    #[test]
    fn an_unknown_status_is_named_with_its_table_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("statuses.db");
        let mut db = Database::open(&path).unwrap();
        let run = db
            .create_run(
                "builtin:noop",
                &serde_json::json!({}),
                &[("k".into(), None)],
            )
            .unwrap();
        db.finish_run(run, RunStatus::Interrupted).unwrap();
        assert_eq!(db.run(run).unwrap().status, RunStatus::Interrupted);
        db.connection()
            .execute_batch(
                "UPDATE runs SET status = 'exploded';
                 UPDATE run_trajectories SET status = 'sk-live-0123456789abcdefghijklmnop';
                 INSERT INTO sessions (kind, started_at, status, nextedit_version)
                 VALUES ('recorded', '2025-01-01', 'paused', '0');",
            )
            .unwrap();
        let shown = |e: super::StoreError| e.to_string().replace(&path.display().to_string(), "DB");
        assert_eq!(
            shown(db.run(run).unwrap_err()),
            "database DB: table runs, column status holds \"exploded\", a value this nextedit does not know"
        );
        assert!(
            shown(db.run_trajectories(run).unwrap_err())
                .starts_with("database DB: table run_trajectories, column status holds \"sk-live-")
        );
        assert_eq!(
            shown(db.sessions().unwrap_err()),
            "database DB: table sessions, column status holds \"paused\", a value this nextedit does not know"
        );
    }
}
