//! `nextedit tasks`: completion tasks cut from history (docs/tasks.md). [`cut`] cuts
//! them (its retrieval flags in `cut/context.rs`); [`run`] runs a suggester on them and
//! scores its answers by their tests; [`report`] prints the figures.

mod cut;
mod report;
mod run;

use clap::Subcommand;

/// Completion tasks cut from history: Codev-Bench's scenarios, HumanEvo's added functions
///
/// `tasks cut` writes a task file; `tasks run` asks a suggester for each task and runs
/// the covering tests on its answers in a sandbox; `tasks report` prints pass@k, exact
/// match, ES, BLEU, SARI per scenario and dependency level, HumanEvo's evolution-aware
/// vs -ignored table and the metrics' correlation with pass/fail.
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    Cut(Box<cut::CutArgs>),
    Run(Box<run::RunArgs>),
    Report(report::ReportArgs),
}

/// Runs a `tasks` subcommand; returns the exit code.
pub fn run(command: TasksCommand) -> anyhow::Result<i32> {
    match command {
        TasksCommand::Cut(args) => cut::run(*args),
        TasksCommand::Run(args) => run::run(*args),
        TasksCommand::Report(args) => report::run(args),
    }
}
