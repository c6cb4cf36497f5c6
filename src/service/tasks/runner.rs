//! `nextedit tasks run` as a library service: every task's ground truth is run first
//! (a task whose covering tests fail on it, or that names none, is invalid: stored
//! with the reason, left out of every figure); then its do-nothing answers (the empty
//! hole, and the file as cut when the task hides part of it): a task one of them
//! passes is non-discriminating, stored with which and left out too. Only then is the
//! suggester (built by `suggest::build`) asked for N samples through
//! `suggest::complete_call` and each answer's tests run, through the execution cache.
//! Workers take tasks in file order; each finished task is stored at once (`--resume`
//! skips them).
//!
//! Each task's tests are chosen through `task::covermap`: the map of its state is made
//! once per run (a worker needing one another worker is making waits for it) and
//! cached in the database under the state and the test environment.
//!
//! The suggester never sees the ground truth: it is asked in a checkout of its own
//! (`ask/`, the hole empty) that the test runs (`exec/`, outside its sandbox) never
//! write into; `builtin:oracle` is answered here from the task, never through the
//! protocol. Must not print: progress goes through [`TaskRunEvents`].

use crate::store::TaskStore;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::ranges::FlagError;
use crate::base::sys::env::Environment;
use crate::base::sys::jail::Jail;
use crate::base::sys::limits::{DEFAULT_DISK_MIB, DEFAULT_PIDS, Limits};
use crate::base::sys::sandbox::{Sandbox, command_paths};
use crate::engine::history::source::GitRepository;
use crate::engine::suggest::build::{BuildOptions, build};
use crate::engine::suggest::cache::{CacheLog, CacheMode, CachedSuggester};
use crate::engine::suggest::protocol::{CompleteContext, CompleteParams, InitializeParams};
use crate::engine::suggest::{Call, SuggestError, complete_call};
use crate::engine::suggest::{Suggester, protocol::PROTOCOL_VERSION};
use crate::store::{CachedExecution, Database, ResponseCache, StoredAnswer, StoredTask};

use crate::engine::task::Task;
use crate::engine::task::covermap::{
    CoverageMap, DEFAULT_MAX_TESTS, MapError, TestsBy, make_map, map_key, map_state, select,
    supported, truth_text,
};
use crate::engine::task::environment::{Python, TestEnvironment};
use crate::engine::task::execute::{
    Canary, Checkout, ExecError, ExecLimits, Execution, Filling, SandboxMode,
    environment_fingerprint, sandbox_for, state_hash, test_command,
};
use crate::engine::task::score::score_answer;

/// The spec answered by the runner itself with each task's ground truth.
pub const ORACLE: &str = "builtin:oracle";

/// Checkouts the first canary of a run looks at for a Python module, at most.
const CANARY_TRIES: usize = 10;

/// A task run's settings, stored with the run (JSON) so `--resume` continues alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRunSettings {
    /// The suggester spec.
    pub suggester: String,
    /// Answers asked per task (pass@k's n).
    pub samples: u32,
    /// Repositories the tasks' commits are read from (matched by directory name).
    pub repos: Vec<PathBuf>,
    /// The test command (`{tests}`, `{names}`, `{packages}`, `{files}`), or the language's default.
    pub test_command: Option<String>,
    /// Time limit of one test run, seconds.
    pub timeout: f64,
    /// Memory limit of one test run's (and the suggester's) process tree, MiB.
    pub memory_mib: u64,
    /// Processes and threads one tree may run at once (runs stored before the limit
    /// existed get the default).
    #[serde(default = "default_pids")]
    pub pids: u32,
    /// What one tree may write (scratch, `/tmp`, one file), MiB.
    #[serde(default = "default_disk_mib")]
    pub disk_mib: u64,
    /// Variables of nextedit's environment passed to the tests and the suggester
    /// beyond the allow-list (`--env`), by name.
    #[serde(default)]
    pub env: Vec<String>,
    /// `bwrap` or `off` (`auto`, stored by older versions, is taken as `bwrap`).
    pub sandbox: String,
    /// Limit of one `complete` call, seconds.
    pub call_timeout: f64,
    /// How `complete` answers go through the response cache (built-ins never do).
    /// Runs stored before the cache existed used none.
    #[serde(default = "no_cache")]
    pub cache: CacheMode,
    /// The database holding the response cache, when not the run's own.
    #[serde(default)]
    pub cache_db: Option<PathBuf>,
    /// Whether test runs are served from and stored in the execution cache.
    #[serde(default = "exec_cache_default")]
    pub exec_cache: ExecCache,
    /// The interpreter of the Python tests (`--python`), else `python3` of `PATH`.
    #[serde(default)]
    pub python: Option<PathBuf>,
    /// A shell command run once per checkout before its first test run (`--setup`).
    #[serde(default)]
    pub setup: Option<String>,
    /// How each task's tests are chosen (runs stored before coverage maps used names).
    #[serde(default = "tests_by_name")]
    pub tests_by: TestsBy,
    /// Tests a task runs at most.
    #[serde(default = "default_max_tests")]
    pub max_tests: usize,
    /// Time limit of one coverage map's run (the whole suite), seconds.
    #[serde(default = "default_coverage_timeout")]
    pub coverage_timeout: f64,
}

fn tests_by_name() -> TestsBy {
    TestsBy::Name
}

fn default_max_tests() -> usize {
    DEFAULT_MAX_TESTS
}

/// The default `--coverage-timeout`, seconds.
pub const DEFAULT_COVERAGE_TIMEOUT: f64 = 900.0;

fn default_coverage_timeout() -> f64 {
    DEFAULT_COVERAGE_TIMEOUT
}

/// How test runs go through the execution cache (`--exec-cache`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExecCache {
    /// Every test run runs; none is stored.
    Off,
    /// A run with the same key is served; every new run is stored.
    ReadWrite,
}

fn exec_cache_default() -> ExecCache {
    ExecCache::ReadWrite
}

fn no_cache() -> CacheMode {
    CacheMode::Off
}

fn default_pids() -> u32 {
    DEFAULT_PIDS
}

fn default_disk_mib() -> u64 {
    DEFAULT_DISK_MIB
}

/// How a task run starts: new with its settings, or resumed.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskRunStart {
    /// A new run with these settings.
    New(TaskRunSettings),
    /// Stored run `run`, with what the command line gives again.
    Resume {
        /// The run id.
        run: i64,
        /// The command line's settings; `suggester` is `None` when not given.
        given: TaskRunGiven,
    },
}

