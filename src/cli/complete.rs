//! `nextedit complete`: one `complete` call of a suggester at a cursor in a directory.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use nextedit::base::sys::env::Environment;
use nextedit::base::sys::jail::Jail;
use nextedit::engine::suggest::build::BuildOptions;
use nextedit::engine::suggest::cache::CacheMode;
use nextedit::engine::suggest::complete_once::{OnceCache, OnceRequest, complete_once};
use nextedit::engine::suggest::protocol::CompleteContext;
use nextedit::store::{Database, ResponseCache};
use serde_json::json;

/// Ask a suggester to fill a hole once (the protocol's `complete` call)
///
/// The hole is the cursor --at LINE:COLUMN (0-based line, byte column) of --file in
/// --dir: the file's text before the cursor is the prefix, after it the suffix (the
/// hole is empty, as in a completion task's state). The suggester works in a scratch
/// copy of --dir (no `.git`, no hidden entries), in the replay sandbox unless
/// --sandbox off, is initialized for it, asked once and shut down. Nothing is stored
/// but the answer in --cache-db, when given.
///
/// Prints one JSON object: the suggester, the text, what it read, the call's latency
/// in ms (the stored one when --cache-db served it) and whether the cache served it.
/// A failed call (time-out, crash, a suggester that does not answer `complete`) is an
/// error naming its kind (exit 2). `nextedit tasks run` makes the same call for every
/// task of a task file.
///
/// Examples:
///
///     nextedit complete --suggester builtin:retrieve --dir . --file shop.py --at 12:4
///     nextedit complete --suggester 'lsp:pyright-langserver --stdio' --dir . \
///         --file app.py --at 3:9 --sandbox off
///     nextedit complete --suggester 'openai:http://127.0.0.1:8080/v1?model=m' \
///         --dir . --file app.py --at 3:0 --context hints.json
#[derive(Debug, clap::Args)]
#[command(verbatim_doc_comment)]
pub struct CompleteArgs {
    /// Suggester spec: builtin:noop, builtin:retrieve, openai:URL?model=NAME,
    /// lsp:COMMAND or cmd:COMMAND
    #[arg(long, value_name = "SPEC")]
    suggester: String,

    /// Directory holding the state (copied; never changed)
    #[arg(long, value_name = "PATH", default_value = ".")]
    dir: PathBuf,

    /// File with the hole, relative to --dir
    #[arg(long, value_name = "PATH")]
    file: String,

    /// The cursor: 0-based line and byte column, `LINE:COLUMN`
    #[arg(long, value_name = "LINE:COLUMN")]
    at: String,

    /// Scenario name sent with the call (full_block, incomplete_suffix, inner_block,
    /// rag, added_function, session_pause)
    #[arg(long, default_value = "full_block")]
    scenario: String,

    /// Language sent with the call (python, go, …). Default: none
    #[arg(long)]
    language: Option<String>,

    /// Context chunks to send: a JSON list of {file, start_line, end_line, text}
    #[arg(long, value_name = "FILE")]
    context: Option<PathBuf>,

    /// Seconds the `complete` call may take
    #[arg(long, default_value_t = 60.0, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    timeout: f64,

    /// Seconds `initialize` may take (a process may load a model)
    #[arg(long, default_value_t = 120.0, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    init_timeout: f64,

    /// bwrap: run cmd: and lsp: suggesters in the replay sandbox (no call when it
    /// cannot be made); off: unsandboxed (said on stderr)
    #[arg(long, default_value = "bwrap", value_parser = ["bwrap", "off"])]
    sandbox: String,

    /// MiB of memory the suggester's process tree may use (limit: memory)
    #[arg(long, value_name = "MIB", default_value_t = nextedit::base::sys::limits::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(16..=16_777_216))]
    memory: u64,

    #[command(flatten)]
    jail: super::JailArgs,

    /// A database whose response cache answers the call when it holds it (the same
    /// spec, request and repetition 1); else the suggester is asked and its answer
    /// stored there
    #[arg(long, value_name = "PATH")]
    cache_db: Option<PathBuf>,

    /// With --cache-db: read-write, or read-only (a call not cached fails; the
    /// suggester is never asked)
    #[arg(long, default_value = "read-write", value_parser = ["read-write", "read-only"], requires = "cache_db")]
    cache: String,

    /// Let the suggester use the network (an openai: endpoint off this machine, a
    /// sandboxed process's sockets)
    #[arg(long)]
    allow_network: bool,
}

/// Runs `nextedit complete`.
pub fn run(args: CompleteArgs) -> Result<i32> {
    let Some((line, column)) = args
        .at
        .split_once(':')
        .and_then(|(l, c)| Some((l.parse().ok()?, c.parse().ok()?)))
    else {
        bail!(
            "--at {:?}: use LINE:COLUMN (0-based line, byte column)",
            args.at
        );
    };
    for (flag, seconds) in [
        ("--timeout", args.timeout),
        ("--init-timeout", args.init_timeout),
    ] {
        if !(seconds.is_finite() && seconds > 0.0) {
            bail!("{flag} {seconds}: give a positive number of seconds");
        }
    }
    let context: Vec<CompleteContext> = match &args.context {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| {
                format!(
                    "{}: not a JSON list of {{file, start_line, end_line, text}}",
                    path.display()
                )
            })?
        }
        None => Vec::new(),
    };
    nextedit::base::sys::env::check_names(&args.jail.env).map_err(anyhow::Error::msg)?;
    let options = BuildOptions {
        timeout: Duration::from_secs_f64(args.timeout),
        init_timeout: Duration::from_secs_f64(args.init_timeout),
        allow_network: args.allow_network,
        jail: Jail {
            limits: args.jail.limits(args.memory),
            env: Environment::passing(&args.jail.env),
            ..Jail::default()
        },
        ..BuildOptions::default()
    };
    let request = OnceRequest {
        dir: args.dir.clone(),
        file: args.file.clone(),
        line,
        column,
        scenario: args.scenario,
        language: args.language,
        context,
    };
    let cache = match &args.cache_db {
        Some(path) => Some(OnceCache {
            // Entries stored by `complete` belong to no run (run id 0).
            store: Box::new(ResponseCache::new(
                Database::open(path).with_context(|| format!("cannot open {}", path.display()))?,
                0,
            )),
            mode: if args.cache == "read-only" {
                CacheMode::ReadOnly
            } else {
                CacheMode::ReadWrite
            },
        }),
        None => None,
    };
    let sandboxed = args.sandbox == "bwrap";
    if ["cmd:", "lsp:"]
        .iter()
        .any(|p| args.suggester.starts_with(p))
    {
        // Ctrl-C ends its tree; its daemons are adopted, to be killed with it.
        nextedit::service::run::install_process_guards()?;
        super::note_per_process_limits();
        if !sandboxed {
            eprintln!(
                "nextedit: the suggester runs UNSANDBOXED (--sandbox off): it can read --dir's repository, your files and the network"
            );
        }
    }
    let answer = complete_once(&args.suggester, &options, sandboxed, cache, &request)
        .with_context(|| {
            format!(
                "{} at {}:{} of {}",
                args.suggester,
                args.file,
                args.at,
                args.dir.display()
            )
        })?;
    let out = json!({
        "suggester": answer.suggester,
        "text": answer.result.text,
        "reads": answer.result.reads,
        "latency_ms": (answer.latency.as_secs_f64() * 1e3 * 10.0).round() / 10.0,
        "cached": answer.cached,
    });
    println!("{out}");
    Ok(0)
}
