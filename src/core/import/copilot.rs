//! GitHub Copilot NES workspace recordings (`*.recording.w.json`) → `recorded`
//! trajectories.
//!
//! The format (the project reference notes, peers.md §1.1): `{"log": [entry…], "nextUserEdit"?}`.
//! Entries are taken in log position order, never by `time` (times are not monotonic;
//! `t_ms` is clamped to be non-decreasing). Offsets are UTF-16 code units of the text
//! before each entry; one `changed` entry's replacements are sorted, non-overlapping
//! and all address that same pre-edit text, so they become `Change` events emitted
//! right to left (each one's byte offsets stay valid while the others are applied).
//! Later `setContent` / `restoreContent` become one `external` change, reported like
//! the recorder reports a full-text `didChange` (the smallest single replacement).
//! `nextUserEdit` becomes the trajectory's last edit(s), listed in `gold.next_edits`.
//! Edits are coalesced by `trajectory::coalesce`, and each import replays its changes
//! against the recording's own UTF-16 result before it is accepted.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};

use crate::core::record::document::{ChangeSpan, ShadowDocument};
use crate::core::record::uri::uri_to_path;
use crate::core::trajectory::{
    Change, CoalesceConfig, Edit, Event, EventBody, FileEntry, LineRange, Origin, Read, ReadRole,
    RelPath, SessionInfo, SessionKind, Signal, SignalKind, Trajectory, apply_byte_edit, coalesce,
};

/// `gold.source` of a recording whose `nextUserEdit` is an edit.
pub const GOLD_SOURCE: &str = "copilot-nes";
/// `gold.source` of a recording whose `nextUserEdit` is `NO_EDIT_EXPECTED` (no next edit).
pub const GOLD_SOURCE_NO_EDIT: &str = "copilot-nes:no-edit-expected";

/// What is wrong with a recording.
#[derive(Debug, thiserror::Error)]
pub enum CopilotError {
    /// The text is not JSON.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The document as a whole has the wrong shape.
    #[error("{0}")]
    Shape(String),
    /// One log entry is malformed or inconsistent with the log before it.
    #[error("log entry {index} ({kind}): {what}")]
    Entry {
        /// 0-based position in `log`.
        index: usize,
        /// The entry's `kind`.
        kind: String,
        /// What is wrong.
        what: LogError,
    },
    /// `nextUserEdit` is malformed or does not fit the final state.
    #[error("nextUserEdit: {0}")]
    NextEdit(String),
    /// Replaying the imported changes does not give the recording's final text.
    #[error("{file}: replaying the imported changes does not give the recording's text: {what}")]
    Replay {
        /// File path.
        file: String,
        /// How it differs.
        what: String,
    },
}

/// What is wrong with one entry of the log (or with `nextUserEdit`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogError {
    /// A field the entry must have is missing or of another type.
    #[error("no {0}")]
    Missing(&'static str),
    /// A field has the wrong shape.
    #[error("{0}")]
    Shape(&'static str),
    /// The entry acts on a document whose content no entry set.
    #[error("{0} whose content was never set")]
    NeverSet(&'static str),
    /// The entry names a document id no `documentEncountered` gave.
    #[error("document {0} was never encountered")]
    UnknownDocument(i64),
    /// `restoreContent` of a content id no `storeContent` stored.
    #[error("content {0} was never stored")]
    NeverStored(String),
    /// A `relativePath` that is no path inside the workspace.
    #[error("relativePath {raw:?}: {source}")]
    Path {
        /// The path as written.
        raw: String,
        /// Why it is refused.
        source: crate::core::trajectory::PathError,
    },
    /// A UTF-16 offset inside a surrogate pair.
    #[error("offset {0} splits a surrogate pair")]
    SplitsSurrogate(usize),
    /// A UTF-16 offset past the end of the text.
    #[error("offset {offset} is past the end of the text ({units} UTF-16 units)")]
    PastEnd {
        /// The offset.
        offset: usize,
        /// The text's length in UTF-16 units.
        units: usize,
    },
    /// A replacement that is not `[start, endExclusive, text]`.
    #[error("replacement {0} is not [start, endExclusive, text]")]
    NotAReplacement(usize),
    /// A replacement ending before it starts.
    #[error("replacement {index} ends ({end}) before it starts ({start})")]
    Backwards {
        /// Its place in the list.
        index: usize,
        /// Its start.
        start: usize,
        /// Its end.
        end: usize,
    },
    /// A replacement before or overlapping the previous one.
    #[error(
        "replacement {index} ({start}..{end}) is not sorted after, or overlaps, {previous_start}..{previous_end}"
    )]
    Overlaps {
        /// Its place in the list.
        index: usize,
        /// Its start.
        start: usize,
        /// Its end.
        end: usize,
        /// The previous replacement's start.
        previous_start: usize,
        /// The previous replacement's end.
        previous_end: usize,
    },
    /// A selection that is not a range within the text.
    #[error(
        "selection {selection} is not [start, endExclusive] within the text ({units} UTF-16 units)"
    )]
    Selection {
        /// The selection as written.
        selection: String,
        /// The text's length in UTF-16 units.
        units: usize,
    },
}

