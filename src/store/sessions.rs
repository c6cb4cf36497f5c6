//! Writing sessions and recorded rows ([`SessionStore`]): a session, and each batch of
//! records, in one transaction; every text column goes through `privacy::mask` here.

use std::sync::LazyLock;

use rusqlite::params;

use super::{Database, StoreError, sqlite};
use crate::core::record::privacy::{mask, mask_argv};
use crate::core::record::{
    DocumentRecord, EditRecord, MessageRecord, OfferRecord, ReadRecord, Record, SessionFact,
    SignalRecord, SnapshotRecord,
};
use crate::core::trajectory::Trajectory;

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
    /// The proxy was told to stop by a signal; the server's own exit code when it
    /// is known (137 when it had to be killed), else 128 + the signal.
    Signalled {
        /// The signal the proxy received.
        signal: i32,
        /// How the server ended, if it was reaped.
        code: Option<i32>,
    },
}

/// Writing recorded sessions: the session row from start to end, the recorder's batches of
/// rows, commit-derived and imported trajectories.
pub trait SessionStore {
    /// Inserts a `recorded` session in state `running`; returns its id.
    fn begin_session(&mut self, new: &NewSession) -> Result<i64, StoreError>;

    /// Marks a session ended and notes how many frames were dropped; a session that
    /// lost any is `incomplete` (its exit code still says how it ended).
    fn end_session(
        &mut self,
        session: i64,
        end: SessionEnd,
        dropped: u64,
    ) -> Result<(), StoreError>;

    /// Sets the git HEAD of a session (learned once the workspace is known).
    fn set_git_head(&mut self, session: i64, head: &str) -> Result<(), StoreError>;

    /// Records the commit that contains a session's edits (`nextedit sessions link`).
    fn set_linked_commit(&mut self, session: i64, sha: &str) -> Result<(), StoreError>;

    /// Writes a batch of records in one transaction (all or nothing).
    fn write_records(&mut self, session: i64, records: &[Record]) -> Result<(), StoreError>;

    /// Stores a commit-derived or imported trajectory as a session; returns its id.
    /// The privacy rules apply here, for every ingestion path: files matching the
    /// default excludes keep no text, secrets are masked
    /// ([`crate::core::record::privacy::protect_trajectory`]).
    fn import_trajectory(&mut self, trajectory: &Trajectory) -> Result<i64, StoreError>;
}

impl SessionStore for Database {
    fn begin_session(&mut self, new: &NewSession) -> Result<i64, StoreError> {
        let started_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        // Every text column goes through the privacy masking on its way in (`mask`),
        // whatever the caller did: secrets in argv, names or URIs are never stored.
        let command =
            serde_json::to_string(&mask_argv(&new.server_command)).expect("strings serialise");
        self.conn
            .execute(
                "INSERT INTO sessions (kind, started_at, status, workspace, git_head, server_command,
                                       position_encoding, nextedit_version, pid, record_raw)
                 VALUES ('recorded', ?1, 'running', ?2, ?3, ?4, 'utf-16', ?5, ?6, ?7)",
                params![
                    started_at,
                    new.workspace.as_deref().map(mask),
                    new.git_head.as_deref().map(mask),
                    command,
                    env!("CARGO_PKG_VERSION"),
                    new.pid,
                    new.record_raw
                ],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(self.conn.last_insert_rowid())
    }

