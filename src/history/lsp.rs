//! `--lsp`: def/use edges confirmed and extended by real language servers.
//!
//! For each side of a commit (parent and child trees written to directories) and
//! each language with a server, the server is started on that tree, the changed
//! files are opened, and `textDocument/definition` is asked at every identifier use
//! inside an edit. A definition that lands inside another edit's lines (on the same
//! side) is a `lsp_def_use` dependency from that edit to the using one; where
//! tree-sitter found the same pair it confirms it, elsewhere it extends the graph.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::lsp::client::{LspClient, path_to_uri};
use crate::syntax::Language;
use crate::syntax::structure::{FileStructure, Role};

use super::dependency::{Dependency, DependencyKind};
use super::extract::FileEdits;

/// How to start one language server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// Executable.
    pub program: PathBuf,
    /// Arguments (`--stdio` for pyright).
    pub args: Vec<String>,
    /// Extra environment (Go's PATH, GOPATH, GOFLAGS…).
    pub env: Vec<(String, String)>,
}

/// The servers `--lsp` may use, per language.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSet {
    /// pyright-langserver for Python.
    pub python: Option<ServerCommand>,
    /// gopls for Go.
    pub go: Option<ServerCommand>,
    /// jdtls for Java.
    pub java: Option<ServerCommand>,
}

impl ServerSet {
    /// The server for `language`, if configured.
    pub fn for_language(&self, language: Language) -> Option<&ServerCommand> {
        match language {
            Language::Python => self.python.as_ref(),
            Language::Go => self.go.as_ref(),
            Language::Java => self.java.as_ref(),
            _ => None,
        }
    }
}

/// Where the commit's two trees are and which servers to use.
#[derive(Debug, Clone)]
pub struct LspSetup {
    /// The parent commit's tree on disk (`None` for a root commit).
    pub parent_root: Option<PathBuf>,
    /// The commit's tree on disk.
    pub child_root: PathBuf,
    /// Servers per language.
    pub servers: ServerSet,
    /// Per-request timeout (the first request waits for the server's analysis).
    pub timeout: Duration,
    /// Cap on definition requests per side and language, so huge commits stay bounded.
    pub max_requests: usize,
}

/// What the LSP pass did, for reports and cost figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspStats {
    /// Servers started (one per side and language).
    pub servers_started: usize,
    /// `textDocument/definition` requests sent.
    pub requests: usize,
    /// Requests that failed or timed out (the pass goes on without them).
    pub failures: usize,
    /// Wall-clock seconds spent in the pass.
    pub seconds: f64,
    /// Servers that could not start, with the reason.
    pub unavailable: Vec<String>,
}

/// One edit as the LSP pass sees it: its file and line ranges on both sides.
#[derive(Debug, Clone, Copy)]
pub struct EditSpan {
    /// Index into the commit's files.
    pub file: usize,
    /// Parent lines.
    pub before: (usize, usize),
    /// Child lines.
    pub after: (usize, usize),
}

/// Structures of one file: parent and child.
pub type SideStructures = (Option<FileStructure>, Option<FileStructure>);

fn utf16_column(line: &str, byte_column: usize) -> usize {
    line.get(..byte_column.min(line.len()))
        .map(|prefix| prefix.encode_utf16().count())
        .unwrap_or(0)
}

