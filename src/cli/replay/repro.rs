//! `nextedit replay`'s reproducibility flags: the response cache (`--cache`,
//! `--cache-db`) and repetitions (`--repetitions`), a flattened argument group turned
//! into the library's settings here.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nextedit::engine::suggest::cache::CacheMode;
use nextedit::service::run::RunSettings;

/// The response cache and repetitions.
#[derive(Debug, Args)]
pub(super) struct ReproArgs {
    /// How suggester answers are cached (cmd: and openai: suggesters; built-ins never
    /// are): read-write (serve what was asked before, ask and store the rest), read-only
    /// (serve only; a call not in the cache fails its trajectory naming the step, and
    /// the suggester is never started: re-score a published run without its model), or
    /// off. Answers are keyed by the suggester spec, the repetition and the request
    /// [default: read-write]
    #[arg(long, value_enum, value_name = "MODE", conflicts_with = "resume")]
    cache: Option<CacheArg>,

    /// Keep the response cache in this database instead of the run's (--db), e.g. to
    /// share it between run databases or ship it with a published run (given again to
    /// --resume such a run)
    #[arg(long, value_name = "PATH")]
    cache_db: Option<PathBuf>,

    /// Replay every trajectory N times, each repetition a run of its own (the first
    /// run's id is printed and names the group); `nextedit report` shows each figure's
    /// mean and 95 % interval over the repetitions. Each repetition has its own cache
    /// entries, so a cached re-run reproduces every repetition. With --plan, every
    /// trajectory × repetition is a shard of its own
    #[arg(long, default_value_t = 1, value_name = "N", conflicts_with = "resume", allow_negative_numbers = true, value_parser = nextedit::base::ranges::repetitions)]
    repetitions: u32,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CacheArg {
    ReadWrite,
    ReadOnly,
    Off,
}

impl ReproArgs {
    /// `--cache-db`.
    pub(super) fn cache_db(&self) -> Option<&std::path::Path> {
        self.cache_db.as_deref()
    }

    /// How many repetitions each trajectory has.
    pub(super) fn repetitions(&self) -> u32 {
        self.repetitions
    }

    /// `settings` with these flags (the cache is settled for built-ins by `checked`).
    pub(super) fn apply(&self, settings: RunSettings) -> RunSettings {
        RunSettings {
            cache: match self.cache {
                None | Some(CacheArg::ReadWrite) => CacheMode::ReadWrite,
                Some(CacheArg::ReadOnly) => CacheMode::ReadOnly,
                Some(CacheArg::Off) => CacheMode::Off,
            },
            cache_db: self.cache_db.clone(),
            repetitions: self.repetitions,
            ..settings
        }
    }
}
