//! The figures `nextedit tasks report` shows, as typed values (printed by
//! [`super::text`] and [`super::json`]): per run, per scenario and per dependency
//! level; HumanEvo's evolution-aware vs -ignored table with each figure's inflation;
//! the correlation of each text metric with pass/fail.
//!
//! Only valid tasks count (their ground truth passed its tests and no do-nothing answer
//! did); invalid and non-discriminating ones are counted beside every figure and
//! summarized by reason, each task's output tail kept. Each task weighs the same: a figure is the mean over
//! tasks of the task's mean over its answers; pass@k is the unbiased estimator per task.

use crate::engine::task::ContextFrom;
use crate::store::TaskStore;
use crate::store::text_of;
use std::collections::BTreeMap;

use crate::base::sys::limits::Limit;
use crate::store::{Database, StoreError, StoredAnswer, StoredTask, TaskRunRow};

use crate::core::metrics::statistics::mean;
use crate::engine::task::covermap::{TestSelection, TestSource};
use crate::engine::task::score::{Correlation, pass_at_k, pearson};

/// The figures of a group of tasks.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// Tasks in the group.
    pub tasks: usize,
    /// Of which valid (counted below).
    pub valid: usize,
    /// Of which non-discriminating: the ground truth passes, and so does a do-nothing
    /// answer (left out).
    pub excluded: usize,
    /// Answers of the valid tasks.
    pub answers: usize,
    /// Of which failed calls (no answer; each counts as a failing answer in the pass
    /// rates, shown beside them).
    pub failed: usize,
    /// pass@1 (mean over valid tasks of the unbiased estimator).
    pub pass_at_1: Option<f64>,
    /// pass@k with k = the run's samples, when it asked more than one.
    pub pass_at_k: Option<(u32, f64)>,
    /// Exact match rate.
    pub exact: Option<f64>,
    /// Edit similarity.
    pub edit_similarity: Option<f64>,
    /// ES-Line.
    pub es_line: Option<f64>,
    /// ES-Token.
    pub es_token: Option<f64>,
    /// BLEU-4, 0–100.
    pub bleu: Option<f64>,
    /// SARI.
    pub sari: Option<f64>,
    /// Stopped at the right point, over the answers of block tasks.
    pub stopped: Option<f64>,
}

/// One run's report.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFigures {
    /// The run.
    pub run: i64,
    /// Its suggester.
    pub suggester: String,
    /// Samples per task.
    pub samples: u32,
    /// Whether every task is done.
    pub finished: bool,
    /// All tasks.
    pub total: Figures,
    /// By scenario key.
    pub by_scenario: Vec<(String, Figures)>,
    /// By dependency level key (`none` for tasks without one).
    pub by_dependency: Vec<(String, Figures)>,
    /// The tasks left out, by kind and reason.
    pub left_out: Vec<LeftOut>,
    /// How its tests and suggester were isolated, as stored (`bwrap`, `off`; `auto`
    /// from older versions, which fell back to none when bubblewrap did not work).
    pub sandbox: String,
    /// Whether they may have run unsandboxed (anything but `bwrap`).
    pub unsandboxed: bool,
    /// Answers whose test run hit a limit, per limit (only those hit).
    pub limits_hit: Vec<(Limit, usize)>,
    /// Tasks by where their tests came from (`coverage`, `name`, `none`; only those
    /// met), with how many of them are valid.
    pub tests_by: Vec<(TestSource, usize, usize)>,
    /// Each task's choice of tests, by task id (tasks stored with none left out).
    pub selections: Vec<(String, TestSelection)>,
}

/// Why a task left out of the figures is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LeftOutKind {
    /// Its ground truth fails its tests, or they could not run.
    Invalid,
    /// A do-nothing answer passes its tests.
    NonDiscriminating,
}

impl LeftOutKind {
    /// The kind's key in JSON and its name in text.
    pub fn key(self) -> &'static str {
        match self {
            LeftOutKind::Invalid => "invalid",
            LeftOutKind::NonDiscriminating => "non_discriminating",
        }
    }
}

/// The tasks left out for one reason.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    /// Invalid or non-discriminating.
    pub kind: LeftOutKind,
    /// The reason, as stored.
    pub reason: String,
    /// Each task's id and the tail of the test output that decided it.
    pub tasks: Vec<(String, String)>,
}

/// One row of the evolution table: a dependency level's figures with context from the
/// state (aware) and from the latest version (ignored).
#[derive(Debug, Clone, PartialEq)]
pub struct EvolutionRow {
    /// Dependency level key, or `all`.
    pub level: String,
    /// Suggester.
    pub suggester: String,
    /// Tasks whose context came from their state.
    pub aware: Figures,
    /// Tasks whose context came from the latest version.
    pub ignored: Figures,
}