/// Runs the LSP pass; never fails the commit: a server that cannot start or answer
/// is recorded in the stats and its edges are simply absent.
pub fn lsp_dependencies(
    setup: &LspSetup,
    files: &[FileEdits],
    structures: &[SideStructures],
    edits: &[EditSpan],
) -> (Vec<Dependency>, LspStats) {
    let start = Instant::now();
    let mut stats = LspStats::default();
    let mut found = Vec::new();
    let mut languages: Vec<Language> = files
        .iter()
        .filter(|f| !f.edits.is_empty())
        .filter_map(|f| f.language)
        .filter(|l| setup.servers.for_language(*l).is_some())
        .collect();
    languages.sort();
    languages.dedup();
    for language in languages {
        let server = setup
            .servers
            .for_language(language)
            .expect("filtered above");
        for parent_side in [true, false] {
            let root = if parent_side {
                setup.parent_root.as_deref()
            } else {
                Some(setup.child_root.as_path())
            };
            let Some(root) = root else { continue };
            match run_side(
                setup,
                server,
                root,
                parent_side,
                language,
                files,
                structures,
                edits,
                &mut stats,
            ) {
                Ok(mut deps) => found.append(&mut deps),
                Err(reason) => stats.unavailable.push(format!(
                    "{} on the {}: {reason}",
                    language.name(),
                    if parent_side { "parent" } else { "commit" }
                )),
            }
        }
    }
    found.sort();
    found.dedup();
    stats.seconds = start.elapsed().as_secs_f64();
    (found, stats)
}

#[allow(clippy::too_many_arguments)]
fn run_side(
    setup: &LspSetup,
    server: &ServerCommand,
    root: &Path,
    parent_side: bool,
    language: Language,
    files: &[FileEdits],
    structures: &[SideStructures],
    edits: &[EditSpan],
    stats: &mut LspStats,
) -> Result<Vec<Dependency>, String> {
    let mut command = Command::new(&server.program);
    command
        .args(&server.args)
        .current_dir(root)
        .stderr(Stdio::null());
    for (key, value) in &server.env {
        command.env(key, value);
    }
    let mut client = LspClient::spawn(command).map_err(|e| e.to_string())?;
    stats.servers_started += 1;
    client
        .initialize(root, setup.timeout)
        .map_err(|e| e.to_string())?;
    let path_on_side = |file: &FileEdits| -> String {
        if parent_side {
            file.old_path.clone().unwrap_or_else(|| file.path.clone())
        } else {
            file.path.clone()
        }
    };
    // Open every changed file of this language that exists on this side.
    for file in files
        .iter()
        .filter(|f| f.language == Some(language) && !f.edits.is_empty())
    {
        let text = if parent_side {
            file.old_text.as_deref()
        } else {
            file.new_text.as_deref()
        };
        let Some(text) = text else { continue };
        let uri = path_to_uri(&root.join(path_on_side(file)));
        let _ = client.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": language.name(), "version": 1, "text": text}}),
        );
    }
    let root_uri = path_to_uri(root);
    let mut found = Vec::new();
    let mut requests = 0;
    for (user, span) in edits.iter().enumerate() {
        let file = &files[span.file];
        if file.language != Some(language) {
            continue;
        }
        let (structure, text, (start, end)) = if parent_side {
            (
                structures[span.file].0.as_ref(),
                file.old_text.as_deref(),
                span.before,
            )
        } else {
            (
                structures[span.file].1.as_ref(),
                file.new_text.as_deref(),
                span.after,
            )
        };
        let (Some(structure), Some(text)) = (structure, text) else {
            continue;
        };
        let lines: Vec<&str> = text.split('\n').collect();
        let uri = path_to_uri(&root.join(path_on_side(file)));
        for occurrence in structure.occurrences_in(start, end) {
            if occurrence.role != Role::Use || requests >= setup.max_requests {
                continue;
            }
            requests += 1;
            stats.requests += 1;
            let character = utf16_column(
                lines.get(occurrence.line).copied().unwrap_or(""),
                occurrence.column,
            );
            let params = json!({"textDocument": {"uri": uri}, "position": {"line": occurrence.line, "character": character}});
            let result = match client.request("textDocument/definition", params, setup.timeout) {
                Ok(result) => result,
                Err(_) => {
                    stats.failures += 1;
                    continue;
                }
            };
            for (target_uri, line) in locations(&result) {
                let Some(relative) = target_uri
                    .strip_prefix(&root_uri)
                    .map(|r| r.trim_start_matches('/'))
                else {
                    continue;
                };
                let definer = edits.iter().position(|other| {
                    let other_file = &files[other.file];
                    let (s, e) = if parent_side {
                        other.before
                    } else {
                        other.after
                    };
                    uri_path_matches(relative, &path_on_side(other_file))
                        && s <= line
                        && line < e.max(s + 1)
                        && e > s
                });
                if let Some(definer) = definer.filter(|&d| d != user) {
                    found.push(Dependency {
                        from: definer,
                        to: user,
                        kind: DependencyKind::LspDefUse,
                        detail: occurrence.name.clone(),
                    });
                }
            }
        }
    }
    let _ = client.shutdown(Duration::from_secs(5));
    Ok(found)
}

