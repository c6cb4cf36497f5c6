//! `nextedit report --html`: one self-contained HTML page built from typed figures
//! ([`HtmlRun`] in, `String` out; the CLI only writes the file). The run table with the
//! do-nothing baselines (and confidence intervals where a run has them), flow-class bars
//! per suggester, precision/recall per step along each trajectory, ContextBench coverage
//! curves with their AUC shaded, and a per-step drill-down of the gold edit and each
//! prediction as a diff.
//!
//! The charts are SVG written here by hand rather than drawn by a charting crate or a
//! JavaScript library: they are a handful of rectangles, polylines and polygons, so a
//! few format strings keep the page free of scripts and of any network at view time, and
//! the crate free of a plotting dependency (plotters' SVG backend pulls in a font stack
//! for text we can write as plain `<text>`). Everything from the run (file names, code,
//! suggester specs, error messages) is untrusted and goes through [`escape`]; the page's
//! Content-Security-Policy forbids scripts and every fetch, as a second guard. The page
//! skeleton (`page_start`/`PAGE_END`, `text_table`, `escape`) is `base::html`'s, shared
//! with `tasks::html` and `live::html`.

use std::fmt::Write;

use super::drill::{DiffLine, LineDiff, StepView, TrajectorySteps};
use super::report::RunReport;
use super::{RunError, RunRead};
use crate::base::html::{PAGE_END, escape, page_start, text_table};
use crate::core::metrics::flow::FlowClass;
use crate::core::metrics::statistics::{mean, quantile};

/// One run of the page: its report figures, optional confidence intervals and the
/// per-step drill-down.
#[derive(Debug, Clone)]
pub struct HtmlRun {
    /// The figures `nextedit report` prints.
    pub report: RunReport,
    /// Confidence intervals of the headline figures, where the run has them (runs
    /// with repetitions); every field `None` renders the plain values.
    pub intervals: Intervals,
    /// Each trajectory's steps.
    pub trajectories: Vec<TrajectorySteps>,
}

impl HtmlRun {
    /// The figures of run `run`, read from the store.
    pub fn of(store: &dyn RunRead, run: i64) -> Result<HtmlRun, RunError> {
        Ok(HtmlRun {
            report: RunReport::of(store, run)?,
            intervals: Intervals::of(&super::figures::GroupFigures::of(store, run)?),
            trajectories: super::drill::run_steps(store, run)?,
        })
    }
}

/// 95 % confidence intervals `(low, high)` of a run's headline figures; a column shows
/// its interval only when the run has one.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Intervals {
    /// Micro F1.
    pub micro_f1: Option<(f64, f64)>,
    /// Macro F1.
    pub macro_f1: Option<(f64, f64)>,
    /// hit@1.
    pub hit1: Option<(f64, f64)>,
    /// Mean reciprocal rank.
    pub mrr: Option<(f64, f64)>,
    /// Mean BLEU-4.
    pub mean_bleu: Option<(f64, f64)>,
    /// Mean ES.
    pub mean_es: Option<(f64, f64)>,
    /// Mean delta-chrF.
    pub mean_delta_chrf: Option<(f64, f64)>,
    /// NEP partial match rate.
    pub nep_partial: Option<(f64, f64)>,
    /// NEP position match rate.
    pub nep_position: Option<(f64, f64)>,
    /// Location accuracy.
    pub location_acc: Option<(f64, f64)>,
    /// Share the judge said yes to (`nep`).
    pub judge_yes: Option<(f64, f64)>,
    /// Share the judge said reverts edits (`zed-qa`).
    pub judge_reverting: Option<(f64, f64)>,
    /// The judge's mean confidence (`zed-qa`).
    pub judge_confidence: Option<(f64, f64)>,
    /// Judge questions with no verdict.
    pub judge_failures: Option<(f64, f64)>,
}

