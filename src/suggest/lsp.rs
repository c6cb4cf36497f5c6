//! The `lsp:` suggester: any language server as a next-edit suggester.
//!
//! `--suggester 'lsp:CMD ARGS…'` starts the server once per trajectory (at
//! `initialize`; stopped at `shutdown` or when the next trajectory starts) behind
//! nextedit's own recording proxy (`nextedit proxy --db $NEXTEDIT_REPLAY_DB`), in the
//! replay sandbox like a `cmd:` suggester, so what the server reads is attributed to
//! each step through `$/nextedit/replayStep` markers. At every call it syncs the
//! step's files (didOpen, then full-text didChange), then asks at the places the
//! suggester is scored on and ranks what comes back (docs/suggesters.md, "lsp:"):
//! renames of the identifier the last edit renamed, quick fixes for the diagnostics
//! near the recent edits, fix-all, then inline completions or completions at the
//! cursor. Turning answers into edits is [`super::lsp_edits`]'s; this file is the
//! server, the requests and their failures.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::lsp_edits::{self, TextEdit};
use super::protocol::{
    AppliedEdit, FileContent, GenerateParams, GenerateResult, InitializeParams, InitializeResult,
    SuggestParams, SuggestResult, SuggestedEdit,
};
use super::sandbox::Sandbox;
use super::{DEFAULT_GIVE_UP_AFTER, DEFAULT_INIT_TIMEOUT, FailureStreak, SuggestError, Suggester};
use crate::lsp::client::{ClientError, LspClient, path_to_uri};
use crate::record::uri::uri_to_path;
use crate::syntax::Language;

/// Longest wait for the diagnostics of the text just synced (a server that publishes
/// none for it costs this much per step; pyright takes ~0.4 s a step here).
pub const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(3);
/// Longest wait for the first diagnostics of a document just opened: a server's first
/// analysis of the workspace (pyright: ~4 s here), which its answers wait for too.
pub const FIRST_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(15);
/// Completion items kept per request (after the editor's prefix filter and sort).
pub const COMPLETION_ITEMS: usize = 3;
/// Most recent applied edits whose neighbourhood is asked for quick fixes.
pub const NEIGHBOURHOOD_EDITS: usize = 3;
/// Lines around each of those edits that make its neighbourhood.
pub const NEIGHBOURHOOD_LINES: usize = 3;
/// Longest ranked list a call returns.
pub const MAX_EDITS: usize = 20;
/// Lines of the server's (and proxy's) stderr kept for error reports.
const STDERR_TAIL_LINES: usize = 20;
/// How long a stopping server (and the proxy in front of it) may take to exit.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// Why an `lsp:` spec is not usable.
#[derive(Debug, thiserror::Error)]
pub enum LspSpecError {
    /// Nothing after `lsp:`.
    #[error("lsp: needs a language server command, e.g. 'lsp:pyright-langserver --stdio'")]
    Empty,
    /// Unbalanced quotes.
    #[error("{spec:?}: cannot split the command line (unbalanced quotes?)")]
    Split {
        /// The spec.
        spec: String,
    },
    /// The program is neither an existing path nor found on `PATH`.
    #[error(
        "{spec:?}: cannot find the language server `{program}` (not an existing path, not on PATH)"
    )]
    NotFound {
        /// The spec.
        spec: String,
        /// Its first word.
        program: String,
    },
}

/// Time one call spent in total and waiting for the server's answers (requests and
/// the bounded wait for diagnostics): the rest is the adapter's own work.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallTiming {
    /// Wall time of the call.
    pub total: Duration,
    /// Of which waiting for the server.
    pub waiting: Duration,
}

/// A document as the server knows it.
struct Document {
    uri: String,
    version: i64,
    text: String,
}

/// A running server (behind the proxy) and what it was told.
struct Server {
    client: LspClient,
    root: PathBuf,
    capabilities: Value,
    documents: HashMap<String, Document>,
    /// Latest diagnostics per URI.
    diagnostics: HashMap<String, Vec<Value>>,
    /// URIs whose diagnostics are for the text last synced.
    fresh: HashSet<String>,
    stderr: std::fs::File,
}

