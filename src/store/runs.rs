//! Replay runs: created up front, every step written as it finishes, read back for
//! `--resume` and `nextedit report`.
//!
//! The rows are a wire format. `run_steps.flow` holds the step as flow aggregation
//! takes it, as JSON: `{"allowed": N, "predictions": [[rank, matched edit index or
//! null, class key], …]}`; [`StoredStep::flow`] is its typed form, converted here only,
//! so databases of every version read back the same. The row types ([`StoredStep`] and
//! friends) are typed.

use rusqlite::{OptionalExtension, params};
use serde_json::json;

use super::{Database, StoreError, sqlite};
use crate::core::metrics::flow::{FlowClass, FlowStep, Prf, RankedPrediction, StepCounts};
use crate::engine::suggest::{Call, CallFailure, ReadSource, StepRead};

/// One run as listed by reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// RFC 3339 start.
    pub started_at: String,
    /// running, done, interrupted (its process stopped before it finished).
    pub status: String,
    /// Suggester spec.
    pub suggester: String,
    /// Settings as JSON.
    pub config: serde_json::Value,
    /// Trajectories in the run.
    pub trajectories: i64,
    /// Of which done.
    pub done: i64,
    /// Of which failed.
    pub failed: i64,
    /// Steps recorded.
    pub steps: i64,
    /// 1-based repetition (`replay --repetitions`; 1 for runs stored before).
    pub repetition: u32,
    /// The first repetition's run, for repetitions 2..N.
    pub repetition_of: Option<i64>,
}

/// One finished step, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredStep {
    /// Step number.
    pub step: usize,
    /// Edit id applied at the end of the step.
    pub applied: String,
    /// Edit ids allowed next, in natural order: the first
    /// [`crate::service::run::ALLOWED_IDS_KEPT`] of them (how many there were is `flow.allowed_gold`).
    pub allowed: Vec<String>,
    /// Edits not applied before the step.
    pub remaining: usize,
    /// Precision, recall, F1 of the step.
    pub prf: Prf,
    /// Historian's tp, fp, fn of the step.
    pub counts: StepCounts,
    /// The step's content score, if any.
    pub content: Option<StoredContent>,
    /// Latency of suggest, ms.
    pub suggest_ms: f64,
    /// Latency of generate, ms.
    pub generate_ms: Option<f64>,
    /// The step as flow aggregation takes it (the `flow` column).
    pub flow: FlowStep,
    /// The ranked predictions.
    pub predictions: Vec<StoredPrediction>,
    /// Failed calls of this step.
    pub failures: Vec<StepFailure>,
    /// Locations the suggester read during the step, in order.
    pub reads: Vec<StepRead>,
    /// `suggest` served from the response cache (`Some(false)`: asked live; `None`: no cache).
    pub suggest_cached: Option<bool>,
    /// `generate` served from the response cache (`None`: no cache or no call).
    pub generate_cached: Option<bool>,
}

/// The content score of a step, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredContent {
    /// Id of the gold edit scored against.
    pub edit: String,
    /// Historian BLEU-4 (0–100).
    pub bleu: f64,
    /// ES-Line (0–1).
    pub es: f64,
    /// Whether the text came from `generate` (else from a kept prediction).
    pub generated: bool,
}

/// A failed call of a step (a `run_errors` row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    /// The call that failed.
    pub call: Call,
    /// Its kind and message.
    pub failure: CallFailure,
}

/// A stored step as resume and flow aggregation read it back.
#[derive(Debug, Clone, PartialEq)]
pub struct StepFlow {
    /// Step number.
    pub step: usize,
    /// Edit id applied at the end of the step.
    pub applied: String,
    /// The step as flow aggregation takes it.
    pub flow: FlowStep,
}

/// A trajectory of a run, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunTrajectory {
    /// Its key (file path, `project@sha10`, `session:N`).
    pub key: String,
    /// Its place in the run's plan, from 0 (a shard run keeps the whole plan's places).
    pub position: usize,
    /// pending, running, done, failed, interrupted (with the reason in `error`).
    pub status: String,
    /// Its JSON, `None` when it could not be read or derived.
    pub text: Option<String>,
}

