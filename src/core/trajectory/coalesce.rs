//! From raw content changes to the edits a person perceives.
//!
//! Consecutive typing and deleting at one place is one edit. An edit ends when the
//! developer pauses longer than [`CoalesceConfig::pause_ms`], saves, works in another
//! file, or changes text elsewhere in the same file. Several changes in one
//! `didChange` (multi-cursor) each grow their own edit, so typing at three cursors
//! gives three edits. Replacing text that is still being typed (IME composition,
//! completion accepting a prefix) continues the edit. An edit that puts back the text
//! an earlier edit replaced is annotated `reverts: <id>`. Changes of different
//! origins (user, format, code action…) never merge, so tool-made edits stay
//! separate and can be excluded.
//!
//! Coordinates are sequential (unlike a commit's edits, which share one base): edit
//! `j`'s `start_byte` and `before_lines` are in the file's text after edits `0..j` are
//! complete, its `after_lines` in that text with `j` applied. Edits that were open at
//! the same time (multi-cursor typing) are put in that order as if each had been
//! typed whole, so applying the edits one after another rebuilds every final text.
//!
//! [`recompute_recorded_edits`] is the one path from a recorded trajectory's events to
//! its edits, used by `store::session_read` and by `slice`.

use std::collections::HashMap;

use super::{Edit, EditKind, Event, EventBody, LineRange, Origin, Trajectory};

/// Thresholds of coalescing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CoalesceConfig {
    /// A gap between two changes longer than this ends an edit. Default 2,000 ms:
    /// keystrokes within a word or line come well under a second apart, while a
    /// pause of a couple of seconds is where people stop to think or look elsewhere.
    pub pause_ms: f64,
}

impl Default for CoalesceConfig {
    fn default() -> Self {
        CoalesceConfig { pause_ms: 2_000.0 }
    }
}

/// An edit still growing.
#[derive(Debug, Clone)]
struct Open {
    /// Position among all edits by the moment they began (the reporting order).
    index: usize,
    file: String,
    origin: Origin,
    /// Byte range of the edit's current text in the current document.
    start: usize,
    end: usize,
    /// Text the edit replaced, and the text it has put there so far.
    before: String,
    after: String,
    /// Where the edit's replaced text starts in the document as it was when the edit began.
    snapshot_start: usize,
    /// Edits of this file still open when this one began and lying before it, with
    /// their net length change at that moment: their rest must be added to
    /// `snapshot_start` to place this edit after them in sequential order.
    open_before: Vec<(usize, isize)>,
    last_t: f64,
    events: Vec<u64>,
}

/// Coalesces the change events of `events` into edits, in the order they began.
/// `base` gives each file's text before its first change.
pub fn coalesce(
    events: &[Event],
    base: &HashMap<String, String>,
    config: CoalesceConfig,
) -> Vec<Edit> {
    let mut docs: HashMap<String, String> = base.clone();
    let mut open: Vec<Open> = Vec::new();
    let mut done: Vec<Open> = Vec::new();
    let mut started = 0usize;
    let mut last_version: Option<(String, i64)> = None;
    for event in events {
        match &event.body {
            EventBody::Save { file } | EventBody::Close { file } | EventBody::Open { file, .. } => {
                close_where(&mut open, &mut done, |o| &o.file == file);
            }
            EventBody::Change(change) => {
                // Pauses end every open edit.
                close_where(&mut open, &mut done, |o| {
                    event.t_ms - o.last_t > config.pause_ms
                });
                // Working in another file ends the edits of the others.
                close_where(&mut open, &mut done, |o| o.file != change.file);
                let same_did_change =
                    last_version.as_ref() == Some(&(change.file.clone(), change.version));
                last_version = Some((change.file.clone(), change.version));
                let doc = docs.entry(change.file.clone()).or_default();
                let (s, e) = (
                    change.start_byte.min(doc.len()),
                    change.end_byte.min(doc.len()),
                );
                let touches = |o: &Open| {
                    o.file == change.file && o.origin == change.origin && s <= o.end && e >= o.start
                };
                if open.iter().filter(|o| touches(o)).count() > 1 {
                    // One change across several open edits (a selection spanning two
                    // cursors' work): those edits are complete, and the change starts a
                    // new edit that replaces their text.
                    close_where(&mut open, &mut done, |o| touches(o));
                }
                let touching = open.iter().position(touches);
                let target = match touching {
                    Some(i) => i,
                    None => {
                        if !same_did_change {
                            // A change elsewhere: the developer moved on.
                            close_where(&mut open, &mut done, |_| true);
                        }
                        let open_before = open
                            .iter()
                            .filter(|o| o.file == change.file && o.end <= s)
                            .map(|o| (o.index, net_delta(o)))
                            .collect();
                        open.push(Open {
                            index: started,
                            file: change.file.clone(),
                            origin: change.origin,
                            start: s,
                            end: s,
                            before: String::new(),
                            after: String::new(),
                            snapshot_start: s,
                            open_before,
                            last_t: event.t_ms,
                            events: Vec::new(),
                        });
                        started += 1;
                        open.len() - 1
                    }
                };
                grow(&mut open[target], doc, s, e, &change.after, event);
                // Shift the other open edits of this file that lie after the change.
                let delta = change.after.len() as isize - (e - s) as isize;
                for (i, o) in open.iter_mut().enumerate() {
                    if i != target && o.file == change.file && o.start >= e {
                        o.start = (o.start as isize + delta) as usize;
                        o.end = (o.end as isize + delta) as usize;
                    }
                }
                doc.replace_range(s..e, &change.after);
            }
            _ => {}
        }
    }
    close_where(&mut open, &mut done, |_| true);
    sequential_edits(done, base)
}