/// What a request came to: an answer, or an error answer (the server works; that
/// source of proposals is skipped).
enum Answer {
    Result(Value),
    Error(SuggestError),
}

/// An in-process suggester driving a language server.
pub struct LspSuggester {
    argv: Vec<String>,
    /// `nextedit` and the reads-only database, when the server runs behind the proxy.
    proxy: Option<(PathBuf, PathBuf)>,
    sandbox: Option<Sandbox>,
    timeout: Duration,
    init_timeout: Duration,
    failures: FailureStreak,
    server: Option<Server>,
    init: Option<InitializeParams>,
    timings: Vec<CallTiming>,
    /// Time waited for the server in the current call.
    waiting: Duration,
}

impl LspSuggester {
    /// The suggester `spec` (`lsp:CMD ARGS…`) names; its program must exist.
    pub fn from_spec(spec: &str) -> Result<LspSuggester, LspSpecError> {
        let command = spec.strip_prefix("lsp:").unwrap_or(spec);
        let argv = shlex::split(command).ok_or_else(|| LspSpecError::Split {
            spec: spec.to_string(),
        })?;
        let program = argv.first().ok_or(LspSpecError::Empty)?;
        if super::sandbox::resolve_program(program).is_none() {
            return Err(LspSpecError::NotFound {
                spec: spec.to_string(),
                program: program.clone(),
            });
        }
        Ok(LspSuggester {
            argv,
            proxy: None,
            sandbox: None,
            timeout: Duration::from_secs(60),
            init_timeout: DEFAULT_INIT_TIMEOUT,
            failures: FailureStreak::new(DEFAULT_GIVE_UP_AFTER),
            server: None,
            init: None,
            timings: Vec::new(),
            waiting: Duration::ZERO,
        })
    }

    /// Runs the server behind `nextedit proxy` (the executable `nextedit`), recording
    /// into the reads-only database `reads_db`.
    pub fn with_proxy(mut self, nextedit: &Path, reads_db: &Path) -> LspSuggester {
        self.proxy = Some((nextedit.to_path_buf(), reads_db.to_path_buf()));
        self
    }

