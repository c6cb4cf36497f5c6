//! Reading replay runs back ([`RunRead`] for the database): summaries, trajectories,
//! steps whole or a page at a time (`replay` prints a finished trajectory's steps from
//! the database, so however long the trajectory, only one page of its steps is in
//! memory), measurements, call tallies and the steps' yardsticks
//! (`run_step_yardsticks`) for reports.

use rusqlite::{OptionalExtension, params};

use super::runs::RunRead;
use super::values::stored;
use super::{
    CallTally, RunMeasurements, RunSummary, RunTrajectory, StepDetail, StepFailure, StepFlow,
    StepSet, StoredContent, StoredPrediction, StoredStep,
};
use super::{Database, StoreError, sqlite};
use crate::core::metrics::flow::{FlowClass, FlowStep, Prf, RankedPrediction, StepCounts};
use crate::engine::judge::Judgement;
use crate::engine::replay::yardsticks::StepYardsticks;
use crate::engine::suggest::{Call, CallFailure, FailureKind, ReadSource, StepRead};

impl RunRead for Database {
    fn run_repetitions(&self, run: i64) -> Result<Vec<i64>, StoreError> {
        let runs: Vec<i64> = self.rows(
            "SELECT id FROM runs WHERE id = ?1 OR repetition_of = ?1 ORDER BY coalesce(repetition, 1), id",
            [run],
            |r| r.get(0),
        )?;
        if !runs.contains(&run) {
            return Err(StoreError::NoRun(run));
        }
        Ok(runs)
    }

    fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.run_ids()?.into_iter().map(|id| self.run(id)).collect()
    }

    fn run_ids(&self) -> Result<Vec<i64>, StoreError> {
        self.rows("SELECT id FROM runs ORDER BY id DESC", [], |r| r.get(0))
    }

    fn run(&self, run: i64) -> Result<RunSummary, StoreError> {
        self.conn
            .query_row(
                "SELECT r.id, r.started_at, r.status, r.suggester, r.config,
                        (SELECT count(*) FROM run_trajectories t WHERE t.run_id = r.id),
                        (SELECT count(*) FROM run_trajectories t WHERE t.run_id = r.id AND t.status = 'done'),
                        (SELECT count(*) FROM run_trajectories t WHERE t.run_id = r.id AND t.status = 'failed'),
                        (SELECT count(*) FROM run_steps s WHERE s.run_id = r.id),
                        coalesce(r.repetition, 1), r.repetition_of
                   FROM runs r WHERE r.id = ?1",
                [run],
                |row| {
                    let config: String = row.get(4)?;
                    Ok(RunSummary {
                        id: row.get(0)?,
                        started_at: row.get(1)?,
                        status: stored(row, 2, "runs", "status")?,
                        suggester: row.get(3)?,
                        config: serde_json::from_str(&config).unwrap_or(serde_json::Value::Null),
                        trajectories: row.get(5)?,
                        done: row.get(6)?,
                        failed: row.get(7)?,
                        steps: row.get(8)?,
                        repetition: row.get(9)?,
                        repetition_of: row.get(10)?,
                    })
                },
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))?
            .ok_or(StoreError::NoRun(run))
    }

    fn run_shard(&self, run: i64) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT shard FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()
            .map_err(|source| sqlite(&self.path, source))?
            .ok_or(StoreError::NoRun(run))?;
        Ok(text.map(|t| serde_json::from_str(&t).unwrap_or(serde_json::Value::Null)))
    }

    fn run_trajectories(&self, run: i64) -> Result<Vec<RunTrajectory>, StoreError> {
        self.rows(
            "SELECT key, status, trajectory, position FROM run_trajectories WHERE run_id = ?1 ORDER BY position",
            [run],
            |row| {
                Ok(RunTrajectory {
                    key: row.get(0)?,
                    position: row.get::<_, i64>(3)? as usize,
                    status: stored(row, 1, "run_trajectories", "status")?,
                    text: row.get(2)?,
                })
            },
        )
    }

    fn run_trajectory_text(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT trajectory FROM run_trajectories WHERE run_id = ?1 AND key = ?2",
                params![run, key],
                |r| r.get(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(|source| sqlite(&self.path, source))
    }

    fn run_steps(&self, run: i64, key: &str) -> Result<Vec<StepFlow>, StoreError> {
        self.rows("SELECT step, applied, flow FROM run_steps WHERE run_id = ?1 AND key = ?2 ORDER BY step", params![run, key], |row| {
            let flow: String = row.get(2)?;
            Ok(StepFlow {
                step: row.get::<_, i64>(0)? as usize,
                applied: row.get(1)?,
                flow: flow_from_json(&flow),
            })
        })
    }

    fn stored_steps(
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
                    generate_ms, flow, suggest_cached, generate_cached, content_answer,
                    delta_chrf, nep_partial, nep_position, location_hit,
                    prompt, yes, reverts_edits, confidence, failure_kind, failure_message, j.cached
               FROM run_steps LEFT JOIN run_step_yardsticks USING (run_id, key, step)
                    LEFT JOIN run_step_judgements j USING (run_id, key, step)
              WHERE run_id = ?1 AND key = ?2 AND step > ?3
              ORDER BY step LIMIT ?4",
            params![run, key, after, limit as i64],
            stored_step_row,
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

    fn run_step_details(&self, run: i64, key: &str) -> Result<Vec<StepDetail>, StoreError> {
        let mut steps = self.rows(
            "SELECT step, applied, precision, recall, f1, content_edit, content_bleu, content_es,
                    content_generated, content_answer
               FROM run_steps WHERE run_id = ?1 AND key = ?2 ORDER BY step",
            params![run, key],
            |row| {
                let edit: Option<String> = row.get(5)?;
                Ok(StepDetail {
                    step: row.get::<_, i64>(0)? as usize,
                    applied: row.get(1)?,
                    prf: Prf {
                        precision: row.get(2)?,
                        recall: row.get(3)?,
                        f1: row.get(4)?,
                    },
                    content: match edit {
                        Some(edit) => Some(StoredContent {
                            edit,
                            bleu: row.get::<_, Option<f64>>(6)?.unwrap_or(0.0),
                            es: row.get::<_, Option<f64>>(7)?.unwrap_or(0.0),
                            generated: row.get::<_, Option<bool>>(8)?.unwrap_or(false),
                            answer: answer_at(row, 9)?,
                        }),
                        None => None,
                    },
                    predictions: Vec::new(),
                    failures: Vec::new(),
                })
            },
        )?;
        let predictions = self.rows(
            "SELECT step, rank, file, start_line, end_line, text, confidence, matched, class
               FROM run_predictions WHERE run_id = ?1 AND key = ?2 ORDER BY step, rank",
            params![run, key],
            prediction_row,
        )?;
        let failures = self.rows(
            "SELECT step, call, kind, message FROM run_errors
              WHERE run_id = ?1 AND key = ?2 AND step IS NOT NULL ORDER BY rowid",
            params![run, key],
            |row| {
                let (call, kind, message): (String, String, String) =
                    (row.get(1)?, row.get(2)?, row.get(3)?);
                Ok((
                    row.get::<_, i64>(0)? as usize,
                    // A database made elsewhere may hold what this one never stores.
                    format!("{call} {kind}: {}", crate::base::secrets::scrub(&message)),
                ))
            },
        )?;
        for step in &mut steps {
            let n = step.step;
            step.predictions = (predictions.iter())
                .filter(|(s, _)| *s == n)
                .map(|(_, p)| p.clone())
                .collect();
            step.failures = (failures.iter())
                .filter(|(s, _)| *s == n)
                .map(|(_, f)| f.clone())
                .collect();
        }
        Ok(steps)
    }

    fn run_initial(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT initial FROM run_trajectories WHERE run_id = ?1 AND key = ?2",
                params![run, key],
                |r| r.get(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(|source| sqlite(&self.path, source))
    }

    fn run_reads(&self, run: i64, key: &str) -> Result<Vec<(usize, StepRead)>, StoreError> {
        self.rows(
            "SELECT step, call, source, file, start_line, end_line, via FROM run_reads
                    WHERE run_id = ?1 AND key = ?2 ORDER BY step, seq",
            params![run, key],
            read_row,
        )
    }

    fn run_measurements(
        &self,
        run: i64,
        keep: Option<&StepSet>,
    ) -> Result<RunMeasurements, StoreError> {
        let kept = |key: &str, step: Option<i64>| {
            keep.is_none_or(|k| k.holds(key, step.map(|s| s as usize)))
        };
        let rows = self.rows(
            // In key and step order whatever the query plan: a merged run's means and
            // quantiles then add up exactly as the single-machine run's.
            "SELECT key, step, content_bleu, content_es, suggest_ms, generate_ms,
                    coalesce(suggest_cached, 0) + coalesce(generate_cached, 0),
                    (suggest_cached = 0) + coalesce(generate_cached = 0, 0)
               FROM run_steps WHERE run_id = ?1 ORDER BY key, step",
            [run],
            |row| {
                Ok((
                    (row.get::<_, String>(0)?, row.get::<_, i64>(1)?),
                    row.get::<_, Option<f64>>(2)?,
                    row.get::<_, Option<f64>>(3)?,
                    row.get::<_, f64>(4)?,
                    row.get::<_, Option<f64>>(5)?,
                    (
                        row.get::<_, Option<i64>>(6)?.unwrap_or(0),
                        row.get::<_, Option<i64>>(7)?.unwrap_or(0),
                    ),
                ))
            },
        )?;
        let mut m = RunMeasurements::default();
        for ((key, step), bleu, es, suggest, generate, (served, live)) in rows {
            if !kept(&key, Some(step)) {
                continue;
            }
            m.bleu.extend(bleu);
            m.es.extend(es);
            m.suggest_ms.push(suggest);
            m.generate_ms.extend(generate);
            m.cache_served += served;
            m.cache_live += live;
        }
        let initialized = self.rows(
            "SELECT key, coalesce(initialize_cached, 0), coalesce(initialize_cached = 0, 0)
               FROM run_trajectories WHERE run_id = ?1",
            [run],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, i64>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            },
        )?;
        for (key, served, live) in initialized {
            if kept(&key, None) {
                m.cache_served += served;
                m.cache_live += live;
            }
        }
        let errors = self.rows(
            "SELECT key, step, kind FROM run_errors WHERE run_id = ?1",
            [run],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, Option<i64>>(1)?,
                    row.get::<_, String>(2)?,
                ))
            },
        )?;
        let mut by_kind: std::collections::BTreeMap<String, i64> = Default::default();
        for (key, step, kind) in errors {
            if kept(&key, step) {
                *by_kind.entry(kind).or_default() += 1;
            }
        }
        m.errors = by_kind.into_iter().collect();
        Ok(m)
    }

    fn run_content_edits(&self, run: i64) -> Result<Vec<(String, usize, String)>, StoreError> {
        self.rows(
            "SELECT s.key, s.step, s.content_edit FROM run_steps s
               JOIN run_trajectories t ON t.run_id = s.run_id AND t.key = s.key
              WHERE s.run_id = ?1 AND s.content_edit IS NOT NULL ORDER BY t.position, s.step",
            [run],
            |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as usize, row.get(2)?)),
        )
    }

    fn run_call_tallies(&self, run: i64) -> Result<Vec<CallTally>, StoreError> {
        let count = |sql: &str| -> Result<usize, StoreError> {
            self.conn
                .query_row(sql, [run], |r| r.get::<_, i64>(0))
                .map(|n| n.max(0) as usize)
                .map_err(|source| sqlite(&self.path, source))
        };
        let given_up = |call: &str| {
            format!(
                "SELECT count(*) FROM run_errors WHERE run_id = ?1 AND call = '{call}' AND kind = 'gave_up'"
            )
        };
        // A trajectory asked `initialize` when it got steps, finished or failed the call.
        let made = [
            (
                Call::Initialize,
                count(
                    "SELECT count(*) FROM run_trajectories t WHERE t.run_id = ?1 AND (t.status = 'done'
                        OR EXISTS (SELECT 1 FROM run_steps s WHERE s.run_id = t.run_id AND s.key = t.key)
                        OR EXISTS (SELECT 1 FROM run_errors e WHERE e.run_id = t.run_id AND e.key = t.key
                                   AND e.call = 'initialize'))",
                )?,
            ),
            (
                Call::Suggest,
                count("SELECT count(*) FROM run_steps WHERE run_id = ?1")?
                    .saturating_sub(count(&given_up("suggest"))?),
            ),
            (
                Call::Generate,
                count("SELECT count(*) FROM run_steps WHERE run_id = ?1 AND generate_ms IS NOT NULL")?
                    .saturating_sub(count(&given_up("generate"))?),
            ),
        ];
        let failures = self.rows(
            "SELECT call, kind, count(*) FROM run_errors
              WHERE run_id = ?1 AND kind != 'gave_up' GROUP BY call, kind ORDER BY call, kind",
            [run],
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, i64>(2)?,
                ))
            },
        )?;
        Ok(made
            .into_iter()
            .map(|(call, made)| {
                let kinds: Vec<(String, usize)> = (failures.iter())
                    .filter(|(c, _, _)| c == call.key())
                    .map(|(_, kind, n)| (kind.clone(), *n as usize))
                    .collect();
                let failed = kinds.iter().map(|(_, n)| n).sum::<usize>();
                // A resumed trajectory asks `initialize` again.
                CallTally {
                    call,
                    made: made.max(failed),
                    failed,
                    kinds,
                }
            })
            .collect())
    }

    fn run_step_judgements(&self, run: i64) -> Result<Vec<(String, usize, Judgement)>, StoreError> {
        self.step_judgements(run)
    }

    fn run_step_yardsticks(
        &self,
        run: i64,
    ) -> Result<Vec<(String, usize, StepYardsticks)>, StoreError> {
        self.rows(
            "SELECT key, step, delta_chrf, nep_partial, nep_position, location_hit
               FROM run_step_yardsticks WHERE run_id = ?1 ORDER BY key, step",
            [run],
            |row| {
                let yardsticks = yardsticks_at(row, 2)?;
                Ok((row.get(0)?, row.get::<_, i64>(1)? as usize, yardsticks))
            },
        )
    }
}

