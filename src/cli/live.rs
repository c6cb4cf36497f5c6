//! `nextedit live`: what became of the offers the language server made in recorded
//! sessions (acceptance, ranks, latency, kept rate, reversals, right but not taken).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use nextedit::engine::live::{GroupBy, LiveConfig, figures, json, text};
use nextedit::service::sessions::load_live_sessions;

/// What became of the offers a language server made while you edited
///
/// For each answer the server gave (a completion list, inline completions, code
/// actions, a rename) in the recorded SESSIONs: was an item accepted (which rank,
/// after how long), its leading words taken (partial), the list dismissed (typing went
/// elsewhere) or superseded (asked again at the same place)? For taken text: how much
/// of it is still there 30 s and 5 min later and at the session's end, was it deleted
/// or undone (a reversal), were edits made inside it. For a dismissed answer: did the
/// developer type the same text there anyway within --within seconds ("right but not
/// taken": a miss of the editor's UI, not of the model).
///
/// Prints, per group: answers and items, outcomes, acceptance rate (taken whole or in
/// part over the answers not superseded), the 0-based rank of the items taken (mean
/// and count per rank), answer latency p50/p95, characters taken from offers vs typed,
/// kept rates (weighted by characters), reversals and right-but-not-taken answers.
/// --json prints the groups and every answer with its outcome and evidence.
///
/// The rules and their limits: docs/live.md.
///
/// Examples:
///   nextedit live 12
///   nextedit live 12 13 14 --by language
///   nextedit live 12 --within 10 --json
///   nextedit live 12 --html live.html
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct LiveArgs {
    /// Recorded session ids in the database, or trajectory JSON files with offers
    #[arg(value_name = "SESSION", required = true)]
    sessions: Vec<String>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Group the figures by the language server, the kind of offer or the file's language
    #[arg(long, value_enum, value_name = "GROUP")]
    by: Option<ByArg>,

    /// Seconds after a dismissed answer in which typing its text counts as right but not taken
    #[arg(long, value_name = "S", default_value_t = 30.0, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds_or_zero)]
    within: f64,

    /// Print one JSON object (groups and every answer's outcome) instead of text
    #[arg(long)]
    json: bool,

    /// Also write the figures as one self-contained HTML page to FILE
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ByArg {
    Server,
    Kind,
    Language,
}

/// Runs `nextedit live`.
pub fn run(args: LiveArgs) -> anyhow::Result<i32> {
    let config = LiveConfig {
        within_ms: args.within * 1000.0,
    };
    let db_path = args
        .db
        .clone()
        .unwrap_or_else(nextedit::store::default_path);
    let sessions = load_live_sessions(&db_path, &args.sessions, config).with_context(|| {
        format!(
            "reading sessions {} ({})",
            args.sessions.join(", "),
            db_path.display()
        )
    })?;
    let by = match args.by {
        None => GroupBy::Nothing,
        Some(ByArg::Server) => GroupBy::Server,
        Some(ByArg::Kind) => GroupBy::Kind,
        Some(ByArg::Language) => GroupBy::Language,
    };
    let groups = figures(&sessions, by);
    if let Some(path) = &args.html {
        std::fs::write(path, nextedit::engine::live::html::page(&groups, &sessions))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", json::live(&groups, &sessions))?;
    } else {
        text::print_figures(&mut out, &groups)?;
    }
    Ok(0)
}
