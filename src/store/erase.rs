//! Erasure: what the user deletes leaves the database file, not just its tables.
//!
//! SQLite only unlinks deleted rows: their bytes stay in free pages, in the WAL and in
//! later pages until overwritten. So every erasure runs with `secure_delete` (freed
//! content is zeroed), then checkpoints the WAL into the file and truncates it, rebuilds
//! the file (`VACUUM`) and checkpoints again. Replay runs keep a copy of what they
//! replayed (`run_trajectories`, predictions, reads), so runs that copied erased text
//! are deleted whole, and the report names them.

use crate::store::RunRead;
use std::collections::BTreeSet;

use rusqlite::{OptionalExtension, params};

use super::{Database, NamesDocument, SESSION_TABLES, StoreError, sqlite};
use crate::core::trajectory::{Trajectory, without_files};

/// The tables of replay runs, all keyed by `run_id`.
const RUN_TABLES: [&str; 9] = [
    "run_trajectories",
    "run_steps",
    "run_step_yardsticks",
    "run_step_judgements",
    "run_predictions",
    "run_errors",
    "run_reads",
    // The answers a run stored in the response cache quote the files it replayed.
    "response_cache",
    "runs",
];

/// What an erasure removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Erasure {
    /// Sessions deleted whole.
    pub sessions: Vec<i64>,
    /// `(session, path)` of each document whose text was removed from a kept session.
    pub documents: Vec<(i64, String)>,
    /// Replay runs deleted because they held a copy of the erased text.
    pub runs: Vec<i64>,
    /// `(deleted, promoted)` for each deleted run that was the first of a repetition
    /// group: its next repetition now names the group (the others point at it).
    pub regrouped: Vec<(i64, i64)>,
    /// Whether the WAL could be emptied; `false` while another process (a running
    /// proxy) holds the database open, and the old text may stay in the `-wal` file
    /// until it closes.
    pub wal_cleared: bool,
}

/// Erasure: deleting sessions, runs and files' text, scrubbed from the database files.
pub trait Erase {
    /// Deletes a session, every row that belongs to it and the runs that replayed it,
    /// and scrubs their bytes from the database files.
    fn delete_session(&mut self, session: i64) -> Result<Erasure, StoreError>;

    /// Removes the text of every file whose path `doomed` selects from every session
    /// (rows, raw messages that name it, stored trajectories) and deletes the runs that
    /// copied it; then scrubs the database files.
    fn purge_files(&mut self, doomed: &dyn Fn(&str) -> bool) -> Result<Erasure, StoreError>;

    /// Deletes a replay run (its steps, predictions, reads and copies of the replayed
    /// trajectories) and scrubs their bytes from the database files.
    fn delete_run(&mut self, run: i64) -> Result<Erasure, StoreError>;
}

impl Erase for Database {
    fn delete_session(&mut self, session: i64) -> Result<Erasure, StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        self.conn
            .execute_batch("PRAGMA secure_delete = ON")
            .map_err(e)?;
        let started_at: Option<String> = self
            .conn
            .query_row(
                "SELECT started_at FROM sessions WHERE id = ?1",
                [session],
                |r| r.get(0),
            )
            .optional()
            .map_err(e)?;
        let Some(started_at) = started_at else {
            return Err(StoreError::NoSession(session));
        };
        let runs = self.runs_copying(|key, trajectory| {
            key == format!("session:{session}")
                || trajectory.is_some_and(|t| {
                    t.session.id == session.to_string()
                        && t.session.started_at.as_deref() == Some(started_at.as_str())
                })
        })?;
        let tx = self.conn.transaction().map_err(e)?;
        for (table, _) in SESSION_TABLES {
            tx.execute(
                &format!("DELETE FROM {table} WHERE session_id = ?1"),
                [session],
            )
            .map_err(e)?;
        }
        tx.execute("DELETE FROM sessions WHERE id = ?1", [session])
            .map_err(e)?;
        let regrouped = delete_runs(&tx, &runs).map_err(e)?;
        tx.commit().map_err(e)?;
        let wal_cleared = self.scrub()?;
        Ok(Erasure {
            sessions: vec![session],
            documents: Vec::new(),
            runs,
            regrouped,
            wal_cleared,
        })
    }

    fn purge_files(&mut self, doomed: &dyn Fn(&str) -> bool) -> Result<Erasure, StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        self.conn
            .execute_batch("PRAGMA secure_delete = ON")
            .map_err(e)?;
        let documents: Vec<(i64, String, String)> = self
            .rows("SELECT session_id, uri, path FROM documents", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .into_iter()
            .filter(|(_, _, p): &(i64, String, String)| doomed(p))
            .collect();
        let stored: Vec<(i64, String)> = self.rows(
            "SELECT id, trajectory FROM sessions WHERE trajectory IS NOT NULL",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let mut rewritten = Vec::new();
        let mut erased_docs: Vec<(i64, String)> =
            documents.iter().map(|(s, _, p)| (*s, p.clone())).collect();
        for (id, json) in stored {
            let Ok(trajectory) = serde_json::from_str::<Trajectory>(&json) else {
                continue;
            };
            if let Some(kept) = without_files(&trajectory, doomed) {
                erased_docs.extend(
                    trajectory
                        .files
                        .iter()
                        .filter(|f| doomed(&f.path))
                        .map(|f| (id, f.path.clone())),
                );
                rewritten.push((id, serde_json::to_string(&kept).expect("serialises")));
            }
        }
        let runs = self.runs_copying(|_, trajectory| {
            trajectory.is_some_and(|t| t.files.iter().any(|f| doomed(&f.path)))
        })?;
        let tx = self.conn.transaction().map_err(e)?;
        for (session, uri, _) in &documents {
            purge_document(&tx, *session, uri).map_err(e)?;
        }
        for (id, json) in &rewritten {
            tx.execute(
                "UPDATE sessions SET trajectory = ?2 WHERE id = ?1",
                params![id, json],
            )
            .map_err(e)?;
        }
        let regrouped = delete_runs(&tx, &runs).map_err(e)?;
        tx.commit().map_err(e)?;
        let wal_cleared = self.scrub()?;
        erased_docs.sort();
        erased_docs.dedup();
        Ok(Erasure {
            sessions: Vec::new(),
            documents: erased_docs,
            runs,
            regrouped,
            wal_cleared,
        })
    }

    fn delete_run(&mut self, run: i64) -> Result<Erasure, StoreError> {
        self.run(run)?;
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        self.conn
            .execute_batch("PRAGMA secure_delete = ON")
            .map_err(e)?;
        let tx = self.conn.transaction().map_err(e)?;
        let regrouped = delete_runs(&tx, &[run]).map_err(e)?;
        tx.commit().map_err(e)?;
        let wal_cleared = self.scrub()?;
        Ok(Erasure {
            runs: vec![run],
            regrouped,
            wal_cleared,
            ..Erasure::default()
        })
    }
}

