//! A small synchronous LSP client: spawns a server (or the proxy), sends requests
//! and waits for their responses, answers the server's own requests with neutral
//! replies. Used by tests, by LSP-backed analysis and by benchmarks. Messages are
//! built and decoded by [`crate::base::jsonrpc`]; this file is the transport (Content-Length
//! frames over the server's stdin and stdout) and the process.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use serde_json::{Value, json};

use crate::base::jsonrpc::{self, Incoming, RequestId, RequestIds, Response};
use crate::base::sys::process;
use crate::core::lsp::Method;
use crate::core::lsp::framing::{Chunk, FrameDecoder, encode_frame};
use crate::core::record::uri::path_to_uri;

/// Errors of the LSP client.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server process could not be started.
    #[error("cannot start language server `{command}`: {source}")]
    Spawn {
        /// The program.
        command: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// Writing to the server failed (it probably exited).
    #[error("cannot write to language server: {0}")]
    Write(#[source] std::io::Error),
    /// No response within the timeout.
    #[error("no response to `{method}` within {timeout:?}")]
    Timeout {
        /// Request method.
        method: String,
        /// How long we waited.
        timeout: Duration,
    },
    /// The server's output ended.
    #[error("language server closed its output before answering `{0}`")]
    Closed(String),
    /// The server answered with a JSON-RPC error.
    #[error("`{method}` failed with code {code}: {message}")]
    Response {
        /// Request method.
        method: String,
        /// JSON-RPC error code.
        code: i64,
        /// Error message.
        message: String,
    },
}

/// Requests waiting for their answers, and whether the server's output has ended (then
/// no request may wait: nothing would ever answer or wake it).
#[derive(Default)]
struct Waiting {
    senders: HashMap<RequestId, Sender<Response>>,
    closed: bool,
}

type Pending = Arc<Mutex<Waiting>>;

/// Everything the client saw, for byte-exactness checks.
#[derive(Debug, Default, Clone)]
pub struct Transcript {
    /// Bytes written to the server's stdin.
    pub sent: Vec<u8>,
    /// Bytes read from the server's stdout.
    pub received: Vec<u8>,
}

/// A running language server with a client attached.
pub struct LspClient {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    ids: RequestIds,
    pending: Pending,
    notifications: Receiver<Value>,
    /// `None` when the client keeps no transcript (a long-running adapter).
    transcript: Arc<Mutex<Option<Transcript>>>,
    reader: Option<JoinHandle<()>>,
}

impl LspClient {
    /// Spawns `command` (stdin/stdout are taken over; stderr is left as configured).
    pub fn spawn(command: Command) -> Result<LspClient, ClientError> {
        LspClient::spawn_with(command, true)
    }

    /// A client of a server already started with piped stdin and stdout (the `lsp:`
    /// suggester starts it confined, `sys::jail`); keeps no transcript, so memory stays
    /// flat however long the server runs.
    pub fn from_child(child: Child) -> LspClient {
        LspClient::attach(child, false)
    }

    fn spawn_with(mut command: Command, keep_transcript: bool) -> Result<LspClient, ClientError> {
        let program = command.get_program().to_string_lossy().into_owned();
        let child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|source| ClientError::Spawn {
                command: program,
                source,
            })?;
        Ok(LspClient::attach(child, keep_transcript))
    }

    fn attach(mut child: Child, keep_transcript: bool) -> LspClient {
        let stdin = Arc::new(Mutex::new(child.stdin.take()));
        let stdout = child.stdout.take().expect("stdout is piped");
        let pending: Pending = Arc::default();
        let transcript = Arc::new(Mutex::new(keep_transcript.then(Transcript::default)));
        let (note_tx, notifications) = crossbeam_channel::unbounded();
        let reader = {
            let pending = pending.clone();
            let stdin = stdin.clone();
            let transcript = transcript.clone();
            std::thread::spawn(move || read_loop(stdout, stdin, pending, note_tx, transcript))
        };
        LspClient {
            child,
            stdin,
            ids: RequestIds::default(),
            pending,
            notifications,
            transcript,
            reader: Some(reader),
        }
    }

    /// Writes exact bytes to the server (for tests of odd framing).
    pub fn send_raw(&self, bytes: &[u8]) -> Result<(), ClientError> {
        write_locked(&self.stdin, &self.transcript, bytes)
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        self.send_raw(&encode_frame(&jsonrpc::notification(method, params)))
    }

    /// Sends a request without waiting; returns its id and a receiver for the response.
    pub fn start_request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(RequestId, Receiver<Response>), ClientError> {
        let id = self.ids.next_id();
        let (tx, rx) = crossbeam_channel::bounded(1);
        {
            let mut pending = self.pending.lock().expect("pending lock");
            if pending.closed {
                return Err(ClientError::Closed(method.to_string()));
            }
            pending.senders.insert(id, tx);
        }
        self.send_raw(&encode_frame(&jsonrpc::request(id, method, params)))?;
        Ok((id, rx))
    }

    /// Sends a request and waits for its result.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, ClientError> {
        let (_, rx) = self.start_request(method, params)?;
        let response = match rx.recv_timeout(timeout) {
            Ok(response) => response,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                return Err(ClientError::Timeout {
                    method: method.to_string(),
                    timeout,
                });
            }
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                return Err(ClientError::Closed(method.to_string()));
            }
        };
        response.outcome.map_err(|error| ClientError::Response {
            method: method.to_string(),
            code: error.code,
            message: error.message,
        })
    }

    /// `initialize` with a root folder and broad client capabilities, then `initialized`.
    pub fn initialize(&mut self, root: &Path, timeout: Duration) -> Result<Value, ClientError> {
        let root_uri = path_to_uri(root);
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "nextedit-client", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": root.to_string_lossy(),
            "workspaceFolders": [{"uri": root_uri, "name": root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": true, "workspaceFolders": true},
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "hover": {"contentFormat": ["markdown", "plaintext"]},
                    "definition": {"linkSupport": false},
                    "references": {},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "publishDiagnostics": {}
                },
                "window": {"workDoneProgress": true}
            },
            "initializationOptions": {}
        });
        let result = self.request(Method::Initialize.name(), params, timeout)?;
        self.notify(Method::Initialized.name(), json!({}))?;
        Ok(result)
    }

    /// The next server notification (or `client/registerCapability` request, already
    /// answered: what a server registers is for its user to read), waiting up to `timeout`.
    pub fn next_notification(&self, timeout: Duration) -> Option<Value> {
        self.notifications.recv_timeout(timeout).ok()
    }

    /// Waits for a notification with this method (others are discarded).
    pub fn wait_for_notification(&self, method: &str, timeout: Duration) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let note = self.notifications.recv_timeout(left).ok()?;
            if note.get("method").and_then(Value::as_str) == Some(method) {
                return Some(note);
            }
        }
    }

    /// A copy of all bytes exchanged so far.
    pub fn transcript(&self) -> Transcript {
        self.transcript
            .lock()
            .expect("transcript lock")
            .clone()
            .unwrap_or_default()
    }

    /// Closes the server's stdin (the editor went away) without shutdown.
    pub fn close_stdin(&self) {
        self.stdin.lock().expect("stdin lock").take();
    }

    /// Whether the server still runs and its output is open (a server kept across
    /// many uses is restarted when this turns false).
    pub fn is_alive(&mut self) -> bool {
        let open = !self.pending.lock().expect("pending lock").closed;
        open && matches!(self.child.try_wait(), Ok(None))
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `shutdown`, `exit`, then waits for the process (killing it after `timeout`).
    pub fn shutdown(&mut self, timeout: Duration) -> Result<ExitStatus, ClientError> {
        let shutdown = self.request(Method::Shutdown.name(), Value::Null, timeout);
        let _ = self.notify(Method::Exit.name(), Value::Null);
        self.close_stdin();
        let status = self.wait(timeout);
        shutdown?;
        Ok(status)
    }

    /// Waits for the process to exit, killing it after `timeout`.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        let status = match process::wait_until(&mut self.child, deadline) {
            Ok(Some(status)) => status,
            _ => {
                let _ = self.child.kill();
                self.child.wait().expect("wait after kill")
            }
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        status
    }
}

