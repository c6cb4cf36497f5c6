//! Reading sessions back: summaries, document texts rebuilt from snapshots plus edits,
//! trajectories assembled (commit-derived and imported sessions are stored as one
//! trajectory JSON, and counted from it).

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};

use super::values::stored;
use super::{Database, SessionStatus, StoreError, sqlite};
use crate::core::record::uri::uri_to_path;
use crate::core::trajectory::{
    Change, CommitInfo, Event, EventBody, FileEntry, LineRange, Origin, Read, ReadRole,
    SessionInfo, SessionKind, Signal, Trajectory, apply_byte_edit, recompute_recorded_edits,
};

/// One line of `nextedit sessions list`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionSummary {
    /// Session id.
    pub id: i64,
    /// recorded, commit, imported.
    pub kind: String,
    /// RFC 3339 start.
    pub started_at: String,
    /// RFC 3339 end, if ended.
    pub ended_at: Option<String>,
    /// How it is (incomplete: frames were lost, see `dropped`).
    pub status: SessionStatus,
    /// Workspace root.
    pub workspace: Option<String>,
    /// Git HEAD at start.
    pub git_head: Option<String>,
    /// Server argv.
    pub server_command: Vec<String>,
    /// Position encoding in effect.
    pub position_encoding: Option<String>,
    /// Client name and version.
    pub client: Option<String>,
    /// Server name and version.
    pub server: Option<String>,
    /// Server exit code (or 128 + signal).
    pub exit_code: Option<i64>,
    /// Frames the recorder could not keep.
    pub dropped: i64,
    /// Messages recorded.
    pub messages: i64,
    /// Documents seen.
    pub documents: i64,
    /// Raw content changes (one per didChange content change: a keystroke, a paste).
    pub changes: i64,
    /// The edits a person perceives (changes coalesced, `trajectory::coalesce`); `None`
    /// when the session's texts cannot be rebuilt (a damaged database).
    pub edits: Option<i64>,
    /// Reads recorded.
    pub reads: i64,
    /// Editor signals recorded.
    pub signals: i64,
    /// The commit that contains the session's edits (`nextedit sessions link`).
    pub linked_commit: Option<String>,
}

/// One document of a session.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DocumentSummary {
    /// LSP URI.
    pub uri: String,
    /// Workspace-relative path (or absolute path / URI).
    pub path: String,
    /// LSP language id.
    pub language_id: Option<String>,
    /// Text never stored.
    pub excluded: bool,
    /// Raw content changes recorded.
    pub changes: i64,
}

