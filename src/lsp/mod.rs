//! Content-Length framing, message envelopes and a small LSP client.
//!
//! Architecture invariant: nothing here re-serialises a message on the proxy path;
//! framing works on raw bytes and envelopes borrow from them.

pub mod client;
pub mod framing;
pub mod message;

pub use message::{Direction, Envelope, MessageKind};
