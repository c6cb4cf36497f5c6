//! Adapter-overhead benchmark: what each in-process suggester adapter costs per step,
//! the model's own time excluded, side by side (issue 16; goal ≤ 5 ms per step each).
//!
//! The worktree is a copy of this crate's own `src/` (real Rust code, ~150 files). A
//! trajectory of steps renames one identifier on one line of a file picked by a fixed
//! pseudo-random sequence, writes the file, and asks `suggest` with the applied edits
//! and the current text of the files they touched (most recent first), as replay does.
//! Only the `suggest` call is timed; `initialize` (where `builtin:retrieve` indexes the
//! worktree) is shown apart.
//!
//! - `builtin:noop`, `builtin:propagate`, `builtin:retrieve`: the whole call.
//! - `openai:` (zeta and nes templates): the whole call against a loopback HTTP server
//!   in this process that answers at once with a fixed rewritten region, so the time
//!   is nextedit's (prompt, JSON, HTTP client, answer parsing, minimal edits) plus a
//!   loopback round trip and the stand-in's own parsing: an upper bound of the
//!   adapter's cost. The prompt rendering and answer parsing alone are shown too.
//! - `cmd:`: a `suggest` round trip to a trivial real process (Python answering every
//!   line with an empty result) with the same step's JSON, unsandboxed and, when
//!   bubblewrap works here, in its sandbox.
//!
//! Run: `cargo bench --bench suggesters` (`-- --quick` for a short run).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::Instant;

use nextedit::base::sys::probe::availability;
use nextedit::engine::suggest::openai::OpenAiSuggester;
use nextedit::engine::suggest::prompt::{self, PromptInput, Template};
use nextedit::engine::suggest::protocol::{
    AppliedEdit, FileContent, InitializeParams, Revealed, SuggestParams,
};
use nextedit::engine::suggest::{NoopSuggester, PropagateSuggester, RetrieveSuggester, Suggester};

#[path = "support/mod.rs"]
mod support;
use support::{Lcg, copy_rust_sources, echo_adapters, percentile};

/// Steps per trajectory (a large commit); `initialize` starts each trajectory.
const STEPS_PER_TRAJECTORY: usize = 20;

/// A fresh copy of this crate's `src/` in `root`: the copied files' relative paths.
fn source_paths(root: &Path) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    copy_rust_sources(&src, root)
        .into_iter()
        .map(|(path, _)| path)
        .collect()
}

/// One step: rename the first identifier of 4+ letters on a random line of a random
/// file (on disk), returning the applied edit.
fn next_edit(root: &Path, files: &[String], rng: &mut Lcg, step: usize) -> AppliedEdit {
    loop {
        let file = &files[rng.below(files.len())];
        let text = std::fs::read_to_string(root.join(file)).expect("read");
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let line_no = rng.below(lines.len());
        let line = lines[line_no];
        let Some(word) = line
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .find(|w| w.len() >= 4 && w.starts_with(|c: char| c.is_alphabetic()))
        else {
            continue;
        };
        let new_line = line.replacen(word, &format!("{word}_{step}"), 1);
        let mut new_text: String = lines[..line_no].concat();
        new_text.push_str(&new_line);
        new_text.push_str(&lines[line_no + 1..].concat());
        std::fs::write(root.join(file), new_text).expect("write");
        return AppliedEdit {
            file: file.clone(),
            start_line: line_no,
            end_line: line_no + 1,
            before: line.to_string(),
            after: new_line,
            step,
        };
    }
}

/// The files the applied edits touched, current text, most recent first.
fn step_files(root: &Path, prior: &[AppliedEdit]) -> Vec<FileContent> {
    let mut out: Vec<FileContent> = Vec::new();
    for edit in prior.iter().rev() {
        if !out.iter().any(|f| f.path == edit.file) {
            out.push(FileContent {
                path: edit.file.clone(),
                text: std::fs::read_to_string(root.join(&edit.file)).expect("read"),
            });
        }
    }
    out
}

fn init(worktree: &Path, n: usize) -> InitializeParams {
    InitializeParams {
        protocol_version: 1,
        worktree: worktree.display().to_string(),
        language: Some("rust".into()),
        project: None,
        trajectory: format!("trajectory-{n}"),
        revealed: Revealed::default(),
    }
}

/// Figures of one adapter: per-step times and `initialize` times, in ms.
struct Figures {
    steps: Vec<f64>,
    inits: Vec<f64>,
    predictions: usize,
}

/// Runs `steps` steps of fresh trajectories over a fresh copy of `src/` (made in
/// `parent`) through `s`.
fn run(s: &mut dyn Suggester, steps: usize, parent: &Path) -> Figures {
    let scratch = tempfile::tempdir_in(parent).expect("scratch");
    let root = scratch.path().to_path_buf();
    let files = source_paths(&root);
    let mut rng = Lcg(16);
    let mut figures = Figures {
        steps: Vec::new(),
        inits: Vec::new(),
        predictions: 0,
    };
    let mut prior: Vec<AppliedEdit> = Vec::new();
    for step in 0..steps {
        if step % STEPS_PER_TRAJECTORY == 0 {
            prior.clear();
            let t = Instant::now();
            s.initialize(&init(&root, step / STEPS_PER_TRAJECTORY))
                .expect("initialize");
            figures.inits.push(t.elapsed().as_secs_f64() * 1e3);
        }
        prior.push(next_edit(&root, &files, &mut rng, prior.len()));
        let params = SuggestParams {
            step: prior.len(),
            worktree: root.display().to_string(),
            language: Some("rust".into()),
            prior_edits: prior.clone(),
            files: step_files(&root, &prior),
        };
        let t = Instant::now();
        let result = s.suggest(&params).expect("suggest");
        figures.steps.push(t.elapsed().as_secs_f64() * 1e3);
        figures.predictions += result.edits.len();
    }
    s.shutdown();
    figures
}

