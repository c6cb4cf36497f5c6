//! `nextedit replay`'s arguments as the library's run settings and request: the clap
//! enums stop here and never reach the library or the database.

use nextedit::core::trajectory::{Origin, SliceSpec};
use nextedit::engine::suggest::cache::CacheMode;
use nextedit::service::run::{
    self, MatchKind, Order, Reasserted, Reveal, RunRequest, RunSettings, SandboxMode,
};

use super::{MatchArg, OrderArg, OriginArg, ReplayArgs, RevealArg, SandboxArg};

impl ReplayArgs {
    /// The settings of a new run, as given (checked by [`RunSettings::checked`]).
    pub(super) fn settings(&self) -> RunSettings {
        RunSettings {
            suggester: self.suggester.clone().expect("clap requires it"),
            // Set by `OutputArgs::apply`.
            historian_json: None,
            historian_xz: false,
            order: match self.order {
                OrderArg::Fixed => Order::Fixed,
                OrderArg::Adaptive => Order::Adaptive,
            },
            match_rule: match self.match_rule {
                MatchArg::Bleu => MatchKind::Bleu,
                MatchArg::Historian => MatchKind::Historian,
                MatchArg::Es => MatchKind::Es,
                MatchArg::Exact => MatchKind::Exact,
            },
            es_threshold: self.es_threshold,
            reveal: self
                .reveal
                .iter()
                .map(|r| match r {
                    RevealArg::Message => Reveal::Message,
                    RevealArg::Files => Reveal::Files,
                    RevealArg::Commit => Reveal::Commit,
                })
                .collect(),
            exclude_origin: self
                .exclude_origin
                .iter()
                .map(|o| match o {
                    OriginArg::Format => Origin::Format,
                    OriginArg::CodeAction => Origin::CodeAction,
                    OriginArg::Rename => Origin::Rename,
                    OriginArg::Completion => Origin::Completion,
                    OriginArg::External => Origin::External,
                })
                .collect(),
            seed: self.seed,
            timeout: self.timeout,
            init_timeout: self.init_timeout,
            give_up_after: self.give_up_after,
            // Settled by `checked`.
            sandbox: run::SandboxState::InProcess,
            allow_network: self.allow_network,
            sandbox_ro: self.sandbox_ro.clone(),
            sandbox_rw: self.sandbox_rw.clone(),
            // Set by `ReproArgs::apply`.
            cache: CacheMode::Off,
            cache_db: None,
            repetitions: 1,
            // Set by `LimitArgs::apply` and `OutputArgs::apply`.
            limits: Default::default(),
            env: Vec::new(),
            max_failed_share: nextedit::service::run::verdict::DEFAULT_MAX_FAILED_SHARE,
            // Set by `JudgeArgs::apply`.
            judge: None,
            judge_prompt: nextedit::engine::judge::JudgePrompt::Nep,
            judge_format: Default::default(),
        }
    }

    /// How `--sandbox` asks suggester processes to be isolated.
    pub(super) fn sandbox_mode(&self) -> SandboxMode {
        match self.sandbox {
            SandboxArg::Bwrap => SandboxMode::Bwrap,
            SandboxArg::Off => SandboxMode::Off,
        }
    }

    /// What the command line gives again to `--resume` a run: compared with the
    /// stored settings, never taken from them.
    pub(super) fn reasserted(&self) -> Reasserted {
        Reasserted {
            suggester: self.suggester.clone(),
            sandbox: self.sandbox_mode(),
            allow_network: self.allow_network,
            sandbox_ro: self.sandbox_ro.clone(),
            sandbox_rw: self.sandbox_rw.clone(),
            cache_db: self.repro.cache_db().map(Into::into),
            historian_json: self.output.historian_dir(),
            env: self.limits.env(),
            limits: self.limits.limits(),
            judge: self.judge.spec(),
            judge_format: self.judge.format(),
        }
    }

    /// What the new run replays.
    pub(super) fn request(&self) -> RunRequest {
        RunRequest {
            trajectories: self.trajectory.clone(),
            repo: self.repo.clone(),
            commits: self.commit.clone(),
            range: self.range.clone(),
            merges: self.merges,
            sessions: self.session.clone(),
            slice: SliceSpec {
                from: self.slice.from,
                to: self.slice.to,
                files: self.slice.files.clone(),
            },
            pause_ms: self.slice.pause_ms,
            select: self.scale.select(),
            repetitions: self.repro.repetitions(),
        }
    }
}