/// What the command line of `tasks run --resume` gives: the settings that run
/// something are compared with the stored ones ([`crate::service::resume`]), never taken from
/// the database; the others come from the database.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRunGiven {
    /// `--suggester` (`None`: not given).
    pub suggester: Option<String>,
    /// `--repo` (their tests run).
    pub repos: Vec<PathBuf>,
    /// `--test-command`.
    pub test_command: Option<String>,
    /// `--sandbox`.
    pub sandbox: String,
    /// `--cache-db`.
    pub cache_db: Option<PathBuf>,
    /// `--env` (variables passed to untrusted code: compared, they expose something).
    pub env: Vec<String>,
    /// `--memory` (limits are the command line's, never the database's).
    pub memory_mib: u64,
    /// `--pids`.
    pub pids: u32,
    /// `--disk`.
    pub disk_mib: u64,
    /// `--exec-cache` (the command line's: it changes no outcome).
    pub exec_cache: ExecCache,
    /// `--python` (it runs: compared).
    pub python: Option<PathBuf>,
    /// `--setup` (it runs: compared).
    pub setup: Option<String>,
}

impl TaskRunSettings {
    /// Task run `run`'s stored settings confirmed by `given`: the suggester, the
    /// repositories, the test command, the interpreter, the setup, the sandbox and the
    /// cache database must be given as stored, and are then the command line's; the numbers must lie in
    /// their flags' ranges.
    fn confirmed_by(self, run: i64, given: &TaskRunGiven) -> Result<TaskRunSettings, TaskRunError> {
        use crate::service::resume::{confirm, confirm_suggester, paths, quoted, resolved};
        let label = format!("task run {run}");
        let label = label.as_str();
        confirm_suggester(label, &self.suggester, given.suggester.as_deref())?;
        confirm(
            label,
            "--repo",
            &resolved(&self.repos),
            Some(&resolved(&given.repos)),
            |p| paths("--repo", p),
        )?;
        // Commands are stored masked (`create_run`): the given ones are compared masked.
        let masked = |c: &Option<String>| c.as_deref().map(crate::base::secrets::stored_spec);
        confirm(
            label,
            "--test-command",
            &self.test_command,
            Some(&masked(&given.test_command)),
            |c| match c {
                Some(c) => quoted("--test-command", c),
                None => "no --test-command".to_string(),
            },
        )?;
        confirm(label, "--python", &self.python, Some(&given.python), |p| {
            paths("--python", p.as_slice())
        })?;
        confirm(
            label,
            "--setup",
            &self.setup,
            Some(&masked(&given.setup)),
            |c| match c {
                Some(c) => quoted("--setup", c),
                None => "no --setup".to_string(),
            },
        )?;
        // A run stored with the old `auto` ran sandboxed when it could: `bwrap` now.
        let stored_sandbox = match self.sandbox.as_str() {
            "auto" => "bwrap".to_string(),
            other => other.to_string(),
        };
        confirm(
            label,
            "--sandbox",
            &stored_sandbox,
            Some(&given.sandbox),
            |s| format!("--sandbox {s}"),
        )?;
        confirm(label, "--env", &self.env, Some(&given.env), |names| {
            crate::service::resume::env_flags(names)
        })?;
        confirm(
            label,
            "--cache-db",
            &self.cache_db,
            Some(&given.cache_db),
            |p| paths("--cache-db", p.as_slice()),
        )?;
        self.check_numbers()
            .map_err(|why| TaskRunError::Resume(format!("{label}: stored settings: {why}")))?;
        Ok(TaskRunSettings {
            suggester: given.suggester.clone().unwrap_or_default(),
            repos: given.repos.clone(),
            test_command: given.test_command.clone(),
            sandbox: given.sandbox.clone(),
            cache_db: given.cache_db.clone(),
            env: given.env.clone(),
            memory_mib: given.memory_mib,
            pids: given.pids,
            disk_mib: given.disk_mib,
            exec_cache: given.exec_cache,
            python: given.python.clone(),
            setup: given.setup.clone(),
            ..self
        })
    }

    /// The numbers lie in the ranges their flags take ([`crate::base::ranges`]).
    fn check_numbers(&self) -> Result<(), FlagError> {
        use crate::base::ranges::{MEMORY, RangeError, SAMPLES, SECONDS};
        let flag = |flag: &'static str| move |why: RangeError| why.of_flag(flag);
        SAMPLES
            .check(self.samples.into())
            .map_err(flag("--samples"))?;
        SECONDS.check(self.timeout).map_err(flag("--timeout"))?;
        SECONDS
            .check(self.call_timeout)
            .map_err(flag("--call-timeout"))?;
        MEMORY.check(self.memory_mib).map_err(flag("--memory"))?;
        Ok(())
    }

    fn sandbox_mode(&self) -> Result<SandboxMode, TaskRunError> {
        match self.sandbox.as_str() {
            // `auto` fell back to no sandbox; it now means the sandbox or no run.
            "bwrap" | "auto" => Ok(SandboxMode::Bwrap),
            "off" => Ok(SandboxMode::Off),
            other => Err(TaskRunError::Settings(format!(
                "unknown sandbox mode {other:?}: use bwrap or off"
            ))),
        }
    }

    /// The limits of each process tree (a test run, the suggester).
    pub fn limits(&self) -> Limits {
        Limits {
            pids: self.pids,
            memory_mib: self.memory_mib,
            disk_mib: self.disk_mib,
        }
    }
}

/// Why a task run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum TaskRunError {
    /// The database.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// Settings that cannot work (a suggester spec, a sandbox that is not there).
    #[error("{0}")]
    Settings(String),
    /// A number outside the range its flag takes.
    #[error(transparent)]
    Range(#[from] FlagError),
    /// A repository that does not open.
    #[error("opening repository {path}: {reason}")]
    Repo {
        /// The path given.
        path: String,
        /// What failed.
        reason: String,
    },
    /// `--resume` of a run that is not there or does not fit the task file.
    #[error("{0}")]
    Resume(String),
    /// `--resume` without the settings the run was made with.
    #[error(transparent)]
    Reassert(#[from] crate::service::resume::ResumeError),
    /// The scratch directory.
    #[error("scratch directory: {0}")]
    Scratch(std::io::Error),
}

/// What the run tells its caller as it goes.
pub trait TaskRunEvents: Send {
    /// The run started: its id, the number of tasks and how many are left to do.
    fn started(&mut self, run: i64, total: usize, todo: usize, sandboxed: bool);
    /// A task finished and was stored.
    fn task_done(&mut self, task: &StoredTask);
}

/// What a finished run did.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRunSummary {
    /// Run id.
    pub run: i64,
    /// Tasks done in this invocation.
    pub done: usize,
    /// Test executions served by the cache in this invocation.
    pub cached: usize,
    /// Test executions run in this invocation.
    pub executed: usize,
    /// Valid tasks of the run (those stored before a `--resume` included).
    pub valid: usize,
    /// Answers asked in this invocation, and of those the failed calls.
    pub answers: (usize, usize),
    /// `complete` calls served from the response cache, and asked live, in this invocation.
    pub calls: (usize, usize),
    /// Coverage maps made, served from the database, and whose run failed (their
    /// tasks fell back to names), in this invocation (one per state at most).
    pub maps: (usize, usize, usize),
}