/// A session's summary; commit-derived and imported sessions keep their trajectory as
/// JSON instead of rows, so their counts come from it.
const SUMMARY_SQL: &str =
    "SELECT s.id, s.kind, s.started_at, s.ended_at, s.status, s.workspace, s.git_head,
        s.server_command, s.position_encoding, s.client, s.server, s.exit_code, s.dropped,
        (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
        CASE WHEN s.trajectory IS NULL
             THEN (SELECT count(*) FROM documents d WHERE d.session_id = s.id)
             ELSE json_array_length(s.trajectory, '$.files') END,
        CASE WHEN s.trajectory IS NULL
             THEN (SELECT count(*) FROM edits e WHERE e.session_id = s.id)
             ELSE (SELECT count(*) FROM json_each(s.trajectory, '$.events')
                    WHERE json_extract(value, '$.type') = 'change') END,
        CASE WHEN s.trajectory IS NULL
             THEN (SELECT count(*) FROM reads r WHERE r.session_id = s.id)
             ELSE (SELECT count(*) FROM json_each(s.trajectory, '$.events')
                    WHERE json_extract(value, '$.type') = 'read') END,
        CASE WHEN s.trajectory IS NULL
             THEN (SELECT count(*) FROM signals g WHERE g.session_id = s.id)
             ELSE (SELECT count(*) FROM json_each(s.trajectory, '$.events')
                    WHERE json_extract(value, '$.type') = 'signal') END,
        s.linked_commit
   FROM sessions s";

fn summary_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionSummary> {
    let command: Option<String> = row.get(7)?;
    Ok(SessionSummary {
        id: row.get(0)?,
        kind: row.get(1)?,
        started_at: row.get(2)?,
        ended_at: row.get(3)?,
        status: stored(row, 4, "sessions", "status")?,
        workspace: row.get(5)?,
        git_head: row.get(6)?,
        server_command: command
            .and_then(|c| serde_json::from_str(&c).ok())
            .unwrap_or_default(),
        position_encoding: row.get(8)?,
        client: row.get(9)?,
        server: row.get(10)?,
        exit_code: row.get(11)?,
        dropped: row.get(12)?,
        messages: row.get(13)?,
        documents: row.get(14)?,
        changes: row.get(15)?,
        edits: None,
        reads: row.get(16)?,
        signals: row.get(17)?,
        linked_commit: row.get(18)?,
    })
}

struct SnapshotRow {
    seq: u64,
    text: Option<String>,
}

struct EditRow {
    seq: u64,
    t_ns: u64,
    uri: String,
    version: i64,
    start_byte: usize,
    end_byte: usize,
    start_line: usize,
    end_line: usize,
    new_end_line: usize,
    before: String,
    after: String,
    origin: String,
}

/// Reading sessions back: summaries, documents, reconstructed texts, trajectories.
pub trait SessionRead {
    /// All sessions, newest first.
    fn sessions(&self) -> Result<Vec<SessionSummary>, StoreError>;

    /// One session's summary, with its perceived edits counted.
    fn session(&self, id: i64) -> Result<SessionSummary, StoreError>;

    /// Documents of a session in the order they were first seen (for commit-derived and
    /// imported sessions, the files of their stored trajectory).
    fn documents(&self, id: i64) -> Result<Vec<DocumentSummary>, StoreError>;

    /// Finds a document by URI, path, or unique path suffix.
    fn find_document(&self, id: i64, name: &str) -> Result<DocumentSummary, StoreError>;

    /// Text of a document after every recorded row up to `upto_seq` (all rows if `None`).
    /// `None` when the document's text was never stored (excluded, or never opened).
    fn document_text(
        &self,
        id: i64,
        uri: &str,
        upto_seq: Option<u64>,
    ) -> Result<Option<String>, StoreError>;

    /// The session as a trajectory (the `schemas/trajectory.schema.json` document).
    fn trajectory(&self, id: i64) -> Result<Trajectory, StoreError>;
}

impl SessionRead for Database {
    fn sessions(&self) -> Result<Vec<SessionSummary>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(&format!("{SUMMARY_SQL} ORDER BY s.id DESC"))
            .map_err(|source| sqlite(&self.path, source))?;
        let mut rows = stmt
            .query_map([], summary_from_row)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|source| sqlite(&self.path, source))?;
        for row in &mut rows {
            row.edits = self.perceived_edits(row.id);
        }
        Ok(rows)
    }

    fn session(&self, id: i64) -> Result<SessionSummary, StoreError> {
        let mut summary = self.session_row(id)?;
        summary.edits = self.perceived_edits(id);
        Ok(summary)
    }

    fn documents(&self, id: i64) -> Result<Vec<DocumentSummary>, StoreError> {
        if let Some(trajectory) = self.stored_trajectory(id)? {
            return Ok(trajectory
                .files
                .iter()
                .map(|f| DocumentSummary {
                    uri: f.uri.clone().unwrap_or_else(|| f.path.clone()),
                    path: f.path.clone(),
                    language_id: f.language.clone(),
                    excluded: f.excluded,
                    changes: trajectory
                        .events
                        .iter()
                        .filter(|e| matches!(&e.body, EventBody::Change(c) if c.file == f.path))
                        .count() as i64,
                })
                .collect());
        }
        self.rows("SELECT d.uri, d.path, d.language_id, d.excluded,
                        (SELECT count(*) FROM edits e WHERE e.session_id = d.session_id AND e.uri = d.uri)
                   FROM documents d WHERE d.session_id = ?1 ORDER BY d.first_seq, d.uri", [id], |row| {
            Ok(DocumentSummary {
                uri: row.get(0)?,
                path: row.get(1)?,
                language_id: row.get(2)?,
                excluded: row.get(3)?,
                changes: row.get(4)?,
            })
        })
    }

    fn find_document(&self, id: i64, name: &str) -> Result<DocumentSummary, StoreError> {
        self.session(id)?;
        let documents = self.documents(id)?;
        if let Some(doc) = documents.iter().find(|d| d.uri == name || d.path == name) {
            return Ok(doc.clone());
        }
        let suffix = format!("/{}", name.trim_start_matches("./"));
        let matches: Vec<&DocumentSummary> = documents
            .iter()
            .filter(|d| d.path.ends_with(&suffix) || d.uri.ends_with(&suffix))
            .collect();
        match matches.as_slice() {
            [one] => Ok((*one).clone()),
            _ => {
                let names: Vec<&str> = documents.iter().map(|d| d.path.as_str()).collect();
                let hint = if matches.len() > 1 {
                    format!(" uniquely; candidates: {}", names.join(", "))
                } else if names.is_empty() {
                    " (it recorded no documents)".to_string()
                } else {
                    format!("; it has: {}", names.join(", "))
                };
                Err(StoreError::NoDocument {
                    session: id,
                    name: name.to_string(),
                    hint,
                })
            }
        }
    }

    fn document_text(
        &self,
        id: i64,
        uri: &str,
        upto_seq: Option<u64>,
    ) -> Result<Option<String>, StoreError> {
        let upto = upto_seq.map_or(i64::MAX, |s| s as i64);
        let snapshot: Option<SnapshotRow> = self
            .conn
            .query_row(
                "SELECT seq, text FROM snapshots
                  WHERE session_id = ?1 AND uri = ?2 AND text IS NOT NULL AND seq <= ?3
                  ORDER BY seq DESC LIMIT 1",
                params![id, uri, upto],
                |row| {
                    Ok(SnapshotRow {
                        seq: row.get::<_, i64>(0)? as u64,
                        text: row.get(1)?,
                    })
                },
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))?;
        let Some(snapshot) = snapshot else {
            return Ok(None);
        };
        let mut text = snapshot.text.unwrap_or_default();
        for edit in self.edit_rows(id, Some(uri), snapshot.seq, upto)? {
            apply_byte_edit(
                &mut text,
                edit.start_byte,
                edit.end_byte,
                &edit.before,
                &edit.after,
            )
            .map_err(|source| StoreError::Inconsistent {
                session: id,
                uri: uri.to_string(),
                seq: edit.seq,
                source,
            })?;
        }
        Ok(Some(text))
    }

    fn trajectory(&self, id: i64) -> Result<Trajectory, StoreError> {
        let summary = self.session_row(id)?;
        if let Some(trajectory) = self.stored_trajectory(id)? {
            return Ok(trajectory);
        }
        let documents = self.documents(id)?;
        let names = FileNames {
            path_of: (documents.iter())
                .map(|d| (d.uri.clone(), d.path.clone()))
                .collect(),
            workspace: summary.workspace.clone(),
        };
        let mut trajectory = Trajectory::new(session_info(id, &summary));
        // Events from every table, merged by seq.
        let (mut events, first_open) = self.snapshot_events(id, &names)?;
        events.extend(self.edit_events(id, &names)?);
        let (reads, read_uris) = self.read_events(id, &names)?;
        events.extend(reads);
        events.extend(self.signal_events(id, &names)?);
        events.sort_by_key(|e| e.seq);
        trajectory.events = events;
        for doc in &documents {
            let base_text = first_open.get(&doc.uri).cloned().flatten();
            let final_text = if doc.excluded {
                None
            } else {
                self.document_text(id, &doc.uri, None)?
            };
            trajectory.files.push(FileEntry {
                uri: Some(doc.uri.clone()),
                language: doc.language_id.clone(),
                final_text,
                excluded: doc.excluded,
                ..FileEntry::new(doc.path.clone(), base_text)
            });
        }
        for uri in read_uris {
            trajectory.files.push(FileEntry {
                uri: Some(uri.clone()),
                ..FileEntry::new(names.name(&uri), None)
            });
        }
        // The edits a person would name, in the order they began (real temporal order).
        recompute_recorded_edits(&mut trajectory);
        Ok(trajectory)
    }
}