impl Intervals {
    /// The intervals over a run's repetitions (`replay --repetitions`); none for a
    /// single run.
    pub fn of(group: &super::figures::GroupFigures) -> Intervals {
        let interval = |name: &str| group.get(name).and_then(|estimate| estimate.interval);
        Intervals {
            micro_f1: interval("micro_f1"),
            macro_f1: interval("macro_f1"),
            hit1: interval("hit_at_1"),
            mrr: interval("mrr"),
            mean_bleu: interval("mean_bleu"),
            mean_es: interval("mean_es"),
            mean_delta_chrf: interval("mean_delta_chrf"),
            nep_partial: interval("nep_partial"),
            nep_position: interval("nep_position"),
            location_acc: interval("location_acc"),
            judge_yes: interval("judge_yes"),
            judge_reverting: interval("judge_reverting"),
            judge_confidence: interval("judge_confidence"),
            judge_failures: interval("judge_failures"),
        }
    }
}

/// Lines of a diff shown in the drill-down; the rest is counted.
const MAX_DIFF_LINES: usize = 40;

/// Predictions of a step shown in the drill-down, best first; the rest is counted.
const MAX_PREDICTIONS: usize = 5;

/// The whole page for some runs.
pub fn render(runs: &[HtmlRun]) -> String {
    render_with_live(runs, &[], None)
}

/// The whole page for some runs, with what a reader must know before comparing them
/// (`notes`: [`super::Compared::notes`]) and the "Live sessions" section
/// (`live::html::section`, `report --live`) when given.
pub fn render_with_live(runs: &[HtmlRun], notes: &[String], live: Option<&str>) -> String {
    let ids: Vec<String> = runs.iter().map(|r| r.report.info.id.to_string()).collect();
    let mut h = page_start(&format!("nextedit report: run {}", ids.join(", ")));
    run_table(&mut h, runs);
    if runs.iter().any(|r| r.report.judge.is_some()) {
        judge_table(&mut h, runs);
    }
    scoring_table(&mut h, runs, notes);
    flow_bars(&mut h, runs);
    step_charts(&mut h, runs);
    coverage_charts(&mut h, runs);
    match live {
        Some(section) => h.push_str(section),
        None => h.push_str("<h2 id=\"live\">Live sessions</h2>\n<p class=\"muted\">Live-session figures are not part of this report yet.</p>\n"),
    }
    drill_down(&mut h, runs);
    h.push_str(PAGE_END);
    h
}

/// `0.512`, or, when the run has repetitions, their mean with ` [0.401, 0.623]`: the
/// t-interval is symmetric, so its midpoint is the mean over the repetitions (the
/// row's other figures are its first repetition's).
fn figure(value: Option<f64>, interval: Option<(f64, f64)>, digits: usize) -> String {
    match (value, interval) {
        (_, Some((lo, hi))) => {
            let mean = (lo + hi) / 2.0;
            format!(
                "<span title=\"mean over the repetitions\">{mean:.digits$}</span> <span class=\"ci\">[{lo:.digits$}, {hi:.digits$}]</span>"
            )
        }
        (Some(v), None) => format!("{v:.digits$}"),
        (None, None) => "–".to_string(),
    }
}

