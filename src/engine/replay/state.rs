//! The state of a replay: every file as it is now (base + applied edits), and
//! where each gold edit sits in current coordinates.
//!
//! Gold edits come in two shapes. A commit's edits share one base: non-overlapping
//! line ranges of the parent version. A recorded session's edits are sequential:
//! each is in the text left by all earlier ones, and may rewrite what an earlier one
//! wrote (a typo fixed in a line just typed, an undo).
//!
//! Both become one model: every line that ever exists gets an identity and a place
//! in one sequence per file (the base lines, plus each edit's new lines placed where
//! it put them). An edit deletes some identities and inserts others; a file's text in
//! any state is its sequence filtered to the lines alive in that state. So an edit's
//! current range is exact in any application order, and the only constraint is the
//! one the data imposes: an edit that rewrites lines another edit wrote (or spans
//! lines another deleted) needs that edit applied first ([`ReplayState::is_ready`]).
use std::collections::BTreeMap;

use crate::core::trajectory::{Edit, Trajectory};

/// A gold edit in a form replay can apply.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldEdit {
    /// Edit id from the trajectory.
    pub id: String,
    /// File path.
    pub file: String,
    /// First replaced line: in the base version (shared-base edits) or in the text
    /// left by the edits before this one (sequential edits).
    pub base_start: usize,
    /// Replaced lines (with their line breaks).
    pub before: Vec<String>,
    /// Inserted lines (with their line breaks).
    pub after: Vec<String>,
}

impl GoldEdit {
    /// From a trajectory edit (whole-line texts).
    pub fn from_edit(edit: &Edit) -> GoldEdit {
        GoldEdit {
            id: edit.id.clone(),
            file: edit.file.clone(),
            base_start: edit.before_lines.start,
            before: split_lines(&edit.before_text),
            after: split_lines(&edit.after_text),
        }
    }

    /// The replaced text.
    pub fn before_text(&self) -> String {
        self.before.concat()
    }

    /// The inserted text.
    pub fn after_text(&self) -> String {
        self.after.concat()
    }
}

/// Splits text into lines that keep their line breaks (`\n`, `\r\n`); a last line
/// without a break stays as it is, so joining gives the text back byte for byte.
pub fn split_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// Why a trajectory cannot be replayed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// An edit names a file the trajectory does not list.
    #[error("edit {edit} is in {file}, which the trajectory does not list")]
    UnknownFile {
        /// Edit id.
        edit: String,
        /// File.
        file: String,
    },
    /// An edit's before-text is not what the base version has at its lines.
    #[error(
        "edit {edit} does not match {file} at line {line}: its before-text differs from the base text"
    )]
    BeforeMismatch {
        /// Edit id.
        edit: String,
        /// File.
        file: String,
        /// Base line.
        line: usize,
    },
    /// Some edits are sequential (recorded) and others share one base (commit).
    #[error(
        "edit {edit} mixes sequential (recorded) and shared-base (commit) coordinates with the other edits"
    )]
    MixedCoordinates {
        /// Edit id.
        edit: String,
    },
    /// Two edits of one file overlap in the base version.
    #[error("edits {first} and {second} overlap in {file}")]
    Overlap {
        /// Edit id.
        first: String,
        /// Edit id.
        second: String,
        /// File.
        file: String,
    },
}

/// One line that exists in some state of a file.
#[derive(Debug, Clone)]
struct LineSlot {
    text: String,
    /// The edit that wrote it (`None` for a base line).
    inserted_by: Option<usize>,
    /// The edit that removes it, if any.
    deleted_by: Option<usize>,
}

/// Every line a file ever has, in document order.
#[derive(Debug, Clone, Default)]
struct LineSequence {
    slots: Vec<LineSlot>,
    /// `alive_before[k]`: lines alive now among `slots[..k]` (one more entry than slots).
    alive_before: Vec<usize>,
}

