//! Running a task's covering tests on an answer: the scratch checkout of the task's
//! state, the test command of its language (or the user's), and the run itself in
//! the sandbox without network (`sys`: bubblewrap, seccomp, the environment
//! allow-list with a fresh `HOME` per run), under the limits of its whole process
//! tree (processes, memory, disk; `sys::jail`) and a wall clock, the tree killed at
//! the first one it hits and the run failed as that [`Limit`].
//!
//! The checkout is written once per task ([`Checkout::create`]): the commit's tree,
//! then the state's own files, each through `replay::worktree` (only inside the
//! directory, `RelPath`s); each answer rewrites only the task's file. Test runs are
//! keyed by [`state_hash`], [`answer_hash`] and the command line, so an identical
//! answer never runs twice (the cache lives in the database, `store::tasks`).
//!
//! Each run gets a fresh `HOME` and `TMPDIR`; a Go module cache passed with `--env
//! GOMODCACHE` is shown read-only, and a vendored module runs with `-mod=vendor`.
//! [`environment_fingerprint`] (interpreter, version, installed distributions, or `go
//! version`, and the setup) is probed like a test run and keys the cache too;
//! [`python_command`] is the interpreter of a checkout's Python runs without
//! `--python`; [`Checkout::set_up`] and [`Checkout::canary`] run the setup and the
//! import canary like a test run.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::base::sys::env::Environment;
use crate::base::sys::jail::Jail;
use crate::base::sys::limits::{Limit, Limits};
use crate::base::sys::process;
use crate::base::sys::sandbox::{Sandbox, Unavailable, command_paths};
use crate::core::trajectory::RelPath;
use crate::engine::history::source::{CommitSource, GitRepository};
use crate::engine::replay::write_inside;

use super::Task;
use super::environment::{TestEnvironment, module_of};

/// Lines of test output kept per execution.
pub const OUTPUT_TAIL_LINES: usize = 40;

/// Why a task's tests could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// No test executes the hole's lines (coverage) or calls its function (name).
    #[error("no covering test: none executes the hole's lines or calls its function by name")]
    NoTests,
    /// No default test command for the language and no `--test-command`.
    #[error("no default test command for language {language:?} (task {task}): pass --test-command")]
    NoCommand {
        /// Task id.
        task: String,
        /// Its language.
        language: String,
    },
    /// A path of the task is not a relative path inside the repository.
    #[error("task {task}: bad path {path:?}: {reason}")]
    BadPath {
        /// Task id.
        task: String,
        /// The path.
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// The state's commit could not be checked out.
    #[error("task {task}: checking out {commit}: {reason}")]
    Checkout {
        /// Task id.
        task: String,
        /// The commit.
        commit: String,
        /// What failed.
        reason: String,
    },
    /// Writing the checkout or starting the command failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Where the tests run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// The sandbox, or no run at all.
    Bwrap,
    /// No sandbox (the network stays reachable).
    Off,
}

/// The limits, sandbox and environment of one test run.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecLimits {
    /// Wall-clock limit; the whole tree is killed after it.
    pub timeout: Duration,
    /// Processes, memory and disk of the whole tree.
    pub limits: Limits,
    /// Run inside the sandbox (no network, only the checkout writable).
    pub sandbox: bool,
    /// Variables of nextedit's environment passed beyond the allow-list (`--env`).
    pub env: Vec<String>,
    /// The interpreter, import path and setup of the tests (`--python`, `--setup`).
    pub environment: TestEnvironment,
}

/// The outcome of one test run.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// Exit code 0 within the time limit.
    pub passed: bool,
    /// Exit code (`None` when killed by a signal or the time limit).
    pub exit_code: Option<i32>,
    /// The time limit was hit.
    pub timed_out: bool,
    /// The limit the run hit (its tree was killed for it): [`Limit::Time`] when it
    /// timed out.
    pub limit: Option<Limit>,
    /// The last [`OUTPUT_TAIL_LINES`] lines of stdout and stderr together.
    pub output_tail: String,
    /// Wall time of the run, ms.
    pub duration_ms: f64,
}

