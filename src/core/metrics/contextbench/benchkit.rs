//! Benchkit `trace.jsonl` tool calls → ContextBench steps.
//!
//! [`Conversion::Compat`] restates Benchkit's `build_contextbench_traj_data` rules
//! (reference §3.2), defects included: `tail -n N` read as lines 1–N, full-file reads
//! give the file only, `nl -ba f | sed -n` and `cat f | sed -n` are lost, `cat -n f`
//! names the file `-n`. [`Conversion::Fixed`] reads those idioms correctly; it needs
//! each file's line count (a [`LineCounts`] lookup) for tails and full-file reads.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::input::{LineSpan, Step};

/// Which conversion rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conversion {
    /// Benchkit's rules exactly.
    Compat,
    /// The defects fixed (see module docs and `docs/metrics.md`).
    Fixed,
}

/// Line counts of repository files, by normalised path (`None` when unknown).
pub trait LineCounts {
    /// Number of lines of `path`, if it is a file.
    fn line_count(&self, path: &str) -> Option<i64>;
}

impl<F: Fn(&str) -> Option<i64>> LineCounts for F {
    fn line_count(&self, path: &str) -> Option<i64> {
        self(path)
    }
}

/// Lines Claude Code's `Read` returns without a `limit`.
const DEFAULT_READ_LIMIT: i64 = 2000;

macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($pat).expect("valid regex"));
    };
}

re!(
    SED,
    r#"sed\s+-n\s+['"]?(\d+)\s*,\s*(\d+)p['"]?\s+([^\s|;]+)"#
);
re!(HEAD, r"head\s+-n\s+(\d+)\s+([^\s|;]+)");
re!(TAIL, r"tail\s+-n\s+(\d+)\s+([^\s|;]+)");
re!(CAT, r"cat\s+([^\s|;]+)");
re!(
    GREP,
    r"(?:rg|grep)\b(?:[^|;]*?)\s+((?:\./|/)?[A-Za-z0-9_.\-/]+(?:\.[A-Za-z0-9_.\-]+)?)$"
);
// Fixed-mode additions.
re!(SED_ONE, r#"sed\s+-n\s+['"]?(\d+)p['"]?\s+([^\s|;]+)"#);
re!(
    PIPE_SED,
    r#"(?:nl\s+(?:-\S+\s+)*|cat\s+(?:-\S+\s+)*)([^\s|;-][^\s|;]*)\s*\|\s*sed\s+-n\s+['"]?(\d+)(?:\s*,\s*(\d+))?p['"]?"#
);
re!(HEAD_SHORT, r"head\s+-(\d+)\s+([^\s|;]+)");
re!(CAT_FLAGS, r"cat\s+(?:-\S+\s+)*([^\s|;-][^\s|;]*)");
re!(HUNK, r"@@\s+-(\d+)(?:,(\d+))?\s+\+(\d+)(?:,(\d+))?\s+@@");

/// First shell word of `s` (quotes respected), like `shlex.split(s)[0]`.
fn first_shell_word(s: &str) -> String {
    let mut out = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in s.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => out.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                started = true;
            }
            None if c.is_whitespace() => {
                if started || !out.is_empty() {
                    break;
                }
            }
            None => {
                out.push(c);
                started = true;
            }
        }
    }
    out
}

/// Benchkit's `_normalize_repo_path`: sandbox prefixes stripped, shell noise rejected.
pub fn normalize_repo_path(raw: &str) -> Option<String> {
    let text = raw.trim();
    if text.is_empty() || text.starts_with('{') || text.starts_with('[') {
        return None;
    }
    let token = if text.contains(' ') {
        first_shell_word(text)
    } else {
        text.to_owned()
    };
    let token = token.trim().trim_matches(['\'', '"']).replace('\\', "/");
    if token.is_empty() || token == "-" || token == "." {
        return None;
    }
    let mut token = strip_workspace_prefix(&token);
    for prefix in ["/testbed/", "/workspace/", "/app/"] {
        if let Some(rest) = token.strip_prefix(prefix) {
            token = if prefix == "/workspace/" {
                rest.split_once('/').map_or(rest, |(_, r)| r).to_owned()
            } else {
                rest.to_owned()
            };
            break;
        }
    }
    let token = token.strip_prefix("./").unwrap_or(&token);
    let token = token.trim_start_matches('/');
    if token.is_empty() || token.starts_with("..") {
        return None;
    }
    let token = token.strip_suffix(':').unwrap_or(token);
    if token.is_empty() || ["|", "&&", "||"].contains(&token) {
        return None;
    }
    let base = token.rsplit('/').next().unwrap_or(token);
    if ["bash", "sh", "zsh"].contains(&base) {
        return None;
    }
    Some(token.to_owned())
}

