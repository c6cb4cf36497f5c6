//! Command-line interface: one file per subcommand, no logic beyond wiring.

mod doctor;
mod proxy;
mod sessions;

use clap::{Parser, Subcommand};

/// Measure live editor sessions and next-edit suggesters.
///
/// nextedit records what developers edit and read (as a transparent language-server
/// proxy), derives the same kind of trajectory from git commits, replays
/// trajectories through next-edit suggesters and scores them.
#[derive(Debug, Parser)]
#[command(name = "nextedit", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Proxy(proxy::ProxyArgs),
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
    Doctor(doctor::DoctorArgs),
}

/// Parses arguments, runs the command and returns the process exit code.
pub fn run() -> i32 {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Proxy(args) => proxy::run(args),
        Command::Sessions(command) => sessions::run(command),
        Command::Doctor(args) => doctor::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            if is_broken_pipe(&error) {
                return 0;
            }
            eprintln!("nextedit: error: {error:#}");
            2
        }
    }
}

/// A closed stdout (`nextedit sessions list | head`) is not an error.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
