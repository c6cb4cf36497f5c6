//! The per-step drill-down of a run (the HTML report's `<details>`): every stored step
//! re-applied over its trajectory ([`crate::engine::replay::reapply`]), so the gold edit and
//! each prediction show as a line diff against the lines they replace in the state the
//! step was asked in. Reads the store only through [`RunRead`]; no I/O of its own.

use similar::{ChangeTag, TextDiff};

use super::{RunError, RunRead, RunSettings};
use crate::core::metrics::flow::FlowClass;
use crate::core::trajectory::{EditIndex, Trajectory};
use crate::engine::replay::reapply;
use crate::engine::replay::state::ReplayState;
use crate::store::{StepDetail, StoredPrediction};

/// Unchanged lines shown above and below a diff.
const CONTEXT_LINES: usize = 2;

/// The steps of one trajectory of a run, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectorySteps {
    /// The trajectory's key.
    pub key: String,
    /// Its steps, in order.
    pub steps: Vec<StepView>,
    /// Why the diffs are missing, when the stored steps could not be re-applied.
    pub note: Option<String>,
}

/// One step: its scores, the gold edit and the predictions, as diffs.
#[derive(Debug, Clone, PartialEq)]
pub struct StepView {
    /// Step number.
    pub step: usize,
    /// The step's precision.
    pub precision: f64,
    /// The step's recall.
    pub recall: f64,
    /// BLEU-4 of the step's content, if scored.
    pub bleu: Option<f64>,
    /// ES of the step's content, if scored.
    pub es: Option<f64>,
    /// The right answer the content was scored against (0 the gold edit itself, `k`
    /// its `k`-th alternative), if scored and stored (schema v13).
    pub answer: Option<usize>,
    /// The gold edit applied at the end of the step.
    pub gold: GoldView,
    /// The ranked predictions, best first.
    pub predictions: Vec<PredictionView>,
    /// Failed calls, `call kind: message`.
    pub failures: Vec<String>,
}

/// The gold edit of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldView {
    /// Its edit id.
    pub edit: String,
    /// Its diff in the step's state; `None` when it could not be placed.
    pub diff: Option<LineDiff>,
}

/// One prediction of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictionView {
    /// Rank (0 = best).
    pub rank: usize,
    /// Its flow class.
    pub class: FlowClass,
    /// The gold edit it matched.
    pub matched: Option<String>,
    /// What it does to the step's state.
    pub diff: LineDiff,
}

/// Lines `start_line..end_line` of `file` (0-based, in the step's state) replaced:
/// a few unchanged lines around, the removed and the added lines.
#[derive(Debug, Clone, PartialEq)]
pub struct LineDiff {
    /// The file.
    pub file: String,
    /// First replaced line.
    pub start_line: usize,
    /// End of the replaced lines (exclusive).
    pub end_line: usize,
    /// Whether the file exists in the step's state (else the diff shows only the new
    /// lines, at the place the answer named).
    pub in_state: bool,
    /// The diff, top to bottom.
    pub lines: Vec<DiffLine>,
}

/// One line of a [`LineDiff`] (with its line break, if it had one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffLine {
    /// Unchanged.
    Same(String),
    /// In the state, not after the change.
    Removed(String),
    /// After the change, not in the state.
    Added(String),
}

/// The drill-down of every trajectory of `run` that has stored steps.
pub fn run_steps(store: &dyn RunRead, run: i64) -> Result<Vec<TrajectorySteps>, RunError> {
    let settings = RunSettings::of(store, run)?;
    let mut out = Vec::new();
    for t in store.run_trajectories(run)? {
        let details = store.run_step_details(run, &t.key)?;
        if details.is_empty() {
            continue;
        }
        let trajectory = t.text.as_deref().map(serde_json::from_str::<Trajectory>);
        let initial = store.run_initial(run, &t.key)?;
        out.push(match (trajectory, initial) {
            (Some(Ok(trajectory)), Some(initial)) => {
                trajectory_steps(&t.key, &trajectory, &settings, &initial, &details)
            }
            (Some(Err(e)), _) => without_states(&t.key, &details, format!("not a trajectory: {e}")),
            _ => without_states(&t.key, &details, "the run stored no trajectory".into()),
        });
    }
    Ok(out)
}

/// A trajectory's steps, each diffed in the state it was asked in.
pub fn trajectory_steps(
    key: &str,
    trajectory: &Trajectory,
    settings: &RunSettings,
    initial: &str,
    details: &[StepDetail],
) -> TrajectorySteps {
    let indices = trajectory.edit_indices();
    let ids = std::iter::once(initial).chain(details.iter().map(|d| d.applied.as_str()));
    let order: Option<Vec<EditIndex>> = ids.map(|id| indices.get(id).copied()).collect();
    let Some(order) = order else {
        return without_states(key, details, "a stored step names an unknown edit".into());
    };
    let mut steps = Vec::new();
    // The callback sees the state after the k-th stored edit: the one step k + 1 (the
    // k-th detail) was asked in.
    let replayed = reapply(trajectory, &settings.exclude_origin, &order, |k, state| {
        if let Some(detail) = details.get(k) {
            steps.push(step_view(detail, Some((trajectory, order[k + 1], state))));
        }
    });
    match replayed {
        Ok(_) => TrajectorySteps {
            key: key.to_string(),
            steps,
            note: None,
        },
        Err(e) => without_states(key, details, e.to_string()),
    }
}