/// An imported recording and what was left out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct CopilotImport {
    /// The `recorded` trajectory (position encoding `utf-16`).
    pub trajectory: Trajectory,
    /// Entries of kinds a trajectory has no place for (`documentEvent`, `event`,
    /// `bookmark`, unknown kinds), counted by kind.
    pub ignored: BTreeMap<String, usize>,
}

/// A document's tracked text: for byte/line coordinates and, independently, as
/// UTF-16 units the recording's own offsets are applied to (the final check).
struct Text {
    shadow: ShadowDocument,
    units: Vec<u16>,
}

#[derive(Default)]
struct Importer {
    /// Document id → path.
    docs: HashMap<i64, String>,
    /// Paths in order of first encounter.
    paths: Vec<String>,
    /// Path → the `relativePath` it stands for, when a leading `..` was mapped.
    originals: HashMap<String, String>,
    /// Text state per path (several ids may name one path).
    texts: HashMap<String, Text>,
    base: HashMap<String, String>,
    /// `storeContent` snapshots by `contentId` (as JSON text).
    stored: HashMap<String, String>,
    events: Vec<Event>,
    t0: Option<f64>,
    t: f64,
    root_uri: Option<String>,
    git_head: Option<String>,
    ignored: BTreeMap<String, usize>,
}

/// Imports one recording; `name` becomes the session id (the store replaces it).
pub fn import_recording(text: &str, name: &str) -> Result<CopilotImport, CopilotError> {
    let root: Value = serde_json::from_str(text)?;
    let log = root
        .get("log")
        .and_then(Value::as_array)
        .ok_or_else(|| CopilotError::Shape("no \"log\" array".into()))?;
    let mut im = Importer::default();
    for (index, entry) in log.iter().enumerate() {
        let kind = entry
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        im.entry(entry, &kind).map_err(|what| CopilotError::Entry {
            index,
            kind: if kind.is_empty() {
                "no kind".into()
            } else {
                kind.clone()
            },
            what,
        })?;
    }
    im.check_replay()?;

    let config = CoalesceConfig::default();
    let log_edits = coalesce(&im.events, &im.base, config);
    let mut trajectory = Trajectory::new(session(name, &im)?);
    let mut edits = log_edits.clone();
    if let Some(next) = root.get("nextUserEdit").filter(|v| !v.is_null()) {
        match next_user_edit(next, &im, config)? {
            None => trajectory.gold.source = Some(GOLD_SOURCE_NO_EDIT.into()),
            Some(all) => {
                if all[..log_edits.len()] != log_edits[..] {
                    return Err(CopilotError::NextEdit(
                        "appending it changed the log's own edits".into(),
                    ));
                }
                edits = all;
                trajectory.gold.next_edits = edits[log_edits.len()..]
                    .iter()
                    .map(|e| e.id.clone())
                    .collect();
                trajectory.gold.source = Some(GOLD_SOURCE.into());
            }
        }
    }
    if trajectory.gold.source.is_some() {
        trajectory.gold.instance_id = Some(name.to_owned());
    }
    trajectory.order.natural = edits.iter().map(|e| e.id.clone()).collect();
    trajectory.order.source = Some("recorded".into());
    trajectory.edits = edits;
    for path in &im.paths {
        let mut file = FileEntry::new(path.clone(), im.base.get(path).cloned());
        file.final_text = im.texts.get(path).map(|t| t.shadow.text());
        file.uri = im.root_uri.as_ref().map(|_| im.uri(path));
        trajectory.files.push(file);
    }
    trajectory.events = im.events;
    Ok(CopilotImport {
        trajectory,
        ignored: im.ignored,
    })
}

