//! The session's one timeline: both forwarding threads put each frame on it, with
//! its time, when they read it and before they forward it; the recorder takes
//! frames off it in that order.
//!
//! Why before: whatever the other side does in reaction to a frame (an editor's
//! didChange after a completion answer, a server's answer to a request) can only
//! start once the frame is forwarded, so it is read, stamped and queued after it.
//! Stamping and queueing happen under one lock that only the two forwarding threads
//! take (a clock read and a lock-free send), so the queue's order is the stamps'
//! order and the recorder's sequence numbers and times follow cause and effect by
//! construction. The recorder never takes that lock: a low-priority thread preempted
//! while holding it would stall forwarding.
//!
//! Forwarding never waits for the recorder: waking it is done after the bytes went
//! out (and costs a system call only when it sleeps). When the recorder is that far
//! behind (items or bytes), frames are dropped and counted, never the forwarding.
//!
//! The timeline also says when the editor has gone ([`Timeline::draining`]): from
//! then on nothing is forwarded that the editor waits for, so the recorder drains
//! what is left at normal priority instead of its low one.
//!
//! Frames read after the session's end. The forwarding threads may still read frames
//! once the recorder has taken its last batch: an editor still writing after the
//! server exited, the server's last output once the server→editor pump gave up
//! waiting for the editor (30 s). The recorder closes the timeline before its last
//! take ([`Timeline::close`], under the order lock): a frame stamped after that is
//! *late*, it is not queued (nothing would ever take it) but counted. Late frames
//! read before the writer takes the session's `dropped` count for its end
//! ([`Timeline::seal`], under the order lock too, right before the end is written)
//! are counted in it, so the session is `incomplete`; those read after are not in
//! the database at all. Once the recording is finished the proxy says on stderr how
//! many frames were late, and how many of them the session's `dropped` counts
//! ([`Timeline::late`]); a frame read after that line (the proxy is exiting) is
//! neither recorded nor told. The forwarding path pays one check of the phase,
//! under the lock it already holds.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::core::lsp::Direction;
use crate::core::lsp::framing::Chunk;
use crate::store::SessionEnd;

/// Frames queued (taken but not yet processed included) before copies are dropped.
/// Large, because memory is bounded by [`MAX_BYTES`]: a burst of small messages
/// waits for the recorder instead of being dropped.
pub const MAX_FRAMES: usize = 1 << 21;
/// Bytes queued (taken but not yet processed included) before copies are dropped.
pub const MAX_BYTES: usize = 512 * 1024 * 1024;

/// One frame on the timeline.
#[derive(Debug)]
pub struct Stamped {
    /// Direction.
    pub dir: Direction,
    /// Nanoseconds since the proxy started, read when the frame was read.
    pub t_ns: u64,
    /// The bytes (shared with the forwarding thread while it writes them).
    pub chunk: Arc<Chunk>,
    /// An editor signal the proxy did not forward.
    pub consumed: bool,
}

/// What the recorder takes off the timeline in one go.
#[derive(Debug, Default)]
pub struct Batch {
    /// Frames, in the order they were read.
    pub frames: Vec<Stamped>,
    /// The session ended (frames read after the end may follow in later batches).
    pub end: Option<SessionEnd>,
}

/// The shared timeline: the forwarding threads' side and the recorder's.
pub struct Timeline {
    start: Instant,
    /// Taken by the forwarding threads around the clock read and the send (and by
    /// the recorder and the writer once each at the end, at normal priority, to
    /// close and seal the timeline).
    order: Mutex<Phase>,
    /// Unbounded and lock-free; nobody ever blocks on its receiving end (the recorder
    /// parks instead), so a send never wakes anyone.
    tx: Sender<Stamped>,
    rx: Receiver<Stamped>,
    end: OnceLock<SessionEnd>,
    /// The editor closed its side (or stopped reading).
    editor_gone: AtomicBool,
    /// The recorder thread, woken after frames were queued.
    recorder: OnceLock<Thread>,
    /// Frames queued or being processed.
    frames: AtomicUsize,
    /// Bytes queued or being processed.
    bytes: AtomicUsize,
    /// Frames not queued because the recorder was too far behind, or taken and lost,
    /// or late before the timeline was sealed.
    dropped: AtomicU64,
}

