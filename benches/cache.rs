//! Response cache benchmark: what the cache adds to one `suggest` call, side by side:
//! the bare suggester, a miss (hash the request, look it up, ask, store the answer in
//! SQLite) and a hit (hash, look up, parse the stored answer), on a realistic request
//! (two files of 500 lines, 20 prior edits) and answer (3 edits).
//!
//! The suggester answers in-process at once, so the figures are the cache's alone.
//!
//! Run: `cargo bench --bench cache` (`-- --quick` for a short run). Target (issue #16):
//! ≤ 5 ms added per call.

use std::time::Instant;

use nextedit::engine::suggest::cache::{CacheLog, CacheMode, CachedSuggester};
use nextedit::engine::suggest::protocol::{
    AppliedEdit, FileContent, GenerateParams, GenerateResult, InitializeParams, InitializeResult,
    SuggestParams, SuggestResult, SuggestedEdit,
};
use nextedit::engine::suggest::{SuggestError, Suggester};
use nextedit::store::{Database, ResponseCache};

#[path = "support/mod.rs"]
mod support;
use support::median;

/// Answers every `suggest` with the same three edits, at once.
struct Instant3;

impl Suggester for Instant3 {
    fn name(&self) -> String {
        "instant".into()
    }
    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult::default())
    }
    fn suggest(&mut self, _: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        Ok(SuggestResult {
            edits: (0..3)
                .map(|i| SuggestedEdit {
                    file: "pkg/a.py".into(),
                    start_line: i * 10,
                    end_line: i * 10 + 1,
                    text: format!("    value_{i} = compute({i}, scale=2)\n"),
                    confidence: Some(0.5),
                })
                .collect(),
            reads: Vec::new(),
        })
    }
    fn generate(&mut self, _: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        Ok(GenerateResult::default())
    }
    fn shutdown(&mut self) {}
}

/// Step `step`'s request: two 500-line files and 20 prior edits.
fn request(step: usize) -> SuggestParams {
    let file = |name: &str| FileContent {
        path: name.into(),
        text: (0..500)
            .map(|i| format!("    result_{i} = compute(value_{i}, scale={step})  # line {i}\n"))
            .collect(),
    };
    SuggestParams {
        step,
        worktree: "/tmp/nextedit-replay-x/w0/1".into(),
        language: Some("python".into()),
        prior_edits: (0..20)
            .map(|i| AppliedEdit {
                file: "pkg/a.py".into(),
                start_line: i * 7,
                end_line: i * 7 + 1,
                before: format!("    total_{i} = compute({i})\n"),
                after: format!("    total_{i} = compute({i}, scale=3)\n"),
                step: i,
            })
            .collect(),
        files: vec![file("pkg/a.py"), file("pkg/b.py")],
    }
}

/// Median ms of `suggest` on `s` over the requests of steps 1..=n.
fn per_call_ms(s: &mut dyn Suggester, requests: &[SuggestParams]) -> f64 {
    let mut times = Vec::new();
    for params in requests {
        let t = Instant::now();
        s.suggest(params).expect("suggest");
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    median(&times)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 100 } else { 1000 };
    let scratch = tempfile::tempdir().expect("scratch");
    let db_path = scratch.path().join("cache.db");
    let requests: Vec<SuggestParams> = (1..=n).map(request).collect();
    let cached = |mode| {
        let db = Database::open(&db_path).expect("database");
        CachedSuggester::new(
            Box::new(Instant3),
            Box::new(ResponseCache::new(db, 1)),
            "cmd:bench",
            1,
            mode,
            CacheLog::default(),
        )
    };
    let bare = per_call_ms(&mut Instant3, &requests);
    let miss = per_call_ms(&mut cached(CacheMode::ReadWrite), &requests);
    let hit = per_call_ms(&mut cached(CacheMode::ReadOnly), &requests);
    let bytes = serde_json::to_string(&requests[0]).expect("json").len();
    println!("suggest through the response cache, median of {n} calls ({bytes}-byte requests)");
    println!("{:<28}  {:>10}  {:>10}", "CALL", "ms", "ADDED ms");
    println!("{:<28}  {:>10.3}  {:>10}", "bare suggester", bare, "-");
    println!(
        "{:<28}  {:>10.3}  {:>10.3}",
        "miss (ask, store)",
        miss,
        miss - bare
    );
    println!(
        "{:<28}  {:>10.3}  {:>10.3}   (target: ≤ 5 ms)",
        "hit (served)",
        hit,
        hit - bare
    );
}
