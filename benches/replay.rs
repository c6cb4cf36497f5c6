//! Replay benchmark: per-step engine overhead (everything but the suggester's own
//! time: state, matching, classification, scoring, workspace writes) and total wall
//! time, on synthetic commits shaped like real ones.
//!
//! With a real repository (`NEXTEDIT_BENCH_REPO=/path cargo bench --bench replay`, or
//! `-- --repo PATH`), it also replays that repository's last 100 non-merge commits
//! (`NEXTEDIT_BENCH_COMMITS` changes the count) with builtin:propagate, each in a
//! scratch checkout of its parent, as `nextedit replay --repo` does.
//!
//! Long trajectories (issue 26): `nextedit replay builtin:noop` itself, the binary
//! built with this bench, on commits of 1,000 and 10,000 one-line edits (`--long`: and
//! 100,000) without order edges, so every remaining edit is allowed at every step;
//! steps, seconds and the process's peak resident set, printing tables and then
//! `--json`'s one document. With `NEXTEDIT_BENCH_BEFORE=` another build's binary (an
//! older commit's), that one runs beside it on the same trajectories, under a 4 GiB
//! address-space limit and a 10-minute budget each.
//!
//! Run: `cargo bench --bench replay` (`-- --quick` for a short run, without the long
//! trajectories; `-- --long-only`: only the long trajectories, 100,000 edits
//! included). Target (issue #5): ≤ 5 ms per step of engine overhead.

use std::path::Path;
use std::time::{Duration, Instant};

use nextedit::core::trajectory::{Edit, FileEntry, SessionInfo, SessionKind, Trajectory};
use nextedit::engine::replay::matching::MatchRule;
use nextedit::engine::replay::{
    DirWorkspace, IgnoreProgress, OrderMode, ReplayConfig, ReplayHooks, replay,
};
use nextedit::engine::suggest::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult,
};
use nextedit::engine::suggest::{NoopSuggester, PropagateSuggester, SuggestError, Suggester};

/// A commit renaming `helper_N` → `renamed_N` at its definition and `uses` call sites
/// spread over `files` files of `lines` lines each.
fn synthetic(files: usize, lines: usize, uses: usize) -> Trajectory {
    let mut t = Trajectory::new(SessionInfo::new("synthetic", SessionKind::Commit));
    let mut edits = Vec::new();
    for f in 0..files {
        let mut text = String::new();
        for l in 0..lines {
            let line = if l == 0 && f == 0 {
                "def helper_target(x):\n".to_string()
            } else if l % (lines / uses.max(1)).max(2) == 1 && edits.len() < uses + 1 {
                format!("    value_{l} = helper_target(value_{})\n", l - 1)
            } else {
                format!("    value_{l} = compute({l}, {f})  # filler line\n")
            };
            if line.contains("helper_target") {
                let after = line.replace("helper_target", "renamed_target");
                edits.push(Edit::lines(
                    format!("e{}", edits.len()),
                    format!("pkg/mod{f}.py"),
                    l,
                    &line,
                    &after,
                ));
            }
            text.push_str(&line);
        }
        t.files.push(FileEntry {
            language: Some("python".into()),
            ..FileEntry::new(format!("pkg/mod{f}.py"), Some(text))
        });
    }
    t.edits = edits;
    t
}

/// Wraps a suggester and measures the time spent inside it.
struct Timed<S> {
    inner: S,
    spent: Duration,
}

impl<S: Suggester> Suggester for Timed<S> {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn initialize(&mut self, p: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        let t = Instant::now();
        let r = self.inner.initialize(p);
        self.spent += t.elapsed();
        r
    }
    fn suggest(&mut self, p: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let t = Instant::now();
        let r = self.inner.suggest(p);
        self.spent += t.elapsed();
        r
    }
    fn generate(&mut self, p: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        let t = Instant::now();
        let r = self.inner.generate(p);
        self.spent += t.elapsed();
        r
    }
    fn shutdown(&mut self) {
        self.inner.shutdown();
    }
}

fn run<S: Suggester>(label: &str, trajectory: &Trajectory, suggester: S, repeats: usize) {
    let config = ReplayConfig {
        order: OrderMode::Fixed,
        rule: MatchRule::Historian,
        seed: 42,
        revealed: Default::default(),
        language: Some("python".into()),
        project: None,
        exclude_origins: Vec::new(),
        judge_cases: false,
    };
    let mut timed = Timed {
        inner: suggester,
        spent: Duration::ZERO,
    };
    let mut per_step = Vec::new();
    let mut total = Duration::ZERO;
    let mut steps = 0;
    for _ in 0..repeats {
        let dir = tempfile::tempdir().unwrap();
        timed.spent = Duration::ZERO;
        let t = Instant::now();
        let outcome = replay(
            trajectory,
            &mut timed,
            &mut DirWorkspace::new(dir.path()),
            &config,
            ReplayHooks {
                resume: &[],
                observer: &mut IgnoreProgress,
            },
        )
        .unwrap();
        let wall = t.elapsed();
        total += wall;
        steps += outcome.steps;
        per_step.push((wall - timed.spent).as_secs_f64() * 1e3 / outcome.steps as f64);
    }
    per_step.sort_by(f64::total_cmp);
    println!(
        "  {label:<34} {:>6} steps  engine {:>7.3} ms/step (p50 over runs; max {:.3})  total {:>8.1} ms",
        steps,
        per_step[per_step.len() / 2],
        per_step[per_step.len() - 1],
        total.as_secs_f64() * 1e3
    );
}

