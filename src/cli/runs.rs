//! `nextedit runs`: list, show or delete replay runs.

use std::io::Write;
use std::path::PathBuf;

use nextedit::run::{RunStore, text};
use nextedit::store::Database;

/// `nextedit runs`: list, show or delete replay runs.
pub fn run(command: RunsCommand) -> anyhow::Result<i32> {
    let open = |db: Option<PathBuf>| {
        Database::open_existing(&db.unwrap_or_else(nextedit::store::default_path))
    };
    let mut out = std::io::stdout().lock();
    match command {
        RunsCommand::List { db, json } => {
            let db = open(db)?;
            text::print_run_list(&mut out, &db, db.path(), json)?;
        }
        RunsCommand::Show { db, run } => {
            let db = open(db)?;
            text::print_report(&mut out, &db, &[run])?;
            writeln!(out)?;
            for t in RunStore::run_trajectories(&db, run)? {
                writeln!(out, "  {:<8} {}", t.status, t.key)?;
            }
        }
        RunsCommand::Delete { db, run } => {
            let erased = open(db)?.delete_run(run)?;
            writeln!(out, "deleted replay run {run}")?;
            if !erased.wal_cleared {
                writeln!(
                    out,
                    "warning: another process has the database open; its write-ahead log may \
                     still hold the run's text until that process ends"
                )?;
            }
        }
    }
    Ok(0)
}

/// `nextedit runs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// List the replay runs, newest first (id, start, status, trajectories, micro F1,
    /// suggester)
    List {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// One JSON object per run
        #[arg(long)]
        json: bool,
    },
    /// One run's report and the status of each of its trajectories
    Show {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Run id
        run: i64,
    },
    /// Delete a run for good: its steps, predictions, reads and the copies of the
    /// trajectories it replayed (the database file is rebuilt so no text is left)
    Delete {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Run id
        run: i64,
    },
}
