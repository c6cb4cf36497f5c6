//! Executing a run: a pool of workers, each with its own suggester and database
//! connection, replays the run's pending trajectories (resuming those with stored
//! steps), stores every step as it finishes, then gathers the reads proxies recorded
//! behind the suggesters. Scratch directories are removed on SIGINT/SIGTERM too.
//!
//! The observer stores each step as it finishes and never keeps them: a finished
//! trajectory's steps are printed back from the store a page at a time
//! (`store::run_read`), and a step names at most [`ALLOWED_IDS_KEPT`] allowed edits.
//! A panic fails its trajectory, not the run; a run stopped by an error or a panic is
//! marked interrupted. A commit of a repository on this machine replays in a checkout
//! of its parent. [`execute_group`] runs the repetitions of a `--repetitions N` replay
//! (one run each) in order; [`execute`] wraps each worker's suggester in the response
//! cache (`suggest::cache`) when the run uses one and records per call whether it was
//! served, with the suggester's own latency.

use crate::store::SessionRead;
use crate::store::{RunStatus, SessionStatus, TrajectoryStatus};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use super::plan::SandboxState;
use super::scratch::RunScratch;
use super::store::NewSteps;
use super::worker::{WorkerPlace, build_judge, build_suggester, forbidden_paths, sandbox_paths};
use super::{RunError, RunEvents, RunRead, RunSettings, RunStore, error_chain};
use crate::base::sys::sandbox::Sandbox;
use crate::core::trajectory::{EditIndex, SessionKind, Trajectory};
use crate::engine::history::{CommitSource, GitRepository};
use crate::engine::judge::Judge;
use crate::engine::replay::context::attribute_lsp_reads;
use crate::engine::replay::state::ReplayState;
use crate::engine::replay::{
    DirWorkspace, HistorianLog, ObserverError, ReplayConfig, ReplayHooks, ReplayObserver,
    StepRecord, replay,
};
use crate::engine::suggest::cache::{CacheLog, CacheMode, CachedSuggester};
use crate::engine::suggest::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, Revealed, SuggestParams,
    SuggestResult,
};
use crate::engine::suggest::{
    Call, CallFailure, FailureKind, GoldFeed, StepRead, SuggestError, Suggester,
};
use crate::store::{
    Database, ResponseCache, StepFailure, StoreError, StoredContent, StoredPrediction, StoredStep,
};

/// What an executed run leaves for its caller to judge.
#[derive(Debug, Clone, PartialEq)]
pub struct Executed {
    /// Trajectories that failed during replay.
    pub failed: usize,
    /// `Some(summary)` when the suggester process was called and never answered.
    pub never_answered: Option<String>,
}

/// Readies this process for untrusted process trees (replay's suggesters, `tasks
/// run`'s tests, `complete`'s suggester): Ctrl-C and SIGTERM kill them (their cgroups
/// too) and remove replay's scratch directories; their orphans are adopted to be killed.
pub fn install_process_guards() -> Result<(), RunError> {
    super::scratch::clean_up_on_signals()?;
    // This process's only children are such trees: it adopts their orphans to kill them.
    crate::base::sys::jail::become_subreaper();
    Ok(())
}

/// Replays every unfinished run of the repetition group run `first` starts (just that
/// run when it has no repetitions), each with its stored settings confirmed by what
/// the command line gives (`given`: [`RunSettings::confirmed_by`]), in repetition
/// order: [`execute`] for each.
pub fn execute_group(
    store: &mut dyn RunStore,
    db_path: &Path,
    first: i64,
    given: &super::Reasserted,
    jobs: usize,
    events: &dyn RunEvents,
) -> Result<Executed, RunError> {
    let runs = store.run_repetitions(first)?;
    let mut all = Executed {
        failed: 0,
        never_answered: None,
    };
    for &run in &runs {
        if store.run(run)?.status == RunStatus::Done {
            continue;
        }
        // Every run of the group is checked: a database may hold any settings in any row.
        let settings = RunSettings::resumed(&*store, run, given)?;
        if runs.len() > 1 {
            let repetition = store.run(run)?.repetition;
            events.note(&format!(
                "repetition {repetition} of {}: run {run}",
                runs.len()
            ));
        }
        let executed = execute(store, db_path, run, &settings, jobs, events)?;
        all.failed += executed.failed;
        if all.never_answered.is_none() {
            all.never_answered = executed.never_answered;
        }
    }
    Ok(all)
}

