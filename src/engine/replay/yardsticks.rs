//! The field's other yardsticks of one replay step (issue 31): Zed's delta-chrF and the
//! Next Edit Prediction benchmark's partial and position matches of the step's content,
//! computed on the whole file, and whether the best-ranked prediction lands where an edit
//! allowed next is (NES's location accuracy).

use super::answers::{Alternatives, Answer, texts_at};
use super::matching::{Located, location_score};
use super::state::ReplayState;
use crate::core::metrics::yardsticks::{delta_chrf::delta_chrf, nep::nep_match};
use crate::engine::suggest::protocol::SuggestedEdit;

/// The yardsticks of one step; `None` where the step has nothing to measure.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StepYardsticks {
    /// delta-chrF (0–100) of the content: the file with it in place of the gold edit's
    /// lines, against the file with the gold edit applied, both from the current file.
    pub delta_chrf: Option<f64>,
    /// NEP partial match of the same texts (`None` also when the gold edit only
    /// changes blank lines, where NEP's evaluator has no answer).
    pub nep_partial: Option<bool>,
    /// NEP position match of the same texts.
    pub nep_position: Option<bool>,
    /// Whether the best-ranked prediction is at the location of an edit allowed next
    /// (the replay's location test); `None` on a step with no allowed edit.
    pub location_hit: Option<bool>,
}

impl StepYardsticks {
    /// The yardsticks of a step before its next edit is applied: where its best-ranked
    /// prediction `top` is against the `allowed` gold edits (or any of their
    /// `alternatives`), and its `content` (the answer scored against and the text), if any.
    pub fn of(
        state: &ReplayState,
        top: Option<&SuggestedEdit>,
        allowed: &[usize],
        alternatives: &Alternatives,
        content: Option<(&Answer, &str)>,
    ) -> StepYardsticks {
        // Only the place of a prediction decides its location: its texts stay empty.
        let top = top.map(|edit| Located {
            file: &edit.file,
            start: edit.start_line,
            end: edit.end_line,
            before: "",
            after: "",
        });
        let yardsticks = StepYardsticks {
            location_hit: location_hit(state, top.as_ref(), allowed, alternatives),
            ..StepYardsticks::default()
        };
        match content {
            Some((gold, text)) => yardsticks.with_content(state, gold, text),
            None => yardsticks,
        }
    }

    /// The content yardsticks of `text` written in place of `answer`'s current lines.
    fn with_content(self, state: &ReplayState, answer: &Answer, text: &str) -> StepYardsticks {
        let Some((original, truth, output)) = texts_at(state, answer, text) else {
            return self;
        };
        let nep = nep_match(&original, &truth, &output);
        StepYardsticks {
            delta_chrf: Some(delta_chrf(&original, &truth, &output)),
            nep_partial: nep.partial,
            nep_position: nep.position,
            ..self
        }
    }
}

/// Whether `top` (the best-ranked prediction, if any) is at the location of one of the
/// `allowed` gold edits or of one of their alternatives; `None` when none is allowed.
fn location_hit(
    state: &ReplayState,
    top: Option<&Located<'_>>,
    allowed: &[usize],
    alternatives: &Alternatives,
) -> Option<bool> {
    if allowed.is_empty() {
        return None;
    }
    Some(top.is_some_and(|top| {
        allowed.iter().any(|&g| {
            let (start, end) = state.current_range(g);
            let gold = Located {
                file: &state.edits()[g].file,
                start,
                end,
                before: "",
                after: "",
            };
            location_score(top, &gold) > 0.0
                || (alternatives.has(g)
                    && alternatives.answers(state, g).iter().any(|answer| {
                        let at = Located {
                            file: &answer.file,
                            start: answer.start,
                            end: answer.end,
                            before: "",
                            after: "",
                        };
                        location_score(top, &at) > 0.0
                    }))
        })
    }))
}