/// Current files and the positions of all gold edits.
#[derive(Debug, Clone)]
pub struct ReplayState {
    base: BTreeMap<String, Vec<String>>,
    files: BTreeMap<String, Vec<String>>,
    /// Files absent in the base version (created by an edit).
    absent: BTreeMap<String, bool>,
    edits: Vec<GoldEdit>,
    /// Where each edit sits in its file's sequence: its first deleted line, else its first new line.
    anchors: Vec<usize>,
    /// Edits each edit needs applied first (sequential edits only).
    needs: Vec<Vec<usize>>,
    sequences: BTreeMap<String, LineSequence>,
    sequential: bool,
    applied: Vec<bool>,
    order: Vec<usize>,
}

/// Each file's base lines as its sequence, no edit woven in yet.
fn base_sequences(files: &BTreeMap<String, Vec<String>>) -> BTreeMap<String, LineSequence> {
    files
        .iter()
        .map(|(path, lines)| {
            let slots = lines
                .iter()
                .map(|text| LineSlot {
                    text: text.clone(),
                    inserted_by: None,
                    deleted_by: None,
                })
                .collect();
            (
                path.clone(),
                LineSequence {
                    slots,
                    alive_before: Vec::new(),
                },
            )
        })
        .collect()
}

/// Weaves every edit into its file's sequence: the lines it deletes marked, its new
/// lines inserted in place. Returns the edits each edit needs applied first (sequential
/// edits only: those that wrote or deleted the lines it rewrites).
fn weave(
    edits: &[GoldEdit],
    sequences: &mut BTreeMap<String, LineSequence>,
    sequential: bool,
) -> Vec<Vec<usize>> {
    let mut needs = vec![Vec::new(); edits.len()];
    // Identities of each file's lines in the text the next edit applies to:
    // the base for shared-base edits, the running text for sequential ones.
    let mut current: BTreeMap<String, Vec<usize>> = sequences
        .iter()
        .map(|(path, seq)| (path.clone(), (0..seq.slots.len()).collect()))
        .collect();
    for (idx, edit) in edits.iter().enumerate() {
        let seq = sequences.get_mut(&edit.file).expect("checked above");
        let ids = current.get_mut(&edit.file).expect("checked above");
        let (start, end) = (edit.base_start, edit.base_start + edit.before.len());
        let deleted: Vec<usize> = ids[start..end].to_vec();
        // New lines go right after the lines they replace, else right before the
        // line they were typed above (after any lines deleted there earlier).
        let at = match (deleted.last(), ids.get(start)) {
            (Some(&last), _) => last + 1,
            (None, Some(&next)) => next,
            (None, None) => seq.slots.len(),
        };
        if sequential {
            needs[idx] = needs_of(&seq.slots, &deleted);
        }
        for &line in &deleted {
            seq.slots[line].deleted_by = Some(idx);
        }
        seq.slots.splice(
            at..at,
            edit.after.iter().map(|text| LineSlot {
                text: text.clone(),
                inserted_by: Some(idx),
                deleted_by: None,
            }),
        );
        // Inserting shifts the identities (positions) of later lines of this file.
        let shift = edit.after.len();
        for known in current
            .get_mut(&edit.file)
            .expect("checked above")
            .iter_mut()
        {
            if *known >= at {
                *known += shift;
            }
        }
        let ids = current.get_mut(&edit.file).expect("checked above");
        if sequential {
            ids.splice(start..end, at..at + shift);
        }
    }
    needs
}

/// What a sequential edit that deletes the lines `deleted` needs applied first: the
/// edits that inserted them, and those that deleted lines among them.
fn needs_of(slots: &[LineSlot], deleted: &[usize]) -> Vec<usize> {
    let mut need: Vec<usize> = Vec::new();
    for &line in deleted {
        need.extend(slots[line].inserted_by);
    }
    if let (Some(&first), Some(&last)) = (deleted.first(), deleted.last()) {
        for slot in &slots[first..=last] {
            if let Some(by) = slot.deleted_by {
                need.push(by);
            }
        }
    }
    need.sort_unstable();
    need.dedup();
    need
}

