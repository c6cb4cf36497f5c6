//! What several benches share: a fixed pseudo-random sequence, percentiles, a copy of
//! this crate's own sources as a worktree, the trivial `cmd:` suggester process, and
//! a machine loaded on purpose.
//!
//! Included with `#[path = "support/mod.rs"] mod support;` (cargo builds only
//! `benches/*.rs` as benches, so this folder is not one). Each bench uses a part of it.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

mod load;
// Only the benches with loaded runs use it.
#[allow(unused_imports)]
pub use load::Load;

use nextedit::base::sys::probe::availability;
use nextedit::base::sys::sandbox::Sandbox;
use nextedit::engine::suggest::{ProcessSuggester, Suggester};

/// Answers every request with an empty result that fits `suggest` and `complete`.
/// Python reads its input in buffered lines and finds the id with a regex (no JSON
/// decoding), so the figure is nextedit's (JSON, pipes, the reader thread) and the
/// kernel's; `sed -u` would read a step's 100 KB line one byte per system call.
pub const ECHO_SUGGESTER: &str = r#"python3 -c 'import re, sys
for line in sys.stdin:
    m = re.match(r"\{\"id\":(\d+)", line)
    if m:
        sys.stdout.write("{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"edits\":[],\"text\":\"\"}}\n" % m.group(1))
        sys.stdout.flush()'"#;

/// The echo process as `cmd:` adapters: unsandboxed, and in bubblewrap when it works
/// here (its scratch directory is `scratch`, where every worktree is made).
pub fn echo_adapters(scratch: &Path) -> Vec<(String, Box<dyn Suggester>)> {
    let echo = || ProcessSuggester::from_shell(ECHO_SUGGESTER, Duration::from_secs(10));
    let mut adapters: Vec<(String, Box<dyn Suggester>)> =
        vec![("cmd: (python3, --sandbox off)".into(), Box::new(echo()))];
    if availability().is_ok() {
        let sandbox = Sandbox {
            scratch: scratch.to_path_buf(),
            read_only: Vec::new(),
            writable: Vec::new(),
            network: false,
        };
        adapters.push((
            "cmd: (python3, bwrap)".into(),
            Box::new(echo().with_sandbox(sandbox)),
        ));
    }
    adapters
}

/// A fixed pseudo-random sequence (64-bit LCG): the same inputs on every run.
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// The `p` quantile (0..=1, nearest rank) of `values`; NaN when there are none.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The median of `values` (the upper one of an even count); NaN when there are none.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// Copies the `.rs` files under `from` into `to` (same layout); each copied file's
/// path relative to `to` and its text, in path order.
pub fn copy_rust_sources(from: &Path, to: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    copy_under(from, to, Path::new(""), &mut out);
    out
}

fn copy_under(from: &Path, to: &Path, rel: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(from.join(rel))
        .expect("read src")
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let rel = rel.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            std::fs::create_dir_all(to.join(&rel)).expect("mkdir");
            copy_under(from, to, &rel, out);
        } else if rel.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(from.join(&rel)).expect("read");
            std::fs::write(to.join(&rel), &text).expect("write");
            out.push((rel.to_string_lossy().into_owned(), text));
        }
    }
}