/// The steps without their states: predictions as added lines only.
fn without_states(key: &str, details: &[StepDetail], note: String) -> TrajectorySteps {
    TrajectorySteps {
        key: key.to_string(),
        steps: details.iter().map(|d| step_view(d, None)).collect(),
        note: Some(note),
    }
}

fn step_view(
    detail: &StepDetail,
    state: Option<(&Trajectory, EditIndex, &ReplayState)>,
) -> StepView {
    let current = state.map(|(_, _, s)| s);
    let diff = |file: &str, start, end, new: &str| match lines_of(current, file) {
        Some(lines) => line_diff(file, lines, start, end, new),
        None => LineDiff {
            in_state: false,
            ..line_diff(file, &[], 0, 0, new)
        }
        .placed(start, end),
    };
    let gold = state.map(|(trajectory, idx, s)| {
        let edit = trajectory.edit(idx);
        let (start, end) = s.current_range(idx.0);
        diff(&edit.file, start, end, &edit.after_text)
    });
    let prediction = |p: &StoredPrediction| PredictionView {
        rank: p.rank,
        class: p.class,
        matched: p.matched.clone(),
        diff: diff(&p.file, p.start_line, p.end_line, &p.text),
    };
    StepView {
        step: detail.step,
        precision: detail.prf.precision,
        recall: detail.prf.recall,
        bleu: detail.content.as_ref().map(|c| c.bleu),
        es: detail.content.as_ref().map(|c| c.es),
        answer: detail.content.as_ref().and_then(|c| c.answer),
        gold: GoldView {
            edit: detail.applied.clone(),
            diff: gold,
        },
        predictions: detail.predictions.iter().map(prediction).collect(),
        failures: detail.failures.clone(),
    }
}

/// A file's lines in a state; `None` without a state or for a file it lacks.
fn lines_of<'a>(state: Option<&'a ReplayState>, file: &str) -> Option<&'a [String]> {
    state.and_then(|s| s.lines(file))
}

impl LineDiff {
    /// The same diff at the place an answer named.
    fn placed(self, start_line: usize, end_line: usize) -> LineDiff {
        LineDiff {
            start_line,
            end_line: end_line.max(start_line),
            ..self
        }
    }
}

/// `lines[start..end]` of `file` replaced by `new`, as a line diff with a few unchanged
/// lines around (ranges past the end of the file are cut to it).
pub fn line_diff(file: &str, lines: &[String], start: usize, end: usize, new: &str) -> LineDiff {
    let (start, end) = (
        start.min(lines.len()),
        end.min(lines.len()).max(start.min(lines.len())),
    );
    let old: String = lines[start..end].concat();
    let mut out: Vec<DiffLine> = lines[start.saturating_sub(CONTEXT_LINES)..start]
        .iter()
        .map(|l| DiffLine::Same(l.clone()))
        .collect();
    for change in TextDiff::from_lines(&old, new).iter_all_changes() {
        let text = change.value().to_string();
        out.push(match change.tag() {
            ChangeTag::Equal => DiffLine::Same(text),
            ChangeTag::Delete => DiffLine::Removed(text),
            ChangeTag::Insert => DiffLine::Added(text),
        });
    }
    let after = (end + CONTEXT_LINES).min(lines.len());
    out.extend(lines[end..after].iter().map(|l| DiffLine::Same(l.clone())));
    LineDiff {
        file: file.to_string(),
        start_line: start,
        end_line: end,
        in_state: true,
        lines: out,
    }
}

#[cfg(test)]
mod tests {
    use super::{DiffLine, line_diff};

    #[test]
    fn a_replacement_shows_its_context_and_both_sides() {
        let lines: Vec<String> = ["a\n", "b\n", "c\n", "d\n", "e\n", "f\n"]
            .map(String::from)
            .to_vec();
        let d = line_diff("x.py", &lines, 2, 4, "c\nD\n");
        use DiffLine::*;
        assert_eq!(
            d.lines,
            vec![
                Same("a\n".into()),
                Same("b\n".into()),
                Same("c\n".into()),
                Removed("d\n".into()),
                Added("D\n".into()),
                Same("e\n".into()),
                Same("f\n".into()),
            ]
        );
        assert_eq!((d.start_line, d.end_line), (2, 4));
    }

    #[test]
    fn a_range_past_the_end_is_cut_to_the_file() {
        let lines: Vec<String> = vec!["a\n".into()];
        let d = line_diff("x.py", &lines, 5, 9, "z\n");
        assert_eq!((d.start_line, d.end_line), (1, 1));
        assert_eq!(
            d.lines,
            vec![DiffLine::Same("a\n".into()), DiffLine::Added("z\n".into())]
        );
    }
}