fn run_table(h: &mut String, runs: &[HtmlRun]) {
    h.push_str("<h2 id=\"runs\">Runs</h2>\n<table class=\"runs\">\n<tr><th>Run</th><th class=\"l\">Suggester</th><th>Trajectories</th><th>Steps</th>\
<th>Micro P</th><th>Micro R</th><th>Micro F1</th><th>Macro F1</th><th>hit@1</th><th>hit@3</th><th>MRR</th>\
<th>Mean BLEU</th><th>Mean ES</th><th>Mean delta-chrF</th><th>NEP partial</th><th>NEP position</th><th>Location acc.</th><th>Do nothing: BLEU empty / unchanged</th><th>Do nothing: ES empty / unchanged</th>\
<th>suggest p50 / p95 ms</th><th class=\"l\">Failed calls</th></tr>\n");
    for run in runs {
        let r = &run.report;
        let (s, m, b, ci) = (&r.summary, &r.measurements, &r.baseline, &run.intervals);
        let hit = |k: usize| s.hit_at.iter().find(|(kk, _)| *kk == k).map(|(_, v)| *v);
        // A run without steps has no figures (not zeros).
        let stepped = |v: f64| (s.steps > 0).then_some(v);
        let pair = |x: Option<f64>, y: Option<f64>, d: usize| match (x, y) {
            (Some(x), Some(y)) => format!("{x:.d$} / {y:.d$}"),
            _ => "–".to_string(),
        };
        let latency = match (quantile(&m.suggest_ms, 0.5), quantile(&m.suggest_ms, 0.95)) {
            (Some(p50), Some(p95)) => format!("{p50:.1} / {p95:.1}"),
            _ => "–".to_string(),
        };
        let errors: Vec<String> = m.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let mut suggester = escape(&r.info.suggester);
        if r.unsandboxed_process || r.unsandboxed() == Some(true) {
            suggester.push_str(" <span class=\"warn\">unsandboxed</span>");
        }
        if r.verdict.failed() {
            suggester.push_str(" <span class=\"warn failed\">FAILED</span>");
        }
        let _ = writeln!(
            h,
            "<tr class=\"run\" id=\"run-{id}\"><td>{id}</td><td class=\"l\">{suggester}</td><td>{done}/{all}</td><td>{steps}</td>\
<td>{mp}</td><td>{mr}</td><td>{mf}</td><td>{af}</td><td>{h1}</td><td>{h3}</td><td>{mrr}</td><td>{bleu}</td><td>{es}</td>\
<td>{chrf}</td><td>{partial}</td><td>{position}</td><td>{location}</td><td>{nb}</td><td>{ne}</td><td class=\"latency\">{latency}</td><td class=\"l\">{errors}</td></tr>",
            id = r.info.id,
            done = r.info.done,
            all = r.info.trajectories,
            steps = s.steps,
            mp = figure(stepped(s.micro.precision), None, 3),
            mr = figure(stepped(s.micro.recall), None, 3),
            mf = figure(stepped(s.micro.f1), ci.micro_f1, 3),
            af = figure(stepped(s.macro_.f1), ci.macro_f1, 3),
            h1 = figure(hit(1).filter(|_| s.steps > 0), ci.hit1, 3),
            h3 = figure(hit(3).filter(|_| s.steps > 0), None, 3),
            mrr = figure(stepped(s.mrr), ci.mrr, 3),
            bleu = figure(mean(&m.bleu), ci.mean_bleu, 1),
            es = figure(mean(&m.es), ci.mean_es, 3),
            chrf = figure(r.yardsticks.mean_delta_chrf, ci.mean_delta_chrf, 1),
            partial = figure(r.yardsticks.nep_partial_rate, ci.nep_partial, 3),
            position = figure(r.yardsticks.nep_position_rate, ci.nep_position, 3),
            location = figure(r.yardsticks.location_accuracy, ci.location_acc, 3),
            nb = pair(b.empty_bleu, b.unchanged_bleu, 1),
            ne = pair(b.empty_es, b.unchanged_es, 3),
            errors = escape(&if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }),
        );
    }
    h.push_str("</table>\n<p class=\"muted\">Micro/macro precision, recall and F1 of the predicted locations; hit@k and MRR of the first keeping prediction; \
BLEU-4 (0–100) and ES (0–1) of the content beside what doing nothing scores on the same steps (an empty answer / the unchanged text); \
Zed's delta-chrF (0–100) and the Next Edit Prediction benchmark's partial and position match rates of the content, in its file; \
location accuracy: the share of steps with an edit allowed next whose best-ranked prediction is at one. \
For a run replayed with repetitions, a figure with a bracketed range is the mean over its repetitions and its 95 % t-interval; the row's other figures are its first repetition's.</p>\n");
}

