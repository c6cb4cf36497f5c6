//! The JSON `nextedit replay`, `report` and `runs` print, built from typed values in
//! this one module (the serialized forms are a wire format: field names never change;
//! fields are added). `--json` prints one document, `--jsonl` the same objects one per
//! line ([`Layout`]). `replay --json`'s one document ([`ReplayDocument`]), whose summary
//! comes before its steps, is written when the run is done, each trajectory's new steps
//! read back from the store a page at a time.

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::definition::Definition;
use super::figures::{Estimate, GroupFigures, against};
use super::plan::SandboxState;
use super::report::{Compared, RunReport};
use super::verdict::Verdict;
use super::{NewSteps, RunError, RunRead};
use crate::core::metrics::flow::FlowSummary;
use crate::core::metrics::statistics::quantile;
use crate::engine::suggest::Call;
use crate::store::{RunSummary, StoredStep};

/// How JSON is printed: one document (`--json`), or one object per line (`--jsonl`,
/// JSON Lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One JSON document.
    Document,
    /// One JSON object per line.
    Lines,
}

/// The first line of `replay --jsonl`: the run and where it is stored.
pub fn run_header(run: i64, db: &Path, sandbox: &SandboxState) -> Value {
    json!({"type": "run", "run": run, "db": db, "sandbox": sandbox.key()})
}

/// Writes a replayed trajectory's new steps as one object, step by step as they come:
/// `{"key": …, "steps": [step, …], "type": "trajectory"}` (keys sorted, as serde_json
/// writes every other object here). Returns how many steps it wrote.
pub fn write_trajectory_steps(
    out: &mut impl Write,
    key: &str,
    steps: &mut dyn Iterator<Item = Result<StoredStep, RunError>>,
) -> Result<usize, RunError> {
    let print = RunError::Print;
    write!(out, "{{\"key\":{},\"steps\":[", json!(key)).map_err(print)?;
    let mut count = 0;
    for s in steps {
        if count > 0 {
            out.write_all(b",").map_err(print)?;
        }
        write!(out, "{}", step(&s?)).map_err(print)?;
        count += 1;
    }
    write!(out, "],\"type\":\"trajectory\"}}").map_err(print)?;
    Ok(count)
}

/// One step.
pub fn step(s: &StoredStep) -> Value {
    let failure = |call: Call| {
        s.failures
            .iter()
            .find(|f| f.call == call)
            .map(|f| f.failure.to_string())
    };
    json!({
        "step": s.step,
        "allowed": s.allowed,
        "predictions": s.predictions.iter().map(|p| json!({
            "rank": p.rank, "file": p.file, "start_line": p.start_line, "end_line": p.end_line,
            "matched": p.matched, "class": p.class.key(),
        })).collect::<Vec<_>>(),
        "precision": s.prf.precision, "recall": s.prf.recall, "f1": s.prf.f1,
        "content": s.content.as_ref().map(|c| json!({"edit": c.edit, "bleu": c.bleu, "es": c.es, "generated": c.generated, "answer": c.answer})),
        "suggest_error": failure(Call::Suggest), "generate_error": failure(Call::Generate),
        "applied": s.applied,
    })
}

/// The last line of `replay --jsonl`: the first run's flow summary, how many
/// trajectories failed, and the verdict on each run (`failed` when too many of its
/// calls did).
pub fn run_summary(
    run: i64,
    suggester: &str,
    summary: &FlowSummary,
    failed: usize,
    verdicts: &[(i64, Verdict)],
) -> Value {
    let verdicts: Vec<Value> = (verdicts.iter())
        .map(|(run, v)| json!({"run": run, "verdict": verdict(v)}))
        .collect();
    json!({"type": "summary", "run": run, "suggester": suggester, "summary": summary,
           "failed": failed, "verdicts": verdicts})
}

