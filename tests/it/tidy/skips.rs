//! The tests that skip when a server is missing: every skip goes through
//! `common::available` (one line `SKIPPED: test: why (install with …)`, collected by
//! scripts/test, a failure where servers are required), and the tests that can skip
//! are counted and listed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::ROOT;
use crate::source::{indentation, rust_files};

/// One function of the integration tests.
struct Function {
    /// `tests/it/`-relative file, without `.rs` (`suggester_lsp`, `common/servers`).
    file: String,
    name: String,
    is_test: bool,
    /// From its `fn` line to its closing brace.
    body: String,
}

/// Every function of `tests/it/` (rustfmt'd: a body ends at the first `}` line at the
/// indentation of its `fn`).
fn functions() -> Vec<Function> {
    let dir = Path::new(ROOT).join("tests/it");
    let signature = regex::Regex::new(r"^\s*(?:pub(?:\([^)]*\))?\s+)?fn\s+(\w+)").unwrap();
    let mut out = Vec::new();
    for path in rust_files(&dir) {
        let file = path
            .strip_prefix(&dir)
            .unwrap()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (start, line) in lines.iter().enumerate() {
            let Some(c) = signature.captures(line) else {
                continue;
            };
            if line.trim_end().ends_with(';') {
                continue; // a declaration without a body
            }
            let indent = indentation(line);
            let length = if line.trim_end().ends_with('}') {
                0 // `fn f() {}` on one line
            } else {
                let Some(length) = lines[start..]
                    .iter()
                    .position(|l| indentation(l) == indent && l.trim() == "}")
                else {
                    continue;
                };
                length
            };
            let is_test = lines[..start]
                .iter()
                .rev()
                .take_while(|l| {
                    l.trim_start().starts_with("#[") || l.trim_start().starts_with("///")
                })
                .any(|l| l.trim() == "#[test]");
            out.push(Function {
                file: file.clone(),
                name: c[1].to_string(),
                is_test,
                body: lines[start..=start + length].join("\n"),
            });
        }
    }
    out
}

/// The functions that may skip, each with the calls that make it: `common::available`
/// itself, then, until nothing changes, every function that calls one of them (a call
/// `f(` resolves to the caller's file first, then to `crate::FILE::f(`, then to
/// `common`).
fn skipping(functions: &[Function]) -> BTreeSet<(String, String)> {
    let mut gates: BTreeSet<(String, String)> =
        BTreeSet::from([("common/servers".to_string(), "available".to_string())]);
    let defined: BTreeSet<(String, String)> = functions
        .iter()
        .map(|f| (f.file.clone(), f.name.clone()))
        .collect();
    let call = regex::Regex::new(r"((?:crate::\w+::|common::)*)(\w+)\(").unwrap();
    loop {
        let before = gates.len();
        for f in functions {
            if gates.contains(&(f.file.clone(), f.name.clone())) {
                continue;
            }
            let body = f.body.split_once('{').map_or("", |(_, b)| b);
            let calls_gate = call.captures_iter(body).any(|c| {
                let name = c[2].to_string();
                let module = c[1]
                    .trim_end_matches("::")
                    .rsplit("::")
                    .next()
                    .unwrap_or("");
                let files = match module {
                    "" => vec![f.file.clone(), "common/servers".into(), "common/mod".into()],
                    "common" => vec!["common/servers".into(), "common/mod".into()],
                    module => vec![module.to_string(), format!("{module}/mod")],
                };
                files
                    .into_iter()
                    .map(|file| (file, name.clone()))
                    .find(|key| defined.contains(key))
                    .is_some_and(|key| gates.contains(&key))
            });
            if calls_gate {
                gates.insert((f.file.clone(), f.name.clone()));
            }
        }
        if gates.len() == before {
            return gates;
        }
    }
}

#[test]
fn every_skip_is_announced_and_the_tests_that_can_skip_are_listed() {
    let functions = functions();
    // A test skips only through `common::available`: no other `SKIPPED` line, no
    // quiet `eprintln!("skip…")`.
    let own_skip = regex::Regex::new(r#"(?i)"\s*skip"#).unwrap();
    let mut elsewhere = Vec::new();
    for f in &functions {
        if f.file == "common/servers" || f.file.starts_with("tidy") {
            continue;
        }
        for line in f.body.lines() {
            if line.contains("SKIPPED") || own_skip.is_match(line) && line.contains("eprint") {
                elsewhere.push(format!(
                    "tests/it/{}.rs: {}: {}",
                    f.file,
                    f.name,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        elsewhere.is_empty(),
        "tests that announce a skip themselves instead of through common::available: {elsewhere:#?}"
    );
    // Where a test names itself to `available`, the name is the test's own, so the
    // skip line names a test one can run.
    let literal = regex::Regex::new(r#"available\(\s*"(\w+)""#).unwrap();
    let mut misnamed = Vec::new();
    for f in functions.iter().filter(|f| f.is_test) {
        for c in literal.captures_iter(&f.body) {
            if c[1] != f.name {
                misnamed.push(format!(
                    "tests/it/{}.rs: {} says {:?}",
                    f.file, f.name, &c[1]
                ));
            }
        }
    }
    assert!(
        misnamed.is_empty(),
        "skip lines that name another test than their own: {misnamed:#?}"
    );
    let gates = skipping(&functions);
    let mut by_file: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in functions.iter().filter(|f| f.is_test) {
        if gates.contains(&(f.file.clone(), f.name.clone())) {
            by_file.entry(&f.file).or_default().push(&f.name);
        }
    }
    let listed: Vec<String> = by_file
        .iter()
        .flat_map(|(file, tests)| tests.iter().map(move |t| format!("{file}::{t}")))
        .collect();
    println!(
        "{} tests skip when their server or editor is missing:",
        listed.len()
    );
    for test in &listed {
        println!("  {test}");
    }
    // scripts/test names this file: after the run it prints how many of these did skip.
    if let Some(path) = std::env::var_os("NEXTEDIT_SKIPPABLE_LIST") {
        std::fs::write(path, listed.join("\n") + "\n").unwrap();
    }
    // README.md gives the count next to the command that lists them.
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let said =
        regex::Regex::new(r"tidy::skips -- --nocapture` lists the tests that can\s+skip \((\d+)\)")
            .unwrap()
            .captures(&readme)
            .expect("README.md gives the number of tests that can skip")[1]
            .parse::<usize>()
            .unwrap();
    assert_eq!(
        said,
        listed.len(),
        "README.md's count of the tests that can skip"
    );
    assert!(
        listed
            .iter()
            .any(|t| t == "proxy_real_servers::pyright_through_the_proxy"),
        "the list misses a test that calls `available` itself: {listed:#?}"
    );
    assert!(
        listed.iter().any(|t| t.starts_with("suggester_lsp::")),
        "the list misses the tests of a `check` helper that calls `available`: {listed:#?}"
    );
}
