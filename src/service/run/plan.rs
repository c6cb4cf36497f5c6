//! What a run replays and how: the trajectories in run order (files, then a
//! repository's commits, then stored sessions; each normalized to `RelPath`s before it
//! is stored), and the settings, the library's own serializable type, stored with the
//! run so `--resume` replays the same way.

use crate::store::TrajectoryStatus;
use std::path::{Path, PathBuf};

use super::shard::{Select, ShardOf, Source};
use super::{RunError, RunEvents, RunRead, RunStore};
use crate::base::sys::limits::Limits;
use crate::core::trajectory::{Origin, SliceSpec, Trajectory, TrajectoryPathError};
use crate::engine::history::{CommitSource, GitRepository, HistoryError, Merges, derive_commit};
use crate::engine::judge::{JudgeFormat, JudgePrompt};
use crate::engine::replay::OrderMode;
use crate::engine::replay::matching::MatchRule;
use crate::engine::suggest::cache::CacheMode;
use crate::store::Database;

/// What the command line of `replay --resume` gives again: every setting of the run
/// that runs or exposes something ([`RunSettings::confirmed_by`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Reasserted {
    /// `--suggester` (`None`: not given).
    pub suggester: Option<String>,
    /// `--sandbox`.
    pub sandbox: SandboxMode,
    /// `--allow-network`.
    pub allow_network: bool,
    /// `--sandbox-ro`.
    pub sandbox_ro: Vec<PathBuf>,
    /// `--sandbox-rw`.
    pub sandbox_rw: Vec<PathBuf>,
    /// `--cache-db`.
    pub cache_db: Option<PathBuf>,
    /// `--historian-json`.
    pub historian_json: Option<PathBuf>,
    /// `--env` (variables passed to the suggester: compared, they expose something).
    pub env: Vec<String>,
    /// `--pids`, `--memory`, `--disk` (the command line's, never the database's).
    pub limits: Limits,
    /// `--judge` (an endpoint the run reaches: compared, never taken from the database).
    pub judge: Option<String>,
    /// `--judge-format` (another format is another request: compared, so a resumed
    /// run's answers are all read one way).
    pub judge_format: JudgeFormat,
}

/// Which edit comes next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// The natural order.
    Fixed,
    /// The suggester's best kept match.
    Adaptive,
}

/// How predictions match gold edits (the threshold of `es` is [`RunSettings::es_threshold`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchKind {
    /// Historian's BLEU-4 > 50, and the prediction changes its lines.
    Bleu,
    /// Historian compat, quirk included.
    Historian,
    /// ES-Line at least the threshold.
    Es,
    /// Exact text.
    Exact,
}

/// What the suggester may see beyond the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reveal {
    /// The commit message.
    Message,
    /// The changed files.
    Files,
    /// The project name and the trajectory's own id (a commit's sha) in `initialize`.
    Commit,
}

/// How suggester processes are asked to be isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// In bubblewrap.
    Bwrap,
    /// Not at all.
    Off,
}

/// How a run's suggester was isolated, stored as `bwrap`, `unsandboxed` or
/// `in-process`; a run stored with any other string keeps it (reports read the
/// setting loosely, and an old or hand-edited run must still resume and report).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(from = "String", into = "String")]
pub enum SandboxState {
    /// Its processes ran in bubblewrap.
    Bwrap,
    /// Its processes could read everything (`--sandbox off`, or bubblewrap unavailable).
    Unsandboxed,
    /// A built-in suggester (no process).
    InProcess,
    /// Another stored name, kept as it is.
    Other(String),
}

impl SandboxState {
    /// The stored name.
    pub fn key(&self) -> &str {
        match self {
            SandboxState::Bwrap => "bwrap",
            SandboxState::Unsandboxed => "unsandboxed",
            SandboxState::InProcess => "in-process",
            SandboxState::Other(name) => name,
        }
    }