impl TaskRunSummary {
    /// `coverage maps: 1 made, 0 from the cache` (and how many failed), when the run
    /// used any.
    pub fn coverage_line(&self) -> Option<String> {
        let (made, served, failed) = self.maps;
        let failed = (failed > 0).then(|| {
            format!(", {failed} failed (their tasks' tests by name: tasks report says why)")
        });
        (made + served + failed.is_some() as usize > 0).then(|| {
            format!(
                "coverage maps: {made} made, {served} from the cache{}",
                failed.unwrap_or_default()
            )
        })
    }
}

/// Runs `tasks` (from `task_file`) into the database at `db_path`: a new run, or a
/// stored one resumed with its stored settings confirmed by the command line's
/// ([`TaskRunStart`]). `jobs` workers, never more than tasks left.
pub fn run_tasks(
    db_path: &Path,
    task_file: &str,
    tasks: &[Task],
    start: TaskRunStart,
    jobs: usize,
    events: &mut dyn TaskRunEvents,
) -> Result<TaskRunSummary, TaskRunError> {
    let db = Database::open(db_path)?;
    let (run, settings, done, valid_before) = begin(&db, db_path, task_file, tasks, start)?;
    let sandboxed = confinement(&settings)?;
    // Opened here to fail early; each worker opens its own (libgit2 handles are not shared).
    open_repos(&settings.repos)?;
    // Fails early on a spec that cannot work, before any task runs.
    if settings.suggester != ORACLE {
        build(&settings.suggester, &BuildOptions::default())
            .map_err(|e| TaskRunError::Settings(e.to_string()))?;
    }
    let todo: Vec<usize> = (0..tasks.len()).filter(|i| !done.contains(i)).collect();
    // Never more workers (each a thread, a scratch directory and a suggester) than tasks.
    let workers = jobs.clamp(1, todo.len().max(1));
    let scratch = tempfile::Builder::new()
        .prefix("nextedit-tasks-")
        .tempdir()
        .map_err(TaskRunError::Scratch)?;
    let scratch_root = scratch
        .path()
        .canonicalize()
        .map_err(TaskRunError::Scratch)?;
    let mut forbidden: Vec<PathBuf> = settings.repos.clone();
    forbidden.push(db_path.to_path_buf());
    forbidden.push(scratch_root.join("exec"));
    forbidden.push(scratch_root.join("cache"));
    let environment = TestEnvironment {
        python: probe_python(&settings, sandboxed, &forbidden, &scratch_root)?,
        setup: settings.setup.clone(),
    };
    let mut shared = Shared {
        db_path,
        tasks,
        settings: &settings,
        sandboxed,
        scratch: &scratch_root,
        forbidden: &forbidden,
        queue: Mutex::new(todo.into_iter()),
        counts: Mutex::new((0, 0)),
        calls: Mutex::new((0, 0)),
        fingerprints: BTreeMap::new(),
        maps: Mutex::new(BTreeMap::new()),
        map_counts: Mutex::new((0, 0, 0)),
        environment,
        canaries: Mutex::new(BTreeMap::new()),
    };
    if let Some(&first) = shared.queue.lock().expect("queue lock").as_slice().first() {
        shared.probe_complete(&tasks[first])?;
    }
    shared.first_canary()?;
    shared.fingerprints = shared.environment()?;
    let run = match run {
        Some(id) => id,
        None => create_run(&db, &settings, task_file)?,
    };
    events.started(
        run,
        tasks.len(),
        shared.queue.lock().expect("queue lock").len(),
        sandboxed,
    );
    let (sender, receiver) = crossbeam_channel::unbounded::<Result<StoredTask, TaskRunError>>();
    let mut tally = Tally {
        valid: valid_before,
        ..Tally::default()
    };
    std::thread::scope(|scope| {
        for worker in 0..workers {
            let sender = sender.clone();
            let shared = &shared;
            scope.spawn(move || shared.work(worker, &sender));
        }
        drop(sender);
        for result in receiver {
            tally.take(result, &db, run, &shared, events);
        }
    });
    if let Some(e) = tally.failure {
        return Err(e);
    }
    db.finish_task_run(run)?;
    let (cached, executed) = *shared.counts.lock().expect("counts lock");
    let calls = *shared.calls.lock().expect("calls lock");
    let maps = *shared.map_counts.lock().expect("map counts lock");
    Ok(TaskRunSummary {
        run,
        done: tally.done,
        cached,
        executed,
        valid: tally.valid,
        answers: tally.answers,
        calls,
        maps,
    })
}

/// What a run starts from: a resumed run (its id, its stored settings confirmed by
/// the given ones, the tasks it has done and how many of them were valid), or a new
/// run's checked settings (stored once the run can start).
#[allow(clippy::type_complexity)]
fn begin(
    db: &Database,
    db_path: &Path,
    task_file: &str,
    tasks: &[Task],
    start: TaskRunStart,
) -> Result<(Option<i64>, TaskRunSettings, Vec<usize>, usize), TaskRunError> {
    Ok(match start {
        TaskRunStart::Resume { run: id, given } => {
            let row = db.task_run(id)?.ok_or_else(|| {
                TaskRunError::Resume(format!("no task run {id} in {}", db_path.display()))
            })?;
            let stored: TaskRunSettings = serde_json::from_str(&row.settings).map_err(|e| {
                TaskRunError::Resume(format!("task run {id}: stored settings: {e}"))
            })?;
            let settings = stored.confirmed_by(id, &given)?;
            let stored = db.task_run_tasks(id)?;
            for s in &stored {
                if tasks.get(s.index).map(|t| t.id.as_str()) != Some(s.task_id.as_str()) {
                    return Err(TaskRunError::Resume(format!(
                        "task run {id} holds task {:?} at line {} of its task file, {task_file} does not: resume with the same task file",
                        s.task_id,
                        s.index + 1
                    )));
                }
            }
            let indices = stored.iter().map(|s| s.index).collect::<Vec<_>>();
            (
                Some(id),
                settings,
                indices,
                stored.iter().filter(|s| s.valid).count(),
            )
        }
        TaskRunStart::New(settings) => {
            settings.check_numbers()?;
            // A run that cannot start is not stored: it is created once the checks pass.
            confinement(&settings)?;
            (None, settings, Vec::new(), 0)
        }
    })
}

