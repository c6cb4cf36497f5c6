//! `nextedit import`: other tools' recordings and benchmark tasks → stored sessions
//! (`copilot`, `contextbench`, here); Historian's testset → local repositories
//! ([`testset`]); Zed's eval examples → sessions ([`zed`]).

mod testset;
mod zed;

use nextedit::store::SessionStore;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::core::import::{contextbench, copilot};
use nextedit::core::metrics::contextbench::{Conversion, InputError, RepoView};
use nextedit::service::contextbench_io::DirRepo;
use nextedit::service::import_io::{read_rows, recording_files, recording_name};
use nextedit::store::Database;

/// Import other tools' recordings and benchmark tasks as sessions
///
/// Each item becomes one stored session (see `nextedit sessions list`). A bad item is
/// reported on stderr and skipped; the batch goes on. Prints one line per stored
/// session: its id, a tab, and where it came from. Exit code 1 when some items were
/// skipped, 2 on a fatal error (unreadable input, database).
#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    Copilot(CopilotArgs),
    Contextbench(ContextBenchArgs),
    HistorianTestset(testset::HistorianTestsetArgs),
    ZedExamples(zed::ZedExamplesArgs),
}

/// Copilot NES workspace recordings → sessions of kind `recorded`
///
/// Each `*.recording.w.json` (given, or found under a given directory) becomes a
/// session: documents from `documentEncountered` (`\` → `/`, a leading `..` kept inside
/// as `_up_`, an absolute path skips the recording), base text from the first
/// `setContent`, one change per replacement of each `changed` entry (UTF-16 offsets
/// converted to bytes), later `setContent` / `restoreContent` as `external` changes,
/// `opened` / `closed` / `focused` / `selectionChanged` as open, close and signal
/// events, times relative to the first entry and never decreasing. `nextUserEdit`
/// becomes the last edit(s) and `gold.next_edits` (gold source `copilot-nes`;
/// `NO_EDIT_EXPECTED` gives no next edit and source `copilot-nes:no-edit-expected`).
/// A recording whose changes do not replay to its own text is skipped.
#[derive(Debug, Args)]
pub struct CopilotArgs {
    /// Recording files, or directories searched for `*recording.w.json`
    #[arg(required = true, value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per item otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// ContextBench tasks → sessions of kind `imported`
///
/// Each gold row becomes a session whose `gold.context` is the row's gold regions
/// (1-based inclusive lines → 0-based half-open) with gold source `contextbench`, and
/// whose events are the agent's reads from the matching Benchkit trace row (--trace)
/// or prediction row (--pred, `traj_data.pred_steps`): one `read` event per span
/// (an empty line range for a file-only read), `via` the tool name (`traj_data` for
/// predictions), and the reads of one step sharing one `t_ms` (the step's index).
/// Rows match by instance id as in `nextedit score contextbench`. With --repo, the
/// files named are listed with their text.
#[derive(Debug, Args)]
pub struct ContextBenchArgs {
    /// Gold rows: evaluator gold JSONL, or Hugging Face rows (JSONL or a JSON array)
    #[arg(long, value_name = "FILE")]
    gold: PathBuf,

    /// Benchkit trace.jsonl rows (tool invocations)
    #[arg(long, value_name = "FILE", conflicts_with = "pred")]
    trace: Option<PathBuf>,

    /// Evaluator prediction JSONL rows (`traj_data`)
    #[arg(long, value_name = "FILE")]
    pred: Option<PathBuf>,

    /// Checkout of the repository at the tasks' base commit
    #[arg(long, value_name = "DIR")]
    repo: Option<PathBuf>,