/// `replay --json`: one document, `{"run": header, "summary": …, "trajectories": […]}`
/// (keys sorted, as serde_json writes them). The summary comes before the steps, so
/// the document is written when the run is done: while it goes, only the header and
/// which steps each trajectory added are kept (worker threads add to them); the steps
/// are read back from the store a page at a time as they are written, so a long run's
/// steps are never all in memory.
#[derive(Debug, Default)]
pub struct ReplayDocument {
    header: std::sync::Mutex<Option<Value>>,
    trajectories: std::sync::Mutex<Vec<NewSteps>>,
}

impl ReplayDocument {
    /// Keeps the header ([`run_header`]).
    pub fn set_header(&self, header: Value) {
        *self.header.lock().expect("header lock") = Some(header);
    }

    /// Adds a trajectory's new steps (written as [`write_trajectory_steps`] does).
    pub fn push(&self, trajectory: NewSteps) {
        self.trajectories
            .lock()
            .expect("trajectories lock")
            .push(trajectory);
    }

    /// Writes the document, with the summary ([`run_summary`]) and the steps read from
    /// `store`, as one line.
    pub fn write(
        &self,
        out: &mut impl Write,
        store: &dyn RunRead,
        summary: &Value,
    ) -> Result<(), RunError> {
        let print = RunError::Print;
        let header = self.header.lock().expect("header lock").take();
        let trajectories = std::mem::take(&mut *self.trajectories.lock().expect("lock"));
        write!(
            out,
            "{{\"run\":{},\"summary\":{summary},\"trajectories\":[",
            header.unwrap_or(Value::Null)
        )
        .map_err(print)?;
        for (i, new) in trajectories.iter().enumerate() {
            if i > 0 {
                out.write_all(b",").map_err(print)?;
            }
            write_trajectory_steps(out, &new.key, &mut new.pages(store))?;
        }
        writeln!(out, "]}}").map_err(print)
    }
}

/// A run's scoring definition.
pub fn definition(d: &Definition) -> Value {
    json!({"suggester": d.suggester, "match": d.match_rule, "es_threshold": d.es_threshold,
           "order": d.order, "reveal": d.reveal, "exclude_origin": d.exclude_origin,
           "sandbox": d.sandbox, "trajectories": d.trajectories,
           "trajectory_set": d.trajectory_set})
}

/// The verdict on a run: whether it failed, why, and its calls by kind.
pub fn verdict(v: &Verdict) -> Value {
    let calls: serde_json::Map<String, Value> = (v.tallies.iter())
        .map(|t| {
            let kinds: serde_json::Map<String, Value> = (t.kinds.iter())
                .map(|(k, n)| (k.clone(), json!(n)))
                .collect();
            (
                t.call.key().to_string(),
                json!({"made": t.made, "failed": t.failed, "kinds": kinds}),
            )
        })
        .collect();
    json!({"failed": v.failed(), "reason": v.reason(), "max_failed_share": v.max_failed_share,
           "calls": calls})
}

/// What a report compared: where the runs' definitions differ, whether the figures
/// cover only the common steps, how many each run keeps and what was left out.
pub fn comparison(c: &Compared) -> Value {
    let steps: serde_json::Map<String, Value> = (c.runs.iter())
        .map(|r| (r.to_string(), json!(c.common.steps(*r))))
        .collect();
    let left_out: Vec<Value> = (c.common.left_out.iter())
        .map(|l| json!({"run": l.run, "key": l.key, "steps": l.steps, "why": l.why}))
        .collect();
    json!({"runs": c.runs, "differences": c.differences, "common": c.restricted,
           "common_steps": steps, "left_out": left_out, "notes": c.notes()})
}

/// `report --json`: every run's report and what was compared, as one document.
pub fn report_document(runs: Vec<Value>, compared: &Compared) -> Value {
    json!({"runs": runs, "comparison": comparison(compared)})
}

/// One run of `runs list --json` (and `report --json` without runs).
pub fn run_list_entry(
    info: &RunSummary,
    summary: &FlowSummary,
    d: &Definition,
    v: &Verdict,
) -> Value {
    json!({"id": info.id, "started_at": info.started_at, "status": info.status,
           "suggester": info.suggester, "trajectories": info.trajectories,
           "done": info.done, "failed": info.failed, "steps": info.steps,
           "micro_f1": (summary.steps > 0).then_some(summary.micro.f1),
           "sandbox": info.config.get("sandbox"),
           "repetition": info.repetition, "repetition_of": info.repetition_of,
           "definition": definition(d), "verdict": verdict(v)})
}

