//! Command-line interface: one file per subcommand, no logic beyond wiring.
//!
//! Exit codes: 0 success; 1 some items failed (reported on stderr, the batch went
//! on); 2 a fatal error (bad arguments, unreadable repository or file).

mod derive;
mod eval_order;

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
    Derive(derive::DeriveArgs),
    EvalOrder(eval_order::EvalOrderArgs),
}

/// Parses arguments, runs the command and returns the process exit code.
pub fn run() -> i32 {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Derive(args) => derive::run(args),
        Command::EvalOrder(args) => eval_order::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            2
        }
    }
}