/// Where each of `n` edits sits in the final sequences (positions no longer move):
/// its first deleted line, else its first new line.
fn anchors(sequences: &BTreeMap<String, LineSequence>, n: usize) -> Vec<usize> {
    let mut anchors = vec![0; n];
    let mut found = vec![false; n];
    for seq in sequences.values() {
        for (pos, slot) in seq.slots.iter().enumerate() {
            for owner in [slot.deleted_by, slot.inserted_by].into_iter().flatten() {
                if !found[owner] {
                    found[owner] = true;
                    anchors[owner] = pos;
                }
            }
        }
    }
    anchors
}

impl ReplayState {
    /// The start state of a trajectory; checks every edit against the text it applies to.
    pub fn new(trajectory: &Trajectory) -> Result<ReplayState, StateError> {
        let mut files = BTreeMap::new();
        let mut absent = BTreeMap::new();
        for file in &trajectory.files {
            files.insert(
                file.path.clone(),
                split_lines(file.base_text.as_deref().unwrap_or("")),
            );
            absent.insert(file.path.clone(), file.base_text.is_none());
        }
        let sequential = trajectory.has_sequential_edits();
        if let Some(e) = trajectory
            .edits
            .iter()
            .find(|e| e.start_byte.is_some() != sequential)
        {
            return Err(StateError::MixedCoordinates { edit: e.id.clone() });
        }
        for edit in &trajectory.edits {
            if !files.contains_key(&edit.file) {
                return Err(StateError::UnknownFile {
                    edit: edit.id.clone(),
                    file: edit.file.clone(),
                });
            }
        }
        let edits = if sequential {
            sequential_line_edits(trajectory, &files)?
        } else {
            let edits: Vec<GoldEdit> = trajectory.edits.iter().map(GoldEdit::from_edit).collect();
            check_shared_base(&edits, &files)?;
            edits
        };
        let n = edits.len();
        let mut sequences = base_sequences(&files);
        let needs = weave(&edits, &mut sequences, sequential);
        let anchors = anchors(&sequences, n);
        let mut state = ReplayState {
            base: files.clone(),
            files,
            absent,
            edits,
            anchors,
            needs,
            sequences,
            sequential,
            applied: vec![false; n],
            order: Vec::new(),
        };
        let paths: Vec<String> = state.sequences.keys().cloned().collect();
        for path in paths {
            state.recount(&path);
        }
        Ok(state)
    }

    fn alive(&self, slot: &LineSlot) -> bool {
        slot.inserted_by.is_none_or(|i| self.applied[i])
            && slot.deleted_by.is_none_or(|d| !self.applied[d])
    }

    fn recount(&mut self, path: &str) {
        let seq = &self.sequences[path];
        let mut counts = Vec::with_capacity(seq.slots.len() + 1);
        let mut alive = 0;
        counts.push(0);
        for slot in &seq.slots {
            alive += usize::from(self.alive(slot));
            counts.push(alive);
        }
        self.sequences
            .get_mut(path)
            .expect("known file")
            .alive_before = counts;
    }

    /// All gold edits, by index.
    pub fn edits(&self) -> &[GoldEdit] {
        &self.edits
    }

    /// True when the edits are sequential (a recorded session), not on one shared base.
    pub fn is_sequential(&self) -> bool {
        self.sequential
    }

    /// Whether edit `idx` was applied.
    pub fn is_applied(&self, idx: usize) -> bool {
        self.applied[idx]
    }

    /// Which edits are applied, by index.
    pub fn applied(&self) -> &[bool] {
        &self.applied
    }

    /// Whether edit `idx` can be applied now: every edit whose lines it rewrites is applied.
    pub fn is_ready(&self, idx: usize) -> bool {
        self.needs[idx].iter().all(|&i| self.applied[i])
    }

