//! Frames → trajectory events: document text tracking (position encodings),
//! edits, reads, editor signals, privacy filters.
//!
//! Architecture invariant: pure state machines. No SQLite, no files, no threads;
//! the proxy feeds frames in and hands the resulting [`Record`]s to the store.

pub mod completion;
pub mod document;
mod documents;
mod offers;
pub mod origin;
mod pending;
pub mod privacy;
mod reads;
mod recorder;
mod records;
pub mod uri;

pub use crate::core::lsp::SIGNAL_PREFIX;
pub use offers::{MAX_OFFERS, expand_snippet};
pub use recorder::{RecorderConfig, SessionRecorder};
pub use records::{
    DocumentRecord, EditRecord, MessageRecord, OfferEdit, OfferRecord, OfferSpan, ReadRecord,
    Record, SessionFact, SignalRecord, SnapshotKind, SnapshotRecord,
};