impl Drop for LspClient {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            process::end(&mut self.child);
        }
    }
}

fn write_locked(
    stdin: &Mutex<Option<ChildStdin>>,
    transcript: &Mutex<Option<Transcript>>,
    bytes: &[u8],
) -> Result<(), ClientError> {
    let mut guard = stdin.lock().expect("stdin lock");
    let Some(stdin) = guard.as_mut() else {
        return Err(ClientError::Write(std::io::Error::from(
            std::io::ErrorKind::BrokenPipe,
        )));
    };
    stdin
        .write_all(bytes)
        .and_then(|()| stdin.flush())
        .map_err(ClientError::Write)?;
    if let Some(transcript) = transcript.lock().expect("transcript lock").as_mut() {
        transcript.sent.extend_from_slice(bytes);
    }
    Ok(())
}

fn read_loop(
    mut stdout: impl Read,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    pending: Pending,
    notifications: Sender<Value>,
    transcript: Arc<Mutex<Option<Transcript>>>,
) {
    let mut decoder = FrameDecoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(transcript) = transcript.lock().expect("transcript lock").as_mut() {
            transcript.received.extend_from_slice(&buf[..n]);
        }
        decoder.feed(&buf[..n]);
        while let Some(chunk) = decoder.next_chunk() {
            let Chunk::Frame { .. } = &chunk else {
                continue;
            };
            let Ok(message) = serde_json::from_slice::<Value>(chunk.body().expect("frame")) else {
                continue;
            };
            match Incoming::decode(message) {
                Incoming::Request {
                    id,
                    method,
                    message,
                } => {
                    let reply = server_request_reply(&Method::from_name(&method), &message);
                    let _ = write_locked(
                        &stdin,
                        &transcript,
                        &encode_frame(&jsonrpc::result_response(&id, reply)),
                    );
                    // Answered; what the server registered is for its user to read.
                    if method == "client/registerCapability" {
                        let _ = notifications.send(message);
                    }
                }
                Incoming::Notification { message, .. } => {
                    let _ = notifications.send(message);
                }
                Incoming::Response(response) => {
                    if let Some(id) = response.request_id()
                        && let Some(tx) = pending.lock().expect("pending lock").senders.remove(&id)
                    {
                        let _ = tx.send(response);
                    }
                }
                Incoming::Other => {}
            }
        }
    }
    // Dropping the senders wakes every waiter with `Disconnected`; later requests fail
    // at once.
    let mut pending = pending.lock().expect("pending lock");
    pending.senders.clear();
    pending.closed = true;
}

/// Neutral answers to server→client requests, so servers never wait on us.
fn server_request_reply(method: &Method, message: &Value) -> Value {
    match method {
        Method::Configuration => {
            let n = message
                .pointer("/params/items")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Value::Array(vec![Value::Null; n])
        }
        Method::WorkspaceFolders => Value::Array(Vec::new()),
        Method::ApplyEdit => json!({"applied": false}),
        _ => Value::Null,
    }
}