    /// Runs the proxy and server in `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> LspSuggester {
        self.sandbox = Some(sandbox);
        self
    }

    /// Sets the limit of a `suggest` or `generate` call (all its requests together).
    pub fn with_timeout(mut self, timeout: Duration) -> LspSuggester {
        self.timeout = timeout;
        self
    }

    /// Sets the limit of `initialize` (the server's start).
    pub fn with_init_timeout(mut self, timeout: Duration) -> LspSuggester {
        self.init_timeout = timeout;
        self
    }

    /// Sets how many failures in a row end the asking for a trajectory.
    pub fn with_give_up_after(mut self, failures: u32) -> LspSuggester {
        self.failures = FailureStreak::new(failures);
        self
    }

    /// The timings of every `suggest` and `generate` call so far.
    pub fn timings(&self) -> &[CallTiming] {
        &self.timings
    }

    /// Starts the server for the trajectory `init` names and initializes it.
    fn start(&mut self) -> Result<(), SuggestError> {
        let init = self.init.clone().expect("initialize came first");
        let root = Path::new(&init.worktree)
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from(&init.worktree));
        let mut argv: Vec<String> = Vec::new();
        if let Some((nextedit, reads_db)) = &self.proxy {
            argv.extend([
                nextedit.to_string_lossy().into_owned(),
                "proxy".into(),
                "--db".into(),
                reads_db.to_string_lossy().into_owned(),
                "--workspace".into(),
                root.to_string_lossy().into_owned(),
                "--exit-timeout".into(),
                "1".into(),
                "--".into(),
            ]);
        }
        argv.extend(self.argv.iter().cloned());
        let argv = match &self.sandbox {
            Some(sandbox) => sandbox.wrap(&argv, &root),
            None => argv,
        };
        let stderr = tempfile::tempfile().map_err(|source| SuggestError::Spawn {
            command: argv.join(" "),
            source,
        })?;
        let mut command = Command::new(&argv[0]);
        command.args(&argv[1..]).current_dir(&root);
        // Nothing of nextedit's own context, as for `cmd:` suggesters.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("NEXTEDIT_") {
                command.env_remove(key);
            }
        }
        command.env_remove("PWD").env_remove("OLDPWD");
        let spawn_error = |source| SuggestError::Spawn {
            command: argv.join(" "),
            source,
        };
        command.stderr(Stdio::from(stderr.try_clone().map_err(spawn_error)?));
        let client = LspClient::spawn_without_transcript(command).map_err(|e| match e {
            ClientError::Spawn { source, .. } => spawn_error(source),
            other => spawn_error(std::io::Error::other(other.to_string())),
        })?;
        let mut server = Server {
            client,
            root,
            capabilities: Value::Null,
            documents: HashMap::new(),
            diagnostics: HashMap::new(),
            fresh: HashSet::new(),
            stderr,
        };
        let deadline = Instant::now() + self.init_timeout;
        let params = initialize_params(&server.root);
        let answer = request(&mut server, "initialize", "initialize", params, deadline);
        let result = match answer {
            Ok(Answer::Result(result)) => result,
            Ok(Answer::Error(error)) | Err(error) => {
                stop(server);
                return Err(error);
            }
        };
        server.capabilities = result.get("capabilities").cloned().unwrap_or(Value::Null);
        if let Err(error) = server.client.notify("initialized", json!({})) {
            let error = failure(&mut server, "initialize", error);
            stop(server);
            return Err(error);
        }
        self.server = Some(server);
        Ok(())
    }

    /// Runs one call: the give-up rule, a (re)started server, the step marker, then
    /// `ask`; a failure that leaves the server unusable stops it (the next call starts
    /// it again).
    fn call<T>(
        &mut self,
        call: &str,
        step: usize,
        ask: impl FnOnce(&mut Server, Instant, &mut Duration) -> Result<T, SuggestError>,
    ) -> Result<T, SuggestError> {
        self.failures.check()?;
        let started = Instant::now();
        self.waiting = Duration::ZERO;
        if self.server.is_none() {
            if let Err(error) = self.start() {
                self.failures.fail(&error);
                return Err(error);
            }
        }
        let deadline = Instant::now() + self.timeout;
        let server = self.server.as_mut().expect("started");
        let marker = json!({"step": step, "call": call});
        let result = match server.client.notify("$/nextedit/replayStep", marker) {
            Ok(()) => ask(server, deadline, &mut self.waiting),
            Err(error) => Err(failure(server, call, error)),
        };
        self.timings.push(CallTiming {
            total: started.elapsed(),
            waiting: self.waiting,
        });
        match &result {
            Err(error) if error.kills_process() => {
                self.failures.fail(error);
                if let Some(server) = self.server.take() {
                    stop(server);
                }
            }
            _ => self.failures.reset(),
        }
        result
    }
}

