//! `--lsp`: real language servers answer what syntax cannot know about a commit.
//!
//! For each language with edits and a server, one server is started per side (the
//! parent and the commit trees, written to directories; both at once, each in its own
//! thread) and the changed files are opened. Then, pipelined, it is asked `textDocument/definition` at the use sites of
//! every name-based reason tree-sitter found and at every other use inside an edit,
//! and `textDocument/references` at every definition an edit adds or changes; at
//! most [`LspSetup::max_requests`] per side and language, in that order of
//! priority. [`super::lsp_evidence`] turns the answers into refuted reasons and new
//! `lsp_def_use` and `lsp_reference` reasons. A server that cannot start or answer
//! never fails the commit: it is recorded in the stats and its answers are absent.
//! Servers are started through `lsp::client`; [`discover_servers`] finds them (and a Go
//! toolchain for gopls).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::core::record::uri::path_to_uri;
use crate::core::syntax::Language;
use crate::core::syntax::structure::{FileStructure, Role, analyze};
use crate::engine::lsp_client::{ClientError, LspClient};

use super::dependency::Dependency;
use super::extract::FileEdits;
use super::lsp_evidence::{
    CommitView, Position, ReferenceQuestion, SideAnswers, Target, TreeSide, class_at,
    definition_edges, definition_questions, reference_edges, reference_questions, refutations,
};
pub use super::lsp_evidence::{EditSpan, Refutation, SideStructures};

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
    /// Cap on requests (definition and references together) per side and language,
    /// so huge commits stay bounded.
    pub max_requests: usize,
}

/// What the LSP pass did, for reports and cost figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspStats {
    /// Servers started (one per side and language).
    pub servers_started: usize,
    /// `textDocument/definition` requests sent.
    pub requests: usize,
    /// `textDocument/references` requests sent.
    pub reference_requests: usize,
    /// Requests that failed or timed out (the pass goes on without them).
    pub failures: usize,
    /// Reasons the servers refuted (dropped from the order).
    pub refuted: usize,
    /// Wall-clock seconds spent in the pass.
    pub seconds: f64,
    /// Servers that could not start, with the reason.
    pub unavailable: Vec<String>,
}

/// What the LSP pass found: reasons to add and reasons refuted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LspFindings {
    /// `lsp_def_use` and `lsp_reference` reasons.
    pub added: Vec<Dependency>,
    /// Reasons of the syntactic dependencies the servers refuted.
    pub refuted: Vec<Refutation>,
}

fn utf16_column(line: &str, byte_column: usize) -> usize {
    line.get(..byte_column.min(line.len()))
        .map(|prefix| prefix.encode_utf16().count())
        .unwrap_or(0)
}