/// What the judge said about each judged run's steps (`replay --judge`).
fn judge_table(h: &mut String, runs: &[HtmlRun]) {
    h.push_str("<h2 id=\"judge\">Judge</h2>\n<table class=\"runs\">\n<tr><th>Run</th><th class=\"l\">Judge</th><th>Question</th>\
<th>Asked</th><th>Judged</th><th>Failed</th><th>Cached</th><th>Judged yes</th><th>Reverting</th><th>Mean confidence</th><th class=\"l\">Failures</th></tr>\n");
    for run in runs {
        let Some(j) = &run.report.judge else {
            continue;
        };
        let ci = &run.intervals;
        let failures: Vec<String> = j.failures.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let failed = match ci.judge_failures {
            Some(_) => figure(None, ci.judge_failures, 2),
            None => j.failed.to_string(),
        };
        let _ = writeln!(
            h,
            "<tr><td>{id}</td><td class=\"l\">{judge}</td><td>{prompt}</td><td>{asked}</td><td>{judged}</td><td>{failed}</td><td>{cached}</td>\
<td>{yes}</td><td>{reverting}</td><td>{confidence}</td><td class=\"l\">{failures}</td></tr>",
            id = run.report.info.id,
            judge = escape(&j.judge),
            // The answers' format only when not free text (the default).
            prompt = match j.format {
                "text" => j.prompt.to_string(),
                format => format!("{} ({format})", j.prompt),
            },
            asked = j.asked,
            judged = j.judged,
            cached = j.cached,
            yes = figure(j.yes_share, ci.judge_yes, 3),
            reverting = figure(j.reverting_share, ci.judge_reverting, 3),
            confidence = figure(j.mean_confidence, ci.judge_confidence, 2),
            failures = escape(&if failures.is_empty() {
                "none".to_string()
            } else {
                failures.join(", ")
            }),
        );
    }
    h.push_str("</table>\n<p class=\"muted\">A judge model asked about each step's scored prediction: nep, the Next Edit Prediction benchmark's question \
(is it a reasonable next edit, given the real one? the share answered yes); zed-qa, Zed's QA question (does it revert the programmer's edits? \
the share judged reverting, and the mean confidence 1–5 that they would accept it). Shares are over the answers read; a refusal, an unreadable \
answer, an HTTP error or a time-out is a failure, never a verdict. For a run replayed with repetitions, a bracketed range is the mean over its repetitions \
and its 95 % t-interval.</p>\n");
}

/// How each run was scored and whether it failed, then what a reader must know before
/// comparing the runs (definitions that differ, the steps left out).
fn scoring_table(h: &mut String, runs: &[HtmlRun], notes: &[String]) {
    h.push_str("<h2 id=\"scoring\">How each run was scored</h2>\n");
    let rows: Vec<Vec<String>> = (runs.iter())
        .map(|run| {
            let (d, v) = (&run.report.definition, &run.report.verdict);
            vec![
                run.report.info.id.to_string(),
                d.match_label(),
                d.order_label().to_string(),
                d.reveal_label(),
                d.exclude_label(),
                d.sandbox.clone(),
                d.set_label(),
                v.reason()
                    .map_or("ok".to_string(), |reason| format!("FAILED: {reason}")),
            ]
        })
        .collect();
    text_table(
        h,
        "scoring",
        8,
        &[
            "Run",
            "Match",
            "Order",
            "Reveal",
            "Exclude origin",
            "Sandbox",
            "Trajectory set",
            "Verdict",
        ],
        &rows,
    );
    if !notes.is_empty() {
        h.push_str("<pre class=\"notes warn\">");
        for note in notes {
            h.push_str(&escape(note));
            h.push('\n');
        }
        h.push_str("</pre>\n");
    }
}

const CLASSES: [(FlowClass, &str); 4] = [
    (FlowClass::Keeping, "keeping"),
    (FlowClass::Jumping, "jumping"),
    (FlowClass::Reverting, "reverting"),
    (FlowClass::Breaking, "breaking"),
];

fn flow_bars(h: &mut String, runs: &[HtmlRun]) {
    h.push_str("<h2 id=\"flow\">Flow classes per suggester</h2>\n<p>");
    for (class, name) in CLASSES {
        let _ = write!(h, "<span class=\"key {}\"></span>{name}", class.key());
    }
    h.push_str("</p>\n");
    let (width, row, label) = (600.0, 28.0, 60.0);
    let height = row * runs.len() as f64 + 4.0;
    let _ = writeln!(
        h,
        "<svg class=\"chart flow\" width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"flow-class shares per run\">",
        width + label + 10.0
    );
    for (i, run) in runs.iter().enumerate() {
        let shares = &run.report.summary.shares;
        let y = i as f64 * row + 2.0;
        let _ = writeln!(
            h,
            "<text x=\"0\" y=\"{}\" font-size=\"12\">run {}</text>",
            y + 17.0,
            run.report.info.id
        );
        let mut x = label;
        for ((class, name), share) in CLASSES.iter().zip([
            shares.flow_keeping,
            shares.flow_jumping,
            shares.flow_reverting,
            shares.flow_breaking,
        ]) {
            let w = share * width;
            if w > 0.0 {
                let _ = writeln!(
                    h,
                    "<rect class=\"{}\" x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"><title>run {}: {name} {share:.3}</title></rect>",
                    class.key(),
                    row - 6.0,
                    run.report.info.id
                );
            }
            x += w;
        }
        if x == label {
            let _ = writeln!(
                h,
                "<text x=\"{label}\" y=\"{}\" font-size=\"12\" fill=\"#777\">no predictions</text>",
                y + 17.0
            );
        }
    }
    h.push_str("</svg>\n");
}