/// A metric's correlation with pass/fail.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricCorrelation {
    /// Metric key (`es_token`, …).
    pub metric: &'static str,
    /// Pearson r with pass (1) / fail (0), over every answer of the valid tasks.
    pub correlation: Correlation,
}

/// What `tasks report` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct TasksReport {
    /// Per run.
    pub runs: Vec<RunFigures>,
    /// HumanEvo's table, when the runs hold tasks of both context origins.
    pub evolution: Vec<EvolutionRow>,
    /// The correlation table (`--correlation`).
    pub correlation: Option<Vec<MetricCorrelation>>,
}

/// Why a report cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A run that is not there.
    #[error("no task run {0} in the database")]
    NoRun(i64),
}

/// The report of `runs` from `db`.
pub fn build_report(
    db: &Database,
    runs: &[i64],
    correlation: bool,
) -> Result<TasksReport, ReportError> {
    let mut loaded: Vec<(TaskRunRow, Vec<StoredTask>)> = Vec::new();
    for &id in runs {
        let row = db.task_run(id)?.ok_or(ReportError::NoRun(id))?;
        let tasks = db.task_run_tasks(id)?;
        loaded.push((row, tasks));
    }
    let report_runs = loaded
        .iter()
        .map(|(row, tasks)| run_figures(row, tasks))
        .collect();
    let evolution = evolution_rows(&loaded);
    let correlation = correlation.then(|| correlations(loaded.iter().flat_map(|(_, t)| t)));
    Ok(TasksReport {
        runs: report_runs,
        evolution,
        correlation,
    })
}

