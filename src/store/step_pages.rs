//! A trajectory's stored steps read back whole, a page at a time: `replay` prints a
//! finished trajectory's steps from the database, so however long the trajectory,
//! only one page of its steps is in memory.

use crate::engine::replay::yardsticks::StepYardsticks;
use rusqlite::params;

use super::runs::{flow_from_json, prediction_row, read_row};
use super::{Database, StepFailure, StoreError, StoredContent, StoredStep};
use crate::core::metrics::flow::{Prf, StepCounts};
use crate::engine::suggest::{Call, CallFailure, FailureKind};

impl Database {
    /// The stored steps of trajectory `key` of run `run` numbered above `after` (all of
    /// them with `None`), at most `limit`, in step order, each as it was recorded.
    pub fn stored_steps(
        &self,
        run: i64,
        key: &str,
        after: Option<usize>,
        limit: usize,
    ) -> Result<Vec<StoredStep>, StoreError> {
        let after = after.map_or(-1, |s| s as i64);
        let mut steps = self.rows(
            "SELECT step, applied, allowed, remaining, precision, recall, f1, tp, fp, fn,
                    content_edit, content_bleu, content_es, content_generated, suggest_ms,
                    generate_ms, flow, suggest_cached, generate_cached,
                    delta_chrf, nep_partial, nep_position, location_hit
               FROM run_steps LEFT JOIN run_step_yardsticks USING (run_id, key, step)
              WHERE run_id = ?1 AND key = ?2 AND step > ?3
              ORDER BY step LIMIT ?4",
            params![run, key, after, limit as i64],
            |row| {
                let allowed: String = row.get(2)?;
                let edit: Option<String> = row.get(10)?;
                let flow: String = row.get(16)?;
                Ok(StoredStep {
                    step: row.get::<_, i64>(0)? as usize,
                    applied: row.get(1)?,
                    allowed: serde_json::from_str(&allowed).unwrap_or_default(),
                    remaining: row.get::<_, i64>(3)? as usize,
                    prf: Prf {
                        precision: row.get(4)?,
                        recall: row.get(5)?,
                        f1: row.get(6)?,
                    },
                    counts: StepCounts {
                        tp: row.get::<_, i64>(7)? as u64,
                        fp: row.get::<_, i64>(8)? as u64,
                        fn_: row.get::<_, i64>(9)? as u64,
                    },
                    content: match edit {
                        Some(edit) => Some(StoredContent {
                            edit,
                            bleu: row.get::<_, Option<f64>>(11)?.unwrap_or(0.0),
                            es: row.get::<_, Option<f64>>(12)?.unwrap_or(0.0),
                            generated: row.get::<_, Option<bool>>(13)?.unwrap_or(false),
                        }),
                        None => None,
                    },
                    suggest_ms: row.get(14)?,
                    generate_ms: row.get(15)?,
                    flow: flow_from_json(&flow),
                    predictions: Vec::new(),
                    failures: Vec::new(),
                    reads: Vec::new(),
                    suggest_cached: row.get(17)?,
                    generate_cached: row.get(18)?,
                    yardsticks: StepYardsticks {
                        delta_chrf: row.get(19)?,
                        nep_partial: row.get(20)?,
                        nep_position: row.get(21)?,
                        location_hit: row.get(22)?,
                    },
                })
            },
        )?;
        let (Some(first), Some(last)) = (steps.first(), steps.last()) else {
            return Ok(steps);
        };
        let (first, last) = (first.step as i64, last.step as i64);
        // Steps are in order: a step's place in the page by binary search.
        let place =
            |steps: &[StoredStep], step: usize| steps.binary_search_by_key(&step, |s| s.step).ok();
        for (step, prediction) in self.rows(
            "SELECT step, rank, file, start_line, end_line, text, confidence, matched, class
               FROM run_predictions WHERE run_id = ?1 AND key = ?2 AND step BETWEEN ?3 AND ?4
              ORDER BY step, rank",
            params![run, key, first, last],
            prediction_row,
        )? {
            if let Some(i) = place(&steps, step) {
                steps[i].predictions.push(prediction);
            }
        }
        for (step, failure) in self.rows(
            "SELECT step, call, kind, message FROM run_errors
              WHERE run_id = ?1 AND key = ?2 AND step BETWEEN ?3 AND ?4 ORDER BY rowid",
            params![run, key, first, last],
            |row| {
                let (call, kind, message): (String, String, String) =
                    (row.get(1)?, row.get(2)?, row.get(3)?);
                let failure =
                    Call::from_key(&call)
                        .zip(FailureKind::from_key(&kind))
                        .map(|(call, kind)| StepFailure {
                            call,
                            failure: CallFailure { kind, message },
                        });
                Ok((row.get::<_, i64>(0)? as usize, failure))
            },
        )? {
            // A call or kind this version does not know was not written by it.
            if let (Some(i), Some(failure)) = (place(&steps, step), failure) {
                steps[i].failures.push(failure);
            }
        }
        for (step, read) in self.rows(
            "SELECT step, call, source, file, start_line, end_line, via FROM run_reads
              WHERE run_id = ?1 AND key = ?2 AND step BETWEEN ?3 AND ?4 ORDER BY step, seq",
            params![run, key, first, last],
            read_row,
        )? {
            if let Some(i) = place(&steps, step) {
                steps[i].reads.push(read);
            }
        }
        Ok(steps)
    }
}