    /// The `--sandbox` value that gives this state (`off` for `unsandboxed`).
    pub fn flag_value(&self) -> &str {
        match self {
            SandboxState::Unsandboxed => "off",
            other => other.key(),
        }
    }

    /// Whether the run's processes could read everything: `unsandboxed`, or another
    /// name a run may be stored with that says so (`off`, the flag's value;
    /// `unavailable`, `none`, `disabled`).
    pub fn is_unsandboxed(&self) -> bool {
        match self {
            SandboxState::Unsandboxed => true,
            SandboxState::Other(name) => {
                matches!(name.as_str(), "off" | "unavailable" | "none" | "disabled")
            }
            SandboxState::Bwrap | SandboxState::InProcess => false,
        }
    }

    /// The state a run's stored settings (`config`) name; `None` for a run stored
    /// before the setting existed (the default it reads back with is not a fact about
    /// it) or with a value that is not a name.
    pub fn stored(config: &serde_json::Value) -> Option<SandboxState> {
        use serde::Deserialize;
        SandboxState::deserialize(config.get("sandbox")?).ok()
    }
}

impl From<String> for SandboxState {
    fn from(name: String) -> SandboxState {
        match name.as_str() {
            "bwrap" => SandboxState::Bwrap,
            "unsandboxed" => SandboxState::Unsandboxed,
            "in-process" => SandboxState::InProcess,
            _ => SandboxState::Other(name),
        }
    }
}

impl From<SandboxState> for String {
    fn from(state: SandboxState) -> String {
        state.key().to_string()
    }
}

fn default_init_timeout() -> f64 {
    crate::engine::suggest::DEFAULT_INIT_TIMEOUT.as_secs_f64()
}

fn default_give_up_after() -> u32 {
    crate::engine::suggest::DEFAULT_GIVE_UP_AFTER
}

/// Runs stored before the sandbox existed ran their suggesters unsandboxed.
fn default_sandbox() -> SandboxState {
    SandboxState::Unsandboxed
}

/// Runs stored before the response cache existed used none.
fn default_cache() -> CacheMode {
    CacheMode::Off
}

fn default_repetitions() -> u32 {
    1
}

fn default_judge_prompt() -> JudgePrompt {
    JudgePrompt::Nep
}

fn is_default_judge_prompt(prompt: &JudgePrompt) -> bool {
    *prompt == JudgePrompt::Nep
}

fn is_default_judge_format(format: &JudgeFormat) -> bool {
    *format == JudgeFormat::Text
}

fn default_max_failed_share() -> f64 {
    super::verdict::DEFAULT_MAX_FAILED_SHARE
}