/// `…/runs/…/workspaces/<a>/<b>/REST` → `REST`.
fn strip_workspace_prefix(token: &str) -> String {
    const MARKER: &str = "/workspaces/";
    let Some((_, suffix)) = token.split_once(MARKER) else {
        return token.to_owned();
    };
    if !(token.starts_with('/') || token.starts_with("runs/") || token.contains("/runs/")) {
        return token.to_owned();
    }
    let parts: Vec<&str> = suffix.split('/').collect();
    if parts.len() < 3 {
        return token.to_owned();
    }
    parts[2..].join("/")
}

/// Files and spans of one invocation, spans de-duplicated in order.
#[derive(Default)]
struct Found {
    files: BTreeSet<String>,
    spans: BTreeMap<String, Vec<LineSpan>>,
}

impl Found {
    fn add_span(&mut self, path: &str, start: i64, end: i64) {
        let start = start.max(1);
        let end = end.max(start);
        let v = self.spans.entry(path.to_owned()).or_default();
        let s = LineSpan { start, end };
        if !v.contains(&s) {
            v.push(s);
        }
    }
    fn is_empty(&self) -> bool {
        self.files.is_empty() && self.spans.is_empty()
    }
}

fn as_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn non_empty(v: &Value) -> bool {
    !(v.is_null() || v.as_str() == Some(""))
}

/// Copies `path`, `filePath`, `command`, `offset`, `limit`, the raw event and the raw
/// input JSON from the matching raw invocation (by `tool_use_id`, else `call_index`).
fn hydrate(inv: &Value, by_id: &HashMap<String, &Value>, by_index: &HashMap<i64, &Value>) -> Value {
    let mut h = inv.clone();
    let Some(obj) = h.as_object_mut() else {
        return h;
    };
    let id = inv["tool_use_id"].as_str().unwrap_or("").trim().to_owned();
    let raw = (!id.is_empty())
        .then(|| by_id.get(&id).copied())
        .flatten()
        .or_else(|| as_int(&inv["call_index"]).and_then(|i| by_index.get(&i).copied()));
    let Some(raw) = raw else {
        return h;
    };
    if !obj.contains_key("raw_event") && raw["raw_event"].is_object() {
        obj.insert("raw_event".into(), raw["raw_event"].clone());
    }
    let missing_json =
        |o: &serde_json::Map<String, Value>| o.get("raw_input_json").is_none_or(|v| !non_empty(v));
    if missing_json(obj) && raw["raw_input_json"].is_string() {
        obj.insert("raw_input_json".into(), raw["raw_input_json"].clone());
    }
    if let Some(input) = raw["input"].as_object() {
        for key in ["path", "filePath", "command", "offset", "limit"] {
            let existing = obj.get(key).is_some_and(non_empty);
            if let Some(incoming) = input.get(key) {
                if !existing && non_empty(incoming) {
                    obj.insert(key.into(), incoming.clone());
                }
            }
        }
        if missing_json(obj) {
            obj.insert(
                "raw_input_json".into(),
                Value::String(Value::Object(input.clone()).to_string()),
            );
        }
    }
    h
}

fn invocation_path(inv: &Value) -> Option<String> {
    let direct = inv["path"].as_str().or_else(|| inv["filePath"].as_str());
    if let Some(p) = direct
        .filter(|p| !p.is_empty())
        .and_then(normalize_repo_path)
    {
        return Some(p);
    }
    let raw = inv["raw_input_json"].as_str()?;
    if !raw.trim().starts_with('{') {
        return None;
    }
    let parsed: Value = serde_json::from_str(raw).ok()?;
    parsed["path"]
        .as_str()
        .or_else(|| parsed["filePath"].as_str())
        .and_then(normalize_repo_path)
}

fn full_file(found: &mut Found, path: &str, lines: &dyn LineCounts, from: i64, limit: i64) {
    if let Some(n) = lines.line_count(path) {
        let end = (from + limit - 1).min(n);
        if n > 0 && from <= end {
            found.add_span(path, from, end);
        }
    }
}