/// Replays real commits with propagate; prints engine overhead per step and wall time.
fn real_repository(path: &str, count: usize) {
    use nextedit::engine::history::{CommitSource, GitRepository, derive_commit};
    let repo = GitRepository::open(std::path::Path::new(path)).expect("the bench repository opens");
    let raw = git2::Repository::open(path).expect("the bench repository opens");
    let mut walk = raw.revwalk().unwrap();
    walk.push_head().unwrap();
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .unwrap();
    let project = repo.project();
    let started = Instant::now();
    let (mut commits, mut steps, mut skipped) = (0usize, 0usize, 0usize);
    let (mut engine, mut checkout) = (Duration::ZERO, Duration::ZERO);
    let mut per_step: Vec<f64> = Vec::new();
    for oid in walk {
        if commits == count {
            break;
        }
        let sha = oid.unwrap().to_string();
        let Ok(record) = repo.load(&sha) else {
            continue;
        };
        if record.parents.len() != 1 {
            continue;
        }
        let Ok(trajectory) = derive_commit(&record, project.as_deref()) else {
            skipped += 1;
            continue;
        };
        if trajectory.edits.is_empty() {
            continue;
        }
        commits += 1;
        let dir = tempfile::tempdir().unwrap();
        let t = Instant::now();
        repo.checkout(&record.parents[0], dir.path()).unwrap();
        checkout += t.elapsed();
        let mut timed = Timed {
            inner: PropagateSuggester::default(),
            spent: Duration::ZERO,
        };
        let config = ReplayConfig {
            order: OrderMode::Fixed,
            rule: MatchRule::Historian,
            seed: 42,
            revealed: Default::default(),
            language: None,
            project: project.clone(),
            exclude_origins: Vec::new(),
            judge_cases: false,
        };
        let t = Instant::now();
        let outcome = replay(
            &trajectory,
            &mut timed,
            &mut DirWorkspace::new(dir.path()),
            &config,
            ReplayHooks {
                resume: &[],
                observer: &mut IgnoreProgress,
            },
        );
        let wall = t.elapsed();
        let Ok(outcome) = outcome else {
            skipped += 1;
            continue;
        };
        let own = wall.saturating_sub(timed.spent);
        engine += own;
        if outcome.steps > 0 {
            per_step.push(own.as_secs_f64() * 1e3 / outcome.steps as f64);
        }
        steps += outcome.steps;
    }
    per_step.sort_by(f64::total_cmp);
    let pick = |q: f64| {
        per_step
            .get(((per_step.len().max(1) - 1) as f64 * q) as usize)
            .copied()
            .unwrap_or(0.0)
    };
    println!("\nreal repository {path}: {commits} commits, {steps} steps, {skipped} skipped");
    println!(
        "  engine overhead per step: mean {:.3} ms, per-commit p50 {:.3} ms, p95 {:.3} ms   target ≤ 5 ms",
        engine.as_secs_f64() * 1e3 / steps.max(1) as f64,
        pick(0.5),
        pick(0.95)
    );
    println!(
        "  wall time {:.1} s (of which parent checkouts {:.1} s, derive and propagate the rest)",
        started.elapsed().as_secs_f64(),
        checkout.as_secs_f64()
    );
}

/// A commit of `edits` one-line edits, 100 per file of 300 lines, without order edges.
fn wide_commit(edits: usize) -> Trajectory {
    let mut t = Trajectory::new(SessionInfo::new(
        format!("wide-{edits}"),
        SessionKind::Commit,
    ));
    for f in 0..edits.div_ceil(100) {
        let path = format!("pkg/m{f}.py");
        let lines: Vec<String> = (0..300)
            .map(|l| format!("    v{l} = compute({l}, {f})\n"))
            .collect();
        for k in 0..100.min(edits - t.edits.len()) {
            let before = &lines[3 * k + 1];
            let id = format!("e{}", t.edits.len());
            let after = before.replace("compute", "evaluate");
            t.edits
                .push(Edit::lines(id, &path, 3 * k + 1, before, &after));
        }
        t.files.push(FileEntry::new(path, Some(lines.concat())));
    }
    t.order.natural = t.edits.iter().map(|e| e.id.clone()).collect();
    t
}

/// How one `nextedit replay` went: its steps stored, wall seconds, peak resident MiB,
/// and why it stopped when it did not finish.
struct Measured {
    steps: i64,
    seconds: f64,
    peak_mib: f64,
    stopped: Option<String>,
}