/// Stores a new run (once it can start) with its settings; a key the suggester's spec,
/// the test command or the setup carries is never stored (a resume compares them masked).
fn create_run(
    db: &Database,
    settings: &TaskRunSettings,
    task_file: &str,
) -> Result<i64, TaskRunError> {
    let stored = TaskRunSettings {
        suggester: crate::base::secrets::stored_spec(&settings.suggester),
        test_command: settings
            .test_command
            .as_deref()
            .map(crate::base::secrets::stored_spec),
        setup: settings
            .setup
            .as_deref()
            .map(crate::base::secrets::stored_spec),
        ..settings.clone()
    };
    let json = serde_json::to_string(&stored).expect("settings serialize");
    Ok(db.create_task_run(&stored.suggester, settings.samples, task_file, &json)?)
}

/// The `--python` interpreter, checked like a test run: in the sandbox, under the
/// run's limits.
fn probe_python(
    settings: &TaskRunSettings,
    sandboxed: bool,
    forbidden: &[PathBuf],
    scratch_root: &Path,
) -> Result<Option<Python>, TaskRunError> {
    let Some(path) = &settings.python else {
        return Ok(None);
    };
    let limits = exec_limits(settings, sandboxed, TestEnvironment::default());
    let dir = scratch_root.join("probe-python");
    let cache = scratch_root.join("cache");
    let python = Python::probe(path, forbidden, &limits, &dir, &cache)
        .map_err(|e| TaskRunError::Settings(e.to_string()))?;
    Ok(Some(python))
}

/// What the workers' results came to so far, in this invocation.
#[derive(Default)]
struct Tally {
    /// Tasks done.
    done: usize,
    /// Valid tasks (with those of the run before a resume).
    valid: usize,
    /// Answers asked, and of those the failed calls.
    answers: (usize, usize),
    /// The first failure: the run stops at it.
    failure: Option<TaskRunError>,
}

impl Tally {
    /// One worker's result: the task stored and counted, or the run's failure (the
    /// workers then stop taking tasks).
    fn take(
        &mut self,
        result: Result<StoredTask, TaskRunError>,
        db: &Database,
        run: i64,
        shared: &Shared<'_>,
        events: &mut dyn TaskRunEvents,
    ) {
        match result.and_then(|task| {
            db.store_task(run, &task)?;
            Ok(task)
        }) {
            Ok(task) => {
                self.done += 1;
                self.valid += usize::from(task.valid);
                self.answers.0 += task.answers.len();
                self.answers.1 += task.answers.iter().filter(|a| a.error.is_some()).count();
                events.task_done(&task.scrubbed());
            }
            Err(e) => {
                self.failure.get_or_insert(e);
                // Workers stop taking tasks.
                shared
                    .queue
                    .lock()
                    .expect("queue lock")
                    .by_ref()
                    .for_each(drop);
            }
        }
    }
}

/// Checks what the run's untrusted code would get (the `--env` names are set here)
/// and whether it is sandboxed: no sandbox, no run (unless `--sandbox off`), neither
/// the tests nor the suggester start unsandboxed.
fn confinement(settings: &TaskRunSettings) -> Result<bool, TaskRunError> {
    crate::base::sys::env::check_names(&settings.env)
        .map_err(|e| TaskRunError::Settings(e.to_string()))?;
    sandbox_for(settings.sandbox_mode()?).map_err(|reason| {
        TaskRunError::Settings(format!(
            "cannot sandbox the tests and the suggester: {reason}; or pass --sandbox off to run them unsandboxed (they can then read the repository, the database and the network)"
        ))
    })
}

/// The limits and sandbox of a run's test runs, in `environment`.
fn exec_limits(
    settings: &TaskRunSettings,
    sandboxed: bool,
    environment: TestEnvironment,
) -> ExecLimits {
    ExecLimits {
        timeout: Duration::from_secs_f64(settings.timeout),
        limits: settings.limits(),
        sandbox: sandboxed,
        env: settings.env.clone(),
        environment,
    }
}

fn open_repos(paths: &[PathBuf]) -> Result<Vec<(String, GitRepository)>, TaskRunError> {
    paths
        .iter()
        .map(|path| {
            let repo = GitRepository::open(path).map_err(|e| TaskRunError::Repo {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
            let name = repo
                .root()
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            Ok((name, repo))
        })
        .collect()
}

struct Shared<'a> {
    db_path: &'a Path,
    tasks: &'a [Task],
    settings: &'a TaskRunSettings,
    sandboxed: bool,
    scratch: &'a Path,
    forbidden: &'a [PathBuf],
    queue: Mutex<std::vec::IntoIter<usize>>,
    /// Executions served by the cache, executions run.
    counts: Mutex<(usize, usize)>,
    /// `complete` calls served from the response cache, asked live.
    calls: Mutex<(usize, usize)>,
    /// The environment fingerprint of each language's test runs (part of the
    /// execution cache's key).
    fingerprints: BTreeMap<String, String>,
    /// Each state's coverage map by its key, made or read once per run: a worker
    /// asking for one another is making waits for it.
    maps: Mutex<BTreeMap<String, Arc<Mutex<Option<MapOutcome>>>>>,
    /// Coverage maps made, served from the database, failed.
    map_counts: Mutex<(usize, usize, usize)>,
    /// The interpreter, import path and setup of every test run.
    environment: TestEnvironment,
    /// The import canary's verdict per state and file ([`canary_key`]): one run per
    /// state, not per task.
    canaries: Mutex<BTreeMap<String, Option<Canary>>>,
}

/// A state's coverage map, or why there is none.
type MapOutcome = Result<Arc<CoverageMap>, NoMap>;

/// Why a task's tests are not chosen by a coverage map (said in its selection).
#[derive(Debug, Clone, thiserror::Error)]
enum NoMap {
    /// `--tests-by name`.
    #[error("--tests-by name")]
    ByName,
    /// A language without a map driver.
    #[error("no coverage map for {0} (Python and Go only)")]
    Unsupported(String),
    /// The coverage run failed (shared by the tasks of its state).
    #[error("the coverage map failed: {0}")]
    Failed(Arc<MapError>),
}

struct Worker<'a> {
    shared: &'a Shared<'a>,
    db: Database,
    repos: Vec<(String, GitRepository)>,
    suggester: Option<TaskSuggester>,
    dir: PathBuf,
}

