//! The paths the prose names: ARCHITECTURE.md's code map names every file under `src/`
//! by its path, and every path the code map, README.md, docs/ and the comments in
//! `src/` name exists.

use std::collections::BTreeSet;
use std::path::Path;

use super::ROOT;

/// Paths the prose names that are not in this repository on purpose: examples of
/// other projects' layouts and files. Each with why.
const NOT_IN_REPOSITORY: &[(&str, &str)] = &[
    (
        "scripts/metrics.py",
        "CodePlan's script, which `score diffbleu` follows",
    ),
    ("src/a.ts", "a Copilot recording's example path"),
    ("src/pkg/m.py", "an example of a Python src layout"),
    (
        "src/main/java/a/b/C.java",
        "an example of a Java source root",
    ),
    (
        "src/flask/ctx.py",
        "flask's file a completion task is cut from",
    ),
    (
        "examples/tutorial",
        "flask's tutorial directory, which its test suite runs",
    ),
    (
        "examples/tutorial/flaskr/__init__.py",
        "flask's tutorial package, a second copy of a module name",
    ),
    ("tests/conftest.py", "a user project's pytest configuration"),
    (
        "tests/test_x.py",
        "an example test file of a user's project",
    ),
];

/// The directories at the top of the repository a path may start with (the source,
/// tests, docs, scripts, …; not `target/`, which holds build outputs).
fn top_directories() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(ROOT)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| (!name.starts_with('.') || name == ".ci") && name != "target")
        .collect();
    out.sort();
    out
}

/// Whether `path` is a placeholder rather than a path: `<split>`, `…`, `{a,b}`, an
/// upper-case directory (`DIR/`, `OWNER/`) or an upper-case last part without an
/// extension (`refs/testset/SHA`, `I/N`).
fn is_placeholder(path: &str) -> bool {
    let upper = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_uppercase() || c == '_');
    let parts: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    path.contains(['<', '…', '{', '$', '~'])
        || parts[..parts.len() - 1].iter().any(|p| upper(p))
        || parts.last().is_some_and(|p| upper(p))
}

/// Whether `path` (relative to the repository or to one of `bases`) exists; a `*` in
/// its last part matches any text.
fn exists(path: &str, bases: &[String]) -> bool {
    let path = path.trim_end_matches('/');
    std::iter::once(String::new())
        .chain(
            bases
                .iter()
                .map(|b| format!("{}/", b.trim_end_matches('/'))),
        )
        .any(|base| {
            let full = Path::new(ROOT).join(format!("{base}{path}"));
            match path.rsplit_once('/').map_or(("", path), |(d, f)| (d, f)) {
                (dir, file) if file.contains('*') => {
                    let pattern = format!("^{}$", regex::escape(file).replace(r"\*", ".*"));
                    let pattern = regex::Regex::new(&pattern).unwrap();
                    std::fs::read_dir(Path::new(ROOT).join(format!("{base}{dir}")))
                        .map(|entries| {
                            entries
                                .filter_map(|e| e.ok())
                                .any(|e| pattern.is_match(&e.file_name().to_string_lossy()))
                        })
                        .unwrap_or(false)
                }
                _ => full.exists(),
            }
        })
}

/// Finds the repository paths in a text: ones that start with a top directory
/// (`tests/it/tidy.rs`, `docs/derive.md`), the upper-case Markdown files (`DESIGN.md`)
/// and `Cargo.toml`/`Cargo.lock`.
struct PathFinder(regex::Regex);

impl PathFinder {
    /// A finder for paths under `tops`.
    fn new(tops: &[String]) -> PathFinder {
        let tops = tops
            .iter()
            .map(|t| regex::escape(t))
            .collect::<Vec<_>>()
            .join("|");
        PathFinder(
            regex::Regex::new(&format!(
                r"(?:^|[^\w./@:~$-])((?:{tops})/[\w./*<>…{{}}$~-]*|[A-Z][A-Z0-9_]*\.md\b|Cargo\.(?:toml|lock)\b)"
            ))
            .unwrap(),
        )
    }