fn session(name: &str, im: &Importer) -> Result<SessionInfo, CopilotError> {
    let mut info = SessionInfo::new(name, SessionKind::Recorded);
    info.position_encoding = Some("utf-16".into());
    info.workspace = im
        .root_uri
        .as_ref()
        .map(|u| uri_to_path(u).unwrap_or_else(|| u.clone()));
    info.git_head = im.git_head.clone();
    if let Some(t0) = im.t0.filter(|t| *t >= 0.0) {
        // RFC 3339 has four-digit years: a time past 9999-12-31 cannot be written
        // (and adding it to the epoch could overflow), so the recording is refused.
        const MAX_MS: f64 = 253_402_300_799_999.0;
        if t0 + im.t > MAX_MS {
            return Err(CopilotError::Shape(format!(
                "time {} ms is past the year 9999",
                t0 + im.t
            )));
        }
        let at = |ms: f64| {
            let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
            humantime::format_rfc3339_millis(time).to_string()
        };
        info.started_at = Some(at(t0));
        info.ended_at = Some(at(t0 + im.t));
    }
    Ok(info)
}

/// An integer field (JSON numbers with an integral value).
fn int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
}

/// The segment a leading `..` of a `relativePath` becomes: files beside the repository
/// (another root of the workspace) are kept, inside the trajectory's root.
pub const PARENT_SEGMENT: &str = "_up_";

/// `\` separators become `/`, `.` segments go, `a/..` collapses, each leading `..`
/// becomes [`PARENT_SEGMENT`]; the result is a [`RelPath`]. An absolute path (or a
/// drive, a NUL) is an error, and the recording is skipped: replay writes every file
/// under its scratch root. Also returns the collapsed path with its leading `..`
/// kept, which the file's URI is made from.
pub fn normalize_path(raw: &str) -> Result<(String, String), LogError> {
    let unix = raw.replace('\\', "/");
    let refused = |source| LogError::Path {
        raw: raw.to_string(),
        source,
    };
    let mut parts: Vec<&str> = Vec::new();
    if !unix.starts_with('/') {
        for seg in unix.split('/') {
            match seg {
                "" | "." => {}
                ".." if parts.last().is_some_and(|p| *p != "..") => {
                    parts.pop();
                }
                _ => parts.push(seg),
            }
        }
    }
    let original = parts.join("/");
    let mapped: Vec<&str> = parts
        .iter()
        .map(|p| if *p == ".." { PARENT_SEGMENT } else { p })
        .collect();
    // `unix` itself when absolute, so the error says so.
    let checked = if unix.starts_with('/') {
        unix.clone()
    } else {
        mapped.join("/")
    };
    let rel = RelPath::parse(&checked).map_err(refused)?;
    Ok((rel.as_str().to_owned(), original))
}

/// Byte offset of a UTF-16 offset into `text`.
fn utf16_to_byte(text: &str, offset: usize) -> Result<usize, LogError> {
    let mut units = 0usize;
    for (byte, c) in text.char_indices() {
        if units == offset {
            return Ok(byte);
        }
        units += c.len_utf16();
        if units > offset {
            return Err(LogError::SplitsSurrogate(offset));
        }
    }
    if units == offset {
        Ok(text.len())
    } else {
        Err(LogError::PastEnd { offset, units })
    }
}

