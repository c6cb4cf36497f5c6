//! `nextedit tasks run`: ask a suggester for every task of a task file, run the covering
//! tests on each answer, store the results (the run is [`nextedit::service::tasks::runner`];
//! its `TaskRunEvents` are printed here as progress).

mod environment;
mod tests;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use nextedit::base::progress::{Progress, ProgressMode};
use nextedit::engine::suggest::cache::CacheMode;
use nextedit::service::tasks::runner::{
    TaskRunEvents, TaskRunGiven, TaskRunSettings, TaskRunStart, parse_task_file, run_tasks,
};
use nextedit::store::StoredTask;

/// Run a suggester on completion tasks and score its answers by their tests
///
/// For each task of TASKS (JSON Lines, `nextedit tasks cut`): the task's state is
/// written to a private scratch checkout (the commit's tree from --repo, then the
/// state's files), its tests are chosen (--tests-by: those that execute the hole's
/// lines in the state's coverage map, made once per state and cached, else those found
/// by name) and run on the ground truth first (a task whose tests fail on it, or that
/// has none, is invalid: reported, never counted), then
/// its do-nothing answers (the empty hole; for an incomplete suffix, the file as cut:
/// a task one of them passes is non-discriminating, reported, never counted), then
/// the suggester's `complete` answers (--samples N for pass@k) are tested one by one.
/// A suggester that does not answer `complete` is refused before the first task.
/// Tests and the suggester run in the sandbox (bubblewrap, no network, no capability,
/// seccomp; without it the run refuses to start unless --sandbox off), with only the
/// allowed environment (--env adds to it), each test run's process tree under
/// --timeout, --memory, --pids and --disk (a tree past one is killed: limit: time,
/// memory, pids, disk). A test run is cached in the database by (state, answer,
/// command, limits, sandbox and the test environment's fingerprint: the interpreter,
/// its version and installed packages, or `go version`): an identical answer is not
/// run twice, in this run or a later one (--exec-cache off: every test runs).
///
/// Default test commands: Python `python3 -m pytest -q -p no:cacheprovider FILE::NAME…`,
/// Go `go test -count=1 -run '^(A|B)$' ./PKG…`. --test-command replaces them with a
/// shell command in which {tests} (FILE::NAME…), {names} (A|B), {packages} (./PKG…)
/// and {files} are substituted.
///
/// builtin:oracle answers each task's ground truth (pass@1 = 1 on valid tasks).
///
/// Test environment (docs/tasks.md): --python names the venv's interpreter, the
/// checkout comes first on the import path (src layouts found), an import canary
/// refuses a run whose tests would import an installed copy, --setup runs once per
/// checkout. --sandbox off runs the same command, variables and import path.
///
/// Figures: `nextedit tasks report RUN`. Interrupted: --resume RUN, with the same
/// --suggester, --repo, --test-command, --python, --setup, --sandbox and --cache-db
/// (compared with the stored ones: nothing a database names is run on its word).
///
/// Examples:
///   nextedit tasks run tasks.jsonl --repo ~/src/proj --suggester builtin:oracle --db t.db
///   nextedit tasks run tasks.jsonl --repo ~/src/proj --suggester 'cmd:python3 /opt/s.py' \
///       --samples 5 --jobs 2 --db t.db
///   nextedit tasks run tasks.jsonl --repo ~/src/proj --suggester builtin:oracle --resume 3 --db t.db
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct RunArgs {
    /// The task file (JSON Lines, one task a line)
    #[arg(value_name = "TASKS")]
    tasks: PathBuf,

    /// builtin:oracle, builtin:noop, builtin:retrieve, openai:<URL>?model=<NAME>,
    /// lsp:<command> or cmd:<command line> (with --resume: the run's, again)
    #[arg(long, value_name = "SPEC", required_unless_present = "resume")]
    suggester: Option<String>,

    /// Repository the tasks' commits are read from (repeatable; matched to a task by
    /// directory name, or the only one given)
    #[arg(long, value_name = "DIR")]
    repo: Vec<PathBuf>,

    /// Answers asked per task (pass@k's n)
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true, value_parser = nextedit::base::ranges::samples)]
    samples: u32,

    /// Database [default: $NEXTEDIT_DB, else $XDG_DATA_HOME/nextedit/nextedit.db]
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,

    /// Tasks run at once
    #[arg(long, value_name = "J", default_value_t = 1, allow_negative_numbers = true, value_parser = nextedit::base::ranges::jobs)]
    jobs: usize,

    /// Continue task run RUN with its stored settings (the same task file; the same
    /// --suggester, --repo, --test-command, --sandbox and --cache-db again)
    #[arg(long, value_name = "RUN")]
    resume: Option<i64>,

    /// Shell command running the covering tests instead of the language's default
    #[arg(long, value_name = "CMD")]
    test_command: Option<String>,

    /// Time limit of one test run, seconds
    #[arg(long, value_name = "S", default_value_t = 120.0, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    timeout: f64,

    /// Memory of one test run's process tree (and the suggester's), MiB (a cgroup's
    /// limit; RLIMIT_AS per process where no cgroup can be made)
    #[arg(long, value_name = "MIB", default_value_t = 4096, allow_negative_numbers = true, value_parser = nextedit::base::ranges::memory_mib)]
    memory: u64,

    #[command(flatten)]
    jail: super::super::JailArgs,

    #[command(flatten)]
    environment: environment::EnvArgs,

    #[command(flatten)]
    tests: tests::TestsArgs,

    /// Where tests and the suggester run: bwrap (no network, only the checkout
    /// writable; the run refuses to start when it cannot be made) or off
    #[arg(long, value_enum, default_value_t = SandboxArg::Bwrap)]
    sandbox: SandboxArg,

    /// Limit of one `complete` call, seconds
    #[arg(long, value_name = "S", default_value_t = 60.0, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    call_timeout: f64,

    /// How `complete` answers are cached (cmd:, openai: and lsp: suggesters; built-ins
    /// never are): read-write (serve what was asked before, ask and store the rest),
    /// read-only (serve only; a call not in the cache fails that answer, and the model
    /// need not be running: re-score a published run), or off. Keyed by the spec, the
    /// sample's index and the request (the checkout's path left out)
    #[arg(long, value_enum, value_name = "MODE", default_value_t = CacheArg::ReadWrite)]
    cache: CacheArg,

    /// Keep the response cache in this database instead of --db's
    #[arg(long, value_name = "PATH")]
    cache_db: Option<PathBuf>,

    /// No progress lines
    #[arg(short, long)]
    quiet: bool,
}

