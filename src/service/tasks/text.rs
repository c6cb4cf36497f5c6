//! `nextedit tasks report` as text: the only place its tables are laid out, from the
//! typed figures of [`super::report`].

use std::fmt::Write;

use super::report::{
    EvolutionRow, Figures, LeftOut, LeftOutKind, MetricCorrelation, RunFigures, TasksReport,
};

/// The whole report as text.
pub fn report_text(report: &TasksReport) -> String {
    let mut out = String::new();
    for run in &report.runs {
        run_text(&mut out, run);
        out.push('\n');
    }
    if !report.evolution.is_empty() {
        evolution_text(&mut out, &report.evolution);
        out.push('\n');
    }
    if let Some(rows) = &report.correlation {
        correlation_text(&mut out, rows);
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    // Padding of empty last cells never ends a line.
    out.lines()
        .map(|l| l.trim_end().to_string() + "\n")
        .collect()
}

/// `pids 2 answers, memory 1 answer`: how many answers' test runs hit each limit.
pub(super) fn limits_hit(run: &RunFigures) -> String {
    run.limits_hit
        .iter()
        .map(|(limit, n)| {
            format!(
                "{} {n} answer{}",
                limit.key(),
                if *n == 1 { "" } else { "s" }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `coverage 3 (2 valid), name 1 (1 valid)`: where the tasks' tests came from.
pub(super) fn tests_by(run: &RunFigures) -> String {
    (run.tests_by.iter())
        .map(|(source, n, valid)| format!("{} {n} ({valid} valid)", source.key()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A figure with `decimals` decimals, or `–` when there is none.
pub(super) fn num(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

fn run_text(out: &mut String, run: &RunFigures) {
    let state = if run.finished {
        "finished"
    } else {
        "unfinished"
    };
    let _ = writeln!(
        out,
        "task run {}: {} ({} sample{}, {state})",
        run.run,
        run.suggester,
        run.samples,
        if run.samples == 1 { "" } else { "s" }
    );
    if run.unsandboxed {
        let _ = writeln!(
            out,
            "  UNSANDBOXED (sandbox {}): its tests and suggester could read the repository, the database and the network",
            run.sandbox
        );
    }
    if !run.limits_hit.is_empty() {
        let _ = writeln!(out, "  limits hit: {}", limits_hit(run));
    }
    if !run.tests_by.is_empty() {
        let _ = writeln!(out, "  tests chosen by: {}", tests_by(run));
    }
    let k = if run.samples > 1 {
        format!("pass@{}", run.samples)
    } else {
        "pass@k".to_string()
    };
    table_line(
        out,
        "",
        &[
            "tasks",
            "valid",
            "nodis",
            "answers",
            "failed",
            "pass@1",
            k.as_str(),
            "EM",
            "EdSim",
            "ES-Line",
            "ES-Token",
            "BLEU",
            "SARI",
            "stopped",
        ],
    );
    table_line(out, "all", &figure_cells(&run.total));
    for (scenario, f) in &run.by_scenario {
        table_line(out, &format!("scenario {scenario}"), &figure_cells(f));
    }
    for (level, f) in &run.by_dependency {
        table_line(out, &format!("dependency {level}"), &figure_cells(f));
    }
    if run
        .left_out
        .iter()
        .any(|g| g.kind == LeftOutKind::NonDiscriminating)
    {
        let _ = writeln!(
            out,
            "  nodis: non-discriminating tasks, a do-nothing answer passes their tests (left out)"
        );
    }
    for group in &run.left_out {
        let _ = writeln!(
            out,
            "  {} ({}): {}: {}",
            group.kind.key().replace('_', "-"),
            group.tasks.len(),
            group.reason,
            task_ids(group)
        );
    }
}

/// One line of a run's figures table: its label, then the 14 cells of
/// [`figure_cells`] (or their headings).
fn table_line<T: std::fmt::Display>(out: &mut String, label: &str, c: &[T; 14]) {
    let _ = writeln!(
        out,
        "  {:<26} {:>5} {:>5} {:>5} {:>7} {:>6} {:>6} {:>6} {:>5} {:>5} {:>7} {:>8} {:>6} {:>5} {:>7}",
        label,
        c[0],
        c[1],
        c[2],
        c[3],
        c[4],
        c[5],
        c[6],
        c[7],
        c[8],
        c[9],
        c[10],
        c[11],
        c[12],
        c[13],
    );
}

/// Up to [`IDS_SHOWN`] task ids of a left-out group, then how many more.
pub(super) fn task_ids(group: &LeftOut) -> String {
    let mut ids: Vec<&str> = (group.tasks.iter().take(IDS_SHOWN))
        .map(|(id, _)| id.as_str())
        .collect();
    let more = group.tasks.len().saturating_sub(IDS_SHOWN);
    let more = format!("and {more} more");
    if group.tasks.len() > IDS_SHOWN {
        ids.push(&more);
    }
    ids.join(", ")
}

/// Task ids a reason's line names before it only counts the rest.
const IDS_SHOWN: usize = 5;

/// A figures row's cells after its label, as the text table and the HTML page show them:
/// tasks, valid, non-discriminating, answers, failed calls, pass@1, pass@k, EM, edit similarity, ES-Line, ES-Token, BLEU,
/// SARI, stopped.
pub fn figure_cells(f: &Figures) -> [String; 14] {
    [
        f.tasks.to_string(),
        f.valid.to_string(),
        f.excluded.to_string(),
        f.answers.to_string(),
        f.failed.to_string(),
        num(f.pass_at_1, 3),
        num(f.pass_at_k.map(|(_, v)| v), 3),
        num(f.exact, 2),
        num(f.edit_similarity, 2),
        num(f.es_line, 3),
        num(f.es_token, 3),
        num(f.bleu, 1),
        num(f.sari, 2),
        num(f.stopped, 2),
    ]
}

/// How a figure is read from [`Figures`].
pub type FigureOf = fn(&Figures) -> Option<f64>;

/// The figures of the evolution table, by name and how each is read.
pub const EVOLUTION_FIGURES: [(&str, FigureOf); 7] = [
    ("pass@1", |f| f.pass_at_1),
    ("EM", |f| f.exact),
    ("EditSim", |f| f.edit_similarity),
    ("ES-Line", |f| f.es_line),
    ("ES-Token", |f| f.es_token),
    ("BLEU", |f| f.bleu),
    ("SARI", |f| f.sari),
];

fn evolution_text(out: &mut String, rows: &[EvolutionRow]) {
    let mut suggester = "";
    for row in rows {
        if row.suggester != suggester {
            suggester = &row.suggester;
            let _ = writeln!(
                out,
                "evolution-aware (context from the state) vs -ignored (from the latest version): {suggester}"
            );
            let _ = writeln!(
                out,
                "  {:<14} {:<9} {:>8} {:>8} {:>9}",
                "dependency", "figure", "aware", "ignored", "inflation"
            );
        }
        let _ = writeln!(
            out,
            "  {:<14} {:<9} {:>8} {:>8} {:>9}",
            row.level,
            "tasks",
            format!("{}/{}", row.aware.valid, row.aware.tasks),
            format!("{}/{}", row.ignored.valid, row.ignored.tasks),
            ""
        );
        for (name, get) in EVOLUTION_FIGURES {
            let (a, i) = (get(&row.aware), get(&row.ignored));
            let inflation = a.zip(i).map(|(a, i)| format!("{:+.3}", i - a));
            let _ = writeln!(
                out,
                "  {:<14} {:<9} {:>8} {:>8} {:>9}",
                "",
                name,
                num(a, 3),
                num(i, 3),
                inflation.unwrap_or_else(|| "-".into())
            );
        }
    }
}

fn correlation_text(out: &mut String, rows: &[MetricCorrelation]) {
    let _ = writeln!(
        out,
        "correlation with pass/fail (Pearson r over every answer of the valid tasks; 95 % CI by Fisher z)"
    );
    let _ = writeln!(out, "  {:<16} {:>5} {:>7}  95 % CI", "metric", "n", "r");
    for row in rows {
        let c = &row.correlation;
        let interval = c
            .interval
            .map_or_else(|| "-".to_string(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"));
        let _ = writeln!(
            out,
            "  {:<16} {:>5} {:>7}  {interval}",
            row.metric,
            c.n,
            num(c.r, 3)
        );
    }
}