/// A worker's suggester, live or behind the response cache.
enum TaskSuggester {
    Live(Box<dyn Suggester>),
    /// Each sample is keyed under its own 1-based index (the cache's repetition).
    Cached(Box<CachedSuggester>, CacheLog),
}

impl TaskSuggester {
    /// The suggester, keyed for sample `sample` (0-based) when cached.
    fn for_sample(&mut self, sample: usize) -> &mut dyn Suggester {
        match self {
            TaskSuggester::Live(suggester) => suggester.as_mut(),
            TaskSuggester::Cached(cached, _) => {
                cached.set_repetition(sample as u32 + 1);
                cached.as_mut()
            }
        }
    }

    /// `complete` calls served from the cache and asked live since the last call.
    fn take_calls(&mut self) -> (usize, usize) {
        let TaskSuggester::Cached(_, log) = self else {
            return (0, 0);
        };
        log.take()
            .iter()
            .filter(|o| o.call == Call::Complete)
            .fold((0, 0), |(served, asked), o| {
                if o.cached {
                    (served + 1, asked)
                } else {
                    (served, asked + 1)
                }
            })
    }
}

impl Shared<'_> {
    fn work(
        &self,
        index: usize,
        sender: &crossbeam_channel::Sender<Result<StoredTask, TaskRunError>>,
    ) {
        let mut worker = match self.worker(index) {
            Ok(worker) => worker,
            Err(e) => {
                let _ = sender.send(Err(e));
                return;
            }
        };
        loop {
            let next = self.queue.lock().expect("queue lock").next();
            let Some(task_index) = next else { break };
            let result = worker.run_task(task_index);
            if sender.send(result).is_err() {
                break;
            }
        }
        if let Some(suggester) = &mut worker.suggester {
            suggester.for_sample(0).shutdown();
        }
    }

    fn worker(&self, index: usize) -> Result<Worker<'_>, TaskRunError> {
        let dir = self.scratch.join(format!("worker-{index}"));
        let ask = dir.join("ask");
        std::fs::create_dir_all(&ask).map_err(TaskRunError::Scratch)?;
        let suggester = if self.settings.suggester == ORACLE {
            None
        } else {
            let live = self.live_suggester(&ask)?;
            let cache = self.settings.cache;
            Some(
                if cache == CacheMode::Off || self.settings.suggester.starts_with("builtin:") {
                    TaskSuggester::Live(live)
                } else {
                    let path = self.settings.cache_db.as_deref().unwrap_or(self.db_path);
                    // Entries stored by a task run belong to no replay run (run id 0).
                    let store = ResponseCache::new(Database::open(path)?, 0);
                    let log = CacheLog::default();
                    let cached = CachedSuggester::new(
                        live,
                        Box::new(store),
                        &self.settings.suggester,
                        1,
                        cache,
                        log.clone(),
                    );
                    TaskSuggester::Cached(Box::new(cached), log)
                },
            )
        };
        Ok(Worker {
            shared: self,
            db: Database::open_existing(self.db_path)?,
            repos: open_repos(&self.settings.repos)?,
            suggester,
            dir,
        })
    }

    /// The run's suggester, never cached, asked in `ask` (inside its sandbox when the
    /// run has one).
    fn live_suggester(&self, ask: &Path) -> Result<Box<dyn Suggester>, TaskRunError> {
        let sandbox = self.sandboxed.then(|| {
            let command = (self.settings.suggester.strip_prefix("cmd:"))
                .or_else(|| self.settings.suggester.strip_prefix("lsp:"))
                .unwrap_or("");
            let mut read_only = command_paths(command, self.forbidden);
            if let Ok(exe) = std::env::current_exe() {
                read_only.push(exe);
            }
            Sandbox {
                scratch: ask.to_path_buf(),
                read_only,
                writable: Vec::new(),
                network: false,
            }
        });
        let options = BuildOptions {
            timeout: Duration::from_secs_f64(self.settings.call_timeout),
            jail: Jail::in_scratch(
                sandbox,
                ask,
                self.settings.limits(),
                Environment::passing(&self.settings.env),
            ),
            ..BuildOptions::default()
        };
        build(&self.settings.suggester, &options).map_err(|e| TaskRunError::Settings(e.to_string()))
    }

    /// The limits and sandbox of every test run.
    fn exec_limits(&self) -> ExecLimits {
        exec_limits(self.settings, self.sandboxed, self.environment.clone())
    }

    /// Refuses the run before any task is scored when the tests would not import the
    /// checkout's own file: the canary of the first task left whose file is a Python
    /// module (at most [`CANARY_TRIES`] checkouts are looked at). No setup runs for
    /// it: the canary reads where a module is found, no package code runs, and the
    /// setup writes only inside the checkout; each task's own canary runs after it.
    fn first_canary(&self) -> Result<(), TaskRunError> {
        let left: Vec<usize> = self.queue.lock().expect("queue lock").as_slice().to_vec();
        let candidates = left
            .iter()
            .map(|&i| &self.tasks[i])
            .filter(|t| t.language == "python" && t.file.ends_with(".py"))
            .take(CANARY_TRIES);
        let repos = open_repos(&self.settings.repos)?;
        let limits = self.exec_limits();
        let cache = self.scratch.join("cache");
        let dir = self.scratch.join("probe-canary");
        let mut verdict = None;
        for (n, task) in candidates.enumerate() {
            let looked = (|| {
                let checkout =
                    Checkout::create(task, repo_for(&repos, task), &dir.join(n.to_string()))?;
                checkout.canary(task, &limits, &cache)
            })();
            // Each verdict found serves its state's tasks too.
            if let Ok(found) = &looked {
                let mut canaries = self.canaries.lock().expect("canary lock");
                canaries.insert(canary_key(task), found.clone());
            }
            match looked {
                Ok(Some(found)) => {
                    verdict = Some(found);
                    break;
                }
                Ok(None) => {}
                // A task that cannot be checked out or run is the task's to report.
                Err(_) => {}
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        match verdict.as_ref().and_then(Canary::shadowing) {
            Some(why) => Err(TaskRunError::Settings(format!("{why}; nothing was run"))),
            None => Ok(()),
        }
    }

    /// The environment fingerprint of each language of the tasks left, probed once
    /// per run like a test run.
    fn environment(&self) -> Result<BTreeMap<String, String>, TaskRunError> {
        let left: Vec<usize> = self.queue.lock().expect("queue lock").as_slice().to_vec();
        let mut languages: Vec<&str> = left
            .iter()
            .map(|&i| self.tasks[i].language.as_str())
            .collect();
        languages.sort_unstable();
        languages.dedup();
        let limits = self.exec_limits();
        let mut fingerprints = BTreeMap::new();
        for language in languages {
            let dir = self.scratch.join("probe-env").join(language);
            let fingerprint = environment_fingerprint(
                language,
                self.settings.test_command.as_deref(),
                &dir,
                &limits,
                &self.scratch.join("cache"),
            )
            .map_err(|e| {
                TaskRunError::Settings(format!("probing the {language} test environment: {e}"))
            })?;
            let _ = std::fs::remove_dir_all(&dir);
            fingerprints.insert(language.to_string(), fingerprint);
        }
        Ok(fingerprints)
    }

    /// Refuses, before the first task, a suggester that does not answer `complete`:
    /// one call for `task` in an empty worktree, never cached, its answer dropped.
    /// `openai:` and `lsp:` suggesters implement the call and are not asked (a model's
    /// call costs; a language server is slow to start); with `--cache read-only`
    /// nothing is started.
    fn probe_complete(&self, task: &Task) -> Result<(), TaskRunError> {
        let spec = self.settings.suggester.as_str();
        let implemented = ["openai:", "lsp:"].iter().any(|p| spec.starts_with(p));
        if spec == ORACLE || implemented || self.settings.cache == CacheMode::ReadOnly {
            return Ok(());
        }
        let ask = self.scratch.join("probe");
        std::fs::create_dir_all(&ask).map_err(TaskRunError::Scratch)?;
        let mut live = self.live_suggester(&ask)?;
        let worktree = ask.to_string_lossy().into_owned();
        let init = InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            worktree: worktree.clone(),
            language: Some(task.language.clone()),
            project: None,
            trajectory: "probe".to_string(),
            revealed: Default::default(),
        };
        // Any other failure is the tasks' to record, call by call.
        let answered = match live.initialize(&init) {
            Ok(_) => live.complete(&complete_params(task, &worktree)),
            Err(e) => Err(e),
        };
        live.shutdown();
        let _ = std::fs::remove_dir_all(&ask);
        match answered {
            Err(SuggestError::Unsupported { .. }) => Err(TaskRunError::Settings(format!(
                "suggester {spec} does not answer `complete`, the call tasks run asks: use one that fills a hole (builtin:noop, builtin:retrieve, builtin:oracle, openai:, lsp:, or a cmd: process implementing `complete`)"
            ))),
            _ => Ok(()),
        }
    }
}