/// The settings of a run, stored with it (as JSON, a wire format) so `--resume`
/// replays the same way.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunSettings {
    /// Suggester spec (`builtin:…`, `cmd:…`, `openai:…` or `lsp:…`).
    pub suggester: String,
    /// Where Historian-compatible results files go, if anywhere.
    #[serde(default)]
    pub historian_json: Option<PathBuf>,
    /// Whether they are xz-compressed (`….json.xz`) rather than the plain JSON
    /// Historian reads.
    #[serde(default)]
    pub historian_xz: bool,
    /// Which edit comes next.
    pub order: Order,
    /// How predictions match gold edits.
    #[serde(rename = "match")]
    pub match_rule: MatchKind,
    /// Minimum ES of the `es` rule.
    pub es_threshold: f64,
    /// What the suggester may see beyond the current state.
    pub reveal: Vec<Reveal>,
    /// Edits of these origins are applied silently.
    #[serde(default)]
    pub exclude_origin: Vec<Origin>,
    /// Seed for tie-breaks.
    pub seed: u64,
    /// Seconds per call.
    pub timeout: f64,
    /// Seconds for `initialize`.
    #[serde(default = "default_init_timeout")]
    pub init_timeout: f64,
    /// Process failures in a row before a trajectory stops asking.
    #[serde(default = "default_give_up_after")]
    pub give_up_after: u32,
    /// How the suggester was isolated; `report` marks unsandboxed runs.
    #[serde(default = "default_sandbox")]
    pub sandbox: SandboxState,
    /// Whether sandboxed suggesters may use the network.
    #[serde(default)]
    pub allow_network: bool,
    /// Extra paths sandboxed suggesters may read.
    #[serde(default)]
    pub sandbox_ro: Vec<PathBuf>,
    /// Existing paths sandboxed suggesters may write.
    #[serde(default)]
    pub sandbox_rw: Vec<PathBuf>,
    /// How the response cache is used (`off` for built-ins, whatever was asked).
    #[serde(default = "default_cache")]
    pub cache: CacheMode,
    /// A database holding the response cache instead of the run's own.
    #[serde(default)]
    pub cache_db: Option<PathBuf>,
    /// How many times every trajectory is replayed (each repetition is a run).
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Limits of each suggester process's tree (`--pids`, `--memory`, `--disk`).
    #[serde(default)]
    pub limits: Limits,
    /// Variables of nextedit's environment passed to suggester processes beyond the
    /// allow-list (`--env`), by name: their values are never stored.
    #[serde(default)]
    pub env: Vec<String>,
    /// More than this share of one kind's calls failing fails the run (all of them
    /// failing always does; [`super::verdict`]).
    #[serde(default = "default_max_failed_share")]
    pub max_failed_share: f64,
    /// The judge asked about each content step (`--judge openai:URL?model=…`), if any
    /// (not stored without one: the settings of unjudged runs read as they always did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<String>,
    /// What the judge is asked (`--judge-prompt`; stored unless the default, `nep`).
    #[serde(
        default = "default_judge_prompt",
        skip_serializing_if = "is_default_judge_prompt"
    )]
    pub judge_prompt: JudgePrompt,
    /// How the judge is asked to shape its answer (`--judge-format`; stored unless the
    /// default, `text`).
    #[serde(default, skip_serializing_if = "is_default_judge_format")]
    pub judge_format: JudgeFormat,
}

impl RunSettings {
    /// The settings stored with run `run`.
    pub fn of(store: &dyn RunRead, run: i64) -> Result<RunSettings, RunError> {
        serde_json::from_value(store.run(run)?.config)
            .map_err(|source| RunError::Settings { run, source })
    }

    /// The match rule of these settings.
    pub fn rule(&self) -> MatchRule {
        match self.match_rule {
            MatchKind::Bleu => MatchRule::Bleu,
            MatchKind::Historian => MatchRule::Historian,
            MatchKind::Es => MatchRule::Es {
                threshold: self.es_threshold,
            },
            MatchKind::Exact => MatchRule::Exact,
        }
    }

    /// The engine's order mode.
    pub fn order_mode(&self) -> OrderMode {
        match self.order {
            Order::Fixed => OrderMode::Fixed,
            Order::Adaptive => OrderMode::Adaptive,
        }
    }

    /// Whether the suggester runs a process (`cmd:`, or the language server of `lsp:`).
    pub fn is_process(&self) -> bool {
        self.suggester.starts_with("cmd:") || self.suggester.starts_with("lsp:")
    }

    /// What the command line of a run made with these settings says (a new run's own).
    pub fn reasserted(&self) -> Reasserted {
        Reasserted {
            suggester: Some(self.suggester.clone()),
            sandbox: match self.sandbox {
                SandboxState::Unsandboxed => SandboxMode::Off,
                _ => SandboxMode::Bwrap,
            },
            allow_network: self.allow_network,
            sandbox_ro: self.sandbox_ro.clone(),
            sandbox_rw: self.sandbox_rw.clone(),
            cache_db: self.cache_db.clone(),
            historian_json: self.historian_json.clone(),
            env: self.env.clone(),
            limits: self.limits,
            judge: self.judge.clone(),
            judge_format: self.judge_format,
        }
    }