fn uri_path_matches(uri_relative: &str, path: &str) -> bool {
    // URIs percent-encode what paths do not; compare after encoding the path the same way.
    let encoded = path_to_uri(Path::new(path));
    encoded
        .strip_prefix("file://")
        .is_some_and(|p| p == uri_relative)
}

/// `(uri, start line)` of a definition result: Location, Location[] or LocationLink[].
fn locations(result: &Value) -> Vec<(String, usize)> {
    let items: Vec<&Value> = match result {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![result],
        _ => Vec::new(),
    };
    items
        .into_iter()
        .filter_map(|item| {
            let uri = item
                .get("uri")
                .or_else(|| item.get("targetUri"))?
                .as_str()?
                .to_string();
            let range = item
                .get("range")
                .or_else(|| item.get("targetSelectionRange"))?;
            let line = range.pointer("/start/line")?.as_u64()? as usize;
            Some((uri, line))
        })
        .collect()
}

/// Where a Go toolchain for gopls lives when `go` is not on `PATH`: the newest Debian
/// `golang-1.N-go` (`/usr/lib/go-1.N/bin`); `None` when `go` is on `PATH` or none is
/// installed. Debian's gopls finds no toolchain of its own.
pub fn go_toolchain_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("go").is_file()));
    if on_path {
        return None;
    }
    let minor = |name: &str| -> Option<u32> { name.strip_prefix("go-1.")?.parse().ok() };
    std::fs::read_dir("/usr/lib")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("go").is_file()).then_some((minor(&name)?, bin))
        })
        .max_by_key(|(minor, _)| *minor)
        .map(|(_, bin)| bin)
}

/// The language servers `--lsp` can use on this machine: `NEXTEDIT_PYRIGHT`,
/// `NEXTEDIT_GOPLS` and `NEXTEDIT_JDTLS` when set, else `pyright-langserver`, `gopls`
/// and `jdtls` found on `PATH`. gopls gets a Go toolchain ([`go_toolchain_dir`]) and
/// no network (`GOPROXY=off`).
pub fn discover_servers() -> ServerSet {
    let python = server("NEXTEDIT_PYRIGHT", "pyright-langserver").map(|program| ServerCommand {
        program,
        args: vec!["--stdio".into()],
        env: Vec::new(),
    });
    let go = server("NEXTEDIT_GOPLS", "gopls").map(|program| {
        // Debian's gopls needs a Go toolchain on PATH; never reach for the network.
        let mut path = std::env::var("PATH").unwrap_or_default();
        if let Some(go) = go_toolchain_dir() {
            path = format!("{}:{path}", go.display());
        }
        let env = vec![
            ("PATH".into(), path),
            ("GOPROXY".into(), "off".into()),
            ("GOFLAGS".into(), "-mod=mod".into()),
        ];
        ServerCommand {
            program,
            args: Vec::new(),
            env,
        }
    });
    let java = server("NEXTEDIT_JDTLS", "jdtls").map(|program| ServerCommand {
        program,
        args: Vec::new(),
        env: Vec::new(),
    });
    ServerSet { python, go, java }
}

/// The program named by `variable`, else `program` found on `PATH`.
fn server(variable: &str, program: &str) -> Option<PathBuf> {
    std::env::var_os(variable).map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|path| path.is_file())
        })
    })
}
