//! `nextedit tasks report --html`: the report of [`super::report`] as one
//! self-contained HTML page (typed figures in, `String` out; the CLI only writes the
//! file). The page skeleton, escaping and tables are `base::html`'s (`page_start`,
//! `PAGE_END`, `text_table`, `escape`), as `run::html`'s are, so the same rules hold:
//! no script, no URL, a Content-Security-Policy forbidding every fetch, and
//! every text from the runs (suggester specs, task ids, reasons) escaped.

use std::fmt::Write;

use super::report::{EvolutionRow, Figures, MetricCorrelation, RunFigures, TasksReport};
use super::text::EVOLUTION_FIGURES;
use super::text::{figure_cells, num};
use crate::base::html::{PAGE_END, escape, page_start, text_table};

/// The whole page for a report.
pub fn report_html(report: &TasksReport) -> String {
    let ids: Vec<String> = report.runs.iter().map(|r| r.run.to_string()).collect();
    let mut h = page_start(&format!("nextedit tasks report: run {}", ids.join(", ")));
    for run in &report.runs {
        run_section(&mut h, run);
    }
    if !report.evolution.is_empty() {
        evolution_section(&mut h, &report.evolution);
    }
    if let Some(rows) = &report.correlation {
        correlation_section(&mut h, rows);
    }
    h.push_str(PAGE_END);
    h
}

fn figures_row(label: String, f: &Figures) -> Vec<String> {
    std::iter::once(label).chain(figure_cells(f)).collect()
}

fn run_section(h: &mut String, run: &RunFigures) {
    let state = if run.finished {
        "finished"
    } else {
        "unfinished"
    };
    let _ = writeln!(
        h,
        "<h2 id=\"run-{id}\">Task run {id}: {suggester}</h2>\n<p class=\"muted\">{samples} sample{s}, {state}</p>",
        id = run.run,
        suggester = escape(&run.suggester),
        samples = run.samples,
        s = if run.samples == 1 { "" } else { "s" },
    );
    if run.unsandboxed {
        let _ = writeln!(
            h,
            "<p class=\"warn\">Unsandboxed (sandbox {}): its tests and suggester could read the repository, the database and the network.</p>",
            escape(&run.sandbox)
        );
    }
    if !run.limits_hit.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"warn\">Limits hit: {}.</p>",
            escape(&super::text::limits_hit(run))
        );
    }
    if !run.tests_by.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"muted\">Tests chosen by: {}.</p>",
            escape(&super::text::tests_by(run))
        );
    }
    let k = if run.samples > 1 {
        format!("pass@{}", run.samples)
    } else {
        "pass@k".to_string()
    };
    let header = [
        "", "tasks", "valid", "nodis", "answers", "failed", "pass@1", &k, "EM", "EdSim", "ES-Line",
        "ES-Token", "BLEU", "SARI", "stopped",
    ];
    let mut rows = vec![figures_row("all".to_string(), &run.total)];
    for (scenario, f) in &run.by_scenario {
        rows.push(figures_row(format!("scenario {scenario}"), f));
    }
    for (level, f) in &run.by_dependency {
        rows.push(figures_row(format!("dependency {level}"), f));
    }
    text_table(h, "figures", 1, &header, &rows);
    if !run.left_out.is_empty() {
        h.push_str("<p class=\"warn\">Left out, by reason (nodis: non-discriminating, a do-nothing answer passes the tests):</p>\n");
        for group in &run.left_out {
            let _ = writeln!(
                h,
                "<details class=\"left-out\"><summary>{} ({}): {}</summary>",
                group.kind.key().replace('_', "-"),
                group.tasks.len(),
                escape(&group.reason)
            );
            for (id, output) in &group.tasks {
                let _ = writeln!(
                    h,
                    "<details><summary>{}</summary><pre>{}</pre></details>",
                    escape(id),
                    escape(output)
                );
            }
            h.push_str("</details>\n");
        }
    }
}