/// The `initialize` params: the worktree as the one folder, UTF-16 positions, and
/// what the suggester asks for (edits inline in code actions, plain-text completions,
/// versioned diagnostics); `workspace/applyEdit` is declined.
fn initialize_params(root: &Path) -> Value {
    let uri = path_to_uri(root);
    json!({
        // No process id: in the sandbox's PID namespace nextedit's would name nothing
        // (or another process), and servers that watch their parent would exit.
        "processId": null,
        "clientInfo": {"name": "nextedit-lsp-suggester", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": uri,
        "rootPath": root.to_string_lossy(),
        "workspaceFolders": [{"uri": uri, "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
        "capabilities": {
            "general": {"positionEncodings": ["utf-16"]},
            "workspace": {"configuration": true, "workspaceFolders": true, "applyEdit": false,
                          "workspaceEdit": {"documentChanges": true}},
            "textDocument": {
                "synchronization": {"dynamicRegistration": false, "didSave": false},
                "completion": {"completionItem": {"snippetSupport": false, "insertReplaceSupport": false},
                               "contextSupport": true},
                "codeAction": {"isPreferredSupport": true, "codeActionLiteralSupport": {"codeActionKind": {
                    "valueSet": ["", "quickfix", "refactor", "source", "source.fixAll", "source.organizeImports"]}}},
                "rename": {"prepareSupport": false},
                "publishDiagnostics": {"versionSupport": true},
                "inlineCompletion": {}
            }
        },
        "initializationOptions": {}
    })
}

/// Asks the server shutdown and waits for it (and the proxy) to exit, killing them
/// after [`STOP_WAIT`].
fn stop(mut server: Server) {
    let _ = server.client.shutdown(STOP_WAIT);
}

/// The last lines the server and proxy wrote to stderr.
fn stderr_tail(server: &mut Server) -> String {
    let mut text = String::new();
    let _ = server.stderr.seek(SeekFrom::Start(0));
    let _ = server.stderr.read_to_string(&mut text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(STDERR_TAIL_LINES)..].join("\n")
}

/// A transport failure as the call's error: a time-out, or a crash (with the exit
/// status and stderr).
fn failure(server: &mut Server, call: &str, error: ClientError) -> SuggestError {
    match error {
        ClientError::Timeout { method, timeout } => SuggestError::Timeout {
            method: format!("{call} ({method})"),
            after: timeout,
        },
        ClientError::Response {
            method,
            code,
            message,
        } => SuggestError::Response {
            method: format!("{call} ({method})"),
            code,
            message,
        },
        ClientError::Spawn { .. } | ClientError::Write(_) | ClientError::Closed(_) => {
            let status = server.client.wait(Duration::from_millis(500));
            SuggestError::Crashed {
                method: call.to_string(),
                status: status.to_string(),
                stderr: stderr_tail(server),
            }
        }
    }
}

/// One request within the call's `deadline`; the time waited is counted.
fn request(
    server: &mut Server,
    call: &str,
    method: &str,
    params: Value,
    deadline: Instant,
) -> Result<Answer, SuggestError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(SuggestError::Timeout {
            method: format!("{call} ({method})"),
            after: Duration::ZERO,
        });
    }
    match server.client.request(method, params, left) {
        Ok(result) => Ok(Answer::Result(result)),
        Err(error @ ClientError::Response { .. }) => {
            Ok(Answer::Error(failure(server, call, error)))
        }
        Err(error) => Err(failure(server, call, error)),
    }
}

/// The LSP `languageId` of a file.
fn language_id(path: &str, fallback: Option<&str>) -> String {
    Language::from_path(Path::new(path))
        .map(|l| match l {
            Language::Tsx => "typescriptreact",
            other => other.name(),
        })
        .or(fallback)
        .unwrap_or("plaintext")
        .to_string()
}

/// One step's conversation with the server: what it was asked and how long it waited.
struct Step<'a> {
    server: &'a mut Server,
    call: &'a str,
    deadline: Instant,
    waiting: &'a mut Duration,
    language: Option<&'a str>,
    /// An error answer, kept in case every request gets one.
    last_error: Option<SuggestError>,
    answered: usize,
}