/// A run of `runs list --json` whose rows could not be read, and why.
pub fn unreadable_run(id: i64, why: &str) -> Value {
    json!({"id": id, "unreadable": crate::base::secrets::scrub(why)})
}

/// One run of `report --json`.
pub fn report(r: &RunReport) -> Value {
    let m = &r.measurements;
    let context: Vec<Value> = r
        .context
        .iter()
        .map(|c| match &c.scores {
            Ok(s) => json!({"key": c.key, "steps": c.steps, "scores": s}),
            Err(e) => json!({"key": c.key, "steps": c.steps, "error": e.to_string()}),
        })
        .collect();
    let errors: serde_json::Map<String, Value> = m
        .errors
        .iter()
        .map(|(k, n)| (k.clone(), json!(n)))
        .collect();
    let b = &r.baseline;
    let mut results = json!({
        "content_steps": m.bleu.len(),
        "mean_bleu": r.mean_bleu(),
        "mean_es": r.mean_es(),
        "yardsticks": r.yardsticks,
        "baseline": {
            "empty_bleu": b.empty_bleu, "empty_es": b.empty_es,
            "unchanged_bleu": b.unchanged_bleu, "unchanged_es": b.unchanged_es,
        },
        "latency_ms": {
            "suggest": {"p50": quantile(&m.suggest_ms, 0.5), "p95": quantile(&m.suggest_ms, 0.95)},
            "generate": {"p50": quantile(&m.generate_ms, 0.5), "p95": quantile(&m.generate_ms, 0.95)},
        },
        "errors": errors,
        "cache": {
            "mode": info_cache_mode(&r.info),
            "served": m.cache_served,
            "live": m.cache_live,
        },
    });
    // Only a judged run has the judge's figures (`replay --judge`).
    if let Some(judge) = &r.judge {
        results["judge"] = json!(judge);
    }
    let info = &r.info;
    let run = json!({"id": info.id, "started_at": info.started_at, "status": info.status,
                     "suggester": info.suggester, "config": info.config,
                     "trajectories": info.trajectories, "done": info.done,
                     "failed": info.failed, "steps": info.steps});
    json!({"run": run, "sandbox": info.config.get("sandbox").cloned().unwrap_or(json!("unknown")),
           "unsandboxed": r.unsandboxed(), "definition": definition(&r.definition),
           "verdict": verdict(&r.verdict), "summary": r.summary, "results": results,
           "contextbench": context})
}

/// The stored cache mode of a run (`off` for runs that predate the cache).
fn info_cache_mode(info: &RunSummary) -> &str {
    info.config["cache"].as_str().unwrap_or("off")
}

/// One run of `report --json` with its figures over its repetitions (`repetitions`:
/// the run ids; `figures`: each figure's mean, 95 % interval and values), beside the
/// baseline run's when given (`baseline`, `delta`, `moved`).
pub fn report_with_figures(
    r: &RunReport,
    run: &GroupFigures,
    baseline: Option<&GroupFigures>,
) -> Value {
    let estimate = |e: &Estimate| json!({"mean": e.mean, "ci95": e.interval.map(|(lo, hi)| [lo, hi]), "values": e.values});
    let mut figures = serde_json::Map::new();
    for (name, e) in &run.figures {
        let mut figure = estimate(e);
        if let Some(b) = baseline {
            let (base, c) = against(name, e, b);
            figure["baseline"] = estimate(base);
            figure["delta"] = json!(c.delta);
            figure["moved"] = json!(c.moved);
        }
        figures.insert(name.to_string(), figure);
    }
    let mut value = report(r);
    value["repetitions"] = json!(run.runs);
    value["figures"] = Value::Object(figures);
    if let Some(b) = baseline {
        value["baseline_repetitions"] = json!(b.runs);
    }
    value
}
