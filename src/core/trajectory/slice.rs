//! Cutting a recorded trajectory to a window of time (or of events, by `seq`) and/or to
//! some files: `sessions export --from/--to/--file` and `replay --session` use it.
//!
//! A slice is a trajectory of its own: its files' base texts are the texts at the
//! window start (rebuilt by applying the change events before it, each checked
//! against its before-text), it keeps the events inside the window (of the chosen
//! files), and its edits are coalesced again from those events with the same code
//! as a stored session's ([`super::recompute_recorded_edits`]), in temporal order.
//! Event `seq` numbers and times stay those of the whole session.

use std::collections::HashMap;
use std::str::FromStr;

use thiserror::Error;

use super::{
    ApplyError, Event, EventBody, SessionKind, Trajectory, apply_byte_edit,
    recompute_recorded_edits,
};

/// One end of a window: an event number or a time since the session started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SliceBound {
    /// An event `seq` number (`120`).
    Seq(u64),
    /// Milliseconds since the session started (`1500ms`, `90s`, `5m`, `1h`).
    Time(f64),
}

impl SliceBound {
    /// Whether `event` comes at or after this bound.
    fn admits_from(self, event: &Event) -> bool {
        match self {
            SliceBound::Seq(seq) => event.seq >= seq,
            SliceBound::Time(ms) => event.t_ms >= ms,
        }
    }

    /// Whether `event` comes at or before this bound.
    fn admits_to(self, event: &Event) -> bool {
        match self {
            SliceBound::Seq(seq) => event.seq <= seq,
            SliceBound::Time(ms) => event.t_ms <= ms,
        }
    }
}

impl std::fmt::Display for SliceBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SliceBound::Seq(seq) => write!(f, "event {seq}"),
            SliceBound::Time(ms) => write!(f, "{ms}ms"),
        }
    }
}

impl FromStr for SliceBound {
    type Err = SliceError;

    /// A bare number is an event `seq`; a number with `ms`, `s`, `m` or `h` is a time
    /// since the session started (decimals allowed: `1.5s`).
    fn from_str(text: &str) -> Result<SliceBound, SliceError> {
        let bad = |why: &str| SliceError::BadBound {
            text: text.to_string(),
            why: why.to_string(),
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(bad("empty"));
        }
        if trimmed.bytes().all(|b| b.is_ascii_digit()) {
            return trimmed
                .parse()
                .map(SliceBound::Seq)
                .map_err(|_| bad("event number too large"));
        }
        let split = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| bad("expected an event number or a time like 1500ms, 90s, 5m"))?;
        let (number, unit) = trimmed.split_at(split);
        let factor = match unit {
            "ms" => 1.0,
            "s" => 1_000.0,
            "m" | "min" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return Err(bad("unknown unit (use ms, s, m or h)")),
        };
        let value: f64 = number
            .parse()
            .map_err(|_| bad("expected a number before the unit"))?;
        let ms = value * factor;
        if !ms.is_finite() {
            return Err(bad("too large"));
        }
        Ok(SliceBound::Time(ms))
    }
}

/// What to keep of a trajectory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SliceSpec {
    /// Keep events at or after this bound (default: from the start).
    pub from: Option<SliceBound>,
    /// Keep events at or before this bound (default: to the end).
    pub to: Option<SliceBound>,
    /// Keep only these files (paths as in `files`, or their URIs); empty keeps all.
    pub files: Vec<String>,
}

impl SliceSpec {
    /// True when the spec keeps everything.
    pub fn is_everything(&self) -> bool {
        self.from.is_none() && self.to.is_none() && self.files.is_empty()
    }
}