    /// Run `run`'s stored settings, confirmed by what the command line gives again
    /// ([`crate::service::resume`]): the suggester, the sandbox and what it shows, the network,
    /// the cache database and the results directory must be given as stored (else
    /// [`RunError::Resume`] says what to pass), and are then the command line's; the
    /// stored numbers must lie in their ranges; a run that sandboxed its suggester
    /// must be able to sandbox it here.
    pub fn resumed(
        store: &dyn RunStore,
        run: i64,
        given: &Reasserted,
    ) -> Result<RunSettings, RunError> {
        RunSettings::of(store, run)?.confirmed_by(run, given)
    }

    /// These settings (run `run`'s, as stored) confirmed by `given`.
    pub fn confirmed_by(self, run: i64, given: &Reasserted) -> Result<RunSettings, RunError> {
        use crate::service::resume::{confirm, confirm_suggester, paths};
        let label = format!("run {run}");
        let run_label = label.as_str();
        confirm_suggester(run_label, &self.suggester, given.suggester.as_deref())?;
        let sandbox = match given.sandbox {
            SandboxMode::Bwrap => SandboxState::Bwrap,
            SandboxMode::Off => SandboxState::Unsandboxed,
        };
        if self.is_process() {
            confirm(run_label, "--sandbox", &self.sandbox, Some(&sandbox), |s| {
                format!("--sandbox {}", s.flag_value())
            })?;
        }
        confirm(
            run_label,
            "--allow-network",
            &self.allow_network,
            Some(&given.allow_network),
            |&on| {
                if on {
                    "--allow-network"
                } else {
                    "no --allow-network"
                }
                .to_string()
            },
        )?;
        for (flag, stored, given) in [
            ("--sandbox-ro", &self.sandbox_ro, &given.sandbox_ro),
            ("--sandbox-rw", &self.sandbox_rw, &given.sandbox_rw),
        ] {
            confirm(run_label, flag, stored, Some(given), |p| paths(flag, p))?;
        }
        for (flag, stored, given) in [
            ("--cache-db", &self.cache_db, &given.cache_db),
            (
                "--historian-json",
                &self.historian_json,
                &given.historian_json,
            ),
        ] {
            confirm(run_label, flag, stored, Some(given), |p| {
                paths(flag, p.as_slice())
            })?;
        }
        let given_judge = given
            .judge
            .as_deref()
            .map(crate::base::secrets::stored_spec);
        confirm(
            run_label,
            "--judge",
            &self.judge,
            Some(&given_judge),
            |spec| {
                spec.as_deref()
                    .map_or("no --judge".to_string(), |s| format!("--judge {s:?}"))
            },
        )?;
        confirm(
            run_label,
            "--judge-format",
            &self.judge_format,
            Some(&given.judge_format),
            |format| format!("--judge-format {}", format.key()),
        )?;
        confirm(run_label, "--env", &self.env, Some(&given.env), |names| {
            crate::service::resume::env_flags(names)
        })?;
        crate::base::sys::env::check_names(&given.env)
            .map_err(|e| RunError::Other(e.to_string()))?;
        self.check_numbers()?;
        if self.sandbox == SandboxState::Bwrap {
            crate::base::sys::probe::availability().map_err(|reason| {
                RunError::Other(format!("run {run} ran its suggester sandboxed: {reason}"))
            })?;
        }
        // Equal to the stored ones, but the command line's from here on.
        Ok(RunSettings {
            suggester: given.suggester.clone().unwrap_or_default(),
            allow_network: given.allow_network,
            sandbox_ro: given.sandbox_ro.clone(),
            sandbox_rw: given.sandbox_rw.clone(),
            cache_db: given.cache_db.clone(),
            historian_json: given.historian_json.clone(),
            env: given.env.clone(),
            limits: given.limits,
            judge: given.judge.clone(),
            ..self
        })
    }

