//! House rules checked on the source tree itself (in the manner of rust-analyzer's
//! tidy tests): what ARCHITECTURE.md promises about the code map stays true.

use std::path::Path;

use crate::source::{non_test_lines, rust_files, use_bindings, use_items};

mod figures;
mod paths;
mod skips;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

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

/// What the pure core must not reach, as path prefixes: files, processes, sockets,
/// threads, the environment, the standard streams, the clock, OS extensions, SQLite, git
/// and raw system calls.
const IO_PATHS: [&str; 15] = [
    "std::fs",
    "std::process",
    "std::net",
    "std::thread",
    "std::env",
    "std::io::stdin",
    "std::io::stdout",
    "std::io::stderr",
    "std::os",
    "std::time::Instant",
    "std::time::SystemTime",
    "rusqlite",
    "git2",
    "libc",
    "nix",
];

/// Where `code` (a file's lines outside test modules) reaches I/O: each `use` whose path
/// starts with one of [`IO_PATHS`], each inline path that does (`std::fs::read`, or
/// `fs::read` after `use std::fs;`, `io::stdin()` after `use std::io;`), and each
/// macro that prints to the standard streams. As `line: what`.
fn io_uses(code: &[String]) -> Vec<String> {
    io_uses_beside(code, &[])
}

/// [`io_uses`], with the crate's own modules that do I/O forbidden too: `modules` are
/// (module path, does I/O), and a path is judged by the longest module it is in
/// (`crate::base::secrets::patterns::mask` is in the pure `patterns` even when
/// `crate::base::secrets` itself reads the environment).
fn io_uses_beside(code: &[String], modules: &[(String, bool)]) -> Vec<String> {
    let within =
        |path: &str, prefix: &str| path == prefix || path.starts_with(&format!("{prefix}::"));
    let forbidden = |path: &[String]| -> Option<String> {
        let joined = path.join("::");
        if let Some(io) = IO_PATHS.iter().find(|io| within(&joined, io)) {
            return Some(io.to_string());
        }
        modules
            .iter()
            .filter(|(module, _)| within(&joined, module))
            .max_by_key(|(module, _)| module.len())
            .filter(|(_, impure)| *impure)
            .map(|(module, _)| module.clone())
    };
    let text = code.join("\n");
    let (trees, rest) = use_items(&text);
    let mut found = Vec::new();
    let mut bound = std::collections::BTreeMap::new();
    for tree in &trees {
        for (name, path) in use_bindings(tree) {
            if let Some(io) = forbidden(&path) {
                found.push(format!("use {}: {io}", path.join("::")));
            }
            bound.insert(name, path);
        }
    }
    let inline = regex::Regex::new(r"(?:^|[^\w:])(?:::)?(\w+(?:::\w+)+)").unwrap();
    let print = regex::Regex::new(r"(?:^|[^\w:])(e?print(?:ln)?!|dbg!)").unwrap();
    for line in rest.lines() {
        for c in inline.captures_iter(line) {
            let mut path: Vec<String> = c[1].split("::").map(String::from).collect();
            if let Some(prefix) = bound.get(&path[0]) {
                path.splice(..1, prefix.iter().cloned());
            }
            if let Some(io) = forbidden(&path) {
                found.push(format!("{}: {io}", line.trim()));
            }
        }
        for c in print.captures_iter(line) {
            found.push(format!("{}: {}", line.trim(), &c[1]));
        }
    }
    found
}

#[test]
fn io_uses_sees_groups_aliases_and_bound_names() {
    let lines = |s: &str| -> Vec<String> { s.lines().map(String::from).collect() };
    assert_eq!(
        io_uses(&lines(
            "use std::{collections::HashMap, fs, io::{self, Read}};\nfn f() {\n    let t = fs::read(p);\n    io::stdin();\n    std::process::id();\n}\n"
        )),
        [
            "use std::fs: std::fs",
            "let t = fs::read(p);: std::fs",
            "io::stdin();: std::io::stdin",
            "std::process::id();: std::process",
        ]
    );
    assert_eq!(
        io_uses(&lines(
            "use std::env as e;\nfn f() { println!(\"{}\", e::var(\"X\")) }\n"
        )),
        [
            "use std::env: std::env",
            "fn f() { println!(\"{}\", e::var(\"X\")) }: std::env",
            "fn f() { println!(\"{}\", e::var(\"X\")) }: println!",
        ]
    );
    assert!(
        io_uses(&lines(
            "use std::io::Write;\nuse std::fmt;\nfn f(w: &mut impl Write) { fmt::format(x); }\n"
        ))
        .is_empty()
    );
    assert_eq!(
        io_uses_beside(
            &lines(
                "use crate::base::{jsonrpc, progress, progress::pure::g};\nfn f() { crate::base::progress::note(); }\n"
            ),
            &[
                ("crate::base".into(), false),
                ("crate::base::progress".into(), true),
                ("crate::base::progress::pure".into(), false),
            ]
        ),
        [
            "use crate::base::progress: crate::base::progress",
            "fn f() { crate::base::progress::note(); }: crate::base::progress",
        ]
    );
}

