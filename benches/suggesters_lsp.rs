//! `lsp:` adapter benchmark: what nextedit itself spends per step when a language
//! server is the suggester, apart from the server's own time. Each step edits a
//! 400-line Python file (every fifth step renames a variable, so the rename path runs
//! too), then `suggest` syncs it, asks for diagnostics, quick fixes, fix-all,
//! completions and renames, and ranks the answers. The adapter counts the time it
//! waits for the server (each request from sending to its decoded answer, and the
//! bounded wait for diagnostics); the overhead is the call's total minus that.
//!
//! The servers run behind `nextedit proxy` as in a replay, unsandboxed (the sandbox's
//! own cost is `benches/sandbox.rs`'s). Servers that are not installed are skipped
//! (said so): ruff's server from `.venv-ruff`, pyright from `tests/servers`.
//!
//! Run: `cargo bench --bench suggesters_lsp` (`-- --quick` for a short run). Target
//! (issue #16): ≤ 5 ms overhead per step.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nextedit::engine::suggest::Suggester;
use nextedit::engine::suggest::lsp::LspSuggester;
use nextedit::engine::suggest::protocol::{
    AppliedEdit, FileContent, InitializeParams, Revealed, SuggestParams,
};

#[path = "support/mod.rs"]
mod support;
use support::percentile;

const LINES: usize = 400;

/// The file at step `step`: functions whose bodies change with the step.
fn file_text(step: usize, name: &str) -> String {
    let mut text = String::from("import os\nimport sys\n\n\n");
    for i in 0..LINES / 4 {
        let value = if i == step % (LINES / 4) {
            1000 + step
        } else {
            i
        };
        text.push_str(&format!(
            "def f{i}({name}):\n    return {name} + {value} + len(sys.argv)\n\n\n"
        ));
    }
    text
}

/// Per-step (total, waiting, overhead) in ms over `steps` steps of `spec`.
fn measure(spec: &str, steps: usize) -> Option<[Vec<f64>; 3]> {
    let scratch = tempfile::tempdir().expect("scratch");
    let worktree = scratch.path().join("1");
    std::fs::create_dir(&worktree).expect("worktree");
    let file = "bench.py";
    let name = String::from("x");
    std::fs::write(worktree.join(file), file_text(0, &name)).expect("write");
    let mut suggester = LspSuggester::from_spec(spec)
        .ok()?
        .with_proxy(
            Path::new(env!("CARGO_BIN_EXE_nextedit")),
            &scratch.path().join("reads.db"),
        )
        .with_timeout(Duration::from_secs(30));
    suggester
        .initialize(&InitializeParams {
            protocol_version: 1,
            worktree: worktree.display().to_string(),
            language: Some("python".into()),
            project: None,
            trajectory: "trajectory-1".into(),
            revealed: Revealed::default(),
        })
        .expect("initialize");
    let mut prior = Vec::new();
    for step in 1..=steps {
        let before = file_text(step - 1, &name);
        let renames = step % 5 == 0;
        let new_name = if renames {
            format!("v{step}")
        } else {
            name.clone()
        };
        // The edited line: a function's body, or its parameter when renaming.
        let (text, line) = if renames {
            // Renames the parameter of the first function only: the rest is left to the server.
            let t = before.replacen(
                &format!("def f0({name}):"),
                &format!("def f0({new_name}):"),
                1,
            );
            (t, 4)
        } else {
            let line = 5 + 4 * (step % (LINES / 4));
            (file_text(step, &name), line)
        };
        let old_line = before.lines().nth(line).unwrap_or("").to_string() + "\n";
        let new_line = text.lines().nth(line).unwrap_or("").to_string() + "\n";
        std::fs::write(worktree.join(file), &text).expect("write");
        prior.push(AppliedEdit {
            file: file.into(),
            start_line: line,
            end_line: line + 1,
            before: old_line,
            after: new_line,
            step,
        });
        let params = SuggestParams {
            step,
            worktree: worktree.display().to_string(),
            language: Some("python".into()),
            prior_edits: prior.clone(),
            files: vec![FileContent {
                path: file.into(),
                text: text.clone(),
            }],
        };
        suggester.suggest(&params).expect("suggest");
        if renames {
            // The bench's own file keeps the old name elsewhere; the next step starts from it.
            std::fs::write(worktree.join(file), file_text(step, &name)).expect("write");
            prior.clear();
        }
    }
    suggester.shutdown();
    let timings = suggester.timings();
    let total: Vec<f64> = timings
        .iter()
        .map(|t| t.total.as_secs_f64() * 1e3)
        .collect();
    let waiting: Vec<f64> = timings
        .iter()
        .map(|t| t.waiting.as_secs_f64() * 1e3)
        .collect();
    let overhead: Vec<f64> = timings
        .iter()
        .map(|t| t.total.saturating_sub(t.waiting).as_secs_f64() * 1e3)
        .collect();
    Some([total, waiting, overhead])
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let steps = if quick { 20 } else { 100 };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let servers = [
        ("ruff server", root.join(".venv-ruff/bin/ruff"), "server"),
        (
            "pyright",
            root.join("tests/servers/node_modules/.bin/pyright-langserver"),
            "--stdio",
        ),
    ];
    println!("lsp: adapter, {steps} steps on a {LINES}-line Python file (ms per step)");
    println!(
        "{:<12}  {:>9}  {:>9}  {:>11}  {:>11}  {:>11}",
        "SERVER", "TOTAL p50", "WAIT p50", "OVERHEAD p50", "OVERHEAD p95", "OVERHEAD max"
    );
    for (label, program, arg) in servers {
        if !program.exists() {
            println!(
                "{label:<12}  skipped: {} is not installed",
                program.display()
            );
            continue;
        }
        let spec = format!("lsp:{} {arg}", program.display());
        let Some([total, waiting, overhead]) = measure(&spec, steps) else {
            println!("{label:<12}  skipped: {spec} is not usable");
            continue;
        };
        println!(
            "{:<12}  {:>9.2}  {:>9.2}  {:>11.3}  {:>11.3}  {:>11.3}   (target: ≤ 5 ms)",
            label,
            percentile(&total, 0.5),
            percentile(&waiting, 0.5),
            percentile(&overhead.clone(), 0.5),
            percentile(&overhead, 0.95),
            overhead.iter().copied().fold(0.0, f64::max),
        );
    }
}
