//! A suggester that is a separate process speaking the line-delimited JSON-RPC protocol.
//!
//! Every call has a timeout. A suggester that crashes, hangs, prints something
//! that is not JSON or a line larger than [`MAX_LINE_BYTES`] fails that call with a
//! [`SuggestError`]; the process (its whole tree) is killed and restarted (and
//! re-initialized) on the next call, so one bad step never ends a run. After
//! [`DEFAULT_GIVE_UP_AFTER`] such failures in a row the rest of the trajectory is not
//! asked. Reads are bounded (a flood of lines waits on the pipe), writes go through a
//! writer thread and never block a call past its deadline, the process's exit is
//! polled, and the process runs in its [`Jail`] (the sandbox, the
//! environment allow-list, the limits of its whole tree): a call that ends because
//! the tree hit a limit fails as [`SuggestError::Limit`].
//! Messages are built and answers decoded by [`crate::base::jsonrpc`]; this file is the
//! transport (one message per line) and the process.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::protocol::{
    CompleteParams, CompleteResult, GenerateParams, GenerateResult, InitializeParams,
    InitializeResult, SuggestParams, SuggestResult,
};
use super::{FailureStreak, SuggestError, Suggester};
use crate::base::jsonrpc::{self, RequestIds, Response};
use crate::base::sys::jail::{Jail, Tree};
use crate::base::sys::process;
use crate::base::sys::sandbox::Sandbox;

/// Longest line accepted from a suggester.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Lines read ahead of the caller: a suggester that floods its output waits on the
/// pipe instead of filling nextedit's memory.
const LINES_AHEAD: usize = 16;
/// How often a call waiting for an answer checks whether the process has exited.
const EXIT_POLL: Duration = Duration::from_millis(50);
/// Process failures in a row after which a trajectory stops asking the suggester.
pub const DEFAULT_GIVE_UP_AFTER: u32 = 3;
/// JSON-RPC's error code for a method the receiver does not implement.
const METHOD_NOT_FOUND: i64 = -32601;
/// Default limit for `initialize` (`--init-timeout`).
pub const DEFAULT_INIT_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines of the suggester's stderr kept for error reports.
const STDERR_TAIL_LINES: usize = 20;

enum Line {
    Text(String),
    TooLong(usize),
    Eof,
}

struct Running {
    child: Child,
    /// Its whole process tree (dropped after `child` is reaped: kills what is left).
    tree: Tree,
    /// Lines to write, handed to a writer thread: a suggester that stops reading its
    /// stdin blocks that thread, never the call, which waits with its deadline.
    writer: Sender<Vec<u8>>,
    /// Whether each line was written.
    written: Receiver<bool>,
    lines: Receiver<Line>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // The suggester runs in its own process group and cgroup (a shell and what it
        // started): end all of it, not just the shell, and even when the shell already
        // exited (its background children keep the group).
        self.tree.kill();
        process::end(&mut self.child);
    }
}

/// A suggester process (`cmd:…`).
pub struct ProcessSuggester {
    command: Vec<String>,
    timeout: Duration,
    /// `initialize` may load a model: it gets its own limit.
    init_timeout: Duration,
    running: Option<Running>,
    initialized_with: Option<InitializeParams>,
    ids: RequestIds,
    restarts: u32,
    /// Where and under what the process runs (sandbox, environment, limits).
    jail: Jail,
    /// Process failures in a row in this trajectory, and when to stop asking.
    failures: FailureStreak,
}

impl ProcessSuggester {
    /// A suggester started as `command` (argv), with a per-call timeout.
    pub fn new(command: Vec<String>, timeout: Duration) -> ProcessSuggester {
        ProcessSuggester {
            command,
            timeout,
            init_timeout: DEFAULT_INIT_TIMEOUT,
            running: None,
            initialized_with: None,
            ids: RequestIds::default(),
            restarts: 0,
            jail: Jail::default(),
            failures: FailureStreak::new(DEFAULT_GIVE_UP_AFTER),
        }
    }

    /// Adds an environment variable for the process (and its restarts).
    pub fn with_env(mut self, key: &str, value: &str) -> ProcessSuggester {
        self.jail.env = self.jail.env.with(key, value);
        self
    }

    /// Sets the limit for `initialize` (default [`DEFAULT_INIT_TIMEOUT`]).
    pub fn with_init_timeout(mut self, timeout: Duration) -> ProcessSuggester {
        self.init_timeout = timeout;
        self
    }

    /// Runs the process (and its restarts) in `sandbox`.
    pub fn with_sandbox(mut self, sandbox: Sandbox) -> ProcessSuggester {
        self.jail = self.jail.with_sandbox(sandbox);
        self
    }

    /// Runs the process (and its restarts) in `jail`, keeping the variables set so far.
    pub fn with_jail(mut self, jail: Jail) -> ProcessSuggester {
        let set = std::mem::take(&mut self.jail.env.set);
        self.jail = jail;
        self.jail.env.set.extend(set);
        self
    }