fn extract(inv: &Value, mode: Conversion, lines: &dyn LineCounts) -> Found {
    let mut found = Found::default();
    let tool = inv["tool"].as_str().unwrap_or("").trim().to_lowercase();
    match tool.as_str() {
        "read" => {
            if let Some(path) = invocation_path(inv) {
                found.files.insert(path.clone());
                let offset = as_int(&inv["offset"]);
                let limit = as_int(&inv["limit"]);
                match (offset, limit, mode) {
                    (Some(o), Some(l), _) if l > 0 => found.add_span(&path, o + 1, o + l),
                    (o, l, Conversion::Fixed) => {
                        let from = o.map_or(1, |o| o + 1);
                        let limit = l.filter(|l| *l > 0).unwrap_or(DEFAULT_READ_LIMIT);
                        full_file(&mut found, &path, lines, from, limit);
                    }
                    _ => {}
                }
            }
        }
        "grep" => {
            if let Some(path) = invocation_path(inv) {
                found.files.insert(path);
            }
        }
        "bash" => {
            let command = inv["command"].as_str().unwrap_or("").trim();
            bash(command, mode, lines, &mut found);
        }
        _ => {}
    }
    found
}

fn bash(command: &str, mode: Conversion, lines: &dyn LineCounts, found: &mut Found) {
    if command.is_empty() {
        return;
    }
    let cmd = command.split_whitespace().collect::<Vec<_>>().join(" ");
    let num = |s: &str| s.parse::<i64>().unwrap_or(0);
    for c in SED.captures_iter(&cmd) {
        if let Some(p) = normalize_repo_path(&c[3]) {
            found.files.insert(p.clone());
            found.add_span(&p, num(&c[1]), num(&c[2]));
        }
    }
    for c in HEAD.captures_iter(&cmd) {
        let n = num(&c[1]);
        if let Some(p) = normalize_repo_path(&c[2]).filter(|_| n >= 1) {
            found.files.insert(p.clone());
            found.add_span(&p, 1, n);
        }
    }
    for c in TAIL.captures_iter(&cmd) {
        let n = num(&c[1]);
        if let Some(p) = normalize_repo_path(&c[2]).filter(|_| n >= 1) {
            found.files.insert(p.clone());
            match mode {
                Conversion::Compat => found.add_span(&p, 1, n),
                Conversion::Fixed => {
                    if let Some(total) = lines.line_count(&p).filter(|t| *t > 0) {
                        found.add_span(&p, (total - n + 1).max(1), total);
                    }
                }
            }
        }
    }
    match mode {
        Conversion::Compat => {
            for c in CAT.captures_iter(&cmd) {
                if let Some(p) = normalize_repo_path(&c[1]) {
                    found.files.insert(p);
                }
            }
        }
        Conversion::Fixed => {
            for c in SED_ONE.captures_iter(&cmd) {
                if let Some(p) = normalize_repo_path(&c[2]) {
                    found.files.insert(p.clone());
                    found.add_span(&p, num(&c[1]), num(&c[1]));
                }
            }
            for c in HEAD_SHORT.captures_iter(&cmd) {
                let n = num(&c[1]);
                if let Some(p) = normalize_repo_path(&c[2]).filter(|_| n >= 1) {
                    found.files.insert(p.clone());
                    found.add_span(&p, 1, n);
                }
            }
            let mut piped = BTreeSet::new();
            for c in PIPE_SED.captures_iter(&cmd) {
                if let Some(p) = normalize_repo_path(&c[1]) {
                    let a = num(&c[2]);
                    let b = c.get(3).map_or(a, |m| num(m.as_str()));
                    found.files.insert(p.clone());
                    found.add_span(&p, a, b);
                    piped.insert(p);
                }
            }
            for c in CAT_FLAGS.captures_iter(&cmd) {
                if let Some(p) = normalize_repo_path(&c[1]) {
                    found.files.insert(p.clone());
                    if !piped.contains(&p) {
                        full_file(found, &p, lines, 1, i64::MAX / 2);
                    }
                }
            }
        }
    }
    if let Some(c) = GREP.captures(cmd.trim()) {
        if let Some(p) = normalize_repo_path(&c[1]) {
            found.files.insert(p);
        }
    }
}

fn edit_fallback(inv: &Value) -> Found {
    let mut found = Found::default();
    if inv["tool"].as_str().unwrap_or("").trim().to_lowercase() != "edit" {
        return found;
    }
    let path = inv["path"]
        .as_str()
        .filter(|p| !p.is_empty())
        .or_else(|| inv["filePath"].as_str());
    if let Some(p) = path.and_then(normalize_repo_path) {
        found.files.insert(p);
    }
    let meta = &inv["raw_event"]["state"]["metadata"];
    let patch = meta["filediff"]["patch"]
        .as_str()
        .or_else(|| meta["diff"].as_str())
        .or_else(|| inv["raw_input_json"].as_str().filter(|s| s.contains("@@")))
        .unwrap_or("");
    let mut current: Option<String> = None;
    for line in patch.lines() {
        if let Some(raw) = line.strip_prefix("+++ ") {
            let raw = raw.trim();
            current = Some(raw.strip_prefix("b/").unwrap_or(raw).to_owned());
            continue;
        }
        let Some(cur) = &current else { continue };
        if let Some(c) = HUNK.captures(line) {
            let start: i64 = c[3].parse().unwrap_or(0);
            let count: i64 = c
                .get(4)
                .map_or(1, |m| m.as_str().parse().unwrap_or(1))
                .max(1);
            if let Some(p) = normalize_repo_path(cur) {
                found.files.insert(p.clone());
                found.add_span(&p, start, start + count - 1);
            }
        }
    }
    found
}