/// Replays the pending trajectories of run `run` (stored in `store`, the database at
/// `db_path`) with `jobs` workers; each trajectory's new steps go to
/// [`RunEvents::replayed`] as it finishes. The run is marked done at the end.
pub fn execute(
    store: &mut dyn RunStore,
    db_path: &Path,
    run: i64,
    settings: &RunSettings,
    jobs: usize,
    events: &dyn RunEvents,
) -> Result<Executed, RunError> {
    store.reopen_run(run)?;
    // Whatever stops this run before it is done (an error, a panic) marks it
    // interrupted; a finished run disarms it.
    let mut unfinished = Unfinished {
        db_path,
        run: Some(run),
    };
    // (position in the run, key, trajectory JSON): the position names the trajectory
    // to the suggester unless `--reveal commit`.
    let pending: Vec<(usize, String, Option<String>)> = store
        .run_trajectories(run)?
        .into_iter()
        // A shard run's trajectories keep their places in the whole plan, so each has
        // the name it has in a single-machine run.
        .filter(|t| !matches!(t.status, TrajectoryStatus::Done | TrajectoryStatus::Failed))
        .map(|t| (t.position + 1, t.key, t.text))
        .collect();
    // Scratch directories and runs that a killed process left behind go first.
    super::scratch::remove_abandoned(events);
    // One scratch directory for the run, registered before anything is written into
    // it; each worker gets a private directory inside (its sandbox sees only that).
    let scratch = RunScratch::create(db_path, run)?;
    let scratch_root = scratch.path().to_path_buf();
    let repetition = store.run(run)?.repetition;
    let cache_db = settings.cache_db.as_deref().unwrap_or(db_path);
    let sandboxed = settings.sandbox == SandboxState::Bwrap;
    let (read_only, writable) = if sandboxed {
        sandbox_mounts(settings, db_path, cache_db, &scratch_root, &pending)?
    } else {
        Default::default()
    };
    // The texts are read again by the worker that replays each one: a run's
    // trajectories are not all held while it runs.
    let pending: Vec<(usize, String)> = pending.into_iter().map(|(p, k, _)| (p, k)).collect();
    let (tx, rx) = crossbeam_channel::unbounded::<(String, Result<Option<usize>, RunError>)>();
    let jobs = jobs.clamp(1, pending.len().max(1));
    events.started(pending.len());
    let workers = Workers {
        run,
        repetition,
        settings,
        db_path,
        cache_db,
        pending: &pending,
        next: AtomicUsize::new(0),
        worktrees: Mutex::new(Vec::new()),
        calls: CallCounts::default(),
        events,
    };
    let mut failed = 0;
    std::thread::scope(|scope| -> Result<(), RunError> {
        for worker in 0..jobs {
            let tx = tx.clone();
            let workers = &workers;
            let dir = scratch_root.join(format!("w{worker}"));
            let place = WorkerPlace {
                sandbox: sandboxed.then(|| Sandbox {
                    scratch: dir.clone(),
                    read_only: read_only.clone(),
                    writable: writable.clone(),
                    network: settings.allow_network,
                }),
                dir,
            };
            std::fs::create_dir(&place.dir).map_err(RunError::io(format!(
                "cannot create {}",
                place.dir.display()
            )))?;
            scope.spawn(move || workers.work(&place, &tx));
        }
        drop(tx);
        for (key, result) in rx {
            match result {
                // Printed from the store, a page at a time (never all in memory).
                Ok(first) => {
                    let new = NewSteps { run, key, first };
                    events.replayed(&new, &mut new.pages(&*store))?
                }
                Err(error) => {
                    events.failed(&key, &error_chain(&error));
                    failed += 1;
                }
            }
        }
        Ok(())
    })?;
    // Every suggester is shut down now, so the proxies in front of their servers end.
    let Workers {
        worktrees, calls, ..
    } = workers;
    let worktrees = worktrees.into_inner().unwrap_or_default();
    collect_lsp_reads(store, run, &worktrees)?;
    drop(scratch);
    store.finish_run(run, RunStatus::Done)?;
    unfinished.run = None;
    Ok(Executed {
        failed,
        never_answered: calls.never_answered(),
    })
}

/// The (read-only, writable) paths of a sandboxed run's workers: nothing forbidden
/// shown (the run's database and scratch directory, each `pending` trajectory's
/// workspace, and a separate cache database).
fn sandbox_mounts(
    settings: &RunSettings,
    db_path: &Path,
    cache_db: &Path,
    scratch_root: &Path,
    pending: &[(usize, String, Option<String>)],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), RunError> {
    let mut forbidden = forbidden_paths(
        db_path,
        scratch_root,
        &pending
            .iter()
            .map(|(_, k, _)| k.as_str())
            .collect::<Vec<_>>(),
        // (Each trajectory parsed to find its workspace.)
        &pending
            .iter()
            .filter_map(|(_, _, t)| t.as_deref())
            .collect::<Vec<_>>(),
    );
    // A separate cache database holds the answers of other runs: never shown either.
    if settings.cache_db.is_some() {
        forbidden.extend(forbidden_paths(cache_db, scratch_root, &[], &[]));
        forbidden.sort();
        forbidden.dedup();
    }
    sandbox_paths(settings, &forbidden)
}