/// Parses `[[start, endExclusive, text], …]`, checking order and overlap.
fn replacements(v: &Value) -> Result<Vec<(usize, usize, String)>, LogError> {
    let list = v
        .as_array()
        .ok_or(LogError::Shape("\"edit\" is not a list of replacements"))?;
    let mut out: Vec<(usize, usize, String)> = Vec::with_capacity(list.len());
    for (i, r) in list.iter().enumerate() {
        let parts = r.as_array().filter(|p| p.len() == 3);
        let parsed = parts.and_then(|p| {
            let s = usize::try_from(int(&p[0])?).ok()?;
            let e = usize::try_from(int(&p[1])?).ok()?;
            Some((s, e, p[2].as_str()?.to_owned()))
        });
        let Some((s, e, text)) = parsed else {
            return Err(LogError::NotAReplacement(i));
        };
        if e < s {
            return Err(LogError::Backwards {
                index: i,
                start: s,
                end: e,
            });
        }
        if let Some(prev) = out.last()
            && s < prev.1
        {
            return Err(LogError::Overlaps {
                index: i,
                start: s,
                end: e,
                previous_start: prev.0,
                previous_end: prev.1,
            });
        }
        out.push((s, e, text));
    }
    Ok(out)
}

/// Converts replacements in UTF-16 units of `text` to byte offsets of `text`.
fn to_bytes(
    text: &str,
    reps: &[(usize, usize, String)],
) -> Result<Vec<(usize, usize, String)>, LogError> {
    reps.iter()
        .map(|(s, e, t)| {
            Ok((
                utf16_to_byte(text, *s)?,
                utf16_to_byte(text, *e)?,
                t.clone(),
            ))
        })
        .collect()
}

fn change(file: &str, version: i64, span: ChangeSpan, origin: Origin) -> Change {
    Change {
        file: file.to_owned(),
        version,
        start_byte: span.start_byte,
        end_byte: span.end_byte,
        start_line: span.start_line,
        end_line: span.end_line,
        new_end_line: span.new_end_line,
        before: span.before,
        after: span.after,
        origin,
    }
}

