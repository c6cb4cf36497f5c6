//! Replay benchmark: per-step engine overhead (everything but the suggester's own
//! time: state, matching, classification, scoring, workspace writes) and total wall
//! time, on synthetic commits shaped like real ones.
//!
//! Run: `cargo bench --bench replay` (`-- --quick` for a short run). Target (issue #5):
//! ≤ 5 ms per step of engine overhead.

use std::time::{Duration, Instant};

use nextedit::replay::matching::MatchRule;
use nextedit::replay::{
    DirWorkspace, IgnoreProgress, OrderMode, ReplayConfig, ReplayHooks, replay,
};
use nextedit::suggest::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult,
};
use nextedit::suggest::{NoopSuggester, PropagateSuggester, SuggestError, Suggester};
use nextedit::trajectory::{Edit, FileEntry, SessionInfo, SessionKind, Trajectory};

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
            None,
            ReplayHooks {
                resume: &[],
                observer: &mut IgnoreProgress,
            },
        )
        .unwrap();
        let wall = t.elapsed();
        total += wall;
        steps += outcome.steps.len();
        per_step.push((wall - timed.spent).as_secs_f64() * 1e3 / outcome.steps.len() as f64);
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

fn main() {
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
}