fn to_step(found: Found) -> Step {
    Step {
        files: found.files.into_iter().collect(),
        spans: found.spans,
        symbols: BTreeMap::new(),
    }
}

/// One converted step and the tool invocation it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolStep {
    /// The invocation's `tool` as written in the trace (`Read`, `Bash`, `Grep`, `Edit`…).
    pub tool: String,
    /// What the invocation read.
    pub step: Step,
}

/// Converts one `trace.jsonl` row's tool invocations into steps and the final context
/// (the union of all reads, as Benchkit defines it).
pub fn trace_to_steps(row: &Value, mode: Conversion, lines: &dyn LineCounts) -> (Vec<Step>, Step) {
    let steps: Vec<Step> = trace_to_tool_steps(row, mode, lines)
        .into_iter()
        .map(|s| s.step)
        .collect();
    let mut final_files = BTreeSet::new();
    let mut final_spans: BTreeMap<String, Vec<LineSpan>> = BTreeMap::new();
    for s in &steps {
        final_files.extend(s.files.iter().cloned());
        for (p, spans) in &s.spans {
            let e = final_spans.entry(p.clone()).or_default();
            for sp in spans {
                if !e.contains(sp) {
                    e.push(*sp);
                }
            }
        }
    }
    let final_context = Step {
        files: final_files.into_iter().collect(),
        spans: final_spans,
        symbols: BTreeMap::new(),
    };
    (steps, final_context)
}

