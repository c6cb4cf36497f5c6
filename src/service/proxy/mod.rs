//! The recording proxy: editor ⇄ nextedit ⇄ language server over stdio.
//!
//! Three threads move bytes: editor→server, server→editor and (inherited) server
//! stderr. Each reads a chunk, puts each frame on the session's [`timeline`]
//! (stamped as it is read, so the record is causal), writes the exact bytes to the
//! other side, then wakes the recorder thread. The recorder (`tap`) parses, tracks
//! documents and batches SQLite transactions; when it is slow or broken, copies are
//! dropped and counted, never the forwarding.
//!
//! The server runs in its own process group (the proxy is a child subreaper). Exit is
//! supervised (editor EOF → grace period → kill; signals are passed on); then the
//! server's whole tree is ended and the proxy waits for the recorder to finish, with
//! progress on stderr after a second.
//!
//! Architecture invariant: the bytes written to each side are exactly the bytes
//! read from the other, in order, except `$/nextedit/*` notifications from the
//! editor, which the proxy consumes.

mod sink;
mod spill;
mod tap;
pub mod timeline;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use crate::base::sys::process::{self, Signal};
use crate::core::lsp::Direction;
use crate::core::lsp::framing::{Chunk, FrameDecoder};
use crate::core::record::SIGNAL_PREFIX;
use crate::core::record::privacy::PrivacyFilter;

pub use sink::TapSettings;
pub use tap::run_recorder;
use timeline::Timeline;

/// Everything the proxy needs to run.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Server argv (program first).
    pub server: Vec<String>,
    /// Database to record into; `None` forwards without recording.
    pub db: Option<PathBuf>,
    /// Workspace root, when known up front.
    pub workspace: Option<PathBuf>,
    /// Store the editor's raw message bytes as well as the decoded events.
    pub record_raw: bool,
    /// Store the server's raw message bytes too (they may quote excluded files).
    pub record_server_raw: bool,
    /// Files never recorded.
    pub privacy: PrivacyFilter,
    /// How long the server may take to exit after the editor closed the pipe.
    pub exit_grace: Duration,
}

/// The server's stdin, which the forwarding threads share and close.
type ServerStdin = Arc<Mutex<Option<ChildStdin>>>;

enum Lifecycle {
    EditorClosed,
    ServerExited(ExitStatus),
    Signal(i32),
}

/// Errors that stop the proxy before any forwarding started.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// No server command.
    #[error("no language server command given (usage: nextedit proxy -- <server> [args…])")]
    NoServer,
    /// The server could not be spawned.
    #[error("cannot start language server `{program}`: {source}")]
    Spawn {
        /// Program name.
        program: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
    /// Signal handlers could not be installed.
    #[error("cannot install signal handlers: {0}")]
    Signals(#[source] std::io::Error),
}

/// Runs the proxy on this process's stdin/stdout until the session ends; returns
/// the exit code to use (the server's, or 128 + signal).
pub fn run(config: ProxyConfig) -> Result<i32, ProxyError> {
    let program = config.server.first().ok_or(ProxyError::NoServer)?.clone();
    let start = Instant::now();
    let mut child = start_server(&program, &config.server[1..])?;
    let child_stdin = Arc::new(Mutex::new(child.stdin.take()));
    let child_stdout = child.stdout.take().expect("stdout is piped");
    let (timeline, recorder) = match &config.db {
        Some(db) => {
            let (timeline, recorder) = start_recording(&config, db, start);
            (Some(timeline), Some(recorder))
        }
        None => (None, None),
    };
    let (life_tx, life_rx) = crossbeam_channel::unbounded::<Lifecycle>();
    forward_editor(timeline.clone(), child_stdin.clone(), life_tx.clone());
    let server_to_editor = forward_server(
        child_stdout,
        timeline.clone(),
        child_stdin.clone(),
        life_tx.clone(),
    );
    watch_signals(life_tx.clone())?;
    let server = wait_for_server(child, life_tx);
    let (status, signalled) = supervise(&life_rx, &server, &child_stdin, config.exit_grace);
    // The server is gone: so is everything it started, which also releases the
    // pipe a helper may have inherited.
    process::end_tree(server.pid);
    // Let the last server output reach the editor, however slowly it reads
    // (bounded, for an editor that stopped reading without closing).
    join_with_timeout(server_to_editor, Duration::from_secs(30));
    if let (Some(timeline), Some(recorder)) = (timeline, recorder) {
        let end = match signalled {
            Some(signal) => crate::store::SessionEnd::Signalled {
                signal,
                code: status.and_then(|s| exit_code(&s)),
            },
            None => crate::store::SessionEnd::Exited(status.and_then(|s| exit_code(&s))),
        };
        finish_recording(&timeline, recorder, end);
    }
    Ok(match (status, signalled) {
        (Some(status), _) => exit_code(&status).unwrap_or(1),
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    })
}

/// Starts the language server `program` with `args`, its stdin and stdout piped.
fn start_server(program: &str, args: &[String]) -> Result<Child, ProxyError> {
    // Orphaned descendants of the server become this process's children, so
    // `process::end_tree` finds those that left the server's process group; failing
    // only means fewer are found.
    process::become_subreaper();
    // Its own process group: a server started through a wrapper (`sh -c`, `npx`,
    // launcher scripts) leaves helpers behind, and the whole group is ended with it.
    process::in_own_group(&mut Command::new(program))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|source| ProxyError::Spawn {
            program: program.to_string(),
            source,
        })
}