/// What a run's workers share: the run, its settings and databases, the queue of
/// trajectories, and what they gather for the run.
struct Workers<'a> {
    run: i64,
    repetition: u32,
    settings: &'a RunSettings,
    db_path: &'a Path,
    /// The response cache's database (the run's unless `--cache-db`).
    cache_db: &'a Path,
    /// (position in the run, key) of the trajectories to replay.
    pending: &'a [(usize, String)],
    /// The next of `pending` to take.
    next: AtomicUsize,
    /// (key, worktree, reads database) of every trajectory replayed, to collect proxied
    /// servers' reads.
    worktrees: Mutex<Vec<(String, String, PathBuf)>>,
    calls: CallCounts,
    events: &'a dyn RunEvents,
}

impl Workers<'_> {
    /// Whether the suggester's calls go through the response cache (built-ins never do,
    /// even when a judge's answers are cached).
    fn suggester_cached(&self) -> bool {
        self.settings.cache != CacheMode::Off && !self.settings.suggester.starts_with("builtin:")
    }

    /// The run's judge for one worker, behind the response cache (`--cache`), if the run
    /// has one.
    fn judge(&self) -> Result<Option<Judge>, RunError> {
        let Some(judge) = build_judge(self.settings)? else {
            return Ok(None);
        };
        let cache = ResponseCache::new(Database::open(self.cache_db)?, self.run);
        Ok(Some(judge.with_cache(
            Box::new(cache),
            self.settings.cache,
            self.repetition,
        )))
    }

    /// One worker: its own connection and suggester, trajectories taken from the queue
    /// until it is empty, each result sent (a failed trajectory stored as failed).
    fn work(
        &self,
        place: &WorkerPlace,
        tx: &crossbeam_channel::Sender<(String, Result<Option<usize>, RunError>)>,
    ) {
        let (run, settings) = (self.run, self.settings);
        // Each worker has its own connection; SQLite serialises the writes.
        let mut db = match Database::open(self.db_path) {
            Ok(db) => db,
            Err(error) => {
                let _ = tx.send((String::new(), Err(error.into())));
                return;
            }
        };
        // One suggester per worker, initialized per trajectory, shut down at the end.
        let cache_log = CacheLog::default();
        let built = build_suggester(settings, Some(place)).and_then(|inner| {
            if !self.suggester_cached() {
                return Ok(inner);
            }
            let cache = ResponseCache::new(Database::open(self.cache_db)?, run);
            let cached: Box<dyn Suggester> = Box::new(CachedSuggester::new(
                inner,
                Box::new(cache),
                &settings.suggester,
                self.repetition,
                settings.cache,
                cache_log.clone(),
            ));
            Ok(cached)
        });
        let mut suggester = match built {
            Ok(built) => built,
            Err(error) => {
                let _ = tx.send((String::new(), Err(error)));
                return;
            }
        };
        let mut judge = match self.judge() {
            Ok(judge) => judge,
            Err(error) => {
                let _ = tx.send((String::new(), Err(error)));
                return;
            }
        };
        loop {
            let i = self.next.fetch_add(1, SeqCst);
            let Some((position, key)) = self.pending.get(i) else {
                suggester.shutdown();
                return;
            };
            // Failures to reach the judge in a row count per trajectory.
            if let Some(judge) = judge.as_mut() {
                judge.new_trajectory();
            }
            let job = Job {
                run,
                position: *position,
                key,
                settings,
                place,
                db_path: self.db_path,
                worktrees: &self.worktrees,
                calls: &self.calls,
                events: self.events,
                cache: self.suggester_cached().then_some(&cache_log),
                judge: judge.as_mut(),
            };
            // A panic fails its trajectory, not the run (nor the other workers).
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                replay_one(&mut db, job, suggester.as_mut())
            }))
            .unwrap_or_else(|panic| Err(RunError::Other(panicked(&*panic))));
            if let Err(error) = &result {
                let _ = db.set_run_trajectory(
                    run,
                    key,
                    TrajectoryStatus::Failed,
                    None,
                    Some(&error_chain(error)),
                );
            }
            if tx.send((key.clone(), result)).is_err() {
                return;
            }
        }
    }
}