/// A loopback stand-in for an OpenAI-compatible server: `GET /models` lists `tiny`,
/// every `POST` gets a completion whose text is `answer`, at once (keep-alive).
fn answering_server(answer: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let answer = answer.clone();
            std::thread::spawn(move || {
                // One write per answer and no Nagle delay: a reply split in two
                // writes would wait for the client's delayed ACK (~40 ms).
                stream.set_nodelay(true).expect("nodelay");
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut writer = stream;
                loop {
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
                        return;
                    }
                    let mut length = 0usize;
                    loop {
                        let mut header = String::new();
                        if reader.read_line(&mut header).unwrap_or(0) == 0 {
                            return;
                        }
                        if header == "\r\n" {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let reply = if request_line.starts_with("GET") {
                        serde_json::json!({"data": [{"id": "tiny"}]})
                    } else {
                        // What a model server does with the request: parse it.
                        let _: serde_json::Value = serde_json::from_slice(&body).expect("json");
                        serde_json::json!({"choices": [{"text": answer,
                            "message": {"content": answer}}]})
                    };
                    let reply = reply.to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
                        reply.len()
                    );
                    if writer.write_all(response.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{address}/v1")
}

/// A model's answer: a 17-line region, rewritten, between the zeta markers.
fn model_answer() -> String {
    let mut answer = String::from("<|editable_region_start|>\n");
    for i in 0..17 {
        answer.push_str(&format!("    let value_{i} = compute(value_{i}, {i});\n"));
    }
    answer.push_str("<|editable_region_end|>\n");
    answer
}

/// The pure part of an `openai:` step alone: render the prompt, parse the answer into
/// edits, over the steps `run` makes (ms per step).
fn prompt_and_parse(template: Template, steps: usize) -> Vec<f64> {
    let scratch = tempfile::tempdir().expect("scratch");
    let root = scratch.path().to_path_buf();
    let files = source_paths(&root);
    let mut rng = Lcg(16);
    let answer = model_answer();
    let mut prior = Vec::new();
    let mut times = Vec::new();
    for step in 0..steps {
        if step % STEPS_PER_TRAJECTORY == 0 {
            prior.clear();
        }
        prior.push(next_edit(&root, &files, &mut rng, prior.len()));
        let files = step_files(&root, &prior);
        let t = Instant::now();
        let region = prompt::region_at_last_edit(&prior, &files).expect("region");
        let rendered = prompt::render(
            template,
            &PromptInput {
                prior_edits: &prior,
                files: &files,
                region: &region,
            },
        );
        let edits = prompt::region_edits(&files[0].text, &region, &prompt::parse_answer(&answer));
        times.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box((rendered, edits));
    }
    times
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let steps = if quick { 60 } else { 400 };
    let url = answering_server(model_answer());
    let mut rows: Vec<(String, Figures)> = Vec::new();
    let mut adapters: Vec<(String, Box<dyn Suggester>)> = vec![
        ("builtin:noop".into(), Box::new(NoopSuggester)),
        (
            "builtin:propagate".into(),
            Box::new(PropagateSuggester::default()),
        ),
        (
            "builtin:retrieve".into(),
            Box::new(RetrieveSuggester::default()),
        ),
    ];
    for template in ["zeta", "nes"] {
        let spec = format!("openai:{url}?model=tiny&template={template}");
        adapters.push((
            format!("openai: ({template})"),
            Box::new(OpenAiSuggester::from_spec(&spec).expect("spec")),
        ));
    }
    // Every worktree is made in one scratch directory, the one a sandbox binds.
    let scratch = tempfile::tempdir().expect("scratch");
    let sandboxed = availability().is_ok();
    adapters.extend(echo_adapters(scratch.path()));
    for (name, mut suggester) in adapters {
        // One short warm-up trajectory (page cache, connections, lazy statics).
        run(suggester.as_mut(), STEPS_PER_TRAJECTORY, scratch.path());
        rows.push((name, run(suggester.as_mut(), steps, scratch.path())));
    }
    println!(
        "per-step adapter overhead: {steps} steps ({} per trajectory) renaming identifiers in a copy of src/ (Rust)",
        STEPS_PER_TRAJECTORY
    );
    println!(
        "{:<28}  {:>10}  {:>10}  {:>14}  {:>12}",
        "ADAPTER", "STEP p50", "STEP p95", "INIT p50 ms", "PREDICTIONS"
    );
    for (name, f) in &rows {
        println!(
            "{:<28}  {:>10.3}  {:>10.3}  {:>14.2}  {:>12}",
            name,
            percentile(&f.steps, 0.5),
            percentile(&f.steps, 0.95),
            percentile(&f.inits, 0.5),
            f.predictions
        );
    }
    for template in [Template::Zeta, Template::Nes] {
        let times = prompt_and_parse(template, steps);
        println!(
            "{:<28}  {:>10.3}  {:>10.3}  {:>14}  {:>12}",
            format!("  {} prompt+parse only", template.name()),
            percentile(&times, 0.5),
            percentile(&times, 0.95),
            "-",
            "-"
        );
    }
    if !sandboxed {
        println!("(bwrap unavailable here: cmd: measured unsandboxed only)");
    }
    println!("(goal: ≤ 5 ms per step; times in ms)");
}