/// Why a trajectory cannot be sliced as asked.
#[derive(Debug, Error, PartialEq)]
pub enum SliceError {
    /// A `--from`/`--to` value that is neither an event number nor a time.
    #[error("{text:?} is not an event number or a time: {why}")]
    BadBound {
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A file the trajectory does not have.
    #[error("no file {file:?} in the trajectory (files: {known})")]
    NoFile {
        /// The name given.
        file: String,
        /// The trajectory's files, comma-separated.
        known: String,
    },
    /// Nothing happened in the window.
    #[error("no events between {from} and {to}{files}")]
    Empty {
        /// The window start as given.
        from: String,
        /// The window end as given.
        to: String,
        /// ` in <files>` when files were chosen.
        files: String,
    },
    /// Commit-derived trajectories have no timeline to cut.
    #[error("a {0} trajectory has no recorded events to slice")]
    NotRecorded(&'static str),
    /// A change event does not apply to the text rebuilt so far.
    #[error("{file}: change at seq {seq} does not apply: {source}")]
    Inconsistent {
        /// File path.
        file: String,
        /// The change event.
        seq: u64,
        /// What went wrong.
        #[source]
        source: ApplyError,
    },
}

/// The paths of the files `names` (paths or URIs) name; none named means every file.
fn chosen_files<'t>(
    trajectory: &'t Trajectory,
    names: &[String],
) -> Result<Vec<&'t str>, SliceError> {
    let mut chosen: Vec<&str> = Vec::new();
    for name in names {
        let file = trajectory
            .files
            .iter()
            .find(|f| f.path == *name || f.uri.as_deref() == Some(name.as_str()))
            .ok_or_else(|| SliceError::NoFile {
                file: name.clone(),
                known: trajectory
                    .files
                    .iter()
                    .map(|f| f.path.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        chosen.push(&file.path);
    }
    Ok(chosen)
}

/// Brings `texts` (each file's text, by path) past `event`: a change applied, a file
/// re-opened with other text (changed outside the editor) taken as it is.
fn follow(texts: &mut HashMap<&str, Option<String>>, event: &Event) -> Result<(), SliceError> {
    match &event.body {
        EventBody::Change(change) => {
            if let Some(Some(text)) = texts.get_mut(change.file.as_str()) {
                apply_byte_edit(
                    text,
                    change.start_byte,
                    change.end_byte,
                    &change.before,
                    &change.after,
                )
                .map_err(|source| SliceError::Inconsistent {
                    file: change.file.clone(),
                    seq: event.seq,
                    source,
                })?;
            }
        }
        EventBody::Open {
            file,
            text: Some(reopened),
            ..
        } => {
            // Re-opened with other text (changed outside the editor).
            if let Some(text) = texts.get_mut(file.as_str()) {
                *text = Some(reopened.clone());
            }
        }
        _ => {}
    }
    Ok(())
}

/// The part of `trajectory` that `spec` selects, as a trajectory of its own.
pub fn slice(trajectory: &Trajectory, spec: &SliceSpec) -> Result<Trajectory, SliceError> {
    if trajectory.session.kind == SessionKind::Commit {
        return Err(SliceError::NotRecorded(SessionKind::Commit.as_str()));
    }
    let chosen = chosen_files(trajectory, &spec.files)?;
    let wanted = |file: Option<&str>| match file {
        Some(file) => chosen.is_empty() || chosen.contains(&file),
        None => chosen.is_empty(),
    };
    let mut texts: HashMap<&str, Option<String>> = trajectory
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.base_text.clone()))
        .collect();
    let mut at_start: Option<HashMap<String, Option<String>>> = None;
    let mut seen_by_end: Vec<&str> = Vec::new();
    let mut events = Vec::new();
    for event in &trajectory.events {
        let before_window = spec.from.is_some_and(|b| !b.admits_from(event));
        let after_window = spec.to.is_some_and(|b| !b.admits_to(event));
        if after_window {
            break;
        }
        let file = event.file();
        if !before_window {
            if at_start.is_none() {
                at_start = Some(
                    texts
                        .iter()
                        .map(|(path, text)| (path.to_string(), text.clone()))
                        .collect(),
                );
            }
            if wanted(file) {
                events.push(event.clone());
            }
        }
        if let Some(file) = file
            && !seen_by_end.contains(&file)
        {
            seen_by_end.push(file);
        }
        follow(&mut texts, event)?;
    }
    if events.is_empty() {
        let show =
            |b: Option<SliceBound>, default: &str| b.map_or(default.to_string(), |b| b.to_string());
        return Err(SliceError::Empty {
            from: show(spec.from, "the start"),
            to: show(spec.to, "the end"),
            files: if chosen.is_empty() {
                String::new()
            } else {
                format!(" in {}", chosen.join(", "))
            },
        });
    }
    let mut sliced = Trajectory::new(trajectory.session.clone());
    sliced.events = events;
    for file in &trajectory.files {
        let path = file.path.as_str();
        if !wanted(Some(path)) || !seen_by_end.contains(&path) {
            continue;
        }
        let mut entry = file.clone();
        entry.base_text = at_start
            .as_ref()
            .and_then(|texts| texts.get(path).cloned().flatten());
        if entry.final_text.is_some() {
            entry.final_text = texts.get(path).cloned().flatten();
        }
        sliced.files.push(entry);
    }
    // Edit ids are renumbered, so expected next edits no longer name the same edits.
    sliced.gold.context = trajectory.gold.context.clone();
    sliced.gold.source = trajectory.gold.source.clone();
    recompute_recorded_edits(&mut sliced);
    Ok(sliced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{
        Change, FileEntry, LineRange, Origin, Read, ReadRole, SessionInfo, Signal,
    };

    fn event(seq: u64, t_ms: f64, body: EventBody) -> Event {
        Event { seq, t_ms, body }
    }

    fn change(file: &str, start: usize, before: &str, after: &str) -> EventBody {
        EventBody::Change(Change {
            file: file.into(),
            version: 2,
            start_byte: start,
            end_byte: start + before.len(),
            start_line: 0,
            end_line: 0,
            new_end_line: 0,
            before: before.into(),
            after: after.into(),
            origin: Origin::User,
        })
    }

    /// a.py and b.py: a change in a.py, b.py opened, a change in each, a read, a signal.
    fn session() -> Trajectory {
        let mut t = Trajectory::new(SessionInfo::new("1", SessionKind::Recorded));
        for (path, text) in [("a.py", "x = 1\n"), ("b.py", "y = 2\n")] {
            t.files.push(FileEntry {
                final_text: Some(String::new()),
                ..FileEntry::new(path, Some(text.to_string()))
            });
        }
        t.events = vec![
            event(
                1,
                0.0,
                EventBody::Open {
                    file: "a.py".into(),
                    version: 1,
                    text: None,
                },
            ),
            event(2, 100.0, change("a.py", 4, "1", "10")),
            event(
                3,
                200.0,
                EventBody::Open {
                    file: "b.py".into(),
                    version: 1,
                    text: None,
                },
            ),
            event(4, 5_000.0, change("b.py", 6, "", "z = 3\n")),
            event(5, 6_000.0, change("a.py", 7, "", "w = 4\n")),
            event(
                6,
                7_000.0,
                EventBody::Read(Read {
                    file: "a.py".into(),
                    lines: LineRange::new(0, 1),
                    via: "open".into(),
                    role: ReadRole::Open,
                }),
            ),
            event(
                7,
                7_100.0,
                EventBody::Signal(Signal {
                    kind: "focus".into(),
                    file: None,
                    payload: serde_json::Value::Null,
                }),
            ),
        ];
        recompute_recorded_edits(&mut t);
        t
    }

    /// Files (path, base, final), event seqs, edits (id, file, after, events), natural order.
    type Summary = (
        Vec<(String, Option<String>, Option<String>)>,
        Vec<u64>,
        Vec<(String, String, String, Vec<u64>)>,
        Vec<String>,
    );

    fn summary(t: &Trajectory) -> Summary {
        (
            t.files
                .iter()
                .map(|f| (f.path.clone(), f.base_text.clone(), f.final_text.clone()))
                .collect(),
            t.events.iter().map(|e| e.seq).collect(),
            t.edits
                .iter()
                .map(|e| {
                    (
                        e.id.clone(),
                        e.file.clone(),
                        e.after_text.clone(),
                        e.events.clone(),
                    )
                })
                .collect(),
            t.order.natural.clone(),
        )
    }

    fn s(text: &str) -> Option<String> {
        Some(text.to_string())
    }

    #[test]
    fn bounds_parse_as_event_numbers_or_times() {
        let parse = |t: &str| t.parse::<SliceBound>();
        assert_eq!(parse("42"), Ok(SliceBound::Seq(42)));
        assert_eq!(parse("1500ms"), Ok(SliceBound::Time(1_500.0)));
        assert_eq!(parse("90s"), Ok(SliceBound::Time(90_000.0)));
        assert_eq!(parse("1.5s"), Ok(SliceBound::Time(1_500.0)));
        assert_eq!(parse("5m"), Ok(SliceBound::Time(300_000.0)));
        assert_eq!(parse("2h"), Ok(SliceBound::Time(7_200_000.0)));
        assert_eq!(
            parse("5x").unwrap_err().to_string(),
            "\"5x\" is not an event number or a time: unknown unit (use ms, s, m or h)"
        );
        assert!(matches!(parse(""), Err(SliceError::BadBound { .. })));
        assert!(matches!(parse("s"), Err(SliceError::BadBound { .. })));
        assert!(matches!(parse("-3"), Err(SliceError::BadBound { .. })));
    }

    #[test]
    fn window_start_rebuilds_base_texts_and_edits_are_coalesced_again() {
        let t = session();
        let spec = SliceSpec {
            from: Some(SliceBound::Seq(3)),
            ..SliceSpec::default()
        };
        let sliced = slice(&t, &spec).unwrap();
        assert_eq!(
            summary(&sliced),
            (
                vec![
                    ("a.py".into(), s("x = 10\n"), s("x = 10\nw = 4\n")),
                    ("b.py".into(), s("y = 2\n"), s("y = 2\nz = 3\n")),
                ],
                vec![3, 4, 5, 6, 7],
                vec![
                    ("e0".into(), "b.py".into(), "z = 3\n".into(), vec![4]),
                    ("e1".into(), "a.py".into(), "w = 4\n".into(), vec![5]),
                ],
                vec!["e0".into(), "e1".into()],
            )
        );
        assert_eq!(sliced.edits[1].before_lines, LineRange::new(1, 2));
        assert_eq!(sliced.order.source.as_deref(), Some("recorded"));
    }

    #[test]
    fn time_window_and_files_select_events_and_files() {
        let t = session();
        // Up to 5 s (inclusive), a.py only: b.py and the signal without a file go.
        let spec = SliceSpec {
            to: Some(SliceBound::Time(5_000.0)),
            files: vec!["a.py".into()],
            ..SliceSpec::default()
        };
        assert_eq!(
            summary(&slice(&t, &spec).unwrap()),
            (
                vec![("a.py".into(), s("x = 1\n"), s("x = 10\n"))],
                vec![1, 2],
                vec![("e0".into(), "a.py".into(), "10".into(), vec![2])],
                vec!["e0".into()],
            )
        );
        // From 150 ms to event 4: b.py is seen from seq 3, a.py was seen before.
        let spec = SliceSpec {
            from: Some(SliceBound::Time(150.0)),
            to: Some(SliceBound::Seq(4)),
            files: vec![],
        };
        assert_eq!(
            summary(&slice(&t, &spec).unwrap()),
            (
                vec![
                    ("a.py".into(), s("x = 10\n"), s("x = 10\n")),
                    ("b.py".into(), s("y = 2\n"), s("y = 2\nz = 3\n")),
                ],
                vec![3, 4],
                vec![("e0".into(), "b.py".into(), "z = 3\n".into(), vec![4])],
                vec!["e0".into()],
            )
        );
        // Up to event 2: b.py is not seen yet.
        let spec = SliceSpec {
            to: Some(SliceBound::Seq(2)),
            ..SliceSpec::default()
        };
        assert_eq!(slice(&t, &spec).unwrap().files.len(), 1);
    }

    #[test]
    fn errors_name_what_is_wrong() {
        let t = session();
        let spec = SliceSpec {
            files: vec!["c.py".into()],
            ..SliceSpec::default()
        };
        assert_eq!(
            slice(&t, &spec).unwrap_err().to_string(),
            "no file \"c.py\" in the trajectory (files: a.py, b.py)"
        );
        let spec = SliceSpec {
            from: Some(SliceBound::Time(5_500.0)),
            files: vec!["b.py".into()],
            ..SliceSpec::default()
        };
        assert_eq!(
            slice(&t, &spec).unwrap_err().to_string(),
            "no events between 5500ms and the end in b.py"
        );
        let mut broken = t.clone();
        broken.files[0].base_text = s("x = 2\n");
        let spec = SliceSpec {
            from: Some(SliceBound::Seq(3)),
            ..SliceSpec::default()
        };
        assert_eq!(
            slice(&broken, &spec).unwrap_err(),
            SliceError::Inconsistent {
                file: "a.py".into(),
                seq: 2,
                source: ApplyError::BeforeMismatch { start: 4, end: 5 }
            }
        );
        let commit = Trajectory::new(SessionInfo::new("c", SessionKind::Commit));
        assert_eq!(
            slice(&commit, &SliceSpec::default()),
            Err(SliceError::NotRecorded("commit"))
        );
    }
}
