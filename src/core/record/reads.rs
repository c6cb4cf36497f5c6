//! Reads: the lines a read request was made at (its position, its range, or the
//! document as a whole) and the locations its answer points at, streamed
//! `$/progress` chunks of a partial result included. Which methods are reads, and
//! what their answers hold, is [`crate::core::lsp::Method`]'s to say.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::document::{LspPosition, LspRange};
use super::documents::VersionedId;
use super::pending::PendingRequest;
use super::records::{ReadRecord, Record, Sequence};
use crate::core::lsp::{AnswerReads, Envelope};
use crate::core::trajectory::{LineRange, ReadRole};

/// The document and place a request is about (`TextDocumentPositionParams`, or a range).
#[derive(Deserialize)]
pub(super) struct PositionParams {
    #[serde(rename = "textDocument")]
    pub(super) text_document: VersionedId,
    #[serde(default)]
    position: Option<LspPosition>,
    #[serde(default)]
    range: Option<LspRange>,
}

impl PositionParams {
    /// The request's position, or its range's start.
    pub(super) fn at(&self) -> Option<LspPosition> {
        self.position.or(self.range.map(|r| r.start))
    }
}

/// The reads a session makes: read requests and the locations their answers (whole,
/// or streamed in `$/progress` chunks) point at.
#[derive(Debug, Default)]
pub(super) struct Reads {
    /// Partial-result tokens of open read requests: token → (request id, request).
    tokens: HashMap<String, (String, PendingRequest)>,
}

impl Reads {
    /// A read request that asked for its result in `$/progress` chunks.
    pub(super) fn open(&mut self, envelope: &Envelope<'_>, id: &str, request: &PendingRequest) {
        if let Some(token) = partial_result_token(envelope) {
            self.tokens.insert(token, (id.to_string(), request.clone()));
        }
    }

    /// The request `id` was answered: its chunks are over.
    pub(super) fn close(&mut self, id: &str) {
        if !self.tokens.is_empty() {
            self.tokens.retain(|_, (request_id, _)| request_id != id);
        }
    }

    /// Whether any read request is streaming (a cheap test before decoding `$/progress`).
    pub(super) fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// A read request: the position (or range, or whole document) it was made at.
    pub(super) fn on_read_request(
        &self,
        seqs: &mut Sequence,
        t_ns: u64,
        envelope: &Envelope<'_>,
        via: &str,
        out: &mut Vec<Record>,
    ) {
        let Some(params) = envelope.params_as::<PositionParams>() else {
            return;
        };
        let lines = match (params.position, params.range) {
            (Some(p), _) => LineRange::new(p.line as usize, p.line as usize + 1),
            (None, Some(r)) => range_lines(&r),
            // documentSymbol: the file as a whole, no particular lines.
            (None, None) => LineRange::new(0, 0),
        };
        let seq = seqs.next();
        out.push(Record::Read(ReadRecord {
            seq,
            t_ns,
            uri: params.text_document.uri,
            via: via.to_string(),
            role: ReadRole::Request,
            lines,
            request_id: envelope.id.map(str::to_string),
        }));
    }

    /// A successful answer to a read request: the locations it points at.
    pub(super) fn on_read_answer(
        &self,
        seqs: &mut Sequence,
        t_ns: u64,
        envelope: &Envelope<'_>,
        request: &PendingRequest,
        out: &mut Vec<Record>,
    ) {
        // Answers that point nowhere (code actions, symbols) are not parsed for reads.
        if request.method.answer_reads() == Some(AnswerReads::Nothing) {
            return;
        }
        let Some(result) = envelope.result_as::<Value>() else {
            return;
        };
        let request_id = envelope.id.map(str::to_string);
        self.push_targets(seqs, t_ns, request, request_id, &result, out);
    }

    /// A `$/progress` chunk of a read request's streamed result: its locations are reads too.
    pub(super) fn on_partial_result(
        &self,
        seqs: &mut Sequence,
        t_ns: u64,
        envelope: &Envelope<'_>,
        out: &mut Vec<Record>,
    ) {
        let Some(params) = envelope.params_as::<Value>() else {
            return;
        };
        let Some(token) = params.get("token").map(Value::to_string) else {
            return;
        };
        let Some((request_id, request)) = self.tokens.get(&token).cloned() else {
            return;
        };
        let Some(value) = params.get("value") else {
            return;
        };
        self.push_targets(seqs, t_ns, &request, Some(request_id), value, out);
    }

    /// The locations an answer (or a streamed chunk of it) points to, as target reads.
    fn push_targets(
        &self,
        seqs: &mut Sequence,
        t_ns: u64,
        request: &PendingRequest,
        request_id: Option<String>,
        answer: &Value,
        out: &mut Vec<Record>,
    ) {
        let Some(reads) = request.method.answer_reads() else {
            return;
        };
        let mut targets = Vec::new();
        collect_targets(reads, request.uri.as_deref(), answer, &mut targets);
        for (uri, lines) in targets {
            let seq = seqs.next();
            out.push(Record::Read(ReadRecord {
                seq,
                t_ns,
                uri,
                via: request.method.name().to_string(),
                role: ReadRole::Target,
                lines,
                request_id: request_id.clone(),
            }));
        }
    }
}

/// The raw JSON text of a request's `partialResultToken`, if it has one.
fn partial_result_token(envelope: &Envelope<'_>) -> Option<String> {
    let params = envelope.params_as::<Value>()?;
    params.get("partialResultToken").map(Value::to_string)
}

/// Lines covered by an LSP range; an end at column 0 of a later line excludes that line.
fn range_lines(range: &LspRange) -> LineRange {
    let start = range.start.line as usize;
    let end_line = range.end.line as usize;
    let end = if range.end.character == 0 && end_line > start {
        end_line
    } else {
        end_line + 1
    };
    LineRange::new(start, end.max(start))
}

/// Locations a read answer points at.
fn collect_targets(
    reads: AnswerReads,
    request_uri: Option<&str>,
    result: &Value,
    out: &mut Vec<(String, LineRange)>,
) {
    let range_of = LspRange::from_json;
    match reads {
        AnswerReads::Locations => {
            let items: Vec<&Value> = match result {
                Value::Array(items) => items.iter().collect(),
                Value::Object(_) => vec![result],
                _ => Vec::new(),
            };
            for item in items {
                let (uri, range) = match (item.get("targetUri"), item.get("uri")) {
                    (Some(uri), _) => (uri, item.get("targetRange")),
                    (None, Some(uri)) => (uri, item.get("range")),
                    _ => continue,
                };
                if let (Some(uri), Some(range)) = (uri.as_str(), range.and_then(range_of)) {
                    out.push((uri.to_string(), range_lines(&range)));
                }
            }
        }
        AnswerReads::HoverRange => {
            if let (Some(uri), Some(range)) = (request_uri, result.get("range").and_then(range_of))
            {
                out.push((uri.to_string(), range_lines(&range)));
            }
        }
        AnswerReads::Highlights => {
            if let (Some(uri), Value::Array(items)) = (request_uri, result) {
                for item in items {
                    if let Some(range) = item.get("range").and_then(range_of) {
                        out.push((uri.to_string(), range_lines(&range)));
                    }
                }
            }
        }
        AnswerReads::Nothing => {}
    }
}
