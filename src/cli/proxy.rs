//! `nextedit proxy`: run a language server behind the recording proxy.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use nextedit::core::record::privacy::{DEFAULT_EXCLUDES, PrivacyFilter};
use nextedit::service::proxy::ProxyConfig;

/// Run a language server behind the recording proxy
///
/// Install this command in your editor in place of the language server: every
/// byte between editor and server is forwarded unchanged, and on the side the
/// session (documents, edits, reads, editor signals) is recorded into SQLite.
///
/// Files matching the exclude globs are forwarded but their text is never stored
/// (defaults: .env*, *.pem, *.key, id_rsa*, id_dsa*, id_ecdsa*, id_ed25519*, *secret*,
/// *.p12, *.pfx, .npmrc, .pypirc, .netrc, credentials.json, .aws/credentials,
/// .aws/config, secrets/, plus the lines of each workspace folder's .nexteditignore).
/// The server's messages are kept without their bytes (they quote other files;
/// --raw keeps them). Obvious secrets (private keys, AWS, GitHub and Slack tokens,
/// --token=… options) are masked in everything stored. Nothing is ever sent anywhere.
///
/// Examples:
///   nextedit proxy -- pyright-langserver --stdio
///   nextedit proxy --db ~/study.db -- gopls
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ProxyArgs {
    /// Database file [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Workspace root [default: the editor's rootUri / first workspace folder]
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,

    /// Forward only; record nothing
    #[arg(long)]
    no_record: bool,

    /// Record decoded events only, not the editor's messages' raw bytes
    #[arg(long, env = "NEXTEDIT_NO_RAW", conflicts_with = "raw")]
    no_raw: bool,

    /// Also store the server's messages' raw bytes (secrets masked). Server answers
    /// quote other files, excluded ones included (hover docstrings, completion
    /// details): use only when the workspace holds nothing private
    #[arg(long)]
    raw: bool,

    /// Extra file glob whose text is never stored (can be repeated)
    #[arg(long, value_name = "GLOB")]
    exclude: Vec<String>,

    /// Drop the default exclude globs (keep only --exclude and .nexteditignore)
    #[arg(long)]
    no_default_excludes: bool,

    /// Seconds the server may take to exit after the editor closes the pipe
    #[arg(long, value_name = "SECONDS", default_value_t = 5.0, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds_or_zero)]
    exit_timeout: f64,

    /// Remove a trailing --stdio that the editor appended (for servers like gopls that reject it)
    #[arg(long)]
    strip_stdio: bool,

    /// The language server command and its arguments, after `--`
    #[arg(last = true, required = true, value_name = "SERVER")]
    server: Vec<String>,
}

pub fn run(args: ProxyArgs) -> anyhow::Result<i32> {
    let mut server = args.server;
    // Editors using stdio transport append `--stdio`; a doubled one is always a mistake.
    while server.len() >= 3
        && server[server.len() - 1] == "--stdio"
        && server[server.len() - 2] == "--stdio"
    {
        server.pop();
    }
    if args.strip_stdio && server.len() > 1 && server.last().is_some_and(|a| a == "--stdio") {
        server.pop();
    }
    let mut globs: Vec<String> = if args.no_default_excludes {
        Vec::new()
    } else {
        DEFAULT_EXCLUDES.iter().map(|g| g.to_string()).collect()
    };
    globs.extend(args.exclude);
    let privacy = PrivacyFilter::new(&globs).context("bad --exclude glob")?;
    let db = if args.no_record {
        None
    } else {
        Some(args.db.unwrap_or_else(nextedit::store::default_path))
    };
    let workspace = match args.workspace {
        Some(dir) => Some(
            std::fs::canonicalize(&dir)
                .with_context(|| format!("--workspace {}", dir.display()))?,
        ),
        None => None,
    };
    if !args.exit_timeout.is_finite() || args.exit_timeout < 0.0 {
        anyhow::bail!("--exit-timeout must be a non-negative number of seconds");
    }
    let config = ProxyConfig {
        server,
        db,
        workspace,
        record_raw: !args.no_raw,
        record_server_raw: args.raw,
        privacy,
        exit_grace: Duration::from_secs_f64(args.exit_timeout),
    };
    Ok(nextedit::service::proxy::run(config)?)
}