    /// The repository paths `text` names, in prose or code spans, cut at a `::test`
    /// suffix and trailing punctuation; placeholders left out.
    fn find(&self, text: &str) -> Vec<String> {
        self.0
            .captures_iter(text)
            .map(|c| {
                let path = c[1].split("::").next().unwrap();
                path.trim_end_matches(['.', ',', ':', ';', ')']).to_string()
            })
            .filter(|p| !is_placeholder(p))
            .collect()
    }
}

/// The relative targets of Markdown links (`[x](../README.md#y)` → `../README.md`).
fn link_targets(text: &str) -> Vec<String> {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    link.captures_iter(text)
        .map(|c| c[1].split('#').next().unwrap().to_string())
        .filter(|t| !t.is_empty() && !t.contains("://") && !t.starts_with("mailto:"))
        .collect()
}

/// Text outside fenced code blocks (a block shows a terminal or a tree, not paths
/// of this repository).
fn prose(markdown: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// One entry of the code map: a `- **`path`**:` bullet (a bullet may have several
/// bold heads) and its text up to the next bullet.
struct Entry {
    heads: Vec<String>,
    text: String,
}

/// ARCHITECTURE.md's code map (between `## Code map` and the next `## `), as entries.
fn code_map(architecture: &str) -> Vec<Entry> {
    let section = architecture
        .split("\n## Code map\n")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Code map` section");
    let section = section.split("\n## ").next().unwrap();
    let head = regex::Regex::new(r"\*\*`([^`]+)`\*\*").unwrap();
    let mut entries: Vec<Entry> = Vec::new();
    for line in section.lines() {
        if line.starts_with("- **") {
            entries.push(Entry {
                heads: Vec::new(),
                text: String::new(),
            });
        }
        let Some(entry) = entries.last_mut() else {
            continue;
        };
        entry
            .heads
            .extend(head.captures_iter(line).map(|c| c[1].to_string()));
        entry.text.push_str(line);
        entry.text.push('\n');
    }
    entries
}

/// Whether a code span is written as a path: path characters only, and a `/` or a
/// source or data file's extension; not a bare extension (`.parquet`), an LSP method
/// (`workspace/applyEdit`) or a placeholder.
fn is_path_like(span: &str) -> bool {
    const EXTENSIONS: [&str; 12] = [
        ".rs", ".sql", ".py", ".sh", ".md", ".json", ".toml", ".lua", ".ts", ".js", ".snap",
        ".lock",
    ];
    const LSP_NAMESPACES: [&str; 5] = [
        "textDocument",
        "workspace",
        "completionItem",
        "client",
        "window",
    ];
    static PATH_CHARACTERS: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"^[\w.-][\w./-]*$").unwrap());
    PATH_CHARACTERS.is_match(span)
        && (span.contains('/') || EXTENSIONS.iter().any(|e| span.ends_with(e)))
        && !(span.starts_with('.') && !span.contains('/') && span.matches('.').count() == 1)
        && !LSP_NAMESPACES.contains(&span.split('/').next().unwrap())
        && !is_placeholder(span)
}

/// What ARCHITECTURE.md names: the repository-relative files (a folder names its
/// `mod.rs`) and the path-like code spans that name nothing. A code span is resolved
/// against the repository, `src/`, and, inside a code-map entry, the entry's folder and
/// the folders the entry has named so far (`history/`'s `dependency/`, then
/// `definitions`); a bare module name (`extract`) names `FOLDER/extract.rs` or
/// `FOLDER/extract/` there and nothing elsewhere.
fn architecture_names(architecture: &str) -> (BTreeSet<String>, Vec<String>) {
    // A code span may wrap onto the next line (`sessions export\n  --format jsonl`).
    let span = regex::Regex::new(r"`([^`]+)`").unwrap();
    let module_name = regex::Regex::new(r"^[a-z_][a-z0-9_]*$").unwrap();
    let mut named = BTreeSet::new();
    let mut dangling = Vec::new();
    let mut resolve = |token: &str, scopes: &mut Vec<String>, named: &mut BTreeSet<String>| {
        if is_path_like(token) {
            let bases = ["", "src/"]
                .into_iter()
                .map(String::from)
                .chain(scopes.iter().cloned());
            let mut found = false;
            for base in bases.collect::<Vec<_>>() {
                let relative = format!("{base}{}", token.trim_end_matches('/'));
                let full = Path::new(ROOT).join(&relative);
                if full.exists() {
                    found = true;
                    if full.is_dir() && !scopes.contains(&format!("{relative}/")) {
                        scopes.push(format!("{relative}/"));
                    }
                    name_path(relative, named);
                }
            }
            if !found {
                dangling.push(token.to_string());
            }
        } else if module_name.is_match(token) {
            for scope in scopes.clone() {
                let file = format!("{scope}{token}.rs");
                if Path::new(ROOT).join(&file).is_file() {
                    name_path(file, named);
                }
                let folder = format!("{scope}{token}");
                if Path::new(ROOT).join(&folder).is_dir() {
                    if !scopes.contains(&format!("{folder}/")) {
                        scopes.push(format!("{folder}/"));
                    }
                    name_path(folder, named);
                }
            }
        }
    };
    let prose = prose(architecture);
    let (outside, inside) = prose
        .split_once("\n## Code map\n")
        .expect("ARCHITECTURE.md has a `## Code map` section");
    let after = inside.split_once("\n## ").map_or("", |(_, rest)| rest);
    for text in [outside, after] {
        for c in span.captures_iter(text) {
            resolve(&one_line(&c[1]), &mut Vec::new(), &mut named);
        }
    }
    for entry in code_map(&prose) {
        let mut scopes: Vec<String> = entry
            .heads
            .iter()
            .filter(|h| h.ends_with('/'))
            .cloned()
            .collect();
        for c in span.captures_iter(&entry.text) {
            resolve(&one_line(&c[1]), &mut scopes, &mut named);
        }
    }
    (named, dangling)
}

/// A code span's text with its line breaks and indentation as single spaces.
fn one_line(span: &str) -> String {
    span.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Adds what `relative` names to `named`: the file, or a folder's `mod.rs`.
fn name_path(relative: String, named: &mut BTreeSet<String>) {
    let relative = relative.trim_end_matches('/').to_string();
    if Path::new(ROOT).join(&relative).is_dir() {
        let module = format!("{relative}/mod.rs");
        if Path::new(ROOT).join(&module).is_file() {
            named.insert(module);
        }
    } else {
        named.insert(relative);
    }
}

/// Every file under `src/` (any kind: the SQL migrations and coverage drivers too),
/// repository-relative.
fn source_files() -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![Path::new(ROOT).join("src")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(ROOT).unwrap().to_string_lossy();
                out.push(relative.replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_source_file_is_on_the_code_map() {
    // Invariant (ARCHITECTURE.md): the code map names every file under `src/` by its
    // path, or by its name inside the entry of its folder, and every path it names
    // exists.
    let architecture = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let (named, dangling) = architecture_names(&architecture);
    let missing: Vec<String> = source_files()
        .into_iter()
        .filter(|file| !named.contains(file))
        .collect();
    assert!(
        missing.is_empty(),
        "not on ARCHITECTURE.md's code map (by path, or by name in its folder's entry): {missing:#?}"
    );
    assert!(
        dangling.is_empty(),
        "paths ARCHITECTURE.md names that do not exist: {dangling:#?}"
    );
}

#[test]
fn a_name_counts_only_in_its_folders_entry() {
    let map = "intro `src/lib.rs`\n\n## Code map\n\n\
               - **`src/core/syntax/`**: `language` and `incremental` (`line_starts`).\n\
               - **`src/store/`**: `tokens`, `schema.sql`, `core/lsp/framing.rs`.\n\n## Invariants\n";
    let (named, dangling) = architecture_names(map);
    let named: Vec<&str> = named.iter().map(String::as_str).collect();
    assert_eq!(
        named,
        [
            "src/core/lsp/framing.rs",
            "src/core/syntax/incremental.rs",
            "src/core/syntax/incremental/line_starts.rs",
            "src/core/syntax/language.rs",
            "src/core/syntax/mod.rs",
            "src/lib.rs",
            "src/store/mod.rs",
            "src/store/schema.sql",
        ]
    );
    // `tokens` is `src/core/syntax/tokens.rs`, but the store's entry does not name it.
    assert!(dangling.is_empty(), "{dangling:?}");
    let (_, dangling) = architecture_names(
        "\n## Code map\n\n- **`src/store/`**: `gone.sql`, `history/source.rs`.\n",
    );
    assert_eq!(dangling, ["gone.sql", "history/source.rs"]);
}

#[test]
fn every_path_the_prose_names_exists() {
    // No reference to a file that does not exist: the repository paths named in
    // README.md, ARCHITECTURE.md, the Markdown files of docs/, editors/ and tests/data/,
    // and the comments of `src/`, and the relative links of the Markdown files.
    let finder = PathFinder::new(&top_directories());
    let used = std::cell::RefCell::new(BTreeSet::new());
    let allowed = |path: &str| {
        let listed = NOT_IN_REPOSITORY.iter().any(|(p, _)| *p == path);
        if listed {
            used.borrow_mut().insert(path.to_string());
        }
        listed
    };
    let mut missing = Vec::new();
    let mut markdown = vec![
        "README.md".to_string(),
        "ARCHITECTURE.md".to_string(),
        "editors/vscode/README.md".to_string(),
        "tests/data/README.md".to_string(),
        "tests/data/contextbench-demo/README.md".to_string(),
    ];
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            markdown.push(format!("docs/{name}"));
        }
    }
    let sub = regex::Regex::new(r"`([\w.-]+/)`").unwrap();
    for file in &markdown {
        let text = prose(&std::fs::read_to_string(Path::new(ROOT).join(file)).unwrap());
        let here = Path::new(file)
            .parent()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // ARCHITECTURE.md's entries name files inside their folder (`editors/`'s
        // `vscode/` then `src/core.ts`): resolved there by `every_source_file_is_on_the_code_map`.
        let mut scoped = Vec::new();
        if file == "ARCHITECTURE.md" {
            for entry in code_map(&text) {
                for head in entry.heads.iter().filter(|h| h.ends_with('/')) {
                    scoped.push(head.clone());
                    for c in sub.captures_iter(&entry.text) {
                        scoped.push(format!("{head}{}", &c[1]));
                    }
                }
            }
        }
        for path in finder.find(&text) {
            if !exists(&path, &scoped) && !allowed(&path) {
                missing.push(format!("{file}: {path}"));
            }
        }
        for target in link_targets(&text) {
            if !exists(&target, std::slice::from_ref(&here)) && !allowed(&target) {
                missing.push(format!("{file}: link {target}"));
            }
        }
    }
    for file in source_files() {
        let comment = match Path::new(&file).extension().and_then(|e| e.to_str()) {
            Some("rs") => "//",
            Some("sql") => "--",
            Some("py" | "sh") => "#",
            _ => continue,
        };
        let text = std::fs::read_to_string(Path::new(ROOT).join(&file)).unwrap();
        for (number, line) in text.lines().enumerate() {
            // A comment line, or a comment after code (` // `; not the `//` of
            // `"./src//a.py"` or `file://`).
            let comment = match line.trim_start().strip_prefix(comment) {
                Some(rest) => rest,
                None => match line.split_once(&format!(" {comment} ")) {
                    Some((_, rest)) => rest,
                    None => continue,
                },
            };
            for path in finder.find(comment) {
                if !exists(&path, &[]) && !allowed(&path) {
                    missing.push(format!("{file}:{}: {path}", number + 1));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "paths named that do not exist (fix them, or add an example's to NOT_IN_REPOSITORY with why): {missing:#?}"
    );
    // The allow-list holds only what is still named and still absent.
    for (path, _) in NOT_IN_REPOSITORY {
        assert!(
            !exists(path, &[]),
            "NOT_IN_REPOSITORY names {path}, which exists"
        );
        assert!(
            used.borrow().contains(*path),
            "NOT_IN_REPOSITORY names {path}, which nothing names any more"
        );
    }
}

#[test]
fn repository_paths_are_found_in_prose() {
    let finder = PathFinder::new(&["docs".into(), "src".into(), "tests".into()]);
    assert_eq!(
        finder.find(
            "see DESIGN.md, `tests/it/tidy.rs::a_test` and docs/derive.md#figures; \
             DIR/data/<split>.jsonl, src/PKG/__init__.py, mydocs/x.md, Cargo.toml."
        ),
        [
            "DESIGN.md",
            "tests/it/tidy.rs",
            "docs/derive.md",
            "Cargo.toml"
        ]
    );
}