    fn end_session(
        &mut self,
        session: i64,
        end: SessionEnd,
        dropped: u64,
    ) -> Result<(), StoreError> {
        let ended_at = humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string();
        let (status, code) = match end {
            SessionEnd::Exited(code) => ("ended", code),
            SessionEnd::Signalled { signal, code } => {
                ("signalled", Some(code.unwrap_or(128 + signal)))
            }
        };
        let status = if dropped > 0 { "incomplete" } else { status };
        self.conn
            .execute(
                "UPDATE sessions SET ended_at = ?2, status = ?3, exit_code = ?4, dropped = dropped + ?5 WHERE id = ?1",
                params![session, ended_at, status, code, dropped as i64],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    fn set_git_head(&mut self, session: i64, head: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE sessions SET git_head = ?2 WHERE id = ?1",
                params![session, mask(head)],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    fn set_linked_commit(&mut self, session: i64, sha: &str) -> Result<(), StoreError> {
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

    fn write_records(&mut self, session: i64, records: &[Record]) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        let mut i = 0;
        while i < records.len() {
            if let Record::Offer(_) = records[i] {
                // An answer's offers come together: many rows per statement.
                let run = records[i..]
                    .iter()
                    .take_while(|r| matches!(r, Record::Offer(_)))
                    .count();
                insert_offers(&tx, session, &records[i..i + run]).map_err(e)?;
                i += run;
            } else {
                write_record(&tx, session, &records[i]).map_err(e)?;
                i += 1;
            }
        }
        tx.commit().map_err(e)
    }

    fn import_trajectory(&mut self, trajectory: &Trajectory) -> Result<i64, StoreError> {
        let mut trajectory = trajectory.clone();
        crate::core::record::privacy::protect_trajectory(
            &crate::core::record::privacy::PrivacyFilter::with_defaults(),
            &mut trajectory,
        );
        let trajectory = &trajectory;
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

/// Writes one record (the offers of one answer are written together: [`insert_offers`]).
fn write_record(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    record: &Record,
) -> rusqlite::Result<()> {
    match record {
        Record::Message(m) => insert_message(tx, session, m),
        Record::Session(fact) => set_session_fact(tx, session, fact),
        Record::Document(d) => insert_document(tx, session, d),
        Record::Snapshot(s) => insert_snapshot(tx, session, s),
        Record::Edit(ed) => insert_edit(tx, session, ed),
        Record::Read(r) => insert_read(tx, session, r),
        Record::Signal(s) => insert_signal(tx, session, s),
        Record::Offer(_) => insert_offers(tx, session, std::slice::from_ref(record)),
    }
}

/// A fact learned about the session, in its `sessions` row.
fn set_session_fact(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    fact: &SessionFact,
) -> rusqlite::Result<()> {
    let (column, value) = match fact {
        SessionFact::Workspace(w) => ("workspace", w.clone()),
        SessionFact::PositionEncoding(enc) => ("position_encoding", enc.as_str().to_string()),
        SessionFact::Client(c) => ("client", c.clone()),
        SessionFact::Server(s) => ("server", s.clone()),
        // Privacy rules only; the session keeps its first root.
        SessionFact::Root { .. } => return Ok(()),
    };
    tx.execute(
        &format!("UPDATE sessions SET {column} = ?2 WHERE id = ?1"),
        params![session, mask(&value)],
    )
    .map(|_| ())
}

/// A `messages` row.
fn insert_message(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    m: &MessageRecord,
) -> rusqlite::Result<()> {
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
            m.method.as_deref().map(mask),
            m.id.as_deref().map(mask),
            m.size as i64,
            m.raw,
            m.redactions as i64,
            m.invalid.as_deref().map(mask),
            m.consumed
        ])
    })
    .map(|_| ())
}

/// A `documents` row (the first time a document is seen; later ones are ignored).
fn insert_document(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    d: &DocumentRecord,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT OR IGNORE INTO documents (session_id, uri, path, language_id, excluded, first_seq)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut s| {
        s.execute(params![
            session,
            mask(&d.uri),
            mask(&d.path),
            d.language_id.as_deref().map(mask),
            d.excluded,
            d.first_seq as i64
        ])
    })
    .map(|_| ())
}

/// A `snapshots` row.
fn insert_snapshot(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    s: &SnapshotRecord,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO snapshots (session_id, seq, t_ns, uri, kind, version, text, redactions)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )
    .and_then(|mut st| {
        st.execute(params![
            session,
            s.seq as i64,
            s.t_ns as i64,
            mask(&s.uri),
            s.kind.as_str(),
            s.version,
            s.text.as_deref().map(mask),
            s.redactions as i64
        ])
    })
    .map(|_| ())
}

/// An `edits` row.
fn insert_edit(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    ed: &EditRecord,
) -> rusqlite::Result<()> {
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
            mask(&ed.uri),
            ed.version,
            ed.change_index as i64,
            ed.span.start_byte as i64,
            ed.span.end_byte as i64,
            ed.span.start_line as i64,
            ed.span.end_line as i64,
            ed.span.new_end_line as i64,
            mask(&ed.span.before),
            mask(&ed.span.after),
            ed.redactions as i64,
            ed.origin.as_str()
        ])
    })
    .map(|_| ())
}

/// A `reads` row.
fn insert_read(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    r: &ReadRecord,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO reads (session_id, seq, t_ns, uri, via, role, start_line, end_line, request_id)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )
    .and_then(|mut st| {
        st.execute(params![
            session,
            r.seq as i64,
            r.t_ns as i64,
            mask(&r.uri),
            mask(&r.via),
            r.role.as_str(),
            r.lines.start as i64,
            r.lines.end as i64,
            r.request_id.as_deref().map(mask)
        ])
    })
    .map(|_| ())
}

