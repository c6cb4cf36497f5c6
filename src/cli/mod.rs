//! Command-line interface: one file (or directory) per subcommand, each holding only
//! argument parsing and printing; the work is the library's. A command opens what it
//! needs, calls the library and prints; errors are `anyhow` with context naming the
//! file or session.
//!
//! Exit codes ([`EXIT_CODES`], also in `nextedit --help`): 0 success, also when stdout
//! was closed early (`nextedit … | head`); 1 the command ran but something it judges
//! failed (items of a batch skipped, `doctor` found an error, `sessions link` found no
//! commit, a replay's or `tasks run`'s suggester never answered, a replay FAILED (too
//! many of one kind of its calls failed), `tasks run` found no valid task); 2 an error
//! ended the command (its chain is printed on stderr) or the arguments are invalid.

mod complete;
mod context;
mod derive;
mod doctor;
mod eval_order;
mod export;
mod import;
mod live;
mod proxy;
mod replay;
mod report;
mod runs;
mod score;
mod sessions;
mod tasks;

use clap::{Parser, Subcommand};

/// Measure live editor sessions and next-edit suggesters.
///
/// nextedit records what developers edit and read (as a transparent language-server
/// proxy), derives the same kind of trajectory from git commits, replays
/// trajectories through next-edit suggesters and scores them.
#[derive(Debug, Parser)]
#[command(name = "nextedit", version, about, long_about, after_long_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Proxy(proxy::ProxyArgs),
    #[command(subcommand)]
    Sessions(sessions::SessionsCommand),
    /// Score texts or ContextBench runs with one metric
    ///
    /// Text metrics (bleu, sari, es, diffbleu) compare a prediction B with a reference
    /// revision A of an origin document O. Each of --origin, --reference and --prediction
    /// is a file path, or `-` for standard input (at most one of them). Scores are on the
    /// 0–1 scale unless the reference implementation uses 0–100 (Historian and sacrebleu
    /// BLEU). --json prints one JSON object instead of text.
    ///
    /// contextbench scores what an agent read against ContextBench gold context.
    ///
    /// Definitions, conventions and compat differences: docs/metrics.md.
    Score(score::ScoreArgs),
    // Boxed: the replay arguments are by far the largest variant.
    Replay(Box<replay::ReplayArgs>),
    Report(report::ReportArgs),
    /// List, show, delete or merge replay runs
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    Context(context::ContextArgs),
    Complete(complete::CompleteArgs),
    Live(live::LiveArgs),
    Derive(derive::DeriveArgs),
    #[command(subcommand)]
    Import(import::ImportCommand),
    #[command(subcommand)]
    Export(export::ExportCommand),
    EvalOrder(eval_order::EvalOrderArgs),
    #[command(subcommand)]
    Tasks(tasks::TasksCommand),
    Doctor(doctor::DoctorArgs),
}

/// What the exit codes mean, as `nextedit --help` says it (the code below returns them).
const EXIT_CODES: &str = "\
Exit status:
  0  success (also when standard output was closed early, as by `nextedit … | head`)
  1  the command ran, but something it judges failed: items of a batch were skipped
     (derive --range, import, eval-order, replay), doctor found an error, sessions link
     found no commit, a replay's (or tasks run's) suggester never answered, a replay
     FAILED (too many of one kind of its calls failed), tasks run found no valid task
  2  an error ended the command (printed on standard error), or the arguments are invalid";

