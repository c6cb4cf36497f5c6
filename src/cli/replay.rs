//! `nextedit replay`: walk trajectories through a next-edit suggester and score it;
//! `nextedit report`: compare stored runs.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use nextedit::history::{CommitSource, GitRepository, derive_commit};
use nextedit::metrics::contextbench::{ContextBenchConfig, GranularityScore, SessionScores};
use nextedit::metrics::flow::{FlowClass, FlowStep, HISTORIAN_KS, RankedPrediction, aggregate};
use nextedit::replay::context::{ReplayRead, attribute_lsp_reads, score_replay_reads};
use nextedit::replay::matching::MatchRule;
use nextedit::replay::state::ReplayState;
use nextedit::replay::{
    DirWorkspace, FedSuggester, HistorianLog, OracleFeed, OrderMode, ReplayConfig, ReplayHooks,
    ReplayObserver, StepRecord, content_scores, replay,
};
use nextedit::store::{Database, StoredPrediction, StoredRead, StoredStep};
use nextedit::suggest::protocol::Revealed;
use nextedit::suggest::{NoopSuggester, ProcessSuggester, PropagateSuggester, Suggester};
use nextedit::trajectory::{Origin, SessionKind, SliceBound, SliceSpec, Trajectory};
use serde_json::json;

/// Replay trajectories through a next-edit suggester and score it
///
/// Each trajectory (`nextedit sessions export` or `nextedit derive` output) is
/// replayed in a scratch directory holding its files at the start state. At every
/// step the suggester proposes ranked next edits; they are matched one to one to the
/// remaining gold edits and classified (flow keeping, jumping, reverting, breaking);
/// when none keeps the flow, the suggester writes the content of the next edit's
/// location, scored with BLEU-4 and ES. Then the gold edit is applied.
///
/// Every step is stored in the database as it finishes (a run id is printed first);
/// `--resume RUN` continues an interrupted run where it stopped, with its settings.
///
/// Suggesters: builtin:noop (never suggests; scores 0), builtin:propagate (repeats
/// each applied rename or one-line change at the other places it applies, nearest
/// first), builtin:oracle (the gold answers; the maximum), openai:<URL>?model=<NAME>
/// (an OpenAI-compatible endpoint; key from $OPENAI_API_KEY or key_env=VAR, never
/// stored), or cmd:'<command line>' speaking the protocol of docs/suggesters.md.
///
/// Examples:
///   nextedit replay --trajectory commit.json --suggester builtin:propagate
///   nextedit replay --trajectory a.json --trajectory b.json --suggester "cmd:python3 my_suggester.py" --json
///   nextedit replay --resume 7
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ReplayArgs {
    /// Trajectory JSON file (can be repeated)
    #[arg(long, value_name = "FILE", required_unless_present_any = ["resume", "session", "repo"])]
    trajectory: Vec<PathBuf>,

    /// A session stored in the database (can be repeated)
    #[arg(long, value_name = "ID")]
    session: Vec<i64>,

    /// With --session: replay only the part from this event seq or time (90s, 5m, 1500ms)
    #[arg(long, value_name = "SEQ|TIME", requires = "session")]
    from: Option<SliceBound>,

    /// With --session: replay only the part up to this event seq or time
    #[arg(long, value_name = "SEQ|TIME", requires = "session")]
    to: Option<SliceBound>,

    /// With --session: replay only the edits of this file (can be repeated)
    #[arg(long = "file", value_name = "PATH", requires = "session")]
    files: Vec<String>,

    /// With --session: a pause longer than this ends an edit when coalescing a recorded
    /// session's changes [default: 2000]
    #[arg(long, value_name = "MS", requires = "session")]
    pause_ms: Option<f64>,

    /// A git repository whose commits to replay (with --commit or --range)
    #[arg(long, value_name = "PATH")]
    repo: Option<PathBuf>,

    /// A commit of --repo (can be repeated); each replays in a scratch checkout of its parent
    #[arg(long, value_name = "REV", requires = "repo")]
    commit: Vec<String>,

    /// Commits of --repo, oldest first, as git reads a range: A..B, A...B, R^! (R
    /// alone), R (R and all its ancestors); what was selected is said before starting
    #[arg(long, value_name = "A..B", requires = "repo")]
    range: Option<String>,

    /// Merge commits in --range: skip (leave them out; one summary line), or
    /// first-parent (replay each as its change against its first parent)
    #[arg(long, value_name = "HOW", value_parser = super::parse_merges, default_value = "skip", requires = "range")]
    merges: nextedit::history::Merges,

    /// builtin:noop, builtin:propagate, builtin:oracle, openai:<URL>?model=<NAME>[&template=zeta|nes]
    /// (an OpenAI-compatible endpoint, docs/suggesters.md), or cmd:<command line>
    #[arg(long, value_name = "SPEC", required_unless_present = "resume")]
    suggester: Option<String>,

    /// Continue an interrupted run (its trajectories and settings come from the database)
    #[arg(long, value_name = "RUN", conflicts_with_all = ["trajectory", "session", "repo", "suggester"])]
    resume: Option<i64>,

    /// Which edit comes next: the natural order (fixed) or the suggester's best kept match (adaptive)
    #[arg(long, value_enum, default_value_t = OrderArg::Fixed)]
    order: OrderArg,

    /// How predictions match gold edits: bleu (default: Historian's BLEU-4 > 50 and the
    /// prediction changes its lines), historian (Historian compat, quirk included: an
    /// unchanged prediction can match), es (ES-Line ≥ --es-threshold), exact. Outside
    /// historian, an answer that leaves its lines unchanged is never a hit and its
    /// content scores BLEU 0 / ES 0
    #[arg(long = "match", value_enum, default_value_t = MatchArg::Bleu)]
    match_rule: MatchArg,

    /// Minimum ES for --match es
    #[arg(long, default_value_t = 0.5, value_name = "ES")]
    es_threshold: f64,

    /// What the suggester may see beyond the current state: message, files, commit (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    reveal: Vec<RevealArg>,

    /// Edits made by these origins are applied silently, never asked for (recorded
    /// sessions): format, code_action, rename, completion, external (comma-separated)
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    exclude_origin: Vec<OriginArg>,

    /// Seed for tie-breaks (initial edit in adaptive order)
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Seconds a suggester may take per call
    #[arg(long, default_value_t = 60.0, value_name = "S")]
    timeout: f64,

    /// Seconds a suggester may take to answer `initialize` (loading a model)
    #[arg(long, default_value_t = 120.0, value_name = "S")]
    init_timeout: f64,

    /// After this many process failures in a row (crash, time-out, garbage) a
    /// trajectory stops asking the suggester; its remaining steps record why
    #[arg(long, default_value_t = 3, value_name = "N")]
    give_up_after: u32,

    /// How cmd: suggesters are isolated: bwrap (only their worktree, their program and
    /// the system's read-only directories are visible; no network) or off
    #[arg(long, value_enum, default_value_t = SandboxArg::Bwrap)]
    sandbox: SandboxArg,

    /// Let sandboxed suggesters use the network (a model API)
    #[arg(long)]
    allow_network: bool,

    /// An extra path sandboxed suggesters may read (a model's weights; can be repeated)
    #[arg(long, value_name = "PATH")]
    sandbox_ro: Vec<PathBuf>,

    /// An existing path sandboxed suggesters may write (a log or cache; can be repeated)
    #[arg(long, value_name = "PATH")]
    sandbox_rw: Vec<PathBuf>,

    /// Database for the run [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Also write Historian-compatible results files into this directory
    /// ({project}-{sha10}-{suggester}-simulation-results.json)
    #[arg(long, value_name = "DIR")]
    historian_json: Option<PathBuf>,

    /// Trajectories replayed in parallel, each with its own suggester process
    #[arg(long, default_value_t = 1, value_name = "N")]
    jobs: usize,

    /// Print JSON (one object per trajectory, then the summary) instead of tables
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum OrderArg {
    Fixed,
    Adaptive,
}

#[derive(Debug, Clone, Copy, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum MatchArg {
    Bleu,
    Historian,
    Es,
    Exact,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
enum OriginArg {
    Format,
    CodeAction,
    Rename,
    Completion,
    External,
}

impl OriginArg {
    fn origin(self) -> Origin {
        match self {
            OriginArg::Format => Origin::Format,
            OriginArg::CodeAction => Origin::CodeAction,
            OriginArg::Rename => Origin::Rename,
            OriginArg::Completion => Origin::Completion,
            OriginArg::External => Origin::External,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
enum RevealArg {
    Message,
    Files,
    /// The project name and the trajectory's own id (a commit's sha) in `initialize`.
    Commit,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum SandboxArg {
    Bwrap,
    Off,
}

/// `RunSettings::sandbox` of a run whose suggester processes ran in bubblewrap.
const SANDBOXED: &str = "bwrap";
/// `RunSettings::sandbox` of a run whose suggester processes could read everything.
const UNSANDBOXED: &str = "unsandboxed";
/// `RunSettings::sandbox` of a built-in suggester (no process).
const IN_PROCESS: &str = "in-process";

fn default_init_timeout() -> f64 {
    nextedit::suggest::DEFAULT_INIT_TIMEOUT.as_secs_f64()
}

fn default_give_up_after() -> u32 {
    nextedit::suggest::DEFAULT_GIVE_UP_AFTER
}

/// Runs stored before the sandbox existed ran their suggesters unsandboxed.
fn default_sandbox() -> String {
    UNSANDBOXED.to_string()
}

/// The settings of a run, stored with it so `--resume` replays the same way.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct RunSettings {
    suggester: String,
    #[serde(default)]
    historian_json: Option<PathBuf>,
    order: OrderArg,
    #[serde(rename = "match")]
    match_rule: MatchArg,
    es_threshold: f64,
    reveal: Vec<RevealArg>,
    #[serde(default)]
    exclude_origin: Vec<OriginArg>,
    seed: u64,
    timeout: f64,
    #[serde(default = "default_init_timeout")]
    init_timeout: f64,
    #[serde(default = "default_give_up_after")]
    give_up_after: u32,
    /// `bwrap`, `unsandboxed` (`--sandbox off`, or bwrap unavailable) or `in-process`
    /// (a built-in suggester); `report` marks unsandboxed runs.
    #[serde(default = "default_sandbox")]
    sandbox: String,
    #[serde(default)]
    allow_network: bool,
    #[serde(default)]
    sandbox_ro: Vec<PathBuf>,
    #[serde(default)]
    sandbox_rw: Vec<PathBuf>,
}

impl RunSettings {
    /// The settings stored with run `run`.
    fn of(db: &Database, run: i64) -> anyhow::Result<RunSettings> {
        serde_json::from_value(db.run(run)?.config)
            .with_context(|| format!("run {run} has settings this nextedit cannot read"))
    }

    /// The match rule of these settings.
    fn rule(&self) -> MatchRule {
        match self.match_rule {
            MatchArg::Bleu => MatchRule::Bleu,
            MatchArg::Historian => MatchRule::Historian,
            MatchArg::Es => MatchRule::Es {
                threshold: self.es_threshold,
            },
            MatchArg::Exact => MatchRule::Exact,
        }
    }
}

/// A suggester and, for the oracle, the feed the engine fills with gold answers.
type BuiltSuggester = (Box<dyn Suggester>, Option<std::sync::Arc<OracleFeed>>);

/// Where a worker's suggester process lives: a private scratch directory holding the
/// worktrees it replays in and its reads-only database, and the sandbox around it.
struct WorkerPlace {
    /// The worker's scratch directory (the only writable place in its sandbox).
    dir: PathBuf,
    /// The sandbox, unless the run is unsandboxed.
    sandbox: Option<nextedit::suggest::sandbox::Sandbox>,
}

impl WorkerPlace {
    /// The database a `nextedit proxy` in front of the suggester's language server
    /// records into (`$NEXTEDIT_REPLAY_DB`): nothing but those recordings, no gold.
    fn reads_db(&self) -> PathBuf {
        self.dir.join("reads.db")
    }
}

/// A suggester built from its spec; a process suggester runs in `place` and gets
/// `NEXTEDIT_REPLAY_DB` (its reads-only database).
fn build_suggester(
    spec: &str,
    settings: &RunSettings,
    place: Option<&WorkerPlace>,
) -> anyhow::Result<BuiltSuggester> {
    Ok(match spec {
        "builtin:noop" => (Box::new(NoopSuggester), None),
        "builtin:propagate" => (Box::new(PropagateSuggester::default()), None),
        "builtin:oracle" => {
            let (oracle, feed) = FedSuggester::oracle();
            (Box::new(oracle), Some(feed))
        }
        "builtin:unchanged-at-gold" => {
            let (suggester, feed) = FedSuggester::unchanged_at_gold();
            (Box::new(suggester), Some(feed))
        }
        _ if spec.starts_with("openai:") => {
            let suggester = nextedit::suggest::openai::OpenAiSuggester::from_spec(spec)?
                .with_timeout(Duration::from_secs_f64(settings.timeout))
                .with_give_up_after(settings.give_up_after);
            if !suggester.spec().is_local() && !settings.allow_network {
                bail!(
                    "{spec:?} is not on this machine: pass --allow-network to let replay reach {}",
                    suggester.spec().host
                );
            }
            (Box::new(suggester), None)
        }
        _ => match spec.strip_prefix("cmd:") {
            Some(command) if !command.trim().is_empty() => {
                let mut process = ProcessSuggester::from_shell(
                    command,
                    Duration::from_secs_f64(settings.timeout),
                )
                .with_init_timeout(Duration::from_secs_f64(settings.init_timeout))
                .with_give_up_after(settings.give_up_after);
                if let Some(place) = place {
                    process =
                        process.with_env("NEXTEDIT_REPLAY_DB", &place.reads_db().to_string_lossy());
                    if let Some(sandbox) = &place.sandbox {
                        process = process.with_sandbox(sandbox.clone());
                    }
                }
                (Box::new(process), None)
            }
            _ => bail!(
                "unknown suggester {spec:?}: use builtin:noop, builtin:propagate, builtin:oracle, openai:<URL>?model=<NAME> or cmd:<command line>"
            ),
        },
    })
}

/// The sandbox state of a new run: `bwrap` when asked for and bubblewrap works here
/// (else said once on stderr and `unsandboxed`), `in-process` for built-ins.
fn sandbox_state(spec: &str, mode: SandboxArg) -> String {
    if !spec.starts_with("cmd:") {
        return IN_PROCESS.to_string();
    }
    match mode {
        SandboxArg::Off => UNSANDBOXED.to_string(),
        SandboxArg::Bwrap => match nextedit::suggest::sandbox::availability() {
            Ok(()) => SANDBOXED.to_string(),
            Err(reason) => {
                eprintln!(
                    "nextedit: suggesters run UNSANDBOXED (they can read the repository, the database and the network): {reason}"
                );
                UNSANDBOXED.to_string()
            }
        },
    }
}

/// The read-only paths of a worker's sandbox: the suggester's program and the paths
/// its command line names (never anything overlapping `forbidden`: the replayed
/// repositories, the database, the run's scratch directory), nextedit's own
/// executable (for `nextedit proxy`), and `--sandbox-ro`.
fn sandbox_paths(
    settings: &RunSettings,
    forbidden: &[PathBuf],
) -> anyhow::Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let command = settings.suggester.strip_prefix("cmd:").unwrap_or("");
    let mut paths = nextedit::suggest::sandbox::command_paths(command, forbidden);
    if let Ok(exe) = std::env::current_exe() {
        paths.push(exe);
    }
    let mut writable = Vec::new();
    for (flag, given, into) in [
        ("--sandbox-ro", &settings.sandbox_ro, &mut paths),
        ("--sandbox-rw", &settings.sandbox_rw, &mut writable),
    ] {
        for path in given {
            let real = path
                .canonicalize()
                .with_context(|| format!("{flag} {}", path.display()))?;
            if let Some(f) = forbidden
                .iter()
                .find(|f| real.starts_with(f) || f.starts_with(&real))
            {
                bail!(
                    "{flag} {} would show the suggester {} (a replayed repository or trajectory, the database or the scratch directory)",
                    path.display(),
                    f.display()
                );
            }
            into.push(real);
        }
    }
    Ok((paths, writable))
}

/// What a sandboxed suggester must never see: every replayed repository and
/// trajectory file, the database (with its journal files) and the run's scratch
/// directory, as given and canonicalized.
fn forbidden_paths(
    db_path: &std::path::Path,
    scratch: &std::path::Path,
    keys: &[&str],
    texts: &[&str],
) -> Vec<PathBuf> {
    let mut paths = vec![db_path.to_path_buf(), scratch.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db_path.as_os_str().to_owned();
        name.push(suffix);
        paths.push(PathBuf::from(name));
    }
    // A trajectory given as a file is keyed by its path.
    paths.extend(keys.iter().map(PathBuf::from).filter(|p| p.exists()));
    for text in texts {
        if let Ok(t) = serde_json::from_str::<Trajectory>(text)
            && let Some(workspace) = t.session.workspace
        {
            paths.push(PathBuf::from(workspace));
        }
    }
    let mut all = paths.clone();
    all.extend(paths.iter().filter_map(|p| p.canonicalize().ok()));
    if let Ok(cwd) = std::env::current_dir() {
        // With `--repo .` the current directory is the repository.
        if all.iter().any(|p| cwd.starts_with(p)) {
            all.push(cwd);
        }
    }
    all.sort();
    all.dedup();
    all
}

/// Scratch directories in use, removed by the Ctrl-C handler (drop removes them otherwise).
static SCRATCH: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// On SIGINT/SIGTERM: stop the suggester processes, remove the scratch directories,
/// then exit like the signal would.
fn clean_up_on_signals() -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install signal handlers")?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            nextedit::suggest::kill_all();
            // Workers may still be writing a checkout into a directory being removed
            // (and so re-create parts of it): remove until nothing is left. The lock
            // is held so no new scratch directory appears meanwhile.
            let dirs = SCRATCH.lock();
            let dirs: Vec<PathBuf> = dirs.as_ref().map(|d| d.to_vec()).unwrap_or_default();
            for _ in 0..10 {
                for dir in &dirs {
                    let _ = std::fs::remove_dir_all(dir);
                }
                if dirs.iter().all(|d| !d.exists()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

pub fn run(args: ReplayArgs) -> anyhow::Result<i32> {
    clean_up_on_signals()?;
    // This process's only children are suggesters: it adopts their orphans to kill them.
    nextedit::suggest::become_subreaper();
    let db_path = args
        .db
        .clone()
        .unwrap_or_else(nextedit::store::default_path);
    let mut db = Database::open(&db_path)?;
    let mut failed = 0;
    let (run_id, settings) = match args.resume {
        Some(run) => (run, RunSettings::of(&db, run)?),
        None => {
            let settings = RunSettings {
                suggester: args.suggester.clone().expect("clap requires it"),
                historian_json: args.historian_json.clone(),
                order: args.order,
                match_rule: args.match_rule,
                es_threshold: args.es_threshold,
                reveal: args.reveal.clone(),
                exclude_origin: args.exclude_origin.clone(),
                seed: args.seed,
                timeout: args.timeout,
                init_timeout: args.init_timeout,
                give_up_after: args.give_up_after,
                sandbox: String::new(),
                allow_network: args.allow_network,
                sandbox_ro: args.sandbox_ro.clone(),
                sandbox_rw: args.sandbox_rw.clone(),
            };
            for (flag, value) in [
                ("--timeout", args.timeout),
                ("--init-timeout", args.init_timeout),
            ] {
                if !(value.is_finite() && value > 0.0) {
                    bail!("{flag} must be a positive number of seconds");
                }
            }
            build_suggester(&settings.suggester, &settings, None)?;
            let settings = RunSettings {
                sandbox: sandbox_state(&settings.suggester, args.sandbox),
                ..settings
            };
            let mut entries = Vec::new();
            let mut derive_errors = Vec::new();
            for path in &args.trajectory {
                // A file that cannot be read is recorded as a failed trajectory, not fatal;
                // one that does not parse is stored as read and fails when replayed.
                let key = path.display().to_string();
                let text = std::fs::read_to_string(path).ok();
                match text.as_deref().map(serde_json::from_str::<Trajectory>) {
                    Some(Ok(trajectory)) => match run_entry(&key, trajectory) {
                        Ok(json) => entries.push((key, Some(json))),
                        Err(error) => {
                            derive_errors.push((key.clone(), error));
                            entries.push((key, None));
                        }
                    },
                    _ => entries.push((key, text)),
                }
            }
            if let Some(repo_path) = &args.repo {
                // The error names the repository already.
                let repo = GitRepository::open(repo_path)?;
                let mut shas = Vec::new();
                for rev in &args.commit {
                    shas.push(repo.resolve(rev)?);
                }
                if let Some(range) = &args.range {
                    let selection = nextedit::history::select(&repo, range, args.merges)
                        .with_context(|| format!("reading the range {range:?}"))?;
                    eprintln!("nextedit: {}", super::describe_selection(range, &selection));
                    if selection.commits.is_empty()
                        && args.commit.is_empty()
                        && args.trajectory.is_empty()
                        && args.session.is_empty()
                    {
                        // Nothing to replay is not a failure when only merges were left out.
                        return Ok(0);
                    }
                    shas.extend(selection.commits);
                }
                if shas.is_empty() && args.range.is_none() {
                    bail!("--repo needs --commit REV or --range A..B");
                }
                let project = repo.project();
                for sha in shas {
                    let key = format!("{}@{}", project.as_deref().unwrap_or("repo"), &sha[..10]);
                    let derived = repo
                        .load_with(&sha, args.merges)
                        .and_then(|record| derive_commit(&record, project.as_deref()));
                    match derived {
                        Ok(mut trajectory) => {
                            trajectory.session.workspace =
                                Some(repo_path.canonicalize()?.display().to_string());
                            match run_entry(&key, trajectory) {
                                Ok(json) => entries.push((key, Some(json))),
                                Err(error) => {
                                    derive_errors.push((key.clone(), error));
                                    entries.push((key, None));
                                }
                            }
                        }
                        Err(error) => {
                            derive_errors.push((key.clone(), error.to_string()));
                            entries.push((key, None));
                        }
                    }
                }
            }
            for &id in &args.session {
                let spec = SliceSpec {
                    from: args.from,
                    to: args.to,
                    files: args.files.clone(),
                };
                let trajectory =
                    nextedit::sessions::load_session_trajectory(&db, id, &spec, args.pause_ms)?;
                if trajectory.edits.is_empty() {
                    eprintln!(
                        "nextedit: session {id} has no coalesced edits to replay yet (recorded sessions become replayable once their changes are coalesced into edits)"
                    );
                }
                let key = format!("session:{id}");
                match run_entry(&key, trajectory) {
                    Ok(json) => entries.push((key, Some(json))),
                    Err(error) => {
                        derive_errors.push((key.clone(), error));
                        entries.push((key, None));
                    }
                }
            }
            let run = db.create_run(
                &settings.suggester,
                &serde_json::to_value(&settings)?,
                &entries,
            )?;
            failed += derive_errors.len();
            for (key, error) in &derive_errors {
                db.set_run_trajectory(run, key, "failed", None, Some(error))?;
                eprintln!("nextedit: skipping {key}: {error}");
            }
            (run, settings)
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if settings.sandbox == SANDBOXED && args.resume.is_some() {
        nextedit::suggest::sandbox::availability().map_err(|reason| {
            anyhow::anyhow!("run {run_id} ran its suggester sandboxed: {reason}")
        })?;
    }
    if args.json {
        writeln!(
            out,
            "{}",
            json!({"type": "run", "run": run_id, "db": db_path, "sandbox": settings.sandbox})
        )?;
    } else {
        writeln!(
            out,
            "run {run_id} in {} ({})",
            db_path.display(),
            settings.suggester
        )?;
    }
    // (position in the run, key, trajectory JSON): the position names the trajectory
    // to the suggester unless `--reveal commit`.
    let pending: Vec<(usize, String, Option<String>)> = db
        .run_trajectories(run_id)?
        .into_iter()
        .enumerate()
        .filter(|(_, (_, status, _))| status != "done" && status != "failed")
        .map(|(i, (key, _, text))| (i + 1, key, text))
        .collect();
    // One scratch directory for the run, registered before anything is written into
    // it; each worker gets a private directory inside (its sandbox sees only that).
    let scratch = {
        let mut registered = SCRATCH.lock().expect("scratch lock");
        let scratch = tempfile::Builder::new()
            .prefix("nextedit-replay-")
            .tempdir()
            .context("cannot create a scratch directory")?;
        registered.push(scratch.path().to_path_buf());
        scratch
    };
    let scratch_root = scratch.path().canonicalize()?;
    let forbidden = forbidden_paths(
        &db_path,
        &scratch_root,
        &pending
            .iter()
            .map(|(_, k, _)| k.as_str())
            .collect::<Vec<_>>(),
        &pending
            .iter()
            .filter_map(|(_, _, t)| t.as_deref())
            .collect::<Vec<_>>(),
    );
    let (read_only, writable) = if settings.sandbox == SANDBOXED {
        sandbox_paths(&settings, &forbidden)?
    } else {
        Default::default()
    };
    let calls = CallCounts::default();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let (tx, rx) =
        crossbeam_channel::unbounded::<(String, anyhow::Result<Vec<serde_json::Value>>)>();
    let jobs = args.jobs.clamp(1, pending.len().max(1));
    // (key, worktree) of every trajectory replayed, to collect proxied servers' reads.
    let worktrees: std::sync::Mutex<Vec<(String, String, PathBuf)>> =
        std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for worker in 0..jobs {
            let tx = tx.clone();
            let (pending, next, settings, db_path, worktrees, calls) =
                (&pending, &next, &settings, &db_path, &worktrees, &calls);
            let place = WorkerPlace {
                dir: scratch_root.join(format!("w{worker}")),
                sandbox: None,
            };
            let place = WorkerPlace {
                sandbox: (settings.sandbox == SANDBOXED).then(|| {
                    nextedit::suggest::sandbox::Sandbox {
                        scratch: place.dir.clone(),
                        read_only: read_only.clone(),
                        writable: writable.clone(),
                        network: settings.allow_network,
                    }
                }),
                ..place
            };
            std::fs::create_dir(&place.dir)
                .with_context(|| format!("cannot create {}", place.dir.display()))?;
            scope.spawn(move || {
                // Each worker has its own connection; SQLite serialises the writes.
                let mut db = match Database::open(db_path) {
                    Ok(db) => db,
                    Err(error) => {
                        let _ = tx.send((String::new(), Err(error.into())));
                        return;
                    }
                };
                // One suggester per worker, initialized per trajectory, shut down at the end.
                let mut suggester =
                    match build_suggester(&settings.suggester, settings, Some(&place)) {
                        Ok(built) => built,
                        Err(error) => {
                            let _ = tx.send((String::new(), Err(error)));
                            return;
                        }
                    };
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((position, key, text)) = pending.get(i) else {
                        suggester.0.shutdown();
                        return;
                    };
                    let result = replay_one(
                        &mut db,
                        Job {
                            run_id,
                            position: *position,
                            key,
                            text: text.as_deref(),
                            settings,
                            place: &place,
                            db_path,
                            worktrees,
                            calls,
                        },
                        &mut suggester,
                    );
                    if let Err(error) = &result {
                        let _ = db.set_run_trajectory(
                            run_id,
                            key,
                            "failed",
                            None,
                            Some(&format!("{error:#}")),
                        );
                    }
                    if tx.send((key.clone(), result)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for (key, result) in rx {
            match result {
                Ok(steps) if args.json => {
                    writeln!(
                        out,
                        "{}",
                        json!({"type": "trajectory", "key": key, "steps": steps})
                    )?;
                }
                Ok(steps) => print_steps(&mut out, &key, &steps)?,
                Err(error) => {
                    eprintln!("nextedit: skipping {key}: {error:#}");
                    failed += 1;
                }
            }
        }
        Ok(())
    })?;
    // Every suggester is shut down now, so the proxies in front of their servers end.
    let worktrees = worktrees.into_inner().unwrap_or_default();
    collect_lsp_reads(&mut db, run_id, &worktrees)?;
    drop(scratch);
    SCRATCH
        .lock()
        .expect("scratch lock")
        .retain(|d| d != &scratch_root);
    db.finish_run(run_id, "done")?;
    let never_answered = calls.never_answered();
    let summary = aggregate(&run_flow_steps(&db, run_id)?, &HISTORIAN_KS);
    if args.json {
        writeln!(
            out,
            "{}",
            json!({"type": "summary", "run": run_id, "suggester": settings.suggester, "summary": summary, "failed": failed})
        )?;
    } else {
        print_report(&mut out, &db, &[run_id])?;
    }
    if let Some(summary) = never_answered {
        eprintln!("nextedit: run {run_id} FAILED: the suggester never answered: {summary}");
        return Ok(1);
    }
    Ok(if failed > 0 { 1 } else { 0 })
}

/// A trajectory's JSON as a run stores it, every file path normalized to a
/// [`nextedit::trajectory::RelPath`] (replay writes each file under its scratch
/// root); the error names the offending path and where it is.
fn run_entry(key: &str, mut trajectory: Trajectory) -> Result<String, String> {
    for path in trajectory.drop_unedited_outside_files() {
        eprintln!(
            "nextedit: {key}: left out {path}: outside the workspace and never edited (replay writes only inside its scratch directory)"
        );
    }
    trajectory
        .normalize_paths()
        .map_err(|e| format!("unsafe file path: {e}"))?;
    serde_json::to_string(&trajectory).map_err(|e| e.to_string())
}

/// The suggester's calls in this replay, to tell a run whose suggester never answered
/// (it could not start, or always failed) from one that answered badly.
#[derive(Default)]
struct CallCounts {
    /// Calls made (`initialize`, `suggest`, `generate`).
    made: std::sync::atomic::AtomicUsize,
    /// Calls answered without error.
    answered: std::sync::atomic::AtomicUsize,
    /// The first failure.
    first_error: std::sync::Mutex<Option<String>>,
}

impl CallCounts {
    fn add(&self, error: Option<&String>) {
        use std::sync::atomic::Ordering::SeqCst;
        if error.is_some_and(|e| e.starts_with("gave_up")) {
            // Not asked at all.
            return;
        }
        self.made.fetch_add(1, SeqCst);
        match error {
            None => {
                self.answered.fetch_add(1, SeqCst);
            }
            Some(error) => {
                let mut first = self.first_error.lock().expect("first error lock");
                first.get_or_insert_with(|| error.clone());
            }
        }
    }

    /// `Some(summary)` when calls were made and none was answered.
    fn never_answered(&self) -> Option<String> {
        use std::sync::atomic::Ordering::SeqCst;
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
    run_id: i64,
    /// 1-based position in the run (the trajectory's name for the suggester).
    position: usize,
    key: &'a str,
    text: Option<&'a str>,
    settings: &'a RunSettings,
    place: &'a WorkerPlace,
    /// The run's database (a failed `initialize` is stored through a connection of its own).
    db_path: &'a std::path::Path,
    /// (key, worktree, reads database) of every trajectory replayed.
    worktrees: &'a std::sync::Mutex<Vec<(String, String, PathBuf)>>,
    calls: &'a CallCounts,
}

/// Replays (or resumes) one trajectory of a run; returns its new steps as JSON.
fn replay_one(
    db: &mut Database,
    job: Job<'_>,
    suggester: &mut BuiltSuggester,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let Job {
        run_id,
        position,
        key,
        text,
        settings,
        place,
        db_path,
        worktrees,
        calls,
    } = job;
    let text = text.with_context(|| format!("cannot read {key}"))?;
    let mut trajectory: Trajectory =
        serde_json::from_str(text).with_context(|| format!("{key} is not a trajectory"))?;
    // Checked when the run was created; again for runs stored by older builds.
    trajectory
        .normalize_paths()
        .with_context(|| format!("{key}: unsafe file path"))?;
    let index = |id: &str| trajectory.edits.iter().position(|e| e.id == id);
    // Resume: the initial edit and the edits applied by the steps already stored.
    let mut resume = Vec::new();
    let stored = db.run_steps(run_id, key)?;
    if !stored.is_empty() {
        let initial = db
            .run_initial(run_id, key)?
            .context("stored steps without an initial edit")?;
        resume.push(index(&initial).context("stored initial edit not in the trajectory")?);
        for (_, applied, _) in &stored {
            resume.push(index(applied).context("stored step applied an unknown edit")?);
        }
    }
    let (suggester, feed) = suggester;
    // The worktree lives in the worker's directory (the suggester's sandbox shows that
    // directory), named by the trajectory's position; removed when this one is done.
    let scratch = WorktreeDir(place.dir.join(position.to_string()));
    std::fs::create_dir(&scratch.0)
        .with_context(|| format!("cannot create {}", scratch.0.display()))?;
    // The proxy stores its workspace canonicalized.
    let root = scratch.0.canonicalize().unwrap_or(scratch.0.clone());
    worktrees.lock().expect("worktrees lock").push((
        key.to_string(),
        root.to_string_lossy().into_owned(),
        place.reads_db(),
    ));
    // A commit of a repository on this machine replays in a full checkout of its parent
    // (nothing from the commit or later), a recorded session in one of the HEAD it
    // started at, so suggesters can read the whole project; the session's own files
    // are then written over it with their start texts.
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
        && std::path::Path::new(workspace).join(".git").exists()
    {
        GitRepository::open(std::path::Path::new(workspace))
            .and_then(|repo| repo.checkout(parent, scratch.0.as_path()))
            .with_context(|| format!("checking out {parent} of {workspace}"))?;
    }
    let revealed = Revealed {
        commit_message: settings
            .reveal
            .contains(&RevealArg::Message)
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
            .contains(&RevealArg::Files)
            .then(|| trajectory.files.iter().map(|f| f.path.clone()).collect()),
    };
    let reveal_commit = settings.reveal.contains(&RevealArg::Commit);
    let config = ReplayConfig {
        order: match settings.order {
            OrderArg::Fixed => OrderMode::Fixed,
            OrderArg::Adaptive => OrderMode::Adaptive,
        },
        rule: settings.rule(),
        seed: settings.seed,
        revealed,
        language: trajectory.files.iter().find_map(|f| f.language.clone()),
        project: trajectory
            .session
            .commit
            .as_ref()
            .and_then(|c| c.project.clone())
            .filter(|_| reveal_commit),
        exclude_origins: settings.exclude_origin.iter().map(|o| o.origin()).collect(),
    };
    // Historian's results describe edits on one base (a commit's).
    let sequential = trajectory.has_sequential_edits();
    if settings.historian_json.is_some() && sequential {
        eprintln!(
            "nextedit: {key}: no Historian results file: its format needs a commit's edits, and this session's edits are sequential"
        );
    }
    db.set_run_trajectory(run_id, key, "running", None, None)?;
    // Historian's file needs every step in one go: not written for a resumed trajectory.
    let historian = (settings.historian_json.is_some() && resume.is_empty() && !sequential)
        .then(HistorianLog::default);
    let mut recorder = RunRecorder {
        db,
        run: run_id,
        key,
        trajectory: &trajectory,
        steps: Vec::new(),
        historian,
    };
    // The suggester knows the trajectory by an opaque run-local name: a commit's sha
    // (or a session's id) only with `--reveal commit`.
    let mut sent = trajectory.clone();
    if !reveal_commit {
        sent.session.id = format!("trajectory-{position}");
    }
    let mut suggester = RecordInitialize {
        inner: suggester.as_mut(),
        db_path,
        run: run_id,
        key,
    };
    let outcome = replay(
        &sent,
        &mut suggester,
        &mut DirWorkspace::new(scratch.0.as_path()),
        &config,
        feed.as_deref(),
        ReplayHooks {
            resume: &resume,
            observer: &mut recorder,
        },
    );
    let outcome = outcome?;
    // Built-ins always answer; processes and endpoints may never do.
    if !settings.suggester.starts_with("builtin:") {
        calls.add(outcome.initialize_error.as_ref());
        for step in &outcome.steps {
            calls.add(step.suggest_error.as_ref());
            if step.generate_latency.is_some() {
                calls.add(step.generate_error.as_ref());
            }
        }
    }
    let steps = std::mem::take(&mut recorder.steps);
    if let (Some(dir), Some(log)) = (&settings.historian_json, &recorder.historian) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(format!(
            "{}.xz",
            HistorianLog::file_name(&trajectory, &settings.suggester)
        ));
        let results = log.finish(&trajectory, &scratch.0.as_path().to_string_lossy());
        HistorianLog::write_xz(&results, &path)
            .with_context(|| format!("cannot write {}", path.display()))?;
    } else if settings.historian_json.is_some() && !sequential {
        eprintln!(
            "nextedit: {key}: resumed, so no Historian results file (it needs every step of one replay)"
        );
    }
    recorder
        .db
        .set_run_trajectory(run_id, key, "done", None, None)?;
    if let Some(error) = &outcome.initialize_error {
        eprintln!("nextedit: {key}: initialize failed: {error}");
    }
    Ok(steps)
}

/// A suggester whose failed `initialize` is stored in `run_errors` the moment it
/// happens (an interrupted replay keeps it).
struct RecordInitialize<'a> {
    inner: &'a mut dyn Suggester,
    db_path: &'a std::path::Path,
    run: i64,
    key: &'a str,
}

impl Suggester for RecordInitialize<'_> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn initialize(
        &mut self,
        params: &nextedit::suggest::protocol::InitializeParams,
    ) -> Result<nextedit::suggest::protocol::InitializeResult, nextedit::suggest::SuggestError>
    {
        let result = self.inner.initialize(params);
        if let Err(error) = &result {
            let stored = Database::open(self.db_path).and_then(|mut db| {
                db.record_run_error(
                    self.run,
                    self.key,
                    "initialize",
                    error.kind(),
                    &error.to_string(),
                )
            });
            if let Err(e) = stored {
                eprintln!(
                    "nextedit: {}: cannot store its initialize failure: {e}",
                    self.key
                );
            }
        }
        result
    }

    fn suggest(
        &mut self,
        params: &nextedit::suggest::protocol::SuggestParams,
    ) -> Result<nextedit::suggest::protocol::SuggestResult, nextedit::suggest::SuggestError> {
        self.inner.suggest(params)
    }

    fn generate(
        &mut self,
        params: &nextedit::suggest::protocol::GenerateParams,
    ) -> Result<nextedit::suggest::protocol::GenerateResult, nextedit::suggest::SuggestError> {
        self.inner.generate(params)
    }

    fn shutdown(&mut self) {
        self.inner.shutdown();
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
/// whose workspace is a replay worktree,
/// attributed to steps by the suggester's `$/nextedit/replayStep` markers, go into
/// `run_reads` with source `lsp`. Waits (up to 30 s) for those sessions to end, so
/// everything they recorded is in the database.
fn collect_lsp_reads(
    db: &mut Database,
    run: i64,
    worktrees: &[(String, String, PathBuf)],
) -> anyhow::Result<()> {
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
            if sessions.iter().all(|s| s.status != "running")
                || std::time::Instant::now() >= deadline
            {
                break sessions.iter().map(|s| s.id).collect();
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut by_step: std::collections::BTreeMap<usize, Vec<StoredRead>> = Default::default();
        for id in ids {
            let session = reads.trajectory(id)?;
            for r in attribute_lsp_reads(&session) {
                by_step.entry(r.step).or_default().push(StoredRead {
                    call: r.call,
                    source: "lsp".to_string(),
                    file: r.read.file,
                    start_line: r.read.lines.start,
                    end_line: Some(r.read.lines.end),
                    via: Some(r.read.via),
                });
            }
        }
        for (step, reads) in by_step {
            db.add_run_reads(run, key, step, &reads)?;
        }
    }
    Ok(())
}

/// Stores a replay's progress in the run as it happens.
struct RunRecorder<'a> {
    db: &'a mut Database,
    run: i64,
    key: &'a str,
    trajectory: &'a Trajectory,
    steps: Vec<serde_json::Value>,
    historian: Option<HistorianLog>,
}

impl ReplayObserver for RunRecorder<'_> {
    fn started(&mut self, initial: usize, state: &ReplayState) -> Result<(), String> {
        if let Some(log) = &mut self.historian {
            log.started(initial, state);
        }
        let initial = &self.trajectory.edits[initial].id;
        self.db
            .set_run_trajectory(self.run, self.key, "running", Some(initial), None)
            .map_err(|e| e.to_string())
    }

    fn step(&mut self, record: &StepRecord, state: &ReplayState) -> Result<(), String> {
        for dropped in &record.dropped_reads {
            eprintln!(
                "nextedit: {} step {}: left out the suggester's {dropped}",
                self.key, record.step
            );
        }
        if let Some(log) = &mut self.historian {
            log.step(record, state);
        }
        self.steps.push(step_json(self.trajectory, record));
        self.db
            .record_step(self.run, self.key, &stored_step(self.trajectory, record))
            .map_err(|e| e.to_string())
    }
}

fn stored_step(trajectory: &Trajectory, step: &StepRecord) -> StoredStep {
    let id = |i: usize| trajectory.edits[i].id.clone();
    let prf = step.flow.prf();
    let counts = step.flow.counts();
    let mut errors = Vec::new();
    for (call, error) in [
        ("suggest", &step.suggest_error),
        ("generate", &step.generate_error),
    ] {
        if let Some(error) = error {
            let (kind, message) = error.split_once(": ").unwrap_or(("error", error));
            errors.push((call.to_string(), kind.to_string(), message.to_string()));
        }
    }
    StoredStep {
        step: step.step,
        applied: id(step.applied),
        allowed: step.allowed.iter().map(|&i| id(i)).collect(),
        remaining: step.remaining.len(),
        prf: (prf.precision, prf.recall, prf.f1),
        counts: (counts.tp, counts.fp, counts.fn_),
        content: step
            .content
            .as_ref()
            .map(|c| (id(c.gold), c.bleu, c.es, c.generated)),
        suggest_ms: step.suggest_latency.as_secs_f64() * 1e3,
        generate_ms: step.generate_latency.map(|d| d.as_secs_f64() * 1e3),
        flow: json!({
            "allowed": step.flow.allowed_gold,
            "predictions": step.flow.predictions.iter().map(|p| json!([p.rank, p.matched_gold, p.class.key()])).collect::<Vec<_>>(),
        }),
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
                class: p.class.key().to_string(),
            })
            .collect(),
        errors,
        reads: step
            .reads
            .iter()
            .map(|r| StoredRead {
                call: r.call.to_string(),
                source: "reported".to_string(),
                file: r.read.file.clone(),
                start_line: r.read.start_line,
                end_line: r.read.end_line,
                via: None,
            })
            .collect(),
    }
}

fn step_json(trajectory: &Trajectory, s: &StepRecord) -> serde_json::Value {
    let id = |i: usize| trajectory.edits[i].id.clone();
    let prf = s.flow.prf();
    json!({
        "step": s.step,
        "allowed": s.allowed.iter().map(|&i| id(i)).collect::<Vec<_>>(),
        "predictions": s.predictions.iter().map(|p| json!({
            "rank": p.rank, "file": p.edit.file, "start_line": p.edit.start_line, "end_line": p.edit.end_line,
            "matched": p.matched.map(id), "class": p.class.key(),
        })).collect::<Vec<_>>(),
        "precision": prf.precision, "recall": prf.recall, "f1": prf.f1,
        "content": s.content.as_ref().map(|c| json!({"edit": id(c.gold), "bleu": c.bleu, "es": c.es, "generated": c.generated})),
        "suggest_error": s.suggest_error, "generate_error": s.generate_error,
        "applied": id(s.applied),
    })
}

/// Every stored step of a run, as flow aggregation takes it.
fn run_flow_steps(db: &Database, run: i64) -> anyhow::Result<Vec<FlowStep>> {
    let mut steps = Vec::new();
    for (key, _, _) in db.run_trajectories(run)? {
        for (_, _, flow) in db.run_steps(run, &key)? {
            let predictions = flow["predictions"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .filter_map(|p| {
                            Some(RankedPrediction {
                                rank: p[0].as_u64()? as usize,
                                matched_gold: p[1].as_u64().map(|g| g as usize),
                                class: FlowClass::from_key(p[2].as_str()?)?,
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            steps.push(FlowStep {
                predictions,
                allowed_gold: flow["allowed"].as_u64().unwrap_or(0) as usize,
            });
        }
    }
    Ok(steps)
}

fn print_steps(
    out: &mut impl Write,
    key: &str,
    steps: &[serde_json::Value],
) -> std::io::Result<()> {
    writeln!(out, "{key}")?;
    writeln!(
        out,
        "  {:>4}  {:>5}  {:>5}  {:>5}  {:>6}  {:>5}  APPLIED",
        "STEP", "PREDS", "P", "R", "BLEU", "ES"
    )?;
    for s in steps {
        let content = &s["content"];
        writeln!(
            out,
            "  {:>4}  {:>5}  {:>5.3}  {:>5.3}  {:>6}  {:>5}  {}{}",
            s["step"],
            s["predictions"].as_array().map_or(0, Vec::len),
            s["precision"].as_f64().unwrap_or(0.0),
            s["recall"].as_f64().unwrap_or(0.0),
            content["bleu"]
                .as_f64()
                .map_or("-".into(), |v| format!("{v:.1}")),
            content["es"]
                .as_f64()
                .map_or("-".into(), |v| format!("{v:.3}")),
            s["applied"].as_str().unwrap_or(""),
            s["suggest_error"]
                .as_str()
                .map(|e| format!("  ({e})"))
                .unwrap_or_default()
        )?;
    }
    Ok(())
}

/// Compare stored replay runs
///
/// One line per run: micro and macro precision/recall/F1, hit@1/3, MRR, flow-pattern
/// shares; then mean BLEU-4 and ES of the content beside what doing nothing (an empty
/// answer / the unchanged text) scores on the same steps, latency of both calls
/// (p50/p95) and the failed calls by kind. Unsandboxed runs are marked.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run ids (see the first line `nextedit replay` prints); none: list the runs
    #[arg(value_name = "RUN")]
    runs: Vec<i64>,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Print JSON instead of a table
    #[arg(long)]
    json: bool,
}

pub fn report(args: ReportArgs) -> anyhow::Result<i32> {
    let db = Database::open_existing(&args.db.unwrap_or_else(nextedit::store::default_path))?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.runs.is_empty() {
        print_run_list(&mut out, &db, args.json)?;
        return Ok(0);
    }
    if args.json {
        for &run in &args.runs {
            let summary = aggregate(&run_flow_steps(&db, run)?, &HISTORIAN_KS);
            let context: Vec<serde_json::Value> = run_context(&db, run)?
                .into_iter()
                .map(|(key, scores)| match scores {
                    Ok(s) => json!({"key": key, "scores": s}),
                    Err(e) => json!({"key": key, "error": e}),
                })
                .collect();
            let info = db.run(run)?;
            let m = db.run_measurements(run)?;
            let baseline = noop_baseline(&db, run)?;
            let errors: serde_json::Map<String, serde_json::Value> = m
                .errors
                .iter()
                .map(|(k, n)| (k.clone(), json!(n)))
                .collect();
            let results = json!({
                "content_steps": m.bleu.len(),
                "mean_bleu": mean(&m.bleu),
                "mean_es": mean(&m.es),
                "baseline": baseline,
                "latency_ms": {
                    "suggest": {"p50": quantile(&m.suggest_ms, 0.5), "p95": quantile(&m.suggest_ms, 0.95)},
                    "generate": {"p50": quantile(&m.generate_ms, 0.5), "p95": quantile(&m.generate_ms, 0.95)},
                },
                "errors": errors,
            });
            writeln!(
                out,
                "{}",
                json!({"run": info, "sandbox": info.config.get("sandbox").cloned().unwrap_or(json!("unknown")),
                       "unsandboxed": unsandboxed(&info.config), "summary": summary, "results": results,
                       "contextbench": context})
            )?;
        }
        return Ok(0);
    }
    print_report(&mut out, &db, &args.runs)?;
    Ok(0)
}

fn print_report(out: &mut impl Write, db: &Database, runs: &[i64]) -> anyhow::Result<()> {
    writeln!(
        out,
        "{:>4}  {:>6}  {:>6}  {:>17}  {:>7}  {:>6}  {:>6}  {:>5}  {:>23}  SUGGESTER",
        "RUN",
        "TRAJ",
        "STEPS",
        "MICRO P/R/F1",
        "MACRO F1",
        "HIT@1",
        "HIT@3",
        "MRR",
        "KEEP/JUMP/REV/BREAK"
    )?;
    let mut details = Vec::new();
    for &run in runs {
        let info = db.run(run)?;
        let s = aggregate(&run_flow_steps(db, run)?, &HISTORIAN_KS);
        let hit = |k: usize| {
            s.hit_at
                .iter()
                .find(|(kk, _)| *kk == k)
                .map_or(0.0, |(_, v)| *v)
        };
        writeln!(
            out,
            "{:>4}  {:>6}  {:>6}  {:>5.3}/{:.3}/{:.3}  {:>7.3}  {:>6.3}  {:>6.3}  {:>5.3}  {:>23}  {}",
            run,
            format!("{}/{}", info.done, info.trajectories),
            s.steps,
            s.micro.precision,
            s.micro.recall,
            s.micro.f1,
            s.macro_.f1,
            hit(1),
            hit(3),
            s.mrr,
            format!(
                "{:.2}/{:.2}/{:.2}/{:.2}",
                s.shares.flow_keeping,
                s.shares.flow_jumping,
                s.shares.flow_reverting,
                s.shares.flow_breaking
            ),
            suggester_label(&info)
        )?;
        details.push((run, db.run_measurements(run)?));
    }
    writeln!(
        out,
        "\n{:>4}  {:>9}  {:>7}  {:>20}  {:>18}  {:>21}  {:>21}  FAILED CALLS",
        "RUN",
        "MEAN BLEU",
        "MEAN ES",
        "NOOP BLEU EMPTY/UNCH",
        "NOOP ES EMPTY/UNCH",
        "SUGGEST p50/p95 ms",
        "GENERATE p50/p95 ms"
    )?;
    let mut context = Vec::new();
    for (run, _) in &details {
        for (key, scores) in run_context(db, *run)? {
            context.push((*run, key, scores));
        }
    }
    for (run, m) in details {
        let errors: Vec<String> = m
            .errors
            .iter()
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        let b = noop_baseline(db, run)?;
        let pair = |x: Option<f64>, y: Option<f64>, digits: usize| match (x, y) {
            (Some(x), Some(y)) => format!("{x:.digits$}/{y:.digits$}"),
            _ => "-".to_string(),
        };
        writeln!(
            out,
            "{:>4}  {:>9}  {:>7}  {:>20}  {:>18}  {:>21}  {:>21}  {}",
            run,
            mean(&m.bleu).map_or("-".into(), |v| format!("{v:.1}")),
            mean(&m.es).map_or("-".into(), |v| format!("{v:.3}")),
            pair(b.empty_bleu, b.unchanged_bleu, 1),
            pair(b.empty_es, b.unchanged_es, 3),
            quantiles(&m.suggest_ms),
            quantiles(&m.generate_ms),
            if errors.is_empty() {
                "none".to_string()
            } else {
                errors.join(", ")
            }
        )?;
    }
    if !context.is_empty() {
        print_context(out, &context)?;
    }
    print_unsandboxed(out, db, runs)
}

/// Marks the runs whose suggester processes ran outside the sandbox.
fn print_unsandboxed(out: &mut impl Write, db: &Database, runs: &[i64]) -> anyhow::Result<()> {
    for &run in runs {
        let settings = RunSettings::of(db, run)?;
        if settings.suggester.starts_with("cmd:") && settings.sandbox != SANDBOXED {
            writeln!(
                out,
                "\nrun {run}: unsandboxed (its suggester could read the repository, the database and the network)"
            )?;
        }
    }
    Ok(())
}

/// What the suggester read in each trajectory of a run, scored with ContextBench (fixed
/// mode) against the trajectory's edited lines plus the definitions they use.
fn run_context(
    db: &Database,
    run: i64,
) -> anyhow::Result<Vec<(String, Result<SessionScores, String>)>> {
    let settings = RunSettings::of(db, run)?;
    let exclude_origins: Vec<Origin> = settings.exclude_origin.iter().map(|o| o.origin()).collect();
    let mut out = Vec::new();
    for (key, _, text) in db.run_trajectories(run)? {
        let stored = db.run_reads(run, &key)?;
        let (Some(text), Some(initial), false) =
            (text, db.run_initial(run, &key)?, stored.is_empty())
        else {
            continue;
        };
        let trajectory: Trajectory = serde_json::from_str(&text)
            .with_context(|| format!("run {run}: {key} is not a trajectory"))?;
        let mut applied = vec![initial];
        applied.extend(db.run_steps(run, &key)?.into_iter().map(|(_, a, _)| a));
        let mut reads: Vec<(usize, Vec<ReplayRead>)> = Vec::new();
        for (step, r) in stored {
            let read = ReplayRead {
                call: r.call,
                file: r.file,
                start_line: r.start_line,
                end_line: r.end_line,
            };
            match reads.last_mut() {
                Some((s, list)) if *s == step => list.push(read),
                _ => reads.push((step, vec![read])),
            }
        }
        match score_replay_reads(
            &trajectory,
            &exclude_origins,
            &applied,
            &reads,
            &ContextBenchConfig::default(),
        ) {
            Ok(Some(scores)) => out.push((key, Ok(scores))),
            Ok(None) => {}
            Err(e) => out.push((key, Err(e.to_string()))),
        }
    }
    Ok(out)
}

fn print_context(
    out: &mut impl Write,
    rows: &[(i64, String, Result<SessionScores, String>)],
) -> anyhow::Result<()> {
    writeln!(
        out,
        "\nCONTEXT: what the suggester read vs. the edited lines and the definitions they use (ContextBench, fixed mode)"
    )?;
    writeln!(
        out,
        "{:>4}  {:<28}  {:>5}  {:>13}  {:>13}  {:>13}  {:>13}  {:>8}  {:>11}",
        "RUN",
        "TRAJECTORY",
        "STEPS",
        "FILE C/P",
        "SYMBOL C/P",
        "SPAN C/P",
        "LINE C/P",
        "LINE AUC",
        "LINE REDUND"
    )?;
    let f = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
    for (run, key, scores) in rows {
        let key: String = key.chars().take(28).collect();
        match scores {
            Err(e) => writeln!(out, "{run:>4}  {key:<28}  {e}")?,
            Ok(s) => {
                let r = &s.result;
                let cp = |g: &GranularityScore| format!("{}/{}", f(g.coverage), f(g.precision));
                writeln!(
                    out,
                    "{run:>4}  {key:<28}  {:>5}  {:>13}  {:>13}  {:>13}  {:>13}  {:>8}  {:>11.3}",
                    r.num_steps,
                    cp(&r.final_scores.file),
                    cp(&r.final_scores.symbol),
                    cp(&r.final_scores.span),
                    cp(&r.final_scores.line),
                    f(r.trajectory.auc_coverage.line),
                    r.trajectory.redundancy.line
                )?;
            }
        }
    }
    Ok(())
}

/// The suggester column: its spec, marked when the run's suggester ran without sandbox.
/// The runs of a database, newest first, one line each (like `git log --oneline`):
/// id, start, status, trajectories done/all, micro F1, and the suggester in full.
fn print_run_list(out: &mut impl Write, db: &Database, json: bool) -> anyhow::Result<()> {
    let runs = db.runs()?;
    if json {
        for info in &runs {
            let s = aggregate(&run_flow_steps(db, info.id)?, &HISTORIAN_KS);
            writeln!(
                out,
                "{}",
                json!({"id": info.id, "started_at": info.started_at, "status": info.status,
                       "suggester": info.suggester, "trajectories": info.trajectories,
                       "done": info.done, "failed": info.failed, "steps": info.steps,
                       "micro_f1": s.micro.f1, "sandbox": info.config.get("sandbox")})
            )?;
        }
        return Ok(());
    }
    if runs.is_empty() {
        writeln!(out, "no replay runs in {}", db.path().display())?;
        return Ok(());
    }
    writeln!(
        out,
        "{:>4}  {:<24}  {:<11}  {:>9}  {:>8}  SUGGESTER",
        "RUN", "STARTED", "STATUS", "TRAJ", "MICRO F1"
    )?;
    for info in &runs {
        let s = aggregate(&run_flow_steps(db, info.id)?, &HISTORIAN_KS);
        writeln!(
            out,
            "{:>4}  {:<24}  {:<11}  {:>9}  {:>8.3}  {}",
            info.id,
            info.started_at,
            info.status,
            format!("{}/{}", info.done, info.trajectories),
            s.micro.f1,
            suggester_label(info)
        )?;
    }
    Ok(())
}

/// `nextedit runs`: list, show or delete replay runs.
pub fn runs(command: RunsCommand) -> anyhow::Result<i32> {
    let open = |db: Option<PathBuf>| {
        Database::open_existing(&db.unwrap_or_else(nextedit::store::default_path))
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match command {
        RunsCommand::List { db, json } => print_run_list(&mut out, &open(db)?, json)?,
        RunsCommand::Show { db, run } => {
            let db = open(db)?;
            print_report(&mut out, &db, &[run])?;
            writeln!(out)?;
            for (key, status, _) in db.run_trajectories(run)? {
                writeln!(out, "  {status:<8} {key}")?;
            }
        }
        RunsCommand::Delete { db, run } => {
            let erased = open(db)?.delete_run(run)?;
            writeln!(out, "deleted replay run {run}")?;
            if !erased.wal_cleared {
                writeln!(
                    out,
                    "warning: another process has the database open; its write-ahead log may \
                     still hold the run's text until that process ends"
                )?;
            }
        }
    }
    Ok(0)
}

/// `nextedit runs` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RunsCommand {
    /// List the replay runs, newest first (id, start, status, trajectories, micro F1,
    /// suggester)
    List {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// One JSON object per run
        #[arg(long)]
        json: bool,
    },
    /// One run's report and the status of each of its trajectories
    Show {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Run id
        run: i64,
    },
    /// Delete a run for good: its steps, predictions, reads and the copies of the
    /// trajectories it replayed (the database file is rebuilt so no text is left)
    Delete {
        /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
        #[arg(long, value_name = "PATH")]
        db: Option<PathBuf>,
        /// Run id
        run: i64,
    },
}

/// The suggester spec in full (never cut: two specs may share a long prefix), with
/// `unsandboxed` when the run's process ran without the sandbox.
fn suggester_label(info: &nextedit::store::RunSummary) -> String {
    let mark = if unsandboxed(&info.config) == Some(true) {
        " unsandboxed"
    } else {
        ""
    };
    format!("{}{mark}", info.suggester)
}

/// Whether the run's stored `sandbox` setting says off or unavailable; `None` when the
/// run predates the setting. Accepts a plain string or an object with a `mode`, `state`
/// or `status` string, or an `enabled`/`active` flag.
fn unsandboxed(config: &serde_json::Value) -> Option<bool> {
    let sandbox = config.get("sandbox")?;
    let off = |s: &str| {
        matches!(
            s,
            "off" | "unavailable" | "none" | "disabled" | "unsandboxed"
        )
    };
    if let Some(s) = sandbox.as_str() {
        return Some(off(s));
    }
    if let Some(b) = sandbox.as_bool() {
        return Some(!b);
    }
    for key in ["mode", "state", "status"] {
        if let Some(s) = sandbox.get(key).and_then(|v| v.as_str()) {
            return Some(off(s));
        }
    }
    for key in ["enabled", "active", "sandboxed"] {
        if let Some(b) = sandbox.get(key).and_then(|v| v.as_bool()) {
            return Some(!b);
        }
    }
    None
}

/// What `builtin:noop` scores on a run's scored steps: mean BLEU-4 and ES of an empty
/// answer and of the unchanged current text, against the same gold edits, under the
/// run's rule.
#[derive(Debug, Default, serde::Serialize)]
struct Baseline {
    empty_bleu: Option<f64>,
    empty_es: Option<f64>,
    unchanged_bleu: Option<f64>,
    unchanged_es: Option<f64>,
}

fn noop_baseline(db: &Database, run: i64) -> anyhow::Result<Baseline> {
    let rule = RunSettings::of(db, run)?.rule();
    let texts: std::collections::HashMap<String, Option<String>> = db
        .run_trajectories(run)?
        .into_iter()
        .map(|(key, _, text)| (key, text))
        .collect();
    let mut parsed: std::collections::HashMap<String, Trajectory> = Default::default();
    let (mut eb, mut ee, mut ub, mut ue) = (vec![], vec![], vec![], vec![]);
    for (key, edit) in db.run_content_edits(run)? {
        if !parsed.contains_key(&key) {
            let Some(Some(text)) = texts.get(&key) else {
                continue;
            };
            let trajectory: Trajectory = serde_json::from_str(text)
                .with_context(|| format!("run {run}: {key} is not a trajectory"))?;
            parsed.insert(key.clone(), trajectory);
        }
        let Some(gold) = parsed[&key].edits.iter().find(|e| e.id == edit) else {
            continue;
        };
        // When a gold edit is next, its lines hold its before-text (commit edits share
        // the parent; a recorded edit waits for the edits that rewrite its lines).
        let (before, after) = (&gold.before_text, &gold.after_text);
        let (b, e) = content_scores(rule, before, after, "");
        eb.push(b);
        ee.push(e);
        let (b, e) = content_scores(rule, before, after, before);
        ub.push(b);
        ue.push(e);
    }
    Ok(Baseline {
        empty_bleu: mean(&eb),
        empty_es: mean(&ee),
        unchanged_bleu: mean(&ub),
        unchanged_es: mean(&ue),
    })
}

/// The `q` quantile (nearest rank) of some values, if any.
fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Some(sorted[((sorted.len() - 1) as f64 * q).round() as usize])
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// `p50 / p95` of some latencies, or `-`.
fn quantiles(values: &[f64]) -> String {
    if values.is_empty() {
        return "-".to_string();
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    format!("{:.1} / {:.1}", at(0.5), at(0.95))
}
