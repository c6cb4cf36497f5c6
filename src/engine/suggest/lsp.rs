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
//! cursor. One call's requests are `lsp_step`'s, turning answers into edits
//! [`super::lsp_edits`]'s, the running server's state and the requests' transport and
//! failures `super::lsp_server`'s; this file is the suggester, the server's start and
//! stop. `complete` opens the task's file as prefix + suffix and keeps what the first
//! completion writes at the cursor. It times what it waits for the server, so
//! `benches/suggesters_lsp.rs` can tell the adapter's own time.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::lsp_edits;
use super::lsp_server::{Answer, Server, failure, request};
use super::lsp_step::{Step, location_after};
use super::protocol::{
    CompleteParams, CompleteResult, FileContent, GenerateParams, GenerateResult, InitializeParams,
    InitializeResult, PROTOCOL_VERSION, Revealed, SuggestParams, SuggestResult,
};
use super::{DEFAULT_GIVE_UP_AFTER, DEFAULT_INIT_TIMEOUT, FailureStreak, SuggestError, Suggester};
use crate::base::sys::jail::Jail;
use crate::base::sys::sandbox::Sandbox;
use crate::core::record::uri::path_to_uri;
use crate::engine::lsp_client::LspClient;

/// Longest ranked list a call returns.
pub const MAX_EDITS: usize = 20;
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

/// An in-process suggester driving a language server.
pub struct LspSuggester {
    argv: Vec<String>,
    /// `nextedit` and the reads-only database, when the server runs behind the proxy.
    proxy: Option<(PathBuf, PathBuf)>,
    /// Where and under what the proxy and server run.
    jail: Jail,
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
        if crate::base::sys::sandbox::resolve_program(program).is_none() {
            return Err(LspSpecError::NotFound {
                spec: spec.to_string(),
                program: program.clone(),
            });
        }
        Ok(LspSuggester {
            argv,
            proxy: None,
            jail: Jail::default(),
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
        self.jail = self.jail.with_sandbox(sandbox);
        self
    }

    /// Runs the proxy and server in `jail` (sandbox, environment, limits).
    pub fn with_jail(mut self, jail: Jail) -> LspSuggester {
        self.jail = jail;
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
        let spawn_error = |source| SuggestError::Spawn {
            command: argv.join(" "),
            source,
        };
        let stderr = tempfile::tempfile().map_err(spawn_error)?;
        let (mut command, pending) = self
            .jail
            .command(&argv, &root)
            .map_err(|e| spawn_error(std::io::Error::other(e.to_string())))?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr.try_clone().map_err(spawn_error)?));
        let (child, tree) = pending.spawn(&mut command).map_err(spawn_error)?;
        let client = LspClient::from_child(child);
        let mut server = Server {
            client,
            root,
            capabilities: Value::Null,
            documents: HashMap::new(),
            diagnostics: HashMap::new(),
            fresh: HashSet::new(),
            selectors: Vec::new(),
            stderr,
            tree,
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
            let mut step = Step::new(server, "suggest", deadline, waiting, language.as_deref());
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
            let mut step = Step::new(server, "generate", deadline, waiting, language.as_deref());
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

    fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        // The server's workspace is the task's state: a task of another worktree (or
        // one asked without `initialize`) gets a server of its own.
        if self.init.as_ref().map(|i| i.worktree.as_str()) != Some(params.worktree.as_str()) {
            if let Some(server) = self.server.take() {
                stop(server);
            }
            self.init = Some(InitializeParams {
                protocol_version: PROTOCOL_VERSION,
                worktree: params.worktree.clone(),
                language: params.language.clone(),
                project: None,
                trajectory: params.task.clone(),
                revealed: Revealed::default(),
            });
        }
        let language = params.language.clone();
        let file = FileContent {
            path: params.file.clone(),
            text: format!("{}{}", params.prefix, params.suffix),
        };
        self.call("complete", 0, |server, deadline, waiting| {
            let mut step = Step::new(server, "complete", deadline, waiting, language.as_deref());
            step.sync(std::slice::from_ref(&file))?;
            let proposals = step.completions(&file.path, (params.line, params.column))?;
            // The first proposal that only writes at the cursor (inline completion,
            // else the editor's top completion item).
            let text = proposals
                .iter()
                .filter_map(|edits| lsp_edits::apply(&file.text, edits))
                .find_map(|new| lsp_edits::hole_text(&params.prefix, &params.suffix, &new))
                .unwrap_or_default();
            step.outcome(CompleteResult {
                text,
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
