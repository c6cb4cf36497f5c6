//! What `nextedit replay` writes and how it judges the run: `--json`/`--jsonl`,
//! Historian's results files, `--max-failed-share` and `--quiet` (a flattened
//! argument group), and the run's last words: its report or JSON summary, then the
//! verdict and the exit status.

use nextedit::store::RunRead;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use nextedit::service::run::json::{self, Layout, ReplayDocument};
use nextedit::service::run::verdict::Verdict;
use nextedit::service::run::{RunSettings, text};
use nextedit::store::Database;

/// What a replay writes besides the database, and when it counts as failed.
#[derive(Debug, Args)]
pub(super) struct OutputArgs {
    /// Also write Historian's results files into this directory, the plain JSON its
    /// analysis scripts read: {project}-{sha10}-{suggester}-simulation-results.json
    #[arg(long, value_name = "DIR", conflicts_with = "historian_json_xz")]
    historian_json: Option<PathBuf>,

    /// --historian-json, xz-compressed: …-simulation-results.json.xz (every step repeats
    /// the changed files whole; xz folds that ~90×)
    #[arg(long, value_name = "DIR")]
    historian_json_xz: Option<PathBuf>,

    /// The run FAILS (exit status 1, marked by `report`) when more than this share of
    /// one kind of call (initialize, suggest, generate) failed; whatever the share, a
    /// kind whose every call failed fails it (the default 1: only then)
    #[arg(long, value_name = "SHARE", default_value_t = nextedit::service::run::verdict::DEFAULT_MAX_FAILED_SHARE,
          allow_negative_numbers = true, value_parser = nextedit::base::ranges::fraction)]
    max_failed_share: f64,

    #[command(flatten)]
    json: super::super::JsonArgs,

    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per trajectory otherwise)
    #[arg(long, short)]
    pub(super) quiet: bool,
}

impl OutputArgs {
    /// Where Historian's results files go (`--historian-json` or its `-xz` form).
    pub(super) fn historian_dir(&self) -> Option<PathBuf> {
        self.historian_json
            .clone()
            .or(self.historian_json_xz.clone())
    }

    /// `settings` with these flags.
    pub(super) fn apply(&self, settings: RunSettings) -> RunSettings {
        RunSettings {
            historian_json: self.historian_dir(),
            historian_xz: self.historian_json_xz.is_some(),
            max_failed_share: self.max_failed_share,
            ..settings
        }
    }

    /// How JSON is printed; `None`: tables.
    pub(super) fn layout(&self) -> Option<Layout> {
        self.json.layout()
    }
}

/// The run's first words: its id and database (the header line of `--jsonl`, kept for
/// the document of `--json`).
pub(super) fn start(
    (layout, document): (Option<Layout>, &ReplayDocument),
    run: i64,
    db_path: &Path,
    settings: &RunSettings,
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match layout {
        None => writeln!(
            out,
            "run {run} in {} ({})",
            db_path.display(),
            settings.suggester
        )?,
        Some(layout) => {
            let header = json::run_header(run, db_path, &settings.sandbox);
            match layout {
                Layout::Lines => writeln!(out, "{header}")?,
                Layout::Document => document.set_header(header),
            }
        }
    }
    Ok(())
}

/// The run's last words: the report (or the JSON summary), the verdict on each of its
/// repetitions, and the exit status: 1 when a trajectory failed, the suggester never
/// answered or too many calls of one kind failed.
pub(super) fn finish(
    db: &Database,
    (layout, document): (Option<Layout>, &ReplayDocument),
    run: i64,
    settings: &RunSettings,
    failed: usize,
    never_answered: Option<String>,
) -> anyhow::Result<i32> {
    let verdicts = (db.run_repetitions(run)?.into_iter())
        .map(|r| Ok((r, Verdict::of(db, r)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut out = std::io::stdout().lock();
    match layout {
        None => text::print_report(&mut out, db, &[run])?,
        Some(layout) => {
            let summary = nextedit::service::run::report::flow_summary(db, run)?;
            let summary = json::run_summary(run, &settings.suggester, &summary, failed, &verdicts);
            match layout {
                Layout::Lines => writeln!(out, "{summary}")?,
                Layout::Document => document.write(&mut out, db, &summary)?,
            }
        }
    }
    if let Some(summary) = never_answered {
        eprintln!("nextedit: run {run} FAILED: the suggester never answered: {summary}");
        return Ok(1);
    }
    let mut code = if failed > 0 { 1 } else { 0 };
    for (r, verdict) in &verdicts {
        if let Some(reason) = verdict.reason() {
            eprintln!("nextedit: run {r} FAILED: {reason}");
            code = 1;
        }
    }
    Ok(code)
}
