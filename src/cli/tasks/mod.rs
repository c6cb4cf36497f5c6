//! `nextedit tasks`: completion tasks cut from history, run and scored by their tests.

mod report;
mod run;

use clap::Subcommand;

/// `nextedit tasks` subcommands.
#[derive(Debug, Subcommand)]
pub enum TasksCommand {
    Run(Box<run::RunArgs>),
    Report(report::ReportArgs),
}

/// Runs a `nextedit tasks` subcommand.
pub fn run(command: TasksCommand) -> anyhow::Result<i32> {
    match command {
        TasksCommand::Run(args) => run::run(*args),
        TasksCommand::Report(args) => report::run(args),
    }
}