impl Worker<'_> {
    fn run_task(&mut self, index: usize) -> Result<StoredTask, TaskRunError> {
        let task = &self.shared.tasks[index];
        let mut stored = StoredTask {
            index,
            task_id: task.id.clone(),
            scenario: task.scenario,
            dependency: task.dependency,
            context_from: task.context.as_ref().map(|c| c.from),
            leaked: task.context.as_ref().is_some_and(|c| c.leaked),
            language: task.language.clone(),
            valid: false,
            invalid_reason: None,
            truth_output: None,
            truth_ms: None,
            excluded: None,
            excluded_output: None,
            selection: None,
            answers: Vec::new(),
        };
        let exec_dir = self.dir.join("exec").join(format!("task-{index}"));
        let result = self.run_valid(task, &exec_dir, &mut stored);
        let _ = std::fs::remove_dir_all(&exec_dir);
        let _ = std::fs::remove_dir_all(self.dir.join("ask").join(format!("task-{index}")));
        match result {
            Ok(()) => {}
            // A task that cannot be run is invalid, with the reason; the run goes on.
            Err(TaskError::Exec(e)) => {
                stored.valid = false;
                stored.invalid_reason = Some(e.to_string());
            }
            Err(TaskError::Store(e)) => return Err(e.into()),
        }
        Ok(stored)
    }

    fn run_valid(
        &mut self,
        task: &Task,
        exec_dir: &Path,
        stored: &mut StoredTask,
    ) -> Result<(), TaskError> {
        let settings = self.shared.settings;
        let limits = self.shared.exec_limits();
        let checkout = Checkout::create(task, repo_for(&self.repos, task), exec_dir)?;
        let cache = self.shared.scratch.join("cache");
        // The setup once per checkout, then the canary: a task whose tests would not
        // import its own file is invalid (the run's first one refused the run).
        if let Some(failed) = checkout.set_up(&limits, &cache)? {
            stored.invalid_reason = Some("setup failed".to_string());
            stored.truth_output = Some(failed.output_tail);
            return Ok(());
        }
        let canary = self.canary(task, &checkout, &limits, &cache)?;
        if let Some(why) = canary.as_ref().and_then(Canary::shadowing) {
            stored.invalid_reason = Some("shadowed".to_string());
            stored.truth_output = Some(why);
            return Ok(());
        }
        let run_key = self.run_key(task, &limits);
        let map = match settings.tests_by {
            TestsBy::Name => Err(NoMap::ByName),
            TestsBy::Coverage if !supported(&task.language) => {
                Err(NoMap::Unsupported(task.language.clone()))
            }
            TestsBy::Coverage => self.coverage_map(task, &checkout, &run_key)?,
        };
        let (tests, selection) = select(
            task,
            map.as_deref().map_err(|why| why as &dyn std::fmt::Display),
            settings.max_tests,
        );
        stored.selection = Some(selection);
        let task = &Task {
            tests,
            ..task.clone()
        };
        let argv = (limits.environment)
            .with_interpreter(test_command(task, settings.test_command.as_deref())?);
        let command_key = format!(
            "{} [{run_key}]",
            shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_default(),
        );
        let state = state_hash(task);
        let (truth, truth_cached) = self.execute(
            &checkout,
            task,
            Filling::Answer(&task.ground_truth),
            &argv,
            &limits,
            &state,
            &command_key,
        )?;
        stored.truth_output = Some(truth.output_tail.clone());
        stored.truth_ms = Some(if truth_cached { 0.0 } else { truth.duration_ms });
        if !truth.passed {
            stored.invalid_reason = Some(truth_failure(&truth, settings.timeout));
            return Ok(());
        }
        // Fail before, pass after: tests that a do-nothing answer passes cannot tell a
        // right answer from none, so the task is left out (non-discriminating).
        for (filling, what) in do_nothing(task) {
            let (execution, _) = self.execute(
                &checkout,
                task,
                filling,
                &argv,
                &limits,
                &state,
                &command_key,
            )?;
            if execution.passed {
                stored.excluded = Some(format!("{what} passes its tests"));
                stored.excluded_output = Some(execution.output_tail);
                return Ok(());
            }
        }
        stored.valid = true;
        self.test_answers(
            &checkout,
            task,
            &argv,
            &limits,
            &state,
            &command_key,
            stored,
        )
    }

    /// Everything that may change a test run's outcome besides the command: its
    /// limits, the sandbox, the variables passed, the setup and the environment's
    /// fingerprint.
    fn run_key(&self, task: &Task, limits: &ExecLimits) -> String {
        let settings = self.shared.settings;
        format!(
            "timeout {} s, {}, sandbox {}, env {}, {}, environment {}",
            settings.timeout,
            settings.limits().describe(),
            self.shared.sandboxed,
            settings.env.join(" "),
            limits.environment.describe(),
            (self.shared.fingerprints.get(&task.language)).map_or("none", String::as_str)
        )
    }

    /// The suggester's answers to a valid task, each run through the task's tests.
    #[allow(clippy::too_many_arguments)]
    fn test_answers(
        &mut self,
        checkout: &Checkout,
        task: &Task,
        argv: &[String],
        limits: &ExecLimits,
        state: &str,
        command_key: &str,
        stored: &mut StoredTask,
    ) -> Result<(), TaskError> {
        let answers = self.ask(task, stored.index)?;
        for (sample, (text, error, complete_ms)) in answers.into_iter().enumerate() {
            let (execution, cached) = self.execute(
                checkout,
                task,
                Filling::Answer(&text),
                argv,
                limits,
                state,
                command_key,
            )?;
            let scores = score_answer(task, &text);
            stored.answers.push(StoredAnswer {
                sample: sample as u32,
                text,
                error,
                passed: execution.passed,
                exit_code: execution.exit_code,
                timed_out: execution.timed_out,
                limit: execution.limit,
                cached,
                output_tail: execution.output_tail,
                scores,
                complete_ms,
                test_ms: if cached { 0.0 } else { execution.duration_ms },
            });
        }
        Ok(())
    }

    /// The canary of the task's tests (what they import), run once per key for the
    /// whole run.
    fn canary(
        &self,
        task: &Task,
        checkout: &Checkout,
        limits: &ExecLimits,
        cache: &Path,
    ) -> Result<Option<Canary>, TaskError> {
        let key = canary_key(task);
        let known = self
            .shared
            .canaries
            .lock()
            .expect("canary lock")
            .get(&key)
            .cloned();
        Ok(match known {
            Some(canary) => canary,
            None => {
                let canary = checkout.canary(task, limits, cache)?;
                let mut canaries = self.shared.canaries.lock().expect("canary lock");
                canaries.insert(key, canary.clone());
                canary
            }
        })
    }

    /// The coverage map of `task`'s state: made once per run in `checkout` (the ground
    /// truth in place), or read from the database (`--exec-cache read-write`, where a
    /// new one is stored); `Err` says why there is none (the task falls back to names).
    fn coverage_map(
        &self,
        task: &Task,
        checkout: &Checkout,
        run_key: &str,
    ) -> Result<MapOutcome, TaskError> {
        let shared = self.shared;
        let settings = shared.settings;
        let held = (task.state.commit.as_deref())
            .zip(repo_for(&self.repos, task))
            .and_then(|(commit, repo)| repo.commit_tree(commit).ok())
            .is_some_and(|tree| tree.holds(&task.file, truth_text(task).as_bytes()));
        let custom = settings.test_command.as_deref();
        let environment = &shared.environment;
        let key = map_key(
            &map_state(task, held),
            &task.language,
            custom,
            environment,
            run_key,
        );
        let slot = (shared.maps.lock().expect("maps lock"))
            .entry(key.clone())
            .or_default()
            .clone();
        let mut slot = slot.lock().expect("map lock");
        if let Some(outcome) = slot.as_ref() {
            return Ok(outcome.clone());
        }
        let use_cache = settings.exec_cache == ExecCache::ReadWrite;
        let stored = if use_cache {
            self.db.coverage_map(&key)?
        } else {
            None
        };
        // One this version cannot read is made again.
        if let Some(map) = stored.and_then(|json| serde_json::from_str::<CoverageMap>(&json).ok()) {
            shared.map_counts.lock().expect("map counts lock").1 += 1;
            return Ok(slot.insert(Ok(Arc::new(map))).clone());
        }
        checkout.fill(task, Filling::Answer(&task.ground_truth))?;
        let limits = ExecLimits {
            timeout: Duration::from_secs_f64(settings.coverage_timeout),
            ..shared.exec_limits()
        };
        let cache = shared.scratch.join("cache");
        let started = std::time::Instant::now();
        let made = make_map(
            &task.language,
            custom,
            checkout,
            &limits,
            &cache,
            &key[..16],
        );
        let mut counts = shared.map_counts.lock().expect("map counts lock");
        let outcome = match made {
            Ok(map) => {
                counts.0 += 1;
                if use_cache {
                    let json = serde_json::to_string(&map).expect("a map serializes");
                    let ms = started.elapsed().as_secs_f64() * 1000.0;
                    self.db.store_coverage_map(&key, &json, ms)?;
                }
                Ok(Arc::new(map))
            }
            Err(e) => {
                counts.2 += 1;
                Err(NoMap::Failed(Arc::new(e)))
            }
        };
        drop(counts);
        Ok(slot.insert(outcome).clone())
    }

    /// The samples of `task`: (text, the call's failure, call ms) each.
    fn ask(
        &mut self,
        task: &Task,
        index: usize,
    ) -> Result<Vec<(String, Option<String>, f64)>, TaskError> {
        let samples = self.shared.settings.samples.max(1) as usize;
        let Some(suggester) = self.suggester.as_mut() else {
            return Ok(vec![(task.ground_truth.clone(), None, 0.0); samples]);
        };
        let ask_dir = self.dir.join("ask").join(format!("task-{index}"));
        let checkout = Checkout::create(task, repo_for(&self.repos, task), &ask_dir)?;
        let worktree = checkout.root().to_string_lossy().into_owned();
        let init = InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            worktree: worktree.clone(),
            language: Some(task.language.clone()),
            project: None,
            trajectory: format!("task-{index}"),
            revealed: Default::default(),
        };
        let mut answers = Vec::with_capacity(samples);
        if let Err(e) = suggester.for_sample(0).initialize(&init) {
            let error = format!("initialize: {e}");
            return Ok(vec![(String::new(), Some(error), 0.0); samples]);
        }
        let params = complete_params(task, &worktree);
        for sample in 0..samples {
            answers.push(match complete_call(suggester.for_sample(sample), &params) {
                Ok((result, elapsed)) => (result.text, None, elapsed.as_secs_f64() * 1000.0),
                Err(e) => (String::new(), Some(e.to_string()), 0.0),
            });
        }
        suggester.for_sample(0).shutdown();
        let (served, asked) = suggester.take_calls();
        let mut calls = self.shared.calls.lock().expect("calls lock");
        calls.0 += served;
        calls.1 += asked;
        Ok(answers)
    }

    #[allow(clippy::too_many_arguments)]
    fn execute(
        &self,
        checkout: &Checkout,
        task: &Task,
        filling: Filling,
        argv: &[String],
        limits: &ExecLimits,
        state: &str,
        command_key: &str,
    ) -> Result<(Execution, bool), TaskError> {
        let answer_key = filling.key(task);
        let use_cache = self.shared.settings.exec_cache == ExecCache::ReadWrite;
        let hit = if use_cache {
            self.db.cached_execution(state, &answer_key, command_key)?
        } else {
            None
        };
        if let Some(hit) = hit {
            self.shared.counts.lock().expect("counts lock").0 += 1;
            return Ok((
                Execution {
                    passed: hit.passed,
                    exit_code: hit.exit_code,
                    timed_out: hit.timed_out,
                    limit: hit.limit,
                    output_tail: hit.output_tail,
                    duration_ms: hit.duration_ms,
                },
                true,
            ));
        }
        checkout.fill(task, filling)?;
        let cache = self.shared.scratch.join("cache");
        let execution = checkout.run(argv, limits, &cache)?;
        self.shared.counts.lock().expect("counts lock").1 += 1;
        if !use_cache {
            return Ok((execution, false));
        }
        self.db.store_execution(
            state,
            &answer_key,
            command_key,
            &CachedExecution {
                passed: execution.passed,
                exit_code: execution.exit_code,
                timed_out: execution.timed_out,
                limit: execution.limit,
                output_tail: execution.output_tail.clone(),
                duration_ms: execution.duration_ms,
            },
        )?;
        Ok((execution, false))
    }
}

