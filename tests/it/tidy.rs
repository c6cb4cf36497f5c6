//! House rules checked on the source tree itself (in the manner of rust-analyzer's
//! tidy tests): what ARCHITECTURE.md promises about the code map stays true.

use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `src/`-relative path with forward slashes.
fn relative(path: &Path) -> String {
    path.strip_prefix(Path::new(ROOT).join("src"))
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

/// Code lines (not comments) of a file.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim_start().starts_with("//"))
}

#[test]
fn every_module_says_what_it_is() {
    let missing: Vec<String> = rust_files(&Path::new(ROOT).join("src"))
        .iter()
        .filter(|p| {
            !std::fs::read_to_string(p)
                .unwrap()
                .trim_start()
                .starts_with("//!")
        })
        .map(|p| relative(p))
        .collect();
    assert!(missing.is_empty(), "no `//!` module doc: {missing:?}");
}

#[test]
fn every_source_file_is_on_the_code_map() {
    // Invariant (ARCHITECTURE.md): the code map names every file, by its `src/`-relative
    // path or, inside its module's entry, by its module name in backticks.
    let map = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let missing: Vec<String> = rust_files(&Path::new(ROOT).join("src"))
        .iter()
        .map(|p| relative(p))
        .filter(|rel| {
            let stem = rel.rsplit('/').next().unwrap().trim_end_matches(".rs");
            let named = |s: &str| map.contains(&format!("`{s}`"));
            !(map.contains(rel.as_str())
                || named(stem)
                || named(&format!("{stem}.rs"))
                || (stem == "mod" || stem == "lib" || stem == "main"))
        })
        .collect();
    assert!(
        missing.is_empty(),
        "not on ARCHITECTURE.md's code map: {missing:?}"
    );
}

#[test]
fn the_pure_core_does_no_io() {
    // Invariant 6 (ARCHITECTURE.md): trajectory, record, syntax, metrics and import do
    // no I/O; files, processes, sockets, threads, the environment, SQLite and git stay
    // at the edges.
    const IO: [&str; 8] = [
        "std::fs",
        "std::process",
        "std::net",
        "std::thread",
        "std::env",
        "rusqlite",
        "git2",
        "std::io::stdin",
    ];
    let mut found = Vec::new();
    for module in ["trajectory", "record", "syntax", "metrics", "import"] {
        for path in rust_files(&Path::new(ROOT).join("src").join(module)) {
            let text = std::fs::read_to_string(&path).unwrap();
            // Unit tests may build fixtures however they like.
            let code = text.split("#[cfg(test)]").next().unwrap();
            for line in code_lines(code) {
                if let Some(io) = IO.iter().find(|io| line.contains(*io)) {
                    found.push(format!("{}: {io}", relative(&path)));
                }
            }
        }
    }
    assert!(found.is_empty(), "I/O in the pure core: {found:#?}");
}

#[test]
fn no_test_is_switched_off() {
    let mut found = Vec::new();
    for dir in ["src", "tests", "benches"] {
        for path in rust_files(&Path::new(ROOT).join(dir)) {
            if path.ends_with("tests/it/tidy.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            if code_lines(&text).any(|l| l.contains("#[ignore")) {
                found.push(path.display().to_string());
            }
        }
    }
    assert!(found.is_empty(), "#[ignore] hides a test: {found:?}");
}