/// A small line chart: `series` of (colour, points in 0..=1 at x = 1..=n), an optional
/// shaded area under the first series, the title as a caption.
fn line_chart(
    h: &mut String,
    class: &str,
    caption: &str,
    n: usize,
    series: &[(&str, Vec<Option<f64>>)],
    shade: bool,
) {
    let (w, ht, pad) = (280.0, 120.0, 24.0);
    let x = |i: usize| {
        pad + if n > 1 {
            (i as f64) * (w - 2.0 * pad) / (n - 1) as f64
        } else {
            (w - 2.0 * pad) / 2.0
        }
    };
    let y = |v: f64| ht - pad + 6.0 - v.clamp(0.0, 1.0) * (ht - pad - 4.0);
    let _ = writeln!(
        h,
        "<figure><svg class=\"chart {class}\" width=\"{w}\" height=\"{ht}\" role=\"img\">"
    );
    let _ = writeln!(
        h,
        "<line x1=\"{pad}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/><line x1=\"{pad}\" y1=\"{}\" x2=\"{pad}\" y2=\"{}\" stroke=\"#999\"/>\
<text x=\"2\" y=\"{}\" font-size=\"10\">1</text><text x=\"2\" y=\"{}\" font-size=\"10\">0</text><text x=\"{}\" y=\"{}\" font-size=\"10\">step {n}</text>",
        y(0.0),
        w - pad,
        y(0.0),
        y(0.0),
        y(1.0),
        y(1.0) + 4.0,
        y(0.0),
        w - pad - 30.0,
        ht - 2.0
    );
    for (k, (colour, values)) in series.iter().enumerate() {
        let points: Vec<(f64, f64)> = values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (x(i), y(v))))
            .collect();
        let path: Vec<String> = points
            .iter()
            .map(|(a, b)| format!("{a:.1},{b:.1}"))
            .collect();
        if shade && k == 0 && !points.is_empty() {
            let (first, last) = (points[0].0, points[points.len() - 1].0);
            let _ = writeln!(
                h,
                "<polygon class=\"auc\" fill=\"{colour}\" fill-opacity=\"0.2\" points=\"{first:.1},{base:.1} {} {last:.1},{base:.1}\"/>",
                path.join(" "),
                base = y(0.0)
            );
        }
        let _ = writeln!(
            h,
            "<polyline fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/>",
            path.join(" ")
        );
        for (a, b) in &points {
            let _ = writeln!(
                h,
                "<circle cx=\"{a:.1}\" cy=\"{b:.1}\" r=\"2.5\" fill=\"{colour}\"/>"
            );
        }
    }
    let _ = writeln!(
        h,
        "</svg><figcaption>{}</figcaption></figure>",
        escape(caption)
    );
}

fn step_charts(h: &mut String, runs: &[HtmlRun]) {
    h.push_str("<h2 id=\"steps\">Precision and recall per step</h2>\n<p><span class=\"key\" style=\"background:#1971c2\"></span>precision<span class=\"key\" style=\"background:#e8590c\"></span>recall</p>\n");
    for run in runs {
        let _ = writeln!(
            h,
            "<h3>Run {}: {}</h3>\n<div class=\"charts\">",
            run.report.info.id,
            escape(&run.report.info.suggester)
        );
        for t in &run.trajectories {
            let p: Vec<Option<f64>> = t.steps.iter().map(|s| Some(s.precision)).collect();
            let r: Vec<Option<f64>> = t.steps.iter().map(|s| Some(s.recall)).collect();
            line_chart(
                h,
                "pr",
                &t.key,
                t.steps.len(),
                &[("#1971c2", p), ("#e8590c", r)],
                false,
            );
        }
        h.push_str("</div>\n");
    }
}

