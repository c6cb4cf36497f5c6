//! The recorder's spill files, seen from the store: a spill file is a database of the
//! same schema (its rows already filtered and masked), plus one table naming the
//! session of the main database it continues. Its session is copied into the main
//! database in one transaction ([`SpillStore::absorb`]); every statement that touches
//! two files (`ATTACH`) or the spill file's own table is here, none in the proxy.

use std::path::Path;

use rusqlite::{OptionalExtension, params};

use super::{Database, SESSION_TABLES, StoreError, sqlite};

/// Table in a spill file naming the database session its rows belong to, if any.
const TARGET_TABLE: &str = "nextedit_spill_target";

/// What a spill file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillContents {
    /// Its session (the last one, the only one a spill file has).
    pub session: i64,
    /// The main database's session it continues, if its proxy noted one.
    pub target: Option<i64>,
    /// Frames (message rows) it holds.
    pub frames: u64,
}

/// Spill files written, read and copied into the main database.
pub trait SpillStore {
    /// Copies session `from` of another database file (a recorder's spill file) into
    /// this one: into session `into`, or into a new session copied from its row.
    /// One transaction; returns the session the rows went to.
    fn absorb(&mut self, other: &Path, from: i64, into: Option<i64>) -> Result<i64, StoreError>;

    /// Ends session `into` as session `from` of the spill file `other` ended (its end
    /// time, status, exit code and dropped frames): the spilled part's end is the
    /// session's end.
    fn take_end(&mut self, other: &Path, from: i64, into: i64) -> Result<(), StoreError>;

    /// Notes in this database (a spill file) the main database's session its rows
    /// continue (`None`: a session of their own).
    fn set_spill_target(&mut self, into: Option<i64>) -> Result<(), StoreError>;

    /// What this database (a spill file) holds.
    fn spill_contents(&self) -> Result<SpillContents, StoreError>;
}

impl SpillStore for Database {
    fn absorb(&mut self, other: &Path, from: i64, into: Option<i64>) -> Result<i64, StoreError> {
        let path = self.path.clone();
        self.attached(other, |conn| absorb_attached(conn, from, into))
            .map_err(|source| sqlite(&path, source))
    }

    fn take_end(&mut self, other: &Path, from: i64, into: i64) -> Result<(), StoreError> {
        let path = self.path.clone();
        self.attached(other, |conn| {
            conn.execute(
                "UPDATE main.sessions SET (ended_at, status, exit_code, dropped) =
                   (SELECT ended_at, status, exit_code, dropped FROM spill.sessions WHERE id = ?2)
                 WHERE id = ?1",
                [into, from],
            )
            .map(|_| ())
        })
        .map_err(|source| sqlite(&path, source))
    }

    fn set_spill_target(&mut self, into: Option<i64>) -> Result<(), StoreError> {
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS {TARGET_TABLE} (main_session INTEGER); DELETE FROM {TARGET_TABLE};"
        );
        self.conn
            .execute_batch(&sql)
            .and_then(|()| {
                self.conn
                    .execute(&format!("INSERT INTO {TARGET_TABLE} VALUES (?1)"), [into])
            })
            .map(|_| ())
            .map_err(|source| sqlite(&self.path, source))
    }

    fn spill_contents(&self) -> Result<SpillContents, StoreError> {
        let e = |source| sqlite(&self.path, source);
        let session: i64 = (self.conn)
            .query_row("SELECT max(id) FROM sessions", [], |r| r.get(0))
            .map_err(e)?;
        // No table (its proxy never got to leave it) or no row: a session of its own.
        let target: Option<i64> = (self.conn)
            .query_row(
                &format!("SELECT main_session FROM {TARGET_TABLE}"),
                [],
                |r| r.get(0),
            )
            .optional()
            .unwrap_or(None)
            .flatten();
        let frames: i64 = (self.conn)
            .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
            .map_err(e)?;
        Ok(SpillContents {
            session,
            target,
            frames: frames as u64,
        })
    }
}

impl Database {
    /// Runs `work` with the database file `other` attached as `spill`, detached again
    /// whatever `work` did.
    fn attached<T>(
        &mut self,
        other: &Path,
        work: impl FnOnce(&mut rusqlite::Connection) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        self.conn.execute(
            "ATTACH DATABASE ?1 AS spill",
            [other.to_string_lossy().as_ref()],
        )?;
        let result = work(&mut self.conn);
        let detached = self.conn.execute("DETACH DATABASE spill", []);
        let value = result?;
        detached?;
        Ok(value)
    }
}

/// Column names of a table in the main database, but `skip`.
fn columns(conn: &rusqlite::Connection, table: &str, skip: &str) -> rusqlite::Result<String> {
    let mut stmt = conn.prepare(&format!("PRAGMA main.table_info({table})"))?;
    let names = stmt
        .query_map([], |row| row.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names
        .into_iter()
        .filter(|n| n != skip)
        .collect::<Vec<_>>()
        .join(", "))
}

fn absorb_attached(
    conn: &mut rusqlite::Connection,
    from: i64,
    into: Option<i64>,
) -> rusqlite::Result<i64> {
    let tx = conn.transaction()?;
    let into = match into {
        Some(id) => {
            for column in [
                "workspace",
                "git_head",
                "position_encoding",
                "client",
                "server",
            ] {
                tx.execute(
                    &format!(
                        "UPDATE main.sessions SET {column} = coalesce((SELECT {column} FROM spill.sessions WHERE id = ?2), {column}) WHERE id = ?1"
                    ),
                    params![id, from],
                )?;
            }
            id
        }
        None => {
            let cols = columns(&tx, "sessions", "id")?;
            tx.execute(
                &format!(
                    "INSERT INTO main.sessions ({cols}) SELECT {cols} FROM spill.sessions WHERE id = ?1"
                ),
                [from],
            )?;
            tx.last_insert_rowid()
        }
    };
    for (table, _) in SESSION_TABLES {
        let cols = columns(&tx, table, "session_id")?;
        tx.execute(
            &format!(
                "INSERT OR IGNORE INTO main.{table} (session_id, {cols}) SELECT ?1, {cols} FROM spill.{table} WHERE session_id = ?2"
            ),
            params![into, from],
        )?;
    }
    tx.commit()?;
    Ok(into)
}
