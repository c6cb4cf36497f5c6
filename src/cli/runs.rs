//! `nextedit runs`: list, show, delete or merge replay runs (what it prints is built by
//! `service::run::text`, the merge is `service::run::shard`'s).

use nextedit::store::Erase;
use std::io::Write;
use std::path::PathBuf;

use nextedit::service::run::{RunRead, shard, text};
use nextedit::store::Database;

/// `nextedit runs`: list, show, delete or merge replay runs.
pub fn run(command: RunsCommand) -> anyhow::Result<i32> {
    let open = |db: Option<PathBuf>| {
        Database::open_existing(&db.unwrap_or_else(nextedit::store::default_path))
    };
    let mut out = std::io::stdout().lock();
    match command {
        RunsCommand::List { db, json } => {
            let db = open(db)?;
            if text::print_run_list(&mut out, &db, db.path(), json.layout())? > 0 {
                eprintln!("nextedit: some runs could not be read (listed as unreadable)");
                return Ok(1);
            }
        }
        RunsCommand::Show { db, run } => {
            let db = open(db)?;
            text::print_report(&mut out, &db, &[run])?;
            writeln!(out)?;
            for t in RunRead::run_trajectories(&db, run)? {
                writeln!(out, "  {:<8} {}", t.status, t.key)?;
            }
        }
        RunsCommand::Delete { db, run } => {
            let erased = open(db)?.delete_run(run)?;
            writeln!(out, "deleted replay run {run}")?;
            for (deleted, promoted) in &erased.regrouped {
                writeln!(
                    out,
                    "run {promoted} now names the repetition group run {deleted} started"
                )?;
            }
            if !erased.wal_cleared {
                writeln!(
                    out,
                    "warning: another process has the database open; its write-ahead log may \
                     still hold the run's text until that process ends"
                )?;
            }
        }
        RunsCommand::Merge {
            db,
            mut dbs,
            allow_partial,
        } => {
            let out_path = match db {
                Some(path) => path,
                None => dbs.remove(0),
            };
            let merged = shard::merge(&out_path, &dbs, allow_partial)?;
            let group = match merged.runs.len() {
                1 => String::new(),
                n => {
                    let runs: Vec<String> = merged.runs.iter().map(i64::to_string).collect();
                    format!(" ({n} repetitions: runs {})", runs.join(", "))
                }
            };
            writeln!(
                out,
                "merged {} of {} shards into run {} in {}{group}",
                merged.shards.0,
                merged.shards.1,
                merged.run,
                out_path.display()
            )?;
            if !merged.missing.is_empty() {
                let missing: Vec<String> = merged.missing.iter().map(usize::to_string).collect();
                eprintln!(
                    "nextedit: run {} is partial: shards {} are missing",
                    merged.run,
                    missing.join(", ")
                );
                return Ok(1);
            }
        }
    }
    Ok(0)
}

/// `nextedit runs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// List the replay runs, newest first (id, start, status, trajectories, micro F1,
    /// match rule, suggester; FAILED when too many of its calls failed); a run whose
    /// rows cannot be read is listed as unreadable, with why (exit status 1)
    List {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        #[command(flatten)]
        json: super::JsonArgs,
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
    /// trajectories it replayed (the database file is rebuilt so no text is left).
    /// Deleting the first run of a --repetitions group keeps the other repetitions
    /// one group, named by the next repetition's run (said on stdout)
    Delete {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Run id
        run: i64,
    },
    /// Merge the shard runs of `replay --shard I/N` into one run (one per repetition)
    ///
    /// Each SHARD database holds one shard's runs (one per repetition it has units
    /// of); together they must be shards of one plan (same trajectories, same
    /// settings), none twice. The merged run keeps every step as its shard stored it,
    /// in the plan's order, so its `report` equals the single-machine run's (run id,
    /// times and latencies aside); with --repetitions N the N merged runs form a group
    /// whose first run's report shows each figure's mean and interval, like the
    /// single-machine group's. Missing shards are an error unless --allow-partial (the
    /// runs are then `partial`, exit status 1). OUT is created only once every shard
    /// checked out.
    ///
    /// Examples:
    ///   nextedit runs merge all.db shard-0.db shard-1.db
    ///   nextedit runs merge --db all.db shard-*.db
    #[command(verbatim_doc_comment)]
    Merge {
        /// The database to add the merged run to (created if needed); without it, the
        /// first DB argument is that database
        #[arg(long, alias = "into", value_name = "OUT")]
        db: Option<PathBuf>,
        /// [OUT] then the shard databases
        #[arg(value_name = "DB", required = true, num_args = 1..)]
        dbs: Vec<PathBuf>,
        /// Merge even when shards are missing (their trajectories are marked missing)
        #[arg(long)]
        allow_partial: bool,
    },
}