/// The session's timeline and the recorder thread writing it into `db`.
fn start_recording(
    config: &ProxyConfig,
    db: &Path,
    start: Instant,
) -> (Arc<Timeline>, JoinHandle<()>) {
    let timeline = Arc::new(Timeline::new(start));
    let settings = TapSettings {
        db: db.to_path_buf(),
        workspace: config.workspace.clone(),
        server_command: config.server.clone(),
        record_raw: config.record_raw,
        record_server_raw: config.record_server_raw,
        privacy: config.privacy.clone(),
    };
    let handle = {
        let timeline = timeline.clone();
        std::thread::Builder::new()
            .name("nextedit-recorder".into())
            .spawn(move || tap::run_recorder(settings, &timeline))
            .expect("spawn recorder thread")
    };
    (timeline, handle)
}

/// The editor→server thread; when the editor closes, the server's stdin is closed so
/// it can finish on its own.
fn forward_editor(timeline: Option<Arc<Timeline>>, stdin: ServerStdin, life: Sender<Lifecycle>) {
    std::thread::Builder::new()
        .name("nextedit-editor-to-server".into())
        .spawn(move || {
            let mut writer = SharedStdin(stdin.clone());
            pump(
                std::io::stdin().lock(),
                &mut writer,
                Direction::ClientToServer,
                timeline.as_deref(),
            );
            // The editor is gone: closing the server's stdin lets it finish on its own.
            stdin.lock().expect("stdin lock").take();
            if let Some(timeline) = &timeline {
                timeline.close_editor();
            }
            let _ = life.send(Lifecycle::EditorClosed);
        })
        .expect("spawn forwarding thread");
}

/// The server→editor thread; an editor that stops reading counts as the editor closing.
fn forward_server(
    stdout: ChildStdout,
    timeline: Option<Arc<Timeline>>,
    stdin: ServerStdin,
    life: Sender<Lifecycle>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("nextedit-server-to-editor".into())
        .spawn(move || {
            let broken = pump(
                stdout,
                &mut std::io::stdout().lock(),
                Direction::ServerToClient,
                timeline.as_deref(),
            );
            if broken {
                // The editor stopped reading: treat it like the editor closing.
                stdin.lock().expect("stdin lock").take();
                if let Some(timeline) = &timeline {
                    timeline.close_editor();
                }
                let _ = life.send(Lifecycle::EditorClosed);
            }
        })
        .expect("spawn forwarding thread")
}

/// The thread that waits for the server to exit and says so on `life`.
fn wait_for_server(mut child: Child, life: Sender<Lifecycle>) -> ServerProcess {
    let pid = child.id();
    let reaped = Arc::new(AtomicBool::new(false));
    {
        let reaped = reaped.clone();
        std::thread::Builder::new()
            .name("nextedit-server-wait".into())
            .spawn(move || {
                // Blocks until the server exits: an idle session costs no wakeups.
                if let Ok(status) = child.wait() {
                    reaped.store(true, Ordering::SeqCst);
                    let _ = life.send(Lifecycle::ServerExited(status));
                }
            })
            .expect("spawn wait thread");
    }
    ServerProcess { pid, reaped }
}

/// Puts the session's `end` on the timeline and waits until the recording is written
/// completely (the editor has its answers), however long that takes, with progress
/// after a second; then says how many frames were read too late to be recorded (see
/// [`timeline`]).
fn finish_recording(timeline: &Timeline, recorder: JoinHandle<()>, end: crate::store::SessionEnd) {
    timeline.end(end);
    let waiting = Instant::now();
    let mut next_note = Duration::from_secs(1);
    while !recorder.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
        if waiting.elapsed() >= next_note {
            eprintln!(
                "nextedit: writing the recording: {} frames still queued ({:.0}s)",
                timeline.queued(),
                waiting.elapsed().as_secs_f64()
            );
            next_note += Duration::from_secs(5);
        }
    }
    if recorder.join().is_err() {
        eprintln!("nextedit: the recorder stopped (a bug, above): the session may be incomplete");
    }
    let late = timeline.late();
    if late.read > 0 {
        eprintln!(
            "nextedit: {} frames were read after the session's end and not recorded ({} of them counted in the session's dropped)",
            late.read, late.counted
        );
    }
}