    /// Edits that edit `idx` rewrites (so they must come first).
    pub fn needs(&self, idx: usize) -> &[usize] {
        &self.needs[idx]
    }

    /// Applied edits in application order.
    pub fn applied_order(&self) -> &[usize] {
        &self.order
    }

    /// Indices of edits not applied yet.
    pub fn remaining(&self) -> Vec<usize> {
        (0..self.edits.len())
            .filter(|&i| !self.applied[i])
            .collect()
    }

    /// Where edit `idx` sits now: its before-lines if not applied, its after-lines if
    /// applied. Exact for ready edits; for an applied sequential edit whose new lines a
    /// later edit typed inside, it is where those lines begin.
    pub fn current_range(&self, idx: usize) -> (usize, usize) {
        let edit = &self.edits[idx];
        let start = self.sequences[&edit.file].alive_before[self.anchors[idx]];
        let len = if self.applied[idx] {
            edit.after.len()
        } else {
            edit.before.len()
        };
        (start, start + len)
    }

    /// Applies gold edit `idx` to the current files.
    pub fn apply(&mut self, idx: usize) {
        assert!(!self.applied[idx], "edit applied twice");
        assert!(
            self.is_ready(idx),
            "edit applied before the edits it rewrites"
        );
        let (start, end) = self.current_range(idx);
        let file = self.edits[idx].file.clone();
        debug_assert_eq!(self.files[&file][start..end], self.edits[idx].before[..]);
        self.applied[idx] = true;
        if self.sequential {
            // The file is its line sequence filtered to the lines alive now. (Not a
            // splice: a later edit applied earlier may have typed inside this edit's
            // new lines.)
            let lines: Vec<String> = self.sequences[&file]
                .slots
                .iter()
                .filter(|slot| self.alive(slot))
                .map(|slot| slot.text.clone())
                .collect();
            self.files.insert(file.clone(), lines);
        } else {
            // Edits on one base never overlap: the new lines replace the old ones in
            // place (a long file's lines are moved, not copied, at every step).
            let after = self.edits[idx].after.iter().cloned();
            let lines = self.files.get_mut(&file).expect("known file");
            lines.splice(start..end, after);
        }
        self.absent.insert(file.clone(), false);
        self.order.push(idx);
        self.recount(&file);
    }

    /// Lines of a file in the base version.
    pub fn base_lines(&self, file: &str) -> Option<&[String]> {
        self.base.get(file).map(Vec::as_slice)
    }

    /// Gold edits of a file in document order.
    pub fn edits_in(&self, file: &str) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.edits.len())
            .filter(|&i| self.edits[i].file == file)
            .collect();
        idx.sort_by_key(|&i| self.anchors[i]);
        idx
    }

    /// Current text of a file.
    pub fn text(&self, file: &str) -> Option<String> {
        self.files.get(file).map(|lines| lines.concat())
    }

    /// Current lines of a file.
    pub fn lines(&self, file: &str) -> Option<&[String]> {
        self.files.get(file).map(Vec::as_slice)
    }

    /// Whether a file exists now (files added by the trajectory appear with their first edit).
    pub fn exists(&self, file: &str) -> bool {
        self.files.contains_key(file) && !self.absent.get(file).copied().unwrap_or(false)
    }

    /// Paths of all files, sorted.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }
}

