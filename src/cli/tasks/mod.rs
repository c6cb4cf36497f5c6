//! `nextedit tasks`: completion tasks cut from history (docs/tasks.md). [`cut`] cuts
//! them (its retrieval flags in `cut/context.rs`).

mod cut;

use clap::Subcommand;

/// Completion tasks cut from history: Codev-Bench's scenarios, HumanEvo's added functions
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    Cut(Box<cut::CutArgs>),
}

/// Runs a `tasks` subcommand; returns the exit code.
pub fn run(command: TasksCommand) -> anyhow::Result<i32> {
    match command {
        TasksCommand::Cut(args) => cut::run(*args),
    }
}
