//! Command-line interface: one file per subcommand, no logic beyond wiring.

mod score;

use clap::{Parser, Subcommand};

/// Measure live editor sessions and next-edit suggesters.
#[derive(Debug, Parser)]
#[command(name = "nextedit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Score texts or ContextBench runs with one metric
    Score(score::ScoreArgs),
}

/// Parses arguments, runs the command and returns the process exit code.
///
/// Exit codes: 0 success, 1 the command failed (the error chain is printed on stderr),
/// 2 invalid arguments (clap).
pub fn run() -> i32 {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Score(args) => score::run(args),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
