//! The tables `nextedit replay`, `report` and `runs` print, formatted from typed
//! values into any writer (the CLI passes stdout): the only place they are built.

use std::io::Write;
use std::path::Path;

use super::definition::Definition;
use super::figures::{GroupFigures, against};
use super::report::{Compared, RunReport, flow_summary};
use super::verdict::Verdict;
use super::{RunError, RunRead, json};
use crate::core::metrics::contextbench::GranularityScore;
use crate::core::metrics::statistics::mean;
use crate::engine::suggest::Call;
use crate::store::{RunSummary, StoredStep};

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

/// The report of some runs: flow figures, how each run was scored, then content,
/// baselines, latencies and failed calls, then what the suggesters read; unsandboxed
/// and failed runs are marked. A run with repetitions shows a line per repetition and
/// its figures' intervals. Runs scored differently or over different steps are
/// compared on their common steps, and the report says so.
pub fn print_report(
    out: &mut impl Write,
    store: &dyn RunRead,
    runs: &[i64],
) -> Result<(), RunError> {
    print_report_against(out, store, runs, None, true)
}

/// [`print_report`], and each run's figures beside those of run `baseline` (marked
/// where they moved beyond an interval), if given; `common`: figures over the steps
/// every run has (else each run's own).
pub fn print_report_against(
    out: &mut impl Write,
    store: &dyn RunRead,
    requested: &[i64],
    baseline: Option<i64>,
    common: bool,
) -> Result<(), RunError> {
    let print = RunError::Print;
    let compared = Compared::of(store, requested, baseline, common)?;
    let view = compared.common.view(store);
    let store: &dyn RunRead = if common { &view } else { store };
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
        let report = RunReport::of(store, run)?;
        flow_row(out, &report).map_err(print)?;
        reports.push(report);
    }
    print_definitions(out, &reports).map_err(print)?;
    content_table(out, &reports).map_err(print)?;
    print_yardsticks(out, &reports).map_err(print)?;
    if reports.iter().any(|r| r.judge.is_some()) {
        print_judge(out, &reports).map_err(print)?;
    }
    if reports.iter().any(|r| !r.context.is_empty()) {
        print_context(out, &reports).map_err(print)?;
    }
    cache_notes(out, &reports).map_err(print)?;
    let baseline = match baseline {
        Some(b) => Some(GroupFigures::of(store, b)?),
        None => None,
    };
    for run in groups {
        print_figures(out, &GroupFigures::of(store, run)?, baseline.as_ref()).map_err(print)?;
    }
    closing_notes(out, &reports, &compared.notes()).map_err(print)
}

/// The content table: each run's mean scores, its no-op baselines, its latencies and
/// its failed calls.
fn content_table(out: &mut impl Write, reports: &[RunReport]) -> std::io::Result<()> {
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
    )?;
    for r in reports {
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
        )?;
    }
    Ok(())
}

/// The field's other yardsticks, a line per run: Zed's delta-chrF, NEP's match rates,
/// NES's location accuracy (over how many steps).
fn print_yardsticks(out: &mut impl Write, reports: &[RunReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "\n{:>4}  {:>10}  {:>11}  {:>12}  LOCATION ACC",
        "RUN", "DELTA-CHRF", "NEP PARTIAL", "NEP POSITION"
    )?;
    let f = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    for r in reports {
        let y = &r.yardsticks;
        writeln!(
            out,
            "{:>4}  {:>10}  {:>11}  {:>12}  {}",
            r.info.id,
            f(y.mean_delta_chrf, 1),
            f(y.nep_partial_rate, 3),
            f(y.nep_position_rate, 3),
            match y.location_accuracy {
                Some(a) => format!("{a:.3} ({} steps)", y.location_steps),
                None => "-".into(),
            }
        )?;
    }
    Ok(())
}