/// Marks its run interrupted when dropped armed: the run stopped before it was done
/// (an error returned, a panic unwinding).
struct Unfinished<'a> {
    db_path: &'a Path,
    /// The run, until it is done.
    run: Option<i64>,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if let Some(run) = self.run {
            let reason = if std::thread::panicking() {
                "nextedit panicked before the run finished"
            } else {
                "nextedit stopped on an error before the run finished"
            };
            let _ = Database::open_existing(self.db_path)
                .and_then(|mut db| db.interrupt_run(run, reason));
        }
    }
}

/// A caught panic's message, as a trajectory's error keeps it.
fn panicked(panic: &(dyn std::any::Any + Send)) -> String {
    let message = (panic.downcast_ref::<&str>().copied())
        .or(panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    format!("nextedit panicked while replaying it: {message}")
}

/// The suggester's calls in this replay, to tell a run whose suggester never answered
/// (it could not start, or always failed) from one that answered badly.
#[derive(Default)]
struct CallCounts {
    /// Calls made (`initialize`, `suggest`, `generate`).
    made: AtomicUsize,
    /// Calls answered without error.
    answered: AtomicUsize,
    /// The first failure.
    first_error: Mutex<Option<String>>,
}

impl CallCounts {
    fn add(&self, failure: Option<&CallFailure>) {
        if failure.is_some_and(|f| f.kind == FailureKind::GaveUp) {
            // Not asked at all.
            return;
        }
        self.made.fetch_add(1, SeqCst);
        match failure {
            None => {
                self.answered.fetch_add(1, SeqCst);
            }
            Some(failure) => {
                let mut first = self.first_error.lock().expect("first error lock");
                first.get_or_insert_with(|| failure.to_string());
            }
        }
    }

    /// `Some(summary)` when calls were made and none was answered.
    fn never_answered(&self) -> Option<String> {
        let made = self.made.load(SeqCst);
        (made > 0 && self.answered.load(SeqCst) == 0).then(|| {
            let first = self.first_error.lock().expect("first error lock");
            format!(
                "all {made} calls failed; the first with {}",
                first.as_deref().unwrap_or("?")
            )
        })
    }
}

/// One trajectory for a worker to replay, and where.
struct Job<'a> {
    run: i64,
    /// 1-based position in the run (the trajectory's name for the suggester).
    position: usize,
    key: &'a str,
    settings: &'a RunSettings,
    place: &'a WorkerPlace,
    /// The run's database (a failed `initialize` is stored through a connection of its own).
    db_path: &'a Path,
    /// (key, worktree, reads database) of every trajectory replayed.
    worktrees: &'a Mutex<Vec<(String, String, PathBuf)>>,
    calls: &'a CallCounts,
    events: &'a dyn RunEvents,
    /// What the response cache did for each call, when the run uses one.
    cache: Option<&'a CacheLog>,
    /// The worker's judge (`--judge`).
    judge: Option<&'a mut Judge>,
}

/// The edits already applied by a trajectory's stored steps (initial first): where a
/// resumed replay starts.
fn resume_order(
    store: &dyn RunRead,
    run: i64,
    key: &str,
    trajectory: &Trajectory,
) -> Result<Vec<EditIndex>, RunError> {
    let stored = store.run_steps(run, key)?;
    if stored.is_empty() {
        return Ok(Vec::new());
    }
    // A long trajectory resumes after many stored steps.
    let ids = trajectory.edit_indices();
    let index = |id: &str, what: &str| {
        ids.get(id)
            .copied()
            .ok_or_else(|| RunError::Other(what.to_string()))
    };
    let initial = store
        .run_initial(run, key)?
        .ok_or_else(|| RunError::Other("stored steps without an initial edit".into()))?;
    let mut order = vec![index(
        &initial,
        "stored initial edit not in the trajectory",
    )?];
    for step in &stored {
        order.push(index(&step.applied, "stored step applied an unknown edit")?);
    }
    Ok(order)
}