/// Parses arguments, runs the command and returns the process exit code
/// ([`EXIT_CODES`]): the command's own (0 or 1), 2 on an error, 0 on a closed stdout.
pub fn run() -> i32 {
    exit_quietly_on_broken_stdout();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Proxy(args) => proxy::run(args),
        Command::Sessions(command) => sessions::run(command),
        Command::Score(args) => score::run(args).map(|()| 0),
        Command::Replay(args) => replay::run(*args),
        Command::Report(args) => report::run(args),
        Command::Runs(command) => runs::run(command),
        Command::Context(args) => context::run(args),
        Command::Complete(args) => complete::run(args),
        Command::Live(args) => live::run(args),
        Command::Derive(args) => derive::run(args),
        Command::Import(command) => import::run(command),
        Command::Export(command) => export::run(command),
        Command::EvalOrder(args) => eval_order::run(args),
        Command::Tasks(command) => tasks::run(command),
        Command::Doctor(args) => doctor::run(args),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            if is_broken_pipe(&error) {
                return 0;
            }
            // The chain may quote a server, a file or a test: masked and cut.
            let message = format!("{error:#}");
            eprintln!(
                "nextedit: error: {}",
                nextedit::base::secrets::scrub(&message)
            );
            2
        }
    }
}

/// `println!` panics when stdout is a closed pipe; the reader has all it wanted, so that
/// panic ends the process with 0 and no message, whichever command printed.
fn exit_quietly_on_broken_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// What untrusted processes (suggesters, tests) get besides the sandbox: the
/// variables passed beyond the allow-list, and the limits of each process tree
/// (`replay`, `complete`, `tasks run`; `--memory` is each command's own).
#[derive(Debug, clap::Args)]
struct JailArgs {
    /// Pass this variable of nextedit's environment on (repeatable); untrusted code
    /// otherwise gets only PATH, LANG, LC_ALL, LC_CTYPE, TERM, a HOME in its scratch
    /// directory and TMPDIR=/tmp (no API key, no token)
    #[arg(long = "env", value_name = "NAME")]
    env: Vec<String>,

    /// Processes and threads one process tree (a suggester with all it starts, one
    /// test run) may run at once; a fork past it kills the tree (limit: pids)
    #[arg(long, value_name = "N", default_value_t = nextedit::base::sys::limits::DEFAULT_PIDS,
          value_parser = clap::value_parser!(u32).range(1..=4_194_304))]
    pids: u32,

    /// MiB one process tree may write: its scratch directory, its private /tmp and
    /// any one file (limit: disk)
    #[arg(long, value_name = "MIB", default_value_t = nextedit::base::sys::limits::DEFAULT_DISK_MIB,
          value_parser = clap::value_parser!(u64).range(1..=16_777_216))]
    disk: u64,
}

impl JailArgs {
    /// The limits, with the command's own `--memory`.
    fn limits(&self, memory_mib: u64) -> nextedit::base::sys::limits::Limits {
        nextedit::base::sys::limits::Limits {
            pids: self.pids,
            memory_mib,
            disk_mib: self.disk,
        }
    }
}

/// Where no cgroup can be made, the limits hold per process only: said once on
/// stderr by the commands that start untrusted processes.
fn note_per_process_limits() {
    if let Some(note) = nextedit::base::sys::cgroup::per_process_note() {
        eprintln!("nextedit: {note}");
    }
}

/// `--merges skip|first-parent` (derive and replay ranges).
fn parse_merges(
    value: &str,
) -> Result<nextedit::engine::history::Merges, nextedit::engine::history::MergesError> {
    value.parse()
}

/// A closed stdout (`nextedit sessions list | head`) is not an error.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `--json` (one document) or `--jsonl` (one object per line) instead of a table: the
/// pair every command that prints runs as JSON takes.
#[derive(Debug, Clone, Copy, clap::Args)]
struct JsonArgs {
    /// Print one JSON document instead of the table
    #[arg(long, conflicts_with = "jsonl")]
    json: bool,
    /// Print JSON Lines instead of the table: one JSON object per line
    #[arg(long)]
    jsonl: bool,
}

impl JsonArgs {
    /// The JSON layout asked for; `None`: the table.
    fn layout(self) -> Option<nextedit::service::run::json::Layout> {
        use nextedit::service::run::json::Layout;
        match (self.json, self.jsonl) {
            (true, _) => Some(Layout::Document),
            (_, true) => Some(Layout::Lines),
            _ => None,
        }
    }
}
