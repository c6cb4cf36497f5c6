//! The recorder thread: frames off the session's timeline in, records out to the
//! writer thread ([`super::sink`]), which batches them into SQLite transactions while
//! the next frames are decoded (on two cores, a burst of offers is decoded and written
//! at once).
//!
//! Failures never reach the forwarding threads: the timeline never blocks them, and
//! what the writer does with an unavailable database is its own affair.
//!
//! When the workspace becomes known it reads `.nexteditignore` of every workspace
//! folder (bounded, regular files only) and git HEAD (references only, through
//! `history::source::head_of`).
//!
//! Priority: while the editor is there, the recording is done at a low priority (nice
//! 10) on threads of its own, so forwarding, the editor and the server go first. Once
//! the editor has gone, nobody waits for forwarding: what is left is drained at the
//! process's own priority. A thread's nice value cannot be lowered back without
//! privileges, so the low-priority phase runs on a scoped thread that hands its state
//! back to the thread that spawned it (see [`run_recorder`], [`sink::run_writer`]).

use std::path::Path;
use std::time::Duration;

use crossbeam_channel::Sender;

use crate::core::lsp::framing::Chunk;
use crate::core::record::privacy::{IGNORE_FILE, PrivacyFilter};
use crate::core::record::{Record, RecorderConfig, SessionFact, SessionRecorder};
use crate::store::SessionEnd;

use super::sink::{self, TapSettings, Write, lower_priority};
use super::timeline::{Stamped, Timeline};

/// How long a burst gathers before it is processed and committed (so a SIGKILL loses
/// at most about this much, plus the time to write it).
const FLUSH_INTERVAL: Duration = Duration::from_millis(20);
/// Records handed to the writer at a time (about twenty completion answers' offers).
const HANDOFF_RECORDS: usize = 2_000;
/// Hand-offs the writer may have waiting.
const WRITES_IN_FLIGHT: usize = 16;

/// Runs until the session's end is on the timeline and everything before it is
/// written: at a low priority while the editor is there, then at this thread's own.
pub fn run_recorder(settings: TapSettings, timeline: &Timeline) {
    let mut privacy = settings.privacy.clone();
    let mut git_head = None;
    if let Some(workspace) = &settings.workspace {
        privacy = load_ignore_file(workspace, &privacy);
        git_head = crate::engine::history::source::head_of(workspace);
    }
    let recorder = SessionRecorder::new(RecorderConfig {
        record_raw: settings.record_raw,
        record_server_raw: settings.record_server_raw,
        privacy,
        workspace: settings
            .workspace
            .as_ref()
            .map(|w| w.to_string_lossy().into_owned()),
    });
    let db = settings.db.clone();
    // Bounded: a writer far behind (a slow disk) holds the recorder back, and the
    // timeline's bounds then drop frames, never the forwarding.
    let (tx, rx) = crossbeam_channel::bounded(WRITES_IN_FLIGHT);
    std::thread::scope(|scope| {
        let writer = std::thread::Builder::new()
            .name("nextedit-writer".into())
            .spawn_scoped(scope, move || {
                sink::run_writer(settings, git_head, &rx, timeline)
            })
            .expect("spawn writer thread");
        let state = Recording {
            recorder,
            writer: tx,
            taken: Vec::new(),
            next: 0,
        };
        state.record(timeline);
        if writer.join().is_err() {
            // Cannot happen (the writer survives its own panics), but never silently.
            eprintln!(
                "nextedit: the recording's writer stopped (a bug, above): the session in {} may be incomplete and not marked so",
                db.display()
            );
        }
    });
}

/// The recorder's state, handed from its low-priority thread to its own.
struct Recording {
    recorder: SessionRecorder,
    writer: Sender<Write>,
    /// Frames taken off the timeline; those from `next` on are not recorded yet.
    taken: Vec<Stamped>,
    next: usize,
}