/// Runs the LSP pass over a commit whose syntactic dependencies are `syntactic`;
/// never fails the commit: a server that cannot start or answer is recorded in the
/// stats and its answers are absent (so it refutes and adds nothing).
pub fn lsp_dependencies(
    setup: &LspSetup,
    files: &[FileEdits],
    structures: &[SideStructures],
    edits: &[EditSpan],
    syntactic: &[Dependency],
) -> (LspFindings, LspStats) {
    let start = Instant::now();
    let mut stats = LspStats::default();
    let view = CommitView {
        files,
        structures,
        edits,
    };
    let mut answers = [SideAnswers::default(), SideAnswers::default()];
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
        // The two sides' servers run at once: each mostly waits for its own analysis.
        let sides: Vec<(SideAnswers, LspStats)> = std::thread::scope(|scope| {
            let handles: Vec<_> = TreeSide::BOTH
                .into_iter()
                .map(|side| {
                    let view = &view;
                    scope.spawn(move || {
                        let mut answered = SideAnswers::default();
                        let mut stats = LspStats::default();
                        let root = match side {
                            TreeSide::Parent => setup.parent_root.as_deref(),
                            TreeSide::Commit => Some(setup.child_root.as_path()),
                        };
                        if let Some(root) = root {
                            let asker = SideAsker {
                                setup,
                                view,
                                root,
                                side,
                                language,
                            };
                            if let Err(reason) =
                                asker.run(server, syntactic, &mut answered, &mut stats)
                            {
                                stats.unavailable.push(format!(
                                    "{} on the {}: {reason}",
                                    language.name(),
                                    side.name()
                                ));
                            }
                        }
                        (answered, stats)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| handle.join().expect("an LSP side does not panic"))
                .collect()
        });
        for ((answered, side_stats), into) in sides.into_iter().zip(answers.iter_mut()) {
            into.definitions.extend(answered.definitions);
            into.references.extend(answered.references);
            stats.servers_started += side_stats.servers_started;
            stats.requests += side_stats.requests;
            stats.reference_requests += side_stats.reference_requests;
            stats.failures += side_stats.failures;
            stats.unavailable.extend(side_stats.unavailable);
        }
    }
    let refuted = refutations(&view, syntactic, &answers);
    let mut added = definition_edges(&view, &answers);
    added.extend(reference_edges(&view, &answers));
    added.sort();
    added.dedup();
    stats.refuted = refuted.len();
    stats.seconds = start.elapsed().as_secs_f64();
    (LspFindings { added, refuted }, stats)
}

/// One server on one side: opens the files, asks, collects the answers.
struct SideAsker<'a> {
    setup: &'a LspSetup,
    view: &'a CommitView<'a>,
    root: &'a Path,
    side: TreeSide,
    language: Language,
}

impl SideAsker<'_> {
    fn run(
        &self,
        server: &ServerCommand,
        syntactic: &[Dependency],
        answered: &mut SideAnswers,
        stats: &mut LspStats,
    ) -> Result<(), ClientError> {
        let mut command = Command::new(&server.program);
        command
            .args(&server.args)
            .current_dir(self.root)
            .stderr(Stdio::null());
        for (key, value) in &server.env {
            command.env(key, value);
        }
        let mut client = LspClient::spawn(command)?;
        stats.servers_started += 1;
        client.initialize(self.root, self.setup.timeout)?;
        let files: Vec<usize> = (0..self.view.files.len())
            .filter(|&f| {
                self.view.files[f].language == Some(self.language)
                    && !self.view.files[f].edits.is_empty()
            })
            .collect();
        for &file in &files {
            let Some(text) = self.view.text(file, self.side) else {
                continue;
            };
            let _ = client.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": self.uri(file), "languageId": self.language.name(), "version": 1, "text": text}}),
            );
        }
        let mine = |position: &Position| files.contains(&position.0);
        let mut budget = self.setup.max_requests;
        // Refutation and extension questions first, then references; one budget.
        let definitions: Vec<Position> = definition_questions(self.view, syntactic, self.side)
            .into_iter()
            .filter(mine)
            .take(budget)
            .collect();
        budget -= definitions.len();
        let references: Vec<ReferenceQuestion> = reference_questions(self.view, self.side)
            .into_iter()
            .filter(|q| mine(&q.position))
            .take(budget)
            .collect();
        let mut targets = TargetResolver::new(self);
        let params: Vec<Value> = definitions
            .iter()
            .map(|&p| json!({"textDocument": {"uri": self.uri(p.0)}, "position": self.lsp_position(p)}))
            .collect();
        stats.requests += params.len();
        let results = ask_all(
            &mut client,
            "textDocument/definition",
            params,
            self.setup.timeout,
            stats,
        );
        for (position, result) in definitions.into_iter().zip(results) {
            if let Some(result) = result {
                answered
                    .definitions
                    .insert(position, targets.resolve(&result));
            }
        }
        let params: Vec<Value> = references
            .iter()
            .map(|q| json!({"textDocument": {"uri": self.uri(q.position.0)}, "position": self.lsp_position(q.position), "context": {"includeDeclaration": false}}))
            .collect();
        stats.reference_requests += params.len();
        let results = ask_all(
            &mut client,
            "textDocument/references",
            params,
            self.setup.timeout,
            stats,
        );
        for (question, result) in references.into_iter().zip(results) {
            if let Some(result) = result {
                let found = targets.resolve(&result);
                answered.references.push((question, found));
            }
        }
        let _ = client.shutdown(Duration::from_secs(5));
        Ok(())
    }

    fn uri(&self, file: usize) -> String {
        path_to_uri(&self.root.join(self.view.path(file, self.side)))
    }

    fn lsp_position(&self, (file, line, column): Position) -> Value {
        let text = self.view.text(file, self.side).unwrap_or("");
        let line_text = text.split('\n').nth(line).unwrap_or("");
        json!({"line": line, "character": utf16_column(line_text, column)})
    }
}