/// Replays (or resumes) one trajectory of a run; returns the number of its first new
/// step (`None` when it made none): its new steps are in the store from there on.
fn replay_one(
    db: &mut dyn RunStore,
    job: Job<'_>,
    suggester: &mut dyn Suggester,
) -> Result<Option<usize>, RunError> {
    let Job {
        run,
        position,
        key,
        settings,
        place,
        db_path,
        worktrees,
        calls,
        events,
        cache,
        judge,
    } = job;
    let mut trajectory = load_trajectory(db, run, key)?;
    let resume = resume_order(&*db, run, key, &trajectory)?;
    // The worktree lives in the worker's directory (the suggester's sandbox shows that
    // directory), named by the trajectory's position; removed when this one is done.
    let scratch = WorktreeDir(place.dir.join(position.to_string()));
    std::fs::create_dir(&scratch.0).map_err(RunError::io(format!(
        "cannot create {}",
        scratch.0.display()
    )))?;
    // The proxy stores its workspace canonicalized.
    let root = scratch.0.canonicalize().unwrap_or(scratch.0.clone());
    worktrees.lock().expect("worktrees lock").push((
        key.to_string(),
        root.to_string_lossy().into_owned(),
        place.reads_db(),
    ));
    check_out_start(&trajectory, &scratch.0)?;
    let reveal_commit = settings.reveal.contains(&super::Reveal::Commit);
    let config = replay_config(settings, &trajectory);
    // Historian's results describe edits on one base (a commit's).
    let sequential = trajectory.has_sequential_edits();
    if settings.historian_json.is_some() && sequential {
        events.note(&format!(
            "{key}: no Historian results file: its format needs a commit's edits, and this session's edits are sequential"
        ));
    }
    db.set_run_trajectory(run, key, TrajectoryStatus::Running, None, None)?;
    // Historian's file needs every step in one go: not written for a resumed trajectory.
    let historian = (settings.historian_json.is_some() && resume.is_empty() && !sequential)
        .then(HistorianLog::default);
    // The suggester knows the trajectory by an opaque run-local name: a commit's sha
    // (or a session's id) only with `--reveal commit`. (Renamed in place, and back
    // after: a long trajectory is not copied for its name.)
    let own_id = (!reveal_commit)
        .then(|| std::mem::replace(&mut trajectory.session.id, format!("trajectory-{position}")));
    // Built-ins always answer; processes and endpoints may never do.
    let counted = (!settings.suggester.starts_with("builtin:")).then_some(calls);
    let mut recorder = RunRecorder {
        store: &mut *db,
        run,
        key,
        trajectory: &trajectory,
        first: None,
        historian,
        events,
        cache,
        calls: counted,
        judge,
    };
    let mut suggester = RecordInitialize {
        inner: suggester,
        db_path,
        run,
        key,
        events,
        calls: counted,
    };
    let outcome = replay(
        &trajectory,
        &mut suggester,
        &mut DirWorkspace::new(scratch.0.as_path()),
        &config,
        ReplayHooks {
            resume: &resume,
            observer: &mut recorder,
        },
    )?;
    // A trajectory without steps still had its `initialize`.
    recorder
        .record_cache_use(None)
        .map_err(|e| RunError::Other(e.to_string()))?;
    let RunRecorder {
        first, historian, ..
    } = recorder;
    if let Some(id) = own_id {
        trajectory.session.id = id;
    }
    if let (Some(dir), Some(log)) = (&settings.historian_json, &historian) {
        write_historian(dir, settings, &trajectory, log, &scratch.0)?;
    } else if settings.historian_json.is_some() && !sequential {
        events.note(&format!(
            "{key}: resumed, so no Historian results file (it needs every step of one replay)"
        ));
    }
    db.set_run_trajectory(run, key, TrajectoryStatus::Done, None, None)?;
    if let Some(error) = &outcome.initialize_error {
        events.note(&format!("{key}: initialize failed: {error}"));
    }
    Ok(first)
}

/// The stored trajectory `key` of `run`, without its edits' analysis (which no step
/// reads: a long derived commit's bulk), its paths checked.
fn load_trajectory(db: &dyn RunStore, run: i64, key: &str) -> Result<Trajectory, RunError> {
    let text = (db.run_trajectory_text(run, key)?)
        .ok_or_else(|| RunError::Other(format!("cannot read {key}")))?;
    let mut trajectory =
        Trajectory::from_json_lean(&text).map_err(|source| RunError::NotATrajectory {
            what: key.to_string(),
            source,
        })?;
    drop(text);
    // Checked when the run was created; again for runs stored by older builds.
    trajectory
        .normalize_paths()
        .map_err(|e| RunError::Other(format!("{key}: unsafe file path: {}", error_chain(&e))))?;
    Ok(trajectory)
}

