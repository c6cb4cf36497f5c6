//! The recorder thread: copies of frames in, batched SQLite transactions out.
//!
//! Failures never reach the forwarding threads. When the database cannot be
//! opened or written, one line goes to stderr; records are kept in memory (up to
//! a cap) and writing is retried, so a briefly locked database loses nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, TryRecvError};

use crate::lsp::Direction;
use crate::lsp::framing::Chunk;
use crate::record::privacy::{IGNORE_FILE, PrivacyFilter};
use crate::record::{Record, RecorderConfig, SessionFact, SessionRecorder};
use crate::store::{Database, NewSession, SessionEnd};

/// What the forwarding threads hand to the recorder.
#[derive(Debug)]
pub enum TapItem {
    /// A piece of the stream, already forwarded (or consumed).
    Chunk {
        /// Direction.
        dir: Direction,
        /// Nanoseconds since the proxy started.
        t_ns: u64,
        /// The bytes.
        chunk: Chunk,
        /// An editor signal the proxy did not forward.
        consumed: bool,
    },
    /// The session is over.
    End(SessionEnd),
}

impl TapItem {
    /// Bytes this item holds (for the in-flight budget).
    pub fn size(&self) -> usize {
        match self {
            TapItem::Chunk { chunk, .. } => chunk.bytes().len(),
            TapItem::End(_) => 0,
        }
    }
}

/// Recorder settings.
#[derive(Debug, Clone)]
pub struct TapSettings {
    /// Database file.
    pub db: PathBuf,
    /// Workspace root from the command line.
    pub workspace: Option<PathBuf>,
    /// Server argv.
    pub server_command: Vec<String>,
    /// Store raw bytes.
    pub record_raw: bool,
    /// Privacy filter before the workspace's ignore file is read.
    pub privacy: PrivacyFilter,
    /// Frames the forwarding threads could not hand over.
    pub dropped: Arc<AtomicU64>,
    /// Bytes handed over but not yet processed (shared with the forwarding threads).
    pub in_flight: Arc<AtomicUsize>,
}

/// How long a burst gathers before it is processed and committed (so a SIGKILL loses
/// at most about this much, plus the time to write it).
const FLUSH_INTERVAL: Duration = Duration::from_millis(20);
/// Records buffered while the database is unavailable before new ones are dropped.
const MAX_BUFFERED_RECORDS: usize = 500_000;
/// How often a failing database is retried.
const RETRY_INTERVAL: Duration = Duration::from_millis(500);

struct Sink {
    db: Option<Database>,
    session: Option<i64>,
    settings: TapSettings,
    buffer: Vec<Record>,
    failing: bool,
    last_attempt: Option<Instant>,
    lost: u64,
    git_head: Option<String>,
}

impl Sink {
    fn warn(&mut self, what: &str, error: &dyn std::fmt::Display) {
        if !self.failing {
            eprintln!(
                "nextedit: recording to {} paused: {what}: {error}; the language server session continues and recording is retried",
                self.settings.db.display()
            );
            self.failing = true;
        }
    }

    /// Opens the database and creates the session row, if not done yet.
    fn ensure_session(&mut self, force: bool) -> bool {
        if self.session.is_some() {
            return true;
        }
        if !force
            && self
                .last_attempt
                .is_some_and(|t| t.elapsed() < RETRY_INTERVAL)
        {
            return false;
        }
        self.last_attempt = Some(Instant::now());
        if self.db.is_none() {
            match Database::open(&self.settings.db) {
                Ok(db) => self.db = Some(db),
                Err(error) => {
                    self.warn("cannot open the database", &error);
                    return false;
                }
            }
        }
        let db = self.db.as_mut().expect("opened above");
        let new = NewSession {
            workspace: self
                .settings
                .workspace
                .as_ref()
                .map(|w| w.to_string_lossy().into_owned()),
            git_head: self.git_head.clone(),
            server_command: self.settings.server_command.clone(),
            pid: Some(std::process::id()),
            record_raw: self.settings.record_raw,
        };
        match db.begin_session(&new) {
            Ok(id) => {
                self.session = Some(id);
                true
            }
            Err(error) => {
                self.warn("cannot create the session", &error);
                false
            }
        }
    }

    fn flush(&mut self, force: bool) {
        if self.buffer.is_empty() {
            return;
        }
        if !force
            && self.failing
            && self
                .last_attempt
                .is_some_and(|t| t.elapsed() < RETRY_INTERVAL)
        {
            return;
        }
        if !self.ensure_session(force) {
            return;
        }
        self.last_attempt = Some(Instant::now());
        let session = self.session.expect("ensured");
        let db = self.db.as_mut().expect("ensured");
        match db.write_records(session, &self.buffer) {
            Ok(()) => {
                self.buffer.clear();
                if self.failing {
                    eprintln!(
                        "nextedit: recording to {} resumed",
                        self.settings.db.display()
                    );
                    self.failing = false;
                }
            }
            Err(error) => self.warn("cannot write", &error),
        }
    }

    fn push(&mut self, records: Vec<Record>) {
        if self.buffer.len() >= MAX_BUFFERED_RECORDS {
            self.lost += records.len() as u64;
            return;
        }
        self.buffer.extend(records);
    }
}