/// Sends every request at once (the server answers them in turn) and waits for each
/// answer; `None` for one that failed. The first answer may wait `timeout` for the
/// server's analysis, each next one `timeout` after the previous; after a timeout or
/// a closed server the rest are counted failed without waiting.
fn ask_all(
    client: &mut LspClient,
    method: &str,
    params: Vec<Value>,
    timeout: Duration,
    stats: &mut LspStats,
) -> Vec<Option<Value>> {
    let mut receivers = Vec::with_capacity(params.len());
    for params in params {
        receivers.push(client.start_request(method, params).ok().map(|(_, rx)| rx));
    }
    let mut alive = true;
    receivers
        .into_iter()
        .map(|rx| {
            let response = rx
                .filter(|_| alive)
                .and_then(|rx| rx.recv_timeout(timeout).ok());
            // No answer at all: the server is stuck or gone; an error answers one request.
            alive &= response.is_some();
            let answer = response.and_then(|response| response.outcome.ok());
            stats.failures += usize::from(answer.is_none());
            answer
        })
        .collect()
}

/// Turns answered locations into [`Target`]s: which changed file they land in, and
/// whether their line is an import (files outside the commit are parsed once each).
struct TargetResolver<'a> {
    asker: &'a SideAsker<'a>,
    root_uri: String,
    /// Changed file by its URI on this side.
    changed: HashMap<String, usize>,
    /// Other files of the tree, parsed when an answer lands in them.
    others: HashMap<String, Option<FileStructure>>,
}

impl<'a> TargetResolver<'a> {
    fn new(asker: &'a SideAsker<'a>) -> Self {
        let changed = (0..asker.view.files.len())
            .map(|f| (asker.uri(f), f))
            .collect();
        TargetResolver {
            asker,
            root_uri: path_to_uri(asker.root),
            changed,
            others: HashMap::new(),
        }
    }

    fn resolve(&mut self, result: &Value) -> Vec<Target> {
        locations(result)
            .into_iter()
            .map(|(uri, line)| {
                let file = self.changed.get(&uri).copied();
                let path = uri
                    .strip_prefix(&self.root_uri)
                    .and_then(|rest| rest.strip_prefix('/'))
                    .map(|rest| match file {
                        Some(f) => self.asker.view.path(f, self.asker.side).to_string(),
                        None => rest.to_string(),
                    });
                let structure = match file {
                    Some(f) => self.asker.view.structure(f, self.asker.side),
                    None => path.as_deref().and_then(|p| self.other_structure(p)),
                };
                Target {
                    file,
                    import: structure.is_some_and(|s| is_import_line(s, line)),
                    class: structure
                        .and_then(|s| class_at(s, line))
                        .map(|scope| scope.name.clone()),
                    path,
                    uri,
                    line,
                }
            })
            .collect()
    }

    /// The structure of a file of the tree outside the commit, parsed once.
    fn other_structure(&mut self, relative: &str) -> Option<&FileStructure> {
        let language = self.asker.language;
        let root = self.asker.root;
        self.others
            .entry(relative.to_string())
            .or_insert_with(|| {
                // A percent-encoded path does not name a file: then nothing is known.
                std::fs::read_to_string(root.join(relative))
                    .ok()
                    .map(|text| analyze(language, &text))
            })
            .as_ref()
    }
}

fn is_import_line(structure: &FileStructure, line: usize) -> bool {
    structure
        .occurrences_in(line, line + 1)
        .iter()
        .any(|o| o.role == Role::Import)
}

/// `(uri, start line)` of a definition or references result: Location, Location[]
/// or LocationLink[]; anything else (a garbled answer) gives none.
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