    /// The numbers lie in the ranges their flags take ([`crate::base::ranges`]): a run
    /// read back from a database is checked like a command line.
    fn check_numbers(&self) -> Result<(), RunError> {
        use crate::base::ranges::{FRACTION, GIVE_UP_AFTER, REPETITIONS, RangeError, SECONDS};
        let bad = |flag: &'static str| {
            move |why: RangeError| RunError::Other(why.of_flag(flag).to_string())
        };
        SECONDS.check(self.timeout).map_err(bad("--timeout"))?;
        SECONDS
            .check(self.init_timeout)
            .map_err(bad("--init-timeout"))?;
        FRACTION
            .check(self.es_threshold)
            .map_err(bad("--es-threshold"))?;
        GIVE_UP_AFTER
            .check(self.give_up_after.into())
            .map_err(bad("--give-up-after"))?;
        REPETITIONS
            .check(self.repetitions.into())
            .map_err(bad("--repetitions"))?;
        FRACTION
            .check(self.max_failed_share)
            .map_err(bad("--max-failed-share"))?;
        Ok(())
    }

    /// Checks new settings (numbers in range, a known suggester, `--env` names set
    /// here) and settles how the suggester is isolated: `bwrap` when asked for and the
    /// sandbox works here (else an error naming the cause and the fix: the run does not
    /// start), `unsandboxed` with `--sandbox off` (said on stderr), `in-process` for
    /// built-ins.
    pub fn checked(
        mut self,
        mode: SandboxMode,
        events: &dyn RunEvents,
    ) -> Result<RunSettings, RunError> {
        self.check_numbers()?;
        super::worker::build_suggester(&self, None)?;
        super::worker::build_judge(&self)?;
        // Built-ins are in-process and deterministic (the fed ones take gold through
        // another channel): nothing to cache, unless a judge's answers are.
        if self.suggester.starts_with("builtin:") && self.judge.is_none() {
            self.cache = CacheMode::Off;
        }
        crate::base::sys::env::check_names(&self.env)
            .map_err(|e| RunError::Other(e.to_string()))?;
        if self.is_process()
            && let Some(note) = crate::base::sys::cgroup::per_process_note()
        {
            events.note(&note);
        }
        self.sandbox = if !self.is_process() {
            SandboxState::InProcess
        } else {
            match mode {
                SandboxMode::Off => {
                    // The user chose it: said even under --quiet.
                    events.note(
                        "suggesters run UNSANDBOXED (--sandbox off): they can read the repository, the database and the network",
                    );
                    SandboxState::Unsandboxed
                }
                // No sandbox, no run: the suggester is never started unsandboxed.
                SandboxMode::Bwrap => match crate::base::sys::probe::availability() {
                    Ok(()) => SandboxState::Bwrap,
                    Err(reason) => {
                        return Err(RunError::Other(format!(
                            "cannot sandbox the suggester: {reason}; or pass --sandbox off to run it unsandboxed (it can then read the repository, the database and the network)"
                        )));
                    }
                },
            }
        };
        Ok(self)
    }
}

/// What a new run replays, as the command line named it.
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// Trajectory files.
    pub trajectories: Vec<PathBuf>,
    /// A repository whose commits to replay.
    pub repo: Option<PathBuf>,
    /// Commits of the repository.
    pub commits: Vec<String>,
    /// A range of the repository.
    pub range: Option<String>,
    /// What to do with merges in the range.
    pub merges: Merges,
    /// Stored sessions.
    pub sessions: Vec<i64>,
    /// The part of each session to replay.
    pub slice: SliceSpec,
    /// Pause that ends an edit when coalescing a recorded session.
    pub pause_ms: Option<f64>,
    /// Which of the trajectories to load: all, one shard's, or none (a plan).
    pub select: Select,
    /// How many repetitions each trajectory has (a plan's units: trajectory ×
    /// repetition); 0 counts as 1.
    pub repetitions: u32,
}