/// Waits for the session to end; returns the server's status and the signal that ended us, if any.
fn supervise(
    life: &Receiver<Lifecycle>,
    server: &ServerProcess,
    child_stdin: &ServerStdin,
    grace: Duration,
) -> (Option<ExitStatus>, Option<i32>) {
    let mut deadline: Option<Instant> = None;
    let mut signalled = None;
    let mut killed = false;
    loop {
        let event = match deadline {
            Some(at) => life.recv_deadline(at).ok(),
            None => life.recv().ok(),
        };
        match event {
            Some(Lifecycle::ServerExited(status)) => return (Some(status), signalled),
            Some(Lifecycle::EditorClosed) => {
                deadline.get_or_insert(Instant::now() + grace);
            }
            Some(Lifecycle::Signal(signal)) => {
                signalled = Some(signal);
                child_stdin.lock().expect("stdin lock").take();
                server.signal(Signal::TERM);
                deadline = Some(Instant::now() + grace.min(Duration::from_secs(2)));
            }
            None if !killed => {
                // Grace period over: the server did not exit by itself.
                server.signal(Signal::KILL);
                killed = true;
                deadline = Some(Instant::now() + Duration::from_secs(2));
            }
            None => return (None, signalled),
        }
    }
}

/// The server process, signalled by pid while another thread waits on it.
struct ServerProcess {
    pid: u32,
    /// Set once the wait thread has reaped it: its pid may then belong to another process.
    reaped: Arc<AtomicBool>,
}

impl ServerProcess {
    fn signal(&self, signal: Signal) {
        // Not once reaped: its pid may then belong to another process.
        if self.reaped.load(Ordering::SeqCst) {
            return;
        }
        process::signal(self.pid, signal);
    }
}

fn watch_signals(life: Sender<Lifecycle>) -> Result<(), ProxyError> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
        .map_err(ProxyError::Signals)?;
    std::thread::Builder::new()
        .name("nextedit-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if life.send(Lifecycle::Signal(signal)).is_err() {
                    return;
                }
            }
        })
        .expect("spawn signal thread");
    Ok(())
}

/// Exit code of a finished process: its code, or 128 + the signal that killed it.
pub fn exit_code(status: &ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

fn join_with_timeout(handle: std::thread::JoinHandle<()>, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !handle.is_finished() {
        if Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = handle.join();
}

/// Writes to the server's stdin, which another thread may close at any time.
struct SharedStdin(ServerStdin);

impl Write for SharedStdin {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.lock().expect("stdin lock").as_mut() {
            Some(stdin) => stdin.write(buf),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self.0.lock().expect("stdin lock").as_mut() {
            Some(stdin) => stdin.write_all(buf),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.lock().expect("stdin lock").as_mut() {
            Some(stdin) => stdin.flush(),
            None => Ok(()),
        }
    }
}

/// Moves bytes from `input` to `output` chunk by chunk until EOF; returns true if
/// `output` broke (the reader on the other side went away). Each frame goes on the
/// `timeline` (when recording) as it is read, before it is forwarded.
fn pump(
    mut input: impl Read,
    output: &mut impl Write,
    dir: Direction,
    timeline: Option<&Timeline>,
) -> bool {
    let mut decoder = FrameDecoder::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut broken = false;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        decoder.feed(&buf[..n]);
        while let Some(chunk) = decoder.next_chunk() {
            let consumed = dir == Direction::ClientToServer && is_editor_signal(&chunk);
            let chunk = Arc::new(chunk);
            if let Some(timeline) = timeline {
                timeline.stamp(dir, &chunk, consumed);
            }
            if !consumed && !broken && output.write_all(chunk.bytes()).is_err() {
                broken = true;
            }
        }
        if !broken && output.flush().is_err() {
            broken = true;
        }
        if let Some(timeline) = timeline {
            timeline.wake();
        }
        if broken && dir == Direction::ServerToClient {
            // Nobody reads the server's output any more.
            return true;
        }
    }
    if let Some(rest) = decoder.finish() {
        let rest = Arc::new(rest);
        if let Some(timeline) = timeline {
            timeline.stamp(dir, &rest, false);
        }
        if !broken {
            let _ = output.write_all(rest.bytes()).and_then(|()| output.flush());
        }
        if let Some(timeline) = timeline {
            timeline.wake();
        }
    }
    broken
}

/// Whether a chunk is a `$/nextedit/…` notification (consumed, not forwarded).
fn is_editor_signal(chunk: &Chunk) -> bool {
    let Some(body) = chunk.body() else {
        return false;
    };
    if memchr::memmem::find(body, SIGNAL_PREFIX.as_bytes()).is_none() {
        return false;
    }
    match crate::core::lsp::Envelope::parse(body) {
        Ok(envelope) => {
            envelope.kind == crate::core::lsp::MessageKind::Notification
                && envelope
                    .method
                    .as_deref()
                    .is_some_and(|m| m.starts_with(SIGNAL_PREFIX))
        }
        Err(_) => false,
    }
}