/// LSP position (line, UTF-16 character) of a UTF-16 offset; `\n`, `\r\n` and `\r`
/// end lines, as in the recorder's documents.
fn position(units: &[u16], offset: usize) -> Value {
    let (mut line, mut start) = (0usize, 0usize);
    let mut i = 0;
    while i < offset {
        match units[i] {
            0x0A => {
                line += 1;
                start = i + 1;
            }
            0x0D if units.get(i + 1) != Some(&0x0A) => {
                line += 1;
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    json!({"line": line, "character": offset - start})
}

impl Importer {
    fn path_of(&self, entry: &Value) -> Result<String, LogError> {
        let id = int(&entry["id"]).ok_or(LogError::Missing("integer \"id\""))?;
        self.docs
            .get(&id)
            .cloned()
            .ok_or(LogError::UnknownDocument(id))
    }

    fn uri(&self, path: &str) -> String {
        match &self.root_uri {
            Some(root) => {
                let path = self.originals.get(path).map_or(path, String::as_str);
                format!("{}/{path}", root.trim_end_matches('/'))
            }
            None => path.to_owned(),
        }
    }

    fn push(&mut self, body: EventBody) {
        let seq = self.events.len() as u64;
        self.events.push(Event {
            seq,
            t_ms: self.t,
            body,
        });
    }

    /// A `changed` entry: its replacements (UTF-16 offsets of the text before) as change events, last first.
    fn changed(&mut self, entry: &Value) -> Result<(), LogError> {
        let path = self.path_of(entry)?;
        let reps = replacements(&entry["edit"])?;
        let text = self
            .texts
            .get_mut(&path)
            .ok_or(LogError::NeverSet("a change to a document"))?;
        let version = int(&entry["v"]).unwrap_or(text.shadow.version + 1);
        let bytes = to_bytes(&text.shadow.text(), &reps)?;
        let mut changes = Vec::with_capacity(bytes.len());
        for (s, e, t) in bytes.iter().rev() {
            let span = text.shadow.replace(*s, *e, t);
            changes.push(change(&path, version, span, Origin::User));
        }
        text.shadow.version = version;
        for (s, e, t) in reps.iter().rev() {
            text.units.splice(*s..*e, t.encode_utf16());
        }
        for c in changes {
            self.push(EventBody::Change(c));
        }
        Ok(())
    }

    /// A `selectionChanged` entry: the selections as a `selection` signal in LSP positions.
    fn selection_changed(&mut self, entry: &Value) -> Result<(), LogError> {
        let file = self.path_of(entry)?;
        let units = &self
            .texts
            .get(&file)
            .ok_or(LogError::NeverSet("a selection in a document"))?
            .units;
        let list = entry["selection"]
            .as_array()
            .ok_or(LogError::Shape("\"selection\" is not a list"))?;
        let mut selections = Vec::with_capacity(list.len());
        for r in list {
            let pair = r.as_array().filter(|p| p.len() == 2);
            let range = pair.and_then(|p| {
                Some((
                    usize::try_from(int(&p[0])?).ok()?,
                    usize::try_from(int(&p[1])?).ok()?,
                ))
            });
            let Some((s, e)) = range.filter(|(s, e)| s <= e && *e <= units.len()) else {
                return Err(LogError::Selection {
                    selection: r.to_string(),
                    units: units.len(),
                });
            };
            selections.push(json!({"start": position(units, s), "end": position(units, e)}));
        }
        let payload = json!({"textDocument": {"uri": self.uri(&file)}, "selections": selections});
        self.push(EventBody::Signal(Signal {
            kind: SignalKind::Selection,
            file: Some(file),
            payload,
        }));
        Ok(())
    }

    /// A `documentEncountered` entry: the document's id and (normalized) path.
    fn encountered(&mut self, entry: &Value) -> Result<(), LogError> {
        let id = int(&entry["id"]).ok_or(LogError::Missing("integer \"id\""))?;
        let raw = entry["relativePath"]
            .as_str()
            .ok_or(LogError::Missing("\"relativePath\" string"))?;
        let (path, original) = normalize_path(raw)?;
        if original != path {
            self.originals.insert(path.clone(), original);
        }
        if !self.paths.contains(&path) {
            self.paths.push(path.clone());
        }
        self.docs.insert(id, path);
        Ok(())
    }

    fn entry(&mut self, entry: &Value, kind: &str) -> Result<(), LogError> {
        if let Some(time) = entry.get("time").and_then(Value::as_f64) {
            let t0 = *self.t0.get_or_insert(time);
            // Log order is the truth; a time going backwards keeps the previous one.
            self.t = self.t.max(time - t0);
        }
        match kind {
            "header" => {
                self.root_uri = entry["repoRootUri"].as_str().map(str::to_owned);
            }
            "meta" => {
                let data = &entry["data"];
                if data["kind"].as_str() == Some("log-origin") {
                    self.root_uri = data["repoRootUri"].as_str().map(str::to_owned);
                }
            }
            "applicationStart" => {
                self.git_head = entry["commitHash"].as_str().map(str::to_owned);
            }
            "documentEncountered" => self.encountered(entry)?,
            "setContent" => {
                let path = self.path_of(entry)?;
                let content = entry["content"]
                    .as_str()
                    .ok_or(LogError::Missing("\"content\" string"))?;
                let version = int(&entry["v"]).unwrap_or(0);
                self.set_content(&path, content, version);
            }
            "storeContent" => {
                let path = self.path_of(entry)?;
                let id = entry
                    .get("contentId")
                    .ok_or(LogError::Missing("\"contentId\""))?;
                let text = self
                    .texts
                    .get(&path)
                    .ok_or(LogError::NeverSet("storing a document"))?
                    .shadow
                    .text();
                self.stored.insert(id.to_string(), text);
            }
            "restoreContent" => {
                let path = self.path_of(entry)?;
                let id = entry
                    .get("contentId")
                    .ok_or(LogError::Missing("\"contentId\""))?;
                let content = self
                    .stored
                    .get(&id.to_string())
                    .cloned()
                    .ok_or_else(|| LogError::NeverStored(id.to_string()))?;
                let version = int(&entry["v"]).unwrap_or(0);
                self.set_content(&path, &content, version);
            }
            "changed" => self.changed(entry)?,
            "opened" => {
                let file = self.path_of(entry)?;
                let (version, lines) = self
                    .texts
                    .get(&file)
                    .map_or((0, 0), |t| (t.shadow.version, t.shadow.len_lines()));
                self.push(EventBody::Open {
                    file: file.clone(),
                    version,
                    text: None,
                });
                // As the proxy records an open: the whole document was read.
                self.push(EventBody::Read(Read {
                    file,
                    lines: LineRange::new(0, lines),
                    via: "open".into(),
                    role: ReadRole::Open,
                }));
            }
            "closed" => {
                let file = self.path_of(entry)?;
                self.push(EventBody::Close { file });
            }
            "focused" => {
                let file = self.path_of(entry)?;
                let payload = json!({"textDocument": {"uri": self.uri(&file)}, "focused": true});
                self.push(EventBody::Signal(Signal {
                    kind: SignalKind::Focus,
                    file: Some(file),
                    payload,
                }));
            }
            "selectionChanged" => self.selection_changed(entry)?,
            other => {
                let name = if other.is_empty() { "(no kind)" } else { other };
                *self.ignored.entry(name.to_owned()).or_default() += 1;
            }
        }
        Ok(())
    }

    fn set_content(&mut self, path: &str, content: &str, version: i64) {
        match self.texts.get_mut(path) {
            None => {
                self.base.insert(path.to_owned(), content.to_owned());
                self.texts.insert(
                    path.to_owned(),
                    Text {
                        shadow: ShadowDocument::new(content, version),
                        units: content.encode_utf16().collect(),
                    },
                );
            }
            Some(text) => {
                let span = text.shadow.apply_full_change(content);
                text.shadow.version = version;
                text.units = content.encode_utf16().collect();
                if let Some(span) = span {
                    let c = change(path, version, span, Origin::External);
                    self.push(EventBody::Change(c));
                }
            }
        }
    }

    /// Replays the emitted change events from the base texts and compares with the
    /// text the recording's UTF-16 offsets produced.
    fn check_replay(&self) -> Result<(), CopilotError> {
        let mut replayed = self.base.clone();
        for event in &self.events {
            let EventBody::Change(c) = &event.body else {
                continue;
            };
            let text = replayed
                .get_mut(&c.file)
                .ok_or_else(|| CopilotError::Replay {
                    file: c.file.clone(),
                    what: "a change before the base text".into(),
                })?;
            apply_byte_edit(text, c.start_byte, c.end_byte, &c.before, &c.after).map_err(|e| {
                CopilotError::Replay {
                    file: c.file.clone(),
                    what: format!("change {}: {e}", event.seq),
                }
            })?;
        }
        for (path, text) in &self.texts {
            let expected = String::from_utf16(&text.units).map_err(|_| CopilotError::Replay {
                file: path.clone(),
                what: "the recording's text is not valid UTF-16".into(),
            })?;
            if replayed.get(path) != Some(&expected) || text.shadow.text() != expected {
                return Err(CopilotError::Replay {
                    file: path.clone(),
                    what: "final texts differ".into(),
                });
            }
        }
        Ok(())
    }
}

/// The document `nextUserEdit` names: its path, or else the one document whose path
/// ends the given one at a `/` (fixtures name it relative to the fixture file, e.g.
/// `../../../../Users/u/proj/src/a.ts` for `src/a.ts`).
fn document_for(path: &str, im: &Importer) -> Option<String> {
    if im.texts.contains_key(path) {
        return Some(path.to_owned());
    }
    let mut found = im.texts.keys().filter(|p| path.ends_with(&format!("/{p}")));
    let first = found.next()?;
    found.next().is_none().then(|| first.clone())
}

/// The edits of the log followed by `nextUserEdit`'s, or `None` for NO_EDIT_EXPECTED.
fn next_user_edit(
    next: &Value,
    im: &Importer,
    config: CoalesceConfig,
) -> Result<Option<Vec<Edit>>, CopilotError> {
    let err = |what: String| CopilotError::NextEdit(what);
    let edit = &next["edit"];
    if edit["__marker__"].as_str() == Some("NO_EDIT_EXPECTED") {
        return Ok(None);
    }
    let raw = next["relativePath"]
        .as_str()
        .ok_or_else(|| err("no \"relativePath\" string".into()))?;
    let path = document_for(&normalize_path(raw).map_err(|e| err(e.to_string()))?.0, im)
        .ok_or_else(|| err(format!("{raw:?} is not a document of the log with content")))?;
    let text = &im.texts[&path];
    let reps = replacements(edit).map_err(|e| err(e.to_string()))?;
    if reps.is_empty() {
        return Ok(None);
    }
    let bytes = to_bytes(&text.shadow.text(), &reps).map_err(|e| err(e.to_string()))?;
    // Left to right in the text of its own moment, like recorded edits.
    let mut shadow = text.shadow.clone();
    let version = shadow.version + 1;
    let t = im.t + config.pause_ms + 1.0;
    let mut events = im.events.clone();
    let first = events.len() as u64;
    let mut shift: isize = 0;
    for (s, e, after) in &bytes {
        let (s, e) = (
            (*s as isize + shift) as usize,
            (*e as isize + shift) as usize,
        );
        let span = shadow.replace(s, e, after);
        shift += after.len() as isize - (e - s) as isize;
        events.push(Event {
            seq: events.len() as u64,
            t_ms: t,
            body: EventBody::Change(change(&path, version, span, Origin::User)),
        });
    }
    let mut edits = coalesce(&events, &im.base, config);
    for edit in edits
        .iter_mut()
        .filter(|e| e.events.iter().any(|s| *s >= first))
    {
        // Its change events are not part of the trajectory: the edit is the answer.
        edit.events.clear();
        edit.annotations.next_user_edit = Some(true);
        edit.annotations.original_op_idx =
            next.get("originalOpIdx").filter(|v| !v.is_null()).cloned();
    }
    Ok(Some(edits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_offsets_map_to_bytes() {
        let text = "a😀b中";
        assert_eq!(utf16_to_byte(text, 0), Ok(0));
        assert_eq!(utf16_to_byte(text, 1), Ok(1));
        assert_eq!(utf16_to_byte(text, 3), Ok(5));
        assert_eq!(utf16_to_byte(text, 4), Ok(6));
        assert_eq!(utf16_to_byte(text, 5), Ok(9));
        assert_eq!(
            utf16_to_byte(text, 2).map_err(|e| e.to_string()),
            Err("offset 2 splits a surrogate pair".into())
        );
        assert_eq!(
            utf16_to_byte(text, 6).map_err(|e| e.to_string()),
            Err("offset 6 is past the end of the text (5 UTF-16 units)".into())
        );
    }

    #[test]
    fn paths_are_normalised() {
        let ok = |raw: &str| normalize_path(raw).unwrap();
        assert_eq!(
            ok("src\\a\\b.ts"),
            ("src/a/b.ts".into(), "src/a/b.ts".into())
        );
        assert_eq!(
            ok("x/../common/./x.ts"),
            ("common/x.ts".into(), "common/x.ts".into())
        );
        assert_eq!(
            ok("../common/./x.ts"),
            ("_up_/common/x.ts".into(), "../common/x.ts".into())
        );
        assert_eq!(
            ok("a\\..\\..\\b.ts"),
            ("_up_/b.ts".into(), "../b.ts".into())
        );
        assert_eq!(
            normalize_path("/r/a/../b.ts").unwrap_err().to_string(),
            r#"relativePath "/r/a/../b.ts": path "/r/a/../b.ts" is absolute; only paths relative to the workspace are allowed"#
        );
        assert_eq!(
            normalize_path("C:\\x.ts").unwrap_err().to_string(),
            r#"relativePath "C:\\x.ts": path "C:/x.ts" has a backslash or a drive prefix; use `/`-separated relative paths"#
        );
        assert!(normalize_path("./.").is_err());
    }

    fn log(entries: Value) -> String {
        json!({ "log": entries }).to_string()
    }

    fn error(entries: Value) -> String {
        import_recording(&log(entries), "r")
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn inconsistent_logs_name_the_entry() {
        let enc = json!({"kind": "documentEncountered", "id": 1, "time": 0, "relativePath": "a"});
        assert_eq!(
            error(json!([enc, {"kind": "changed", "id": 1, "time": 1, "edit": [[0, 0, "x"]]}])),
            "log entry 1 (changed): a change to a document whose content was never set"
        );
        assert_eq!(
            error(
                json!([enc, {"kind": "setContent", "id": 1, "time": 0, "content": "ab"},
                         {"kind": "restoreContent", "id": 1, "time": 1, "contentId": 3}])
            ),
            "log entry 2 (restoreContent): content 3 was never stored"
        );
        assert_eq!(
            error(json!([{"kind": "opened", "id": 4, "time": 0}])),
            "log entry 0 (opened): document 4 was never encountered"
        );
        assert_eq!(
            error(
                json!([enc, {"kind": "setContent", "id": 1, "time": 0, "content": "ab"},
                         {"kind": "changed", "id": 1, "time": 1, "edit": [[1, 3, "x"]]}])
            ),
            "log entry 2 (changed): offset 3 is past the end of the text (2 UTF-16 units)"
        );
        assert_eq!(
            import_recording("{\"log\": 3}", "r")
                .unwrap_err()
                .to_string(),
            "no \"log\" array"
        );
    }

    #[test]
    fn a_second_id_for_a_path_shares_its_text() {
        let text = log(json!([
            {"kind": "documentEncountered", "id": 1, "time": 10, "relativePath": "a\\b.txt"},
            {"kind": "setContent", "id": 1, "time": 10, "content": "one\n", "v": 1},
            {"kind": "documentEncountered", "id": 2, "time": 11, "relativePath": "a/b.txt"},
            {"kind": "setContent", "id": 2, "time": 12, "content": "one\ntwo\n", "v": 1},
        ]));
        let t = import_recording(&text, "r").unwrap().trajectory;
        assert_eq!(t.files.len(), 1);
        assert_eq!(t.files[0].base_text.as_deref(), Some("one\n"));
        assert_eq!(t.files[0].final_text.as_deref(), Some("one\ntwo\n"));
        let EventBody::Change(c) = &t.events[0].body else {
            panic!("{:?}", t.events)
        };
        assert_eq!(
            (c.start_byte, c.end_byte, c.after.as_str()),
            (4, 4, "two\n")
        );
        assert_eq!((c.origin, t.events[0].t_ms), (Origin::External, 2.0));
        // No nextUserEdit: no gold at all.
        assert!(t.gold.is_empty());
    }

    #[test]
    fn next_user_edit_paths_relative_to_a_fixture_resolve_by_suffix() {
        let entries = json!([
            {"kind": "documentEncountered", "id": 0, "time": 1, "relativePath": "dir\\p.ts"},
            {"kind": "setContent", "id": 0, "time": 1, "content": "let a = 1;\n", "v": 1},
        ]);
        let with_next = |path: &str| {
            json!({"log": entries, "nextUserEdit": {"relativePath": path, "edit": [[4, 5, "b"]]}})
                .to_string()
        };
        let t = import_recording(&with_next("../../../Users/u/proj/dir/p.ts"), "r")
            .unwrap()
            .trajectory;
        assert_eq!(t.gold.next_edits, ["e0"]);
        assert_eq!(
            (t.edits[0].file.as_str(), t.edits[0].after_text.as_str()),
            ("dir/p.ts", "b")
        );
        // A suffix must end at a `/`.
        assert_eq!(
            import_recording(&with_next("xdir/p.ts"), "r")
                .unwrap_err()
                .to_string(),
            "nextUserEdit: \"xdir/p.ts\" is not a document of the log with content"
        );
    }

    #[test]
    fn overlapping_replacements_are_refused() {
        let v = json!([[0, 4, "x"], [3, 5, "y"]]);
        assert_eq!(
            replacements(&v).map_err(|e| e.to_string()),
            Err("replacement 1 (3..5) is not sorted after, or overlaps, 0..4".into())
        );
    }
}
