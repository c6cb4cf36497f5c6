//! `nextedit replay`'s limits of each suggester process tree and the variables passed
//! to it (a flattened argument group, turned into the library's settings here):
//! `--memory`, and the `--pids`, `--disk` and `--env` of `cli/mod.rs`'s `JailArgs`,
//! which other commands share.

use clap::Args;
use nextedit::service::run::RunSettings;

/// `--memory` and the shared `--pids`, `--disk`, `--env`.
#[derive(Debug, Args)]
pub(super) struct LimitArgs {
    /// MiB of memory one suggester process tree (a cmd: process or an lsp: server,
    /// with all it starts) may use; past it the kernel kills it (limit: memory)
    #[arg(long, value_name = "MIB", default_value_t = nextedit::base::sys::limits::DEFAULT_MEMORY_MIB,
          value_parser = clap::value_parser!(u64).range(16..=16_777_216))]
    memory: u64,

    #[command(flatten)]
    jail: super::super::JailArgs,
}

impl LimitArgs {
    /// `--pids`, `--memory`, `--disk`.
    pub(super) fn limits(&self) -> nextedit::base::sys::limits::Limits {
        self.jail.limits(self.memory)
    }

    /// The `--env` names.
    pub(super) fn env(&self) -> Vec<String> {
        self.jail.env.clone()
    }

    /// `settings` with these limits and variables.
    pub(super) fn apply(&self, settings: RunSettings) -> RunSettings {
        RunSettings {
            limits: self.limits(),
            env: self.env(),
            ..settings
        }
    }
}
