//! `--lsp`: real language servers answer what syntax cannot know about a commit.
//!
//! For each language with edits and a server, the server of each side (the parent and
//! the commit trees, written to directories; both sides at once, each in its own
//! thread) is asked, with the changed files opened: pipelined,
//! `textDocument/definition` at the use sites of every name-based reason tree-sitter
//! found and at every other use inside an edit, and `textDocument/references` at every
//! definition an edit adds or changes; at most [`LspSetup::max_requests`] per side and
//! language, in that order of priority. [`super::lsp_evidence`] turns the answers into
//! refuted reasons and new `lsp_def_use` and `lsp_reference` reasons. The servers are
//! started for the commit ([`lsp_dependencies`]) or kept across a range
//! ([`lsp_dependencies_on`] with `lsp_workspace`'s trees); `lsp_servers` starts them and
//! [`discover_servers`] finds them (and a Go toolchain for gopls). A server that cannot
//! start or answer never fails the commit: it is recorded in the stats and its answers
//! are absent.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::core::record::uri::{path_to_uri, uri_to_path};
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
pub use super::lsp_servers::{ServerCommand, ServerSet, discover_servers, go_toolchain_dir};
use super::lsp_servers::{SideServers, Started};

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
    /// Servers started (one per side and language; with kept servers, only when none
    /// ran yet or the one before died).
    pub servers_started: usize,
    /// Of those, servers started again because the kept one had died or had failed
    /// (timed out, closed) on an earlier commit.
    pub restarted: usize,
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

