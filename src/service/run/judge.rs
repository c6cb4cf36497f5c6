//! A run's judge columns (`replay --judge`), as `nextedit report` shows them: how many
//! steps the judge was asked about, how many answers were read and how many failed (by
//! kind), and, over the read ones, the share judged yes (`nep`) or the share judged to
//! revert the programmer's edits and the mean confidence (`zed-qa`). Per-step verdicts
//! come from the store (`run_step_judgements`).

use serde::Serialize;

use super::{RunError, RunRead, RunSettings};
use crate::core::metrics::statistics::mean;
use crate::engine::judge::Verdict;
use crate::engine::suggest::Call;
use crate::store::CallTally;

/// What the judge said over a run's steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeSummary {
    /// The judge's spec, as stored (masked).
    pub judge: String,
    /// The question asked (`nep`, `zed-qa`).
    pub prompt: &'static str,
    /// How the answers were asked to be shaped (`text`, `json-schema`, `llama-json`).
    pub format: &'static str,
    /// Steps the judge was asked about.
    pub asked: usize,
    /// Answers read (a verdict).
    pub judged: usize,
    /// Questions with no verdict (a refusal, garbage, an HTTP error, a time-out).
    pub failed: usize,
    /// The failures by kind (`bad_result`, `timeout`, …), sorted by kind.
    pub failures: Vec<(String, usize)>,
    /// Answers served from the response cache.
    pub cached: usize,
    /// `nep`: share of the read answers that said yes.
    pub yes_share: Option<f64>,
    /// `zed-qa`: share of the read answers that said the prediction reverts edits.
    pub reverting_share: Option<f64>,
    /// `zed-qa`: mean confidence (1–5) of the read answers.
    pub mean_confidence: Option<f64>,
}

impl JudgeSummary {
    /// The judge columns of run `run` (over the steps `store` holds); `None` for a run
    /// without a judge.
    pub fn of(store: &dyn RunRead, run: i64) -> Result<Option<JudgeSummary>, RunError> {
        let settings = RunSettings::of(store, run)?;
        let Some(judge) = settings.judge else {
            return Ok(None);
        };
        let rows = store.run_step_judgements(run)?;
        let verdicts: Vec<Verdict> = rows
            .iter()
            .filter_map(|(_, _, j)| j.result.as_ref().ok().copied())
            .collect();
        let mut failures: Vec<(String, usize)> = Vec::new();
        for failure in rows.iter().filter_map(|(_, _, j)| j.result.as_ref().err()) {
            let kind = failure.kind.key();
            match failures.iter_mut().find(|(k, _)| k == kind) {
                Some((_, n)) => *n += 1,
                None => failures.push((kind.to_string(), 1)),
            }
        }
        failures.sort();
        let share = |flags: Vec<bool>| mean(flags.into_iter().map(f64::from));
        Ok(Some(JudgeSummary {
            judge,
            prompt: settings.judge_prompt.key(),
            format: settings.judge_format.key(),
            asked: rows.len(),
            judged: verdicts.len(),
            failed: rows.len() - verdicts.len(),
            failures,
            cached: rows.iter().filter(|(_, _, j)| j.cached).count(),
            yes_share: share(
                verdicts
                    .iter()
                    .filter_map(|v| match v {
                        Verdict::Nep { yes } => Some(*yes),
                        Verdict::ZedQa { .. } => None,
                    })
                    .collect(),
            ),
            reverting_share: share(
                verdicts
                    .iter()
                    .filter_map(|v| match v {
                        Verdict::ZedQa { reverts_edits, .. } => Some(*reverts_edits),
                        Verdict::Nep { .. } => None,
                    })
                    .collect(),
            ),
            mean_confidence: mean(verdicts.iter().filter_map(|v| match v {
                Verdict::ZedQa { confidence, .. } => Some(f64::from(*confidence)),
                Verdict::Nep { .. } => None,
            })),
        }))
    }

    /// The judge's questions as a tally of calls, for the run's verdict.
    pub fn tally(&self) -> CallTally {
        CallTally {
            call: Call::Judge,
            made: self.asked,
            failed: self.failed,
            kinds: self.failures.clone(),
        }
    }
}
