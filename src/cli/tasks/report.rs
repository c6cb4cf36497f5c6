//! `nextedit tasks report`: the figures of stored task runs (built by
//! [`nextedit::service::tasks::report`], printed by its `text` and `json`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use nextedit::service::tasks::{html, json, report, text};
use nextedit::store::Database;

/// Figures of task runs: per scenario and dependency level, evolution, correlation
///
/// For each run: tasks, valid tasks (ground truth passed), answers, pass@1, pass@k
/// (k = the run's samples; unbiased estimator), exact match, edit similarity (ES),
/// ES-Line, ES-Token, BLEU-4, SARI and Codev-Bench's "stopped at the right point"
/// (block scenarios), for all tasks, per scenario and per dependency level. Invalid
/// tasks are listed with their reason and left out of every figure.
///
/// When the runs hold tasks with context from their state and tasks with context from
/// the latest version (`tasks cut --context-from head`), HumanEvo's table follows: per
/// suggester and dependency level, each figure evolution-aware beside -ignored, and
/// the inflation (ignored − aware).
///
/// --correlation adds Pearson's r of ES-Line, ES-Token, BLEU, SARI, edit similarity
/// and exact match with pass/fail over every answer of the valid tasks of the runs
/// given, with n and a 95 % interval (Fisher z).
///
/// --html FILE also writes the same tables as one self-contained HTML page (no
/// script, nothing fetched; open it in any browser).
///
/// Examples:
///   nextedit tasks report 3 --db t.db
///   nextedit tasks report 3 4 --html tasks.html --db t.db
///   nextedit tasks report 3 4 --db t.db            # state vs head context
///   nextedit tasks report 3 4 5 6 --correlation --json --db t.db
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// Task run ids (printed by `nextedit tasks run`)
    #[arg(value_name = "RUN", required = true)]
    runs: Vec<i64>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Add the correlation of each text metric with pass/fail
    #[arg(long)]
    correlation: bool,

    /// Print JSON instead of tables
    #[arg(long)]
    json: bool,

    /// Also write the report as one self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let db_path = args.db.unwrap_or_else(nextedit::store::default_path);
    let db = Database::open_existing(&db_path)?;
    let report = report::build_report(&db, &args.runs, args.correlation)?;
    if let Some(path) = &args.html {
        std::fs::write(path, html::report_html(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json::report_json(&report))?
        );
    } else {
        print!("{}", text::report_text(&report));
    }
    Ok(0)
}
