//! Frames → trajectory events: document text tracking (position encodings),
//! edits, reads, editor signals, privacy filters.
//!
//! Architecture invariant: pure state machines. No SQLite, no files, no threads;
//! the proxy feeds frames in and hands the resulting [`Record`]s to the store.

pub mod document;
pub mod origin;
pub mod privacy;
mod recorder;
pub mod uri;

pub use recorder::{
    DocumentRecord, EditRecord, MessageRecord, READ_METHODS, ReadRecord, Record, RecorderConfig,
    SIGNAL_PREFIX, SessionFact, SessionRecorder, SignalRecord, SnapshotKind, SnapshotRecord,
};
