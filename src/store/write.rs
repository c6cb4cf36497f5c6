//! Writing sessions and recorded rows.

use rusqlite::params;

use super::{Database, StoreError, sqlite};
use crate::record::{Record, SessionFact};
use crate::trajectory::Trajectory;

/// What is known about a session when it starts.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    /// Workspace root, if given.
    pub workspace: Option<String>,
    /// Git HEAD of the workspace.
    pub git_head: Option<String>,
    /// Server argv.
    pub server_command: Vec<String>,
    /// Proxy process id.
    pub pid: Option<u32>,
    /// Whether raw message bytes are stored.
    pub record_raw: bool,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// The server exited (with this code) or the editor went away.
    Exited(Option<i32>),
    /// The proxy was told to stop by a signal.
    Signalled(i32),
}

impl Database {
    /// Inserts a `recorded` session in state `running`; returns its id.
    pub fn begin_session(&mut self, new: &NewSession) -> Result<i64, StoreError> {
        let started_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let command = serde_json::to_string(&new.server_command).expect("strings serialise");
        self.conn
            .execute(
                "INSERT INTO sessions (kind, started_at, status, workspace, git_head, server_command,
                                       position_encoding, nextedit_version, pid, record_raw)
                 VALUES ('recorded', ?1, 'running', ?2, ?3, ?4, 'utf-16', ?5, ?6, ?7)",
                params![
                    started_at,
                    new.workspace,
                    new.git_head,
                    command,
                    env!("CARGO_PKG_VERSION"),
                    new.pid,
                    new.record_raw
                ],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Marks a session ended and notes how many frames were dropped.
    pub fn end_session(
        &mut self,
        session: i64,
        end: SessionEnd,
        dropped: u64,
    ) -> Result<(), StoreError> {
        let ended_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let (status, code) = match end {
            SessionEnd::Exited(code) => ("ended", code),
            SessionEnd::Signalled(signal) => ("signalled", Some(128 + signal)),
        };
        self.conn
            .execute(
                "UPDATE sessions SET ended_at = ?2, status = ?3, exit_code = ?4, dropped = dropped + ?5 WHERE id = ?1",
                params![session, ended_at, status, code, dropped as i64],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// Sets the git HEAD of a session (learned once the workspace is known).
    pub fn set_git_head(&mut self, session: i64, head: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE sessions SET git_head = ?2 WHERE id = ?1",
                params![session, head],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// Records the commit that contains a session's edits (`nextedit sessions link`).
    pub fn set_linked_commit(&mut self, session: i64, sha: &str) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE sessions SET linked_commit = ?2 WHERE id = ?1",
                params![session, sha],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        if changed == 0 {
            return Err(StoreError::NoSession(session));
        }
        Ok(())
    }

    /// Writes a batch of records in one transaction (all or nothing).
    pub fn write_records(&mut self, session: i64, records: &[Record]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        for record in records {
            match record {
                Record::Message(m) => {
                    tx.prepare_cached(
                        "INSERT INTO messages (session_id, seq, t_ns, dir, kind, method, msg_id, size, raw,
                                               redactions, invalid, consumed)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                    )
                    .and_then(|mut s| {
                        s.execute(params![
                            session,
                            m.seq as i64,
                            m.t_ns as i64,
                            m.dir.as_str(),
                            m.kind.map(|k| k.as_str()),
                            m.method,
                            m.id,
                            m.size as i64,
                            m.raw,
                            m.redactions as i64,
                            m.invalid,
                            m.consumed
                        ])
                    })
                    .map_err(e)?;
                }
                Record::Session(fact) => {
                    let (column, value) = match fact {
                        SessionFact::Workspace(w) => ("workspace", w.clone()),
                        SessionFact::PositionEncoding(enc) => {
                            ("position_encoding", enc.as_str().to_string())
                        }
                        SessionFact::Client(c) => ("client", c.clone()),
                        SessionFact::Server(s) => ("server", s.clone()),
                    };
                    tx.execute(
                        &format!("UPDATE sessions SET {column} = ?2 WHERE id = ?1"),
                        params![session, value],
                    )
                    .map_err(e)?;
                }
                Record::Document(d) => {
                    tx.prepare_cached(
                        "INSERT OR IGNORE INTO documents (session_id, uri, path, language_id, excluded, first_seq)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )
                    .and_then(|mut s| s.execute(params![session, d.uri, d.path, d.language_id, d.excluded, d.first_seq as i64]))
                    .map_err(e)?;
                }
                Record::Snapshot(s) => {
                    tx.prepare_cached(
                        "INSERT INTO snapshots (session_id, seq, t_ns, uri, kind, version, text, redactions)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            session,
                            s.seq as i64,
                            s.t_ns as i64,
                            s.uri,
                            s.kind.as_str(),
                            s.version,
                            s.text,
                            s.redactions as i64
                        ])
                    })
                    .map_err(e)?;
                }
                Record::Edit(ed) => {
                    tx.prepare_cached(
                        "INSERT INTO edits (session_id, seq, t_ns, uri, version, change_index, start_byte, end_byte,
                                            start_line, end_line, new_end_line, text_before, text_after, redactions,
                                            origin)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            session,
                            ed.seq as i64,
                            ed.t_ns as i64,
                            ed.uri,
                            ed.version,
                            ed.change_index as i64,
                            ed.span.start_byte as i64,
                            ed.span.end_byte as i64,
                            ed.span.start_line as i64,
                            ed.span.end_line as i64,
                            ed.span.new_end_line as i64,
                            ed.span.before,
                            ed.span.after,
                            ed.redactions as i64,
                            ed.origin.as_str()
                        ])
                    })
                    .map_err(e)?;
                }
                Record::Read(r) => {
                    tx.prepare_cached(
                        "INSERT INTO reads (session_id, seq, t_ns, uri, via, role, start_line, end_line, request_id)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            session,
                            r.seq as i64,
                            r.t_ns as i64,
                            r.uri,
                            r.via,
                            r.role.as_str(),
                            r.lines.start as i64,
                            r.lines.end as i64,
                            r.request_id
                        ])
                    })
                    .map_err(e)?;
                }
                Record::Signal(s) => {
                    tx.prepare_cached(
                        "INSERT INTO signals (session_id, seq, t_ns, kind, uri, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )
                    .and_then(|mut st| {
                        st.execute(params![
                            session,
                            s.seq as i64,
                            s.t_ns as i64,
                            s.kind,
                            s.uri,
                            s.payload.to_string()
                        ])
                    })
                    .map_err(e)?;
                }
            }
        }
        tx.commit().map_err(e)
    }

    /// Stores a commit-derived or imported trajectory as a session; returns its id.
    pub fn import_trajectory(&mut self, trajectory: &Trajectory) -> Result<i64, StoreError> {
        let json = serde_json::to_string(trajectory).expect("trajectories serialise");
        let session = &trajectory.session;
        let started_at = session.started_at.clone().unwrap_or_else(|| {
            humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
        });
        self.conn
            .execute(
                "INSERT INTO sessions (kind, started_at, ended_at, status, workspace, git_head, nextedit_version, record_raw, trajectory)
                 VALUES (?1, ?2, ?3, 'ended', ?4, ?5, ?6, 0, ?7)",
                params![
                    session.kind.as_str(),
                    started_at,
                    session.ended_at,
                    session.workspace,
                    session.commit.as_ref().map(|c| c.sha.clone()).or(session.git_head.clone()),
                    env!("CARGO_PKG_VERSION"),
                    json
                ],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(self.conn.last_insert_rowid())
    }
}
