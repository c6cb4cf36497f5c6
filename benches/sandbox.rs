//! Sandbox benchmark: what bubblewrap adds to a suggester process, side by side with
//! `--sandbox off` in one run: the cost of a process start (spawn to the answer of
//! `initialize`) and of a step (one `suggest` round trip on a running process).
//!
//! The suggester is `sed` answering every line, so the figures are nextedit's and the
//! sandbox's, not an interpreter's start-up.
//!
//! Run: `cargo bench --bench sandbox` (`-- --quick` for a short run). Targets (issue
//! #11): ≤ 20 ms added per process start, ≤ 1 ms per step.

use std::path::Path;
use std::time::{Duration, Instant};

use nextedit::base::sys::probe::availability;
use nextedit::base::sys::sandbox::Sandbox;
use nextedit::engine::suggest::protocol::{InitializeParams, Revealed, SuggestParams};
use nextedit::engine::suggest::{ProcessSuggester, Suggester};

#[path = "support/mod.rs"]
mod support;
use support::median;

/// Answers every request with an empty result that fits each method.
const SED_SUGGESTER: &str = r#"sed -u -n 's/.*"id":\([0-9]*\),.*/{"jsonrpc":"2.0","id":\1,"result":{"edits":[],"text":""}}/p'"#;

fn suggester(sandbox: Option<&Sandbox>) -> ProcessSuggester {
    let s = ProcessSuggester::from_shell(SED_SUGGESTER, Duration::from_secs(10));
    match sandbox {
        Some(sandbox) => s.with_sandbox(sandbox.clone()),
        None => s,
    }
}

fn init(worktree: &Path) -> InitializeParams {
    InitializeParams {
        protocol_version: 1,
        worktree: worktree.display().to_string(),
        language: Some("python".into()),
        project: None,
        trajectory: "trajectory-1".into(),
        revealed: Revealed::default(),
    }
}

/// Median ms from spawn to `initialize`'s answer, over `n` fresh processes.
fn start_ms(sandbox: Option<&Sandbox>, worktree: &Path, n: usize) -> f64 {
    let mut times = Vec::new();
    for _ in 0..n {
        let mut s = suggester(sandbox);
        let t = Instant::now();
        s.initialize(&init(worktree)).expect("initialize");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        s.shutdown();
    }
    median(&times)
}

/// Median ms of one `suggest` round trip on a running process, over `n` steps.
fn step_ms(sandbox: Option<&Sandbox>, worktree: &Path, n: usize) -> f64 {
    let mut s = suggester(sandbox);
    s.initialize(&init(worktree)).expect("initialize");
    let mut times = Vec::new();
    for step in 1..=n {
        let params = SuggestParams {
            step,
            worktree: worktree.display().to_string(),
            language: Some("python".into()),
            prior_edits: Vec::new(),
            files: Vec::new(),
        };
        let t = Instant::now();
        s.suggest(&params).expect("suggest");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    s.shutdown();
    median(&times)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (starts, steps) = if quick { (10, 200) } else { (40, 2000) };
    let scratch = tempfile::tempdir().expect("scratch");
    let worktree = scratch.path().join("1");
    std::fs::create_dir(&worktree).expect("worktree");
    let sandbox = Sandbox {
        scratch: scratch.path().to_path_buf(),
        read_only: Vec::new(),
        writable: Vec::new(),
        network: false,
    };
    if let Err(reason) = availability() {
        println!("bwrap unavailable, nothing to compare: {reason}");
        return;
    }
    // Warm the page cache for both.
    start_ms(None, &worktree, 2);
    start_ms(Some(&sandbox), &worktree, 2);
    let off = (
        start_ms(None, &worktree, starts),
        step_ms(None, &worktree, steps),
    );
    let on = (
        start_ms(Some(&sandbox), &worktree, starts),
        step_ms(Some(&sandbox), &worktree, steps),
    );
    // A network namespace is the costliest part of the sandbox: shown apart.
    let with_net = Sandbox {
        network: true,
        ..sandbox.clone()
    };
    let net = (
        start_ms(Some(&with_net), &worktree, starts),
        step_ms(Some(&with_net), &worktree, steps),
    );
    println!("suggester process (sed), median of {starts} starts and {steps} steps");
    println!("{:<16}  {:>14}  {:>12}", "SANDBOX", "START ms", "STEP ms");
    println!("{:<16}  {:>14.2}  {:>12.3}", "off", off.0, off.1);
    println!("{:<16}  {:>14.2}  {:>12.3}", "bwrap", on.0, on.1);
    println!("{:<16}  {:>14.2}  {:>12.3}", "bwrap +network", net.0, net.1);
    println!(
        "{:<16}  {:>14.2}  {:>12.3}   (targets: ≤ 20 ms, ≤ 1 ms)",
        "added by bwrap",
        on.0 - off.0,
        on.1 - off.1
    );
}