/// The command line that runs `task`'s covering tests: `custom` (a shell command with
/// `{tests}`, `{names}`, `{packages}`, `{files}` substituted) or the language's default.
pub fn test_command(task: &Task, custom: Option<&str>) -> Result<Vec<String>, ExecError> {
    if task.tests.is_empty() {
        return Err(ExecError::NoTests);
    }
    let mut ids: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut files: Vec<String> = Vec::new();
    let mut packages: Vec<String> = Vec::new();
    for test in &task.tests {
        ids.push(format!("{}::{}", test.file, test.name));
        push_new(&mut names, test.name.clone());
        push_new(&mut files, test.file.clone());
        let dir = Path::new(&test.file)
            .parent()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        push_new(
            &mut packages,
            if dir.is_empty() {
                ".".to_string()
            } else {
                format!("./{dir}")
            },
        );
    }
    let run_regex = format!("^({})$", names.join("|"));
    if let Some(custom) = custom {
        let quoted = |items: &[String]| {
            shlex::try_join(items.iter().map(String::as_str)).unwrap_or_default()
        };
        let line = custom
            .replace("{tests}", &quoted(&ids))
            .replace("{names}", &quoted(&[names.join("|")]))
            .replace("{packages}", &quoted(&packages))
            .replace("{files}", &quoted(&files));
        return Ok(vec!["sh".into(), "-c".into(), line]);
    }
    match task.language.as_str() {
        "python" => {
            // `--python`'s interpreter replaces it (TestEnvironment::with_interpreter).
            let mut argv = vec!["python3".to_string()];
            argv.extend(["-m", "pytest", "-q", "-p", "no:cacheprovider"].map(String::from));
            argv.extend(ids);
            Ok(argv)
        }
        "go" => {
            let mut argv: Vec<String> = ["go", "test", "-count=1", "-run"]
                .map(String::from)
                .to_vec();
            argv.push(run_regex);
            argv.extend(packages);
            Ok(argv)
        }
        other => Err(ExecError::NoCommand {
            task: task.id.clone(),
            language: other.to_string(),
        }),
    }
}

fn push_new(items: &mut Vec<String>, item: String) {
    if !items.contains(&item) {
        items.push(item);
    }
}

/// The file's real text after the hole: `state_suffix` when the task hides part of it
/// (incomplete suffix), else the suffix it shows.
pub fn real_suffix(task: &Task) -> &str {
    task.state_suffix.as_deref().unwrap_or(&task.suffix)
}

/// sha256 (hex) of everything in the task that decides a test run besides the answer:
/// the commit, the state's files, the task's file, prefix, suffix and tests.
pub fn state_hash(task: &Task) -> String {
    let mut parts = commit_and_files(task);
    parts.extend([&task.file, &task.prefix, real_suffix(task)].map(str::as_bytes));
    for test in &task.tests {
        parts.extend([test.file.as_bytes(), test.name.as_bytes()]);
    }
    digest(parts)
}

/// The parts of `task` every state hash starts with: its commit and its files.
pub(crate) fn commit_and_files(task: &Task) -> Vec<&[u8]> {
    let mut parts = vec![task.state.commit.as_deref().unwrap_or("").as_bytes()];
    for file in &task.state.files {
        parts.extend([file.path.as_bytes(), file.text.as_bytes()]);
    }
    parts
}

/// sha256 (hex) of `parts`, each preceded by its length (so no two lists of parts
/// give the same bytes).
pub(crate) fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

/// sha256 (hex) of an answer.
pub fn answer_hash(answer: &str) -> String {
    hex(&Sha256::digest(answer.as_bytes()))
}

/// Prints the interpreter, its version and a sha256 of its installed distributions
/// (name and version, sorted): what a Python test run's outcome depends on beyond the
/// checkout.
const PYTHON_PROBE: &str = "import sys, hashlib, importlib.metadata as m; \
ds = sorted('%s==%s' % (d.metadata['Name'], d.version) for d in m.distributions()); \
print(sys.executable); print(sys.version.replace(chr(10), ' ')); \
print(len(ds), hashlib.sha256(chr(10).join(ds).encode()).hexdigest())";