/// `--sandbox` (`auto`, which fell back to no sandbox, is gone).
#[derive(Debug, Clone, Copy, ValueEnum)]
enum SandboxArg {
    Bwrap,
    Off,
}

/// `--cache`.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum CacheArg {
    ReadWrite,
    ReadOnly,
    Off,
}

struct Printer {
    progress: Progress,
    tasks: Vec<String>,
}

impl TaskRunEvents for Printer {
    fn started(&mut self, run: i64, total: usize, todo: usize, sandboxed: bool) {
        self.progress.suspend(|| {
            eprintln!("nextedit: task run {run}: {todo} of {total} tasks to do");
            // Said even with --quiet: the user chose it.
            if !sandboxed {
                eprintln!(
                    "nextedit: tests and suggester run UNSANDBOXED (--sandbox off): they can read the repository, the database and the network"
                );
            }
        });
        self.progress.start(todo);
    }

    fn task_done(&mut self, task: &StoredTask) {
        let outcome = if task.valid {
            let passed = task.answers.iter().filter(|a| a.passed).count();
            let cached = task.answers.iter().filter(|a| a.cached).count();
            format!("{passed}/{} passed, {cached} cached", task.answers.len())
        } else if let Some(why) = &task.excluded {
            format!("non-discriminating: {why}")
        } else {
            format!("invalid: {}", task.invalid_reason.as_deref().unwrap_or(""))
        };
        let name = self.tasks.get(task.index).cloned().unwrap_or_default();
        self.progress.item(&name, &outcome);
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.tasks)
        .with_context(|| format!("reading task file {}", args.tasks.display()))?;
    let tasks =
        parse_task_file(&text).with_context(|| format!("task file {}", args.tasks.display()))?;
    let db_path = args.db.unwrap_or_else(nextedit::store::default_path);
    // Ctrl-C and SIGTERM end every test run's and suggester's tree; daemons of
    // unsandboxed tests are adopted, to be killed with their test run.
    nextedit::service::run::install_process_guards()?;
    super::super::note_per_process_limits();
    let sandbox = match args.sandbox {
        SandboxArg::Bwrap => "bwrap",
        SandboxArg::Off => "off",
    }
    .to_string();
    let python = args.environment.python()?;
    let setup = args.environment.setup.clone();
    let (tests_by, max_tests, coverage_timeout, exec_cache) = args.tests.settings();
    let start = match (args.resume, args.suggester.clone()) {
        (Some(run), suggester) => TaskRunStart::Resume {
            run,
            given: TaskRunGiven {
                suggester,
                repos: args.repo.clone(),
                test_command: args.test_command.clone(),
                sandbox,
                cache_db: args.cache_db.clone(),
                env: args.jail.env.clone(),
                memory_mib: args.memory,
                pids: args.jail.pids,
                disk_mib: args.jail.disk,
                exec_cache,
                python,
                setup,
            },
        },
        (None, suggester) => TaskRunStart::New(TaskRunSettings {
            tests_by,
            max_tests,
            coverage_timeout,
            suggester: suggester.expect("clap requires it"),
            samples: args.samples,
            repos: args.repo.clone(),
            test_command: args.test_command.clone(),
            timeout: args.timeout,
            memory_mib: args.memory,
            pids: args.jail.pids,
            disk_mib: args.jail.disk,
            env: args.jail.env.clone(),
            sandbox,
            call_timeout: args.call_timeout,
            cache: match args.cache {
                CacheArg::ReadWrite => CacheMode::ReadWrite,
                CacheArg::ReadOnly => CacheMode::ReadOnly,
                CacheArg::Off => CacheMode::Off,
            },
            cache_db: args.cache_db.clone(),
            exec_cache,
            python,
            setup,
        }),
    };
    let mut printer = Printer {
        progress: Progress::new(ProgressMode::detect(args.quiet), "tasks"),
        tasks: tasks.iter().map(|t| t.id.clone()).collect(),
    };
    let summary = run_tasks(
        &db_path,
        &args.tasks.to_string_lossy(),
        &tasks,
        start,
        args.jobs,
        &mut printer,
    )
    .with_context(|| format!("task run into {}", db_path.display()))?;
    printer.progress.finish();
    Ok(report(&summary))
}

/// The summary on stdout; 1 (said on stderr) when nothing was measured or answered.
fn report(summary: &nextedit::service::tasks::runner::TaskRunSummary) -> i32 {
    println!(
        "task run {}: {} tasks done, {} test runs, {} from the cache",
        summary.run, summary.done, summary.executed, summary.cached
    );
    if let Some(line) = summary.coverage_line() {
        println!("{line}");
    }
    let (served, asked) = summary.calls;
    if served + asked > 0 {
        println!("complete calls: {asked} asked, {served} from the response cache");
    }
    // Nothing measured is a failure, said loudly (invalid tasks alone are not).
    if summary.valid == 0 {
        eprintln!(
            "nextedit: no valid task: every task's ground truth failed its tests, it named none, or a do-nothing answer passed them too (tasks report {} lists why)",
            summary.run
        );
        return 1;
    }
    if summary.answers.0 > 0 && summary.answers.1 == summary.answers.0 {
        eprintln!(
            "nextedit: the suggester answered no call ({} failed; tasks report {} shows the runs, task_answers.error why)",
            summary.answers.1, summary.run
        );
        return 1;
    }
    0
}