impl Database {
    /// The runs with a trajectory `copied(key, trajectory)` selects.
    fn runs_copying(
        &self,
        copied: impl Fn(&str, Option<&Trajectory>) -> bool,
    ) -> Result<Vec<i64>, StoreError> {
        let rows: Vec<(i64, String, Option<String>)> = self.rows(
            "SELECT run_id, key, trajectory FROM run_trajectories",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?;
        let runs: BTreeSet<i64> = rows
            .into_iter()
            .filter(|(_, key, json)| {
                let trajectory = json
                    .as_deref()
                    .and_then(|j| serde_json::from_str::<Trajectory>(j).ok());
                copied(key, trajectory.as_ref())
            })
            .map(|(run, _, _)| run)
            .collect();
        Ok(runs.into_iter().collect())
    }

    /// Moves everything into the main file, truncates the WAL and rebuilds the file so
    /// freed pages are gone; returns whether the WAL could be emptied.
    fn scrub(&mut self) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let checkpoint = |conn: &rusqlite::Connection| -> rusqlite::Result<bool> {
            // (busy, frames in the log, frames checkpointed): busy means a reader kept
            // the WAL from being reset.
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|busy| busy == 0)
        };
        checkpoint(&self.conn).map_err(e)?;
        self.conn.execute_batch("VACUUM").map_err(e)?;
        checkpoint(&self.conn).map_err(e)
    }
}

/// Deletes every row of session `session` that names document `uri`, in every session
/// table ([`SESSION_TABLES`], however its rows name it), and the offers made elsewhere
/// that edit it.
fn purge_document(tx: &rusqlite::Transaction<'_>, session: i64, uri: &str) -> rusqlite::Result<()> {
    for (table, names) in SESSION_TABLES {
        match names {
            NamesDocument::ByUri => {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE session_id = ?1 AND uri = ?2"),
                    params![session, uri],
                )?;
            }
            NamesDocument::InRawBytes => {
                // The requests that name the document, and the answers to them.
                tx.execute(
                    &format!(
                        "DELETE FROM {table} WHERE session_id = ?1 AND dir = 's2c' AND kind = 'response'
                           AND msg_id IN (SELECT msg_id FROM {table} WHERE session_id = ?1
                                           AND dir = 'c2s' AND instr(raw, ?2) > 0)"
                    ),
                    params![session, uri.as_bytes()],
                )?;
                tx.execute(
                    &format!("DELETE FROM {table} WHERE session_id = ?1 AND instr(raw, ?2) > 0"),
                    params![session, uri.as_bytes()],
                )?;
            }
        }
    }
    // Offers made in another document that edit this one (a rename, a code action).
    tx.execute(
        "DELETE FROM offers WHERE session_id = ?1 AND instr(edits, ?2) > 0",
        params![
            session,
            serde_json::to_string(uri).expect("strings serialise")
        ],
    )?;
    Ok(())
}

/// Deletes `runs` from every run table. A deleted run that was the first of a
/// repetition group hands the group to its next repetition left (the lowest one not
/// deleted too), so the other repetitions stay one group and never name a run that
/// is gone; returns `(deleted, promoted)` for each.
fn delete_runs(tx: &rusqlite::Transaction<'_>, runs: &[i64]) -> rusqlite::Result<Vec<(i64, i64)>> {
    for &run in runs {
        for table in RUN_TABLES {
            let column = if table == "runs" { "id" } else { "run_id" };
            tx.execute(&format!("DELETE FROM {table} WHERE {column} = ?1"), [run])?;
        }
    }
    // Every run of the list is gone now: the ones still naming a deleted run survive.
    let mut regrouped = Vec::new();
    for &run in runs {
        let next: Option<i64> = tx
            .query_row(
                "SELECT id FROM runs WHERE repetition_of = ?1
                 ORDER BY coalesce(repetition, 1), id LIMIT 1",
                [run],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(next) = next {
            tx.execute("UPDATE runs SET repetition_of = NULL WHERE id = ?1", [next])?;
            tx.execute(
                "UPDATE runs SET repetition_of = ?2 WHERE repetition_of = ?1",
                [run, next],
            )?;
            regrouped.push((run, next));
        }
    }
    Ok(regrouped)
}