/// The environment fingerprint of `language`'s test runs, for the execution cache's
/// key: what its interpreter or toolchain says of itself, run like a test (in `dir`,
/// under `limits`, in the sandbox when they say so), and the setup command. Python:
/// the interpreter ([`python_command`]), its version and installed distributions; Go:
/// `go version`; other languages: none. A probe that cannot run gives its failure,
/// which is a fingerprint too.
pub fn environment_fingerprint(
    language: &str,
    custom: Option<&str>,
    dir: &Path,
    limits: &ExecLimits,
    cache: &Path,
) -> Result<String, ExecError> {
    let argv: Vec<String> = match language {
        "python" => [
            python_command(custom, &limits.environment),
            vec!["-c".into(), PYTHON_PROBE.into()],
        ]
        .concat(),
        "go" => vec!["go".into(), "version".into()],
        _ => return Ok("none".to_string()),
    };
    std::fs::create_dir_all(dir).map_err(|source| ExecError::Io {
        what: format!("creating {}", dir.display()),
        source,
    })?;
    let probe = run_limited(&argv, dir, limits, cache)?;
    let said = format!(
        "{:?} {} {}",
        probe.exit_code,
        probe.output_tail,
        limits.environment.describe()
    );
    Ok(hex(&Sha256::digest(said.as_bytes()))[..16].to_string())
}

