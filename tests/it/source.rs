//! Reading the crate's own source, for the checks on it (`tidy.rs`, `structure.rs`): its
//! `.rs` files, their code outside test modules, and the paths their `use` items bind.
//! One reader for all of them, so no check is weaker than another about what counts as
//! code.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted. Symbolic links are not followed, and hidden
/// and `node_modules` directories are not entered: `tests/` holds installed editors and
/// servers (tens of thousands of files, links that a running editor test may point
/// anywhere while it runs), none of them the crate's source.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if kind.is_dir() {
                if !name.starts_with('.') && name != "node_modules" {
                    stack.push(path);
                }
            } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The lines of `text` outside `#[cfg(test)]` items and comment lines (rustfmt'd code:
/// an item ends at the first `}` line at its own indentation, or on its own line when
/// it ends with `;`). Every `#[cfg(test)]` is skipped, not only the first: a test-only
/// `use` near the top of a file leaves the rest of the file in.
pub(crate) fn non_test_lines(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if line.trim() == "#[cfg(test)]" {
            let indent = indentation(line);
            i += 1;
            while i < lines.len() && lines[i].trim_start().starts_with("#[") {
                i += 1;
            }
            if i < lines.len() && !lines[i].trim_end().ends_with(';') {
                while i < lines.len()
                    && !(indentation(lines[i]) == indent && lines[i].trim_start().starts_with('}'))
                {
                    i += 1;
                }
            }
            i += 1;
            continue;
        }
        if !line.trim_start().starts_with("//") {
            out.push(line.to_string());
        }
        i += 1;
    }
    out
}

/// The number of leading whitespace bytes of `line`.
pub(crate) fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The `use` items of `code` (possibly over several lines), each as its tree
/// (`std::{fs, io}`), and `code` without them.
pub(crate) fn use_items(code: &str) -> (Vec<String>, String) {
    let uses = regex::Regex::new(r"(?ms)^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+([^;]+);").unwrap();
    let trees = uses.captures_iter(code).map(|c| c[1].to_string()).collect();
    (trees, uses.replace_all(code, "").into_owned())
}

/// The names a `use` tree binds, each with the path it names (`a::{b, c::d as e}` →
/// `b` = `a::b`, `e` = `a::c::d`; `self` in a group binds the group's prefix; a glob
/// binds `*`).
pub(crate) fn use_bindings(tree: &str) -> Vec<(String, Vec<String>)> {
    fn expand(prefix: &[String], tree: &str, out: &mut Vec<(String, Vec<String>)>) {
        let tree = tree.trim();
        if tree.is_empty() {
            return;
        }
        if let Some(open) = tree.find('{') {
            let head = tree[..open].trim().trim_end_matches("::");
            let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
            let inner = &tree[open + 1..close];
            let mut path = prefix.to_vec();
            path.extend(head.split("::").filter(|s| !s.is_empty()).map(String::from));
            let mut depth = 0;
            let mut start = 0;
            for (i, c) in inner.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        expand(&path, &inner[start..i], out);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            expand(&path, &inner[start..], out);
            return;
        }
        let mut parts = tree.split(" as ");
        let name = parts.next().unwrap().trim();
        let alias = parts.next().map(str::trim);
        let mut path = prefix.to_vec();
        let mut bound = String::new();
        for segment in name.split("::").filter(|s| !s.is_empty()) {
            match segment {
                "self" => bound = path.last().cloned().unwrap_or_default(),
                "*" => bound = "*".into(),
                s => {
                    path.push(s.to_string());
                    bound = s.to_string();
                }
            }
        }
        out.push((alias.map_or(bound, String::from), path));
    }
    let mut out = Vec::new();
    expand(&[], tree, &mut out);
    out
}

/// The paths a `use` tree names, each as its segments (`a::{b, c::d}` → `a::b`,
/// `a::c::d`; `self` in a group names the group's prefix).
pub(crate) fn use_paths(tree: &str) -> Vec<Vec<String>> {
    use_bindings(tree)
        .into_iter()
        .map(|(_, path)| path)
        .collect()
}

#[test]
fn use_bindings_name_what_they_bind() {
    let bound = |t: &str| -> Vec<String> {
        use_bindings(t)
            .iter()
            .map(|(name, path)| format!("{name}={}", path.join("::")))
            .collect()
    };
    assert_eq!(
        bound("std::{fs, io::{self, Read as R}, process::*}"),
        [
            "fs=std::fs",
            "io=std::io",
            "R=std::io::Read",
            "*=std::process"
        ]
    );
    assert_eq!(bound("::std::env"), ["env=std::env"]);
    let (trees, rest) = use_items("use std::{\n    fs,\n    io,\n};\nfn f() {}\n");
    assert_eq!(trees, ["std::{\n    fs,\n    io,\n}"]);
    assert_eq!(rest.trim(), "fn f() {}");
}

#[test]
fn non_test_lines_skips_every_test_item() {
    let code = non_test_lines(
        "#[cfg(test)]\nuse a::b;\nfn a() {}\n// note\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\nfn c() {}\n#[cfg(test)]\n#[allow(x)]\nfn d() {\n}\nfn e() {}\n",
    );
    assert_eq!(code, ["fn a() {}", "fn c() {}", "fn e() {}"]);
}
