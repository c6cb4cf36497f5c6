//! The steps some runs have in common, and a read-only view of the store that holds
//! only those ([`CommonSteps`]), so `report` compares runs on the same steps
//! (`--common`, the default). A trajectory is the same in two runs when its stored
//! text is (but for where it was checked out: [`super::definition::trajectory_digest`]),
//! whatever its key; a step is
//! common when every run stored it. What is left out is named ([`LeftOut`]). Through
//! this view `report`, its JSON and its HTML page compute every figure of a comparison
//! (`report::Compared`, with the notes it prints).

use std::collections::{BTreeMap, BTreeSet};

use super::definition::trajectory_digest;
use super::{RunError, RunRead};
use crate::engine::judge::Judgement;
use crate::engine::replay::yardsticks::StepYardsticks;
use crate::engine::suggest::StepRead;
use crate::store::{
    CallTally, RunMeasurements, RunSummary, RunTrajectory, StepDetail, StepFlow, StepSet,
    StoreError, StoredStep,
};

/// Steps of one run's trajectory that are not compared, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The run.
    pub run: i64,
    /// The trajectory's key in that run.
    pub key: String,
    /// How many of its stored steps are left out.
    pub steps: usize,
    /// Why: `not in run 4`, or `run 4 has 3 of its 7 steps`.
    pub why: String,
}

/// The common steps of some runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Common {
    /// Per run, the steps it keeps.
    pub kept: BTreeMap<i64, StepSet>,
    /// What was left out, run by run in the order given.
    pub left_out: Vec<LeftOut>,
}

impl Common {
    /// The steps every one of `runs` stored, trajectory by trajectory.
    pub fn of(store: &dyn RunRead, runs: &[i64]) -> Result<Common, RunError> {
        // Per run: identity (digest, occurrence) → (key, its step numbers).
        type Steps = BTreeMap<(String, usize), (String, BTreeSet<usize>)>;
        let mut per_run: Vec<(i64, Steps)> = Vec::new();
        for &run in runs {
            if per_run.iter().any(|(r, _)| *r == run) {
                continue;
            }
            let mut steps = Steps::new();
            for t in store.run_trajectories(run)? {
                let digest = trajectory_digest(&t.key, t.text.as_deref());
                let occurrence = steps.keys().filter(|(d, _)| *d == digest).count();
                let numbers = (store.run_steps(run, &t.key)?.iter())
                    .map(|s| s.step)
                    .collect();
                steps.insert((digest, occurrence), (t.key, numbers));
            }
            per_run.push((run, steps));
        }
        let mut common = Common::default();
        for (run, steps) in &per_run {
            let mut kept = StepSet::default();
            for (identity, (key, numbers)) in steps {
                let mut shared = numbers.clone();
                let mut why = None;
                let mut missing = false;
                for (other, other_steps) in &per_run {
                    match other_steps.get(identity) {
                        None => {
                            why.get_or_insert_with(|| format!("not in run {other}"));
                            missing = true;
                            shared.clear();
                        }
                        Some((_, theirs)) => {
                            let before = shared.len();
                            shared = shared.intersection(theirs).copied().collect();
                            if shared.len() < before {
                                why.get_or_insert_with(|| {
                                    format!(
                                        "run {other} has {} of its {} steps",
                                        theirs.intersection(numbers).count(),
                                        numbers.len()
                                    )
                                });
                            }
                        }
                    }
                }
                if shared.len() < numbers.len() || why.is_some() {
                    common.left_out.push(LeftOut {
                        run: *run,
                        key: key.clone(),
                        steps: numbers.len() - shared.len(),
                        why: why.unwrap_or_default(),
                    });
                }
                // A trajectory every run has keeps its own failures (`initialize`) too.
                if !missing {
                    kept.steps.insert(key.clone(), shared);
                }
            }
            common.kept.insert(*run, kept);
        }
        Ok(common)
    }

    /// Whether every run keeps every step it stored.
    pub fn is_whole(&self) -> bool {
        self.left_out.is_empty()
    }

    /// How many steps run `run` keeps.
    pub fn steps(&self, run: i64) -> usize {
        self.kept
            .get(&run)
            .map_or(0, |k| k.steps.values().map(BTreeSet::len).sum())
    }

    /// What was left out, one line per run: `run 3: left out 2 trajectories, 9 steps:
    /// a.json (5 steps: not in run 4), …` (at most `shown` trajectories named per run).
    pub fn left_out_lines(&self, shown: usize) -> Vec<String> {
        let mut lines = Vec::new();
        let mut runs: Vec<i64> = self.left_out.iter().map(|l| l.run).collect();
        runs.dedup();
        for run in runs {
            let items: Vec<&LeftOut> = self.left_out.iter().filter(|l| l.run == run).collect();
            let steps: usize = items.iter().map(|l| l.steps).sum();
            let mut named: Vec<String> = (items.iter().take(shown))
                .map(|l| {
                    let s = if l.steps == 1 { "" } else { "s" };
                    format!("{} ({} step{s}: {})", l.key, l.steps, l.why)
                })
                .collect();
            if items.len() > shown {
                named.push(format!("and {} more", items.len() - shown));
            }
            let t = if items.len() == 1 { "y" } else { "ies" };
            let s = if steps == 1 { "" } else { "s" };
            lines.push(format!(
                "run {run}: left out {} trajector{t}, {steps} step{s}: {}",
                items.len(),
                named.join(", ")
            ));
        }
        lines
    }