/// The trajectories of a new run, in run order.
#[derive(Debug, Clone, Default)]
pub struct Collected {
    /// (position in the plan, key, trajectory JSON as stored; `None` when it could not
    /// be read or derived) of the trajectories selected.
    pub entries: Vec<(usize, String, Option<String>)>,
    /// (key, why) of the entries that failed before replay.
    pub failures: Vec<(String, String)>,
    /// Every trajectory the request names, selected or not, in run order: its key and
    /// where it comes from.
    pub units: Vec<(String, Source)>,
    /// The selection this was collected for.
    pub select: Select,
    /// How many repetitions each trajectory has (at least 1).
    pub repetitions: u32,
}

/// The trajectories a request names, in run order: files, then commits, then
/// sessions. `None` when a range left nothing to replay and nothing else was named.
pub fn collect(
    request: &RunRequest,
    sessions: &Database,
    events: &dyn RunEvents,
) -> Result<Option<Collected>, RunError> {
    let mut collected = Collected {
        select: request.select,
        repetitions: request.repetitions.max(1),
        ..Collected::default()
    };
    for path in &request.trajectories {
        // A file that cannot be read is recorded as a failed trajectory, not fatal;
        // one that does not parse is stored as read and fails when replayed.
        let key = path.display().to_string();
        let source = Source::File {
            path: path.canonicalize().unwrap_or_else(|_| path.clone()),
        };
        if !collected.take(&key, source) {
            continue;
        }
        let text = std::fs::read_to_string(path).ok();
        match text.as_deref().map(serde_json::from_str::<Trajectory>) {
            Some(Ok(trajectory)) => {
                // The text is not needed once parsed (a long trajectory's is large).
                drop(text);
                collected.add(key, Ok(trajectory), events)
            }
            _ => collected.push(key, text),
        }
    }
    if let Some(repo_path) = &request.repo
        && !collect_commits(request, repo_path, &mut collected, events)?
    {
        return Ok(None);
    }
    for &id in &request.sessions {
        let key = format!("session:{id}");
        if !collected.take(&key, Source::Session { id }) {
            continue;
        }
        let trajectory = crate::service::sessions::load_session_trajectory(
            sessions,
            id,
            &request.slice,
            request.pause_ms,
        )?;
        if trajectory.edits.is_empty() {
            events.note(&format!(
                "session {id} has no coalesced edits to replay yet (recorded sessions become replayable once their changes are coalesced into edits)"
            ));
        }
        collected.add(key, Ok(trajectory), events);
    }
    Ok(Some(collected))
}

/// The commits `request` names in the repository at `repo_path`, each derived into
/// `collected`; `false` when the range selected nothing and nothing else was asked for.
fn collect_commits(
    request: &RunRequest,
    repo_path: &Path,
    collected: &mut Collected,
    events: &dyn RunEvents,
) -> Result<bool, RunError> {
    let repo = GitRepository::open(repo_path)?;
    let mut shas = Vec::new();
    for rev in &request.commits {
        shas.push(repo.resolve(rev)?);
    }
    if let Some(range) = &request.range {
        let selection =
            crate::engine::history::select(&repo, range, request.merges).map_err(|source| {
                RunError::Range {
                    range: range.clone(),
                    source,
                }
            })?;
        events.selected(range, &selection);
        if selection.commits.is_empty()
            && request.commits.is_empty()
            && request.trajectories.is_empty()
            && request.sessions.is_empty()
        {
            // Nothing to replay is not a failure when only merges were left out.
            return Ok(false);
        }
        shas.extend(selection.commits);
    }
    if shas.is_empty() && request.range.is_none() {
        return Err(RunError::Other(
            "--repo needs --commit REV or --range A..B".into(),
        ));
    }
    let project = repo.project();
    let workspace = repo_path.canonicalize().map_err(RunError::io(format!(
        "cannot resolve {}",
        repo_path.display()
    )))?;
    for sha in shas {
        let key = format!("{}@{}", project.as_deref().unwrap_or("repo"), &sha[..10]);
        let source = Source::Commit {
            repo: workspace.clone(),
            commit: sha.clone(),
        };
        if !collected.take(&key, source) {
            continue;
        }
        let derived = repo
            .load_with(&sha, request.merges)
            .and_then(|record| derive_commit(&record, project.as_deref()))
            .map(|mut trajectory| {
                trajectory.session.workspace = Some(workspace.display().to_string());
                trajectory
            })
            .map_err(EntryError::from);
        collected.add(key, derived, events);
    }
    Ok(true)
}