impl Database {
    /// How many edits a person perceives in the session (its trajectory's edits).
    fn perceived_edits(&self, id: i64) -> Option<i64> {
        self.trajectory(id).ok().map(|t| t.edits.len() as i64)
    }

    /// One session's row, without the perceived edits (which need the trajectory).
    fn session_row(&self, id: i64) -> Result<SessionSummary, StoreError> {
        self.conn
            .query_row(
                &format!("{SUMMARY_SQL} WHERE s.id = ?1"),
                [id],
                summary_from_row,
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))?
            .ok_or(StoreError::NoSession(id))
    }

    fn edit_rows(
        &self,
        id: i64,
        uri: Option<&str>,
        after_seq: u64,
        upto: i64,
    ) -> Result<Vec<EditRow>, StoreError> {
        self.rows("SELECT seq, t_ns, uri, version, start_byte, end_byte, start_line, end_line, new_end_line,
                        text_before, text_after, origin
                   FROM edits WHERE session_id = ?1 AND (?2 IS NULL OR uri = ?2) AND seq > ?3 AND seq <= ?4
                  ORDER BY seq", params![id, uri, after_seq as i64, upto], |row| {
            Ok(EditRow {
                seq: row.get::<_, i64>(0)? as u64,
                t_ns: row.get::<_, i64>(1)? as u64,
                uri: row.get(2)?,
                version: row.get(3)?,
                start_byte: row.get::<_, i64>(4)? as usize,
                end_byte: row.get::<_, i64>(5)? as usize,
                start_line: row.get::<_, i64>(6)? as usize,
                end_line: row.get::<_, i64>(7)? as usize,
                new_end_line: row.get::<_, i64>(8)? as usize,
                before: row.get(9)?,
                after: row.get(10)?,
                origin: row.get(11)?,
            })
        })
    }

    /// The trajectory a commit-derived or imported session was stored as, if any.
    fn stored_trajectory(&self, id: i64) -> Result<Option<Trajectory>, StoreError> {
        let stored: Option<String> = self
            .conn
            .query_row("SELECT trajectory FROM sessions WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|source| sqlite(&self.path, source))?
            .flatten();
        Ok(stored
            .and_then(|json| serde_json::from_str::<Trajectory>(&json).ok())
            .map(|mut trajectory| {
                trajectory.session.id = id.to_string();
                trajectory
            }))
    }
}