/// The do-nothing answers of `task`, each with how a reason names it: the empty hole
/// and, when the task hides part of the file (incomplete suffix), the file as cut. (An
/// inner-block task as cut is its empty hole.)
fn do_nothing(task: &Task) -> Vec<(Filling<'static>, &'static str)> {
    let mut fillings = vec![(Filling::Answer(""), "the empty answer")];
    if task.state_suffix.is_some() {
        fillings.push((Filling::AsCut, "the state as cut"));
    }
    fillings
}

/// Why the ground truth does not pass its tests: they timed out (after `timeout`
/// seconds), hit a limit, or failed.
fn truth_failure(truth: &Execution, timeout: f64) -> String {
    if truth.timed_out {
        format!("the ground truth's tests timed out after {timeout} s")
    } else if let Some(limit) = &truth.limit {
        format!("the ground truth's tests hit their {limit}")
    } else {
        format!(
            "the ground truth fails its tests (exit {})",
            truth
                .exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "by signal".into())
        )
    }
}

/// What decides where the tests import `task`'s file from: its state's commit and
/// files and the file's path (not the hole: the canary runs no package code).
fn canary_key(task: &Task) -> String {
    let mut parts = vec![task.state.commit.clone().unwrap_or_default()];
    for file in &task.state.files {
        parts.push(crate::engine::task::execute::answer_hash(&file.path));
        parts.push(crate::engine::task::execute::answer_hash(&file.text));
    }
    parts.push(task.file.clone());
    crate::engine::task::execute::answer_hash(&parts.join("\n"))
}

