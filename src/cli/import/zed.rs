//! `nextedit import zed-examples`: Zed's eval examples → sessions.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::service::zed_examples::{example_files, example_name, import_example};
use nextedit::store::{Database, SessionStore};

/// Zed's edit-prediction eval examples (markdown) → sessions of kind `imported`
///
/// Each example (a given file, or every `*.md` under a given directory) becomes one
/// session: its repository is DIR/OWNER/NAME (or DIR/OWNER/NAME.git) from the
/// example's `repository_url`, its files are read at the example's `revision`, each
/// hunk of the edit history is an edit (replay applies them before it starts, the
/// last one as its initial edit), and the expected patch is the one edit replay asks
/// for: its first alternative, the others kept as alternatives (a prediction that
/// matches any is a hit, and is scored against the closest). Hunks are found by their
/// lines, not their `@@` numbers; a hunk whose lines are missing or occur twice skips
/// the example. Prints one line per stored session: its id, a tab, the example file.
/// A bad example is reported on stderr and skipped; the batch goes on. Exit code 1
/// when some examples were skipped, 2 when none could be imported or on a fatal error.
#[derive(Debug, Args)]
pub struct ZedExamplesArgs {
    /// Example files, or directories searched for `*.md`
    #[arg(required = true, value_name = "FILE|DIR")]
    paths: Vec<PathBuf>,

    /// Directory holding each example's repository as OWNER/NAME
    #[arg(long, value_name = "DIR")]
    repos: PathBuf,

    /// Fetch a repository missing under --repos into DIR/OWNER/NAME.git with your
    /// `git` (the example's revision only); the one use of the network, on this flag
    #[arg(long)]
    fetch: bool,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Show no progress on stderr (else a bar with count, rate and ETA on a terminal,
    /// one line per item otherwise)
    #[arg(long, short)]
    quiet: bool,
}

/// Runs `nextedit import zed-examples`.
pub fn run(args: ZedExamplesArgs) -> Result<i32> {
    let files = example_files(&args.paths)?;
    if files.is_empty() {
        bail!("no *.md example files found");
    }
    if !args.repos.is_dir() && !args.fetch {
        bail!("--repos `{}`: not a directory", args.repos.display());
    }
    let path = args
        .db
        .clone()
        .unwrap_or_else(nextedit::store::default_path);
    let mut db =
        Database::open(&path).with_context(|| format!("opening database {}", path.display()))?;
    let mut stored = 0;
    let progress = Progress::new(ProgressMode::detect(args.quiet), "examples");
    progress.start(files.len());
    for file in &files {
        let name = example_name(file);
        match import_example(file, &args.repos, args.fetch) {
            Ok(trajectory) => {
                let id = db.import_trajectory(&trajectory)?;
                stored += 1;
                progress.suspend(|| println!("{id}\t{}", file.display()));
                progress.item(&name, &format!("session {id}"));
            }
            Err(error) => {
                let error = format!("{}: {error}", file.display());
                progress
                    .suspend(|| eprintln!("skipped {}", nextedit::base::secrets::scrub(&error)));
                progress.item(&name, "skipped");
            }
        }
    }
    progress.finish();
    let failed = files.len() - stored;
    eprintln!(
        "imported {stored} of {} examples ({failed} skipped)",
        files.len()
    );
    if stored == 0 {
        bail!("no example could be imported");
    }
    Ok(if failed > 0 { 1 } else { 0 })
}