/// The finished edits as sequential edits, in the order they began: each placed where
/// it lands once the edits before it are applied (the texts rebuilt as they go), typed
/// and erased ones left out, one undoing an earlier edit marked as its revert.
fn sequential_edits(mut done: Vec<Open>, base: &HashMap<String, String>) -> Vec<Edit> {
    done.sort_by_key(|o| o.index);
    let final_delta: HashMap<usize, isize> = done.iter().map(|o| (o.index, net_delta(o))).collect();
    // The files' texts as the sequential edits rebuild them.
    let mut texts: HashMap<String, String> = base.clone();
    let mut edits: Vec<Edit> = Vec::new();
    for o in done {
        if o.before == o.after {
            // Typed and erased again: nothing changed.
            continue;
        }
        let start = (o.snapshot_start as isize
            + o.open_before
                .iter()
                .map(|(i, at_start)| final_delta[i] - at_start)
                .sum::<isize>()) as usize;
        let text = texts.entry(o.file.clone()).or_default();
        let end = start + o.before.len();
        debug_assert_eq!(text.get(start..end), Some(o.before.as_str()));
        let before_lines = LineRange::new(line_of(text, start), line_of(text, end) + 1);
        text.replace_range(start..end.min(text.len()), &o.after);
        let after_lines =
            LineRange::new(before_lines.start, line_of(text, start + o.after.len()) + 1);
        let id = format!("e{}", edits.len());
        let reverts = edits
            .iter()
            .rev()
            .find(|earlier| {
                earlier.file == o.file
                    && earlier.after_text == o.before
                    && earlier.before_text == o.after
            })
            .map(|earlier| earlier.id.clone());
        edits.push(to_edit(id, &o, start, before_lines, after_lines, reverts));
    }
    edits
}

/// How much an edit has lengthened its file so far.
fn net_delta(o: &Open) -> isize {
    o.after.len() as isize - o.before.len() as isize
}

/// Rebuilds a recorded trajectory's `edits` from its change events and its files'
/// base texts, with the real temporal order as the natural order (source `recorded`).
/// The one code path for stored sessions and for slices of them.
pub fn recompute_recorded_edits(trajectory: &mut Trajectory) {
    recompute_recorded_edits_with(trajectory, CoalesceConfig::default());
}

/// [`recompute_recorded_edits`] with other thresholds (`--pause-ms`).
pub fn recompute_recorded_edits_with(trajectory: &mut Trajectory, config: CoalesceConfig) {
    let base: HashMap<String, String> = trajectory
        .files
        .iter()
        .filter_map(|f| Some((f.path.clone(), f.base_text.clone()?)))
        .collect();
    trajectory.edits = coalesce(&trajectory.events, &base, config);
    trajectory.order.natural = trajectory.edits.iter().map(|e| e.id.clone()).collect();
    trajectory.order.source = Some("recorded".to_string());
}

/// Applies one change to the open edit it touches.
fn grow(open: &mut Open, doc: &str, s: usize, e: usize, text: &str, event: &Event) {
    let new_start = s.min(open.start);
    let new_end_pre = e.max(open.end);
    // Text outside the edit that the change also covers was original text.
    let left = &doc[new_start..open.start];
    let right = &doc[open.end..new_end_pre];
    open.before = format!("{left}{}{right}", open.before);
    let mut region = format!("{left}{}{right}", open.after);
    region.replace_range(s - new_start..e - new_start, text);
    // Text left of the edit was untouched since it began: same bytes in the snapshot.
    open.snapshot_start -= left.len();
    open.start = new_start;
    open.end = new_start + region.len();
    open.after = region;
    open.last_t = event.t_ms;
    open.events.push(event.seq);
}

