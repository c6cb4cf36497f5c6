//! The writer thread: the recorder's records in, batched SQLite transactions out.
//!
//! Failures never reach the forwarding threads. When the database cannot be
//! opened or written, one line goes to stderr; records are kept in memory, then in
//! a private spill file next to the database ([`super::spill`]), and writing is
//! retried, so an unavailable database loses nothing; a deleted or replaced database
//! file is noticed. At exit everything is
//! written (an unavailable database is waited for, then the spill file is left for
//! the next proxy); anything lost is counted in frames (`sessions.dropped`), the
//! session is marked `incomplete` and one line goes to stderr.
//!
//! A bug that panics while the writer works (a batch taken or written, a flush, the
//! finish) loses the records that unit held, counted and said like any other loss;
//! the writer goes on and the session is always ended (stderr names the database if
//! even that fails).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::spill::{self, Spill};
use super::timeline::Timeline;
use crate::core::record::Record;
use crate::core::record::privacy::PrivacyFilter;
use crate::store::{Database, NewSession, SessionEnd, SessionStore};

/// Recorder settings (the recorder thread reads the workspace and privacy ones, this
/// writer the database and session ones).
#[derive(Debug, Clone)]
pub struct TapSettings {
    /// Database file.
    pub db: PathBuf,
    /// Workspace root from the command line.
    pub workspace: Option<PathBuf>,
    /// Server argv.
    pub server_command: Vec<String>,
    /// Store the editor's raw bytes.
    pub record_raw: bool,
    /// Store the server's raw bytes too.
    pub record_server_raw: bool,
    /// Privacy filter before the workspace's ignore file is read.
    pub privacy: PrivacyFilter,
}

/// What the recorder thread hands the writer thread, in order.
#[derive(Debug)]
pub enum Write {
    /// Records of some frames.
    Records(Vec<Record>),
    /// The workspace's git HEAD, learned from the traffic.
    GitHead(String),
    /// A burst is over: write what is buffered.
    Flush,
    /// The editor has gone: the rest is written at the process's own priority.
    Drain,
    /// The session is over (the timeline is closed): write everything, close the
    /// session with the frames lost counted.
    Finish(SessionEnd),
}

/// Runs until [`Write::Finish`] (or the recorder's end of the channel) and everything
/// is written: at a low priority until [`Write::Drain`], then at this thread's own.
/// The session is always ended, with the frames lost counted (the `timeline`'s
/// dropped, taken by [`Timeline::seal`] right before, and the writer's own); a unit
/// of work that panics loses only the records it held ([`Sink::guarded`]).
pub fn run_writer(
    settings: TapSettings,
    git_head: Option<String>,
    rx: &Receiver<Write>,
    timeline: &Timeline,
) {
    let mut sink = Sink {
        db: None,
        identity: None,
        session: None,
        settings,
        buffer: Vec::new(),
        failing: false,
        last_attempt: None,
        lost_frames: 0,
        written_frames: 0,
        spill: None,
        transient: false,
        git_head,
        draining: false,
    };
    // Create the session row right away so even an idle session is listed.
    sink.survive(|sink| {
        sink.ensure_session(false);
    });
    // Low priority on a thread of its own until the recorder says the editor has gone
    // (see `super::tap` on why the thread changes).
    let finished = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("nextedit-writer-live".into())
            .spawn_scoped(scope, || {
                lower_priority();
                sink.serve(rx)
            })
            .expect("spawn writer thread")
            .join()
    });
    let end = match finished {
        Ok(Some(end)) => end,
        // The drain (a panic outside a unit of work cannot happen, but if it did, the
        // rest is still served, here).
        _ => sink
            .serve(rx)
            .or_else(|| sink.serve(rx))
            .unwrap_or(SessionEnd::Exited(None)),
    };
    let dropped = sink.finish(end, timeline);
    if dropped > 0 {
        eprintln!(
            "nextedit: {dropped} frames of this session were not recorded in {}; the session is marked incomplete",
            sink.settings.db.display()
        );
    }
    sink.end_session(end, dropped);
}

/// A recording is never urgent: let forwarding, the editor and the server go first
/// (nice 10 on the calling thread).
pub(super) fn lower_priority() {
    crate::base::sys::process::lower_thread_priority(10);
}