/// How a recorded session's URIs are named in its trajectory: a document's own path,
/// else the path relative to the workspace, else the path or the URI as it is.
struct FileNames {
    /// Each document's path, by URI.
    path_of: HashMap<String, String>,
    /// The session's workspace root.
    workspace: Option<String>,
}

impl FileNames {
    /// The name of `uri`.
    fn name(&self, uri: &str) -> String {
        if let Some(path) = self.path_of.get(uri) {
            return path.clone();
        }
        let Some(path) = uri_to_path(uri) else {
            return uri.to_string();
        };
        match (self.workspace.as_deref())
            .and_then(|w| path.strip_prefix(&format!("{}/", w.trim_end_matches('/'))))
            .and_then(|rel| crate::core::trajectory::RelPath::parse(rel).ok())
        {
            Some(rel) => rel.as_str().to_string(),
            None => path,
        }
    }
}

/// The text each document was first opened with, by URI (`None`: never stored).
type FirstOpens = HashMap<String, Option<String>>;

/// A recorded session's header in its trajectory.
fn session_info(id: i64, summary: &SessionSummary) -> SessionInfo {
    SessionInfo {
        id: id.to_string(),
        kind: SessionKind::parse(&summary.kind).unwrap_or(SessionKind::Recorded),
        workspace: summary.workspace.clone(),
        git_head: summary.git_head.clone(),
        commit: summary.linked_commit.as_deref().map(|sha| CommitInfo {
            // The sha only: the CLI fills the rest from the repository.
            sha: sha.to_string(),
            parent: None,
            message: None,
            project: None,
        }),
        repository_url: None,
        server_command: summary.server_command.clone(),
        position_encoding: summary.position_encoding.clone(),
        started_at: Some(summary.started_at.clone()),
        ended_at: summary.ended_at.clone(),
    }
}