fn close_where(open: &mut Vec<Open>, done: &mut Vec<Open>, mut when: impl FnMut(&Open) -> bool) {
    let mut i = 0;
    while i < open.len() {
        if when(&open[i]) {
            done.push(open.remove(i));
        } else {
            i += 1;
        }
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

fn to_edit(
    id: String,
    o: &Open,
    start_byte: usize,
    before_lines: LineRange,
    after_lines: LineRange,
    reverts: Option<String>,
) -> Edit {
    let kind = match (o.before.is_empty(), o.after.is_empty()) {
        (true, _) => EditKind::Insert,
        (_, true) => EditKind::Delete,
        _ => EditKind::Replace,
    };
    Edit {
        id,
        file: o.file.clone(),
        kind,
        before_lines,
        after_lines,
        start_byte: Some(start_byte),
        before_text: o.before.clone(),
        after_text: o.after.clone(),
        context_before: Vec::new(),
        context_after: Vec::new(),
        structural_path: Vec::new(),
        origin: o.origin,
        events: o.events.clone(),
        annotations: super::Annotations {
            reverts,
            ..super::Annotations::default()
        },
    }
}

/// Recorded trajectories built from raw changes, for the tests of the modules that
/// consume them (replay state and engine).
#[cfg(test)]
pub(crate) mod recorded_for_tests {
    use super::{CoalesceConfig, coalesce};
    use crate::core::trajectory::{
        Change, Event, EventBody, FileEntry, Origin, SessionInfo, SessionKind, Trajectory,
    };

    /// A recorded trajectory of `a.py` from changes `(t_ms, start, end, new text, origin)`
    /// (byte offsets in the text as the earlier changes left it), coalesced, in
    /// temporal natural order; and the final text.
    pub(crate) fn recorded(
        base: &str,
        changes: &[(f64, usize, usize, &str, Origin)],
    ) -> (Trajectory, String) {
        let mut doc = base.to_string();
        let mut events = Vec::new();
        for (i, &(t, s, e, after, origin)) in changes.iter().enumerate() {
            events.push(Event {
                seq: i as u64,
                t_ms: t,
                body: EventBody::Change(Change {
                    file: "a.py".into(),
                    version: i as i64 + 2,
                    start_byte: s,
                    end_byte: e,
                    start_line: 0,
                    end_line: 0,
                    new_end_line: 0,
                    before: doc[s..e].to_string(),
                    after: after.into(),
                    origin,
                }),
            });
            doc.replace_range(s..e, after);
        }
        let mut t = Trajectory::new(SessionInfo::new("r", SessionKind::Recorded));
        t.files.push(FileEntry::new("a.py", Some(base.into())));
        let bases = [("a.py".to_string(), base.to_string())].into();
        t.edits = coalesce(&events, &bases, CoalesceConfig::default());
        t.order.natural = t.edits.iter().map(|e| e.id.clone()).collect();
        (t, doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::Change;

    struct Script {
        events: Vec<Event>,
    }

    impl Script {
        fn new() -> Script {
            Script { events: Vec::new() }
        }

        fn change(
            &mut self,
            t: f64,
            file: &str,
            version: i64,
            s: usize,
            before: &str,
            after: &str,
        ) -> &mut Script {
            self.change_from(t, file, version, s, before, after, Origin::User)
        }

        #[allow(clippy::too_many_arguments)]
        fn change_from(
            &mut self,
            t: f64,
            file: &str,
            version: i64,
            s: usize,
            before: &str,
            after: &str,
            origin: Origin,
        ) -> &mut Script {
            let seq = self.events.len() as u64 + 1;
            self.events.push(Event {
                seq,
                t_ms: t,
                body: EventBody::Change(Change {
                    file: file.into(),
                    version,
                    start_byte: s,
                    end_byte: s + before.len(),
                    start_line: 0,
                    end_line: 0,
                    new_end_line: 0,
                    before: before.into(),
                    after: after.into(),
                    origin,
                }),
            });
            self
        }

        fn save(&mut self, t: f64, file: &str) -> &mut Script {
            let seq = self.events.len() as u64 + 1;
            self.events.push(Event {
                seq,
                t_ms: t,
                body: EventBody::Save { file: file.into() },
            });
            self
        }

        fn run(
            &self,
            base: &[(&str, &str)],
        ) -> Vec<(String, String, String, LineRange, LineRange)> {
            let base = base
                .iter()
                .map(|(f, t)| (f.to_string(), t.to_string()))
                .collect();
            coalesce(&self.events, &base, CoalesceConfig::default())
                .into_iter()
                .map(|e| {
                    (
                        e.file,
                        e.before_text,
                        e.after_text,
                        e.before_lines,
                        e.after_lines,
                    )
                })
                .collect()
        }
    }

    fn row(
        file: &str,
        before: &str,
        after: &str,
        b: (usize, usize),
        a: (usize, usize),
    ) -> (String, String, String, LineRange, LineRange) {
        (
            file.into(),
            before.into(),
            after.into(),
            LineRange::new(b.0, b.1),
            LineRange::new(a.0, a.1),
        )
    }

    #[test]
    fn typing_and_deleting_at_one_place_is_one_edit() {
        let mut s = Script::new();
        s.change(0.0, "a.py", 2, 6, "", "a")
            .change(100.0, "a.py", 3, 7, "", "b")
            .change(200.0, "a.py", 4, 8, "", "c");
        // Backspace over the "c" just typed.
        s.change(300.0, "a.py", 5, 8, "c", "");
        assert_eq!(
            s.run(&[("a.py", "x = 1\n")]),
            vec![row("a.py", "", "ab", (1, 2), (1, 2))]
        );
    }

    #[test]
    fn pauses_jumps_saves_and_file_switches_end_an_edit() {
        let mut s = Script::new();
        s.change(0.0, "a.py", 2, 0, "", "a");
        s.change(3000.0, "a.py", 3, 1, "", "b"); // after a pause
        s.change(3100.0, "a.py", 4, 8, "", "c"); // elsewhere in the file
        s.save(3200.0, "a.py");
        s.change(3300.0, "a.py", 5, 9, "", "d"); // after a save
        s.change(3400.0, "b.py", 2, 0, "", "e"); // another file
        s.change(3500.0, "a.py", 6, 10, "", "f"); // back again
        assert_eq!(
            s.run(&[("a.py", "x = 1\ny = 2\n"), ("b.py", "")]),
            vec![
                row("a.py", "", "a", (0, 1), (0, 1)),
                row("a.py", "", "b", (0, 1), (0, 1)),
                row("a.py", "", "c", (1, 2), (1, 2)),
                row("a.py", "", "d", (1, 2), (1, 2)),
                row("b.py", "", "e", (0, 1), (0, 1)),
                row("a.py", "", "f", (1, 2), (1, 2)),
            ]
        );
    }

    #[test]
    fn multi_cursor_changes_grow_one_edit_per_cursor() {
        let mut s = Script::new();
        // Two cursors (start of line 0 and of line 1) typing "# " in two didChanges.
        s.change(0.0, "a.py", 2, 0, "", "#")
            .change(0.0, "a.py", 2, 7, "", "#");
        s.change(80.0, "a.py", 3, 1, "", " ")
            .change(80.0, "a.py", 3, 9, "", " ");
        assert_eq!(
            s.run(&[("a.py", "x = 1\ny = 2\n")]),
            vec![
                row("a.py", "", "# ", (0, 1), (0, 1)),
                row("a.py", "", "# ", (1, 2), (1, 2))
            ]
        );
    }

    #[test]
    fn replace_in_place_typing_continues_and_erased_typing_vanishes() {
        let mut s = Script::new();
        // IME: "k" typed, then the composition replaces it with "か".
        s.change(0.0, "a.py", 2, 0, "", "k")
            .change(50.0, "a.py", 3, 0, "k", "か");
        // Typed and erased again at another place after a pause: no edit.
        s.change(5000.0, "a.py", 4, 10, "", "z")
            .change(5100.0, "a.py", 5, 10, "z", "");
        assert_eq!(
            s.run(&[("a.py", "# note\nx=1\n")]),
            vec![row("a.py", "", "か", (0, 1), (0, 1))]
        );
    }

    /// Applies edits one after another at their sequential `start_byte`.
    fn rebuild(base: &HashMap<String, String>, edits: &[Edit]) -> HashMap<String, String> {
        let mut texts = base.clone();
        for e in edits {
            let text = texts.get_mut(&e.file).unwrap();
            let start = e.start_byte.unwrap();
            assert_eq!(
                &text[start..start + e.before_text.len()],
                e.before_text,
                "{}",
                e.id
            );
            let line = text[..start].matches('\n').count();
            assert_eq!(e.before_lines.start, line, "{}", e.id);
            text.replace_range(start..start + e.before_text.len(), &e.after_text);
        }
        texts
    }

    #[test]
    fn sequential_edits_rebuild_every_final_text_whatever_the_interleaving() {
        let mut rng = 0x5EED_u64;
        let mut next = |n: usize| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((rng >> 33) as usize) % n.max(1)
        };
        for session in 0..200 {
            let base: HashMap<String, String> = [
                ("a.py".to_string(), "def f(x):\n    return x\n".to_string()),
                ("b.py".to_string(), "import a\nprint(a.f(1))\n".to_string()),
            ]
            .into();
            let mut docs = base.clone();
            let mut s = Script::new();
            let (mut t, mut version) = (0.0, 1);
            for _ in 0..40 {
                t += [30.0, 80.0, 2500.0][next(3)];
                version += 1;
                let file = ["a.py", "b.py"][usize::from(next(5) == 0)];
                // One change, or several cursors in one didChange.
                for _ in 0..1 + usize::from(next(4) == 0) * next(3) {
                    let doc = docs.get_mut(file).unwrap();
                    let start = next(doc.len() + 1);
                    let end = (start + [0, 0, 1, 3][next(4)]).min(doc.len());
                    let after = ["", "z", "\n", "ab", "\n  q"][next(5)];
                    let before = doc[start..end].to_string();
                    s.change(t, file, version, start, &before, after);
                    doc.replace_range(start..end, after);
                }
            }
            let edits = coalesce(&s.events, &base, CoalesceConfig::default());
            assert_eq!(rebuild(&base, &edits), docs, "session {session}");
        }
    }

    #[test]
    fn interleaved_files_and_undo_chains() {
        let mut s = Script::new();
        // a.py: rename, b.py: call site, a.py: typo fix, then undo twice and redo once.
        s.change(0.0, "a.py", 2, 4, "f", "g");
        s.change(3000.0, "b.py", 2, 11, "f", "g");
        s.change(6000.0, "a.py", 3, 21, "x", "y");
        s.change(9000.0, "a.py", 4, 21, "y", "x"); // undo the typo fix
        s.change(12000.0, "a.py", 5, 4, "g", "f"); // undo the rename
        s.change(15000.0, "a.py", 6, 4, "f", "g"); // redo it
        let base: HashMap<String, String> = [
            ("a.py".to_string(), "def f(x):\n    return x\n".to_string()),
            ("b.py".to_string(), "import a\na.f(1)\n".to_string()),
        ]
        .into();
        let edits = coalesce(&s.events, &base, CoalesceConfig::default());
        type Row<'a> = (&'a str, &'a str, &'a str, &'a str, usize, Option<&'a str>);
        let summary: Vec<Row> = edits
            .iter()
            .map(|e| {
                (
                    e.id.as_str(),
                    e.file.as_str(),
                    e.before_text.as_str(),
                    e.after_text.as_str(),
                    e.start_byte.unwrap(),
                    e.annotations.reverts.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("e0", "a.py", "f", "g", 4, None),
                ("e1", "b.py", "f", "g", 11, None),
                ("e2", "a.py", "x", "y", 21, None),
                ("e3", "a.py", "y", "x", 21, Some("e2")),
                ("e4", "a.py", "g", "f", 4, Some("e0")),
                ("e5", "a.py", "f", "g", 4, Some("e4")),
            ]
        );
        let texts = rebuild(&base, &edits);
        assert_eq!(texts["a.py"], "def g(x):\n    return x\n");
    }

    #[test]
    fn undoing_an_edit_is_marked_as_a_revert_and_origins_never_merge() {
        let mut s = Script::new();
        s.change(0.0, "a.py", 2, 0, "foo", "bar");
        s.change(5000.0, "a.py", 3, 0, "bar", "foo"); // undo
        s.change_from(5050.0, "a.py", 4, 3, "", "\n", Origin::Format); // format-on-save right after
        let base: HashMap<String, String> = [("a.py".to_string(), "foo = 1".to_string())].into();
        let edits = coalesce(&s.events, &base, CoalesceConfig::default());
        let summary: Vec<(&str, &str, &str, Origin, Option<&str>)> = edits
            .iter()
            .map(|e| {
                (
                    e.id.as_str(),
                    e.before_text.as_str(),
                    e.after_text.as_str(),
                    e.origin,
                    e.annotations.reverts.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                ("e0", "foo", "bar", Origin::User, None),
                ("e1", "bar", "foo", Origin::User, Some("e0")),
                ("e2", "", "\n", Origin::Format, None),
            ]
        );
    }
}
