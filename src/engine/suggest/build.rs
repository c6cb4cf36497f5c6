//! A suggester from its spec (`builtin:…`, `openai:…`, `lsp:…`, `cmd:…`): the one
//! place that turns a spec and its limits into a [`Suggester`], shared by replay's
//! workers (`run::worker`, which adds the gold-fed built-ins) and by `nextedit tasks
//! run`, so neither duplicates the other's rules (the network check, the proxy in
//! front of a language server, the jail around a process).

use std::path::PathBuf;
use std::time::Duration;

use super::lsp::LspSuggester;
use super::openai::OpenAiSuggester;
use super::{
    DEFAULT_GIVE_UP_AFTER, DEFAULT_INIT_TIMEOUT, NoopSuggester, ProcessSuggester,
    PropagateSuggester, RetrieveSuggester, Suggester,
};
use crate::base::sys::jail::Jail;

/// The specs [`build`] knows, for error messages and `--help`.
pub const KNOWN_SPECS: &str = "builtin:noop, builtin:propagate, builtin:retrieve, builtin:oracle, openai:<URL>?model=<NAME>, lsp:<language server command>, recorded:<server> or cmd:<command line>";

/// How a suggester is built: its limits, and where it runs.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Limit of every call but `initialize`.
    pub timeout: Duration,
    /// Limit of `initialize` (a process may load a model).
    pub init_timeout: Duration,
    /// Process failures in a row before a trajectory (or task) stops asking.
    pub give_up_after: u32,
    /// Whether an `openai:` endpoint off this machine may be asked.
    pub allow_network: bool,
    /// The database a `nextedit proxy` in front of an `lsp:` server records reads into,
    /// also given to a `cmd:` process as `NEXTEDIT_REPLAY_DB`; `None`: no proxy.
    pub reads_db: Option<PathBuf>,
    /// Where and under what `cmd:` processes and `lsp:` servers run: the sandbox
    /// (`None`: unsandboxed), the environment allow-list and the limits of their trees.
    pub jail: Jail,
}

impl Default for BuildOptions {
    /// Replay's defaults: 60 s per call, [`DEFAULT_INIT_TIMEOUT`], give up after
    /// [`DEFAULT_GIVE_UP_AFTER`], loopback only, no proxy, no sandbox ([`Jail::default`]).
    fn default() -> BuildOptions {
        BuildOptions {
            timeout: Duration::from_secs(60),
            init_timeout: DEFAULT_INIT_TIMEOUT,
            give_up_after: DEFAULT_GIVE_UP_AFTER,
            allow_network: false,
            reads_db: None,
            jail: Jail::default(),
        }
    }
}

/// Why a spec gives no suggester.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// Not a spec this build knows.
    #[error("unknown suggester {0:?}: use {KNOWN_SPECS}")]
    Unknown(String),
    /// An `openai:` spec that does not parse.
    #[error(transparent)]
    OpenAi(#[from] super::openai::SpecError),
    /// An `openai:` endpoint off this machine without `allow_network`.
    #[error("{spec:?} is not on this machine: pass --allow-network to let nextedit reach {host}")]
    Network {
        /// The spec.
        spec: String,
        /// Its host.
        host: String,
    },
    /// An `lsp:` spec that does not parse or names no program.
    #[error(transparent)]
    Lsp(#[from] super::lsp::LspSpecError),
    /// `recorded:SERVER` outside a replay of a recorded session (its offers come from the session).
    #[error(
        "{0:?} suggests a recorded session's own offers: only `nextedit replay --session` can use it"
    )]
    RecordedOutsideReplay(String),
    /// nextedit cannot find its own executable (for the proxy).
    #[error("cannot find nextedit's own executable: {0}")]
    OwnExecutable(std::io::Error),
}

/// The suggester of `spec` (the gold-fed `builtin:oracle` and
/// `builtin:unchanged-at-gold` are the caller's: only replay's engine feeds them).
pub fn build(spec: &str, options: &BuildOptions) -> Result<Box<dyn Suggester>, BuildError> {
    Ok(match spec {
        "builtin:noop" => Box::new(NoopSuggester),
        "builtin:propagate" => Box::new(PropagateSuggester::default()),
        "builtin:retrieve" => Box::new(RetrieveSuggester::default()),
        _ if spec.starts_with("recorded:") => {
            return Err(BuildError::RecordedOutsideReplay(spec.to_string()));
        }
        _ if spec.starts_with("openai:") => {
            let suggester = OpenAiSuggester::from_spec(spec)?
                .with_timeout(options.timeout)
                .with_give_up_after(options.give_up_after);
            if !suggester.spec().is_local() && !options.allow_network {
                return Err(BuildError::Network {
                    spec: spec.to_string(),
                    host: suggester.spec().host.clone(),
                });
            }
            Box::new(suggester)
        }
        _ if spec.starts_with("lsp:") => {
            let mut suggester = LspSuggester::from_spec(spec)?
                .with_timeout(options.timeout)
                .with_init_timeout(options.init_timeout)
                .with_give_up_after(options.give_up_after);
            if let Some(reads_db) = &options.reads_db {
                // The server runs behind nextedit's own proxy, so its reads are attributed.
                let nextedit = std::env::current_exe().map_err(BuildError::OwnExecutable)?;
                suggester = suggester.with_proxy(&nextedit, reads_db);
            }
            Box::new(suggester.with_jail(options.jail.clone()))
        }
        _ => match spec.strip_prefix("cmd:") {
            Some(command) if !command.trim().is_empty() => {
                let mut process = ProcessSuggester::from_shell(command, options.timeout)
                    .with_init_timeout(options.init_timeout)
                    .with_give_up_after(options.give_up_after)
                    .with_jail(options.jail.clone());
                if let Some(reads_db) = &options.reads_db {
                    process = process.with_env("NEXTEDIT_REPLAY_DB", &reads_db.to_string_lossy());
                }
                Box::new(process)
            }
            _ => return Err(BuildError::Unknown(spec.to_string())),
        },
    })
}
