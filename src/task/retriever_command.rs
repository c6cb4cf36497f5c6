//! A retriever run as a command (`--retriever cmd:PROG ARGS`), e.g. an embedding model:
//! one process for the whole cut, one JSON line per query each way.
//!
//! Request (nextedit → command, one line): `{"query": TEXT, "candidates": [{"file":
//! PATH, "start_line": N, "end_line": N, "text": TEXT}, …]}`. Answer (one line):
//! `{"scores": [NUMBER, …]}`, one score per candidate in the same order, higher is
//! more similar. Anything else (a closed stdout, bad JSON, a wrong count, no answer
//! within the time limit) fails the cut with the command named. docs/tasks.md has an
//! example.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::retrieval::{Candidate, RetrieveError, Retriever};
use crate::suggest::retrieve::index::ChunkIndex;

/// How long a query waits for its answer unless told otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// A running retriever command.
pub struct CommandRetriever {
    spec: String,
    child: Child,
    stdin: ChildStdin,
    /// The command's output lines, read by a thread so that a query can time out
    /// (a blocking read on the pipe cannot).
    lines: Receiver<std::io::Result<String>>,
    timeout: Duration,
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
    /// Starts `argv` (program, then arguments); `spec` names it in errors and tasks.
    /// A query not answered within `timeout` ends the command and fails.
    pub fn start(
        spec: &str,
        argv: &[String],
        timeout: Duration,
    ) -> Result<CommandRetriever, RetrieveError> {
        let fail = |message: String| RetrieveError::Command {
            command: spec.to_string(),
            message,
        };
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| fail("no program given after `cmd:`".to_string()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| fail(format!("cannot start {program}: {e}")))?;
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
    fn name(&self) -> String {
        self.spec.clone()
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
                return Err(self.fail("closed its output without answering".to_string()));
            }
            Err(RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
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
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