impl Collected {
    /// Names the next trajectory of the request; whether it is selected (to be loaded).
    fn take(&mut self, key: &str, source: Source) -> bool {
        let position = self.units.len();
        self.units.push((key.to_string(), source));
        self.select.takes(position, self.repetitions)
    }

    /// Stores the last named trajectory's text as read.
    fn push(&mut self, key: String, text: Option<String>) {
        self.entries.push((self.units.len() - 1, key, text));
    }

    /// Adds the last named trajectory as the run stores it, or its failure.
    fn add(
        &mut self,
        key: String,
        trajectory: Result<Trajectory, EntryError>,
        events: &dyn RunEvents,
    ) {
        match trajectory.and_then(|t| run_entry(&key, t, events)) {
            Ok(json) => self.push(key, Some(json)),
            Err(error) => {
                self.failures.push((key.clone(), error.to_string()));
                self.push(key, None);
            }
        }
    }

    /// For a shard run, the plan it is a shard of (stored with the run).
    pub fn shard_of(&self) -> Option<ShardOf> {
        match self.select {
            Select::Shard(shard) => Some(ShardOf {
                index: shard.index,
                count: shard.count,
                units: self.units.iter().map(|(key, _)| key.clone()).collect(),
                repetitions: self.repetitions,
            }),
            _ => None,
        }
    }
}

