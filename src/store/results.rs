//! Replay results read back whole, one row per stored step, for `nextedit export
//! results`: the step's figures, its yardsticks, the judge's verdict and its ranked
//! predictions, in run, trajectory and step order.

use std::collections::HashMap;

use rusqlite::params;

use super::run_read::{answer_at, yardsticks_at};
use super::{Database, StoreError};
use crate::engine::judge::Judgement;
use crate::engine::replay::yardsticks::StepYardsticks;

/// One stored step of a run with its predictions.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultStep {
    /// The trajectory's key within the run.
    pub key: String,
    /// Step number.
    pub step: i64,
    /// Edit id applied at the end of the step.
    pub applied: String,
    /// How many edits were allowed next.
    pub allowed: i64,
    /// Edits not applied before the step.
    pub remaining: i64,
    /// Precision, recall and F1 of the step.
    pub prf: (f64, f64, f64),
    /// Historian's tp, fp and fn of the step.
    pub counts: (i64, i64, i64),
    /// BLEU-4 (0–100) of the step's content, when it has one.
    pub content_bleu: Option<f64>,
    /// ES-Line (0–1) of the step's content, when it has one.
    pub content_es: Option<f64>,
    /// The right answer the content was scored against (0 the gold edit, `k` its
    /// `k`-th alternative), when it has content stored since schema v13.
    pub content_answer: Option<usize>,
    /// delta-chrF, NEP matches and location hit (`run_step_yardsticks`).
    pub yardsticks: StepYardsticks,
    /// What the judge said (`run_step_judgements`; `None`: not asked).
    pub judgement: Option<Judgement>,
    /// `suggest` latency, ms.
    pub suggest_ms: f64,
    /// `generate` latency, ms, when it was called.
    pub generate_ms: Option<f64>,
    /// The ranked predictions.
    pub predictions: Vec<ResultPrediction>,
}

/// One prediction of a step, as stored.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ResultPrediction {
    /// Rank (0 = best).
    pub rank: i64,
    /// File.
    pub file: String,
    /// First line (0-based).
    pub start_line: i64,
    /// End line (exclusive).
    pub end_line: i64,
    /// Proposed text.
    pub text: String,
    /// Confidence, when given.
    pub confidence: Option<f64>,
    /// Edit id it matched.
    pub matched: Option<String>,
    /// Flow class key (`flow_keeping`, …).
    pub class: String,
}

/// Replay results read back whole for `nextedit export results`.
pub trait RunResults {
    /// Every stored step of `run`, in trajectory position and step order.
    fn result_steps(&self, run: i64) -> Result<Vec<ResultStep>, StoreError>;
}

impl RunResults for Database {
    fn result_steps(&self, run: i64) -> Result<Vec<ResultStep>, StoreError> {
        let judgement_columns: Vec<String> = (super::judgements::COLUMNS.split(", "))
            .map(|c| format!("j.{c}"))
            .collect();
        let mut steps = self.rows(
            // The count from `flow`: the `allowed` list names only the first ones.
            &format!("SELECT s.key, s.step, s.applied,
                    coalesce(CASE WHEN json_valid(s.flow) THEN json_extract(s.flow, '$.allowed') END,
                             json_array_length(s.allowed)), s.remaining,
                    s.precision, s.recall, s.f1, s.tp, s.fp, s.fn, s.content_bleu, s.content_es,
                    s.suggest_ms, s.generate_ms, s.content_answer,
                    y.delta_chrf, y.nep_partial, y.nep_position, y.location_hit, {}
               FROM run_steps s
               JOIN run_trajectories t ON t.run_id = s.run_id AND t.key = s.key
               LEFT JOIN run_step_yardsticks y ON y.run_id = s.run_id AND y.key = s.key AND y.step = s.step
               LEFT JOIN run_step_judgements j ON j.run_id = s.run_id AND j.key = s.key AND j.step = s.step
              WHERE s.run_id = ?1
              ORDER BY t.position, s.step",
                judgement_columns.join(", ")
            ),
            params![run],
            |row| {
                Ok(ResultStep {
                    key: row.get(0)?,
                    step: row.get(1)?,
                    applied: row.get(2)?,
                    allowed: row.get(3)?,
                    remaining: row.get(4)?,
                    prf: (row.get(5)?, row.get(6)?, row.get(7)?),
                    counts: (row.get(8)?, row.get(9)?, row.get(10)?),
                    content_bleu: row.get(11)?,
                    content_es: row.get(12)?,
                    suggest_ms: row.get(13)?,
                    generate_ms: row.get(14)?,
                    content_answer: answer_at(row, 15)?,
                    yardsticks: yardsticks_at(row, 16)?,
                    judgement: super::judgements::judgement_at(row, 20)?,
                    predictions: Vec::new(),
                })
            },
        )?;
        let predictions = self.rows(
            "SELECT key, step, rank, file, start_line, end_line, text, confidence, matched, class
               FROM run_predictions WHERE run_id = ?1 ORDER BY key, step, rank",
            params![run],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    ResultPrediction {
                        rank: row.get(2)?,
                        file: row.get(3)?,
                        start_line: row.get(4)?,
                        end_line: row.get(5)?,
                        text: row.get(6)?,
                        confidence: row.get(7)?,
                        matched: row.get(8)?,
                        class: row.get(9)?,
                    },
                ))
            },
        )?;
        let index: HashMap<(String, i64), usize> = steps
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.key.clone(), s.step), i))
            .collect();
        for (key, step, prediction) in predictions {
            if let Some(&i) = index.get(&(key, step)) {
                steps[i].predictions.push(prediction);
            }
        }
        Ok(steps)
    }
}
