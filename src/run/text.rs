//! The tables `nextedit replay`, `report` and `runs` print, formatted from typed
//! values into any writer (the CLI passes stdout).

use std::io::Write;
use std::path::Path;

use super::figures::{GroupFigures, compare};
use super::report::{RunReport, flow_summary, mean};
use super::{RunError, RunStore, json};
use crate::metrics::contextbench::GranularityScore;
use crate::store::{RunSummary, StoredStep};
use crate::suggest::Call;

/// A replayed trajectory's new steps, one line each, printed as they come; returns
/// how many it printed.
pub fn print_steps(
    out: &mut impl Write,
    key: &str,
    steps: &mut dyn Iterator<Item = Result<StoredStep, RunError>>,
) -> Result<usize, RunError> {
    let print = RunError::Print;
    writeln!(out, "{key}").map_err(print)?;
    writeln!(
        out,
        "  {:>4}  {:>5}  {:>5}  {:>5}  {:>6}  {:>5}  APPLIED",
        "STEP", "PREDS", "P", "R", "BLEU", "ES"
    )
    .map_err(print)?;
    let mut count = 0;
    for s in steps {
        let s = s?;
        let suggest_error = s.failures.iter().find(|f| f.call == Call::Suggest);
        // The step number is not padded under its `STEP` header: earlier versions
        // printed it as a JSON value, which ignores the width, and the table stays so.
        writeln!(
            out,
            "  {}  {:>5}  {:>5.3}  {:>5.3}  {:>6}  {:>5}  {}{}",
            s.step,
            s.predictions.len(),
            s.prf.precision,
            s.prf.recall,
            s.content
                .as_ref()
                .map_or("-".into(), |c| format!("{:.1}", c.bleu)),
            s.content
                .as_ref()
                .map_or("-".into(), |c| format!("{:.3}", c.es)),
            s.applied,
            suggest_error
                .map(|f| format!("  ({})", f.failure))
                .unwrap_or_default()
        )
        .map_err(print)?;
        count += 1;
    }
    Ok(count)
}

/// The report of some runs: flow figures, then content, baselines, latencies and
/// failed calls, then what the suggesters read; unsandboxed runs are marked. A run
/// with repetitions shows a line per repetition and its figures' intervals.
pub fn print_report(
    out: &mut impl Write,
    store: &dyn RunStore,
    runs: &[i64],
) -> Result<(), RunError> {
    print_report_against(out, store, runs, None)
}

