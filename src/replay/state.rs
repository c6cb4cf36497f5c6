//! The state of a replay: every file as it is now (base + applied edits), and
//! where each gold edit sits in current coordinates.
//!
//! Gold edits come from a trajectory: non-overlapping line ranges of the base
//! ("parent") version of each file, with whole-line before/after texts. Applying
//! them in any order keeps the others' positions exact: an edit's current start is
//! its base start shifted by the line delta of every applied edit above it.

use std::collections::BTreeMap;

use crate::trajectory::{Edit, Trajectory};

/// A gold edit in a form replay can apply.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldEdit {
    /// Edit id from the trajectory.
    pub id: String,
    /// File path.
    pub file: String,
    /// First replaced line in the base version.
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

/// Current files and the positions of all gold edits.
#[derive(Debug, Clone)]
pub struct ReplayState {
    base: BTreeMap<String, Vec<String>>,
    files: BTreeMap<String, Vec<String>>,
    /// Files absent in the base version (created by an edit).
    absent: BTreeMap<String, bool>,
    edits: Vec<GoldEdit>,
    applied: Vec<bool>,
    order: Vec<usize>,
    /// Bumped each time an edit changes the file, so writers can skip unchanged files.
    versions: BTreeMap<String, u64>,
}

impl ReplayState {
    /// The start state of a trajectory; checks every edit against the base text.
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
        let edits: Vec<GoldEdit> = trajectory.edits.iter().map(GoldEdit::from_edit).collect();
        for edit in &edits {
            let Some(lines) = files.get(&edit.file) else {
                return Err(StateError::UnknownFile {
                    edit: edit.id.clone(),
                    file: edit.file.clone(),
                });
            };
            let end = edit.base_start + edit.before.len();
            if end > lines.len() || lines[edit.base_start..end] != edit.before[..] {
                return Err(StateError::BeforeMismatch {
                    edit: edit.id.clone(),
                    file: edit.file.clone(),
                    line: edit.base_start,
                });
            }
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
        let n = edits.len();
        Ok(ReplayState {
            base: files.clone(),
            files,
            absent,
            edits,
            applied: vec![false; n],
            order: Vec::new(),
            versions: BTreeMap::new(),
        })
    }

    /// All gold edits, by index.
    pub fn edits(&self) -> &[GoldEdit] {
        &self.edits
    }

    /// Whether edit `idx` was applied.
    pub fn is_applied(&self, idx: usize) -> bool {
        self.applied[idx]
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

    /// Where edit `idx` sits now: its before-lines if not applied, its after-lines if applied.
    pub fn current_range(&self, idx: usize) -> (usize, usize) {
        let edit = &self.edits[idx];
        let shift: isize = self
            .edits
            .iter()
            .enumerate()
            .filter(|(j, other)| {
                *j != idx && self.applied[*j] && other.file == edit.file && precedes(other, edit)
            })
            .map(|(_, other)| other.after.len() as isize - other.before.len() as isize)
            .sum();
        let start = (edit.base_start as isize + shift) as usize;
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
        let (start, end) = self.current_range(idx);
        let edit = &self.edits[idx];
        let lines = self.files.get_mut(&edit.file).expect("checked in new");
        debug_assert_eq!(lines[start..end], edit.before[..]);
        lines.splice(start..end, edit.after.iter().cloned());
        self.absent.insert(edit.file.clone(), false);
        self.applied[idx] = true;
        self.order.push(idx);
        *self.versions.entry(edit.file.clone()).or_default() += 1;
    }

    /// Lines of a file in the base version.
    pub fn base_lines(&self, file: &str) -> Option<&[String]> {
        self.base.get(file).map(Vec::as_slice)
    }

    /// Gold edits of a file in base order.
    pub fn edits_in(&self, file: &str) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.edits.len())
            .filter(|&i| self.edits[i].file == file)
            .collect();
        idx.sort_by(|&a, &b| {
            if precedes(&self.edits[a], &self.edits[b]) {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }
        });
        idx
    }

    /// How many edits have changed a file so far (0 for an untouched one).
    pub fn version(&self, file: &str) -> u64 {
        self.versions.get(file).copied().unwrap_or(0)
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

/// Whether `a` lies above `b` in the base version (so applying `a` shifts `b`).
/// Edits do not overlap (checked in [`ReplayState::new`]), so a smaller start means
/// `a` ends at or before `b` starts; at the same start only an insertion is above.
fn precedes(a: &GoldEdit, b: &GoldEdit) -> bool {
    a.base_start < b.base_start
        || (a.base_start == b.base_start && a.before.is_empty() && !b.before.is_empty())
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
    use crate::trajectory::{FileEntry, SessionInfo, SessionKind};

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
