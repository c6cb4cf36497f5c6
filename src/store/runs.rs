//! Replay runs: their row types, the [`RunStore`] and [`RunRead`] traits, and the
//! writer: a run created up front, every step written as it finishes (read back for
//! `--resume` and `nextedit report` by `run_read`).
//!
//! The rows are a wire format. `run_steps.flow` holds the step as flow aggregation
//! takes it, as JSON: `{"allowed": N, "predictions": [[rank, matched edit index or
//! null, class key], …]}`; [`StoredStep::flow`] is its typed form, converted here only,
//! so databases of every version read back the same. The row types ([`StoredStep`] and
//! friends) are typed.

use rusqlite::params;
use serde_json::json;

use super::{Database, RunStatus, StoreError, TrajectoryStatus, sqlite};
use crate::core::metrics::flow::{FlowClass, FlowStep, Prf, StepCounts};
use crate::engine::judge::Judgement;
use crate::engine::replay::yardsticks::StepYardsticks;
use crate::engine::suggest::{Call, CallFailure, StepRead};

/// One run as listed by reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Run id.
    pub id: i64,
    /// RFC 3339 start.
    pub started_at: String,
    /// Where it is.
    pub status: RunStatus,
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
    /// delta-chrF, NEP matches and location hit (table `run_step_yardsticks`).
    pub yardsticks: StepYardsticks,
    /// What the judge said about the step (`--judge`; table `run_step_judgements`).
    pub judgement: Option<Judgement>,
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
    /// The right answer scored against: 0 the gold edit itself, `k` its `k`-th
    /// alternative; `None` for a step stored before schema version 13.
    pub answer: Option<usize>,
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
    /// Where it is (the reason of a failure in `error`).
    pub status: TrajectoryStatus,
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

/// Where replay runs live, written as they run: the one writer of the run tables
/// (the run service writes through it; reads go through [`RunRead`]).
pub trait RunStore: RunRead {
    /// Creates a run with its trajectories (key, trajectory JSON) in order; returns its id.
    /// The privacy rules apply to the stored trajectories (`protected_json`).
    fn create_run(
        &mut self,
        suggester: &str,
        config: &serde_json::Value,
        trajectories: &[(String, Option<String>)],
    ) -> Result<i64, StoreError>;

    /// Creates a run with its trajectories at the given places (position, key, trajectory
    /// JSON), and for a shard run the JSON of the plan it is a shard of (`runs.shard`).
    fn create_run_at(
        &mut self,
        suggester: &str,
        config: &serde_json::Value,
        trajectories: &[(usize, String, Option<String>)],
        shard: Option<&serde_json::Value>,
    ) -> Result<i64, StoreError>;

    /// Sets a trajectory's status within a run (and its initial edit or error).
    fn set_run_trajectory(
        &mut self,
        run: i64,
        key: &str,
        status: TrajectoryStatus,
        initial: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StoreError>;

    /// Records a failed call outside any step (`initialize`), so reports count it.
    fn record_run_error(
        &mut self,
        run: i64,
        key: &str,
        call: Call,
        failure: &CallFailure,
    ) -> Result<(), StoreError>;

    /// Writes one finished step with its predictions and errors, in one transaction.
    fn record_step(&mut self, run: i64, key: &str, step: &StoredStep) -> Result<(), StoreError>;

    /// Appends reads to a step of a run (after the reads it already has).
    fn add_run_reads(
        &mut self,
        run: i64,
        key: &str,
        step: usize,
        reads: &[StepRead],
    ) -> Result<(), StoreError>;

    /// Marks a run finished.
    fn finish_run(&mut self, run: i64, status: RunStatus) -> Result<(), StoreError>;

    /// Marks run `run` interrupted if it is still running, and its trajectories in
    /// progress with `reason` (what stopped them): a run its process could not finish
    /// (a signal, an error, a process killed) is never left running; `--resume` goes
    /// on from its stored steps. Returns whether the run was running.
    fn interrupt_run(&mut self, run: i64, reason: &str) -> Result<bool, StoreError>;

    /// Marks a run running again (a resumed one), without an end.
    fn reopen_run(&mut self, run: i64) -> Result<(), StoreError>;

    /// Marks run `run` as repetition `repetition` of the group `of` starts (`None` for
    /// the first).
    fn set_run_repetition(
        &mut self,
        run: i64,
        repetition: u32,
        of: Option<i64>,
    ) -> Result<(), StoreError>;

    /// Records whether a trajectory's `initialize` was served from the response cache.
    fn set_initialize_cached(
        &mut self,
        run: i64,
        key: &str,
        cached: bool,
    ) -> Result<(), StoreError>;
}

/// Reading replay runs back (resume, reports); [`Database`] reads the tables, a
/// view (a report's common steps) may read through another `RunRead`.
pub trait RunRead {
    /// The runs of the repetition group run `run` starts, in repetition order (just
    /// `run` when it has no other repetitions).
    fn run_repetitions(&self, run: i64) -> Result<Vec<i64>, StoreError>;

    /// Every run's summary, newest first.
    fn runs(&self) -> Result<Vec<RunSummary>, StoreError>;

    /// Every run's id, newest first.
    fn run_ids(&self) -> Result<Vec<i64>, StoreError>;

    /// A run's summary.
    fn run(&self, run: i64) -> Result<RunSummary, StoreError>;

    /// The plan a shard run is a shard of, as stored (`None` for a whole run).
    fn run_shard(&self, run: i64) -> Result<Option<serde_json::Value>, StoreError>;

    /// A run's trajectories in order.
    fn run_trajectories(&self, run: i64) -> Result<Vec<RunTrajectory>, StoreError>;

    /// The JSON of trajectory `key` of run `run` (`None`: it could not be read).
    fn run_trajectory_text(&self, run: i64, key: &str) -> Result<Option<String>, StoreError>;