impl LspStats {
    /// Adds `other`'s counts and seconds (two sides, or a range's commits).
    pub fn add(&mut self, other: &LspStats) {
        self.servers_started += other.servers_started;
        self.restarted += other.restarted;
        self.requests += other.requests;
        self.reference_requests += other.reference_requests;
        self.failures += other.failures;
        self.refuted += other.refuted;
        self.seconds += other.seconds;
        self.unavailable.extend(other.unavailable.iter().cloned());
    }
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

/// Runs the LSP pass over a commit whose syntactic dependencies are `syntactic`,
/// with servers started for it on `setup`'s trees and shut down after; never fails
/// the commit: a server that cannot start or answer is recorded in the stats and its
/// answers are absent (so it refutes and adds nothing).
pub fn lsp_dependencies(
    setup: &LspSetup,
    files: &[FileEdits],
    structures: &[SideStructures],
    edits: &[EditSpan],
    syntactic: &[Dependency],
) -> (LspFindings, LspStats) {
    let mut parent = setup
        .parent_root
        .clone()
        .map(|root| SideServers::new(root, false));
    let mut commit = SideServers::new(setup.child_root.clone(), false);
    let sides = [parent.as_mut(), Some(&mut commit)];
    lsp_dependencies_on(setup, sides, files, structures, edits, syntactic)
}

/// [`lsp_dependencies`] asking the servers of `sides` (the parent's tree, `None` for a
/// root commit, and the commit's), which may be kept from earlier commits: their
/// trees must already hold this commit's sides (`setup`'s roots are not read).
pub fn lsp_dependencies_on(
    setup: &LspSetup,
    sides: [Option<&mut SideServers>; 2],
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
    // The two sides' servers run at once: each mostly waits for its own analysis.
    let sides: Vec<(SideAnswers, LspStats)> = std::thread::scope(|scope| {
        let handles: Vec<_> = TreeSide::BOTH
            .into_iter()
            .zip(sides)
            .map(|(side, servers)| {
                let (view, languages) = (&view, &languages);
                scope.spawn(move || {
                    let mut answered = SideAnswers::default();
                    let mut stats = LspStats::default();
                    let Some(servers) = servers else {
                        return (answered, stats);
                    };
                    for &language in languages {
                        let command = setup
                            .servers
                            .for_language(language)
                            .expect("filtered above");
                        let mut asker = SideAsker {
                            setup,
                            view,
                            root: servers.root().to_path_buf(),
                            side,
                            language,
                        };
                        let healthy =
                            asker.run(servers, command, syntactic, &mut answered, &mut stats);
                        if let Err(reason) = &healthy {
                            stats.unavailable.push(format!(
                                "{} on the {}: {reason}",
                                language.name(),
                                side.name()
                            ));
                        }
                        servers.finish(language, healthy.unwrap_or(false));
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
        stats.add(&side_stats);
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
    root: PathBuf,
    side: TreeSide,
    language: Language,
}

impl SideAsker<'_> {
    /// Asks this side's server (started or kept by `servers`); whether it stayed
    /// healthy (every answer came, none timed out).
    fn run(
        &mut self,
        servers: &mut SideServers,
        command: &ServerCommand,
        syntactic: &[Dependency],
        answered: &mut SideAnswers,
        stats: &mut LspStats,
    ) -> Result<bool, ClientError> {
        let version = servers.next_version();
        let strict = servers.versioned(self.language);
        let (client, started) = servers.client(self.language, command, self.setup.timeout)?;
        // What a kept server said about an earlier commit says nothing about this one.
        while client.next_notification(Duration::ZERO).is_some() {}
        stats.servers_started += usize::from(started != Started::Kept);
        stats.restarted += usize::from(started == Started::Restarted);
        let files: Vec<usize> = (0..self.view.files.len())
            .filter(|&f| {
                self.view.files[f].language == Some(self.language)
                    && !self.view.files[f].edits.is_empty()
            })
            .collect();
        let mut opened = Vec::new();
        for &file in &files {
            let Some(text) = self.view.text(file, self.side) else {
                continue;
            };
            let uri = self.uri(file);
            let _ = client.notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": self.language.name(), "version": version, "text": text}}),
            );
            opened.push(uri);
        }
        let limit = self.setup.timeout.min(SETTLE_LIMIT);
        let versioned = settle(client, &opened, version, strict, limit);
        let healthy = self.ask(client, &files, syntactic, answered, stats);
        // A kept server reads these files from disk again for the next commit.
        for uri in opened {
            let _ = client.notify(
                "textDocument/didClose",
                json!({"textDocument": {"uri": uri}}),
            );
        }
        if versioned {
            servers.set_versioned(self.language);
        }
        Ok(healthy)
    }

    /// The definition and references questions of this side, pipelined; whether the
    /// server answered them all (an error answer counts; a timeout or close does not).
    fn ask(
        &self,
        client: &mut LspClient,
        files: &[usize],
        syntactic: &[Dependency],
        answered: &mut SideAnswers,
        stats: &mut LspStats,
    ) -> bool {
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
        let (results, mut healthy) = ask_all(
            client,
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
        let (results, references_healthy) = ask_all(
            client,
            "textDocument/references",
            params,
            self.setup.timeout,
            stats,
        );
        healthy &= references_healthy;
        for (question, result) in references.into_iter().zip(results) {
            if let Some(result) = result {
                let found = targets.resolve(&result);
                answered.references.push((question, found));
            }
        }
        healthy
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

/// How long the server must publish no more diagnostics, once every opened file has
/// some, before it is asked.
const QUIET: Duration = Duration::from_millis(200);

/// The longest wait for [`settle`] (a server that publishes no diagnostics costs this).
const SETTLE_LIMIT: Duration = Duration::from_secs(20);

/// Waits until the server has published diagnostics for every file in `opened` at
/// `version` (or without a version, unless `strict`: a server known to send versions,
/// whose late versionless clearing of a file closed on an earlier commit must not
/// count) and then none for [`QUIET`], at most `limit`; whether any diagnostics
/// carried a version. pyright answers `definition` while it is still checking the
/// opened files (its checked diagnostics come after the answer), and what it answers
/// may depend on how far the check got: asking once the check is published makes the
/// answers the same from run to run.
fn settle(
    client: &LspClient,
    opened: &[String],
    version: i64,
    strict: bool,
    limit: Duration,
) -> bool {
    let deadline = Instant::now() + limit;
    // Compared as paths: a server may spell a URI's escapes its own way.
    let mut waiting: Vec<Option<String>> = opened.iter().map(|uri| uri_to_path(uri)).collect();
    let mut last = Instant::now();
    let mut versioned = false;
    loop {
        let now = Instant::now();
        let until = match waiting.is_empty() {
            true => (last + QUIET).min(deadline),
            false => deadline,
        };
        let Some(note) = client.next_notification(until.saturating_duration_since(now)) else {
            // Quiet long enough, or the deadline passed, or the server is gone.
            return versioned;
        };
        if note.get("method").and_then(Value::as_str) != Some("textDocument/publishDiagnostics") {
            continue;
        }
        let params = &note["params"];
        let sent = params.get("version").and_then(Value::as_i64);
        versioned |= sent.is_some();
        let current = match sent {
            Some(v) => v == version,
            None => !strict,
        };
        if let (true, Some(uri)) = (current, params.get("uri").and_then(Value::as_str)) {
            let path = uri_to_path(uri);
            waiting.retain(|w| *w != path);
        }
        last = Instant::now();
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
) -> (Vec<Option<Value>>, bool) {
    let mut receivers = Vec::with_capacity(params.len());
    for params in params {
        receivers.push(client.start_request(method, params).ok().map(|(_, rx)| rx));
    }
    let mut alive = true;
    let answers = receivers
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
        .collect();
    (answers, alive)
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
            root_uri: path_to_uri(&asker.root),
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
        let root = &self.asker.root;
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