impl Recording {
    /// Everything until the session's end, then the frames read before the timeline
    /// is closed, then the writer is told to finish.
    fn record(mut self, timeline: &Timeline) {
        // While the editor is there: on a thread of low priority, which returns when
        // the session ended or the editor has gone.
        let ended = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("nextedit-recorder-live".into())
                .spawn_scoped(scope, || {
                    lower_priority();
                    timeline.set_recorder(std::thread::current());
                    self.live(timeline)
                })
                .expect("spawn recorder thread")
                .join()
        });
        // Then here, at this thread's own priority: the writer too, and whatever is left.
        let _ = self.writer.send(Write::Drain);
        let end = match ended {
            Ok(Some(end)) => end,
            _ => self.drain(timeline),
        };
        // Frames read after the end marker (the server's last words), then the timeline
        // is closed (what is read after it is counted, see `super::timeline`) and
        // everything goes to disk.
        self.observe_taken(timeline, false);
        timeline.close();
        self.take(timeline);
        self.observe_taken(timeline, false);
        let _ = self.writer.send(Write::Finish(end));
    }

    /// While the editor is there: bursts gathered and recorded; returns the end once
    /// the session ended, `None` as soon as the editor has gone (frames taken but not
    /// recorded stay in `taken`).
    fn live(&mut self, timeline: &Timeline) -> Option<SessionEnd> {
        loop {
            // Idle: sleep until something arrives, so an idle session costs no wakeups.
            timeline.wait();
            if timeline.draining() {
                return None;
            }
            // Then let the burst gather for one window and take all of it at once: one
            // wakeup per burst instead of one per message, so on a small machine the
            // recorder does not compete with the editor and the server message by message.
            std::thread::sleep(FLUSH_INTERVAL);
            let end = self.take(timeline);
            if !self.observe_taken(timeline, true) {
                return None;
            }
            let _ = self.writer.send(Write::Flush);
            if end.is_some() {
                return end;
            }
        }
    }

    /// Once the editor has gone: records what is left until the session's end.
    fn drain(&mut self, timeline: &Timeline) -> SessionEnd {
        loop {
            self.observe_taken(timeline, false);
            let _ = self.writer.send(Write::Flush);
            // The server may still be finishing: its last frames are polled for (the
            // thread that is woken is the low-priority one, gone now).
            if let Some(end) = self.take(timeline) {
                return end;
            }
            if self.taken.is_empty() {
                std::thread::sleep(FLUSH_INTERVAL);
            }
        }
    }

    /// Takes everything queued on the timeline (after what was taken before and not
    /// recorded yet); returns the end if it was marked before.
    fn take(&mut self, timeline: &Timeline) -> Option<SessionEnd> {
        self.taken.drain(..self.next);
        self.next = 0;
        let batch = timeline.take(std::mem::take(&mut self.taken));
        self.taken = batch.frames;
        batch.end
    }

    /// Records the frames taken and not recorded yet, in order, and hands the records
    /// to the writer a few thousand at a time (so it writes while the rest is
    /// decoded). With `yield_to_drain`, stops as soon as the recording is draining
    /// and returns false.
    fn observe_taken(&mut self, timeline: &Timeline, yield_to_drain: bool) -> bool {
        let mut records = Vec::new();
        let mut complete = true;
        while self.next < self.taken.len() {
            if yield_to_drain && timeline.draining() {
                complete = false;
                break;
            }
            let stamped = &self.taken[self.next];
            self.next += 1;
            let new = observe_one(&mut self.recorder, &self.writer, timeline, stamped);
            records.extend(new);
            if records.len() >= HANDOFF_RECORDS {
                let _ = self
                    .writer
                    .send(Write::Records(std::mem::take(&mut records)));
            }
        }
        if !records.is_empty() {
            let _ = self.writer.send(Write::Records(records));
        }
        complete
    }
}