/// The repository of `task`: the one named like it, else the only one given.
fn repo_for<'r>(repos: &'r [(String, GitRepository)], task: &Task) -> Option<&'r GitRepository> {
    repos
        .iter()
        .find(|(name, _)| *name == task.repository)
        .or(if repos.len() == 1 {
            repos.first()
        } else {
            None
        })
        .map(|(_, repo)| repo)
}

/// The tasks of a task file (JSON Lines; blank lines skipped); the first bad line is
/// an error naming it.
pub fn parse_task_file(text: &str) -> Result<Vec<Task>, TaskRunError> {
    let mut tasks = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let task: Task = serde_json::from_str(line)
            .map_err(|e| TaskRunError::Settings(format!("line {}: not a task: {e}", number + 1)))?;
        tasks.push(task);
    }
    Ok(tasks)
}

/// The `complete` call's params for `task` in `worktree`: its hints, then its retrieved context.
pub fn complete_params(task: &Task, worktree: &str) -> CompleteParams {
    let context = task
        .hints
        .iter()
        .chain(task.context.iter().flat_map(|c| c.chunks.iter()))
        .map(|chunk| CompleteContext {
            file: chunk.file.clone(),
            start_line: chunk.start_line,
            end_line: chunk.end_line,
            text: chunk.text.clone(),
        })
        .collect();
    CompleteParams {
        task: task.id.clone(),
        worktree: worktree.to_string(),
        language: Some(task.language.clone()),
        file: task.file.clone(),
        line: task.cursor.line,
        column: task.cursor.column,
        prefix: task.prefix.clone(),
        suffix: task.suffix.clone(),
        scenario: key(&task.scenario),
        context,
    }
}

/// The snake_case key of a task enum (its serialized name).
fn key<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

enum TaskError {
    Exec(ExecError),
    Store(crate::store::StoreError),
}

impl From<ExecError> for TaskError {
    fn from(e: ExecError) -> TaskError {
        TaskError::Exec(e)
    }
}

impl From<crate::store::StoreError> for TaskError {
    fn from(e: crate::store::StoreError) -> TaskError {
        TaskError::Store(e)
    }
}
