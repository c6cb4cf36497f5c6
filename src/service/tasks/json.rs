//! `nextedit tasks report --json`: the only place its JSON is built, from the typed
//! figures of [`super::report`]. The field names are a wire format.

use serde_json::{Value, json};

use super::report::{EvolutionRow, Figures, MetricCorrelation, RunFigures, TasksReport};
use super::text::EVOLUTION_FIGURES;

/// The whole report as one JSON object.
pub fn report_json(report: &TasksReport) -> Value {
    json!({
        "runs": report.runs.iter().map(run_json).collect::<Vec<_>>(),
        "evolution": report.evolution.iter().map(evolution_json).collect::<Vec<_>>(),
        "correlation": report.correlation.as_ref().map(|rows| rows.iter().map(correlation_json).collect::<Vec<_>>()),
    })
}

fn figures_json(f: &Figures) -> Value {
    json!({
        "tasks": f.tasks,
        "valid": f.valid,
        "non_discriminating": f.excluded,
        "answers": f.answers,
        "failed_answers": f.failed,
        "pass_at_1": f.pass_at_1,
        "pass_at_k": f.pass_at_k.map(|(k, v)| json!({"k": k, "value": v})),
        "exact_match": f.exact,
        "edit_similarity": f.edit_similarity,
        "es_line": f.es_line,
        "es_token": f.es_token,
        "bleu": f.bleu,
        "sari": f.sari,
        "stopped": f.stopped,
    })
}

fn run_json(run: &RunFigures) -> Value {
    let groups = |g: &[(String, Figures)]| -> Value {
        g.iter()
            .map(|(k, f)| (k.clone(), figures_json(f)))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    json!({
        "run": run.run,
        "suggester": run.suggester,
        "samples": run.samples,
        "finished": run.finished,
        "all": figures_json(&run.total),
        "by_scenario": groups(&run.by_scenario),
        "by_dependency": groups(&run.by_dependency),
        "left_out": run.left_out.iter().map(|g| json!({
            "kind": g.kind.key(),
            "reason": g.reason,
            "count": g.tasks.len(),
            "tasks": g.tasks.iter().map(|(id, output)| json!({"task": id, "output": output})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "sandbox": run.sandbox,
        "unsandboxed": run.unsandboxed,
        "tests_by": run.tests_by.iter().map(|(source, n, valid)| (source.key().to_string(), json!({"tasks": n, "valid": valid}))).collect::<serde_json::Map<_, _>>(),
        "tests": run.selections.iter().map(|(task, s)| {
            let mut value = serde_json::to_value(s).expect("a selection serializes");
            value["task"] = json!(task);
            value
        }).collect::<Vec<_>>(),
        "limits_hit": run.limits_hit.iter().map(|(l, n)| (l.key().to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
    })
}

fn evolution_json(row: &EvolutionRow) -> Value {
    let inflation: serde_json::Map<String, Value> = EVOLUTION_FIGURES
        .iter()
        .map(|(name, get)| {
            let d = get(&row.aware).zip(get(&row.ignored)).map(|(a, i)| i - a);
            (name.to_string(), json!(d))
        })
        .collect();
    json!({
        "suggester": row.suggester,
        "dependency": row.level,
        "aware": figures_json(&row.aware),
        "ignored": figures_json(&row.ignored),
        "inflation": inflation,
    })
}

fn correlation_json(row: &MetricCorrelation) -> Value {
    let c = &row.correlation;
    json!({
        "metric": row.metric,
        "n": c.n,
        "r": c.r,
        "ci95": c.interval.map(|(lo, hi)| [lo, hi]),
    })
}