/// Records one frame; reads the ignore files and the git HEAD its records name.
fn observe_one(
    recorder: &mut SessionRecorder,
    writer: &Sender<Write>,
    timeline: &Timeline,
    stamped: &Stamped,
) -> Vec<Record> {
    {
        // A frame the recorder fails on (a bug: the panic goes to stderr) is counted as
        // lost, and the frames after it are still recorded: a panicking thread would
        // otherwise end the recording silently, the session looking complete.
        let observed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            inject_fault(recorder);
            observe(recorder, stamped)
        }));
        timeline.processed(stamped.chunk.bytes().len());
        let Ok(new) = observed else {
            timeline.count_lost();
            return Vec::new();
        };
        for record in &new {
            if let Record::Session(SessionFact::Root { dir, prefix }) = record {
                let privacy = load_ignore_file_under(Path::new(dir), prefix, recorder.privacy());
                recorder.set_privacy(privacy);
            }
            if let Record::Session(SessionFact::Workspace(root)) = record {
                let root = Path::new(root);
                recorder.set_privacy(load_ignore_file(root, recorder.privacy()));
                if let Some(head) = crate::engine::history::source::head_of(root) {
                    let _ = writer.send(Write::GitHead(head));
                }
            }
        }
        new
    }
}

/// Fault injection for tests: `NEXTEDIT_TEST_RECORDER_PANIC_AT=N` makes the recorder
/// fail once, on the first frame whose `seq` would be N or more.
fn inject_fault(recorder: &SessionRecorder) {
    use std::sync::atomic::{AtomicBool, Ordering};
    static AT: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    static FIRED: AtomicBool = AtomicBool::new(false);
    let at = AT.get_or_init(|| {
        std::env::var("NEXTEDIT_TEST_RECORDER_PANIC_AT")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    if at.is_some_and(|at| recorder.next_seq_number() >= at) && !FIRED.swap(true, Ordering::Relaxed)
    {
        panic!("injected recorder fault (NEXTEDIT_TEST_RECORDER_PANIC_AT)");
    }
}

fn observe(recorder: &mut SessionRecorder, stamped: &Stamped) -> Vec<Record> {
    let Stamped {
        dir,
        t_ns,
        consumed,
        ..
    } = *stamped;
    match &*stamped.chunk {
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

/// Largest `.nexteditignore` read: a list of globs, never megabytes.
pub const MAX_IGNORE_FILE_BYTES: u64 = 1024 * 1024;

/// Adds `root`'s `.nexteditignore` to `base`. Only a regular file is read, at most
/// [`MAX_IGNORE_FILE_BYTES`] (a symlink to `/dev/zero` must not exhaust memory);
/// an invalid line is skipped with a warning, the others still apply.
pub fn load_ignore_file(root: &Path, base: &PrivacyFilter) -> PrivacyFilter {
    load_ignore_file_under(root, "", base)
}

/// [`load_ignore_file`] for another workspace folder seen by the rules as `prefix`.
pub fn load_ignore_file_under(root: &Path, prefix: &str, base: &PrivacyFilter) -> PrivacyFilter {
    use std::io::Read;
    let path = root.join(IGNORE_FILE);
    let Ok(meta) = std::fs::metadata(&path) else {
        return base.clone();
    };
    if !meta.is_file() {
        eprintln!("nextedit: ignoring {}: not a regular file", path.display());
        return base.clone();
    }
    let mut bytes = Vec::new();
    let read = std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_IGNORE_FILE_BYTES + 1).read_to_end(&mut bytes));
    if let Err(error) = read {
        eprintln!("nextedit: cannot read {}: {error}", path.display());
        return base.clone();
    }
    if bytes.len() as u64 > MAX_IGNORE_FILE_BYTES {
        eprintln!(
            "nextedit: ignoring {}: larger than {MAX_IGNORE_FILE_BYTES} bytes",
            path.display()
        );
        return base.clone();
    }
    let contents = String::from_utf8_lossy(&bytes);
    let (filter, errors) = base.extend_with_ignore_file_under(prefix, &contents);
    for error in errors {
        eprintln!("nextedit: {}: skipping a line: {error}", path.display());
    }
    filter
}