    /// The store as these common steps see it.
    pub fn view<'a>(&'a self, store: &'a dyn RunRead) -> CommonSteps<'a> {
        CommonSteps {
            store,
            common: self,
        }
    }
}

/// A read-only view of a store that shows, of the runs a [`Common`] covers, only
/// their common steps (and the reads, content and failures of those steps). A run's
/// summary, settings, trajectories and call tallies are shown whole: they describe
/// the run, not the comparison. Runs it does not cover are shown whole.
pub struct CommonSteps<'a> {
    store: &'a dyn RunRead,
    common: &'a Common,
}

impl CommonSteps<'_> {
    fn kept(&self, run: i64) -> Option<&StepSet> {
        self.common.kept.get(&run)
    }

    fn holds(&self, run: i64, key: &str, step: usize) -> bool {
        self.kept(run).is_none_or(|k| k.holds(key, Some(step)))
    }
}

impl RunRead for CommonSteps<'_> {
    fn run_repetitions(&self, run: i64) -> Result<Vec<i64>, StoreError> {
        self.store.run_repetitions(run)
    }

    fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        self.store.runs()
    }

    fn run_ids(&self) -> Result<Vec<i64>, StoreError> {
        self.store.run_ids()
    }

    fn run(&self, run: i64) -> Result<RunSummary, StoreError> {
        self.store.run(run)
    }

    fn run_shard(&self, run: i64) -> Result<Option<serde_json::Value>, StoreError> {
        self.store.run_shard(run)
    }

    fn run_trajectories(&self, run: i64) -> Result<Vec<RunTrajectory>, StoreError> {
        self.store.run_trajectories(run)
    }

    fn run_trajectory_text(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
        self.store.run_trajectory_text(run, key)
    }

    fn stored_steps(
        &self,
        run: i64,
        key: &str,
        mut after: Option<usize>,
        limit: usize,
    ) -> Result<Vec<StoredStep>, StoreError> {
        // A page of common steps: the store's pages less the others, until it is full
        // or the store has no more (a short page is the last one).
        let mut kept = Vec::new();
        while kept.len() < limit {
            let want = limit - kept.len();
            let page = self.store.stored_steps(run, key, after, want)?;
            let last = page.len() < want;
            after = page.last().map(|s| s.step).or(after);
            kept.extend(page.into_iter().filter(|s| self.holds(run, key, s.step)));
            if last {
                break;
            }
        }
        Ok(kept)
    }

    fn run_steps(&self, run: i64, key: &str) -> Result<Vec<StepFlow>, StoreError> {
        let mut steps = self.store.run_steps(run, key)?;
        steps.retain(|s| self.holds(run, key, s.step));
        Ok(steps)
    }

    fn run_step_details(&self, run: i64, key: &str) -> Result<Vec<StepDetail>, StoreError> {
        let mut steps = self.store.run_step_details(run, key)?;
        steps.retain(|s| self.holds(run, key, s.step));
        Ok(steps)
    }

    fn run_initial(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
        self.store.run_initial(run, key)
    }

    fn run_reads(&self, run: i64, key: &str) -> Result<Vec<(usize, StepRead)>, StoreError> {
        let mut reads = self.store.run_reads(run, key)?;
        reads.retain(|(step, _)| self.holds(run, key, *step));
        Ok(reads)
    }

    fn run_measurements(
        &self,
        run: i64,
        keep: Option<&StepSet>,
    ) -> Result<RunMeasurements, StoreError> {
        self.store.run_measurements(run, keep.or(self.kept(run)))
    }

    fn run_content_edits(&self, run: i64) -> Result<Vec<(String, usize, String)>, StoreError> {
        let mut edits = self.store.run_content_edits(run)?;
        edits.retain(|(key, step, _)| self.holds(run, key, *step));
        Ok(edits)
    }

    fn run_call_tallies(&self, run: i64) -> Result<Vec<CallTally>, StoreError> {
        self.store.run_call_tallies(run)
    }

    fn run_step_yardsticks(
        &self,
        run: i64,
    ) -> Result<Vec<(String, usize, StepYardsticks)>, StoreError> {
        let mut rows = self.store.run_step_yardsticks(run)?;
        rows.retain(|(key, step, _)| self.holds(run, key, *step));
        Ok(rows)
    }

    fn run_step_judgements(&self, run: i64) -> Result<Vec<(String, usize, Judgement)>, StoreError> {
        let mut rows = self.store.run_step_judgements(run)?;
        rows.retain(|(key, step, _)| self.holds(run, key, *step));
        Ok(rows)
    }
}
