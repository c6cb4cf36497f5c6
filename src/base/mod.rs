//! The bottom layer: plumbing that knows nothing of editors, edits or suggesters.
//! It uses nothing else of the crate.

pub mod html;
pub mod jsonrpc;
pub mod progress;
pub mod ranges;
pub mod secrets;
pub mod sys;