    /// After `failures` process failures in a row (crash, timeout, garbage), the
    /// rest of the trajectory is not asked (default [`DEFAULT_GIVE_UP_AFTER`]).
    pub fn with_give_up_after(mut self, failures: u32) -> ProcessSuggester {
        self.failures = FailureStreak::new(failures);
        self
    }

    /// A suggester from a shell command line (`cmd:python3 my_sut.py`).
    pub fn from_shell(command_line: &str, timeout: Duration) -> ProcessSuggester {
        let argv = vec!["sh".to_string(), "-c".to_string(), command_line.to_string()];
        ProcessSuggester::new(argv, timeout)
    }

    /// How many times the process was restarted after a failure.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    fn spawn(&mut self, worktree: Option<&str>) -> Result<(), SuggestError> {
        // Before `initialize` names a worktree: the sandbox's scratch, or the root
        // (never nextedit's own directory, which may be the repository).
        let cwd = match (worktree, &self.jail.sandbox) {
            (Some(worktree), _) => PathBuf::from(worktree),
            (None, Some(sandbox)) => sandbox.scratch.clone(),
            (None, None) => PathBuf::from("/"),
        };
        let spawn_error = |source| SuggestError::Spawn {
            command: self.command.join(" "),
            source,
        };
        let (mut command, pending) = self
            .jail
            .command(&self.command, Path::new(&cwd))
            .map_err(|e| spawn_error(std::io::Error::other(e.to_string())))?;
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let (mut child, tree) = pending.spawn(&mut command).map_err(spawn_error)?;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = crossbeam_channel::bounded(LINES_AHEAD);
        std::thread::spawn(move || read_lines(stdout, &tx));
        let (writer, to_write) = crossbeam_channel::bounded::<Vec<u8>>(1);
        let (done, written) = crossbeam_channel::bounded(1);
        std::thread::spawn(move || {
            for line in to_write {
                let ok = stdin.write_all(&line).and_then(|()| stdin.flush()).is_ok();
                if done.send(ok).is_err() || !ok {
                    return;
                }
            }
        });
        let stderr_tail: Arc<Mutex<VecDeque<String>>> = Arc::default();
        {
            let tail = stderr_tail.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let mut tail = tail.lock().expect("stderr tail lock");
                    if tail.len() == STDERR_TAIL_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            });
        }
        self.running = Some(Running {
            child,
            tree,
            writer,
            written,
            lines,
            stderr_tail,
        });
        Ok(())
    }

    /// Makes sure a process is running and initialized (restarting after a failure).
    fn ensure_running(&mut self) -> Result<(), SuggestError> {
        if self.running.is_some() {
            return Ok(());
        }
        let worktree = self.initialized_with.as_ref().map(|p| p.worktree.clone());
        self.spawn(worktree.as_deref())?;
        if let Some(params) = self.initialized_with.clone() {
            self.restarts += 1;
            self.raw_call::<_, InitializeResult>("initialize", &params)?;
        }
        Ok(())
    }

    fn raw_call<P: Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, SuggestError> {
        let mut result = self.exchange(method, params);
        if let Err(error) = &result
            && error.kills_process()
        {
            // A tree killed for a limit fails as that limit, whatever the call saw.
            if let Some(limit) = self.running.as_ref().and_then(|r| r.tree.limit()) {
                result = Err(SuggestError::Limit {
                    method: method.to_string(),
                    limit,
                });
            }
            // Whatever state it is in, it cannot be trusted any more.
            self.running = None;
        }
        result
    }

    fn exchange<P: Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, SuggestError> {
        let id = self.ids.next_id();
        let timeout = if method == "initialize" {
            self.init_timeout
        } else {
            self.timeout
        };
        let deadline = Instant::now() + timeout;
        let timed_out = || SuggestError::Timeout {
            method: method.to_string(),
            after: timeout,
        };
        let running = self.running.as_mut().expect("ensure_running was called");
        let mut line = jsonrpc::request(id, method, params);
        line.push(b'\n');
        if running.writer.send(line).is_err() {
            return Err(crashed(method, running));
        }
        match running.written.recv_deadline(deadline) {
            Ok(true) => {}
            Ok(false) | Err(RecvTimeoutError::Disconnected) => {
                return Err(crashed(method, running));
            }
            Err(RecvTimeoutError::Timeout) => return Err(timed_out()),
        }
        let mut exited = false;
        loop {
            // Checked before every line: a flood of other lines never holds a call.
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out());
            }
            match running.lines.recv_timeout(left.min(EXIT_POLL)) {
                Ok(Line::Text(text)) => {
                    let message: Value =
                        serde_json::from_str(&text).map_err(|_| SuggestError::BadJson {
                            method: method.to_string(),
                            line: text.chars().take(200).collect(),
                        })?;
                    let response = Response::from_message(message);
                    if response.request_id() != Some(id) {
                        // Notifications or stale answers: not ours.
                        continue;
                    }
                    let result = response.outcome.map_err(|error| SuggestError::Response {
                        method: method.to_string(),
                        code: error.code,
                        message: error.message,
                    })?;
                    return serde_json::from_value(result).map_err(|e| SuggestError::BadResult {
                        method: method.to_string(),
                        reason: e.to_string(),
                    });
                }
                Ok(Line::TooLong(bytes)) => {
                    return Err(SuggestError::HugeOutput {
                        method: method.to_string(),
                        bytes,
                    });
                }
                Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => {
                    return Err(crashed(method, running));
                }
                // The process is gone but something it started holds its stdout open:
                // a crash, not a time-out (one more poll reads what it wrote last).
                Err(RecvTimeoutError::Timeout) if exited => {
                    return Err(crashed(method, running));
                }
                Err(RecvTimeoutError::Timeout) => {
                    exited = matches!(running.child.try_wait(), Ok(Some(_)));
                }
            }
        }
    }

    fn call<P: Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, SuggestError> {
        self.failures.check()?;
        let result = self
            .ensure_running()
            .and_then(|()| self.raw_call(method, params));
        self.count(&result);
        result
    }

    /// Counts process failures in a row (error answers do not count: the process works).
    fn count<R>(&mut self, result: &Result<R, SuggestError>) {
        match result {
            Err(error) if error.kills_process() => self.failures.fail(error),
            _ => self.failures.reset(),
        }
    }
}