/// Runs until the channel closes or an [`TapItem::End`] arrives.
pub fn run_recorder(settings: TapSettings, rx: Receiver<TapItem>) {
    lower_priority();
    let mut privacy = settings.privacy.clone();
    let mut git_head = None;
    if let Some(workspace) = &settings.workspace {
        privacy = load_ignore_file(workspace, &privacy);
        git_head = git_head_of(workspace);
    }
    let mut recorder = SessionRecorder::new(RecorderConfig {
        record_raw: settings.record_raw,
        privacy,
        workspace: settings
            .workspace
            .as_ref()
            .map(|w| w.to_string_lossy().into_owned()),
    });
    let mut sink = Sink {
        db: None,
        session: None,
        settings,
        buffer: Vec::new(),
        failing: false,
        last_attempt: None,
        lost: 0,
        git_head,
    };
    // Create the session row right away so even an idle session is listed.
    sink.ensure_session(false);
    let mut end = SessionEnd::Exited(None);
    let mut done = false;
    while !done {
        // Idle: block until something arrives, so an idle session costs no wakeups.
        // With records waiting for a retry, poll instead.
        let first = if sink.buffer.is_empty() {
            match rx.recv() {
                Ok(item) => Some(item),
                Err(_) => break,
            }
        } else {
            None
        };
        // Then let the burst gather for one window and take all of it at once: one
        // wakeup per burst instead of one per message, so on a small machine the
        // recorder does not compete with the editor and the server message by message.
        std::thread::sleep(FLUSH_INTERVAL);
        let mut items: Vec<TapItem> = first.into_iter().collect();
        loop {
            match rx.try_recv() {
                Ok(item) => items.push(item),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    done = true;
                    break;
                }
            }
        }
        for item in items {
            match item {
                TapItem::End(how) => {
                    end = how;
                    done = true;
                }
                TapItem::Chunk {
                    dir,
                    t_ns,
                    chunk,
                    consumed,
                } => {
                    sink.settings
                        .in_flight
                        .fetch_sub(chunk.bytes().len(), Ordering::Relaxed);
                    let records = observe(&mut recorder, dir, t_ns, &chunk, consumed);
                    for record in &records {
                        if let Record::Session(SessionFact::Workspace(root)) = record {
                            let root = Path::new(root);
                            recorder.set_privacy(load_ignore_file(root, recorder.privacy()));
                            if let Some(head) = git_head_of(root) {
                                sink.git_head = Some(head.clone());
                                if let (Some(db), Some(session)) = (sink.db.as_mut(), sink.session)
                                {
                                    let _ = db.set_git_head(session, &head);
                                }
                            }
                        }
                    }
                    sink.push(records);
                }
            }
        }
        sink.flush(false);
    }
    // Drain whatever is still queued, then write it all.
    while let Ok(TapItem::Chunk {
        dir,
        t_ns,
        chunk,
        consumed,
    }) = rx.try_recv()
    {
        let records = observe(&mut recorder, dir, t_ns, &chunk, consumed);
        sink.push(records);
    }
    // Last chance: a few forced attempts before records are declared lost.
    for attempt in 0..10 {
        sink.flush(true);
        if sink.buffer.is_empty() && sink.session.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50 * (attempt + 1)));
    }
    let dropped = sink.settings.dropped.load(Ordering::Relaxed) + sink.lost;
    if !sink.buffer.is_empty() {
        eprintln!(
            "nextedit: {} records of this session could not be written to {}",
            sink.buffer.len(),
            sink.settings.db.display()
        );
    }
    if let (Some(db), Some(session)) = (sink.db.as_mut(), sink.session)
        && let Err(error) = db.end_session(session, end, dropped)
    {
        eprintln!(
            "nextedit: cannot close the session in {}: {error}",
            sink.settings.db.display()
        );
    }
}

/// A recording is never urgent: let forwarding, the editor and the server go first.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread (Linux applies nice values per
    // thread); failure only means the thread keeps its priority.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

fn observe(
    recorder: &mut SessionRecorder,
    dir: Direction,
    t_ns: u64,
    chunk: &Chunk,
    consumed: bool,
) -> Vec<Record> {
    match chunk {
        Chunk::Frame { bytes, header_len } => {
            recorder.observe_frame(dir, t_ns, bytes, *header_len, consumed)
        }
        Chunk::Garbage { bytes, error } => {
            vec![recorder.observe_invalid(dir, t_ns, bytes, &error.to_string())]
        }
        Chunk::Passthrough {
            bytes,
            content_length,
        } => vec![recorder.observe_invalid(
            dir,
            t_ns,
            &bytes[..bytes.len().min(4096)],
            &format!("piece of a {content_length}-byte frame too large to record"),
        )],
        Chunk::Truncated { bytes, missing } => vec![recorder.observe_invalid(
            dir,
            t_ns,
            bytes,
            &format!("stream ended {missing} bytes before the end of this frame"),
        )],
    }
}

fn load_ignore_file(root: &Path, base: &PrivacyFilter) -> PrivacyFilter {
    let path = root.join(IGNORE_FILE);
    let Ok(contents) = std::fs::read_to_string(&path) else {
        return base.clone();
    };
    match base.extend_with_ignore_file(&contents) {
        Ok(filter) => filter,
        Err(error) => {
            eprintln!("nextedit: ignoring {}: {error}", path.display());
            base.clone()
        }
    }
}

/// The commit HEAD points to, if `dir` is inside a git repository.
///
/// Resolves references only (`.git/HEAD`, `refs/…`, `packed-refs`), never inflates
/// an object: the bundled libgit2 loops forever on a truncated loose object (see
/// `history::odb`), and the recorder thread must not burn a core for the session.
/// A HEAD that is not a commit is recorded as it is; `sessions link` reads the
/// commit later, after checking the objects.
pub fn git_head_of(dir: &Path) -> Option<String> {
    let repo = git2::Repository::discover(dir).ok()?;
    let head = repo.head().ok()?;
    head.resolve().ok()?.target().map(|oid| oid.to_string())
}
