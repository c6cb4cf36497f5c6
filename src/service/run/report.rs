//! The figures `nextedit report` shows, computed from the store as typed values:
//! flow aggregation (P/R/F1, hit@k, MRR, flow shares), content scores beside the
//! do-nothing baselines, latencies, failed calls by kind, ContextBench scores of
//! what the suggester read, how the run was scored and its verdict; and, for several
//! runs, what the report must say before comparing them ([`Compared`]: definitions
//! that differ, the common steps). The CLI only formats them.

use std::collections::HashMap;
use std::sync::Arc;

use super::common::Common;
use super::definition::{Definition, differences};
use super::judge::JudgeSummary;
use super::plan::SandboxState;
use super::verdict::Verdict;
use super::yardsticks::YardstickSummary;
use super::{RunError, RunRead, RunSettings};
use crate::core::metrics::contextbench::{ContextBenchConfig, SessionScores};
use crate::core::metrics::flow::{FlowStep, FlowSummary, HISTORIAN_KS, aggregate};
use crate::core::metrics::statistics::mean;
use crate::core::trajectory::{EditIndex, Trajectory};
use crate::engine::replay::content_scores;
use crate::engine::replay::context::{ContextError, score_replay_reads};
use crate::engine::suggest::StepRead;
use crate::store::{RunMeasurements, RunSummary};

/// Everything a report says about one run.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The run as listed.
    pub info: RunSummary,
    /// Flow aggregation over every stored step.
    pub summary: FlowSummary,
    /// Content scores, latencies and failed calls.
    pub measurements: RunMeasurements,
    /// What doing nothing scores on the same steps.
    pub baseline: Baseline,
    /// ContextBench scores of what the suggester read, per trajectory that read something.
    pub context: Vec<ContextScore>,
    /// Whether the run's suggester process ran outside the sandbox.
    pub unsandboxed_process: bool,
    /// How the run was scored, over which trajectories.
    pub definition: Definition,
    /// Whether too many of its calls failed for its figures to mean anything.
    pub verdict: Verdict,
    /// Mean delta-chrF, NEP match rates, location accuracy.
    pub yardsticks: YardstickSummary,
    /// What the judge said (`None`: the run had no `--judge`).
    pub judge: Option<JudgeSummary>,
}

impl RunReport {
    /// The report of run `run`.
    pub fn of(store: &dyn RunRead, run: i64) -> Result<RunReport, RunError> {
        let settings = RunSettings::of(store, run)?;
        Ok(RunReport {
            info: store.run(run)?,
            summary: flow_summary(store, run)?,
            measurements: store.run_measurements(run, None)?,
            baseline: noop_baseline(store, run, &settings)?,
            context: run_context(store, run, &settings)?,
            unsandboxed_process: settings.is_process() && settings.sandbox != SandboxState::Bwrap,
            definition: Definition::from_settings(&settings, &store.run_trajectories(run)?),
            verdict: Verdict::of(store, run)?,
            yardsticks: YardstickSummary::of(store, run)?,
            judge: JudgeSummary::of(store, run)?,
        })
    }

    /// Mean BLEU-4 of the steps' content, if any step has one.
    pub fn mean_bleu(&self) -> Option<f64> {
        mean(&self.measurements.bleu)
    }

    /// Mean ES of the steps' content.
    pub fn mean_es(&self) -> Option<f64> {
        mean(&self.measurements.es)
    }

    /// Whether the stored settings say the suggester ran unsandboxed; `None` when
    /// the run predates the setting.
    pub fn unsandboxed(&self) -> Option<bool> {
        SandboxState::stored(&self.info.config).map(|sandbox| sandbox.is_unsandboxed())
    }
}

/// `runs` split into those whose rows can be read and those that cannot (an
/// out-of-range or mistyped value in the run's row, its settings, its steps or its
/// measurements), each with why: a bad run is reported as such and skipped, never
/// fatal for the others. Reads what a report reads of each run (and its
/// repetitions) but the costly context scores.
pub fn readable_runs(store: &dyn RunRead, runs: &[i64]) -> (Vec<i64>, Vec<(i64, String)>) {
    let readable_run = |run: i64| -> Result<(), RunError> {
        RunSettings::of(store, run)?;
        store.run(run)?;
        flow_summary(store, run)?;
        store.run_measurements(run, None)?;
        Ok(())
    };
    let mut readable = Vec::new();
    let mut unreadable = Vec::new();
    for &run in runs {
        let group = store.run_repetitions(run).map_err(RunError::from);
        let check = group.and_then(|group| group.into_iter().try_for_each(readable_run));
        match check {
            Ok(()) => readable.push(run),
            Err(e) => unreadable.push((run, super::error_chain(&e))),
        }
    }
    (readable, unreadable)
}