impl Database {
    /// [`RunRead::run_step_judgements`] of this database.
    fn step_judgements(&self, run: i64) -> Result<Vec<(String, usize, Judgement)>, StoreError> {
        let rows = self.rows(
            &format!(
                "SELECT key, step, {} FROM run_step_judgements WHERE run_id = ?1 ORDER BY key, step",
                super::judgements::COLUMNS
            ),
            [run],
            |row| {
                let judgement = super::judgements::judgement_at(row, 2)?;
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as usize, judgement))
            },
        )?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, step, j)| Some((key, step, j?)))
            .collect())
    }
}

/// The `content_answer` of a row at column `i` (NULL: stored before schema version 13).
pub(super) fn answer_at(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Option<usize>> {
    Ok(row.get::<_, Option<i64>>(i)?.map(|k| k as usize))
}

/// The yardsticks (delta_chrf, nep_partial, nep_position, location_hit) of a row from
/// column `first` on.
pub(super) fn yardsticks_at(
    row: &rusqlite::Row<'_>,
    first: usize,
) -> rusqlite::Result<StepYardsticks> {
    Ok(StepYardsticks {
        delta_chrf: row.get(first)?,
        nep_partial: row.get(first + 1)?,
        nep_position: row.get(first + 2)?,
        location_hit: row.get(first + 3)?,
    })
}

/// A `run_steps` row (step, applied, allowed, remaining, precision, recall, f1, tp, fp,
/// fn, content_edit, content_bleu, content_es, content_generated, suggest_ms,
/// generate_ms, flow, suggest_cached, generate_cached, content_answer) with its `run_step_yardsticks`
/// (delta_chrf, nep_partial, nep_position, location_hit) as a step without its
/// predictions, failures and reads.
fn stored_step_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredStep> {
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
                answer: answer_at(row, 19)?,
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
        yardsticks: yardsticks_at(row, 20)?,
        judgement: super::judgements::judgement_at(row, 24)?,
    })
}