/// One prediction, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPrediction {
    /// Rank (0 = best).
    pub rank: usize,
    /// File.
    pub file: String,
    /// First line.
    pub start_line: usize,
    /// End line (exclusive).
    pub end_line: usize,
    /// Proposed text.
    pub text: String,
    /// Confidence, if given.
    pub confidence: Option<f64>,
    /// Edit id matched.
    pub matched: Option<String>,
    /// Flow pattern.
    pub class: FlowClass,
}

/// One stored step in full, as the HTML report's drill-down shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepDetail {
    /// Step number.
    pub step: usize,
    /// Edit id applied at the end of the step.
    pub applied: String,
    /// Precision, recall, F1 of the step.
    pub prf: Prf,
    /// The step's content score, if any.
    pub content: Option<StoredContent>,
    /// The ranked predictions, best first.
    pub predictions: Vec<StoredPrediction>,
    /// Failed calls of the step as `call kind: message`.
    pub failures: Vec<String>,
}

/// Per-step measurements of a run, for reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMeasurements {
    /// BLEU-4 of each step's content (steps that have one).
    pub bleu: Vec<f64>,
    /// ES of each step's content.
    pub es: Vec<f64>,
    /// `suggest` latency of each step, ms.
    pub suggest_ms: Vec<f64>,
    /// `generate` latency of the steps that called it, ms.
    pub generate_ms: Vec<f64>,
    /// Failed calls by kind (`timeout`, `crash`, …), sorted by kind.
    pub errors: Vec<(String, i64)>,
    /// Calls served from the response cache.
    pub cache_served: i64,
    /// Calls asked live while the cache was on.
    pub cache_live: i64,
}

/// How many calls of one kind a run made and how many of them failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTally {
    /// The kind of call.
    pub call: Call,
    /// Calls made (a call given up on is not made).
    pub made: usize,
    /// Calls that failed.
    pub failed: usize,
    /// The failures by kind (`error_response`, `timeout`, …), sorted by kind.
    pub kinds: Vec<(String, usize)>,
}

/// The steps of some trajectories of a run (a report's common steps): per trajectory
/// key, its step numbers. A trajectory it does not name is left out whole.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StepSet {
    /// Trajectory key → its step numbers kept.
    pub steps: std::collections::BTreeMap<String, std::collections::BTreeSet<usize>>,
}

impl StepSet {
    /// Whether step `step` of trajectory `key` is kept; `None` asks about the
    /// trajectory (its `initialize`, its failure).
    pub fn holds(&self, key: &str, step: Option<usize>) -> bool {
        match (self.steps.get(key), step) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(steps), Some(step)) => steps.contains(&step),
        }
    }
}

pub(super) fn now() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

impl Database {
    /// Creates a run with its trajectories (key, trajectory JSON) in order; returns its id.
    /// The privacy rules apply to the stored trajectories (`protected_json`).
    pub fn create_run(
        &mut self,
        suggester: &str,
        config: &serde_json::Value,
        trajectories: &[(String, Option<String>)],
    ) -> Result<i64, StoreError> {
        let placed: Vec<(usize, String, Option<String>)> = trajectories
            .iter()
            .enumerate()
            .map(|(position, (key, text))| (position, key.clone(), text.clone()))
            .collect();
        self.create_run_at(suggester, config, &placed, None)
    }

    /// Creates a run with its trajectories at the given places (position, key, trajectory
    /// JSON), and for a shard run the JSON of the plan it is a shard of (`runs.shard`).
    pub fn create_run_at(
        &mut self,
        suggester: &str,
        config: &serde_json::Value,
        trajectories: &[(usize, String, Option<String>)],
        shard: Option<&serde_json::Value>,
    ) -> Result<i64, StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        tx.execute(
            "INSERT INTO runs (started_at, status, suggester, config, nextedit_version, shard) VALUES (?1, 'running', ?2, ?3, ?4, ?5)",
            params![now(), suggester, config.to_string(), env!("CARGO_PKG_VERSION"), shard.map(|s| s.to_string())],
        )
        .map_err(e)?;
        let run = tx.last_insert_rowid();
        for (position, key, trajectory) in trajectories {
            let trajectory = trajectory.as_deref().map(protected_json);
            tx.execute(
                "INSERT INTO run_trajectories (run_id, key, position, trajectory, status) VALUES (?1, ?2, ?3, ?4, 'pending')",
                params![run, key, *position as i64, trajectory],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(run)
    }

    /// The plan a shard run is a shard of, as stored (`None` for a whole run).
    pub fn run_shard(&self, run: i64) -> Result<Option<serde_json::Value>, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT shard FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()
            .map_err(|source| sqlite(&self.path, source))?
            .ok_or(StoreError::NoRun(run))?;
        Ok(text.map(|t| serde_json::from_str(&t).unwrap_or(serde_json::Value::Null)))
    }

