//! `nextedit export`: trajectories, replay results and completion tasks as a dataset
//! directory.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::service::dataset::card::CardFacts;
use nextedit::service::dataset::split::SplitSpec;
use nextedit::service::dataset::tables::{result_table, trajectory_table};
use nextedit::service::dataset::tasks::task_table;
use nextedit::service::dataset::write::{FileFormat, check_empty, write_dataset};
use nextedit::service::dataset::{DatasetKind, Table};
use nextedit::service::zed_examples::{SessionExport, export_sessions};
use nextedit::store::Database;

/// Export trajectories, replay results or tasks as a dataset (JSON Lines or Parquet)
///
/// Writes DIR/data/<split>.parquet (or .jsonl) and DIR/README.md, a Hugging Face
/// dataset card whose header names each split's file and the columns, so
/// `datasets.load_dataset("DIR")` loads it as it is. Every row of one repository goes
/// to one split (--by repo); which repository goes where follows from --seed alone.
/// DIR must be new or empty. Prints one line per split written: its file, rows and
/// repositories. Columns and the split rule: docs/export.md.
///
/// Examples:
///   nextedit export trajectories --out ds --split train=0.8,eval=0.2 --by repo --seed 7
///   nextedit export results --run 3 --run 4 --format jsonl --out results-ds
///   nextedit export tasks --from tasks.jsonl --out tasks-ds --split train=0.8,eval=0.2
#[derive(Debug, Subcommand)]
#[command(verbatim_doc_comment)]
pub enum ExportCommand {
    /// One row per stored session (recorded, commit-derived, imported), the whole
    /// trajectory in the `trajectory` column as JSON
    Trajectories {
        /// A session to export (repeatable) [default: every session]
        #[arg(long = "session", value_name = "ID")]
        sessions: Vec<i64>,
        #[command(flatten)]
        dataset: DatasetArgs,
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// One row per step of replay runs: figures, latencies, ranked predictions as JSON
    Results {
        /// A run to export (repeatable) [default: every run]
        #[arg(long = "run", value_name = "RUN")]
        runs: Vec<i64>,
        #[command(flatten)]
        dataset: DatasetArgs,
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
    /// One row per completion task of a task file (`nextedit tasks cut`): its fields
    /// as columns, nested ones (source, state, cursor, context) as JSON text. A line
    /// that is not a task is skipped and named (exit status 1)
    Tasks {
        /// The task file (JSON Lines, one task per line)
        #[arg(long, value_name = "TASKS.jsonl")]
        from: PathBuf,
        #[command(flatten)]
        dataset: DatasetArgs,
    },
    /// Stored sessions' steps as Zed edit-prediction eval examples (markdown), one
    /// file each in --out: an imported example (or any session with gold next edits)
    /// as one example with its alternatives, any other session one example per edit
    /// after its first, the edits before it its history. `import zed-examples`
    /// reads them back to the same steps. Prints one line per file written
    ZedExamples {
        /// A session to export (repeatable) [default: every session]
        #[arg(long = "session", value_name = "ID")]
        sessions: Vec<i64>,
        /// Output directory (new or empty)
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
    },
}

/// Where and how a dataset is written.
#[derive(Debug, Args)]
pub struct DatasetArgs {
    /// Output directory (new or empty)
    #[arg(long, value_name = "DIR")]
    out: PathBuf,

    /// Data file format
    #[arg(long, value_enum, default_value_t = FormatArg::Parquet)]
    format: FormatArg,

    /// Splits and their shares of the rows, e.g. train=0.8,eval=0.2 (shares add up to 1)
    #[arg(long, value_name = "NAME=SHARE,…", default_value = "train=1")]
    split: String,

    /// What a split keeps whole: repo (every row of one repository in one split)
    #[arg(long, value_enum, default_value_t = ByArg::Repo)]
    by: ByArg,

    /// Seed of the order repositories are given to splits in
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Show no progress on stderr (else a bar on a terminal, one line per session or
    /// run read otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// `--format`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Jsonl,
    Parquet,
}

/// `--by`: only repositories today; a flag so the unit is said where it is used.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ByArg {
    Repo,
}

/// Runs `nextedit export …`.
pub fn run(command: ExportCommand) -> Result<i32> {
    let open = |db: Option<PathBuf>| {
        let path = db.unwrap_or_else(nextedit::store::default_path);
        Database::open_existing(&path)
            .with_context(|| format!("opening database {}", path.display()))
    };
    // Refused before any work: a full export of a large database takes minutes.
    let (kind, dataset) = match &command {
        ExportCommand::Trajectories { dataset, .. } => (DatasetKind::Trajectories, dataset),
        ExportCommand::Results { dataset, .. } => (DatasetKind::Results, dataset),
        ExportCommand::Tasks { dataset, .. } => (DatasetKind::Tasks, dataset),
        ExportCommand::ZedExamples { sessions, out, db } => {
            return zed_examples(&open(db.clone())?, sessions, out);
        }
    };
    let spec: SplitSpec = (dataset.split.parse::<SplitSpec>())
        .map_err(|e| anyhow::anyhow!("--split {}: {e}", dataset.split))?;
    check_empty(&dataset.out)
        .with_context(|| format!("exporting {} to {}", kind.name(), dataset.out.display()))?;
    let (table, skipped, args): (Table, _, DatasetArgs) = match command {
        ExportCommand::Trajectories {
            sessions,
            dataset,
            db,
        } => {
            let progress = Progress::new(ProgressMode::detect(dataset.quiet), "sessions");
            let (table, skipped) = trajectory_table(&open(db)?, &sessions, &progress)?;
            (table, skipped, dataset)
        }
        ExportCommand::Results { runs, dataset, db } => {
            let progress = Progress::new(ProgressMode::detect(dataset.quiet), "runs");
            let (table, skipped) = result_table(&open(db)?, &runs, &progress)?;
            (table, skipped, dataset)
        }
        ExportCommand::ZedExamples { .. } => unreachable!("returned above"),
        ExportCommand::Tasks { from, dataset } => {
            let text = std::fs::read_to_string(&from)
                .with_context(|| format!("cannot read the task file {}", from.display()))?;
            let (table, skipped) = task_table(&text);
            let skipped = skipped
                .into_iter()
                .map(|mut s| {
                    s.item = format!("{}: {}", from.display(), s.item);
                    s
                })
                .collect();
            (table, skipped, dataset)
        }
    };
    let kind = table.kind;
    let ByArg::Repo = args.by;
    for item in &skipped {
        eprintln!(
            "skipped {}: {}",
            item.item,
            nextedit::base::secrets::scrub(&item.reason)
        );
    }
    let facts = CardFacts {
        kind,
        split: args.split.clone(),
        seed: args.seed,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    };
    let format = match args.format {
        FormatArg::Jsonl => FileFormat::Jsonl,
        FormatArg::Parquet => FileFormat::Parquet,
    };
    let written = write_dataset(&args.out, &table, &spec, &facts, format)
        .with_context(|| format!("exporting {} to {}", kind.name(), args.out.display()))?;
    for split in &written.splits {
        println!(
            "{}\t{} rows\t{} repositories",
            args.out.join(&split.path).display(),
            split.rows,
            split.repositories
        );
    }
    for name in &written.empty {
        eprintln!("split {name}: no repository fell to it (too few repositories); left out");
    }
    eprintln!(
        "exported {} {} ({} skipped) and {}",
        table.rows.len(),
        match kind {
            DatasetKind::Results => "steps",
            DatasetKind::Trajectories => "trajectories",
            DatasetKind::Tasks => "tasks",
        },
        skipped.len(),
        args.out.join("README.md").display()
    );
    Ok(if skipped.is_empty() { 0 } else { 1 })
}

/// `export zed-examples`: one line per file written, skipped sessions on stderr.
fn zed_examples(db: &Database, sessions: &[i64], out: &std::path::Path) -> Result<i32> {
    let (mut files, mut skipped) = (0, 0);
    export_sessions(db, sessions, out, |id, outcome| match outcome {
        SessionExport::Written(paths) => {
            for path in paths {
                files += 1;
                println!("{id}\t{}", path.display());
            }
        }
        SessionExport::Skipped(reason) => {
            skipped += 1;
            eprintln!(
                "skipped session {id}: {}",
                nextedit::base::secrets::scrub(reason)
            );
        }
    })
    .with_context(|| format!("exporting zed examples to {}", out.display()))?;
    eprintln!("exported {files} examples ({skipped} sessions skipped)");
    if files == 0 {
        anyhow::bail!("no session had a step to export");
    }
    Ok(if skipped > 0 { 1 } else { 0 })
}