/// Checks shared-base edits against the base texts and against each other.
fn check_shared_base(
    edits: &[GoldEdit],
    files: &BTreeMap<String, Vec<String>>,
) -> Result<(), StateError> {
    for edit in edits {
        let lines = &files[&edit.file];
        let end = edit.base_start + edit.before.len();
        if end > lines.len() || lines[edit.base_start..end] != edit.before[..] {
            return Err(StateError::BeforeMismatch {
                edit: edit.id.clone(),
                file: edit.file.clone(),
                line: edit.base_start,
            });
        }
    }
    // Every pair is compared (to name the first overlapping one) only when a sweep
    // over the edits sorted by place found an overlap: a long trajectory has
    // n² / 2 pairs.
    if !any_overlap(edits) {
        return Ok(());
    }
    for (i, a) in edits.iter().enumerate() {
        for b in &edits[i + 1..] {
            if a.file == b.file && overlaps(a, b) {
                return Err(StateError::Overlap {
                    first: a.id.clone(),
                    second: b.id.clone(),
                    file: a.file.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Sequential byte edits as whole-line edits, each in the lines of the text left by
/// the edits before it. Lines the edit leaves as they were (above and below the
/// change) are trimmed, so typing a new line is an insertion, not a replacement of
/// the line the cursor was on.
fn sequential_line_edits(
    trajectory: &Trajectory,
    files: &BTreeMap<String, Vec<String>>,
) -> Result<Vec<GoldEdit>, StateError> {
    let mut texts: BTreeMap<&str, String> = files
        .iter()
        .map(|(path, lines)| (path.as_str(), lines.concat()))
        .collect();
    let mut out = Vec::with_capacity(trajectory.edits.len());
    for edit in &trajectory.edits {
        let text = texts
            .get_mut(edit.file.as_str())
            .expect("checked by the caller");
        let start = edit.start_byte.expect("sequential edits have start_byte");
        let end = start + edit.before_text.len();
        if text.get(start..end) != Some(edit.before_text.as_str()) {
            return Err(StateError::BeforeMismatch {
                edit: edit.id.clone(),
                file: edit.file.clone(),
                line: text
                    .get(..start.min(text.len()))
                    .map_or(0, |t| t.matches('\n').count()),
            });
        }
        // Whole lines around the change: from the start of its first line to the end
        // of the line its end is on.
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        let first_line = text[..line_start].matches('\n').count();
        let mut before = split_lines(&text[line_start..line_end]);
        let after_text = format!(
            "{}{}{}",
            &text[line_start..start],
            edit.after_text,
            &text[end..line_end]
        );
        let mut after = split_lines(&after_text);
        text.replace_range(start..end, &edit.after_text);
        let common_prefix = before
            .iter()
            .zip(&after)
            .take_while(|(b, a)| b == a)
            .count();
        before.drain(..common_prefix);
        after.drain(..common_prefix);
        let common_suffix = before
            .iter()
            .rev()
            .zip(after.iter().rev())
            .take_while(|(b, a)| b == a)
            .count();
        before.truncate(before.len() - common_suffix);
        after.truncate(after.len() - common_suffix);
        out.push(GoldEdit {
            id: edit.id.clone(),
            file: edit.file.clone(),
            base_start: first_line + common_prefix,
            before,
            after,
        });
    }
    Ok(out)
}

/// Whether two edits of one file overlap ([`overlaps`]), found by one sweep over the
/// edits sorted by file, start and end: an edit overlaps an earlier one exactly when an
/// earlier replacement ends after it starts, or (an insertion) the edit just before it
/// is an insertion at the same line.
fn any_overlap(edits: &[GoldEdit]) -> bool {
    let mut spans: Vec<(&str, usize, usize)> = edits
        .iter()
        .map(|e| (e.file.as_str(), e.base_start, e.base_start + e.before.len()))
        .collect();
    spans.sort_unstable();
    let mut previous: Option<(&str, usize, usize)> = None;
    // The furthest end of the replacements (non-empty ranges) seen so far in this file.
    let mut reach = 0;
    for &(file, start, end) in &spans {
        match previous {
            Some((f, s, e)) if f == file => {
                let insertion_twice = start == end && s == start && e == start;
                if reach > start || insertion_twice {
                    return true;
                }
            }
            _ => reach = 0,
        }
        if end > start {
            reach = reach.max(end);
        }
        previous = Some((file, start, end));
    }
    false
}

fn overlaps(a: &GoldEdit, b: &GoldEdit) -> bool {
    let (a0, a1) = (a.base_start, a.base_start + a.before.len());
    let (b0, b1) = (b.base_start, b.base_start + b.before.len());
    if a0 == a1 && b0 == b1 {
        return a0 == b0;
    }
    a0 < b1 && b0 < a1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{FileEntry, SessionInfo, SessionKind};

    fn edit(id: &str, start: usize, before: &str, after: &str) -> Edit {
        Edit::lines(id, "a.py", start, before, after)
    }

    fn trajectory(base: &str, edits: Vec<Edit>) -> Trajectory {
        let mut t = Trajectory::new(SessionInfo::new("t", SessionKind::Commit));
        t.files.push(FileEntry::new("a.py", Some(base.into())));
        t.edits = edits;
        t
    }

    #[test]
    fn any_order_reaches_the_same_text_and_tracks_positions() {
        let base = "l0\nl1\nl2\nl3\nl4\nl5";
        let edits = vec![
            edit("e0", 0, "", "new0\nnew0b\n"),
            edit("e1", 1, "l1\n", ""),
            edit("e2", 3, "l3\n", "L3\nL3b\nL3c\n"),
            edit("e3", 5, "l5", "l5 end\n"),
        ];
        let t = trajectory(base, edits);
        let want = "new0\nnew0b\nl0\nl2\nL3\nL3b\nL3c\nl4\nl5 end\n";
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let mut state = ReplayState::new(&t).unwrap();
            for idx in order {
                state.apply(idx);
            }
            assert_eq!(state.text("a.py").unwrap(), want, "order {order:?}");
        }
        let mut state = ReplayState::new(&t).unwrap();
        state.apply(2);
        assert_eq!(state.current_range(2), (3, 6));
        assert_eq!(state.current_range(3), (7, 8));
        state.apply(0);
        assert_eq!(state.current_range(1), (3, 4));
        assert_eq!(state.current_range(3), (9, 10));
        assert_eq!(state.remaining(), vec![1, 3]);
    }

    /// A recorded trajectory of `a.py` from user changes `(t_ms, start, end, new text)`.
    fn recorded(base: &str, changes: &[(f64, usize, usize, &str)]) -> (Trajectory, String) {
        let changes: Vec<_> = changes
            .iter()
            .map(|&(t, s, e, after)| (t, s, e, after, Default::default()))
            .collect();
        crate::core::trajectory::recorded_for_tests::recorded(base, &changes)
    }

    #[test]
    fn sequential_edits_rewrite_earlier_ones_and_wait_for_them() {
        // e0 types a new line 1, e1 fixes a typo in it, e2 edits line 0, e3 undoes e1.
        let base = "def f(x):\n    return x\n";
        let (t, want) = recorded(
            base,
            &[
                (0.0, 10, 10, "    y = x\n"),
                (3000.0, 18, 19, "z"),
                (6000.0, 4, 5, "g"),
                (9000.0, 18, 19, "x"),
            ],
        );
        let mut state = ReplayState::new(&t).unwrap();
        assert!(state.is_sequential());
        let shapes: Vec<(usize, Vec<String>, Vec<String>)> = state
            .edits()
            .iter()
            .map(|e| (e.base_start, e.before.clone(), e.after.clone()))
            .collect();
        assert_eq!(
            shapes,
            vec![
                (1, vec![], vec!["    y = x\n".into()]),
                (1, vec!["    y = x\n".into()], vec!["    y = z\n".into()]),
                (0, vec!["def f(x):\n".into()], vec!["def g(x):\n".into()]),
                (1, vec!["    y = z\n".into()], vec!["    y = x\n".into()]),
            ]
        );
        assert_eq!(
            (0..4).map(|i| state.needs(i).to_vec()).collect::<Vec<_>>(),
            vec![vec![], vec![0], vec![], vec![1]]
        );
        // Out of the recorded order: the rename first, then the rest.
        state.apply(2);
        assert_eq!(state.text("a.py").unwrap(), "def g(x):\n    return x\n");
        assert!(!state.is_ready(1) && state.is_ready(0));
        assert_eq!(state.current_range(0), (1, 1));
        state.apply(0);
        assert_eq!(state.current_range(1), (1, 2));
        state.apply(1);
        state.apply(3);
        assert_eq!(state.text("a.py").unwrap(), want);
        assert_eq!(want, "def g(x):\n    y = x\n    return x\n");
    }

    #[test]
    fn sequential_edits_reach_the_recorded_text_in_any_ready_order() {
        let mut rng = 0xACE_u64;
        let mut next = |n: usize| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((rng >> 33) as usize) % n.max(1)
        };
        for session in 0..300 {
            let base = "a\nbb\nccc\ndddd\n";
            let mut doc = base.to_string();
            let mut changes = Vec::new();
            let mut t = 0.0;
            for _ in 0..25 {
                t += [50.0, 3000.0][next(2)];
                let s = next(doc.len() + 1);
                let e = (s + [0, 1, 2, 4][next(4)]).min(doc.len());
                let after = ["", "x", "\n", "y\nz", "\n\n"][next(5)];
                doc.replace_range(s..e, after);
                changes.push((t, s, e, after));
            }
            let (trajectory, want) = recorded(base, &changes);
            assert_eq!(want, doc);
            let mut state = ReplayState::new(&trajectory).unwrap();
            while !state.remaining().is_empty() {
                let ready: Vec<usize> = state
                    .remaining()
                    .into_iter()
                    .filter(|&i| state.is_ready(i))
                    .collect();
                let pick = ready[next(ready.len())];
                let (start, end) = state.current_range(pick);
                assert_eq!(
                    state.lines("a.py").unwrap()[start..end],
                    state.edits()[pick].before[..],
                    "session {session}"
                );
                state.apply(pick);
            }
            assert_eq!(state.text("a.py").unwrap(), want, "session {session}");
        }
    }

    #[test]
    fn the_overlap_sweep_agrees_with_every_pair() {
        let mut rng = 0x5EED_u64;
        let mut next = |n: usize| {
            rng = rng
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((rng >> 33) as usize) % n
        };
        let (mut found, mut clear) = (0, 0);
        for _ in 0..2000 {
            // A few edits in two files: insertions, one-line and longer replacements.
            let edits: Vec<GoldEdit> = (0..next(6) + 1)
                .map(|i| GoldEdit {
                    id: format!("e{i}"),
                    file: ["a.py", "b.py"][next(2)].into(),
                    base_start: next(8),
                    before: vec!["x\n".into(); [0, 0, 1, 1, 2, 3][next(6)]],
                    after: vec![],
                })
                .collect();
            let pairwise = edits.iter().enumerate().any(|(i, a)| {
                edits[i + 1..]
                    .iter()
                    .any(|b| a.file == b.file && overlaps(a, b))
            });
            assert_eq!(any_overlap(&edits), pairwise, "{edits:?}");
            if pairwise { found += 1 } else { clear += 1 }
        }
        // Both answers were exercised.
        assert!(
            found > 100 && clear > 100,
            "{found} overlapping, {clear} not"
        );
    }

    #[test]
    fn bad_trajectories_are_refused() {
        let t = trajectory("a\nb\n", vec![edit("e0", 1, "x\n", "y\n")]);
        assert_eq!(
            ReplayState::new(&t).unwrap_err(),
            StateError::BeforeMismatch {
                edit: "e0".into(),
                file: "a.py".into(),
                line: 1
            }
        );
        let t = trajectory(
            "a\nb\n",
            vec![edit("e0", 0, "a\nb\n", ""), edit("e1", 1, "b\n", "c\n")],
        );
        assert!(matches!(
            ReplayState::new(&t).unwrap_err(),
            StateError::Overlap { .. }
        ));
    }
}