/// Why a trajectory of a plan cannot be replayed (stored as its failure).
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    /// Its commit could not be read or derived.
    #[error("{0}")]
    Derive(#[from] HistoryError),
    /// A file path that could leave the workspace.
    #[error("unsafe file path: {0}")]
    Path(#[from] TrajectoryPathError),
    /// It does not serialize.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

/// A trajectory's JSON as a run stores it, every file path normalized to a
/// [`crate::core::trajectory::RelPath`] (replay writes each file under its scratch root);
/// the error names the offending path and where it is.
fn run_entry(
    key: &str,
    mut trajectory: Trajectory,
    events: &dyn RunEvents,
) -> Result<String, EntryError> {
    for path in trajectory.drop_unedited_outside_files() {
        events.note(&format!(
            "{key}: left out {path}: outside the workspace and never edited (replay writes only inside its scratch directory)"
        ));
    }
    trajectory.normalize_paths()?;
    Ok(serde_json::to_string(&trajectory)?)
}

/// Creates the run with its settings and trajectories, one run per repetition (the
/// first is the group's: the later ones name it); a shard creates only the
/// repetitions it has units of, each with those units' trajectories. The trajectories
/// that failed before replay are marked failed (and said once). Returns the first
/// run's id.
pub fn create(
    store: &mut dyn RunStore,
    settings: &RunSettings,
    collected: &Collected,
    events: &dyn RunEvents,
) -> Result<i64, RunError> {
    // A key the spec carries is never stored (a resume compares the masked spec).
    let stored = RunSettings {
        suggester: crate::base::secrets::stored_spec(&settings.suggester),
        judge: settings
            .judge
            .as_deref()
            .map(crate::base::secrets::stored_spec),
        ..settings.clone()
    };
    let config = serde_json::to_value(&stored).map_err(|e| RunError::Other(e.to_string()))?;
    let shard = collected
        .shard_of()
        .map(|s| serde_json::to_value(s).expect("plain data serialises"));
    let repetitions = settings.repetitions.max(1);
    let takes = |repetition: u32, position: usize| {
        (collected.select).takes_unit(position, repetition, repetitions)
    };
    // A shard has runs only of the repetitions it has units of.
    let any = (0..repetitions).any(|r| collected.entries.iter().any(|e| takes(r, e.0)));
    let mut first = None;
    let mut said = std::collections::BTreeSet::new();
    for repetition in 1..=repetitions {
        // One repetition's copy of the trajectories at a time (a long one's JSON is large).
        let entries: Vec<(usize, String, Option<String>)> = (collected.entries.iter())
            .filter(|e| takes(repetition - 1, e.0))
            .cloned()
            .collect();
        if any && entries.is_empty() {
            continue;
        }
        let run = store.create_run_at(&stored.suggester, &config, &entries, shard.as_ref())?;
        store.set_run_repetition(run, repetition, first)?;
        for (key, error) in &collected.failures {
            if !entries.iter().any(|(_, k, _)| k == key) {
                continue;
            }
            store.set_run_trajectory(run, key, TrajectoryStatus::Failed, None, Some(error))?;
            if said.insert(key.clone()) {
                events.note(&format!("skipping {key}: {error}"));
            }
        }
        first.get_or_insert(run);
    }
    Ok(first.expect("at least one repetition"))
}

#[cfg(test)]
mod tests {
    use super::{RunSettings, SandboxState};
    use serde_json::json;

    #[test]
    fn stored_settings_read_back_and_write_the_same_json() {
        for sandbox in ["bwrap", "unsandboxed", "in-process", "off"] {
            let stored = json!({"allow_network": false, "es_threshold": 0.5,
                "exclude_origin": ["code_action", "format"], "give_up_after": 3,
                "historian_json": null, "historian_xz": false, "init_timeout": 120.0, "match": "es", "order": "adaptive",
                "reveal": ["message", "commit"], "sandbox": sandbox, "sandbox_ro": ["/m"],
                "sandbox_rw": [], "seed": 42, "suggester": "cmd:x", "timeout": 60.0,
                "cache": "read-only", "cache_db": null, "repetitions": 3,
                "limits": {"pids": 64, "memory_mib": 512, "disk_mib": 100},
                "env": ["HF_HOME"],
                "max_failed_share": 0.25});
            let settings: RunSettings = serde_json::from_value(stored.clone()).unwrap();
            assert_eq!(serde_json::to_value(&settings).unwrap(), stored);
        }
        // A run stored before the later settings existed.
        let old = json!({"suggester": "builtin:noop", "order": "fixed", "match": "bleu",
            "es_threshold": 0.5, "reveal": [], "seed": 1, "timeout": 60.0});
        let settings: RunSettings = serde_json::from_value(old).unwrap();
        assert_eq!(
            (
                settings.sandbox,
                settings.init_timeout,
                settings.give_up_after,
                settings.limits,
                settings.env
            ),
            (
                SandboxState::Unsandboxed,
                crate::engine::suggest::DEFAULT_INIT_TIMEOUT.as_secs_f64(),
                crate::engine::suggest::DEFAULT_GIVE_UP_AFTER,
                crate::base::sys::limits::Limits::DEFAULT,
                Vec::<String>::new()
            )
        );
    }

    #[test]
    fn a_report_reads_the_stored_sandbox_and_nothing_for_a_run_without_one() {
        let stored = |config| SandboxState::stored(&config).map(|s| s.is_unsandboxed());
        assert_eq!(stored(json!({"sandbox": "unsandboxed"})), Some(true));
        assert_eq!(stored(json!({"sandbox": "bwrap"})), Some(false));
        assert_eq!(stored(json!({"sandbox": "in-process"})), Some(false));
        assert_eq!(stored(json!({"sandbox": "off"})), Some(true));
        assert_eq!(stored(json!({"sandbox": "mine"})), Some(false));
        assert_eq!(stored(json!({"suggester": "builtin:noop"})), None);
        assert_eq!(stored(json!({"sandbox": null})), None);
    }
}