/// What becomes of a frame stamped now (changed only under the order lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Phase {
    /// The recorder took its last batch: frames are late, not queued.
    closed: bool,
    /// The writer took the session's `dropped` for its end: late frames are no
    /// longer counted in it.
    sealed: bool,
    /// Frames stamped after the timeline was closed.
    late: u64,
    /// Of those, the ones counted in `dropped` (stamped before it was sealed).
    late_counted: u64,
}

/// Frames read after the session's end, none of them recorded ([`Timeline::late`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Late {
    /// Frames stamped after the timeline was closed.
    pub read: u64,
    /// Of those, the ones counted in the session's `dropped`.
    pub counted: u64,
}

impl Timeline {
    /// A timeline whose times count from `start`.
    pub fn new(start: Instant) -> Timeline {
        let (tx, rx) = crossbeam_channel::unbounded();
        Timeline {
            start,
            order: Mutex::new(Phase::default()),
            tx,
            rx,
            end: OnceLock::new(),
            editor_gone: AtomicBool::new(false),
            recorder: OnceLock::new(),
            frames: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// The thread to wake when frames arrive: the one that calls [`Timeline::wait`]
    /// (set once; later calls are ignored).
    pub fn set_recorder(&self, thread: Thread) {
        let _ = self.recorder.set(thread);
    }

    /// Puts a frame just read on the timeline, stamped now; call before forwarding
    /// it. Drops (and counts) it when the recorder is too far behind.
    pub fn stamp(&self, dir: Direction, chunk: &Arc<Chunk>, consumed: bool) {
        let size = chunk.bytes().len();
        if self.frames.load(Ordering::Relaxed) >= MAX_FRAMES {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if self.bytes.fetch_add(size, Ordering::Relaxed) + size > MAX_BYTES {
            self.bytes.fetch_sub(size, Ordering::Relaxed);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.frames.fetch_add(1, Ordering::Relaxed);
        let chunk = chunk.clone();
        let mut phase = self.lock_order();
        if phase.closed {
            // After the recorder's last take: nothing would ever take it.
            self.frames.fetch_sub(1, Ordering::Relaxed);
            self.bytes.fetch_sub(size, Ordering::Relaxed);
            phase.late += 1;
            if !phase.sealed {
                phase.late_counted += 1;
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return;
        }
        // The clock is read under the lock: times rise in queue order.
        let t_ns = self.start.elapsed().as_nanos() as u64;
        // The receiver lives as long as `self`: the send cannot fail.
        let _ = self.tx.send(Stamped {
            dir,
            t_ns,
            chunk,
            consumed,
        });
    }

    /// Wakes the recorder (after the frames were forwarded: off the forwarding path).
    pub fn wake(&self) {
        if let Some(thread) = self.recorder.get() {
            thread.unpark();
        }
    }

    /// Marks the end of the session and wakes the recorder.
    pub fn end(&self, end: SessionEnd) {
        let _ = self.end.set(end);
        self.wake();
    }

    /// The editor closed its side or stopped reading: wakes the recorder, whose
    /// hurry it is now.
    pub fn close_editor(&self) {
        self.editor_gone.store(true, Ordering::Release);
        self.wake();
    }

    /// Whether the recording is what is left to do: the editor has gone or the
    /// session ended.
    pub fn draining(&self) -> bool {
        self.editor_gone.load(Ordering::Acquire) || self.end.get().is_some()
    }

    /// The recorder's side: sleeps until frames are there or the recording is
    /// draining (the thread calling it must be the one given to
    /// [`Timeline::set_recorder`]).
    pub fn wait(&self) {
        while self.rx.is_empty() && !self.draining() {
            std::thread::park();
        }
    }

    /// Takes everything queued, in order, into `spare` (emptied; its capacity is reused).
    pub fn take(&self, mut spare: Vec<Stamped>) -> Batch {
        debug_assert!(spare.is_empty());
        // The end first: a frame queued after it is taken now or in the next batch.
        let end = self.end.get().copied();
        // What is there now, not what keeps arriving while it is taken.
        let queued = self.rx.len();
        spare.extend(self.rx.try_iter().take(queued));
        Batch { frames: spare, end }
    }

    /// The recorder's side, before its last [`Timeline::take`]: frames stamped from
    /// now on are late (counted, not queued).
    pub fn close(&self) {
        self.lock_order().closed = true;
    }

    /// The writer's side, right before it writes the session's end: returns the
    /// frames dropped so far (late ones included); frames stamped from now on are no
    /// longer counted in it (only in [`Timeline::late`]).
    pub fn seal(&self) -> u64 {
        let mut phase = self.lock_order();
        phase.sealed = true;
        self.dropped()
    }

    /// Frames read after the timeline was closed, and how many of them were counted
    /// as dropped.
    pub fn late(&self) -> Late {
        let phase = *self.lock_order();
        Late {
            read: phase.late,
            counted: phase.late_counted,
        }
    }

    fn lock_order(&self) -> std::sync::MutexGuard<'_, Phase> {
        self.order.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The recorder processed a frame of `size` bytes.
    pub fn processed(&self, size: usize) {
        self.frames.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(size, Ordering::Relaxed);
    }

    /// Frames queued or being processed.
    pub fn queued(&self) -> usize {
        self.frames.load(Ordering::Relaxed)
    }

    /// Counts a frame the recorder took but could not record.
    pub fn count_lost(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// Frames dropped or lost so far.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> Arc<Chunk> {
        let bytes = crate::core::lsp::framing::encode_frame(body.as_bytes());
        let header_len = bytes.len() - body.len();
        Arc::new(Chunk::Frame { bytes, header_len })
    }

    #[test]
    fn frames_come_off_in_the_order_they_were_stamped_with_rising_times() {
        let timeline = Arc::new(Timeline::new(Instant::now()));
        let threads: Vec<_> = [Direction::ClientToServer, Direction::ServerToClient]
            .into_iter()
            .map(|dir| {
                let timeline = timeline.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        timeline.stamp(dir, &frame("{}"), false);
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let batch = timeline.take(Vec::new());
        assert_eq!(batch.frames.len(), 20_000);
        assert!(batch.frames.windows(2).all(|w| w[0].t_ns <= w[1].t_ns));
        assert_eq!(timeline.queued(), 20_000);
        for stamped in &batch.frames {
            timeline.processed(stamped.chunk.bytes().len());
        }
        assert_eq!((timeline.queued(), timeline.dropped()), (0, 0));
    }

    #[test]
    fn the_end_is_kept_and_wakes_the_waiting_recorder() {
        let timeline = Arc::new(Timeline::new(Instant::now()));
        let waiter = {
            let timeline = timeline.clone();
            std::thread::spawn(move || {
                timeline.wait();
                timeline.take(Vec::new()).end
            })
        };
        timeline.set_recorder(waiter.thread().clone());
        timeline.end(SessionEnd::Exited(Some(0)));
        timeline.end(SessionEnd::Exited(Some(1)));
        assert_eq!(waiter.join().unwrap(), Some(SessionEnd::Exited(Some(0))));
    }

    #[test]
    fn frames_after_the_close_are_late_and_counted_until_the_seal() {
        let timeline = Timeline::new(Instant::now());
        timeline.stamp(Direction::ClientToServer, &frame("{}"), false);
        timeline.close();
        let batch = timeline.take(Vec::new());
        assert_eq!(batch.frames.len(), 1);
        for _ in 0..3 {
            timeline.stamp(Direction::ClientToServer, &frame("{}"), false);
        }
        assert_eq!(timeline.seal(), 3);
        timeline.stamp(Direction::ServerToClient, &frame("{}"), false);
        assert!(timeline.take(Vec::new()).frames.is_empty());
        assert_eq!(
            timeline.late(),
            Late {
                read: 4,
                counted: 3
            }
        );
        // Late frames hold no room on the timeline: only the taken one is queued.
        assert_eq!((timeline.queued(), timeline.dropped()), (1, 3));
    }
}