/// A `signals` row.
fn insert_signal(
    tx: &rusqlite::Transaction<'_>,
    session: i64,
    s: &SignalRecord,
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO signals (session_id, seq, t_ns, kind, uri, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut st| {
        st.execute(params![
            session,
            s.seq as i64,
            s.t_ns as i64,
            mask(&s.kind),
            s.uri.as_deref().map(mask),
            mask(&s.payload.to_string())
        ])
    })
    .map(|_| ())
}

/// Offers inserted by one statement ([`OFFER_COLUMNS`] values each: 400 parameters).
const OFFERS_PER_INSERT: usize = 25;
/// Values of one `offers` row.
/// `INSERT OR REPLACE` of `rows` offers: a resolved completion item rewrites its offer
/// (same answer, same rank).
fn offers_insert(rows: usize) -> String {
    let row = format!("({})", vec!["?"; OFFER_COLUMNS].join(", "));
    format!(
        "INSERT OR REPLACE INTO offers (session_id, seq, rank, request_seq, t_ns, latency_ns, kind,
                                        method, uri, line, col_byte, label, text, edits,
                                        list_size, incomplete)
         VALUES {}",
        vec![row; rows].join(", ")
    )
}

const OFFER_COLUMNS: usize = 16;

/// Inserts a run of offer records, [`OFFERS_PER_INSERT`] per statement (each
/// statement's SQL is prepared once per connection), the rest one by one.
fn insert_offers(
    tx: &rusqlite::Transaction,
    session: i64,
    records: &[Record],
) -> rusqlite::Result<()> {
    static FULL: LazyLock<String> = LazyLock::new(|| offers_insert(OFFERS_PER_INSERT));
    static ONE: LazyLock<String> = LazyLock::new(|| offers_insert(1));
    let offers: Vec<&OfferRecord> = records
        .iter()
        .filter_map(|r| match r {
            Record::Offer(o) => Some(o),
            _ => None,
        })
        .collect();
    // An answer's items share their method and document: masked once.
    let mut shared: Option<(&str, &str, String, String)> = None;
    for chunk in offers.chunks(OFFERS_PER_INSERT) {
        if chunk.len() == OFFERS_PER_INSERT {
            let mut stmt = tx.prepare_cached(&FULL)?;
            for (row, o) in chunk.iter().enumerate() {
                bind_offer(&mut stmt, row, session, o, &mut shared)?;
            }
            stmt.raw_execute()?;
        } else {
            let mut stmt = tx.prepare_cached(&ONE)?;
            for o in chunk {
                bind_offer(&mut stmt, 0, session, o, &mut shared)?;
                stmt.raw_execute()?;
            }
        }
    }
    Ok(())
}

/// Binds offer `o` as row `row` of an insert; `shared` keeps the last method and
/// document masked.
fn bind_offer<'a>(
    stmt: &mut rusqlite::CachedStatement,
    row: usize,
    session: i64,
    o: &'a OfferRecord,
    shared: &mut Option<(&'a str, &'a str, String, String)>,
) -> rusqlite::Result<()> {
    if shared
        .as_ref()
        .is_none_or(|(m, u, ..)| *m != o.method || *u != o.uri)
    {
        *shared = Some((
            o.method.as_str(),
            o.uri.as_str(),
            mask(&o.method).into_owned(),
            mask(&o.uri).into_owned(),
        ));
    }
    let (.., method, uri) = shared.as_ref().expect("set above");
    let at = row * OFFER_COLUMNS;
    stmt.raw_bind_parameter(at + 1, session)?;
    stmt.raw_bind_parameter(at + 2, o.seq as i64)?;
    stmt.raw_bind_parameter(at + 3, o.rank as i64)?;
    stmt.raw_bind_parameter(at + 4, o.request_seq as i64)?;
    stmt.raw_bind_parameter(at + 5, o.t_ns as i64)?;
    stmt.raw_bind_parameter(at + 6, o.latency_ns as i64)?;
    stmt.raw_bind_parameter(at + 7, o.kind.as_str())?;
    stmt.raw_bind_parameter(at + 8, method.as_str())?;
    stmt.raw_bind_parameter(at + 9, uri.as_str())?;
    stmt.raw_bind_parameter(at + 10, o.position.map(|(line, _)| line as i64))?;
    stmt.raw_bind_parameter(at + 11, o.position.map(|(_, col)| col as i64))?;
    stmt.raw_bind_parameter(at + 12, o.label.as_deref().map(mask))?;
    stmt.raw_bind_parameter(at + 13, mask(&o.text))?;
    stmt.raw_bind_parameter(at + 14, mask(&super::offers::edits_json(&o.edits)))?;
    stmt.raw_bind_parameter(at + 15, o.list_size as i64)?;
    stmt.raw_bind_parameter(at + 16, o.incomplete)
}
