//! The right answers of a gold edit at a step: the edit itself, then its alternatives
//! (`gold.alternatives`, Zed's expected patch alternatives), each as the lines it
//! replaces in the current text and the lines it writes there.
//!
//! A prediction matching any answer is a hit; a step's content is scored against the
//! *closest* answer: the best delta-chrF, ties to the earlier (so the edit itself wins
//! a tie). An edit without alternatives has one answer, and every score is what it was
//! before alternatives existed. An alternative is an answer only at a step where its
//! before-text is at its lines (it is stated in the text every other edit leaves).

use super::state::{ReplayState, split_lines};
use crate::core::metrics::yardsticks::delta_chrf::delta_chrf;
use crate::core::trajectory::Trajectory;

/// One right answer in the current text.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Which answer: 0 the gold edit itself, `k` its `k`-th alternative as stated (in
    /// the gold's order of that edit's alternatives, from 1).
    pub index: usize,
    /// The file.
    pub file: String,
    /// First replaced line (current coordinates).
    pub start: usize,
    /// End of the replaced lines (exclusive).
    pub end: usize,
    /// The replaced text.
    pub before: String,
    /// The text written in their place.
    pub after: String,
}

impl Answer {
    /// Answer 0 of gold edit `gold`: the edit itself, at its lines now.
    pub fn of_edit(state: &ReplayState, gold: usize) -> Answer {
        let edit = &state.edits()[gold];
        let (start, end) = state.current_range(gold);
        Answer {
            index: 0,
            file: edit.file.clone(),
            start,
            end,
            before: edit.before_text(),
            after: edit.after_text(),
        }
    }
}

/// One alternative as stated: first line, replaced lines, new text.
#[derive(Debug, Clone)]
struct Stated {
    start: usize,
    before: Vec<String>,
    after: String,
}

/// Every gold edit's alternatives, by edit position.
#[derive(Debug, Clone, Default)]
pub struct Alternatives {
    by_edit: Vec<Vec<Stated>>,
}

impl Alternatives {
    /// The alternatives `trajectory`'s gold states (those of unknown edits left out).
    pub fn new(trajectory: &Trajectory) -> Alternatives {
        let mut by_edit = vec![Vec::new(); trajectory.edits.len()];
        for alternative in &trajectory.gold.alternatives {
            if let Some(i) = trajectory.edit_index(&alternative.of) {
                by_edit[i.0].push(Stated {
                    start: alternative.start_line,
                    before: split_lines(&alternative.before_text),
                    after: alternative.after_text.clone(),
                });
            }
        }
        Alternatives { by_edit }
    }

    /// Whether gold edit `gold` has alternatives.
    pub fn has(&self, gold: usize) -> bool {
        self.by_edit.get(gold).is_some_and(|a| !a.is_empty())
    }

    /// The answers of gold edit `gold` now: the edit itself, then each alternative
    /// whose before-text is at its lines.
    pub fn answers(&self, state: &ReplayState, gold: usize) -> Vec<Answer> {
        let edit = &state.edits()[gold];
        let mut answers = vec![Answer::of_edit(state, gold)];
        let lines = state.lines(&edit.file).unwrap_or_default();
        for (k, stated) in self.by_edit.get(gold).into_iter().flatten().enumerate() {
            let end = stated.start + stated.before.len();
            if lines.get(stated.start..end) == Some(&stated.before[..]) {
                answers.push(Answer {
                    index: k + 1,
                    file: edit.file.clone(),
                    start: stated.start,
                    end,
                    before: stated.before.concat(),
                    after: stated.after.clone(),
                });
            }
        }
        answers
    }
}

/// The file with `text` written in place of `answer`'s lines, and with the answer
/// itself there, both from the current file (`None` when the file is gone).
pub fn texts_at(
    state: &ReplayState,
    answer: &Answer,
    text: &str,
) -> Option<(String, String, String)> {
    let lines = state.lines(&answer.file)?;
    let (head, tail) = (lines[..answer.start].concat(), lines[answer.end..].concat());
    let original = lines.concat();
    let truth = format!("{head}{}{tail}", answer.after);
    let output = format!("{head}{text}{tail}");
    Some((original, truth, output))
}

/// The position in `answers` of the one closest to `text`: the best delta-chrF of
/// the text written in place of each answer's lines, ties to the earlier; 0 when
/// there is one answer (nothing is computed then).
pub fn closest(state: &ReplayState, answers: &[Answer], text: &str) -> usize {
    if answers.len() < 2 {
        return 0;
    }
    let mut best = (0, f64::NEG_INFINITY);
    for (i, answer) in answers.iter().enumerate() {
        let Some((original, truth, output)) = texts_at(state, answer, text) else {
            continue;
        };
        let score = delta_chrf(&original, &truth, &output);
        if score > best.1 {
            best = (i, score);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{Alternative, Edit, FileEntry, SessionInfo, SessionKind};

    fn trajectory(alternatives: &[(usize, &str, &str)]) -> Trajectory {
        let mut t = Trajectory::new(SessionInfo::new("t", SessionKind::Imported));
        t.files = vec![FileEntry::new("a.py", Some("a\nb\nc\nd\n".into()))];
        t.edits = vec![Edit::lines("e0", "a.py", 1, "b\n", "B\n")];
        t.gold.alternatives = (alternatives.iter())
            .map(|&(start_line, before, after)| Alternative {
                of: "e0".into(),
                start_line,
                before_text: before.into(),
                after_text: after.into(),
            })
            .collect();
        t
    }

    #[test]
    fn answers_are_the_edit_then_the_alternatives_in_place_and_the_closest_wins() {
        let t = trajectory(&[(1, "b\nc\n", "B\nC\n"), (2, "x\n", "y\n")]);
        let state = ReplayState::new(&t).unwrap();
        let alternatives = Alternatives::new(&t);
        assert!(alternatives.has(0));
        let answers = alternatives.answers(&state, 0);
        // The second alternative's lines are not `x`: not an answer here.
        let places: Vec<(usize, usize, usize, &str)> = (answers.iter())
            .map(|a| (a.index, a.start, a.end, a.after.as_str()))
            .collect();
        assert_eq!(places, [(0, 1, 2, "B\n"), (1, 1, 3, "B\nC\n")]);
        // The second alternative in place, the first not: it keeps its number.
        let t = trajectory(&[(2, "x\n", "y\n"), (1, "b\nc\n", "B\nC\n")]);
        let answers = Alternatives::new(&t).answers(&state, 0);
        assert_eq!((answers.len(), answers[1].index), (2, 2));
        assert_eq!(closest(&state, &answers, "B\n"), 0);
        assert_eq!(closest(&state, &answers, "B\nC\n"), 1);
        // Two answers alike: a tie, the earlier wins.
        let twice = [answers[1].clone(), answers[1].clone()];
        assert_eq!(closest(&state, &twice, "B\nC\n"), 0);
        let plain = trajectory(&[]);
        assert!(!Alternatives::new(&plain).has(0));
    }
}
