//! `complete` call cost per adapter, side by side: what one completion task's call
//! costs in nextedit (the model's own time excluded), the way `nextedit tasks run`
//! makes it.
//!
//! The worktree is a copy of this crate's own `src/` (real Rust code, ~150 files). Each
//! task's hole is the line after a function header (`fn …{`) of a file picked by a
//! fixed pseudo-random sequence; the hole is empty (the file as it is: prefix up to the
//! cursor, the rest is the suffix). As `nextedit tasks run` asks: `initialize` per task
//! (timed apart), then two samples through `suggest::complete_call`, each timed.
//!
//! - `builtin:noop`: the floor (the call and its checks).
//! - `builtin:retrieve`: its `initialize` indexes the worktree (replay's index); the
//!   first `complete` reads and chunks the worktree's functions, each call ranks them
//!   by BM25 (the second sample reuses the chunks).
//! - `cmd:`: a round trip to a trivial real process (Python answering every line with
//!   an empty result), unsandboxed and, when bubblewrap works here, in its sandbox.
//! - `openai:`'s `complete` template: prompt rendering and answer parsing alone (the
//!   HTTP round trip is `benches/suggesters.rs`'s).
//!
//! Run: `cargo bench --bench complete` (`-- --quick` for a short run).

use std::path::Path;
use std::time::Instant;

use nextedit::base::sys::probe::availability;
use nextedit::engine::suggest::prompt;
use nextedit::engine::suggest::protocol::{CompleteParams, InitializeParams, Revealed};
use nextedit::engine::suggest::{NoopSuggester, RetrieveSuggester, Suggester, complete_call};

#[path = "support/mod.rs"]
mod support;
use support::{Lcg, copy_rust_sources, echo_adapters, percentile};

/// `n` tasks: the line after a random function header of a random file.
fn tasks(root: &Path, files: &[(String, String)], n: usize) -> Vec<CompleteParams> {
    let mut rng = Lcg(17);
    let mut out = Vec::new();
    while out.len() < n {
        let (path, text) = &files[rng.below(files.len())];
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let headers: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].contains("fn ") && lines[i].trim_end().ends_with('{'))
            .collect();
        if headers.is_empty() {
            continue;
        }
        let line = headers[rng.below(headers.len())] + 1;
        let prefix: String = lines[..line].concat();
        out.push(CompleteParams {
            task: format!("task-{}", out.len()),
            worktree: root.display().to_string(),
            language: Some("rust".into()),
            file: path.clone(),
            line,
            column: 0,
            suffix: text[prefix.len()..].to_string(),
            prefix,
            scenario: "full_block".into(),
            context: Vec::new(),
        });
    }
    out
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 20 } else { 100 };
    let scratch = tempfile::tempdir().expect("scratch");
    let root = scratch.path().join("worktree");
    std::fs::create_dir_all(&root).expect("mkdir");
    let files = copy_rust_sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &root);
    let tasks = tasks(&root, &files, n);
    let init = InitializeParams {
        protocol_version: 1,
        worktree: root.display().to_string(),
        language: Some("rust".into()),
        project: None,
        trajectory: "task-0".into(),
        revealed: Revealed::default(),
    };
    let mut adapters: Vec<(String, Box<dyn Suggester>)> = vec![
        ("builtin:noop".into(), Box::new(NoopSuggester)),
        (
            "builtin:retrieve".into(),
            Box::new(RetrieveSuggester::default()),
        ),
    ];
    adapters.extend(echo_adapters(scratch.path()));
    println!(
        "complete call cost: {n} tasks (the line after a function header) in a copy of src/ ({} Rust files)",
        files.len()
    );
    println!(
        "{:<32}  {:>10}  {:>10}  {:>12}  {:>12}  {:>10}",
        "ADAPTER", "CALL p50", "CALL p95", "2ND CALL p50", "INIT p50", "NON-EMPTY"
    );
    for (name, mut suggester) in adapters {
        // One warm-up task (page cache, the process's start).
        suggester.initialize(&init).expect("initialize");
        complete_call(suggester.as_mut(), &tasks[0]).expect("complete");
        let (mut first, mut second, mut inits) = (Vec::new(), Vec::new(), Vec::new());
        let mut answered = 0;
        // As `nextedit tasks run` asks: `initialize` per task, then its samples.
        for task in &tasks {
            let t = Instant::now();
            suggester.initialize(&init).expect("initialize");
            inits.push(t.elapsed().as_secs_f64() * 1e3);
            for (sample, times) in [&mut first, &mut second].into_iter().enumerate() {
                let t = Instant::now();
                let (result, _) = complete_call(suggester.as_mut(), task).expect("complete");
                times.push(t.elapsed().as_secs_f64() * 1e3);
                if sample == 0 && !result.text.is_empty() {
                    answered += 1;
                }
            }
        }
        suggester.shutdown();
        println!(
            "{:<32}  {:>10.3}  {:>10.3}  {:>12.3}  {:>12.2}  {:>10}",
            name,
            percentile(&first, 0.5),
            percentile(&first, 0.95),
            percentile(&second, 0.5),
            percentile(&inits, 0.5),
            format!("{answered}/{n}")
        );
    }
    let mut times = Vec::new();
    for task in &tasks {
        let t = Instant::now();
        let rendered = prompt::render_complete(task);
        let text = prompt::parse_complete_answer("```rust\n    let x = 1;\n```\n");
        times.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box((rendered, text));
    }
    println!(
        "{:<32}  {:>10.3}  {:>10.3}  {:>12}  {:>12}  {:>10}",
        "openai: complete prompt+parse",
        percentile(&times, 0.5),
        percentile(&times, 0.95),
        "-",
        "-",
        "-"
    );
    if availability().is_err() {
        println!("(bwrap unavailable here: cmd: measured unsandboxed only)");
    }
    println!("(times in ms)");
}