    /// Convert traces with Benchkit's rules exactly, defects included (default: fixed)
    #[arg(long)]
    compat: bool,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per item otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `nextedit import …`.
pub fn run(command: ImportCommand) -> Result<i32> {
    match command {
        ImportCommand::Copilot(args) => run_copilot(args),
        ImportCommand::Contextbench(args) => run_contextbench(args),
        ImportCommand::HistorianTestset(args) => testset::run(args),
        ImportCommand::ZedExamples(args) => zed::run(args),
    }
}

fn open_db(db: &Option<PathBuf>) -> Result<Database> {
    let path = db.clone().unwrap_or_else(nextedit::store::default_path);
    Database::open(&path).with_context(|| format!("opening database {}", path.display()))
}

fn run_copilot(args: CopilotArgs) -> Result<i32> {
    let files = recording_files(&args.paths)?;
    if files.is_empty() {
        bail!("no *recording.w.json files found");
    }
    let mut db = open_db(&args.db)?;
    let mut failed = 0;
    let progress = Progress::new(ProgressMode::detect(args.quiet), "recordings");
    progress.start(files.len());
    for path in &files {
        let imported = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))
            .and_then(|text| {
                copilot::import_recording(&text, &recording_name(path))
                    .with_context(|| path.display().to_string())
            });
        match imported {
            Ok(import) => {
                let id = db.import_trajectory(&import.trajectory)?;
                progress.suspend(|| println!("{id}\t{}", path.display()));
                if !import.ignored.is_empty() {
                    let kinds: Vec<String> = import
                        .ignored
                        .iter()
                        .map(|(k, n)| format!("{n} {k}"))
                        .collect();
                    progress.suspend(|| {
                        eprintln!(
                            "{}: left out entries without a trajectory equivalent: {}",
                            path.display(),
                            kinds.join(", ")
                        )
                    });
                }
                progress.item(&recording_name(path), &format!("session {id}"));
            }
            Err(error) => {
                failed += 1;
                let error = format!("{error:#}");
                progress
                    .suspend(|| eprintln!("skipped {}", nextedit::base::secrets::scrub(&error)));
                progress.item(&recording_name(path), "skipped");
            }
        }
    }
    progress.finish();
    eprintln!(
        "imported {} of {} recordings ({failed} skipped)",
        files.len() - failed,
        files.len()
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

fn run_contextbench(args: ContextBenchArgs) -> Result<i32> {
    let repo = match &args.repo {
        Some(dir) if !dir.is_dir() => bail!("--repo `{}`: not a directory", dir.display()),
        Some(dir) => Some(DirRepo::new(dir)),
        None => None,
    };
    let conversion = if args.compat {
        Conversion::Compat
    } else {
        Conversion::Fixed
    };
    let (tasks, mut failed) = parse_rows(&args.gold, contextbench::parse_gold_task)?;
    let mut reads = Vec::new();
    let reads_path = args.trace.as_ref().or(args.pred.as_ref());
    if let Some(path) = reads_path {
        let counts = |p: &str| repo.as_ref().and_then(|r| r.line_count(p));
        let (parsed, skipped) = parse_rows(path, |v, line| {
            contextbench::parse_reads(v, line, conversion, &counts)
        })?;
        reads = parsed;
        failed += skipped;
    }
    let mut db = open_db(&args.db)?;
    let mut used = vec![false; reads.len()];
    let mut stored = 0;
    let progress = Progress::new(ProgressMode::detect(args.quiet), "tasks");
    progress.start(tasks.len());
    for task in &tasks {
        let id = &task.gold.instance_id;
        let matched = contextbench::match_reads(&task.gold, tasks.len(), &reads);
        if let Some(m) = matched
            && let Some(i) = reads.iter().position(|r| std::ptr::eq(r, m))
        {
            used[i] = true;
        }
        let view = repo.as_ref().map(|r| r as &dyn RepoView);
        match contextbench::import_task(task, matched, view) {
            Ok(imported) => {
                let mut trajectory = imported.trajectory;
                trajectory.session.workspace = args.repo.as_ref().map(|d| d.display().to_string());
                let session = db.import_trajectory(&trajectory)?;
                stored += 1;
                progress.suspend(|| println!("{session}\t{id}"));
                if let (Some(path), None) = (reads_path, matched) {
                    eprintln!(
                        "{id}: no row of {} matches; imported without reads",
                        path.display()
                    );
                }
                say_left_out(
                    id,
                    &imported.missing_files,
                    imported.ignored_symbols,
                    matched,
                );
                progress.item(id, &format!("session {session}"));
            }
            Err(error) => {
                failed += 1;
                let error = error.to_string();
                progress
                    .suspend(|| eprintln!("skipped {}", nextedit::base::secrets::scrub(&error)));
                progress.item(id, "skipped");
            }
        }
    }
    progress.finish();
    for (r, used) in reads.iter().zip(&used) {
        if !used {
            failed += 1;
            eprintln!("skipped {}: no gold row matches", r.instance_id);
        }
    }
    eprintln!(
        "imported {stored} of {} tasks ({failed} items skipped)",
        tasks.len()
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

/// The rows of `path` that `parse` accepts, and how many it did not (each said on
/// stderr, naming the file).
fn parse_rows<T>(
    path: &Path,
    parse: impl Fn(&serde_json::Value, usize) -> Result<T, InputError>,
) -> Result<(Vec<T>, usize)> {
    let mut parsed = Vec::new();
    let mut skipped = 0;
    for (line, row) in read_rows(path)? {
        match row.and_then(|v| parse(&v, line)) {
            Ok(item) => parsed.push(item),
            Err(error) => {
                skipped += 1;
                eprintln!(
                    "skipped {}: {}",
                    path.display(),
                    nextedit::base::secrets::scrub(&error.to_string())
                );
            }
        }
    }
    Ok((parsed, skipped))
}

/// What an imported task left out: files not in `--repo`, symbol names, empty steps.
fn say_left_out(
    id: &str,
    missing_files: &[String],
    ignored_symbols: usize,
    matched: Option<&contextbench::TaskReads>,
) {
    if !missing_files.is_empty() {
        eprintln!(
            "{id}: not in --repo (not listed in files): {}",
            missing_files.join(", ")
        );
    }
    if ignored_symbols > 0 {
        eprintln!("{id}: {ignored_symbols} symbol names left out (reads carry lines, not symbols)");
    }
    if let Some(m) = matched.filter(|m| m.empty_steps > 0) {
        eprintln!("{id}: {} empty steps left out", m.empty_steps);
    }
}