/// What a report over several runs compares: every run (repetition groups and the
/// baseline's included), where their definitions differ, and their common steps.
#[derive(Debug, Clone)]
pub struct Compared {
    /// Every run compared, in report order.
    pub runs: Vec<i64>,
    /// Where their definitions differ (one line per field; empty when they agree).
    pub differences: Vec<String>,
    /// Their common steps.
    pub common: Common,
    /// Whether the figures are computed over the common steps only (`--common`).
    pub restricted: bool,
}

impl Compared {
    /// The comparison of the `requested` runs (each with its repetitions) and the
    /// `baseline` run's group; `restrict`: figures over the common steps only.
    pub fn of(
        store: &dyn RunRead,
        requested: &[i64],
        baseline: Option<i64>,
        restrict: bool,
    ) -> Result<Compared, RunError> {
        let mut runs: Vec<i64> = Vec::new();
        for &run in requested.iter().chain(&baseline) {
            for r in store.run_repetitions(run)? {
                if !runs.contains(&r) {
                    runs.push(r);
                }
            }
        }
        let definitions = (runs.iter())
            .map(|&r| Ok((r, Definition::of(store, r)?)))
            .collect::<Result<Vec<_>, RunError>>()?;
        let pairs: Vec<(i64, &Definition)> = definitions.iter().map(|(r, d)| (*r, d)).collect();
        Ok(Compared {
            differences: differences(&pairs),
            common: Common::of(store, &runs)?,
            runs,
            restricted: restrict,
        })
    }

    /// What a reader must know before comparing the figures, one line each (none when
    /// the runs were scored alike over the same steps).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if !self.differences.is_empty() {
            notes.push(
                "the runs were scored differently, so their figures do not compare as they stand:"
                    .to_string(),
            );
            notes.extend(self.differences.iter().map(|d| format!("  {d}")));
        }
        if !self.common.is_whole() {
            let counts: Vec<String> = (self.runs.iter())
                .map(|&r| format!("run {r} {}", self.common.steps(r)))
                .collect();
            notes.push(if self.restricted {
                format!(
                    "compared on the steps every run has (--common): {}",
                    counts.join(", ")
                )
            } else {
                "each run's figures cover all its steps (--common false), though the runs do not share them all:"
                    .to_string()
            });
            notes.extend(
                (self.common.left_out_lines(10).into_iter()).map(|line| format!("  {line}")),
            );
        }
        notes
    }
}

/// What `builtin:noop` scores on a run's scored steps: mean BLEU-4 and ES of an empty
/// answer and of the unchanged current text, against the same gold edits, under the
/// run's rule.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Baseline {
    /// Mean BLEU-4 of an empty answer.
    pub empty_bleu: Option<f64>,
    /// Mean ES of an empty answer.
    pub empty_es: Option<f64>,
    /// Mean BLEU-4 of the unchanged text.
    pub unchanged_bleu: Option<f64>,
    /// Mean ES of the unchanged text.
    pub unchanged_es: Option<f64>,
}

/// ContextBench scores of one trajectory of a run, or why they cannot be computed.
#[derive(Debug, Clone)]
pub struct ContextScore {
    /// The trajectory's key.
    pub key: String,
    /// How many steps the trajectory has in the run (read or not).
    pub steps: usize,
    /// Its scores (the error shared: a report is cloned).
    pub scores: Result<SessionScores, Arc<ContextError>>,
}

/// Flow aggregation over every stored step of a run.
pub fn flow_summary(store: &dyn RunRead, run: i64) -> Result<FlowSummary, RunError> {
    let mut steps: Vec<FlowStep> = Vec::new();
    for t in store.run_trajectories(run)? {
        steps.extend(store.run_steps(run, &t.key)?.into_iter().map(|s| s.flow));
    }
    Ok(aggregate(&steps, &HISTORIAN_KS))
}