/// Records written per transaction during a burst (bounds memory and keeps the
/// write lock short for other proxies sharing the database).
const BATCH_RECORDS: usize = 20_000;
/// Records kept in memory while the database is unavailable; past this they go
/// to the spill file ([`super::spill`]), never dropped.
const MAX_BUFFERED_RECORDS: usize = 200_000;
/// How often a failing database is retried.
const RETRY_INTERVAL: Duration = Duration::from_millis(500);
/// How long the recorder keeps retrying an unavailable database at exit before it
/// leaves the rest in the spill file (`NEXTEDIT_EXIT_PATIENCE_MS` overrides).
const EXIT_PATIENCE: Duration = Duration::from_secs(30);

struct Sink {
    db: Option<Database>,
    /// Device and inode of the database file when opened: a deleted or replaced
    /// file would silently swallow every later write.
    identity: Option<(u64, u64)>,
    session: Option<i64>,
    settings: TapSettings,
    buffer: Vec<Record>,
    failing: bool,
    last_attempt: Option<Instant>,
    /// Frames whose records are lost (database deleted, spill impossible).
    lost_frames: u64,
    /// Frames written to the current database file.
    written_frames: u64,
    spill: Option<Spill>,
    /// The last failure may pass (a lock); others (a symlink, a newer schema) will not.
    transient: bool,
    git_head: Option<String>,
    /// The editor has gone: this is the drain at the process's own priority.
    draining: bool,
}

fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