/// [`print_report`], and each run's figures beside those of run `baseline` (marked
/// where they moved beyond an interval), if given.
pub fn print_report_against(
    out: &mut impl Write,
    store: &dyn RunStore,
    requested: &[i64],
    baseline: Option<i64>,
) -> Result<(), RunError> {
    let print = RunError::Print;
    let mut groups = Vec::new();
    let mut runs = Vec::new();
    for &run in requested {
        let group = store.run_repetitions(run)?;
        runs.extend(group.iter().copied());
        if group.len() > 1 || baseline.is_some() {
            groups.push(run);
        }
    }
    writeln!(
        out,
        "{:>4}  {:>6}  {:>6}  {:>17}  {:>7}  {:>6}  {:>6}  {:>5}  {:>23}  SUGGESTER",
        "RUN",
        "TRAJ",
        "STEPS",
        "MICRO P/R/F1",
        "MACRO F1",
        "HIT@1",
        "HIT@3",
        "MRR",
        "KEEP/JUMP/REV/BREAK"
    )
    .map_err(print)?;
    let mut reports = Vec::new();
    for &run in &runs {
        let info = store.run(run)?;
        let s = flow_summary(store, run)?;
        let hit = |k: usize| {
            s.hit_at
                .iter()
                .find(|(kk, _)| *kk == k)
                .map_or(0.0, |(_, v)| *v)
        };
        writeln!(
            out,
            "{:>4}  {:>6}  {:>6}  {:>5.3}/{:.3}/{:.3}  {:>7.3}  {:>6.3}  {:>6.3}  {:>5.3}  {:>23}  {}",
            run,
            format!("{}/{}", info.done, info.trajectories),
            s.steps,
            s.micro.precision,
            s.micro.recall,
            s.micro.f1,
            s.macro_.f1,
            hit(1),
            hit(3),
            s.mrr,
            format!(
                "{:.2}/{:.2}/{:.2}/{:.2}",
                s.shares.flow_keeping,
                s.shares.flow_jumping,
                s.shares.flow_reverting,
                s.shares.flow_breaking
            ),
            suggester_label(&info)
        )
        .map_err(print)?;
        reports.push(RunReport::of(store, run)?);
    }
    writeln!(
        out,
        "\n{:>4}  {:>9}  {:>7}  {:>20}  {:>18}  {:>21}  {:>21}  FAILED CALLS",
        "RUN",
        "MEAN BLEU",
        "MEAN ES",
        "NOOP BLEU EMPTY/UNCH",
        "NOOP ES EMPTY/UNCH",
        "SUGGEST p50/p95 ms",
        "GENERATE p50/p95 ms"
    )
    .map_err(print)?;
    for r in &reports {
        let m = &r.measurements;
        let errors: Vec<String> = m
            .errors
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let b = &r.baseline;
        let pair = |x: Option<f64>, y: Option<f64>, digits: usize| match (x, y) {
            (Some(x), Some(y)) => format!("{x:.digits$}/{y:.digits$}"),
            _ => "-".to_string(),
        };
        writeln!(
            out,
            "{:>4}  {:>9}  {:>7}  {:>20}  {:>18}  {:>21}  {:>21}  {}",
            r.info.id,
            mean(&m.bleu).map_or("-".into(), |v| format!("{v:.1}")),
            mean(&m.es).map_or("-".into(), |v| format!("{v:.3}")),
            pair(b.empty_bleu, b.unchanged_bleu, 1),
            pair(b.empty_es, b.unchanged_es, 3),
            quantiles(&m.suggest_ms),
            quantiles(&m.generate_ms),
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }
        )
        .map_err(print)?;
    }
    if reports.iter().any(|r| !r.context.is_empty()) {
        print_context(out, &reports).map_err(print)?;
    }
    for r in &reports {
        let m = &r.measurements;
        if m.cache_served + m.cache_live > 0 {
            writeln!(
                out,
                "\nrun {}: cache {}: {} of {} calls served from the cache (latencies as the suggester took when each answer was stored)",
                r.info.id,
                r.info.config["cache"].as_str().unwrap_or("?"),
                m.cache_served,
                m.cache_served + m.cache_live
            )
            .map_err(print)?;
        }
    }
    let baseline = match baseline {
        Some(b) => Some(GroupFigures::of(store, b)?),
        None => None,
    };
    for run in groups {
        print_figures(out, &GroupFigures::of(store, run)?, baseline.as_ref()).map_err(print)?;
    }
    for r in &reports {
        if r.unsandboxed_process {
            writeln!(
                out,
                "\nrun {}: unsandboxed (its suggester could read the repository, the database and the network)",
                r.info.id
            )
            .map_err(print)?;
        }
    }
    Ok(())
}

/// One run's figures with their mean and 95 % interval over its repetitions, beside
/// the baseline's with the difference and whether it moved beyond an interval.
fn print_figures(
    out: &mut impl Write,
    run: &GroupFigures,
    baseline: Option<&GroupFigures>,
) -> std::io::Result<()> {
    let describe = |g: &GroupFigures| {
        let ids: Vec<String> = g.runs.iter().map(|r| r.to_string()).collect();
        match g.runs.len() {
            1 => format!("run {} (1 repetition: no interval)", ids[0]),
            n => format!("run {} ({n} repetitions: runs {})", ids[0], ids.join(", ")),
        }
    };
    write!(
        out,
        "\nFIGURES: mean [95 % t-interval] of {}",
        describe(run)
    )?;
    if let Some(b) = baseline {
        write!(out, " vs. baseline {}", describe(b))?;
    }
    writeln!(out)?;
    let estimate = |e: &super::figures::Estimate| match (e.mean, e.interval) {
        (Some(m), Some((lo, hi))) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
        (Some(m), None) => format!("{m:.3}"),
        _ => "-".to_string(),
    };
    let header = format!("RUN {}", run.runs[0]);
    match baseline {
        None => writeln!(out, "{:<16}  {header:>27}", "FIGURE")?,
        Some(b) => writeln!(
            out,
            "{:<16}  {header:>27}  {:>27}  {:>8}  MOVED",
            "FIGURE",
            format!("BASELINE {}", b.runs[0]),
            "DELTA"
        )?,
    }
    for (i, (name, e)) in run.figures.iter().enumerate() {
        match baseline {
            None => writeln!(out, "{name:<16}  {:>27}", estimate(e))?,
            Some(b) => {
                let base = &b.figures[i].1;
                let c = compare(e, base);
                writeln!(
                    out,
                    "{name:<16}  {:>27}  {:>27}  {:>8}  {}",
                    estimate(e),
                    estimate(base),
                    c.delta.map_or("-".into(), |d| format!("{d:+.3}")),
                    match c.moved {
                        Some(true) => "*",
                        Some(false) => "no",
                        None => "-",
                    }
                )?;
            }
        }
    }
    Ok(())
}

