//! `nextedit report`: compare stored replay runs (tables or JSON built by
//! [`nextedit::run`]).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use nextedit::run::html::{self, HtmlRun};
use nextedit::run::{RunReport, json, text};
use nextedit::store::Database;

/// Compare stored replay runs
///
/// One line per run: micro and macro precision/recall/F1, hit@1/3, MRR, flow-pattern
/// shares; then mean BLEU-4 and ES of the content beside what doing nothing (an empty
/// answer / the unchanged text) scores on the same steps, latency of both calls
/// (p50/p95) and the failed calls by kind. Unsandboxed runs are marked.
///
/// --html FILE writes one self-contained page instead (no scripts, nothing fetched when
/// it is opened): the same table, flow-class bars per run, precision/recall per step
/// of each trajectory, context coverage curves where the suggester read, and every
/// step's gold edit and predictions as diffs, e.g. `nextedit report 3 4 5 --html
/// report.html`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run ids (see the first line `nextedit replay` prints); none: list the runs
    #[arg(value_name = "RUN")]
    runs: Vec<i64>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Print JSON instead of a table
    #[arg(long, conflicts_with = "html")]
    json: bool,

    /// Write the report of the runs as one self-contained HTML page to FILE (no table
    /// is printed)
    #[arg(long, value_name = "FILE", requires = "runs")]
    html: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> anyhow::Result<i32> {
    let db_path = args.db.unwrap_or_else(nextedit::store::default_path);
    let db = Database::open_existing(&db_path)?;
    let mut out = std::io::stdout().lock();
    if args.runs.is_empty() {
        text::print_run_list(&mut out, &db, db.path(), args.json)?;
        return Ok(0);
    }
    if let Some(path) = &args.html {
        let runs = (args.runs.iter())
            .map(|&run| HtmlRun::of(&db, run).with_context(|| format!("reading run {run}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        std::fs::write(path, html::render(&runs))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("nextedit: wrote {}", path.display());
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
