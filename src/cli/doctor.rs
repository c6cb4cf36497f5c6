//! `nextedit doctor`: check the recording setup for Neovim and VS Code from the command line.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nextedit::service::setup_check::{
    SetupReport, Status, check_binary, check_database, check_neovim, check_servers, check_vscode,
    plural,
};

/// Check the recording setup for Neovim and VS Code
///
/// Prints one line per check: `ok`, `warn` (works, but look), `error` (recording will not
/// work) or `info`, then a summary. Sections: the nextedit binary and whether editors
/// find it on PATH; the database (writable, private); the language servers (found on
/// PATH); the editors (Neovim and its plugin, VS Code / code-server and the extension).
///
/// Exit code: 0 when nothing is an error, 1 when something is.
///
/// Examples:
///   nextedit doctor
///   nextedit doctor --db ~/study.db --server pyright-langserver --server gopls
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct DoctorArgs {
    /// Database file [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// A server command editors will start through the proxy; a missing one is an error
    /// (can be repeated) [default: pyright-langserver, gopls and jdtls, missing ones are info]
    #[arg(long, value_name = "COMMAND")]
    server: Vec<String>,

    /// Also look for the VS Code extension in this extensions directory (can be repeated)
    #[arg(long, value_name = "DIR")]
    extensions_dir: Vec<PathBuf>,

    /// Run only these sections (can be repeated) [default: all]
    #[arg(long, value_enum, value_name = "SECTION")]
    only: Vec<Section>,
}

/// A group of checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Section {
    /// The nextedit binary and PATH.
    Binary,
    /// The database file.
    Database,
    /// Language servers on PATH.
    Servers,
    /// Neovim, VS Code and their nextedit plugins.
    Editors,
}

/// Runs the checks, prints them, and returns 1 if any failed.
pub fn run(args: DoctorArgs) -> anyhow::Result<i32> {
    let wants = |section| args.only.is_empty() || args.only.contains(&section);
    let mut report = SetupReport::default();
    if wants(Section::Binary) {
        check_binary(&mut report)?;
    }
    if wants(Section::Database) {
        let (db, source) = match &args.db {
            Some(db) => (db.clone(), "--db"),
            None if std::env::var_os("NEXTEDIT_DB").is_some_and(|v| !v.is_empty()) => {
                (nextedit::store::default_path(), "$NEXTEDIT_DB")
            }
            None => (nextedit::store::default_path(), "default"),
        };
        check_database(&mut report, &db, source);
    }
    if wants(Section::Servers) {
        check_servers(&mut report, &args.server);
    }
    if wants(Section::Editors) {
        check_neovim(&mut report);
        check_vscode(&mut report, &args.extensions_dir);
    }
    let mut out = std::io::stdout().lock();
    for finding in &report.findings {
        writeln!(out, "{:<5} {}", finding.status.to_string(), finding.message)?;
    }
    let (errors, warnings) = (report.count(Status::Error), report.count(Status::Warn));
    writeln!(
        out,
        "doctor: {errors} error{}, {warnings} warning{}",
        plural(errors),
        plural(warnings)
    )?;
    Ok(if errors > 0 { 1 } else { 0 })
}