/// The trajectory's Historian results file in `dir` (`--historian-json`), from the
/// log of its replay in `worktree`.
fn write_historian(
    dir: &Path,
    settings: &RunSettings,
    trajectory: &Trajectory,
    log: &HistorianLog,
    worktree: &Path,
) -> Result<(), RunError> {
    std::fs::create_dir_all(dir)
        .map_err(RunError::io(format!("cannot create {}", dir.display())))?;
    let name = HistorianLog::file_name(trajectory, &settings.suggester);
    let path = dir.join(if settings.historian_xz {
        format!("{name}.xz")
    } else {
        name
    });
    let results = log.finish(trajectory, &worktree.to_string_lossy());
    HistorianLog::write(&results, &path, settings.historian_xz)
        .map_err(RunError::io(format!("cannot write {}", path.display())))
}

/// A commit of a repository on this machine replays in a full checkout of its parent
/// (nothing from the commit or later), a recorded session in one of the HEAD it
/// started at, so suggesters can read the whole project; the session's own files
/// are then written over it with their start texts.
fn check_out_start(trajectory: &Trajectory, dir: &Path) -> Result<(), RunError> {
    let start_commit = match trajectory.session.kind {
        SessionKind::Commit => trajectory
            .session
            .commit
            .as_ref()
            .and_then(|c| c.parent.as_ref()),
        SessionKind::Recorded => trajectory.session.git_head.as_ref(),
        SessionKind::Imported => None,
    };
    if let (Some(workspace), Some(parent)) = (&trajectory.session.workspace, start_commit)
        && Path::new(workspace).join(".git").exists()
    {
        GitRepository::open(Path::new(workspace))
            .and_then(|repo| repo.checkout(parent, dir))
            .map_err(|source| RunError::Checkout {
                what: format!("checking out {parent} of {workspace}"),
                source,
            })?;
    }
    Ok(())
}

/// The engine's settings for one trajectory of a run.
fn replay_config(settings: &RunSettings, trajectory: &Trajectory) -> ReplayConfig {
    use super::Reveal;
    let revealed = Revealed {
        commit_message: settings
            .reveal
            .contains(&Reveal::Message)
            .then(|| {
                trajectory
                    .session
                    .commit
                    .as_ref()
                    .and_then(|c| c.message.clone())
            })
            .flatten(),
        changed_files: settings
            .reveal
            .contains(&Reveal::Files)
            .then(|| trajectory.files.iter().map(|f| f.path.clone()).collect()),
    };
    ReplayConfig {
        order: settings.order_mode(),
        rule: settings.rule(),
        seed: settings.seed,
        revealed,
        language: trajectory.files.iter().find_map(|f| f.language.clone()),
        project: trajectory
            .session
            .commit
            .as_ref()
            .and_then(|c| c.project.clone())
            .filter(|_| settings.reveal.contains(&Reveal::Commit)),
        exclude_origins: settings.exclude_origin.clone(),
        judge_cases: settings.judge.is_some(),
    }
}

/// A suggester whose failed `initialize` is stored in `run_errors` the moment it
/// happens (an interrupted replay keeps it).
struct RecordInitialize<'a> {
    inner: &'a mut dyn Suggester,
    db_path: &'a Path,
    run: i64,
    key: &'a str,
    events: &'a dyn RunEvents,
    /// Where the call is counted (not for built-ins).
    calls: Option<&'a CallCounts>,
}

impl Suggester for RecordInitialize<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn initialize(&mut self, params: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        let result = self.inner.initialize(params);
        if let Some(calls) = self.calls {
            calls.add(result.as_ref().err().map(CallFailure::from).as_ref());
        }
        if let Err(error) = &result {
            let stored = Database::open(self.db_path).and_then(|mut db| {
                db.record_run_error(self.run, self.key, Call::Initialize, &error.into())
            });
            if let Err(e) = stored {
                self.events.note(&format!(
                    "{}: cannot store its initialize failure: {e}",
                    self.key
                ));
            }
        }
        result
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        self.inner.suggest(params)
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        self.inner.generate(params)
    }

    fn shutdown(&mut self) {
        self.inner.shutdown();
    }

    fn needs_history(&self) -> bool {
        self.inner.needs_history()
    }

    fn gold_feed(&self) -> Option<&dyn GoldFeed> {
        self.inner.gold_feed()
    }

    fn offers_feed(&self) -> Option<&dyn crate::engine::suggest::OffersFeed> {
        self.inner.offers_feed()
    }
}

/// A trajectory's worktree, removed when its replay ends (also on error paths).
struct WorktreeDir(PathBuf);

