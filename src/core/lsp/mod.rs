//! Content-Length framing, message envelopes and LSP methods (the client that spawns
//! servers is `engine::lsp_client`).
//!
//! Architecture invariant: nothing here re-serialises a message on the proxy path;
//! framing works on raw bytes and envelopes borrow from them.

pub mod framing;
pub mod message;
pub mod method;

pub use message::{Direction, Envelope, MessageKind};
pub use method::{AnswerEdits, AnswerReads, Method, OfferKind, SIGNAL_PREFIX};