fn coverage_charts(h: &mut String, runs: &[HtmlRun]) {
    if runs.iter().all(|r| r.report.context.is_empty()) {
        return;
    }
    h.push_str("<h2 id=\"context\">Context coverage</h2>\n<p class=\"muted\">Cumulative line coverage of the edited lines and the definitions they use by what the suggester read, per step (ContextBench, fixed mode); the shaded area is the AUC.</p>\n");
    for run in runs {
        if run.report.context.is_empty() {
            continue;
        }
        let _ = writeln!(
            h,
            "<h3>Run {}</h3>\n<div class=\"charts\">",
            run.report.info.id
        );
        for c in &run.report.context {
            match &c.scores {
                Ok(s) => {
                    let values: Vec<Option<f64>> = (s.result.trajectory.steps.iter())
                        .map(|step| step.coverage.line)
                        .collect();
                    let auc = s.result.trajectory.auc_coverage.line;
                    let caption = format!(
                        "{}: line AUC {}",
                        c.key,
                        auc.map_or("–".to_string(), |a| format!("{a:.3}"))
                    );
                    line_chart(
                        h,
                        "coverage",
                        &caption,
                        values.len(),
                        &[("#2b8a3e", values)],
                        true,
                    );
                }
                Err(e) => {
                    let _ = writeln!(
                        h,
                        "<p class=\"warn\">{}: {}</p>",
                        escape(&c.key),
                        escape(&e.to_string())
                    );
                }
            }
        }
        h.push_str("</div>\n");
    }
}

fn drill_down(h: &mut String, runs: &[HtmlRun]) {
    h.push_str("<h2 id=\"drill\">Steps</h2>\n");
    for run in runs {
        let _ = writeln!(
            h,
            "<h3>Run {}: {}</h3>",
            run.report.info.id,
            escape(&run.report.info.suggester)
        );
        for t in &run.trajectories {
            let _ = writeln!(
                h,
                "<details class=\"trajectory\"><summary>{} ({} steps)</summary>",
                escape(&t.key),
                t.steps.len()
            );
            if let Some(note) = &t.note {
                let _ = writeln!(
                    h,
                    "<p class=\"warn\">No states to diff against: {}</p>",
                    escape(note)
                );
            }
            for s in &t.steps {
                step(h, s);
            }
            h.push_str("</details>\n");
        }
    }
}