impl Sink {
    /// Takes the recorder's writes until [`Write::Finish`] (returned) or, the first
    /// time, [`Write::Drain`] (`None`).
    fn serve(&mut self, rx: &Receiver<Write>) -> Option<SessionEnd> {
        loop {
            // Idle: block until something arrives. With records waiting for a retry, poll.
            let next = if self.pending() {
                rx.recv_timeout(RETRY_INTERVAL)
            } else {
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            match next {
                Ok(Write::Records(records)) => {
                    self.guarded(|sink| sink.push(records));
                }
                Ok(Write::GitHead(head)) => {
                    self.survive(|sink| sink.set_git_head(head));
                }
                Ok(Write::Flush) | Err(RecvTimeoutError::Timeout) => {
                    self.guarded(|sink| sink.flush(false));
                }
                Ok(Write::Drain) if !self.draining => {
                    self.draining = true;
                    return None;
                }
                Ok(Write::Drain) => {}
                Ok(Write::Finish(end)) => return Some(end),
                Err(RecvTimeoutError::Disconnected) => return Some(SessionEnd::Exited(None)),
            }
        }
    }

    /// Runs one unit of the writer's work on the buffered records (a batch taken or
    /// written, a flush, the finish). A panic in it (a bug; the panic message is on
    /// stderr) loses the records it held, which are counted and said, and the writer
    /// goes on: a panicking thread would otherwise end the recording silently, the
    /// session never ended. Returns false after a panic.
    fn guarded(&mut self, work: impl FnOnce(&mut Sink)) -> bool {
        let survived = self.survive(work);
        if !survived {
            self.lose_buffer();
        }
        survived
    }

    /// Runs work that holds no records (the session row, the git HEAD); false if it
    /// panicked (the panic message is on stderr).
    fn survive(&mut self, work: impl FnOnce(&mut Sink)) -> bool {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(self))).is_ok()
    }

    /// After a panic: the records buffered are lost (a transaction the panic broke
    /// off was rolled back, so none of them is in the database).
    fn lose_buffer(&mut self) {
        let frames = spill::frames_in(&self.buffer);
        let seqs = self.buffer.iter().filter_map(|r| match r {
            Record::Message(m) => Some(m.seq),
            _ => None,
        });
        let (first, last) = (seqs.clone().min(), seqs.max());
        if let (Some(first), Some(last)) = (first, last) {
            eprintln!(
                "nextedit: recording to {} failed on a batch of {frames} frames (seq {first} to {last}); they are lost, recording goes on",
                self.settings.db.display()
            );
        }
        self.lost_frames += frames;
        self.buffer.clear();
    }

    fn set_git_head(&mut self, head: String) {
        if let (Some(db), Some(session)) = (self.db.as_mut(), self.session) {
            let _ = db.set_git_head(session, &head);
        }
        self.git_head = Some(head);
    }

    /// Ends the session with `dropped` frames lost; says so when even that fails.
    fn end_session(&mut self, end: SessionEnd, dropped: u64) {
        let mut ended = Ok(());
        let finished = self.survive(|sink| {
            if let (Some(db), Some(session)) = (sink.db.as_mut(), sink.session) {
                ended = db.end_session(session, end, dropped);
            }
        });
        let db = self.settings.db.display();
        if let Err(error) = ended {
            eprintln!("nextedit: cannot close the session in {db}: {error}");
        } else if !finished {
            eprintln!("nextedit: cannot close the session in {db}: the writer failed (above)");
        }
    }

    fn warn(&mut self, what: &str, error: &crate::store::StoreError) {
        self.transient = error.is_transient();
        if !self.failing {
            eprintln!(
                "nextedit: recording to {} paused: {what}: {error}; the language server session continues and recording is retried",
                self.settings.db.display()
            );
            self.failing = true;
        }
    }

    fn new_session(&self) -> NewSession {
        NewSession {
            workspace: self
                .settings
                .workspace
                .as_ref()
                .map(|w| w.to_string_lossy().into_owned()),
            git_head: self.git_head.clone(),
            server_command: self.settings.server_command.clone(),
            pid: Some(std::process::id()),
            record_raw: self.settings.record_raw,
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
                Ok(mut db) => {
                    if let Some(mode) = db.fixed_permissions() {
                        eprintln!(
                            "nextedit: {} was readable by others (mode {mode:o}); made it private (600)",
                            self.settings.db.display()
                        );
                    }
                    self.identity = file_identity(&self.settings.db);
                    for (path, adopted) in spill::adopt_leftovers(&mut db) {
                        match adopted {
                            Ok(frames) => eprintln!(
                                "nextedit: recovered {frames} frames of an earlier session from {}",
                                path.display()
                            ),
                            Err(error) => {
                                eprintln!("nextedit: cannot recover {}: {error}", path.display())
                            }
                        }
                    }
                    self.db = Some(db);
                }
                Err(error) => {
                    self.warn("cannot open the database", &error);
                    return false;
                }
            }
        }
        let new = self.new_session();
        let db = self.db.as_mut().expect("opened above");
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

    /// Whether the open database is still the file at its path; if it was deleted
    /// or replaced, says so once, counts what it held as lost and starts over.
    fn check_identity(&mut self) -> bool {
        if self.db.is_none() || file_identity(&self.settings.db) == self.identity {
            return true;
        }
        eprintln!(
            "nextedit: {} was deleted or replaced during the session: the {} frames recorded in it are lost; recording goes on in a new file",
            self.settings.db.display(),
            self.written_frames
        );
        self.lost_frames += self.written_frames;
        self.written_frames = 0;
        self.db = None;
        self.session = None;
        self.identity = None;
        false
    }

    fn pending(&self) -> bool {
        !self.buffer.is_empty() || self.spill.is_some()
    }

    fn flush(&mut self, force: bool) {
        if !self.pending() {
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
        if !self.check_identity() || !self.ensure_session(force) {
            return;
        }
        self.last_attempt = Some(Instant::now());
        let session = self.session.expect("ensured");
        let db = self.db.as_mut().expect("ensured");
        // Spilled records are older than the buffered ones: they go first (the spill
        // stays in place until replayed: a panic while replaying leaves it there).
        if let Some(spill) = &self.spill {
            if let Err(error) = spill.replay_into(db, session) {
                self.warn("cannot write", &error);
                return;
            }
            let spill = self.spill.take().expect("replayed above");
            self.written_frames += spill.frames;
            spill.discard();
        }
        inject_fault(&self.buffer);
        match db.write_records(session, &self.buffer) {
            Ok(()) => {
                self.written_frames += spill::frames_in(&self.buffer);
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

    /// Moves the buffered records to the spill file; false if that failed too
    /// (then they stay in memory).
    fn spill_buffer(&mut self) -> bool {
        if self.buffer.is_empty() {
            return true;
        }
        if self.spill.is_none() {
            match Spill::create(&self.settings.db, &self.new_session()) {
                Ok(spill) => self.spill = Some(spill),
                Err(error) => {
                    eprintln!("nextedit: cannot create a spill file: {error}");
                    return false;
                }
            }
        }
        let spill = self.spill.as_mut().expect("created above");
        match spill.write(&self.buffer) {
            Ok(()) => {
                self.buffer.clear();
                true
            }
            Err(error) => {
                eprintln!(
                    "nextedit: cannot spill to {}: {error}",
                    spill.path().display()
                );
                false
            }
        }
    }

    fn push(&mut self, records: Vec<Record>) {
        self.buffer.extend(records);
        if self.buffer.len() >= BATCH_RECORDS {
            self.flush(false);
        }
        if self.buffer.len() >= MAX_BUFFERED_RECORDS && !self.spill_buffer() {
            // Neither the database nor the disk takes them: these are lost.
            self.lost_frames += spill::frames_in(&self.buffer);
            self.buffer.clear();
        }
    }

    /// At exit: write everything, retrying an unavailable database for a while,
    /// then leave what is left in the spill file. Returns the frames lost: the
    /// `timeline`'s dropped ([`Timeline::seal`]ed now) and the writer's own.
    fn finish(&mut self, end: SessionEnd, timeline: &Timeline) -> u64 {
        let patience = std::env::var("NEXTEDIT_EXIT_PATIENCE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(EXIT_PATIENCE, Duration::from_millis);
        let start = Instant::now();
        let mut told = false;
        loop {
            // A write that panicked is not retried: what it held is counted lost.
            if !self.guarded(|sink| sink.flush(true)) {
                break;
            }
            if !self.pending() && self.session.is_some() {
                break;
            }
            if start.elapsed() >= patience || (self.failing && !self.transient) {
                break;
            }
            if !told && start.elapsed() >= Duration::from_secs(1) {
                eprintln!(
                    "nextedit: waiting up to {}s for {} to take the session's last records",
                    patience.as_secs(),
                    self.settings.db.display()
                );
                told = true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let dropped = timeline.seal();
        self.guarded(|sink| sink.leave_or_lose(end, dropped));
        dropped + self.lost_frames
    }

    /// At exit, when the database is still unavailable: keeps everything on disk for
    /// the next proxy when it may come back, else counts it lost.
    fn leave_or_lose(&mut self, end: SessionEnd, dropped: u64) {
        if !self.pending() && self.session.is_some() {
            return;
        }
        let frames = spill::frames_in(&self.buffer);
        if self.transient
            && self.spill_buffer()
            && let Some(spill) = self.spill.take()
        {
            let held = spill.frames;
            let path = spill.path().to_path_buf();
            match spill.leave(self.session, end, dropped + self.lost_frames) {
                Ok(path) => {
                    eprintln!(
                        "nextedit: {} is unavailable: {held} frames of this session are kept in {}; the next nextedit proxy recording into it adds them",
                        self.settings.db.display(),
                        path.display()
                    );
                }
                Err(error) => {
                    eprintln!("nextedit: cannot close {}: {error}", path.display());
                }
            }
        } else {
            self.lost_frames += frames;
            if let Some(spill) = self.spill.take() {
                self.lost_frames += spill.frames;
                spill.discard();
            }
            self.buffer.clear();
        }
    }
}

/// Fault injection for tests: `NEXTEDIT_TEST_WRITER_PANIC_AT=N` makes the writer
/// fail once, writing the first batch that holds a frame whose `seq` is N or more
/// (like the recorder's `NEXTEDIT_TEST_RECORDER_PANIC_AT`).
fn inject_fault(batch: &[Record]) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static AT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    static FIRED: AtomicBool = AtomicBool::new(false);
    let at = AT.get_or_init(|| {
        std::env::var("NEXTEDIT_TEST_WRITER_PANIC_AT")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    let Some(at) = *at else {
        return;
    };
    let holds = batch
        .iter()
        .any(|r| matches!(r, Record::Message(m) if m.seq >= at));
    if holds && !FIRED.swap(true, Ordering::Relaxed) {
        panic!("injected writer fault (NEXTEDIT_TEST_WRITER_PANIC_AT)");
    }
}
