//! Requests waiting for their answers, paired by (direction of the request, raw id):
//! what an answer is to (its method, document, place and time) for every tracker.

use std::collections::HashMap;

use super::document::LspPosition;
use crate::core::lsp::{Direction, Method};

/// A request waiting for its response.
#[derive(Debug, Clone)]
pub(super) struct PendingRequest {
    /// Its method.
    pub(super) method: Method,
    /// The document it is about, if it names one.
    pub(super) uri: Option<String>,
    /// Sequence number of the request message.
    pub(super) seq: u64,
    /// When it was sent.
    pub(super) t_ns: u64,
    /// Its position (a range's start), for requests whose answers are offers.
    pub(super) position: Option<LspPosition>,
    /// That position as (line, byte column) in the text at the request.
    pub(super) place: Option<(usize, usize)>,
}

/// The requests of both directions not answered yet.
#[derive(Debug, Default)]
pub(super) struct Pending {
    requests: HashMap<(Direction, String), PendingRequest>,
}

impl Pending {
    /// `request`, sent in `dir` with the raw id `id`, waits for its answer.
    pub(super) fn open(&mut self, dir: Direction, id: &str, request: PendingRequest) {
        self.requests.insert((dir, id.to_string()), request);
    }

    /// The request a response travelling in `dir` with the raw id `id` answers; taken,
    /// so a second answer to the same id pairs with nothing.
    pub(super) fn answer(&mut self, dir: Direction, id: &str) -> Option<PendingRequest> {
        self.requests.remove(&(dir.reverse(), id.to_string()))
    }
}