fn step(h: &mut String, s: &StepView) {
    let content = match (s.bleu, s.es, s.answer) {
        // The gold edit itself is the answer unless an alternative was closer.
        (Some(b), Some(e), Some(k)) if k > 0 => {
            format!(", BLEU {b:.1}, ES {e:.3} against alternative {k}")
        }
        (Some(b), Some(e), _) => format!(", BLEU {b:.1}, ES {e:.3}"),
        _ => String::new(),
    };
    let _ = writeln!(
        h,
        "<details class=\"step\"><summary>step {}: P {:.3}, R {:.3}{content}, {} prediction{}</summary>",
        s.step,
        s.precision,
        s.recall,
        s.predictions.len(),
        if s.predictions.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(h, "<p>Gold edit {}</p>", escape(&s.gold.edit));
    match &s.gold.diff {
        Some(d) => diff(h, "gold", d),
        None => h.push_str("<p class=\"muted\">(not placed in the step's state)</p>\n"),
    }
    // The best few: an oracle or a broad suggester may rank every remaining edit.
    for p in s.predictions.iter().take(MAX_PREDICTIONS) {
        let matched = p
            .matched
            .as_deref()
            .map_or(String::new(), |m| format!(", matched {}", escape(m)));
        let _ = writeln!(
            h,
            "<p>Prediction {}: <span class=\"key {}\"></span>{}{matched}</p>",
            p.rank,
            p.class.key(),
            p.class.key().trim_start_matches("flow_")
        );
        diff(h, "prediction", &p.diff);
    }
    if s.predictions.len() > MAX_PREDICTIONS {
        let _ = writeln!(
            h,
            "<p class=\"muted\">… {} more predictions</p>",
            s.predictions.len() - MAX_PREDICTIONS
        );
    }
    for f in &s.failures {
        let _ = writeln!(h, "<p class=\"warn\">{}</p>", escape(f));
    }
    h.push_str("</details>\n");
}

fn diff(h: &mut String, class: &str, d: &LineDiff) {
    // Lines are 1-based on the page; an empty range inserts before its line.
    let mut place = match d.end_line - d.start_line {
        0 => format!("inserted before line {}", d.start_line + 1),
        1 => format!("line {}", d.end_line),
        _ => format!("lines {}–{}", d.start_line + 1, d.end_line),
    };
    if !d.in_state {
        place.push_str(" (not one of the trajectory's files: its current lines are not shown)");
    }
    let _ = write!(
        h,
        "<div class=\"{class}\"><span class=\"muted\">{} {place}</span><pre class=\"diff\">",
        escape(&d.file),
    );
    // A long diff (a new file, a rewritten module) is cut: the page stays small enough
    // to open when a run has thousands of steps.
    for line in d.lines.iter().take(MAX_DIFF_LINES) {
        let (css, mark, text) = match line {
            DiffLine::Same(t) => ("same", ' ', t),
            DiffLine::Removed(t) => ("del", '-', t),
            DiffLine::Added(t) => ("add", '+', t),
        };
        let _ = write!(
            h,
            "<span class=\"{css}\">{mark}{}</span>",
            escape(text.trim_end_matches(['\n', '\r']))
        );
    }
    if d.lines.len() > MAX_DIFF_LINES {
        let _ = write!(
            h,
            "<span class=\"muted\">… {} more lines</span>",
            d.lines.len() - MAX_DIFF_LINES
        );
    }
    h.push_str("</pre></div>\n");
}

#[cfg(test)]
mod tests {
    use super::{HtmlRun, Intervals, render};
    use crate::core::metrics::flow::{FlowClass, HISTORIAN_KS, aggregate};
    use crate::service::run::definition::Definition;
    use crate::service::run::drill::{
        DiffLine, GoldView, LineDiff, PredictionView, StepView, TrajectorySteps,
    };
    use crate::service::run::judge::JudgeSummary;
    use crate::service::run::plan::{MatchKind, Order};
    use crate::service::run::report::{Baseline, RunReport};
    use crate::service::run::verdict::Verdict;
    use crate::service::run::yardsticks::YardstickSummary;
    use crate::store::{RunMeasurements, RunSummary};

    const HOSTILE: &str = "<script>alert(1)</script>";

    fn run(intervals: Intervals) -> HtmlRun {
        let diff = |text: &str| LineDiff {
            file: format!("{HOSTILE}.py"),
            start_line: 0,
            end_line: 1,
            in_state: true,
            lines: vec![
                DiffLine::Removed(format!("x = '{HOSTILE}'\n")),
                DiffLine::Added(text.to_string()),
            ],
        };
        HtmlRun {
            report: RunReport {
                info: RunSummary {
                    id: 7,
                    started_at: "2026-01-01T00:00:00Z".into(),
                    status: crate::store::RunStatus::Done,
                    suggester: format!("cmd:echo \"{HOSTILE}\""),
                    config: serde_json::json!({}),
                    trajectories: 1,
                    done: 1,
                    failed: 0,
                    steps: 1,
                    repetition: 1,
                    repetition_of: None,
                },
                summary: aggregate(&[], &HISTORIAN_KS),
                measurements: RunMeasurements {
                    bleu: vec![50.0],
                    es: vec![0.5],
                    ..RunMeasurements::default()
                },
                baseline: Baseline::default(),
                context: vec![],
                unsandboxed_process: false,
                definition: Definition {
                    suggester: format!("cmd:echo \"{HOSTILE}\""),
                    match_rule: MatchKind::Bleu,
                    es_threshold: None,
                    order: Order::Fixed,
                    reveal: vec![],
                    exclude_origin: vec![HOSTILE.into()],
                    sandbox: "bwrap".into(),
                    trajectories: 1,
                    trajectory_set: "0123456789ab".into(),
                },
                verdict: Verdict {
                    tallies: vec![],
                    max_failed_share: 1.0,
                    judge: None,
                },
                judge: Some(JudgeSummary {
                    // (No scheme: the page-fetches-nothing test looks for any.)
                    judge: format!("openai:127.0.0.1:9/v1?model={HOSTILE}"),
                    prompt: "zed-qa",
                    format: "text",
                    asked: 4,
                    judged: 3,
                    failed: 1,
                    failures: vec![("bad_result".into(), 1)],
                    cached: 0,
                    yes_share: None,
                    reverting_share: Some(1.0 / 3.0),
                    mean_confidence: Some(3.5),
                }),
                yardsticks: YardstickSummary {
                    mean_delta_chrf: Some(62.5),
                    nep_partial_rate: Some(0.0),
                    nep_position_rate: Some(1.0),
                    location_accuracy: Some(0.5),
                    location_steps: 2,
                },
            },
            intervals,
            trajectories: vec![TrajectorySteps {
                key: HOSTILE.into(),
                steps: vec![StepView {
                    step: 1,
                    precision: 1.0,
                    recall: 0.5,
                    bleu: Some(50.0),
                    es: Some(0.5),
                    answer: Some(0),
                    gold: GoldView {
                        edit: "e1".into(),
                        diff: Some(diff("</pre><img src=x onerror=alert(1)>\n")),
                    },
                    predictions: vec![PredictionView {
                        rank: 0,
                        class: FlowClass::Keeping,
                        matched: Some("e1".into()),
                        diff: diff("'&amp;' \"q\"\n"),
                    }],
                    failures: vec![format!("suggest crash: {HOSTILE}")],
                }],
                note: None,
            }],
        }
    }

    #[test]
    fn untrusted_text_is_escaped_everywhere() {
        let page = render(&[run(Intervals::default())]);
        assert!(!page.contains("<script"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(page.contains("&lt;/pre&gt;&lt;img src=x onerror=alert(1)&gt;"));
        assert!(page.contains("+&#39;&amp;amp;&#39; &quot;q&quot;"));
        // The scoring table's excluded origins and the judge's spec carry it too.
        assert_eq!(
            page.matches("&lt;script&gt;alert(1)&lt;/script&gt;")
                .count(),
            12
        );
    }

    #[test]
    fn the_page_fetches_nothing() {
        let page = render(&[run(Intervals::default())]);
        for needle in ["http:", "https:", "src=\"", "href=", "url(", "@import"] {
            assert!(!page.contains(needle), "{needle} in the page");
        }
        assert!(page.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
    }

    #[test]
    fn a_long_diff_is_cut_and_counted() {
        let mut r = run(Intervals::default());
        let step = &mut r.trajectories[0].steps[0];
        step.predictions[0].diff.lines =
            (0..45).map(|i| DiffLine::Added(format!("{i}\n"))).collect();
        let page = render(&[r]);
        assert!(page.contains(
            "<span class=\"add\">+39</span><span class=\"muted\">… 5 more lines</span></pre>"
        ));
        assert!(!page.contains("+40<"));
    }

    #[test]
    fn intervals_show_only_where_a_run_has_them() {
        let plain = render(&[run(Intervals::default())]);
        assert!(!plain.contains("class=\"ci\""));
        assert!(plain.contains("<td>50.0</td><td>0.500</td>"));
        // The judge's own table.
        assert!(plain.contains(
            "<td>zed-qa</td><td>4</td><td>3</td><td>1</td><td>0</td><td>–</td><td>0.333</td><td>3.50</td><td class=\"l\">bad_result 1</td>"
        ));
        // The yardsticks follow the content scores.
        assert!(
            plain.contains("<td>0.500</td><td>62.5</td><td>0.000</td><td>1.000</td><td>0.500</td>")
        );
        let with = render(&[run(Intervals {
            mean_bleu: Some((41.25, 58.75)),
            micro_f1: Some((0.0, 0.25)),
            ..Intervals::default()
        })]);
        let mean = "<span title=\"mean over the repetitions\">";
        assert!(with.contains(&format!(
            "<td>{mean}50.0</span> <span class=\"ci\">[41.2, 58.8]</span></td>"
        )));
        assert!(with.contains(&format!(
            "<td>{mean}0.125</span> <span class=\"ci\">[0.000, 0.250]</span></td>"
        )));
        assert_eq!(with.matches("class=\"ci\"").count(), 2);
    }
}