fn run_figures(row: &TaskRunRow, tasks: &[StoredTask]) -> RunFigures {
    let sandbox = serde_json::from_str::<serde_json::Value>(&row.settings)
        .ok()
        .and_then(|v| v.get("sandbox")?.as_str().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string());
    let limits_hit = Limit::ALL
        .into_iter()
        .map(|limit| {
            let answers = tasks.iter().flat_map(|t| &t.answers);
            (limit, answers.filter(|a| a.limit == Some(limit)).count())
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    let group = |key: &dyn Fn(&StoredTask) -> String| -> Vec<(String, Figures)> {
        let mut groups: BTreeMap<String, Vec<&StoredTask>> = BTreeMap::new();
        for task in tasks {
            groups.entry(key(task)).or_default().push(task);
        }
        groups
            .into_iter()
            .map(|(k, ts)| (k, figures(&ts, row.samples)))
            .collect()
    };
    RunFigures {
        run: row.id,
        suggester: row.suggester.clone(),
        samples: row.samples,
        finished: row.finished,
        total: figures(&tasks.iter().collect::<Vec<_>>(), row.samples),
        by_scenario: group(&|t| text_of(&t.scenario)),
        by_dependency: group(&dependency_level),
        left_out: left_out(tasks),
        unsandboxed: sandbox != "bwrap",
        sandbox,
        limits_hit,
        tests_by: [TestSource::Coverage, TestSource::Name, TestSource::None]
            .into_iter()
            .map(|source| {
                let of = || {
                    (tasks.iter())
                        .filter(|t| t.selection.as_ref().map(|s| s.source) == Some(source))
                };
                (source, of().count(), of().filter(|t| t.valid).count())
            })
            .filter(|(_, n, _)| *n > 0)
            .collect(),
        selections: (tasks.iter())
            .filter_map(|t| Some((t.task_id.clone(), t.selection.clone()?)))
            .collect(),
    }
}

/// The tasks of a run left out, grouped by kind and reason in the order first met.
fn left_out(tasks: &[StoredTask]) -> Vec<LeftOut> {
    let mut groups: Vec<LeftOut> = Vec::new();
    for task in tasks.iter().filter(|t| !t.valid) {
        let (kind, reason, output) = match &task.excluded {
            Some(why) => (
                LeftOutKind::NonDiscriminating,
                why.clone(),
                task.excluded_output.clone(),
            ),
            None => (
                LeftOutKind::Invalid,
                task.invalid_reason.clone().unwrap_or_default(),
                task.truth_output.clone(),
            ),
        };
        let entry = (task.task_id.clone(), output.unwrap_or_default());
        match groups
            .iter_mut()
            .find(|g| g.kind == kind && g.reason == reason)
        {
            Some(group) => group.tasks.push(entry),
            None => groups.push(LeftOut {
                kind,
                reason,
                tasks: vec![entry],
            }),
        }
    }
    groups.sort_by_key(|g| g.kind);
    groups
}

/// The figures of `tasks` (valid ones counted) for runs of `samples` samples.
pub fn figures(tasks: &[&StoredTask], samples: u32) -> Figures {
    let valid: Vec<&&StoredTask> = tasks
        .iter()
        .filter(|t| t.valid && !t.answers.is_empty())
        .collect();
    let per_task = |f: &dyn Fn(&StoredAnswer) -> Option<f64>| -> Option<f64> {
        let means: Vec<f64> = valid
            .iter()
            .filter_map(|t| mean(t.answers.iter().filter_map(f)))
            .collect();
        mean(means)
    };
    let pass_k = |k: usize| {
        mean(valid.iter().filter_map(|t| {
            let c = t.answers.iter().filter(|a| a.passed).count();
            pass_at_k(t.answers.len(), c, k)
        }))
    };
    let bool_value = |b: bool| if b { 1.0 } else { 0.0 };
    Figures {
        tasks: tasks.len(),
        valid: valid.len(),
        excluded: tasks.iter().filter(|t| t.excluded.is_some()).count(),
        answers: valid.iter().map(|t| t.answers.len()).sum(),
        failed: (valid.iter().flat_map(|t| &t.answers))
            .filter(|a| a.error.is_some())
            .count(),
        pass_at_1: pass_k(1),
        pass_at_k: (samples > 1)
            .then(|| pass_k(samples as usize).map(|v| (samples, v)))
            .flatten(),
        exact: per_task(&|a| Some(bool_value(a.scores.exact))),
        edit_similarity: per_task(&|a| Some(a.scores.edit_similarity)),
        es_line: per_task(&|a| Some(a.scores.es_line)),
        es_token: per_task(&|a| Some(a.scores.es_token)),
        bleu: per_task(&|a| Some(a.scores.bleu)),
        sari: per_task(&|a| Some(a.scores.sari)),
        stopped: per_task(&|a| a.scores.stopped.map(bool_value)),
    }
}

/// A task's dependency level as reports group by it (`none` without one).
fn dependency_level(task: &StoredTask) -> String {
    task.dependency
        .as_ref()
        .map_or_else(|| "none".into(), text_of)
}

/// Per suggester, per dependency level (and `all`): state-context tasks beside
/// head-context tasks, when both are there.
fn evolution_rows(loaded: &[(TaskRunRow, Vec<StoredTask>)]) -> Vec<EvolutionRow> {
    let mut by_suggester: BTreeMap<String, (Vec<&StoredTask>, Vec<&StoredTask>, u32)> =
        BTreeMap::new();
    for (row, tasks) in loaded {
        let entry = by_suggester
            .entry(row.suggester.clone())
            .or_insert_with(|| (Vec::new(), Vec::new(), row.samples));
        for task in tasks {
            match task.context_from {
                Some(ContextFrom::Head) => entry.1.push(task),
                Some(ContextFrom::State) => entry.0.push(task),
                None => {}
            }
        }
    }
    let mut rows = Vec::new();
    for (suggester, (aware, ignored, samples)) in by_suggester {
        if aware.is_empty() || ignored.is_empty() {
            continue;
        }
        let mut levels: Vec<String> = (aware.iter().chain(&ignored))
            .map(|t| dependency_level(t))
            .collect();
        levels.sort();
        levels.dedup();
        for l in levels.iter().map(String::as_str).chain(["all"]) {
            fn pick<'t>(ts: &[&'t StoredTask], l: &str) -> Vec<&'t StoredTask> {
                ts.iter()
                    .filter(|t| l == "all" || dependency_level(t) == l)
                    .copied()
                    .collect()
            }
            rows.push(EvolutionRow {
                level: l.to_string(),
                suggester: suggester.clone(),
                aware: figures(&pick(&aware, l), samples),
                ignored: figures(&pick(&ignored, l), samples),
            });
        }
    }
    rows
}

/// The metrics correlated with pass/fail, with how each is read from an answer.
pub const CORRELATED: [&str; 6] = [
    "es_line",
    "es_token",
    "bleu",
    "sari",
    "edit_similarity",
    "exact",
];

fn metric(answer: &StoredAnswer, key: &str) -> f64 {
    match key {
        "es_line" => answer.scores.es_line,
        "es_token" => answer.scores.es_token,
        "bleu" => answer.scores.bleu,
        "sari" => answer.scores.sari,
        "edit_similarity" => answer.scores.edit_similarity,
        _ => f64::from(u8::from(answer.scores.exact)),
    }
}

fn correlations<'t>(tasks: impl Iterator<Item = &'t StoredTask>) -> Vec<MetricCorrelation> {
    let answers: Vec<&StoredAnswer> = tasks
        .filter(|t| t.valid)
        .flat_map(|t| t.answers.iter())
        .collect();
    let passed: Vec<f64> = answers
        .iter()
        .map(|a| f64::from(u8::from(a.passed)))
        .collect();
    CORRELATED
        .iter()
        .map(|&key| {
            let xs: Vec<f64> = answers.iter().map(|a| metric(a, key)).collect();
            MetricCorrelation {
                metric: key,
                correlation: pearson(&xs, &passed),
            }
        })
        .collect()
}
