//! Replay results read back whole, one row per stored step, for `nextedit export
//! results`: the step's figures and its ranked predictions, in run, trajectory and
//! step order.

use std::collections::HashMap;

use rusqlite::params;

use super::{Database, StoreError};

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
        let mut steps = self.rows(
            // The count from `flow`: the `allowed` list names only the first ones.
            "SELECT s.key, s.step, s.applied,
                    coalesce(CASE WHEN json_valid(s.flow) THEN json_extract(s.flow, '$.allowed') END,
                             json_array_length(s.allowed)), s.remaining,
                    s.precision, s.recall, s.f1, s.tp, s.fp, s.fn, s.content_bleu, s.content_es,
                    s.suggest_ms, s.generate_ms
               FROM run_steps s
               JOIN run_trajectories t ON t.run_id = s.run_id AND t.key = s.key
              WHERE s.run_id = ?1
              ORDER BY t.position, s.step",
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