impl Database {
    /// A recorded session's opens, saves and closes as events, with the text each
    /// document was first opened with (by URI).
    fn snapshot_events(
        &self,
        id: i64,
        names: &FileNames,
    ) -> Result<(Vec<Event>, FirstOpens), StoreError> {
        let mut events = Vec::new();
        let mut first_open = FirstOpens::new();
        let rows = self.rows("SELECT seq, t_ns, uri, kind, version, text FROM snapshots WHERE session_id = ?1 ORDER BY seq", [id], |row| {
                Ok((
                    row.get::<_, i64>(0)? as u64,
                    row.get::<_, i64>(1)? as u64,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, i64>(4)?,
                    row.get::<_, Option<String>>(5)?,
                ))
            })?;
        for (seq, t_ns, uri, kind, version, text) in rows {
            let file = names.name(&uri);
            let body = match kind.as_str() {
                "open" => {
                    let text = if first_open.contains_key(&uri) {
                        // Re-opened: include the text only if it differs from the tracked one.
                        let tracked = self.document_text(id, &uri, Some(seq - 1))?;
                        if tracked == text { None } else { text }
                    } else {
                        first_open.insert(uri.clone(), text);
                        None
                    };
                    EventBody::Open {
                        file,
                        version,
                        text,
                    }
                }
                "save" => EventBody::Save { file },
                _ => EventBody::Close { file },
            };
            events.push(Event {
                seq,
                t_ms: t_ns as f64 / 1e6,
                body,
            });
        }
        Ok((events, first_open))
    }

    /// A recorded session's content changes as events.
    fn edit_events(&self, id: i64, names: &FileNames) -> Result<Vec<Event>, StoreError> {
        Ok((self.edit_rows(id, None, 0, i64::MAX)?.into_iter())
            .map(|edit| Event {
                seq: edit.seq,
                t_ms: edit.t_ns as f64 / 1e6,
                body: EventBody::Change(Change {
                    file: names.name(&edit.uri),
                    version: edit.version,
                    start_byte: edit.start_byte,
                    end_byte: edit.end_byte,
                    start_line: edit.start_line,
                    end_line: edit.end_line,
                    new_end_line: edit.new_end_line,
                    before: edit.before,
                    after: edit.after,
                    origin: Origin::parse(&edit.origin).unwrap_or(Origin::User),
                }),
            })
            .collect())
    }

    /// A recorded session's reads as events, with the URIs read that are no document
    /// of the session, in the order first read.
    fn read_events(
        &self,
        id: i64,
        names: &FileNames,
    ) -> Result<(Vec<Event>, Vec<String>), StoreError> {
        let mut events = Vec::new();
        let mut read_uris: Vec<String> = Vec::new();
        let rows = self.rows("SELECT seq, t_ns, uri, via, role, start_line, end_line FROM reads WHERE session_id = ?1 ORDER BY seq", [id], |row| {
                Ok((
                    row.get::<_, i64>(0)? as u64,
                    row.get::<_, i64>(1)? as u64,
                    row.get::<_, String>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    row.get::<_, i64>(5)? as usize,
                    row.get::<_, i64>(6)? as usize,
                ))
            })?;
        for (seq, t_ns, uri, via, role, start, end) in rows {
            if !names.path_of.contains_key(&uri) && !read_uris.contains(&uri) {
                read_uris.push(uri.clone());
            }
            events.push(Event {
                seq,
                t_ms: t_ns as f64 / 1e6,
                body: EventBody::Read(Read {
                    file: names.name(&uri),
                    lines: LineRange::new(start, end),
                    via,
                    role: ReadRole::parse(&role).unwrap_or(ReadRole::Request),
                }),
            });
        }
        Ok((events, read_uris))
    }

    /// A recorded session's editor signals as events.
    fn signal_events(&self, id: i64, names: &FileNames) -> Result<Vec<Event>, StoreError> {
        let rows = self.rows(
            "SELECT seq, t_ns, kind, uri, payload FROM signals WHERE session_id = ?1 ORDER BY seq",
            [id],
            |row| {
                Ok((
                    row.get::<_, i64>(0)? as u64,
                    row.get::<_, i64>(1)? as u64,
                    row.get::<_, String>(2)?,
                    row.get::<_, Option<String>>(3)?,
                    row.get::<_, String>(4)?,
                ))
            },
        )?;
        Ok((rows.into_iter())
            .map(|(seq, t_ns, kind, uri, payload)| Event {
                seq,
                t_ms: t_ns as f64 / 1e6,
                body: EventBody::Signal(Signal {
                    kind: kind.into(),
                    file: uri.as_deref().map(|u| names.name(u)),
                    payload: serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
                }),
            })
            .collect())
    }
}