fn evolution_section(h: &mut String, rows: &[EvolutionRow]) {
    h.push_str("<h2 id=\"evolution\">Evolution-aware vs -ignored context</h2>\n<p class=\"muted\">Context from the task's state (aware) beside context from the latest version (ignored); the inflation is ignored − aware.</p>\n");
    let mut suggesters: Vec<&str> = rows.iter().map(|r| r.suggester.as_str()).collect();
    suggesters.dedup();
    for suggester in suggesters {
        let _ = writeln!(h, "<h3>{}</h3>", escape(suggester));
        let mut table = Vec::new();
        for row in rows.iter().filter(|r| r.suggester == suggester) {
            table.push(vec![
                row.level.clone(),
                "tasks".to_string(),
                format!("{}/{}", row.aware.valid, row.aware.tasks),
                format!("{}/{}", row.ignored.valid, row.ignored.tasks),
                String::new(),
            ]);
            for (name, get) in EVOLUTION_FIGURES {
                let (a, i) = (get(&row.aware), get(&row.ignored));
                let inflation = a.zip(i).map(|(a, i)| format!("{:+.3}", i - a));
                table.push(vec![
                    String::new(),
                    name.to_string(),
                    num(a, 3),
                    num(i, 3),
                    inflation.unwrap_or_else(|| "–".into()),
                ]);
            }
        }
        text_table(
            h,
            "evolution",
            2,
            &["dependency", "figure", "aware", "ignored", "inflation"],
            &table,
        );
    }
}

fn correlation_section(h: &mut String, rows: &[MetricCorrelation]) {
    h.push_str("<h2 id=\"correlation\">Correlation with pass/fail</h2>\n<p class=\"muted\">Pearson r over every answer of the valid tasks; 95 % interval by Fisher z.</p>\n");
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let c = &row.correlation;
            vec![
                row.metric.to_string(),
                c.n.to_string(),
                num(c.r, 3),
                c.interval
                    .map_or_else(|| "–".to_string(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]")),
            ]
        })
        .collect();
    text_table(
        h,
        "correlation",
        1,
        &["metric", "n", "r", "95 % CI"],
        &table,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::tasks::report::{LeftOut, LeftOutKind};

    fn figures(pass: f64) -> Figures {
        Figures {
            tasks: 2,
            valid: 2,
            excluded: 1,
            answers: 2,
            failed: 0,
            pass_at_1: Some(pass),
            pass_at_k: None,
            exact: None,
            edit_similarity: None,
            es_line: None,
            es_token: None,
            bleu: None,
            sari: None,
            stopped: None,
        }
    }

    #[test]
    fn every_text_is_escaped_and_the_inflation_is_shown() {
        let report = TasksReport {
            runs: vec![RunFigures {
                run: 1,
                suggester: "cmd:<script>alert(1)</script>".to_string(),
                samples: 1,
                finished: true,
                total: figures(0.5),
                by_scenario: vec![],
                by_dependency: vec![],
                left_out: vec![LeftOut {
                    kind: LeftOutKind::NonDiscriminating,
                    reason: "a & b".to_string(),
                    tasks: vec![("t<1>".to_string(), "<out>".to_string())],
                }],
                sandbox: "<off>".to_string(),
                unsandboxed: true,
                limits_hit: vec![(crate::base::sys::limits::Limit::Pids, 2)],
                tests_by: Vec::new(),
                selections: Vec::new(),
            }],
            evolution: vec![EvolutionRow {
                level: "all".to_string(),
                suggester: "x".to_string(),
                aware: figures(0.0),
                ignored: figures(1.0),
            }],
            correlation: None,
        };
        let page = report_html(&report);
        assert!(!page.contains("<script"));
        assert!(page.contains("cmd:&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains(
            "<details class=\"left-out\"><summary>non-discriminating (1): a &amp; b</summary>\n<details><summary>t&lt;1&gt;</summary><pre>&lt;out&gt;</pre></details>\n</details>"
        ));
        assert!(page.contains("<p class=\"warn\">Unsandboxed (sandbox &lt;off&gt;)"));
        assert!(page.contains("<p class=\"warn\">Limits hit: pids 2 answers.</p>"));
        assert!(
            page.contains("<td class=\"l\">pass@1</td><td>0.000</td><td>1.000</td><td>+1.000</td>")
        );
        assert!(!page.contains("id=\"correlation\""));
    }
}