#[test]
fn the_pure_core_does_no_io() {
    // Invariant 6 (ARCHITECTURE.md): the core layer (`src/core/`: trajectory, record,
    // syntax, metrics, lsp, import) does no I/O; files, processes, sockets, threads,
    // the environment, the clock, SQLite and git stay at the edges. Whole files are
    // read outside their test modules (unit tests may build fixtures however they like).
    // The layer below may do I/O in some modules (`base::sys` spawns, `base::progress`
    // prints): the core uses none of those, whichever they are.
    let mut base = Vec::new();
    for path in rust_files(&Path::new(ROOT).join("src/base")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let rel = relative(&path);
        let module = rel.trim_end_matches(".rs").trim_end_matches("/mod");
        base.push((
            format!("crate::{}", module.replace('/', "::")),
            !io_uses(&non_test_lines(&text)).is_empty(),
        ));
    }
    assert!(
        base.iter()
            .any(|(m, impure)| m == "crate::base::sys::jail" && *impure),
        "base's modules and whether they do I/O: {base:?}"
    );
    let mut found = Vec::new();
    for path in rust_files(&Path::new(ROOT).join("src/core")) {
        let rel = relative(&path);
        let text = std::fs::read_to_string(&path).unwrap();
        for io in io_uses_beside(&non_test_lines(&text), &base) {
            found.push(format!("src/{rel}: {io}"));
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

/// Whether `line` names the crate `name` as a path or import (`git2::…`, `use git2`), not
/// as part of a longer word (`libgit2`).
fn names_crate(line: &str, name: &str) -> bool {
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

/// The code lines of `src/` outside the files `allowed` (by `src/`-relative path) that
/// name crate `name`, as `src/PATH:LINE: text`.
fn naming_crate(name: &str, allowed: impl Fn(&str) -> bool) -> Vec<String> {
    let mut found = Vec::new();
    for path in rust_files(&Path::new(ROOT).join("src")) {
        let rel = relative(&path);
        if allowed(&rel) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap();
            if names_crate(code, name) {
                found.push(format!("src/{rel}:{}: {}", number + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn git2_only_in_history_source() {
    // Invariant 9 and the code map (ARCHITECTURE.md): libgit2 is reached through
    // `history/source.rs` alone, unit tests included, so every read goes through the
    // loose-object check and no other module's signature carries a `git2` type.
    // Integration tests and benches may use git2 to build and walk fixture repositories.
    let found = naming_crate("git2", |rel| rel == "engine/history/source.rs");
    assert!(
        found.is_empty(),
        "git2 outside src/engine/history/source.rs: {found:#?}"
    );
}

#[test]
fn system_calls_only_in_base_sys() {
    // The code map (ARCHITECTURE.md, `src/base/sys/`): the system calls std lacks go
    // through rustix in `base::sys` alone (its `process` the one module allowed
    // `unsafe`), so every other module calls a safe function named for what it does.
    let found = naming_crate("rustix", |rel| rel.starts_with("base/sys/"));
    assert!(found.is_empty(), "rustix outside src/base/sys/: {found:#?}");
}

/// Runs the built binary; returns (exit code, stdout, stderr).
fn nextedit(args: &[&str]) -> (Option<i32>, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// The subcommands a `--help` text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A command's line starts with two spaces; its description's wrapped lines with more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// `--help` of `nextedit` and of every subcommand, nested ones too: (command, text).
fn help_texts() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut queue = vec![Vec::<String>::new()];
    while let Some(command) = queue.pop() {
        let mut args: Vec<&str> = command.iter().map(String::as_str).collect();
        args.push("--help");
        let (code, help, stderr) = nextedit(&args);
        assert_eq!(code, Some(0), "nextedit {args:?}: {stderr}");
        for sub in subcommands(&help) {
            let mut nested = command.clone();
            nested.push(sub);
            queue.push(nested);
        }
        out.push((command.join(" "), help));
    }
    out.sort();
    out
}

#[test]
fn every_command_in_help_is_documented() {
    // Each command `nextedit --help` lists is shown as `nextedit <command>` in README.md or
    // a page of docs/, so a new command cannot ship undocumented.
    let mut docs = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            docs += &std::fs::read_to_string(path).unwrap();
        }
    }
    let (_, help, _) = nextedit(&["--help"]);
    let commands = subcommands(&help);
    assert!(commands.len() >= 10, "no commands in --help:\n{help}");
    let undocumented: Vec<&String> = commands
        .iter()
        .filter(|c| {
            !docs.match_indices(&format!("nextedit {c}")).any(|(at, m)| {
                // `nextedit replay` must not count as `nextedit replay-text`.
                !docs[at + m.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '-')
            })
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "commands of `nextedit --help` that README.md and docs/ never show: {undocumented:?}"
    );
}

#[test]
fn exit_codes_in_help_match_the_binary() {
    // The code (src/cli/mod.rs `run`): a failed command and invalid arguments exit 2.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("none.db");
    let (code, _, stderr) = nextedit(&["sessions", "show", "999999", "--db", db.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("nextedit: error: "), "{stderr}");
    let (code, _, stderr) = nextedit(&["sessions", "show", "--no-such-option"]);
    assert_eq!(code, Some(2), "{stderr}");
    // What the help texts say: every clause that gives the exit code of a fatal error
    // (`2 on a fatal error`, `2 a fatal error …`) says 2, and at least one does.
    let mut fatal = Vec::new();
    for (command, help) in help_texts() {
        let prose = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for sentence in prose.split(". ") {
            let lower = sentence.to_lowercase();
            if !(lower.contains("exit code") || lower.contains("exit status")) {
                continue;
            }
            for clause in lower.split([';', ',']) {
                if clause.contains("fatal") {
                    assert!(
                        clause
                            .split(|c: char| !c.is_ascii_digit())
                            .any(|n| n == "2")
                            && !clause
                                .split(|c: char| !c.is_ascii_digit())
                                .any(|n| n == "1"),
                        "`nextedit {command} --help` gives a fatal error another exit code than 2: {sentence:?}"
                    );
                    fatal.push(command.clone());
                }
            }
        }
    }
    assert!(
        !fatal.is_empty(),
        "no --help text states the exit code of a fatal error"
    );
}

/// The modules of the command-line interface: every file stem and directory name
/// under `src/cli` (except `mod`).
fn cli_modules(cli: &Path) -> Vec<String> {
    let mut names: Vec<String> = rust_files(cli)
        .iter()
        .flat_map(|p| {
            p.strip_prefix(cli)
                .unwrap()
                .iter()
                .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
                .collect::<Vec<_>>()
        })
        .filter(|name| name != "mod")
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The first segment of each path a `super::` names on this line:
/// `super::derive::x` → `derive`, `super::{a, b::c}` → `a`, `b`.
fn super_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in line.match_indices("super::") {
        if line[..at].ends_with("super::") {
            continue; // the tail of a `super::super::` already read
        }
        let mut rest = &line[at + "super::".len()..];
        while let Some(r) = rest.strip_prefix("super::") {
            rest = r;
        }
        let segment = |s: &str| -> String {
            s.trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or_default();
                out.extend(group.split(',').map(segment));
            }
            None => out.push(segment(rest)),
        }
    }
    out
}

#[test]
fn cli_files_do_not_import_each_other() {
    // Invariant (ARCHITECTURE.md): each cli file parses arguments and prints; what two
    // commands share lives in the library. A file may use its own children and, as
    // shared parsing, its parent's items (cli/mod.rs's `parse_merges`, a command
    // directory's argument types), never a sibling command's module.
    let cli = Path::new(ROOT).join("src/cli");
    let modules = cli_modules(&cli);
    let mut found = Vec::new();
    for path in rust_files(&cli) {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in code_lines(&text) {
            let cross = super_targets(line)
                .into_iter()
                .find(|target| modules.contains(target))
                .or_else(|| {
                    ["crate::cli", "crate::nextedit_cli", "nextedit_cli::"]
                        .iter()
                        .find(|p| line.contains(*p))
                        .map(|p| p.to_string())
                });
            if let Some(target) = cross {
                found.push(format!("{}: {target}: {}", relative(&path), line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "cli files importing each other: {found:#?}"
    );
}

#[test]
fn cli_files_are_short() {
    // Invariant (ARCHITECTURE.md): a cli file holds argument parsing and printing only,
    // which stays under 300 lines; a command that needs more is a directory.
    const MAX_LINES: usize = 300;
    let long: Vec<String> = rust_files(&Path::new(ROOT).join("src/cli"))
        .iter()
        .map(|p| {
            (
                relative(p),
                std::fs::read_to_string(p).unwrap().lines().count(),
            )
        })
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(rel, lines)| format!("{rel}: {lines} lines"))
        .collect();
    assert!(
        long.is_empty(),
        "cli files over {MAX_LINES} lines: {long:?}"
    );
}

#[test]
fn super_targets_reads_paths_and_groups() {
    assert_eq!(super_targets("use super::derive::x;"), ["derive"]);
    assert_eq!(
        super_targets("use super::{TripleArgs, b::c};"),
        ["TripleArgs", "b"]
    );
    assert_eq!(
        super_targets("f(super::super::sessions::run)"),
        ["sessions"]
    );
    assert!(super_targets("let x = 1;").is_empty());
}