/// The command that runs Python in a checkout, to which a script and its arguments
/// are added: `--python`'s interpreter ([`TestEnvironment::python_program`]); else
/// the custom test command's interpreter when its first word after any `NAME=value`
/// assignments is one (`PYTHONPATH=src .venv/bin/python -m pytest {tests}` → `env
/// PYTHONPATH=src .venv/bin/python`); else `python3` (found on `PATH`). The
/// environment's fingerprint and the coverage map ([`super::covermap`]) run under it.
pub fn python_command(custom: Option<&str>, environment: &TestEnvironment) -> Vec<String> {
    if environment.python.is_some() {
        return vec![environment.python_program()];
    }
    let words = custom.and_then(shlex::split).unwrap_or_default();
    let assignment = |w: &String| {
        w.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    let assignments: Vec<String> = words
        .iter()
        .take_while(|w| assignment(w))
        .cloned()
        .collect();
    let interpreter = (words.get(assignments.len())).filter(|w| {
        let name = w.rsplit('/').next().unwrap_or(w);
        name.starts_with("python")
    });
    match interpreter {
        Some(program) if assignments.is_empty() => vec![program.clone()],
        Some(program) => {
            let mut argv = vec!["env".to_string()];
            argv.extend(assignments);
            argv.push(program.clone());
            argv
        }
        None => vec!["python3".to_string()],
    }
}

/// What fills a task's file for one test run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filling<'a> {
    /// An answer at the hole, the file's real text after it.
    Answer(&'a str),
    /// The file as the task shows it, prefix then the shown suffix: an incomplete-suffix
    /// task's state as cut (the rest of its function or file gone).
    AsCut,
}

impl Filling<'_> {
    /// This filling's key in the execution cache (the state hash covers the rest).
    pub fn key(&self, task: &Task) -> String {
        match self {
            Filling::Answer(answer) => answer_hash(answer),
            // Never the hash of an answer: an answer is hashed alone, this with a tag.
            Filling::AsCut => format!("as-cut:{}", answer_hash(&task.suffix)),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A task's state on disk in a private scratch directory.
pub struct Checkout {
    root: PathBuf,
    file: RelPath,
}

impl Checkout {
    /// Writes `task`'s state into `root` (created; must be empty or missing): the
    /// commit's tree from `repo`, then the state's files, then the task's file with the
    /// hole empty.
    pub fn create(
        task: &Task,
        repo: Option<&GitRepository>,
        root: &Path,
    ) -> Result<Checkout, ExecError> {
        let bad = |path: &str, e: &dyn std::fmt::Display| ExecError::BadPath {
            task: task.id.clone(),
            path: path.to_string(),
            reason: e.to_string(),
        };
        let file = RelPath::parse(&task.file).map_err(|e| bad(&task.file, &e))?;
        std::fs::create_dir_all(root).map_err(|source| ExecError::Io {
            what: format!("creating {}", root.display()),
            source,
        })?;
        if let Some(commit) = &task.state.commit {
            let repo = repo.ok_or_else(|| ExecError::Checkout {
                task: task.id.clone(),
                commit: commit.clone(),
                reason: format!(
                    "no repository given for {:?} (pass --repo)",
                    task.repository
                ),
            })?;
            repo.checkout(commit, root)
                .map_err(|e| ExecError::Checkout {
                    task: task.id.clone(),
                    commit: commit.clone(),
                    reason: e.to_string(),
                })?;
        }
        for state_file in &task.state.files {
            let rel = RelPath::parse(&state_file.path).map_err(|e| bad(&state_file.path, &e))?;
            write_inside(root, &rel, &state_file.text).map_err(|source| ExecError::Io {
                what: format!("writing {} of task {}", rel, task.id),
                source,
            })?;
        }
        let checkout = Checkout {
            root: root.to_path_buf(),
            file,
        };
        checkout.write(task, &format!("{}{}", task.prefix, task.suffix))?;
        Ok(checkout)
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes the task's file: as the state holds it with an answer in the hole
    /// (`prefix + answer + ` the real rest of the file, [`real_suffix`]), or as cut.
    pub fn fill(&self, task: &Task, filling: Filling) -> Result<(), ExecError> {
        let text = match filling {
            Filling::Answer(answer) => format!("{}{answer}{}", task.prefix, real_suffix(task)),
            Filling::AsCut => format!("{}{}", task.prefix, task.suffix),
        };
        self.write(task, &text)
    }

    fn write(&self, task: &Task, text: &str) -> Result<(), ExecError> {
        write_inside(&self.root, &self.file, text).map_err(|source| ExecError::Io {
            what: format!("writing {} of task {}", self.file, task.id),
            source,
        })
    }

    /// Runs `argv` in the checkout under `limits`; `cache` is a writable directory
    /// shared by the run's test runs (Go's build cache).
    pub fn run(
        &self,
        argv: &[String],
        limits: &ExecLimits,
        cache: &Path,
    ) -> Result<Execution, ExecError> {
        run_limited(argv, &self.root, limits, cache)
    }

    /// Runs the setup command of `limits` (`--setup`) in the checkout like a test run:
    /// `None` when there is none or it passed, else its failed run.
    pub fn set_up(
        &self,
        limits: &ExecLimits,
        cache: &Path,
    ) -> Result<Option<Execution>, ExecError> {
        let Some(argv) = limits.environment.setup_argv() else {
            return Ok(None);
        };
        let execution = self.run(&argv, limits, cache)?;
        Ok((!execution.passed).then_some(execution))
    }

    /// The import canary of `task`'s file, run like a test run: `None` when the task
    /// is not Python or its file is not a module the tests import
    /// ([`module_of`]).
    pub fn canary(
        &self,
        task: &Task,
        limits: &ExecLimits,
        cache: &Path,
    ) -> Result<Option<Canary>, ExecError> {
        if task.language != "python" {
            return Ok(None);
        }
        let Some(module) = module_of(&self.root, self.file.as_str()) else {
            return Ok(None);
        };
        let file = self.root.join(self.file.as_str());
        let expected = file.canonicalize().unwrap_or(file);
        let execution = self.run(&limits.environment.canary_argv(&module), limits, cache)?;
        Ok(Some(Canary::judge(
            &module,
            self.file.as_str(),
            &expected,
            &execution,
        )))
    }
}

/// What the canary found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Canary {
    /// The module is the checkout's file.
    Checkout,
    /// Another file is imported under the module's name.
    Shadowed {
        /// The module.
        module: String,
        /// The file the tests would import instead.
        origin: String,
        /// The checkout's file (relative).
        file: String,
    },
    /// Nothing could be said (the probe failed, or the module is not found at all):
    /// the tests decide.
    Unverified(String),
}

impl Canary {
    /// The verdict of a canary run for `module`, whose file in the checkout is
    /// `expected` (real path); `file` is the task's relative path.
    pub fn judge(module: &str, file: &str, expected: &Path, execution: &Execution) -> Canary {
        let found = (execution.output_tail.lines())
            .filter_map(|line| line.strip_prefix("nextedit-canary: "))
            .next_back();
        match found {
            None => Canary::Unverified(execution.output_tail.clone()),
            Some("") => Canary::Unverified(format!("module {module} is not found")),
            Some(origin) if Path::new(origin) == expected => Canary::Checkout,
            Some(origin) => Canary::Shadowed {
                module: module.to_string(),
                origin: origin.to_string(),
                file: file.to_string(),
            },
        }
    }

    /// What a shadowed module means and how to fix it; `None` unless shadowed.
    pub fn shadowing(&self) -> Option<String> {
        let Canary::Shadowed {
            module,
            origin,
            file,
        } = self
        else {
            return None;
        };
        Some(format!(
            "the tests would import module {module} from {origin}, not the checkout's {file}: an installed copy of the package shadows the checkout. Use a venv holding the tests' dependencies but not the package (--python), or uninstall it from this one"
        ))
    }
}

/// The paths a test command needs read-only inside the sandbox (its program's install
/// prefix, e.g. a venv; never the forbidden ones).
fn read_only_paths(argv: &[String], forbidden: &[PathBuf]) -> Vec<PathBuf> {
    let program = match argv.first().map(String::as_str) {
        Some("sh") => argv.get(2).cloned().unwrap_or_default(),
        // `env NAME=value PROGRAM …` ([`python_command`]): PROGRAM's install prefix.
        Some("env") => shlex::try_join(argv[1..].iter().map(String::as_str)).unwrap_or_default(),
        _ => shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_default(),
    };
    let mut paths = command_paths(&program, forbidden);
    // A shell command's programs are its words' programs: bind the PATH entries that
    // are not system directories, so `python3` of a venv is found inside too.
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.is_absolute()
                && dir.join("python3").exists()
                && let Some(prefix) = dir.parent()
                && !forbidden
                    .iter()
                    .any(|f| f.starts_with(prefix) || prefix.starts_with(f))
                && !paths.contains(&prefix.to_path_buf())
                && !prefix.starts_with("/usr")
            {
                paths.push(prefix.to_path_buf());
            }
        }
    }
    paths
}

/// Runs `argv` in `root` like a test run: under `limits` (their sandbox, environment
/// and limits), `cache` a writable directory shared by the run's test runs.
pub fn run_limited(
    argv: &[String],
    root: &Path,
    limits: &ExecLimits,
    cache: &Path,
) -> Result<Execution, ExecError> {
    std::fs::create_dir_all(cache).map_err(io(format!("creating {}", cache.display())))?;
    let (home, tmp) = fresh_dirs(root)?;
    let jail = Jail {
        sandbox: (limits.sandbox).then(|| test_sandbox(argv, root, limits, cache, &home, &tmp)),
        limits: limits.limits,
        env: test_env(root, limits, cache, &tmp),
        home: home.clone(),
        // The checkout and its HOME.
        disk: root.parent().map(Path::to_path_buf),
    };
    let ran = run_jailed(&jail, argv, root, limits)?;
    let _ = std::fs::remove_dir_all(&home);
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(ran.execution(limits))
}

/// The error of a failed `what` (`creating …`, `starting …`).
fn io(what: String) -> impl FnOnce(std::io::Error) -> ExecError {
    move |source| ExecError::Io { what, source }
}

/// A fresh HOME and TMPDIR for a run in `root`, beside it (`ROOT.home` emptied,
/// `ROOT.home.tmp` emptied and made).
fn fresh_dirs(root: &Path) -> Result<(PathBuf, PathBuf), ExecError> {
    // A fresh HOME per run, beside the checkout: nothing one answer's tests leave in
    // it (a `.pth` in the user site, a config) reaches the next answer's.
    let mut name = root.file_name().unwrap_or_default().to_owned();
    name.push(".home");
    let home = root.with_file_name(&name);
    let _ = std::fs::remove_dir_all(&home);
    // A fresh TMPDIR too, sandboxed or not: tests never meet another run's files in
    // a shared /tmp, and both modes give the same variables.
    name.push(".tmp");
    let tmp = root.with_file_name(name);
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(io(format!("creating {}", tmp.display())))?;
    Ok((home, tmp))
}

/// The sandbox of a test run in `root`: the command's and the interpreter's paths
/// read-only, the run's cache, `home` and `tmp` writable, no network.
fn test_sandbox(
    argv: &[String],
    root: &Path,
    limits: &ExecLimits,
    cache: &Path,
    home: &Path,
    tmp: &Path,
) -> Sandbox {
    let mut read_only = read_only_paths(argv, &[root.to_path_buf()]);
    read_only.extend(limits.environment.read_only().iter().cloned());
    // A Go module cache passed with `--env GOMODCACHE` (filled beforehand: the
    // tests have no network) is read from where it is.
    if limits.env.iter().any(|name| name == "GOMODCACHE")
        && let Some(cache) = std::env::var_os("GOMODCACHE").map(PathBuf::from)
        && cache.is_absolute()
    {
        read_only.push(cache);
    }
    Sandbox {
        scratch: root.to_path_buf(),
        read_only,
        writable: vec![cache.to_path_buf(), home.to_path_buf(), tmp.to_path_buf()],
        network: false,
    }
}

/// The environment of a test run in `root` beyond the allow-list: `--env`'s
/// variables, Python's and Go's settings (offline, caches in `cache`), `TMPDIR`, and
/// the test environment's own.
fn test_env(root: &Path, limits: &ExecLimits, cache: &Path, tmp: &Path) -> Environment {
    // A vendored module builds from its vendor directory; else from the module cache
    // (offline: what the run's cache holds).
    let go_mod = if root.join("vendor/modules.txt").is_file() {
        "-mod=vendor"
    } else {
        "-mod=mod"
    };
    let mut env = Environment::passing(&limits.env)
        .with("PYTHONDONTWRITEBYTECODE", "1")
        .with("TMPDIR", &tmp.to_string_lossy())
        .with("GOCACHE", &cache.join("go-build").to_string_lossy())
        .with("GOPATH", &cache.join("gopath").to_string_lossy())
        .with("GOPROXY", "off")
        .with("GOFLAGS", go_mod)
        .with("GOTOOLCHAIN", "local");
    for (name, value) in limits.environment.vars(root, &limits.env) {
        env = env.with(&name, &value);
    }
    env
}

/// What a run gave, before it is judged.
struct Ran {
    /// Its exit status (`None` when it could not be waited for).
    status: Option<ExitStatus>,
    duration_ms: f64,
    /// The limit its tree was killed for.
    limit: Option<Limit>,
    /// Its stdout, then its stderr.
    output: Vec<u8>,
}

/// Runs `argv` in `root` in `jail` until it exits or `limits.timeout` passes (then
/// its whole tree is killed), its output read all along.
fn run_jailed(
    jail: &Jail,
    argv: &[String],
    root: &Path,
    limits: &ExecLimits,
) -> Result<Ran, ExecError> {
    let starting = || format!("starting {:?} in {}", argv[0], root.display());
    let (mut command, pending) = jail
        .command(argv, root)
        .map_err(|e| io(starting())(std::io::Error::other(e.to_string())))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let (mut child, tree) = pending.spawn(&mut command).map_err(io(starting()))?;
    // Both pipes drained on their own threads, so a chatty test cannot block on a full pipe.
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = match process::wait_until(&mut child, started + limits.timeout) {
        Ok(Some(status)) => Some(status),
        Ok(None) => {
            tree.time_out();
            child.wait().ok()
        }
        Err(_) => None,
    };
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let limit = tree.limit();
    // Whatever the command left running (a daemon, a background job) ends here, so
    // it neither outlives the run nor holds the output pipes open.
    drop(tree);
    let mut output = out.join().unwrap_or_default();
    output.extend(err.join().unwrap_or_default());
    Ok(Ran {
        status,
        duration_ms,
        limit,
        output,
    })
}

impl Ran {
    /// The run's [`Execution`]: passed when it exited 0 within every limit; a limit
    /// hit is said after the output's tail.
    fn execution(self, limits: &ExecLimits) -> Execution {
        let Ran {
            status,
            duration_ms,
            limit,
            output,
        } = self;
        let exit_code = status.and_then(|s| s.code());
        let timed_out = limit == Some(Limit::Time);
        let mut output_tail = tail(&String::from_utf8_lossy(&output), OUTPUT_TAIL_LINES);
        if let Some(limit) = limit {
            // Said where the output is read, after what the tests printed.
            output_tail.push_str(&format!(
                "\n[nextedit: {limit} ({}): the tests' processes were killed]",
                limit_value(limit, limits)
            ));
        }
        Execution {
            passed: limit.is_none() && exit_code == Some(0),
            exit_code: if limit.is_some() { None } else { exit_code },
            timed_out,
            limit,
            output_tail,
            duration_ms,
        }
    }
}

/// The value of `limit` for messages: `--pids 1024`.
fn limit_value(limit: Limit, limits: &ExecLimits) -> String {
    let value = match limit {
        Limit::Pids => limits.limits.pids.to_string(),
        Limit::Memory => format!("{} MiB", limits.limits.memory_mib),
        Limit::Disk => format!("{} MiB", limits.limits.disk_mib),
        Limit::Time => format!("{} s", limits.timeout.as_secs_f64()),
    };
    format!("{} {value}", limit.flag())
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Whether the tests run sandboxed for `mode`; `Err` when the sandbox was asked for
/// and cannot be made here (nothing runs then).
pub fn sandbox_for(mode: SandboxMode) -> Result<bool, Unavailable> {
    match mode {
        SandboxMode::Off => Ok(false),
        SandboxMode::Bwrap => crate::base::sys::probe::availability().map(|()| true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_verdict_compares_the_real_paths() {
        let run = |tail: &str| Execution {
            passed: true,
            exit_code: Some(0),
            timed_out: false,
            limit: None,
            output_tail: tail.to_string(),
            duration_ms: 1.0,
        };
        let expected = Path::new("/c/pkg/core.py");
        let judge = |tail| Canary::judge("pkg.core", "pkg/core.py", expected, &run(tail));
        assert_eq!(judge("nextedit-canary: /c/pkg/core.py"), Canary::Checkout);
        let shadowed = judge("nextedit-canary: /venv/site/pkg/core.py");
        assert!(
            shadowed
                .shadowing()
                .unwrap()
                .starts_with("the tests would import module pkg.core from /venv/site/pkg/core.py, not the checkout's pkg/core.py")
        );
        assert!(matches!(judge("nextedit-canary: "), Canary::Unverified(_)));
        assert!(matches!(judge("Traceback"), Canary::Unverified(_)));
    }

    #[test]
    fn the_python_command_of_a_custom_test_command() {
        let command = |custom| python_command(custom, &TestEnvironment::default()).join(" ");
        assert_eq!(command(None), "python3");
        assert_eq!(command(Some("pytest -x {tests}")), "python3");
        assert_eq!(
            command(Some("/v/bin/python -m pytest {tests}")),
            "/v/bin/python"
        );
        assert_eq!(
            command(Some("PYTHONPATH=src A=1 python3.11 -m pytest {tests}")),
            "env PYTHONPATH=src A=1 python3.11"
        );
        assert_eq!(command(Some("PYTHONPATH=src pytest {tests}")), "python3");
    }
}