/// The trajectory a run stored under `key`; `lean`: without its edits' analysis
/// ([`Trajectory::from_json_lean`]).
fn stored_trajectory(run: i64, key: &str, text: &str, lean: bool) -> Result<Trajectory, RunError> {
    let parsed = match lean {
        true => Trajectory::from_json_lean(text),
        false => serde_json::from_str(text),
    };
    parsed.map_err(|source| RunError::NotATrajectory {
        what: format!("run {run}: {key}"),
        source,
    })
}

/// What the suggester read in each trajectory of a run, scored with ContextBench (fixed
/// mode) against the trajectory's edited lines plus the definitions they use.
fn run_context(
    store: &dyn RunRead,
    run: i64,
    settings: &RunSettings,
) -> Result<Vec<ContextScore>, RunError> {
    let mut out = Vec::new();
    for t in store.run_trajectories(run)? {
        let stored = store.run_reads(run, &t.key)?;
        let (Some(text), Some(initial), false) =
            (t.text, store.run_initial(run, &t.key)?, stored.is_empty())
        else {
            continue;
        };
        let trajectory = stored_trajectory(run, &t.key, &text, false)?;
        let mut applied = vec![initial];
        let steps = store.run_steps(run, &t.key)?;
        let count = steps.len();
        applied.extend(steps.into_iter().map(|s| s.applied));
        let mut reads: Vec<(usize, Vec<StepRead>)> = Vec::new();
        for (step, read) in stored {
            match reads.last_mut() {
                Some((s, list)) if *s == step => list.push(read),
                _ => reads.push((step, vec![read])),
            }
        }
        match score_replay_reads(
            &trajectory,
            &settings.exclude_origin,
            &applied,
            &reads,
            &ContextBenchConfig::default(),
        ) {
            Ok(Some(scores)) => out.push(ContextScore {
                key: t.key,
                steps: count,
                scores: Ok(scores),
            }),
            Ok(None) => {}
            Err(e) => out.push(ContextScore {
                key: t.key,
                steps: count,
                scores: Err(Arc::new(e)),
            }),
        }
    }
    Ok(out)
}

fn noop_baseline(
    store: &dyn RunRead,
    run: i64,
    settings: &RunSettings,
) -> Result<Baseline, RunError> {
    let rule = settings.rule();
    let texts: HashMap<String, Option<String>> = store
        .run_trajectories(run)?
        .into_iter()
        .map(|t| (t.key, t.text))
        .collect();
    let mut parsed: HashMap<String, Trajectory> = HashMap::new();
    // Each trajectory's edits by id, built once: one content step per step of a run.
    let mut indices: HashMap<String, HashMap<String, EditIndex>> = HashMap::new();
    let (mut eb, mut ee, mut ub, mut ue) = (vec![], vec![], vec![], vec![]);
    for (key, _, edit) in store.run_content_edits(run)? {
        if !parsed.contains_key(&key) {
            let Some(Some(text)) = texts.get(&key) else {
                continue;
            };
            // Only its edits' texts are read.
            let trajectory = stored_trajectory(run, &key, text, true)?;
            let ids = (trajectory.edit_indices().into_iter())
                .map(|(id, i)| (id.to_string(), i))
                .collect();
            indices.insert(key.clone(), ids);
            parsed.insert(key.clone(), trajectory);
        }
        let trajectory = &parsed[&key];
        let Some(gold) = indices[&key].get(&edit).map(|&i| trajectory.edit(i)) else {
            continue;
        };
        // When a gold edit is next, its lines hold its before-text (commit edits share
        // the parent; a recorded edit waits for the edits that rewrite its lines).
        let (before, after) = (&gold.before_text, &gold.after_text);
        let (b, e) = content_scores(rule, before, after, "");
        eb.push(b);
        ee.push(e);
        let (b, e) = content_scores(rule, before, after, before);
        ub.push(b);
        ue.push(e);
    }
    Ok(Baseline {
        empty_bleu: mean(&eb),
        empty_es: mean(&ee),
        unchanged_bleu: mean(&ub),
        unchanged_es: mean(&ue),
    })
}
