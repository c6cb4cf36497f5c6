//! A suggester that is a separate process speaking the line-delimited JSON-RPC protocol.
//!
//! Every call has a timeout. A suggester that crashes, hangs, prints something
//! that is not JSON or a line larger than [`MAX_LINE_BYTES`] fails that call with a
//! [`SuggestError`]; the process is killed and restarted (and re-initialized) on
//! the next call, so one bad step never ends a run.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult,
};
use super::{SuggestError, Suggester};

/// Longest line accepted from a suggester.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
/// Process groups of the suggesters alive in this process, for [`kill_all`].
static LIVE_GROUPS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// Kills every suggester process group still alive (for signal handlers, which exit
/// without running destructors).
pub fn kill_all() {
    for pgid in LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default() {
        // SAFETY: kill(2) on process groups this process created and has not reaped.
        unsafe {
            libc::kill(-(pgid as libc::pid_t), libc::SIGKILL);
        }
    }
}

/// Default limit for `initialize`.
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
    stdin: ChildStdin,
    lines: Receiver<Line>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        let pgid = self.child.id();
        if let Ok(mut groups) = LIVE_GROUPS.lock() {
            groups.retain(|&g| g != pgid);
        }
        // The suggester runs in its own process group (a shell and what it started):
        // end all of it, not just the shell.
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: kill(2) on the process group of a child we have not reaped yet.
            unsafe {
                libc::kill(-(self.child.id() as libc::pid_t), libc::SIGKILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A suggester process (`cmd:…`).
pub struct ProcessSuggester {
    command: Vec<String>,
    timeout: Duration,
    /// `initialize` may load a model: it gets its own, longer limit.
    init_timeout: Duration,
    running: Option<Running>,
    initialized_with: Option<InitializeParams>,
    next_id: u64,
    restarts: u32,
    /// Extra environment for the process (e.g. `NEXTEDIT_REPLAY_DB`).
    env: Vec<(String, String)>,
}

impl ProcessSuggester {
    /// A suggester started as `command` (argv), with a per-call timeout.
    pub fn new(command: Vec<String>, timeout: Duration) -> ProcessSuggester {
        ProcessSuggester {
            command,
            timeout,
            init_timeout: DEFAULT_INIT_TIMEOUT.max(timeout),
            running: None,
            initialized_with: None,
            next_id: 1,
            restarts: 0,
            env: Vec::new(),
        }
    }

    /// Adds an environment variable for the process (and its restarts).
    pub fn with_env(mut self, key: &str, value: &str) -> ProcessSuggester {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Sets the limit for `initialize` (default [`DEFAULT_INIT_TIMEOUT`]).
    pub fn with_init_timeout(mut self, timeout: Duration) -> ProcessSuggester {
        self.init_timeout = timeout;
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

    fn spawn(&mut self) -> Result<(), SuggestError> {
        let mut child = Command::new(&self.command[0])
            .args(&self.command[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SuggestError::Spawn {
                command: self.command.join(" "),
                source,
            })?;
        LIVE_GROUPS
            .lock()
            .expect("live groups lock")
            .push(child.id());
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || read_lines(stdout, &tx));
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
            stdin,
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
        self.spawn()?;
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
        let result = self.exchange(method, params);
        if let Err(error) = &result
            && error.kills_process()
        {
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
        let id = self.next_id;
        self.next_id += 1;
        let timeout = if method == "initialize" {
            self.init_timeout
        } else {
            self.timeout
        };
        let running = self.running.as_mut().expect("ensure_running was called");
        let mut line = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .expect("protocol messages serialise");
        line.push(b'\n');
        if running
            .stdin
            .write_all(&line)
            .and_then(|()| running.stdin.flush())
            .is_err()
        {
            return Err(crashed(method, running));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match running.lines.recv_timeout(left) {
                Ok(Line::Text(text)) => {
                    let message: Value =
                        serde_json::from_str(&text).map_err(|_| SuggestError::BadJson {
                            method: method.to_string(),
                            line: text.chars().take(200).collect(),
                        })?;
                    if message.get("id").and_then(Value::as_u64) != Some(id) {
                        // Notifications or stale answers: not ours.
                        continue;
                    }
                    if let Some(error) = message.get("error") {
                        return Err(SuggestError::Response {
                            method: method.to_string(),
                            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                            message: error
                                .get("message")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_string(),
                        });
                    }
                    let result = message.get("result").cloned().unwrap_or(Value::Null);
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
                Err(RecvTimeoutError::Timeout) => {
                    return Err(SuggestError::Timeout {
                        method: method.to_string(),
                        after: timeout,
                    });
                }
            }
        }
    }

    fn call<P: Serialize, R: DeserializeOwned>(
        &mut self,
        method: &str,
        params: &P,
    ) -> Result<R, SuggestError> {
        self.ensure_running()?;
        self.raw_call(method, params)
    }
}

fn crashed(method: &str, running: &mut Running) -> SuggestError {
    // Give the process a moment to finish dying so its status and stderr are complete.
    let deadline = Instant::now() + Duration::from_millis(500);
    let status = loop {
        match running.child.try_wait() {
            Ok(Some(status)) => break Some(status),
            _ if Instant::now() >= deadline => break None,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
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
        // model loads it once per run, not once per commit.
        self.initialized_with = None;
        if self.running.is_none() {
            self.spawn()?;
        }
        let result = self.raw_call("initialize", params);
        self.initialized_with = Some(params.clone());
        result
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        self.call("suggest", params)
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        self.call("generate", params)
    }

    fn shutdown(&mut self) {
        if self.running.is_some() {
            let _ = self.raw_call::<_, Value>("shutdown", &Value::Null);
        }
        self.running = None;
        self.initialized_with = None;
    }
}
