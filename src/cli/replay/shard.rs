//! `nextedit replay`'s scale-out arguments: `--plan FILE` writes the work as shards
//! instead of running it, `--shard I/N` runs one shard of it (docs/replay.md).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use nextedit::service::run::plan_file::{self, ShardCommand};
use nextedit::service::run::shard::{Select, Shard};
use nextedit::service::run::{RunEvents, RunSettings, plan};
use nextedit::store::Database;

/// Scale-out: plan the work as shards, or run one shard.
#[derive(Debug, Args)]
pub(super) struct ShardArgs {
    /// Write the work as a plan instead of running it: one JSON line per shard
    /// (trajectory × suggester × repetition) with its key, source (file, commit or
    /// session), settings and the command that runs it. replay/ray_replay.py runs a
    /// plan on a Ray cluster; see docs/replay.md
    #[arg(long, value_name = "FILE", conflicts_with_all = ["resume", "shard"])]
    plan: Option<PathBuf>,

    /// Run only shard I of N (from 0): the trajectories whose place in the run order is
    /// I modulo N, into the database of --db; `nextedit runs merge` joins the shards'
    /// databases into one run. Example: --shard 0/4 --db shard-0.db
    #[arg(long, value_name = "I/N", conflicts_with = "resume")]
    shard: Option<Shard>,
}

impl ShardArgs {
    /// Which trajectories the run loads.
    pub(super) fn select(&self) -> Select {
        match (self.plan.is_some(), self.shard) {
            (true, _) => Select::KeysOnly,
            (false, Some(shard)) => Select::Shard(shard),
            (false, None) => Select::All,
        }
    }

    /// The plan file to write, if `--plan`.
    pub(super) fn plan(&self) -> Option<&Path> {
        self.plan.as_deref()
    }
}

/// Writes the plan of `request` to `path` and says how many shards it has.
pub(super) fn write_plan(
    path: &Path,
    settings: &RunSettings,
    request: &plan::RunRequest,
    db: &Database,
    events: &dyn RunEvents,
) -> anyhow::Result<i32> {
    let Some(collected) = plan::collect(request, db, events)? else {
        eprintln!("nextedit: nothing to plan");
        return Ok(0);
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let command = ShardCommand {
        cwd: std::env::current_dir().context("cannot read the current directory")?,
        args: plan_file::shard_arguments(&argv),
    };
    let lines = plan_file::plan_lines(settings, &collected, &command);
    std::fs::write(path, plan_file::plan_jsonl(&lines))
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(
        std::io::stdout(),
        "wrote {} shards to {}",
        lines.len(),
        path.display()
    )?;
    Ok(0)
}