/// What the judge said, a line per judged run: the question, how many steps it was asked
/// about, answered (a verdict) and failed (by kind), how many answers the cache served,
/// and the share judged yes (`nep`) or reverting with the mean confidence (`zed-qa`);
/// then each run's judge.
fn print_judge(out: &mut impl Write, reports: &[RunReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "\n{:>4}  {:<6}  {:>5}  {:>6}  {:>6}  {:>6}  {:>5}  {:>9}  {:>10}  FAILURES",
        "RUN", "JUDGE", "ASKED", "JUDGED", "FAILED", "CACHED", "YES", "REVERTING", "CONFIDENCE"
    )?;
    let f = |v: Option<f64>, digits: usize| v.map_or("-".into(), |v| format!("{v:.digits$}"));
    let judged: Vec<(i64, &super::judge::JudgeSummary)> = (reports.iter())
        .filter_map(|r| r.judge.as_ref().map(|j| (r.info.id, j)))
        .collect();
    for (id, j) in &judged {
        let failures: Vec<String> = j.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
        writeln!(
            out,
            "{id:>4}  {:<6}  {:>5}  {:>6}  {:>6}  {:>6}  {:>5}  {:>9}  {:>10}  {}",
            j.prompt,
            j.asked,
            j.judged,
            j.failed,
            j.cached,
            f(j.yes_share, 3),
            f(j.reverting_share, 3),
            f(j.mean_confidence, 2),
            if failures.is_empty() {
                "none".to_string()
            } else {
                failures.join(", ")
            }
        )?;
    }
    for (id, j) in &judged {
        // Free text, the default, is not said (the lines read as they always did).
        let format = match j.format {
            "text" => String::new(),
            other => format!(" ({other} answers)"),
        };
        writeln!(out, "judge of run {id}: {}{format}", j.judge)?;
    }
    Ok(())
}

/// A line for each run that used the response cache: how many calls it served.
fn cache_notes(out: &mut impl Write, reports: &[RunReport]) -> std::io::Result<()> {
    for r in reports {
        let m = &r.measurements;
        if m.cache_served + m.cache_live > 0 {
            writeln!(
                out,
                "\nrun {}: cache {}: {} of {} calls served from the cache (latencies as the suggester took when each answer was stored)",
                r.info.id,
                r.info.config["cache"].as_str().unwrap_or("?"),
                m.cache_served,
                m.cache_served + m.cache_live
            )?;
        }
    }
    Ok(())
}

/// The report's last lines: unsandboxed runs, failed runs, and the comparison's notes.
fn closing_notes(
    out: &mut impl Write,
    reports: &[RunReport],
    notes: &[String],
) -> std::io::Result<()> {
    for r in reports {
        if r.unsandboxed_process {
            writeln!(
                out,
                "\nrun {}: unsandboxed (its suggester could read the repository, the database and the network)",
                r.info.id
            )?;
        }
    }
    for r in reports {
        if let Some(reason) = r.verdict.reason() {
            writeln!(out, "\nrun {} FAILED: {reason}", r.info.id)?;
        }
    }
    if !notes.is_empty() {
        writeln!(out)?;
        for note in notes {
            writeln!(out, "{note}")?;
        }
    }
    Ok(())
}

/// One run's line of the flow table; a run without steps shows `-` for its figures.
fn flow_row(out: &mut impl Write, r: &RunReport) -> std::io::Result<()> {
    let (info, s) = (&r.info, &r.summary);
    let hit = |k: usize| {
        s.hit_at
            .iter()
            .find(|(kk, _)| *kk == k)
            .map_or(0.0, |(_, v)| *v)
    };
    let figures = if s.steps == 0 {
        format!(
            "{:>17}  {:>7}  {:>6}  {:>6}  {:>5}  {:>23}",
            "-", "-", "-", "-", "-", "-"
        )
    } else {
        format!(
            "{:>5.3}/{:.3}/{:.3}  {:>7.3}  {:>6.3}  {:>6.3}  {:>5.3}  {:>23}",
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
        )
    };
    let failed = if r.verdict.failed() { " FAILED" } else { "" };
    writeln!(
        out,
        "{:>4}  {:>6}  {:>6}  {figures}  {}{failed}",
        info.id,
        format!("{}/{}", info.done, info.trajectories),
        s.steps,
        suggester_label(info)
    )
}