/// Runs `binary replay builtin:noop` on `trajectory` (a file) into a fresh database
/// (with `json`: `--json`, its one document written to /dev/null), limited (for a
/// build whose memory grows) to `limit_gib` of address space and `budget` of wall time.
fn replay_binary(
    binary: &str,
    trajectory: &Path,
    json: bool,
    limit_gib: Option<u64>,
    budget: Duration,
) -> Measured {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let mut command = std::process::Command::new(binary);
    command
        .args([
            "replay",
            "-q",
            "--suggester",
            "builtin:noop",
            "--trajectory",
        ])
        .arg(trajectory)
        .arg("--db")
        .arg(&db)
        .args(json.then_some("--json"))
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(gib) = limit_gib {
        let bytes = gib << 30;
        // SAFETY: only setrlimit(2) runs between fork and exec.
        unsafe {
            command.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: bytes,
                    rlim_max: bytes,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let started = Instant::now();
    // Reaped by wait4 below, which also gives its resource usage.
    #[allow(clippy::zombie_processes)]
    let child = command.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let (mut status, mut timed_out) = (0, false);
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4(2) on the child spawned here (std never waits for it).
        let done = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if done == pid {
            break;
        }
        if started.elapsed() > budget && !timed_out {
            timed_out = true;
            // SAFETY: kill(2) on the child spawned here.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let seconds = started.elapsed().as_secs_f64();
    let steps = rusqlite::Connection::open(&db)
        .and_then(|c| c.query_row("SELECT count(*) FROM run_steps", [], |r| r.get(0)))
        .unwrap_or(0);
    let status = std::process::ExitStatus::from_raw(status);
    let stopped = if timed_out {
        Some(format!("stopped after {} s", budget.as_secs()))
    } else if !status.success() {
        Some(format!("failed: {status}"))
    } else {
        None
    };
    Measured {
        steps,
        seconds,
        peak_mib: usage.ru_maxrss as f64 / 1024.0,
        stopped,
    }
}

/// The long-trajectory table: this build, and another beside it when given.
fn long_trajectories(sizes: &[usize]) {
    let before = std::env::var("NEXTEDIT_BENCH_BEFORE").ok();
    println!(
        "
long trajectories: nextedit replay builtin:noop, one-line edits without order edges (100 per file)"
    );
    println!(
        "  {:>7}  {:>7} {:>9} {:>9}  build",
        "edits", "steps", "seconds", "peak MiB"
    );
    let dir = tempfile::tempdir().unwrap();
    for &edits in sizes {
        let path = dir.path().join(format!("wide-{edits}.json"));
        std::fs::write(&path, serde_json::to_string(&wide_commit(edits)).unwrap()).unwrap();
        let mut builds = vec![(
            "this build",
            env!("CARGO_BIN_EXE_nextedit").to_string(),
            None,
        )];
        if let Some(before) = &before {
            builds.push(("before", before.clone(), Some(4)));
        }
        for ((label, binary, limit), json) in
            (builds.iter()).flat_map(|build| [(build, false), (build, true)])
        {
            let m = replay_binary(binary, &path, json, *limit, Duration::from_secs(600));
            let json = if json { " --json" } else { "" };
            println!(
                "  {edits:>7}  {:>7} {:>9.1} {:>9.0}  {label}{json}{}",
                m.steps,
                m.seconds,
                m.peak_mib,
                m.stopped.map(|s| format!(" ({s})")).unwrap_or_default()
            );
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--long-only") {
        return long_trajectories(&[1_000, 10_000, 100_000]);
    }
    let quick = std::env::args().any(|a| a == "--quick");
    let repeats = if quick { 3 } else { 10 };
    println!(
        "replay benchmark ({} mode), engine overhead excludes the suggester's own time; target ≤ 5 ms/step",
        if quick { "quick" } else { "full" }
    );
    for (files, lines, uses) in [(3, 300, 10), (10, 2000, 40), (20, 5000, 100)] {
        let t = synthetic(files, lines, uses);
        println!(
            "commit: {files} files × {lines} lines, {} edits",
            t.edits.len()
        );
        run("builtin:noop", &t, NoopSuggester, repeats);
        run(
            "builtin:propagate",
            &t,
            PropagateSuggester::default(),
            repeats,
        );
    }
    let args: Vec<String> = std::env::args().collect();
    let repo = args
        .iter()
        .position(|a| a == "--repo")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::env::var("NEXTEDIT_BENCH_REPO").ok());
    match repo {
        Some(path) => {
            let count = std::env::var("NEXTEDIT_BENCH_COMMITS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(100);
            real_repository(&path, count);
        }
        None => println!(
            "\n(real-repository replay skipped: set NEXTEDIT_BENCH_REPO or pass --repo PATH)"
        ),
    }
    if !quick {
        let long = args.iter().any(|a| a == "--long");
        long_trajectories(if long {
            &[1_000, 10_000, 100_000]
        } else {
            &[1_000, 10_000]
        });
    }
}
