//! `nextedit report`: compare stored replay runs (tables or JSON built by
//! [`nextedit::run`]).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use nextedit::run::{RunReport, json, text};
use nextedit::store::Database;

/// Compare stored replay runs
///
/// One line per run: micro and macro precision/recall/F1, hit@1/3, MRR, flow-pattern
/// shares; then mean BLEU-4 and ES of the content beside what doing nothing (an empty
/// answer / the unchanged text) scores on the same steps, latency of both calls
/// (p50/p95) and the failed calls by kind. Unsandboxed runs are marked.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run ids (see the first line `nextedit replay` prints); none: list the runs
    #[arg(value_name = "RUN")]
    runs: Vec<i64>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let db_path = args.db.unwrap_or_else(nextedit::store::default_path);
    let db = Database::open_existing(&db_path)?;
    let mut out = std::io::stdout().lock();
    if args.runs.is_empty() {
        text::print_run_list(&mut out, &db, db.path(), args.json)?;
        return Ok(0);
    }
    if args.json {
        for &run in &args.runs {
            writeln!(out, "{}", json::report(&RunReport::of(&db, run)?))?;
        }
        return Ok(0);
    }
    text::print_report(&mut out, &db, &args.runs)?;
    Ok(0)
}