fn print_context(out: &mut impl Write, reports: &[RunReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "\nCONTEXT: what the suggester read vs. the edited lines and the definitions they use (ContextBench, fixed mode)"
    )?;
    writeln!(
        out,
        "{:>4}  {:<28}  {:>5}  {:>13}  {:>13}  {:>13}  {:>13}  {:>8}  {:>11}",
        "RUN",
        "TRAJECTORY",
        "STEPS",
        "FILE C/P",
        "SYMBOL C/P",
        "SPAN C/P",
        "LINE C/P",
        "LINE AUC",
        "LINE REDUND"
    )?;
    let f = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
    for report in reports {
        let run = report.info.id;
        for c in &report.context {
            let key: String = c.key.chars().take(28).collect();
            match &c.scores {
                Err(e) => writeln!(out, "{run:>4}  {key:<28}  {e}")?,
                Ok(s) => {
                    let r = &s.result;
                    let cp = |g: &GranularityScore| format!("{}/{}", f(g.coverage), f(g.precision));
                    writeln!(
                        out,
                        "{run:>4}  {key:<28}  {:>5}  {:>13}  {:>13}  {:>13}  {:>13}  {:>8}  {:>11.3}",
                        r.num_steps,
                        cp(&r.final_scores.file),
                        cp(&r.final_scores.symbol),
                        cp(&r.final_scores.span),
                        cp(&r.final_scores.line),
                        f(r.trajectory.auc_coverage.line),
                        r.trajectory.redundancy.line
                    )?;
                }
            }
        }
    }
    Ok(())
}

/// The runs of a database, newest first, one line each (like `git log --oneline`):
/// id, start, status, trajectories done/all, micro F1, and the suggester in full; or
/// one JSON object per run.
pub fn print_run_list(
    out: &mut impl Write,
    store: &dyn RunStore,
    db_path: &Path,
    as_json: bool,
) -> Result<(), RunError> {
    let print = RunError::Print;
    let runs = store.runs()?;
    if as_json {
        for info in &runs {
            let s = flow_summary(store, info.id)?;
            writeln!(out, "{}", json::run_list_entry(info, &s)).map_err(print)?;
        }
        return Ok(());
    }
    if runs.is_empty() {
        writeln!(out, "no replay runs in {}", db_path.display()).map_err(print)?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>4}  {:<24}  {:<11}  {:>9}  {:>8}  SUGGESTER",
        "RUN", "STARTED", "STATUS", "TRAJ", "MICRO F1"
    )
    .map_err(print)?;
    for info in &runs {
        let s = flow_summary(store, info.id)?;
        writeln!(
            out,
            "{:>4}  {:<24}  {:<11}  {:>9}  {:>8.3}  {}",
            info.id,
            info.started_at,
            info.status,
            format!("{}/{}", info.done, info.trajectories),
            s.micro.f1,
            suggester_label(info)
        )
        .map_err(print)?;
    }
    Ok(())
}

/// The suggester spec in full (never cut: two specs may share a long prefix), with
/// `unsandboxed` when the run's process ran without the sandbox, and which run's
/// repetition it is.
fn suggester_label(info: &RunSummary) -> String {
    let mark = if super::report::unsandboxed(&info.config) == Some(true) {
        " unsandboxed"
    } else {
        ""
    };
    let repetition = match info.repetition_of {
        Some(first) => format!(" (repetition {} of run {first})", info.repetition),
        None => String::new(),
    };
    format!("{}{mark}{repetition}", info.suggester)
}

/// `p50 / p95` of some latencies, or `-`.
fn quantiles(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".to_string();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!("{:.1} / {:.1}", at(0.5), at(0.95))
}