impl Step<'_> {
    /// A request; `None` for an error answer (kept in `last_error`).
    fn ask(&mut self, method: &str, params: Value) -> Result<Option<Value>, SuggestError> {
        let started = Instant::now();
        let answer = request(self.server, self.call, method, params, self.deadline);
        *self.waiting += started.elapsed();
        Ok(match answer? {
            Answer::Result(value) => {
                self.answered += 1;
                Some(value)
            }
            Answer::Error(error) => {
                self.last_error = Some(error);
                None
            }
        })
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<(), SuggestError> {
        let call = self.call;
        self.server
            .client
            .notify(method, params)
            .map_err(|e| failure(self.server, call, e))
    }

    /// Opens or updates every file of the step; returns the paths whose text changed.
    fn sync(&mut self, files: &[FileContent]) -> Result<HashSet<String>, SuggestError> {
        let mut changed = HashSet::new();
        for file in files {
            if self
                .server
                .documents
                .get(&file.path)
                .is_some_and(|d| d.text == file.text)
            {
                continue;
            }
            self.set_text(&file.path, &file.text)?;
            changed.insert(file.path.clone());
        }
        Ok(changed)
    }

    /// Tells the server `path` now holds `text` (didOpen the first time).
    fn set_text(&mut self, path: &str, text: &str) -> Result<(), SuggestError> {
        let (method, params, uri) = match self.server.documents.get_mut(path) {
            Some(doc) => {
                doc.version += 1;
                doc.text = text.to_string();
                let params = json!({"textDocument": {"uri": doc.uri, "version": doc.version},
                                    "contentChanges": [{"text": text}]});
                ("textDocument/didChange", params, doc.uri.clone())
            }
            None => {
                let uri = path_to_uri(&self.server.root.join(path));
                let params = json!({"textDocument": {"uri": uri, "languageId": language_id(path, self.language),
                                                     "version": 1, "text": text}});
                self.server.documents.insert(
                    path.to_string(),
                    Document {
                        uri: uri.clone(),
                        version: 1,
                        text: text.to_string(),
                    },
                );
                ("textDocument/didOpen", params, uri)
            }
        };
        self.server.fresh.remove(&uri);
        self.notify(method, params)
    }

    /// Takes in the notifications that came, waiting (bounded) until `path`'s
    /// diagnostics are those of its current text.
    fn diagnostics_of(&mut self, path: &str, wait: bool) -> Vec<Value> {
        let Some(doc) = self.server.documents.get(path) else {
            return Vec::new();
        };
        let uri = doc.uri.clone();
        let bound = if doc.version == 1 {
            FIRST_DIAGNOSTICS_WAIT
        } else {
            DIAGNOSTICS_WAIT
        };
        let started = Instant::now();
        let until = (started + bound).min(self.deadline);
        loop {
            let fresh = self.server.fresh.contains(&uri);
            let left = until.saturating_duration_since(Instant::now());
            let timeout = if fresh || !wait { Duration::ZERO } else { left };
            let Some(note) = self.server.client.next_notification(timeout) else {
                break;
            };
            if note.get("method").and_then(Value::as_str) != Some("textDocument/publishDiagnostics")
            {
                continue;
            }
            let Some(params) = note.get("params") else {
                continue;
            };
            let Some(for_uri) = params.get("uri").and_then(Value::as_str) else {
                continue;
            };
            let list = params
                .get("diagnostics")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let current = self
                .server
                .documents
                .values()
                .find(|d| d.uri == for_uri)
                .map(|d| d.version);
            let of_version = params.get("version").and_then(Value::as_i64);
            if of_version.is_none() || of_version == current {
                self.server.fresh.insert(for_uri.to_string());
            }
            self.server.diagnostics.insert(for_uri.to_string(), list);
        }
        *self.waiting += started.elapsed();
        self.server
            .diagnostics
            .get(&uri)
            .cloned()
            .unwrap_or_default()
    }

    /// The current text of `path`: the synced document, else the worktree's file.
    fn text_of(&self, path: &str) -> Option<String> {
        match self.server.documents.get(path) {
            Some(doc) => Some(doc.text.clone()),
            None => std::fs::read_to_string(self.server.root.join(path)).ok(),
        }
    }

    /// The worktree-relative path of a URI inside the worktree.
    fn path_of(&self, uri: &str) -> Option<String> {
        let path = PathBuf::from(uri_to_path(uri)?);
        let rel = path.strip_prefix(&self.server.root).ok()?;
        crate::trajectory::RelPath::parse(&rel.to_string_lossy())
            .ok()
            .map(|p| p.as_str().to_string())
    }

    /// A workspace edit as whole-line edits of the current texts; `bases` gives the
    /// text the edits of a file apply to when it is not the current one (a rename
    /// asked in the state before the edits that made it).
    fn workspace_edit(&self, edit: &Value, bases: &HashMap<String, String>) -> Vec<SuggestedEdit> {
        let mut out = Vec::new();
        for (uri, edits) in lsp_edits::workspace_edits(edit).unwrap_or_default() {
            let Some(path) = self.path_of(&uri) else {
                continue;
            };
            let Some(current) = self.text_of(&path) else {
                continue;
            };
            let from = bases.get(&path).unwrap_or(&current);
            if let Some(new) = lsp_edits::apply(from, &edits) {
                out.extend(lsp_edits::line_edits(&path, &current, &new));
            }
        }
        out
    }

    /// Edits of `path` as whole-line edits of its current text.
    fn file_edits(&self, path: &str, edits: &[TextEdit]) -> Vec<SuggestedEdit> {
        let Some(current) = self.text_of(path) else {
            return Vec::new();
        };
        lsp_edits::apply(&current, edits)
            .map(|new| lsp_edits::line_edits(path, &current, &new))
            .unwrap_or_default()
    }

    fn capability(&self, name: &str) -> bool {
        self.server
            .capabilities
            .get(name)
            .is_some_and(|c| !c.is_null() && c != &Value::Bool(false))
    }

    /// Code-action proposals, ranked: the preferred quick fixes for the diagnostics near
    /// the most recent edits (most recent edit first), fix-all of the cursor's file, then
    /// the other quick fixes (a server's "disable this rule here" and its alternatives).
    fn code_actions(
        &mut self,
        prior: &[AppliedEdit],
        cursor_file: &str,
    ) -> Result<Vec<Vec<SuggestedEdit>>, SuggestError> {
        let (mut preferred, mut fix_all, mut others) = (Vec::new(), Vec::new(), Vec::new());
        if !self.capability("codeActionProvider") {
            return Ok(Vec::new());
        }
        let mut asked: Vec<(String, usize, usize)> = Vec::new();
        for edit in prior.iter().rev().take(NEIGHBOURHOOD_EDITS) {
            let Some(doc) = self.server.documents.get(&edit.file) else {
                continue;
            };
            let lines = doc.text.split_inclusive('\n').count();
            let start = edit.start_line.saturating_sub(NEIGHBOURHOOD_LINES);
            let end = (edit.end_line + NEIGHBOURHOOD_LINES).min(lines);
            if asked.contains(&(edit.file.clone(), start, end)) {
                continue;
            }
            asked.push((edit.file.clone(), start, end));
            let uri = doc.uri.clone();
            let near: Vec<Value> = self
                .diagnostics_of(&edit.file, false)
                .into_iter()
                .filter(|d| {
                    let line = |p: &str| d.pointer(p).and_then(Value::as_u64).unwrap_or(0) as usize;
                    line("/range/start/line") < end && line("/range/end/line") >= start
                })
                .collect();
            if near.is_empty() {
                continue;
            }
            let params = json!({"textDocument": {"uri": uri},
                "range": {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}},
                "context": {"diagnostics": near, "only": ["quickfix"], "triggerKind": 2}});
            if let Some(answer) = self.ask("textDocument/codeAction", params)? {
                for (is_preferred, action) in lsp_edits::code_action_edits(&answer) {
                    let edits = self.workspace_edit(&action, &HashMap::new());
                    if is_preferred {
                        preferred.push(edits);
                    } else {
                        others.push(edits);
                    }
                }
            }
        }
        let all = self.diagnostics_of(cursor_file, false);
        if let Some(doc) = self
            .server
            .documents
            .get(cursor_file)
            .filter(|_| !all.is_empty())
        {
            let lines = doc.text.split_inclusive('\n').count();
            let params = json!({"textDocument": {"uri": doc.uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}},
                "context": {"diagnostics": all, "only": ["source.fixAll"], "triggerKind": 2}});
            if let Some(answer) = self.ask("textDocument/codeAction", params)? {
                for (_, action) in lsp_edits::code_action_edits(&answer) {
                    fix_all.push(self.workspace_edit(&action, &HashMap::new()));
                }
            }
        }
        preferred.extend(fix_all);
        preferred.extend(others);
        Ok(preferred)
    }

    /// Inline completions where the server offers them, else the top completion items,
    /// at `cursor` (line, byte column) of `path`: one proposal each.
    fn completions(
        &mut self,
        path: &str,
        cursor: (usize, usize),
    ) -> Result<Vec<Vec<TextEdit>>, SuggestError> {
        let Some(doc) = self.server.documents.get(path) else {
            return Ok(Vec::new());
        };
        let (uri, text) = (doc.uri.clone(), doc.text.clone());
        let position = lsp_edits::position(&text, cursor.0, cursor.1);
        let at = json!({"line": position.0, "character": position.1});
        if self.capability("inlineCompletionProvider") {
            let params = json!({"textDocument": {"uri": uri}, "position": at, "context": {"triggerKind": 2}});
            let answer = self.ask("textDocument/inlineCompletion", params)?;
            return Ok(answer
                .map(|a| lsp_edits::inline_completion_edits(&a, position, COMPLETION_ITEMS))
                .unwrap_or_default()
                .into_iter()
                .map(|e| vec![e])
                .collect());
        }
        let triggers: Vec<String> = self
            .server
            .capabilities
            .pointer("/completionProvider/triggerCharacters")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if !self.capability("completionProvider")
            || !lsp_edits::completes_here(&text, cursor.0, cursor.1, &triggers)
        {
            return Ok(Vec::new());
        }
        let params =
            json!({"textDocument": {"uri": uri}, "position": at, "context": {"triggerKind": 1}});
        let Some(answer) = self.ask("textDocument/completion", params)? else {
            return Ok(Vec::new());
        };
        Ok(
            lsp_edits::completion_items(&answer, &text, cursor, COMPLETION_ITEMS)
                .iter()
                .filter_map(|item| lsp_edits::completion_edits(item, &text, cursor))
                .collect(),
        )
    }

    /// When the last edit renamed an identifier: the server's rename of it, asked in
    /// the state before the edits that made this rename (where every occurrence still
    /// agrees) and diffed against the current texts, so what is left is the other
    /// occurrences.
    fn rename(&mut self, prior: &[AppliedEdit]) -> Result<Vec<SuggestedEdit>, SuggestError> {
        let Some(last) = prior.last() else {
            return Ok(Vec::new());
        };
        let Some(renamed) = lsp_edits::renamed_identifier(last) else {
            return Ok(Vec::new());
        };
        if !self.capability("renameProvider") {
            return Ok(Vec::new());
        }
        let Some(uri) = self.server.documents.get(&last.file).map(|d| d.uri.clone()) else {
            return Ok(Vec::new());
        };
        // Per file, its current text and its text with this rename's edits set back
        // (a rename keeps line numbers, so each edit's current lines stay valid).
        let mut texts: BTreeMap<String, (String, String)> = BTreeMap::new();
        for edit in lsp_edits::same_renames(prior, &renamed) {
            let Some(doc) = self.server.documents.get(&edit.file) else {
                continue;
            };
            let (_, before) = texts
                .entry(edit.file.clone())
                .or_insert_with(|| (doc.text.clone(), doc.text.clone()));
            *before =
                lsp_edits::replace_lines(before, edit.start_line, edit.end_line, &edit.before);
        }
        let mut set_back = Vec::new();
        for (file, (_, before)) in &texts {
            self.set_text(file, before)?;
            set_back.push(file.clone());
        }
        let before = &texts[&last.file].1;
        let position = lsp_edits::position(before, renamed.line, renamed.column);
        let params = json!({"textDocument": {"uri": uri},
            "position": {"line": position.0, "character": position.1}, "newName": renamed.new_name});
        let answer = self.ask("textDocument/rename", params);
        // The server gets the current texts back whatever the answer.
        for file in set_back {
            self.set_text(&file, &texts[&file].0)?;
        }
        let bases: HashMap<String, String> = texts
            .into_iter()
            .map(|(file, (_, before))| (file, before))
            .collect();
        Ok(answer?
            .map(|edit| self.workspace_edit(&edit, &bases))
            .unwrap_or_default())
    }

    /// Every error answer, when nothing was answered: the call failed.
    fn outcome<T>(self, value: T) -> Result<T, SuggestError> {
        match self.last_error {
            Some(error) if self.answered == 0 => Err(error),
            _ => Ok(value),
        }
    }
}

