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

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::spill::{self, Spill};
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
    /// The session is over: write everything, close the session with the frames the
    /// recorder could not take counted.
    Finish {
        /// How it ended.
        end: SessionEnd,
        /// Frames dropped before they reached the recorder.
        dropped: u64,
    },
}

/// Runs until [`Write::Finish`] (or the recorder's end of the channel) and everything
/// is written: at a low priority until [`Write::Drain`], then at this thread's own.
pub fn run_writer(settings: TapSettings, git_head: Option<String>, rx: &Receiver<Write>) {
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
    sink.ensure_session(false);
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
    let (end, dropped) = match finished {
        Ok(Some(finish)) => finish,
        _ => sink.serve(rx).unwrap_or((SessionEnd::Exited(None), 0)),
    };
    let dropped = sink.finish(end, dropped);
    if dropped > 0 {
        eprintln!(
            "nextedit: {dropped} frames of this session were not recorded in {}; the session is marked incomplete",
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
    fn serve(&mut self, rx: &Receiver<Write>) -> Option<(SessionEnd, u64)> {
        loop {
            // Idle: block until something arrives. With records waiting for a retry, poll.
            let next = if self.pending() {
                rx.recv_timeout(RETRY_INTERVAL)
            } else {
                rx.recv().map_err(|_| RecvTimeoutError::Disconnected)
            };
            match next {
                Ok(Write::Records(records)) => self.push(records),
                Ok(Write::GitHead(head)) => {
                    if let (Some(db), Some(session)) = (self.db.as_mut(), self.session) {
                        let _ = db.set_git_head(session, &head);
                    }
                    self.git_head = Some(head);
                }
                Ok(Write::Flush) | Err(RecvTimeoutError::Timeout) => self.flush(false),
                Ok(Write::Drain) if !self.draining => {
                    self.draining = true;
                    return None;
                }
                Ok(Write::Drain) => {}
                Ok(Write::Finish { end, dropped }) => return Some((end, dropped)),
                Err(RecvTimeoutError::Disconnected) => return Some((SessionEnd::Exited(None), 0)),
            }
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
        // Spilled records are older than the buffered ones: they go first.
        if let Some(spill) = self.spill.take() {
            match spill.replay_into(db, session) {
                Ok(()) => {
                    self.written_frames += spill.frames;
                    spill.discard();
                }
                Err(error) => {
                    self.spill = Some(spill);
                    self.warn("cannot write", &error);
                    return;
                }
            }
        }
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
    /// then leave what is left in the spill file. Returns the frames lost.
    fn finish(&mut self, end: SessionEnd, dropped: u64) -> u64 {
        let patience = std::env::var("NEXTEDIT_EXIT_PATIENCE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map_or(EXIT_PATIENCE, Duration::from_millis);
        let start = Instant::now();
        let mut told = false;
        loop {
            self.flush(true);
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
        if self.pending() || self.session.is_none() {
            // The database is still unavailable: keep everything on disk for the
            // next proxy when it may come back, else count it lost.
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
        dropped + self.lost_frames
    }
}