/// A `run_predictions` row (step, rank, file, start_line, end_line, text, confidence,
/// matched, class) as (step, prediction).
pub(super) fn prediction_row(
    row: &rusqlite::Row<'_>,
) -> rusqlite::Result<(usize, StoredPrediction)> {
    let class: String = row.get(8)?;
    Ok((
        row.get::<_, i64>(0)? as usize,
        StoredPrediction {
            rank: row.get::<_, i64>(1)? as usize,
            file: row.get(2)?,
            start_line: row.get::<_, i64>(3)? as usize,
            end_line: row.get::<_, i64>(4)? as usize,
            text: row.get(5)?,
            confidence: row.get(6)?,
            matched: row.get(7)?,
            // A class this version does not know shows as breaking (unmatched).
            class: FlowClass::from_key(&class).unwrap_or(FlowClass::Breaking),
        },
    ))
}

/// A `run_reads` row (step, call, source, file, start_line, end_line, via) as (step, read).
pub(super) fn read_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(usize, StepRead)> {
    let call: String = row.get(1)?;
    let source: String = row.get(2)?;
    Ok((
        row.get::<_, i64>(0)? as usize,
        StepRead {
            // Proxies name the call in their step markers: anything but
            // `generate` was a `suggest`.
            call: Call::from_key(&call).unwrap_or(Call::Suggest),
            source: ReadSource::from_key(&source),
            file: row.get(3)?,
            start_line: row.get::<_, i64>(4)? as usize,
            end_line: row.get::<_, Option<i64>>(5)?.map(|e| e as usize),
            via: row.get(6)?,
        },
    ))
}

/// A step's `flow` column read back; what does not parse counts as nothing (no
/// predictions, no allowed edit), entry by entry, as every version has read it.
pub(super) fn flow_from_json(text: &str) -> FlowStep {
    let flow: serde_json::Value = serde_json::from_str(text).unwrap_or_default();
    let predictions = flow["predictions"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter_map(|p| {
                    Some(RankedPrediction {
                        rank: p[0].as_u64()? as usize,
                        matched_gold: p[1].as_u64().map(|g| g as usize),
                        class: FlowClass::from_key(p[2].as_str()?)?,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    FlowStep {
        predictions,
        allowed_gold: flow["allowed"].as_u64().unwrap_or(0) as usize,
    }
}