impl Drop for WorktreeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Reads recorded by `nextedit proxy` sessions (in the workers' reads-only databases)
/// whose workspace is a replay worktree, attributed to steps by the suggester's
/// `$/nextedit/replayStep` markers, go into `run_reads` with source `lsp`. Waits (up
/// to 30 s) for those sessions to end, so everything they recorded is in the database.
fn collect_lsp_reads(
    store: &mut dyn RunStore,
    run: i64,
    worktrees: &[(String, String, PathBuf)],
) -> Result<(), RunError> {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for (key, root, reads_db) in worktrees {
        if !reads_db.exists() {
            continue;
        }
        let reads = Database::open_existing(reads_db)?;
        let ids: Vec<i64> = loop {
            let sessions: Vec<_> = reads
                .sessions()?
                .into_iter()
                .filter(|s| s.workspace.as_deref() == Some(root.as_str()))
                .collect();
            if sessions.iter().all(|s| s.status != SessionStatus::Running)
                || std::time::Instant::now() >= deadline
            {
                break sessions.iter().map(|s| s.id).collect();
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut by_step: std::collections::BTreeMap<usize, Vec<StepRead>> = Default::default();
        for id in ids {
            let session = reads.trajectory(id)?;
            for (step, read) in attribute_lsp_reads(&session) {
                by_step.entry(step).or_default().push(read);
            }
        }
        for (step, reads) in by_step {
            store.add_run_reads(run, key, step, &reads)?;
        }
    }
    Ok(())
}

/// Stores a replay's progress in the run as it happens.
struct RunRecorder<'a> {
    store: &'a mut dyn RunStore,
    run: i64,
    key: &'a str,
    trajectory: &'a Trajectory,
    /// The number of the first step recorded (steps are not kept: they are stored).
    first: Option<usize>,
    historian: Option<HistorianLog>,
    events: &'a dyn RunEvents,
    cache: Option<&'a CacheLog>,
    /// Where each step's calls are counted (not for built-ins).
    calls: Option<&'a CallCounts>,
    /// Asked about each step with content (`--judge`).
    judge: Option<&'a mut Judge>,
}

/// Why a run could not keep a step (the trajectory fails with it).
#[derive(Debug, thiserror::Error)]
enum RecordError {
    /// The database could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A read-only cache had no answer: the cache's message, naming the call.
    #[error("{0}")]
    CacheMiss(String),
}

impl RunRecorder<'_> {
    /// Applies what the response cache did since the last step: whether each call was
    /// served and the suggester's own latency (stored with a served answer), to `step`;
    /// an `initialize` to the trajectory. A read-only miss fails the trajectory here,
    /// before its step is stored.
    fn record_cache_use(&mut self, mut step: Option<&mut StoredStep>) -> Result<(), RecordError> {
        let Some(log) = self.cache else {
            return Ok(());
        };
        for outcome in log.take() {
            if let Some(problem) = &outcome.problem {
                self.events.note(&format!("{}: {problem}", self.key));
            }
            if let Some(miss) = outcome.miss {
                return Err(RecordError::CacheMiss(miss));
            }
            match (outcome.call, step.as_deref_mut()) {
                (Call::Initialize, _) => {
                    self.store
                        .set_initialize_cached(self.run, self.key, outcome.cached)?
                }
                (Call::Suggest, Some(step)) => {
                    step.suggest_cached = Some(outcome.cached);
                    step.suggest_ms = outcome.latency_ms;
                }
                (Call::Generate, Some(step)) => {
                    step.generate_cached = Some(outcome.cached);
                    step.generate_ms = Some(outcome.latency_ms);
                }
                // Replay never asks `complete` (tasks runs do); the judge is not the suggester.
                (Call::Complete | Call::Judge, _) | (_, None) => {}
            }
        }
        Ok(())
    }
}

impl ReplayObserver for RunRecorder<'_> {
    fn started(&mut self, initial: EditIndex, state: &ReplayState) -> Result<(), ObserverError> {
        if let Some(log) = &mut self.historian {
            log.started(initial.0, state);
        }
        let initial = &self.trajectory.edit(initial).id;
        self.store
            .set_run_trajectory(
                self.run,
                self.key,
                TrajectoryStatus::Running,
                Some(initial),
                None,
            )
            .map_err(|e| RecordError::from(e).into())
    }

    fn step(&mut self, record: &StepRecord, state: &ReplayState) -> Result<(), ObserverError> {
        for dropped in &record.dropped_reads {
            self.events.note(&format!(
                "{} step {}: left out the suggester's {dropped}",
                self.key, record.step
            ));
        }
        if let Some(log) = &mut self.historian {
            log.step(record, state);
        }
        let mut step = stored_step(self.trajectory, record);
        self.record_cache_use(Some(&mut step))?;
        if let (Some(judge), Some(case)) = (self.judge.as_deref_mut(), &record.judge_case) {
            step.judgement = Some(judge.judge(case));
        }
        self.store
            .record_step(self.run, self.key, &step)
            .map_err(RecordError::from)?;
        self.first.get_or_insert(record.step);
        if let Some(calls) = self.calls {
            calls.add(record.suggest_error.as_ref());
            if record.generate_latency.is_some() {
                calls.add(record.generate_error.as_ref());
            }
        }
        Ok(())
    }
}

