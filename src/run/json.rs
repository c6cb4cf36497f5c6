//! The JSON `nextedit replay`, `report` and `runs` print, built from typed values in
//! this one module (the serialized forms are a wire format: field names never change).

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::RunError;
use super::figures::{Estimate, GroupFigures, compare};
use super::plan::SandboxState;
use super::report::{RunReport, quantile};
use crate::metrics::flow::FlowSummary;
use crate::store::{RunSummary, StoredStep};
use crate::suggest::Call;

/// The first line of `replay --json`: the run and where it is stored.
pub fn run_header(run: i64, db: &Path, sandbox: &SandboxState) -> Value {
    json!({"type": "run", "run": run, "db": db, "sandbox": sandbox.key()})
}

/// Writes a replayed trajectory's new steps as one line, step by step as they come:
/// `{"key": …, "steps": [step, …], "type": "trajectory"}` (the keys in the order every
/// other line has them: sorted). Returns how many steps it wrote.
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
    writeln!(out, "],\"type\":\"trajectory\"}}").map_err(print)?;
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
        "content": s.content.as_ref().map(|c| json!({"edit": c.edit, "bleu": c.bleu, "es": c.es, "generated": c.generated})),
        "suggest_error": failure(Call::Suggest), "generate_error": failure(Call::Generate),
        "applied": s.applied,
    })
}

/// The last line of `replay --json`.
pub fn run_summary(run: i64, suggester: &str, summary: &FlowSummary, failed: usize) -> Value {
    json!({"type": "summary", "run": run, "suggester": suggester, "summary": summary, "failed": failed})
}

/// One run of `runs list --json` (and `report --json` without runs).
pub fn run_list_entry(info: &RunSummary, summary: &FlowSummary) -> Value {
    json!({"id": info.id, "started_at": info.started_at, "status": info.status,
           "suggester": info.suggester, "trajectories": info.trajectories,
           "done": info.done, "failed": info.failed, "steps": info.steps,
           "micro_f1": summary.micro.f1, "sandbox": info.config.get("sandbox"),
           "repetition": info.repetition, "repetition_of": info.repetition_of})
}

/// One run of `report --json`.
pub fn report(r: &RunReport) -> Value {
    let m = &r.measurements;
    let context: Vec<Value> = r
        .context
        .iter()
        .map(|c| match &c.scores {
            Ok(s) => json!({"key": c.key, "scores": s}),
            Err(e) => json!({"key": c.key, "error": e}),
        })
        .collect();
    let errors: serde_json::Map<String, Value> = m
        .errors
        .iter()
        .map(|(k, n)| (k.clone(), json!(n)))
        .collect();
    let b = &r.baseline;
    let results = json!({
        "content_steps": m.bleu.len(),
        "mean_bleu": r.mean_bleu(),
        "mean_es": r.mean_es(),
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
    let info = &r.info;
    let run = json!({"id": info.id, "started_at": info.started_at, "status": info.status,
                     "suggester": info.suggester, "config": info.config,
                     "trajectories": info.trajectories, "done": info.done,
                     "failed": info.failed, "steps": info.steps});
    json!({"run": run, "sandbox": info.config.get("sandbox").cloned().unwrap_or(json!("unknown")),
           "unsandboxed": r.unsandboxed(), "summary": r.summary, "results": results,
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
    for (i, (name, e)) in run.figures.iter().enumerate() {
        let mut figure = estimate(e);
        if let Some(b) = baseline {
            let base = &b.figures[i].1;
            let c = compare(e, base);
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