    /// The applied edit and flow of a trajectory's recorded steps, in step order.
    fn run_steps(&self, run: i64, key: &str) -> Result<Vec<StepFlow>, StoreError>;

    /// The stored steps of trajectory `key` of run `run` numbered above `after` (all of
    /// them with `None`), at most `limit`, in step order, each as it was recorded.
    fn stored_steps(
        &self,
        run: i64,
        key: &str,
        after: Option<usize>,
        limit: usize,
    ) -> Result<Vec<StoredStep>, StoreError>;

    /// A trajectory's stored steps in full (predictions with their text, failed
    /// calls), in step order.
    fn run_step_details(&self, run: i64, key: &str) -> Result<Vec<StepDetail>, StoreError>;

    /// Initial edit id recorded for a trajectory of a run.
    fn run_initial(&self, run: i64, key: &str) -> Result<Option<String>, StoreError>;

    /// What the suggester read in a trajectory of a run: (step, read) in step and read order.
    fn run_reads(&self, run: i64, key: &str) -> Result<Vec<(usize, StepRead)>, StoreError>;

    /// Content scores, latencies and failures of the steps of a run `keep` holds (every
    /// step without it); failures outside a step count with their trajectory.
    fn run_measurements(
        &self,
        run: i64,
        keep: Option<&StepSet>,
    ) -> Result<RunMeasurements, StoreError>;

    /// The gold edit each scored step's content was scored against: (key, step, edit
    /// id), in trajectory and step order (for the do-nothing baselines of `report`).
    fn run_content_edits(&self, run: i64) -> Result<Vec<(String, usize, String)>, StoreError>;

    /// The calls a run made of each kind (`initialize`, `suggest`, `generate`) and how
    /// many failed, by failure kind; a call given up on (`gave_up`) was not made.
    fn run_call_tallies(&self, run: i64) -> Result<Vec<CallTally>, StoreError>;

    /// (key, step, yardsticks) of every step of run `run` that has any, in order (none
    /// for a run recorded before schema version 11).
    fn run_step_yardsticks(
        &self,
        run: i64,
    ) -> Result<Vec<(String, usize, StepYardsticks)>, StoreError>;

    /// (key, step, judgement) of every step of run `run` the judge was asked about, in
    /// order (none for a run without `--judge` or recorded before schema version 12).
    fn run_step_judgements(&self, run: i64) -> Result<Vec<(String, usize, Judgement)>, StoreError>;
}

impl RunStore for Database {
    fn create_run(
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

    fn create_run_at(
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

    fn set_run_trajectory(
        &mut self,
        run: i64,
        key: &str,
        status: TrajectoryStatus,
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

    fn record_run_error(
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

    fn record_step(&mut self, run: i64, key: &str, step: &StoredStep) -> Result<(), StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        insert_step(&tx, run, key, step).map_err(e)?;
        tx.commit().map_err(e)
    }

    fn add_run_reads(
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

    fn finish_run(&mut self, run: i64, status: RunStatus) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = ?2, ended_at = ?3 WHERE id = ?1",
                params![run, status, now()],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    fn interrupt_run(&mut self, run: i64, reason: &str) -> Result<bool, StoreError> {
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

    fn reopen_run(&mut self, run: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?1",
                [run],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(())
    }

    fn set_run_repetition(
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

    fn set_initialize_cached(
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
}
/// Writes one finished step: its `run_steps` row, then its predictions, reads and
/// failed calls.
fn insert_step(
    tx: &rusqlite::Transaction<'_>,
    run: i64,
    key: &str,
    step: &StoredStep,
) -> rusqlite::Result<()> {
    let (content_edit, bleu, es, generated, answer) = match &step.content {
        Some(c) => (
            Some(c.edit.as_str()),
            Some(c.bleu),
            Some(c.es),
            Some(c.generated),
            c.answer.map(|k| k as i64),
        ),
        None => (None, None, None, None, None),
    };
    tx.execute(
        "INSERT OR REPLACE INTO run_steps (run_id, key, step, applied, allowed, remaining, precision, recall, f1,
                                           tp, fp, fn, content_edit, content_bleu, content_es, content_generated,
                                           suggest_ms, generate_ms, flow, suggest_cached, generate_cached,
                                           content_answer)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
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
            step.generate_cached,
            answer
        ],
    )?;
    insert_step_parts(tx, run, key, step)
}

/// The rows of a step besides its `run_steps` row: yardsticks, judgement, predictions, reads,
/// failed calls.
fn insert_step_parts(
    tx: &rusqlite::Transaction<'_>,
    run: i64,
    key: &str,
    step: &StoredStep,
) -> rusqlite::Result<()> {
    insert_step_yardsticks(tx, run, key, step.step, &step.yardsticks)?;
    if let Some(judgement) = &step.judgement {
        super::judgements::insert_step_judgement(tx, run, key, step.step, judgement)?;
    }
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
        )?;
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
        )?;
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
        )?;
    }
    Ok(())
}

/// Writes a step's yardsticks (`run_step_yardsticks`, schema v11) inside the
/// transaction that records the step; a step with nothing measured has no row.
fn insert_step_yardsticks(
    tx: &rusqlite::Transaction<'_>,
    run: i64,
    key: &str,
    step: usize,
    y: &StepYardsticks,
) -> rusqlite::Result<()> {
    if *y == StepYardsticks::default() {
        return Ok(());
    }
    tx.execute(
        "INSERT OR REPLACE INTO run_step_yardsticks (run_id, key, step, delta_chrf, nep_partial, nep_position, location_hit)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![run, key, step as i64, y.delta_chrf, y.nep_partial, y.nep_position, y.location_hit],
    )?;
    Ok(())
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