    /// Sets a trajectory's status within a run (and its initial edit or error).
    pub fn set_run_trajectory(
        &mut self,
        run: i64,
        key: &str,
        status: &str,
        initial: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        let error = crate::base::secrets::scrub_option(error);
        let error = error.as_deref();
        self.conn
            .execute(
                "UPDATE run_trajectories SET status = ?3, initial = coalesce(?4, initial), error = ?5
                  WHERE run_id = ?1 AND key = ?2",
                params![run, key, status, initial, error],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        if let Some(error) = error {
            self.conn
                .execute(
                    "INSERT INTO run_errors (run_id, key, step, call, kind, message) VALUES (?1, ?2, NULL, 'trajectory', 'failed', ?3)",
                    params![run, key, error],
                )
                .map_err(|source| sqlite(&self.path, source))?;
        }
        Ok(())
    }

    /// Records a failed call outside any step (`initialize`), so reports count it.
    pub fn record_run_error(
        &mut self,
        run: i64,
        key: &str,
        call: Call,
        failure: &CallFailure,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO run_errors (run_id, key, step, call, kind, message) VALUES (?1, ?2, NULL, ?3, ?4, ?5)",
                params![
                    run,
                    key,
                    call.key(),
                    failure.kind.key(),
                    crate::base::secrets::scrub(&failure.message)
                ],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// Writes one finished step with its predictions and errors, in one transaction.
    pub fn record_step(
        &mut self,
        run: i64,
        key: &str,
        step: &StoredStep,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        let (content_edit, bleu, es, generated) = match &step.content {
            Some(c) => (
                Some(c.edit.as_str()),
                Some(c.bleu),
                Some(c.es),
                Some(c.generated),
            ),
            None => (None, None, None, None),
        };
        tx.execute(
            "INSERT OR REPLACE INTO run_steps (run_id, key, step, applied, allowed, remaining, precision, recall, f1,
                                               tp, fp, fn, content_edit, content_bleu, content_es, content_generated,
                                               suggest_ms, generate_ms, flow, suggest_cached, generate_cached)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21)",
            params![
                run,
                key,
                step.step as i64,
                step.applied,
                serde_json::to_string(&step.allowed).expect("strings serialise"),
                step.remaining as i64,
                step.prf.precision,
                step.prf.recall,
                step.prf.f1,
                step.counts.tp as i64,
                step.counts.fp as i64,
                step.counts.fn_ as i64,
                content_edit,
                bleu,
                es,
                generated,
                step.suggest_ms,
                step.generate_ms,
                flow_to_json(&step.flow),
                step.suggest_cached,
                step.generate_cached
            ],
        )
        .map_err(e)?;
        for p in &step.predictions {
            tx.execute(
                "INSERT OR REPLACE INTO run_predictions (run_id, key, step, rank, file, start_line, end_line, text, confidence, matched, class)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    run,
                    key,
                    step.step as i64,
                    p.rank as i64,
                    p.file,
                    p.start_line as i64,
                    p.end_line as i64,
                    crate::base::secrets::mask_known(&p.text),
                    p.confidence,
                    p.matched,
                    p.class.key()
                ],
            )
            .map_err(e)?;
        }
        for (seq, r) in step.reads.iter().enumerate() {
            tx.execute(
                "INSERT OR REPLACE INTO run_reads (run_id, key, step, seq, call, source, file, start_line, end_line, via)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run,
                    key,
                    step.step as i64,
                    seq as i64,
                    r.call.key(),
                    r.source.key(),
                    r.file,
                    r.start_line as i64,
                    r.end_line.map(|e| e as i64),
                    r.via
                ],
            )
            .map_err(e)?;
        }
        for f in &step.failures {
            tx.execute(
                "INSERT INTO run_errors (run_id, key, step, call, kind, message) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    run,
                    key,
                    step.step as i64,
                    f.call.key(),
                    f.failure.kind.key(),
                    crate::base::secrets::scrub(&f.failure.message)
                ],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// Marks run `run` as repetition `repetition` of the group `of` starts (`None` for
    /// the first).
    pub fn set_run_repetition(
        &mut self,
        run: i64,
        repetition: u32,
        of: Option<i64>,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET repetition = ?2, repetition_of = ?3 WHERE id = ?1",
                params![run, repetition, of],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// The runs of the repetition group run `run` starts, in repetition order (just
    /// `run` when it has no other repetitions).
    pub fn run_repetitions(&self, run: i64) -> Result<Vec<i64>, StoreError> {
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

    /// Records whether a trajectory's `initialize` was served from the response cache.
    pub fn set_initialize_cached(
        &mut self,
        run: i64,
        key: &str,
        cached: bool,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE run_trajectories SET initialize_cached = ?3 WHERE run_id = ?1 AND key = ?2",
                params![run, key, cached],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// Marks run `run` interrupted if it is still running, and its trajectories in
    /// progress with `reason` (what stopped them): a run its process could not finish
    /// (a signal, an error, a process killed) is never left running; `--resume` goes
    /// on from its stored steps. Returns whether the run was running.
    pub fn interrupt_run(&mut self, run: i64, reason: &str) -> Result<bool, StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        let changed = tx
            .execute(
                "UPDATE runs SET status = 'interrupted', ended_at = ?2 WHERE id = ?1 AND status = 'running'",
                params![run, now()],
            )
            .map_err(e)?;
        if changed > 0 {
            tx.execute(
                "UPDATE run_trajectories SET status = 'interrupted', error = ?2
                  WHERE run_id = ?1 AND status = 'running'",
                params![run, reason],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(changed > 0)
    }

    /// Marks a run running again (a resumed one), without an end.
    pub fn reopen_run(&mut self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?1",
                [run],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// Marks a run finished.
    pub fn finish_run(&mut self, run: i64, status: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1",
                params![run, status, now()],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    /// Every run's summary, newest first.
    pub fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.run_ids()?.into_iter().map(|id| self.run(id)).collect()
    }

    /// Every run's id, newest first.
    pub fn run_ids(&self) -> Result<Vec<i64>, StoreError> {
        self.rows("SELECT id FROM runs ORDER BY id DESC", [], |r| r.get(0))
    }

    /// A run's summary.
    pub fn run(&self, run: i64) -> Result<RunSummary, StoreError> {
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
                        status: row.get(2)?,
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

    /// A run's trajectories in order.
    pub fn run_trajectories(&self, run: i64) -> Result<Vec<RunTrajectory>, StoreError> {
        self.rows(
            "SELECT key, status, trajectory, position FROM run_trajectories WHERE run_id = ?1 ORDER BY position",
            [run],
            |row| {
                Ok(RunTrajectory {
                    key: row.get(0)?,
                    position: row.get::<_, i64>(3)? as usize,
                    status: row.get(1)?,
                    text: row.get(2)?,
                })
            },
        )
    }

    /// The JSON of trajectory `key` of run `run` (`None`: it could not be read).
    pub fn run_trajectory_text(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
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

    /// The applied edit and flow of a trajectory's recorded steps, in step order.
    pub fn run_steps(&self, run: i64, key: &str) -> Result<Vec<StepFlow>, StoreError> {
        self.rows("SELECT step, applied, flow FROM run_steps WHERE run_id = ?1 AND key = ?2 ORDER BY step", params![run, key], |row| {
            let flow: String = row.get(2)?;
            Ok(StepFlow {
                step: row.get::<_, i64>(0)? as usize,
                applied: row.get(1)?,
                flow: flow_from_json(&flow),
            })
        })
    }

    /// A trajectory's stored steps in full (predictions with their text, failed
    /// calls), in step order.
    pub fn run_step_details(&self, run: i64, key: &str) -> Result<Vec<StepDetail>, StoreError> {
        let mut steps = self.rows(
            "SELECT step, applied, precision, recall, f1, content_edit, content_bleu, content_es,
                    content_generated FROM run_steps WHERE run_id = ?1 AND key = ?2 ORDER BY step",
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

    /// Appends reads to a step of a run (after the reads it already has).
    pub fn add_run_reads(
        &mut self,
        run: i64,
        key: &str,
        step: usize,
        reads: &[StepRead],
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        let first: i64 = tx
            .query_row(
                "SELECT coalesce(max(seq) + 1, 0) FROM run_reads WHERE run_id = ?1 AND key = ?2 AND step = ?3",
                params![run, key, step as i64],
                |r| r.get(0),
            )
            .map_err(e)?;
        for (k, r) in reads.iter().enumerate() {
            tx.execute(
                "INSERT INTO run_reads (run_id, key, step, seq, call, source, file, start_line, end_line, via)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    run,
                    key,
                    step as i64,
                    first + k as i64,
                    r.call.key(),
                    r.source.key(),
                    r.file,
                    r.start_line as i64,
                    r.end_line.map(|e| e as i64),
                    r.via
                ],
            )
            .map_err(e)?;
        }
        tx.commit().map_err(e)
    }

    /// What the suggester read in a trajectory of a run: (step, read) in step and read order.
    pub fn run_reads(&self, run: i64, key: &str) -> Result<Vec<(usize, StepRead)>, StoreError> {
        self.rows(
            "SELECT step, call, source, file, start_line, end_line, via FROM run_reads
                    WHERE run_id = ?1 AND key = ?2 ORDER BY step, seq",
            params![run, key],
            read_row,
        )
    }

    /// Content scores, latencies and failures of the steps of a run `keep` holds (every
    /// step without it); failures outside a step count with their trajectory.
    pub fn run_measurements(
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

    /// The calls a run made of each kind (`initialize`, `suggest`, `generate`) and how
    /// many failed, by failure kind; a call given up on (`gave_up`) was not made.
    pub fn run_call_tallies(&self, run: i64) -> Result<Vec<CallTally>, StoreError> {
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

    /// The gold edit each scored step's content was scored against: (key, step, edit
    /// id), in trajectory and step order (for the do-nothing baselines of `report`).
    pub fn run_content_edits(&self, run: i64) -> Result<Vec<(String, usize, String)>, StoreError> {
        self.rows(
            "SELECT s.key, s.step, s.content_edit FROM run_steps s
               JOIN run_trajectories t ON t.run_id = s.run_id AND t.key = s.key
              WHERE s.run_id = ?1 AND s.content_edit IS NOT NULL ORDER BY t.position, s.step",
            [run],
            |row| Ok((row.get(0)?, row.get::<_, i64>(1)? as usize, row.get(2)?)),
        )
    }

    /// Initial edit id recorded for a trajectory of a run.
    pub fn run_initial(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
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

/// The `flow` column of a step.
fn flow_to_json(flow: &FlowStep) -> String {
    json!({
        "allowed": flow.allowed_gold,
        "predictions": flow
            .predictions
            .iter()
            .map(|p| json!([p.rank, p.matched_gold, p.class.key()]))
            .collect::<Vec<_>>(),
    })
    .to_string()
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

/// A trajectory's JSON as it may be stored: [`crate::core::record::privacy::protect_trajectory`]
/// with the default rules, serialized again (the same text when it changes nothing in
/// this type's own serialization); text that is not a trajectory still has its secrets
/// masked.
fn protected_json(json: &str) -> String {
    use crate::core::record::privacy::{PrivacyFilter, mask, protect_trajectory};
    match serde_json::from_str::<crate::core::trajectory::Trajectory>(json) {
        Ok(mut trajectory) => {
            // Protected in place, no copy kept to compare with (a long trajectory is
            // large): what a run stores is this type's own serialization already, so
            // nothing to protect gives the same text back.
            protect_trajectory(&PrivacyFilter::with_defaults(), &mut trajectory);
            serde_json::to_string(&trajectory).expect("trajectories serialise")
        }
        Err(_) => mask(json).into_owned(),
    }
}
