//! Command-line interface: one file per subcommand, no logic beyond wiring.

use clap::{Parser, Subcommand};

/// Measure live editor sessions and next-edit suggesters.
#[derive(Debug, Parser)]
#[command(name = "nextedit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {}

/// Parses arguments, runs the command and returns the process exit code.
pub fn run() -> i32 {
    let cli = Cli::parse();
    match cli.command {}
}