fn crashed(method: &str, running: &mut Running) -> SuggestError {
    // Give the process a moment to finish dying so its status and stderr are complete.
    let deadline = Instant::now() + Duration::from_millis(500);
    let status = process::wait_until(&mut running.child, deadline)
        .ok()
        .flatten();
    std::thread::sleep(Duration::from_millis(20));
    let stderr: Vec<String> = running
        .stderr_tail
        .lock()
        .expect("stderr tail lock")
        .iter()
        .cloned()
        .collect();
    SuggestError::Crashed {
        method: method.to_string(),
        status: status.map_or("still running".to_string(), |s| s.to_string()),
        stderr: stderr.join("\n"),
    }
}

fn read_lines(stdout: impl Read, tx: &crossbeam_channel::Sender<Line>) {
    let mut reader = BufReader::with_capacity(1 << 16, stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut too_long = 0usize;
        loop {
            let buf = match reader.fill_buf() {
                Ok([]) | Err(_) => {
                    let _ = tx.send(Line::Eof);
                    return;
                }
                Ok(buf) => buf,
            };
            let (chunk, consumed, found) = match memchr::memchr(b'\n', buf) {
                Some(i) => (&buf[..i], i + 1, true),
                None => (buf, buf.len(), false),
            };
            if too_long > 0 || line.len() + chunk.len() > MAX_LINE_BYTES {
                too_long += line.len() + chunk.len();
                line.clear();
            } else {
                line.extend_from_slice(chunk);
            }
            reader.consume(consumed);
            if found {
                break;
            }
        }
        let message = if too_long > 0 {
            Line::TooLong(too_long)
        } else {
            Line::Text(
                String::from_utf8_lossy(&line)
                    .trim_end_matches('\r')
                    .to_string(),
            )
        };
        if message_is_blank(&message) {
            continue;
        }
        if tx.send(message).is_err() {
            return;
        }
    }
}

fn message_is_blank(line: &Line) -> bool {
    matches!(line, Line::Text(text) if text.trim().is_empty())
}

impl Suggester for ProcessSuggester {
    fn name(&self) -> String {
        format!(
            "cmd:{}",
            self.command.last().map(String::as_str).unwrap_or("")
        )
    }

    fn initialize(&mut self, params: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        // A live process is reused for the next trajectory: a suggester that loads a
        // model loads it once per run, not once per commit. A new trajectory starts
        // with a clean failure count.
        self.initialized_with = None;
        self.failures.reset();
        let result = match self.running {
            Some(_) => Ok(()),
            None => self.spawn(Some(&params.worktree)),
        }
        .and_then(|()| self.raw_call("initialize", params));
        self.count(&result);
        self.initialized_with = Some(params.clone());
        result
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        self.call("suggest", params)
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        self.call("generate", params)
    }

    fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        match self.call("complete", params) {
            // JSON-RPC's "method not found": a suggester written before `complete`.
            Err(SuggestError::Response { code, .. }) if code == METHOD_NOT_FOUND => {
                Err(SuggestError::Unsupported {
                    method: "complete".to_string(),
                    suggester: self.name(),
                })
            }
            other => other,
        }
    }

    fn shutdown(&mut self) {
        if self.running.is_some() {
            let _ = self.raw_call::<_, Value>("shutdown", &Value::Null);
        }
        self.running = None;
        self.initialized_with = None;
    }
}
