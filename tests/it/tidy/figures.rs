//! Figures in the docs come from somewhere one can run again: every table of measured
//! figures in README.md and docs/ has, in its section, the command that produced it
//! (`cargo bench …`, `nextedit …`, `scripts/…`, a Python driver) or the test that
//! checks it. Prose figures are surveyed by hand (the tables are where they pile up).

use std::path::Path;

use super::ROOT;

/// A measured figure: a number with a unit of time, size, share or speed.
const MEASURED: &str = r"\d\s*(?:%|ms\b|µs\b|s\b|MiB|MB|GB|KB|×|tasks/s)";

/// Where a figure can come from: a command in a code span, or a test or bench file.
const SOURCE: &str = r"`(?:cargo (?:bench|test)|nextedit |scripts/|python3? |\.venv-\w+/bin/python |replay/\S+\.py|[A-Z_]+=\S+ scripts/)[^`]*`|(?:tests/it|benches)/\w+\.rs";

/// The tables of measured figures in `markdown` (outside fenced code) that name no
/// source between their `## ` section's heading and themselves, as their first line
/// numbers.
fn unsourced_tables(markdown: &str) -> Vec<usize> {
    let measured = regex::Regex::new(MEASURED).unwrap();
    let source = regex::Regex::new(SOURCE).unwrap();
    let lines: Vec<&str> = markdown.lines().collect();
    let is_row = |l: &str| l.trim_start().starts_with('|');
    let mut out = Vec::new();
    let mut fenced = false;
    let mut section = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if !fenced && (line.starts_with("## ") || line.starts_with("# ")) {
            section = i;
        }
        if fenced || !is_row(line) {
            i += 1;
            continue;
        }
        let end = (i..lines.len())
            .find(|&j| !is_row(lines[j]))
            .unwrap_or(lines.len());
        let table = lines[i..end].join("\n");
        let context = lines[section..i].join("\n");
        if measured.is_match(&table) && !source.is_match(&context) {
            out.push(i + 1);
        }
        i = end;
    }
    out
}

#[test]
fn every_table_of_measured_figures_names_its_command() {
    let mut files = vec!["README.md".to_string()];
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            files.push(format!("docs/{name}"));
        }
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).unwrap();
        for line in unsourced_tables(&text) {
            found.push(format!("{file}:{line}"));
        }
    }
    assert!(
        found.is_empty(),
        "tables of measured figures whose section names no command or test that gives them: {found:#?}"
    );
}

#[test]
fn a_table_needs_its_command_in_its_own_section() {
    let doc = "# T\n\n## A\n\nMeasured with `cargo bench --bench x`:\n\n| a | s |\n|---|---|\n| 1 | 2.0 s |\n\n\
               ## B\n\n| a | s |\n|---|---|\n| 1 | 3.0 s |\n\n| kind | rule |\n|---|---|\n| x | y |\n\n\
               ```\n| 1 | 4 ms |\n```\n\n### C (`tests/it/foo.rs`)\n\n| 5 % |\n|---|\n| 6 % |\n";
    assert_eq!(unsourced_tables(doc), [13]);
}