/// How many of a step's allowed edits are named (stored and printed), the first in
/// natural order; the count is always whole (`flow.allowed_gold`). A trajectory
/// without order edges allows every remaining edit at every step: naming them all
/// would make a run's rows, and the printed steps, quadratic in its length.
pub const ALLOWED_IDS_KEPT: usize = 100;

/// The engine's step with edits named by id, as the store keeps it and the printers
/// show it.
pub fn stored_step(trajectory: &Trajectory, step: &StepRecord) -> StoredStep {
    let id = |i: EditIndex| trajectory.edit(i).id.clone();
    let mut failures = Vec::new();
    for (call, failure) in [
        (Call::Suggest, &step.suggest_error),
        (Call::Generate, &step.generate_error),
    ] {
        if let Some(failure) = failure {
            failures.push(StepFailure {
                call,
                failure: failure.clone(),
            });
        }
    }
    StoredStep {
        step: step.step,
        applied: id(step.applied),
        allowed: (step.allowed.iter().take(ALLOWED_IDS_KEPT))
            .map(|&i| id(i))
            .collect(),
        remaining: step.remaining,
        prf: step.flow.prf(),
        counts: step.flow.counts(),
        content: step.content.as_ref().map(|c| StoredContent {
            edit: id(c.gold),
            bleu: c.bleu,
            es: c.es,
            generated: c.generated,
            answer: Some(c.answer),
        }),
        suggest_ms: step.suggest_latency.as_secs_f64() * 1e3,
        generate_ms: step.generate_latency.map(|d| d.as_secs_f64() * 1e3),
        flow: step.flow.clone(),
        predictions: step
            .predictions
            .iter()
            .map(|p| StoredPrediction {
                rank: p.rank,
                file: p.edit.file.clone(),
                start_line: p.edit.start_line,
                end_line: p.edit.end_line,
                text: p.edit.text.clone(),
                confidence: p.edit.confidence,
                matched: p.matched.map(id),
                class: p.class,
            })
            .collect(),
        failures,
        reads: step.reads.clone(),
        suggest_cached: None,
        generate_cached: None,
        yardsticks: step.yardsticks,
        // Asked by the run's recorder, which holds the judge.
        judgement: None,
    }
}

#[cfg(test)]
mod tests {
    use super::Unfinished;
    use crate::store::Database;
    use crate::store::RunRead;
    use crate::store::RunStore;
    use crate::store::TrajectoryStatus;

    #[test]
    fn a_run_stopped_by_an_error_or_a_panic_is_marked_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("runs.db");
        let mut db = Database::open(&path).unwrap();
        let status = |db: &Database, run| {
            let trajectories = db.run_trajectories(run).unwrap();
            (
                db.run(run).unwrap().status.to_string(),
                trajectories[0].status.to_string(),
            )
        };
        for (panics, reason) in [
            (
                false,
                "nextedit stopped on an error before the run finished",
            ),
            (true, "nextedit panicked before the run finished"),
        ] {
            let run = db
                .create_run(
                    "builtin:noop",
                    &serde_json::json!({}),
                    &[("k".into(), None)],
                )
                .unwrap();
            db.set_run_trajectory(run, "k", TrajectoryStatus::Running, None, None)
                .unwrap();
            let stopped = std::panic::catch_unwind(|| {
                let _unfinished = Unfinished {
                    db_path: &path,
                    run: Some(run),
                };
                assert!(!panics, "a panic while replaying");
            });
            assert_eq!(stopped.is_err(), panics);
            assert_eq!(
                status(&db, run),
                ("interrupted".into(), "interrupted".into())
            );
            let error: String = rusqlite::Connection::open(&path)
                .unwrap()
                .query_row(
                    "SELECT error FROM run_trajectories WHERE run_id = ?1",
                    [run],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(error, reason);
            // Resumed, it runs again; a disarmed guard leaves a finished run alone.
            db.reopen_run(run).unwrap();
            db.finish_run(run, crate::store::RunStatus::Done).unwrap();
            drop(Unfinished {
                db_path: &path,
                run: None,
            });
            assert_eq!(status(&db, run).0, "done");
        }
    }
}
