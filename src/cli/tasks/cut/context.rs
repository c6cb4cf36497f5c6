//! The retrieval flags of `nextedit tasks cut`: where context comes from
//! (`--context-from`, `--head`), how much (`--context-k`), and which retriever ranks it
//! (`--retriever`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use nextedit::engine::history::GitRepository;
use nextedit::engine::suggest::retrieve::index::ChunkIndex;
use nextedit::engine::task::ContextFrom;
use nextedit::engine::task::cut::ContextOptions;
use nextedit::engine::task::retrieval::{Bm25, Retriever};
use nextedit::engine::task::retriever_command::{CommandRetriever, Confinement, DEFAULT_TIMEOUT};
use nextedit::service::tasks::history::head_index;

/// Which version context is retrieved from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum From {
    /// The task's own state (evolution-aware)
    State,
    /// The repository's latest version (evolution-ignored; leaks are flagged)
    Head,
}

/// Retrieved context for every task.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Retrieve context from the task's state or from the latest version (HEAD of
    /// --repo, or --head); chunks that did not exist in the state are flagged
    /// `existed_at_state: false` and the task's context `leaked: true`
    #[arg(long, value_enum, default_value_t = From::State)]
    pub context_from: From,
    /// How many function chunks of context per task (0: none)
    #[arg(long, default_value_t = 5, value_name = "K", allow_negative_numbers = true, value_parser = nextedit::base::ranges::count_or_none)]
    pub context_k: usize,
    /// The latest version for --context-from head [default: HEAD]
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
    /// Ranks context and RAG hints: `bm25`, or `cmd:PROG ARGS` (a command speaking
    /// one JSON line per query each way, e.g. an embedding model: docs/tasks.md)
    #[arg(long, default_value = "bm25", value_name = "SPEC")]
    pub retriever: String,
    /// Seconds a `cmd:` retriever may take to answer one query before the cut fails
    #[arg(long, default_value_t = DEFAULT_TIMEOUT.as_secs_f64(), value_name = "SECS", allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    pub retriever_timeout: f64,
    /// How a `cmd:` retriever is isolated, as replay's suggesters are: bwrap (only
    /// its program and a scratch directory of its own visible, no network, no
    /// capability; the cut refuses to start it when the sandbox cannot be made) or off
    /// (it can read everything; said on stderr)
    #[arg(long, default_value = "bwrap", value_parser = ["bwrap", "off"])]
    sandbox: String,
    /// MiB of memory a `cmd:` retriever's process tree may use (limit: memory)
    #[arg(long, value_name = "MIB", default_value_t = nextedit::base::sys::limits::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(16..=16_777_216))]
    memory: u64,
    #[command(flatten)]
    jail: super::super::super::JailArgs,
}

impl ContextArgs {
    /// The context options, `None` when no context is asked for.
    pub fn options(&self) -> Option<ContextOptions> {
        (self.context_k > 0).then_some(ContextOptions {
            from: match self.context_from {
                From::State => ContextFrom::State,
                From::Head => ContextFrom::Head,
            },
            k: self.context_k,
        })
    }

    /// The retriever the spec names, started; a `cmd:` one confined, never shown
    /// `forbidden` (the repository, the database).
    pub fn retriever(&self, forbidden: Vec<PathBuf>) -> anyhow::Result<Box<dyn Retriever>> {
        if self.retriever == "bm25" {
            return Ok(Box::new(Bm25));
        }
        let Some(command) = self.retriever.strip_prefix("cmd:") else {
            anyhow::bail!(
                "--retriever {:?}: use bm25 or cmd:PROG ARGS",
                nextedit::base::secrets::scrub(&self.retriever)
            );
        };
        nextedit::base::sys::env::check_names(&self.jail.env).map_err(anyhow::Error::msg)?;
        // Ctrl-C ends its tree; its daemons are adopted, to be killed with it.
        nextedit::service::run::install_process_guards()?;
        super::super::super::note_per_process_limits();
        let sandboxed = self.sandbox == "bwrap";
        if !sandboxed {
            eprintln!(
                "nextedit: the retriever runs UNSANDBOXED (--sandbox off): it can read the repository, your files and the network"
            );
        }
        let confine = Confinement {
            sandboxed,
            forbidden,
            limits: self.jail.limits(self.memory),
            env: nextedit::base::sys::env::Environment::passing(&self.jail.env),
        };
        let timeout = std::time::Duration::from_secs_f64(self.retriever_timeout);
        Ok(Box::new(CommandRetriever::start(
            &self.retriever,
            command,
            timeout,
            &confine,
        )?))
    }

    /// The latest version's index when context comes from it.
    pub fn head_index(
        &self,
        repo: Option<&GitRepository>,
        dir: &Path,
    ) -> anyhow::Result<Option<ChunkIndex>> {
        if self.context_from != From::Head || self.context_k == 0 {
            return Ok(None);
        }
        let repo = repo.with_context(|| {
            format!(
                "--context-from head needs a repository: {} is none",
                dir.display()
            )
        })?;
        let rev = self.head.as_deref().unwrap_or("HEAD");
        Ok(Some(head_index(repo, rev).with_context(|| {
            format!("reading the latest version {rev} of {}", dir.display())
        })?))
    }
}
