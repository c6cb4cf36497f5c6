//! `nextedit report`: compare stored replay runs (tables or JSON built by
//! [`nextedit::service::run`]).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use nextedit::engine::live::{GroupBy, LiveConfig};
use nextedit::service::run::figures::GroupFigures;
use nextedit::service::run::html::{self, HtmlRun};
use nextedit::service::run::{Compared, RunRead, RunReport, json, text};
use nextedit::service::sessions::load_live_sessions;
use nextedit::store::Database;

/// Compare stored replay runs
///
/// One line per run: micro and macro precision/recall/F1, hit@1/3, MRR, flow-pattern
/// shares; then mean BLEU-4 and ES of the content beside what doing nothing (an empty
/// answer / the unchanged text) scores on the same steps, latency of both calls
/// (p50/p95) and the failed calls by kind. Unsandboxed runs are marked; runs that
/// used the response cache say how many calls it served.
///
/// Each run says how it was scored (match rule and threshold, order, what was
/// revealed, origins applied silently, sandbox, and its trajectory set: how many and a
/// digest of their texts) and whether it FAILED: more than its --max-failed-share of
/// one kind of call failed (by default: all of them), so its figures measure nothing.
/// Runs scored differently are said to be; runs over different trajectories or steps
/// are compared on the steps every run has (--common, the default), naming what was
/// left out (--common false: each run's own steps).
/// A run whose rows cannot be read (a value out of range or of the wrong type) is
/// skipped with why, the others are reported, and the exit status is 1.
///
/// A run replayed with --repetitions N (name its first run) shows a line per
/// repetition, then every figure's mean and 95 % t-interval over the repetitions.
/// --baseline RUN shows each figure beside the baseline run's, the difference, and
/// `*` where it moved beyond an interval (the baseline's, else the run's; two single
/// runs have none: the difference only, no mark; docs/replay.md).
///
/// --html FILE writes one self-contained page instead (no scripts, nothing fetched when
/// it is opened): the same table, flow-class bars per run, precision/recall per step
/// of each trajectory, context coverage curves where the suggester read, and every
/// step's gold edit and predictions as diffs; --live SESSION… adds the live-session
/// figures of recorded sessions (docs/live.md).
///
/// Examples:
///   nextedit report 7
///   nextedit report 7 --baseline 4 --json
///   nextedit report 3 4 --jsonl
///   nextedit report 3 4 5 --html report.html
///   nextedit report 7 --html report.html --live 12 13
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// Run ids (see the first line `nextedit replay` prints); none: list the runs
    #[arg(value_name = "RUN")]
    runs: Vec<i64>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    #[command(flatten)]
    json: super::JsonArgs,

    /// Compare the runs on the steps every one of them has (same trajectory text, same
    /// step), naming what is left out; false: each run's figures over all its steps
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    common: bool,

    /// Compare each run's figures with this run's (with its repetitions)
    #[arg(long, value_name = "RUN", requires = "runs")]
    baseline: Option<i64>,

    /// Write the report of the runs as one self-contained HTML page to FILE (no table
    /// is printed)
    #[arg(long, value_name = "FILE", requires = "runs", conflicts_with_all = ["json", "jsonl"])]
    html: Option<PathBuf>,

    /// Recorded sessions whose live figures (`nextedit live`) the --html page shows
    #[arg(long, value_name = "SESSION", num_args = 1.., requires = "html")]
    live: Vec<String>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let db_path = args.db.unwrap_or_else(nextedit::store::default_path);
    let db = Database::open_existing(&db_path)?;
    let mut out = std::io::stdout().lock();
    let layout = args.json.layout();
    if args.runs.is_empty() {
        let unreadable = text::print_run_list(&mut out, &db, db.path(), layout)?;
        return Ok(i32::from(unreadable > 0));
    }
    // A run whose rows cannot be read is skipped with why; the others are reported.
    let (runs, unreadable) = nextedit::service::run::report::readable_runs(&db, &args.runs);
    for (run, why) in &unreadable {
        eprintln!(
            "nextedit: skipping run {run}: {}",
            nextedit::base::secrets::scrub(why)
        );
    }
    if runs.is_empty() {
        anyhow::bail!("no run of {:?} could be read", args.runs);
    }
    let skipped = i32::from(!unreadable.is_empty());
    if layout.is_none() && args.html.is_none() {
        text::print_report_against(&mut out, &db, &runs, args.baseline, args.common)?;
        return Ok(skipped);
    }
    let compared = Compared::of(&db, &runs, args.baseline, args.common)?;
    let view = compared.common.view(&db);
    let store: &dyn RunRead = if args.common { &view } else { &db };
    if let Some(path) = &args.html {
        let runs = (runs.iter())
            .map(|&run| HtmlRun::of(store, run).with_context(|| format!("reading run {run}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let live = if args.live.is_empty() {
            None
        } else {
            let sessions = load_live_sessions(db.path(), &args.live, LiveConfig::default())
                .with_context(|| format!("reading --live sessions {}", args.live.join(", ")))?;
            let groups = nextedit::engine::live::figures(&sessions, GroupBy::Nothing);
            Some(nextedit::engine::live::html::section(&groups, &sessions))
        };
        let page = html::render_with_live(&runs, &compared.notes(), live.as_deref());
        std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("nextedit: wrote {}", path.display());
        return Ok(skipped);
    }
    let baseline = match args.baseline {
        Some(b) => Some(GroupFigures::of(store, b)?),
        None => None,
    };
    let mut reports = Vec::new();
    for &run in &runs {
        let report = RunReport::of(store, run)?;
        let figures = GroupFigures::of(store, run)?;
        reports.push(json::report_with_figures(
            &report,
            &figures,
            baseline.as_ref(),
        ));
    }
    if layout == Some(json::Layout::Lines) {
        for report in reports {
            writeln!(out, "{report}")?;
        }
        writeln!(
            out,
            "{}",
            serde_json::json!({"comparison": json::comparison(&compared)})
        )?;
    } else {
        writeln!(out, "{}", json::report_document(reports, &compared))?;
    }
    Ok(skipped)
}
