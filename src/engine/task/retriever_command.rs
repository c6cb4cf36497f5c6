//! A retriever run as a command (`--retriever cmd:PROG ARGS`), e.g. an embedding model:
//! one process for the whole cut, one JSON line per query each way.
//!
//! Request (nextedit → command, one line): `{"query": TEXT, "candidates": [{"file":
//! PATH, "start_line": N, "end_line": N, "text": TEXT}, …]}`. Answer (one line):
//! `{"scores": [NUMBER, …]}`, one score per candidate in the same order, higher is
//! more similar. Anything else (a closed stdout, bad JSON, a wrong count, no answer
//! within the time limit) fails the cut with the command named. docs/tasks.md has an
//! example. The command runs confined like every untrusted program ([`Confinement`]:
//! the sandbox unless `--sandbox off`, the environment allow-list, the limits of its
//! process tree, through `sys::jail`), in a scratch directory of its own, with no
//! network, and is named by its masked spec.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::retrieval::{Candidate, RetrieveError, Retriever};
use crate::base::sys::env::Environment;
use crate::base::sys::jail::{Jail, Tree};
use crate::base::sys::limits::Limits;
use crate::base::sys::sandbox::Sandbox;
use crate::engine::suggest::retrieve::index::ChunkIndex;

/// How long a query waits for its answer unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How a retriever command is confined, as every untrusted program is: in the sandbox
/// (unless `sandboxed` is false: `--sandbox off`), with the environment allow-list
/// plus `env`, and the limits of its process tree.
#[derive(Debug, Clone, PartialEq)]
pub struct Confinement {
    /// In the sandbox; when it cannot be made, the command is not started.
    pub sandboxed: bool,
    /// What it must never see (the repository, the database), even when its command
    /// line names a path inside.
    pub forbidden: Vec<PathBuf>,
    /// Its process tree's limits.
    pub limits: Limits,
    /// Variables passed beyond the allow-list.
    pub env: Environment,
}

/// A running retriever command.
pub struct CommandRetriever {
    spec: String,
    child: Child,
    stdin: ChildStdin,
    /// The command's output lines, read by a thread so that a query can time out
    /// (a blocking read on the pipe cannot).
    lines: Receiver<std::io::Result<String>>,
    timeout: Duration,
    /// Its process tree; dropped after `child` is ended, it kills what is left.
    tree: Tree,
    /// Its scratch directory (its `HOME`, the only place it may write), removed last.
    _scratch: tempfile::TempDir,
}

#[derive(Serialize)]
struct Request<'a> {
    query: &'a str,
    candidates: Vec<WireCandidate<'a>>,
}

#[derive(Serialize)]
struct WireCandidate<'a> {
    file: &'a str,
    start_line: usize,
    end_line: usize,
    text: &'a str,
}

#[derive(Deserialize)]
struct Answer {
    scores: Vec<f64>,
}

impl CommandRetriever {
    /// Starts `command` (a command line, split as a shell would, without one) confined
    /// by `confine` in a scratch directory of its own; `spec` names it in errors and
    /// tasks. A query not answered within `timeout` ends the command and fails.
    pub fn start(
        spec: &str,
        command: &str,
        timeout: Duration,
        confine: &Confinement,
    ) -> Result<CommandRetriever, RetrieveError> {
        let fail = |message: String| RetrieveError::Command {
            command: spec.to_string(),
            message,
        };
        let argv = shlex::split(command)
            .filter(|argv| !argv.is_empty())
            .ok_or_else(|| fail("no program given after `cmd:` (or an unclosed quote)".into()))?;
        let scratch = tempfile::Builder::new()
            .prefix("nextedit-retriever-")
            .tempdir()
            .map_err(|e| fail(format!("cannot create a scratch directory: {e}")))?;
        let root = (scratch.path().canonicalize())
            .map_err(|e| fail(format!("cannot resolve the scratch directory: {e}")))?;
        let sandbox = match confine.sandboxed {
            true => Some(
                Sandbox::for_command(command, &root, &confine.forbidden, false).map_err(|e| {
                    fail(format!(
                        "cannot sandbox it: {e}; or pass --sandbox off to run it unsandboxed (it can then read the repository, your files and the network)"
                    ))
                })?,
            ),
            false => None,
        };
        let jail = Jail::in_scratch(sandbox, &root, confine.limits, confine.env.clone());
        let (mut child_command, pending) = jail
            .command(&argv, &root)
            .map_err(|e| fail(format!("cannot confine it: {e}")))?;
        child_command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let (mut child, tree) = pending
            .spawn(&mut child_command)
            .map_err(|e| fail(format!("cannot start {}: {e}", argv[0])))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let (send, lines) = std::sync::mpsc::channel();
        // Ends when the command closes its output (or is killed on drop).
        std::thread::spawn(move || {
            for line in stdout.lines() {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(CommandRetriever {
            spec: spec.to_string(),
            child,
            stdin,
            lines,
            timeout,
            tree,
            _scratch: scratch,
        })
    }

    fn fail(&self, message: String) -> RetrieveError {
        RetrieveError::Command {
            command: self.spec.clone(),
            message,
        }
    }
}

impl Retriever for CommandRetriever {
    /// The spec, a key it carries masked: tasks name their retriever, and task files
    /// and databases never keep a key.
    fn name(&self) -> String {
        crate::base::secrets::stored_spec(&self.spec)
    }

    fn score(
        &mut self,
        _index: &ChunkIndex,
        query: &str,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<f64>, RetrieveError> {
        let request = Request {
            query,
            candidates: candidates
                .iter()
                .map(|c| WireCandidate {
                    file: c.file,
                    start_line: c.chunk.start_line,
                    end_line: c.chunk.end_line,
                    text: c.text,
                })
                .collect(),
        };
        let mut line = serde_json::to_string(&request).expect("requests serialize");
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| self.fail(format!("writing a query: {e}")))?;
        let answer = match self.lines.recv_timeout(self.timeout) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => return Err(self.fail(format!("reading scores: {e}"))),
            Err(RecvTimeoutError::Disconnected) => {
                let why = match self.tree.limit() {
                    Some(limit) => format!("was killed ({limit}) before it answered"),
                    None => "closed its output without answering".to_string(),
                };
                return Err(self.fail(why));
            }
            Err(RecvTimeoutError::Timeout) => {
                self.tree.time_out();
                return Err(self.fail(format!(
                    "did not answer a query within {} s (--retriever-timeout); ended it",
                    self.timeout.as_secs_f64()
                )));
            }
        };
        let answer: Answer = serde_json::from_str(&answer)
            .map_err(|e| self.fail(format!("answer is not {{\"scores\": [...]}}: {e}")))?;
        if answer.scores.len() != candidates.len() {
            return Err(self.fail(format!(
                "answered {} scores for {} candidates",
                answer.scores.len(),
                candidates.len()
            )));
        }
        Ok(answer.scores)
    }
}

impl Drop for CommandRetriever {
    fn drop(&mut self) {
        // The cut is over: a command still running is ended, and reaped either way
        // (failures here have nobody left to report to).
        crate::base::sys::process::end(&mut self.child);
    }
}