impl Suggester for LspSuggester {
    fn name(&self) -> String {
        let program = Path::new(&self.argv[0])
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("lsp:{program}")
    }

    fn initialize(&mut self, params: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        // One server per trajectory: its worktree is the server's workspace.
        if let Some(server) = self.server.take() {
            stop(server);
        }
        self.failures.reset();
        self.init = Some(params.clone());
        let result = self.start();
        match &result {
            Ok(()) => self.failures.reset(),
            Err(error) => self.failures.fail(error),
        }
        result?;
        Ok(InitializeResult {
            name: Some(self.name()),
            version: None,
        })
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let language = params.language.clone();
        self.call("suggest", params.step, |server, deadline, waiting| {
            let mut step = Step {
                server,
                call: "suggest",
                deadline,
                waiting,
                language: language.as_deref(),
                last_error: None,
                answered: 0,
            };
            step.sync(&params.files)?;
            let Some(region) =
                super::prompt::region_at_last_edit(&params.prior_edits, &params.files)
            else {
                return Ok(SuggestResult::default());
            };
            let _ = step.diagnostics_of(&region.file, true);
            let mut proposals = Vec::new();
            let renames = step.rename(&params.prior_edits)?;
            proposals.push(renames);
            proposals.extend(step.code_actions(&params.prior_edits, &region.file)?);
            let cursor = (region.cursor_line, region.cursor_column);
            for edits in step.completions(&region.file, cursor)? {
                proposals.push(step.file_edits(&region.file, &edits));
            }
            let edits = lsp_edits::ranked(proposals, MAX_EDITS);
            step.outcome(SuggestResult {
                edits,
                reads: Vec::new(),
            })
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        let language = params.language.clone();
        let unchanged = params.location_text();
        self.call("generate", params.step, |server, deadline, waiting| {
            let mut step = Step {
                server,
                call: "generate",
                deadline,
                waiting,
                language: language.as_deref(),
                last_error: None,
                answered: 0,
            };
            step.sync(&params.files)?;
            // An insertion has no line to complete: nothing useful to ask.
            if params.end_line <= params.start_line {
                return Ok(GenerateResult::default());
            }
            let Some(text) = step.text_of(&params.file) else {
                return Ok(GenerateResult {
                    text: unchanged,
                    reads: Vec::new(),
                });
            };
            let last = params.end_line - 1;
            let column = text
                .split('\n')
                .nth(last)
                .unwrap_or("")
                .trim_end_matches('\r')
                .len();
            let proposals = step.completions(&params.file, (last, column))?;
            let result = proposals
                .iter()
                .find_map(|edits| location_after(&text, edits, params.start_line, params.end_line))
                .unwrap_or(unchanged);
            step.outcome(GenerateResult {
                text: result,
                reads: Vec::new(),
            })
        })
    }

    fn shutdown(&mut self) {
        if let Some(server) = self.server.take() {
            stop(server);
        }
        self.init = None;
    }
}

/// The text of lines `[start_line, end_line)` after `edits`, when they all fall
/// within those lines; `None` otherwise (an edit elsewhere is not this location's).
fn location_after(
    text: &str,
    edits: &[TextEdit],
    start_line: usize,
    end_line: usize,
) -> Option<String> {
    if edits
        .iter()
        .any(|e| e.start.0 < start_line || e.end.0 >= end_line)
    {
        return None;
    }
    let new = lsp_edits::apply(text, edits)?;
    let old_lines = text.split_inclusive('\n').count();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let end = (end_line + new_lines.len()).checked_sub(old_lines)?;
    Some(new_lines.get(start_line..end)?.concat())
}
