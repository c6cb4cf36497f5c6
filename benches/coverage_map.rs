//! Coverage map benchmark: what one state's map costs on flask, made as `tasks run`
//! makes it (the checkout written from git, flask's whole pytest suite run once under
//! coverage.py with a context per test, in bubblewrap when it works, under the venv's
//! interpreter as `tasks run --python` runs it, then read back):
//! wall time, tests and lines mapped. Issue #27's goal: under 60 s on 2 cores, the map
//! then reused by every task of the state.
//!
//! Needs a flask clone and a venv holding flask's dependencies but not flask (skipped
//! with how to make them when missing):
//!   git clone https://github.com/pallets/flask /tmp/flask
//!   python3 -m venv /tmp/flask-venv && /tmp/flask-venv/bin/pip install werkzeug jinja2 \
//!       itsdangerous click blinker pytest==9.0.2 coverage==7.17.5
//! (`FLASK_DIR`, `FLASK_VENV`, `FLASK_COMMIT` override the paths and the commit,
//! default 7ef2946f.) Run: `cargo bench --bench coverage_map` (`-- --quick`: one map
//! instead of three).

use std::path::Path;
use std::time::{Duration, Instant};

use nextedit::base::sys::limits::Limits;
use nextedit::engine::history::GitRepository;
use nextedit::engine::task::Task;
use nextedit::engine::task::covermap::make_map;
use nextedit::engine::task::environment::{Python, TestEnvironment};
use nextedit::engine::task::execute::{Checkout, ExecLimits, SandboxMode, sandbox_for};

#[path = "support/mod.rs"]
mod support;
use support::median;

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let flask = var("FLASK_DIR", "/tmp/flask");
    let venv = var("FLASK_VENV", "/tmp/flask-venv");
    let commit = var("FLASK_COMMIT", "7ef2946f");
    let python = Path::new(&venv).join("bin/python");
    let repo = match GitRepository::open(Path::new(&flask)) {
        Ok(repo) if python.exists() => repo,
        _ => {
            eprintln!(
                "coverage_map: skipped: needs a flask clone at {flask} and a venv at {venv} (see the top of benches/coverage_map.rs: git clone pallets/flask; python3 -m venv; pip install werkzeug jinja2 itsdangerous click blinker pytest==9.0.2 coverage==7.17.5)"
            );
            return;
        }
    };
    let sha = std::process::Command::new("git")
        .args(["rev-parse", &format!("{commit}^{{commit}}")])
        .current_dir(&flask)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .expect("git rev-parse");
    let scratch = tempfile::tempdir().expect("scratch");
    let root = scratch.path().canonicalize().expect("scratch path");
    let checkout_dir = root.join("checkout");
    let task: Task = serde_json::from_value(serde_json::json!({
        "version": 1, "id": "bench", "repository": "flask",
        "source": {"kind": "commit", "commit": sha},
        "language": "python", "scenario": "full_block",
        "state": {"commit": sha}, "file": "README.md",
        "cursor": {"line": 0, "column": 0},
        "prefix": std::fs::read_to_string(Path::new(&flask).join("README.md")).unwrap_or_default(),
        "suffix": "", "ground_truth": "",
    }))
    .expect("task");
    let sandbox = sandbox_for(SandboxMode::Bwrap).is_ok();
    let mut limits = ExecLimits {
        timeout: Duration::from_secs(900),
        limits: Limits::DEFAULT,
        sandbox,
        env: Vec::new(),
        environment: TestEnvironment::default(),
    };
    let cache = root.join("cache");
    // As `tasks run --python`: the venv's interpreter, the checkout (its `src/`, flask's
    // layout) first on the import path.
    let probed = Python::probe(&python, &[], &limits, &root.join("probe"), &cache)
        .expect("the venv's interpreter");
    limits.environment.python = Some(probed);
    let mut times = Vec::new();
    let runs = if quick { 1 } else { 3 };
    for run in 0..runs {
        let _ = std::fs::remove_dir_all(&checkout_dir);
        let started = Instant::now();
        let checkout = Checkout::create(&task, Some(&repo), &checkout_dir).expect("checkout");
        let map =
            make_map("python", None, &checkout, &limits, &cache, "bench").expect("a coverage map");
        let seconds = started.elapsed().as_secs_f64();
        times.push(seconds);
        let lines: usize = map.lines.values().map(|l| l.len()).sum();
        let passed = map.tests.iter().filter(|t| t.passed).count();
        println!(
            "coverage_map: flask {commit}, map {}: {seconds:.1} s (checkout + suite under coverage + read), {} tests ({passed} passed), {} files, {lines} lines mapped, sandbox {}",
            run + 1,
            map.tests.len(),
            map.lines.len(),
            if sandbox { "bwrap" } else { "off" }
        );
    }
    println!(
        "coverage_map: flask {commit}: median {:.1} s per state over {runs} map(s) (goal: < 60 s on 2 cores)",
        median(&times)
    );
}