/// How each run was scored: match rule, order, what it revealed, the origins applied
/// silently, the sandbox, the trajectory set, and whether it failed.
fn print_definitions(out: &mut impl Write, reports: &[RunReport]) -> std::io::Result<()> {
    writeln!(
        out,
        "\n{:>4}  {:<9}  {:<8}  {:<20}  {:<16}  {:<11}  {:<19}  VERDICT",
        "RUN", "MATCH", "ORDER", "REVEAL", "EXCLUDE ORIGIN", "SANDBOX", "TRAJECTORY SET"
    )?;
    for r in reports {
        let d = &r.definition;
        writeln!(
            out,
            "{:>4}  {:<9}  {:<8}  {:<20}  {:<16}  {:<11}  {:<19}  {}",
            r.info.id,
            d.match_label(),
            d.order_label(),
            d.reveal_label(),
            d.exclude_label(),
            d.sandbox,
            d.set_label(),
            if r.verdict.failed() { "FAILED" } else { "ok" }
        )?;
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
    for (name, e) in &run.figures {
        match baseline {
            None => writeln!(out, "{name:<16}  {:>27}", estimate(e))?,
            Some(b) => {
                let (base, c) = against(name, e, b);
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
                        c.steps,
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
/// id, start, status, trajectories done/all, micro F1, match rule, and the suggester
/// in full (marked when the run failed); or their JSON, as one array or one object per
/// line. A run whose rows cannot be read is listed as unreadable, with why; returns
/// how many were.
pub fn print_run_list(
    out: &mut impl Write,
    store: &dyn RunRead,
    db_path: &Path,
    as_json: Option<json::Layout>,
) -> Result<usize, RunError> {
    let print = RunError::Print;
    // A run whose rows cannot be read (an out-of-range or mistyped value) is listed
    // as unreadable, with why; the others are listed as ever.
    let mut unreadable = 0;
    let runs: Vec<Result<_, (i64, String)>> = (store.run_ids()?.into_iter())
        .map(|id| {
            store
                .run(id)
                .map_err(RunError::from)
                .and_then(|info| {
                    Ok((
                        info,
                        flow_summary(store, id)?,
                        Definition::of(store, id)?,
                        Verdict::of(store, id)?,
                    ))
                })
                .map_err(|e| (id, super::error_chain(&e)))
        })
        .collect();
    if let Some(layout) = as_json {
        let entries: Vec<serde_json::Value> = (runs.iter())
            .map(|run| match run {
                Ok((info, s, d, v)) => json::run_list_entry(info, s, d, v),
                Err((id, why)) => {
                    unreadable += 1;
                    json::unreadable_run(*id, why)
                }
            })
            .collect();
        match layout {
            json::Layout::Document => {
                let all = serde_json::Value::Array(entries);
                writeln!(out, "{all}").map_err(print)?;
            }
            json::Layout::Lines => {
                for entry in entries {
                    writeln!(out, "{entry}").map_err(print)?;
                }
            }
        }
        return Ok(unreadable);
    }
    if runs.is_empty() {
        writeln!(out, "no replay runs in {}", db_path.display()).map_err(print)?;
        return Ok(0);
    }
    writeln!(
        out,
        "{:>4}  {:<24}  {:<11}  {:>9}  {:>8}  {:<9}  SUGGESTER",
        "RUN", "STARTED", "STATUS", "TRAJ", "MICRO F1", "MATCH"
    )
    .map_err(print)?;
    for run in &runs {
        let (info, s, d, v) = match run {
            Ok(run) => run,
            Err((id, why)) => {
                unreadable += 1;
                let why = crate::base::secrets::scrub(why);
                writeln!(out, "{id:>4}  unreadable: {why}").map_err(print)?;
                continue;
            }
        };
        let f1 = if s.steps == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", s.micro.f1)
        };
        writeln!(
            out,
            "{:>4}  {:<24}  {:<11}  {:>9}  {:>8}  {:<9}  {}{}",
            info.id,
            info.started_at,
            info.status,
            format!("{}/{}", info.done, info.trajectories),
            f1,
            d.match_label(),
            suggester_label(info),
            if v.failed() { " FAILED" } else { "" }
        )
        .map_err(print)?;
    }
    Ok(unreadable)
}

/// The suggester spec in full (never cut: two specs may share a long prefix), with
/// `unsandboxed` when the run's process ran without the sandbox, and which run's
/// repetition it is.
fn suggester_label(info: &RunSummary) -> String {
    let stored = super::plan::SandboxState::stored(&info.config);
    let mark = if stored.is_some_and(|sandbox| sandbox.is_unsandboxed()) {
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