/// Like [`trace_to_steps`], keeping which tool each step came from (importers name
/// the read's `via` after it); the final context is the union of these steps.
pub fn trace_to_tool_steps(row: &Value, mode: Conversion, lines: &dyn LineCounts) -> Vec<ToolStep> {
    let meta = &row["metadata"];
    let curated = meta["tool_invocations_curated"]
        .as_array()
        .filter(|a| !a.is_empty());
    let raw: &[Value] = meta["tool_invocations_raw"]
        .as_array()
        .map_or(&[], Vec::as_slice);
    let invocations: &[Value] = curated.map_or(raw, Vec::as_slice);
    let mut by_id = HashMap::new();
    let mut by_index = HashMap::new();
    for r in raw.iter().filter(|r| r.is_object()) {
        let id = r["tool_use_id"].as_str().unwrap_or("").trim();
        if !id.is_empty() {
            by_id.insert(id.to_owned(), r);
        }
        if let Some(i) = as_int(&r["call_index"]) {
            by_index.insert(i, r);
        }
    }
    let mut steps = Vec::new();
    let mut fallback = Vec::new();
    let mut primary = 0usize;
    for inv in invocations {
        let inv = hydrate(inv, &by_id, &by_index);
        let tool = inv["tool"].as_str().unwrap_or("").trim().to_owned();
        let edit = edit_fallback(&inv);
        if !edit.is_empty() {
            fallback.push((tool.clone(), edit));
        }
        let found = extract(&inv, mode, lines);
        if found.is_empty() {
            continue;
        }
        // Only read/grep/bash produce files here, so every step is a primary one.
        primary += 1;
        steps.push((tool, found));
    }
    if primary == 0 && !fallback.is_empty() {
        steps = fallback;
    }
    steps
        .into_iter()
        .map(|(tool, found)| ToolStep {
            tool,
            step: to_step(found),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_lines(_: &str) -> Option<i64> {
        None
    }

    fn bash_step(cmd: &str, mode: Conversion) -> Step {
        let row = serde_json::json!({"metadata": {"tool_invocations_curated": [
            {"call_index": 1, "tool": "Bash", "command": cmd}]}});
        let lines = |p: &str| (p == "src/a.py").then_some(100);
        trace_to_steps(&row, mode, &lines)
            .0
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    #[test]
    fn benchkit_observed_conversions() {
        use Conversion::Compat as C;
        let sp = |s: &Step, f: &str| s.spans.get(f).cloned().unwrap_or_default();
        assert_eq!(
            sp(&bash_step("sed -n '10,40p' src/a.py", C), "src/a.py"),
            [LineSpan { start: 10, end: 40 }]
        );
        assert!(bash_step("nl -ba src/a.py | sed -n '10,40p'", C).is_empty());
        assert!(bash_step("rg -n foo src/a.py | head -20", C).is_empty());
        assert_eq!(bash_step("cat -n src/a.py", C).files, ["-n"]);
        assert_eq!(bash_step("grep -rn foo src/", C).files, ["src/"]);
        assert_eq!(
            sp(&bash_step("tail -n 20 src/a.py", C), "src/a.py"),
            [LineSpan { start: 1, end: 20 }]
        );
        let both = bash_step("cd /testbed && sed -n '3,4p' src/a.py && cat src/b.py", C);
        assert_eq!(both.files, ["src/a.py", "src/b.py"]);
        assert_eq!(bash_step("cat src/a.py src/b.py", C).files, ["src/a.py"]);
        let z = bash_step("/bin/zsh -lc \"sed -n '1,5p' src/a.py\"", C);
        assert_eq!(sp(&z, "src/a.py"), [LineSpan { start: 1, end: 5 }]);
    }

    #[test]
    fn raw_invocations_hydrate_and_edits_are_a_fallback() {
        // Curated rows get path/offset/limit from the raw input with the same tool_use_id.
        let row = serde_json::json!({"metadata": {
            "tool_invocations_curated": [
                {"call_index": 1, "tool": "Read", "tool_use_id": "t1"},
                {"call_index": 2, "tool": "Edit", "tool_use_id": "t2", "path": "/testbed/a.py"}],
            "tool_invocations_raw": [
                {"call_index": 1, "tool": "Read", "tool_use_id": "t1",
                 "input": {"file_path": "/testbed/x.py", "path": "/testbed/a.py", "offset": 10, "limit": 5}}]}});
        let (steps, fin) = trace_to_steps(&row, Conversion::Compat, &no_lines);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].spans["a.py"], [LineSpan { start: 11, end: 15 }]);
        assert_eq!(fin.files, ["a.py"]);
        // With no read at all, the Edit's new-file hunk ranges become the steps.
        let row = serde_json::json!({"metadata": {"tool_invocations_curated": [
            {"call_index": 1, "tool": "Edit", "path": "/testbed/a.py",
             "raw_event": {"state": {"metadata": {"diff": "--- a/a.py\n+++ b/a.py\n@@ -3,2 +3,4 @@\n"}}}}]}});
        let (steps, _) = trace_to_steps(&row, Conversion::Compat, &no_lines);
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].spans["a.py"], [LineSpan { start: 3, end: 6 }]);
    }

    #[test]
    fn path_normalisation() {
        assert_eq!(
            normalize_repo_path("/testbed/src/a.py").as_deref(),
            Some("src/a.py")
        );
        assert_eq!(
            normalize_repo_path("/workspace/o__r__0.1/src/a.py").as_deref(),
            Some("src/a.py")
        );
        assert_eq!(normalize_repo_path("/testbed").as_deref(), Some("testbed"));
        assert_eq!(
            normalize_repo_path("src/a.py:").as_deref(),
            Some("src/a.py")
        );
        assert_eq!(
            normalize_repo_path("/runs/x/workspaces/a/b/src/c.py").as_deref(),
            Some("src/c.py")
        );
        assert_eq!(normalize_repo_path("../x"), None);
        assert_eq!(normalize_repo_path("/bin/bash"), None);
        assert_eq!(normalize_repo_path("{\"a\": 1}"), None);
    }

    #[test]
    fn fixed_conversions() {
        use Conversion::Fixed as F;
        let sp = |s: &Step, f: &str| s.spans.get(f).cloned().unwrap_or_default();
        assert_eq!(
            sp(&bash_step("tail -n 20 src/a.py", F), "src/a.py"),
            [LineSpan {
                start: 81,
                end: 100
            }]
        );
        assert_eq!(
            sp(
                &bash_step("nl -ba src/a.py | sed -n '10,40p'", F),
                "src/a.py"
            ),
            [LineSpan { start: 10, end: 40 }]
        );
        assert_eq!(
            sp(&bash_step("sed -n '10p' src/a.py", F), "src/a.py"),
            [LineSpan { start: 10, end: 10 }]
        );
        assert_eq!(
            sp(&bash_step("head -30 src/a.py", F), "src/a.py"),
            [LineSpan { start: 1, end: 30 }]
        );
        let cat = bash_step("cat -n src/a.py", F);
        assert_eq!(cat.files, ["src/a.py"]);
        assert_eq!(sp(&cat, "src/a.py"), [LineSpan { start: 1, end: 100 }]);
    }
}
