//! A Zed eval example as a trajectory, the session `nextedit import zed-examples`
//! stores: its files at the revision, each hunk of the edit history one sequential
//! edit (all but the last listed in `gold.applied`, so replay applies them silently,
//! and the last the replay's initial edit), and the expected patch's first alternative
//! as the one edit replay asks for, the others in `gold.alternatives`. An alternative
//! with several hunks is one edit from its first changed line to its last. The cursor
//! is a `cursor` signal after the history.
//!
//! Pure: the files' texts at the revision come from the caller.

use std::collections::BTreeMap;

use serde_json::json;

use super::zed_example::ZedExample;
use super::zed_patch::{FilePatch, PatchError, locate, parse_diff, trimmed};
use crate::core::trajectory::{
    Alternative, Edit, Event, EventBody, FileEntry, Origin, RelPath, SessionInfo, SessionKind,
    Signal, SignalKind, Trajectory,
};

/// `gold.source` of an imported example.
pub const GOLD_SOURCE: &str = "zed-example";

/// Why an example cannot become a trajectory.
#[derive(Debug, thiserror::Error)]
pub enum ZedSessionError {
    /// A diff of the example is wrong or does not apply.
    #[error("{section}: {source}")]
    Patch {
        /// `edit history` or `expected patch N`.
        section: String,
        /// Why.
        source: PatchError,
    },
    /// A file the example names is not in the revision.
    #[error("{path} is not a file of revision {revision}")]
    NoFile {
        /// The path.
        path: String,
        /// The revision.
        revision: String,
    },
    /// A path leaves the repository.
    #[error("path {path}: {reason}")]
    BadPath {
        /// The path.
        path: String,
        /// Why.
        reason: String,
    },
    /// The example has no edit history: replay starts from an edit already made.
    #[error("no edit history: replay starts from the last edit of the history")]
    NoHistory,
    /// An expected alternative changes nothing, or more than one file, or another
    /// file than the first alternative.
    #[error("expected patch {0}: {1}")]
    Alternative(usize, &'static str),
}

/// The trajectory of `example`, named `name`; `text_at(path)` is the file's text at
/// the revision (`None` when the revision has no such file).
pub fn example_trajectory(
    example: &ZedExample,
    name: &str,
    text_at: &dyn Fn(&str) -> Option<String>,
) -> Result<Trajectory, ZedSessionError> {
    let mut texts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let file = |path: &str, texts: &mut BTreeMap<String, Vec<String>>| {
        let path = RelPath::parse(path)
            .map_err(|e| ZedSessionError::BadPath {
                path: path.to_string(),
                reason: e.to_string(),
            })?
            .as_str()
            .to_string();
        if !texts.contains_key(&path) {
            let text = text_at(&path).ok_or_else(|| ZedSessionError::NoFile {
                path: path.clone(),
                revision: example.revision.clone(),
            })?;
            texts.insert(path.clone(), split(&text));
        }
        Ok::<String, ZedSessionError>(path)
    };
    let patch = |section: String| move |source| ZedSessionError::Patch { section, source };
    let history = parse_diff(&example.edit_history).map_err(patch("edit history".into()))?;
    let mut trajectory = Trajectory::new(session_info(example, name));
    let mut bases = BTreeMap::new();
    for FilePatch { path, hunks } in &history {
        let path = file(path, &mut texts)?;
        bases
            .entry(path.clone())
            .or_insert_with(|| texts[&path].concat());
        for hunk in hunks {
            let lines = texts.get_mut(&path).expect("read above");
            let at = locate(lines, &path, hunk).map_err(patch("edit history".into()))?;
            let (start, old, new) = trimmed(hunk, at);
            let id = format!("e{}", trajectory.edits.len());
            trajectory
                .edits
                .push(sequential_edit(&id, &path, lines, start, &old, &new));
            lines.splice(start..start + old.len(), new);
        }
    }
    let Some(last) = trajectory.edits.last() else {
        return Err(ZedSessionError::NoHistory);
    };
    let initial = last.id.clone();
    let alternatives = (example.expected.iter().enumerate())
        .map(|(k, expected)| expected_change(k + 1, &expected.diff, &mut texts, &mut bases, &file))
        .collect::<Result<Vec<_>, _>>()?;
    let gold_file = alternatives[0].0.clone();
    if alternatives.iter().any(|a| a.0 != gold_file) {
        return Err(ZedSessionError::Alternative(
            1,
            "the alternatives change different files",
        ));
    }
    let gold = format!("e{}", trajectory.edits.len());
    let (_, start, old, new) = &alternatives[0];
    let edit = sequential_edit(&gold, &gold_file, &texts[&gold_file], *start, old, new);
    trajectory.edits.push(edit);
    trajectory.gold.alternatives = alternatives[1..]
        .iter()
        .map(|(_, start, old, new)| Alternative {
            of: gold.clone(),
            start_line: *start,
            before_text: old.concat(),
            after_text: new.concat(),
        })
        .collect();
    let ids: Vec<String> = trajectory.edits.iter().map(|e| e.id.clone()).collect();
    trajectory.gold.applied = ids[..ids.len() - 2].to_vec();
    trajectory.gold.next_edits = vec![gold];
    trajectory.gold.source = Some(GOLD_SOURCE.to_string());
    trajectory.gold.instance_id = Some(name.to_string());
    trajectory.order.natural = ids;
    trajectory.order.initial = vec![initial];
    trajectory.files = bases
        .into_iter()
        .map(|(path, text)| FileEntry::new(path, Some(text)))
        .collect();
    trajectory.events = cursor_event(example, &texts);
    Ok(trajectory)
}

/// One alternative of the expected patch (`k`-th, 1-based) as one change of one file
/// in the text after the history, its hunks merged from the first changed line to the
/// last; `file` checks a path and reads its text into `texts`.
fn expected_change(
    k: usize,
    diff: &str,
    texts: &mut BTreeMap<String, Vec<String>>,
    bases: &mut BTreeMap<String, String>,
    file: &FileReader<'_>,
) -> Result<Change, ZedSessionError> {
    let section = format!("expected patch {k}");
    let patch = |source| ZedSessionError::Patch {
        section: section.clone(),
        source,
    };
    let files = parse_diff(diff).map_err(&patch)?;
    let [FilePatch { path, hunks }] = &files[..] else {
        return Err(ZedSessionError::Alternative(
            k,
            "it changes no file or several",
        ));
    };
    let path = file(path, texts)?;
    bases
        .entry(path.clone())
        .or_insert_with(|| texts[&path].concat());
    let lines = &texts[&path];
    let mut span: Option<(usize, usize)> = None;
    let mut placed = Vec::new();
    for hunk in hunks {
        let at = locate(lines, &path, hunk).map_err(&patch)?;
        let (start, old, new) = trimmed(hunk, at);
        if old == new {
            continue;
        }
        let end = start + old.len();
        span = Some(span.map_or((start, end), |(s, e)| (s.min(start), e.max(end))));
        placed.push((start, end, new));
    }
    let Some((start, end)) = span else {
        return Err(ZedSessionError::Alternative(k, "it changes nothing"));
    };
    placed.sort_by_key(|p| p.0);
    let mut new = Vec::new();
    let mut at = start;
    for (s, e, lines_new) in placed {
        new.extend_from_slice(&lines[at..s]);
        new.extend(lines_new);
        at = e;
    }
    new.extend_from_slice(&lines[at..end]);
    Ok((path, start, lines[start..end].to_vec(), new))
}

/// Checks a path and reads the file's text into the texts (once), giving the path as
/// the trajectory names it.
type FileReader<'a> =
    dyn Fn(&str, &mut BTreeMap<String, Vec<String>>) -> Result<String, ZedSessionError> + 'a;

/// A change of one file: (file, first line, replaced lines, new lines).
type Change = (String, usize, Vec<String>, Vec<String>);

/// The session header: an imported session named after the example, its revision
/// as its git HEAD, its repository URL.
fn session_info(example: &ZedExample, name: &str) -> SessionInfo {
    let mut session = SessionInfo::new(name, SessionKind::Imported);
    session.git_head = Some(example.revision.clone());
    session.repository_url = Some(example.repository_url.clone());
    session
}

/// The cursor as a `cursor` signal: its line found by the excerpt in the text after
/// the history (the excerpt's first place; its start when it is not there).
fn cursor_event(example: &ZedExample, texts: &BTreeMap<String, Vec<String>>) -> Vec<Event> {
    let cursor = &example.cursor;
    let Some(lines) = texts.get(&cursor.path) else {
        return Vec::new();
    };
    let excerpt = split(&cursor.excerpt);
    let first = (0..lines.len().saturating_sub(excerpt.len()) + 1)
        .find(|&at| lines[at..].starts_with(&excerpt))
        .unwrap_or(0);
    vec![Event {
        seq: 0,
        t_ms: 0.0,
        body: EventBody::Signal(Signal {
            kind: SignalKind::Cursor,
            file: Some(cursor.path.clone()),
            payload: json!({"line": first + cursor.line, "character": cursor.column}),
        }),
    }]
}

/// A whole-line sequential edit replacing `old` at line `start` of `lines` by `new`.
fn sequential_edit(
    id: &str,
    path: &str,
    lines: &[String],
    start: usize,
    old: &[String],
    new: &[String],
) -> Edit {
    let mut edit = Edit::lines(id, path, start, &old.concat(), &new.concat());
    edit.start_byte = Some(lines[..start].iter().map(String::len).sum());
    edit.origin = Origin::User;
    edit
}

/// Lines with their breaks.
fn split(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}
