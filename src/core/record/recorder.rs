//! The session recorder: a state machine from observed frames to records.
//!
//! It sees a copy of every frame in both directions (never the forwarding path),
//! pairs requests with responses by (direction of the request, raw id), decodes each
//! message's method once ([`Method`]) and dispatches on it: session facts
//! (`initialize`, workspace folders) and editor signals here, the rest to trackers
//! that each own their state: the requests waiting for answers ([`super::pending`]),
//! documents ([`super::documents`]), reads ([`super::reads`]), tools' proposed edits
//! ([`super::origin`]) and what servers offered ([`super::offers`]); the recorder
//! composes them and hands each what it needs of the others. It emits [`Record`]s for
//! the store and does no I/O: reading `.nexteditignore` or git state is the caller's
//! job ([`SessionRecorder::set_privacy`]).

use std::collections::HashMap;

use crate::core::lsp::AnswerEdits;
use serde_json::Value;

use super::completion::{CompletionAnswer, CompletionItem};
use super::document::{PositionEncoding, ShadowDocument};
use super::documents::{DidChange, DidClose, DidOpen, DidSave, Documents};
use super::offers::{self, Offers};
use super::origin::{self, OriginTracker, ProposedEdits};
use super::pending::{Pending, PendingRequest};
use super::privacy::{PrivacyFilter, redact_secrets};
use super::reads::{PositionParams, Reads};
use super::records::{MessageRecord, Record, Sequence, SessionFact, SignalRecord};
use super::uri::uri_to_path;
use crate::core::lsp::{Direction, Envelope, MessageKind, Method};
use crate::core::trajectory::Origin;

/// Recorder settings.
#[derive(Debug, Clone)]
pub struct RecorderConfig {
    /// Store the editor's messages' raw bytes (redacted) as well as their metadata.
    pub record_raw: bool,
    /// Store the server's messages' raw bytes too. Off by default: a server's
    /// answers about a normal file quote other files (hover docstrings, completion
    /// details, constants), excluded ones included, and cannot be attributed.
    pub record_server_raw: bool,
    /// Which files are never stored.
    pub privacy: PrivacyFilter,
    /// Workspace root given on the command line (else taken from `initialize`).
    pub workspace: Option<String>,
}

/// The recorder's state for one session: its trackers, composed.
#[derive(Debug)]
pub struct SessionRecorder {
    /// Store the editor's messages' raw bytes (redacted).
    record_raw: bool,
    /// Store the server's messages' raw bytes too.
    record_server_raw: bool,
    /// Numbers every frame and every record.
    seqs: Sequence,
    /// Requests waiting for their responses.
    pending: Pending,
    /// The documents: which are excluded, their shadow copies, workspace and encoding.
    documents: Documents,
    /// Read requests and the locations their answers point at.
    reads: Reads,
    /// Tools' proposed edits waiting for the didChange that applies them.
    origins: OriginTracker,
    /// What servers offered (and the latest completion list, for resolves).
    offers: Offers,
    /// Document of the latest completion request (`completionItem/resolve` names none).
    completion_uri: Option<String>,
    /// Open `workspace/applyEdit` requests: server's raw id → the tracker's answer number.
    apply_edits: HashMap<String, u64>,
}

impl SessionRecorder {
    /// A recorder for a new session.
    pub fn new(config: RecorderConfig) -> SessionRecorder {
        let RecorderConfig {
            record_raw,
            record_server_raw,
            privacy,
            workspace,
        } = config;
        SessionRecorder {
            record_raw,
            record_server_raw,
            seqs: Sequence::default(),
            pending: Pending::default(),
            documents: Documents::new(privacy, workspace),
            reads: Reads::default(),
            origins: OriginTracker::new(),
            offers: Offers::default(),
            completion_uri: None,
            apply_edits: HashMap::new(),
        }
    }

    /// Replaces the privacy filter (after the workspace's ignore file was read).
    pub fn set_privacy(&mut self, privacy: PrivacyFilter) {
        self.documents.set_privacy(privacy);
    }

    /// The privacy filter in force.
    pub fn privacy(&self) -> &PrivacyFilter {
        self.documents.privacy()
    }

    /// The position encoding in effect.
    pub fn encoding(&self) -> PositionEncoding {
        self.documents.encoding()
    }

    /// Current text of an open document (for tests and diagnostics).
    pub fn document_text(&self, uri: &str) -> Option<String> {
        self.documents.get(uri).map(ShadowDocument::text)
    }

    /// The sequence number the next frame will get.
    pub fn next_seq_number(&self) -> u64 {
        self.seqs.last() + 1
    }

    /// Workspace-relative path of a URI, else its absolute path, else the URI.
    pub fn relative_path(&self, uri: &str) -> String {
        self.documents.relative_path(uri)
    }

    /// Records bytes that did not form a frame.
    pub fn observe_invalid(
        &mut self,
        dir: Direction,
        t_ns: u64,
        bytes: &[u8],
        why: &str,
    ) -> Record {
        let seq = self.seqs.next();
        // Bytes that are not a message cannot be checked against the privacy rules
        // (an excluded didOpen that is not valid JSON names its file in vain): their
        // size and the reason are kept, never the bytes.
        Record::Message(MessageRecord {
            invalid: Some(why.to_string()),
            ..bare_message(seq, t_ns, dir, bytes.len())
        })
    }

    /// Records one complete frame; `consumed` marks editor signals the proxy kept back.
    pub fn observe_frame(
        &mut self,
        dir: Direction,
        t_ns: u64,
        frame: &[u8],
        header_len: usize,
        consumed: bool,
    ) -> Vec<Record> {
        let body = &frame[header_len..];
        let seq = self.seqs.next();
        let mut envelope = match Envelope::parse(body) {
            Ok(envelope) => envelope,
            Err(error) => {
                return vec![Record::Message(MessageRecord {
                    invalid: Some(not_json_rpc(&error)),
                    consumed,
                    ..bare_message(seq, t_ns, dir, frame.len())
                })];
            }
        };
        let mut out = Vec::new();
        let answered = match (envelope.kind, envelope.id) {
            (MessageKind::Response, Some(id)) => self.pending.answer(dir, id),
            _ => None,
        };
        let concerns_excluded =
            self.documents
                .note_documents(&self.seqs, &envelope, answered.as_ref(), &mut out);
        let method_name = envelope
            .method
            .clone()
            .or_else(|| answered.as_ref().map(|p| p.method.name().to_string()));
        let (raw, redactions) = self.raw_copy(dir, frame, concerns_excluded);
        out.insert(
            0,
            Record::Message(MessageRecord {
                seq,
                t_ns,
                dir,
                kind: Some(envelope.kind),
                method: method_name,
                id: envelope.id.map(str::to_string),
                size: frame.len(),
                raw,
                redactions,
                invalid: None,
                consumed,
            }),
        );
        // The method string is decoded here, once (keeping its allocation); everything
        // below matches on it.
        let method = envelope.method.take().map(Method::from_string);
        match (envelope.kind, method) {
            (MessageKind::Request, Some(method)) => {
                self.on_request(dir, seq, t_ns, &envelope, method, &mut out);
            }
            (MessageKind::Notification, Some(method)) => {
                self.on_notification(dir, t_ns, &envelope, &method, &mut out);
            }
            (MessageKind::Response, _) => {
                if let Some(request) = answered {
                    let id = envelope.id.unwrap_or_default();
                    self.reads.close(id);
                    if dir == Direction::ServerToClient {
                        self.on_tool_answer(seq, t_ns, &envelope, &request, &mut out);
                    } else if request.method == Method::ApplyEdit {
                        self.on_apply_edit_answer(&envelope, id);
                    }
                    self.on_response(t_ns, &envelope, &request, &mut out);
                }
            }
            _ => {}
        }
        out
    }

    fn raw_copy(
        &self,
        dir: Direction,
        frame: &[u8],
        concerns_excluded: bool,
    ) -> (Option<Vec<u8>>, usize) {
        let wanted = match dir {
            Direction::ClientToServer => self.record_raw,
            Direction::ServerToClient => self.record_raw && self.record_server_raw,
        };
        if !wanted || concerns_excluded || self.mentions_excluded(frame) {
            return (None, 0);
        }
        let mut raw = frame.to_vec();
        let n = redact_secrets(&mut raw);
        (Some(raw), n)
    }

    fn mentions_excluded(&self, frame: &[u8]) -> bool {
        self.documents
            .excluded_uris()
            .any(|uri| memchr::memmem::find(frame, uri.as_bytes()).is_some())
    }

    /// A request: what it records, then (when it has an id) its wait for the answer.
    fn on_request(
        &mut self,
        dir: Direction,
        seq: u64,
        t_ns: u64,
        envelope: &Envelope<'_>,
        method: Method,
        out: &mut Vec<Record>,
    ) {
        let params = envelope.params_as::<PositionParams>();
        // Only requests answered with offers need their place in the text.
        let position = params
            .as_ref()
            .filter(|_| method.offers().is_some())
            .and_then(PositionParams::at);
        let uri = params.map(|p| p.text_document.uri);
        let place = position.and_then(|at| {
            let doc = self.documents.get(uri.as_deref()?)?;
            Some(offers::place(doc, at, self.documents.encoding()))
        });
        self.record_request(dir, seq, t_ns, envelope, &method, out);
        if let Some(id) = envelope.id {
            let request = PendingRequest {
                method,
                uri,
                seq,
                t_ns,
                position,
                place,
            };
            if dir == Direction::ClientToServer && request.method.is_read() {
                self.reads.open(envelope, id, &request);
            }
            self.pending.open(dir, id, request);
        }
    }

    fn record_request(
        &mut self,
        dir: Direction,
        seq: u64,
        t_ns: u64,
        envelope: &Envelope<'_>,
        method: &Method,
        out: &mut Vec<Record>,
    ) {
        match (dir, method) {
            (Direction::ClientToServer, Method::Initialize) => self.on_initialize(envelope, out),
            (Direction::ServerToClient, Method::ApplyEdit) => {
                self.on_apply_edit(seq, t_ns, envelope, out)
            }
            (Direction::ClientToServer, method) => {
                if *method == Method::Completion {
                    self.completion_uri = envelope
                        .params_as::<PositionParams>()
                        .map(|p| p.text_document.uri);
                }
                if method.is_read() {
                    self.reads
                        .on_read_request(&mut self.seqs, t_ns, envelope, method.name(), out);
                }
            }
            (Direction::ServerToClient, _) => {}
        }
    }

    fn on_initialize(&mut self, envelope: &Envelope<'_>, out: &mut Vec<Record>) {
        let Some(params) = envelope.params_as::<Value>() else {
            return;
        };
        if let Some(name) = params.pointer("/clientInfo/name").and_then(Value::as_str) {
            let version = params
                .pointer("/clientInfo/version")
                .and_then(Value::as_str);
            out.push(Record::Session(SessionFact::Client(join_name(
                name, version,
            ))));
        }
        if self.documents.workspace().is_none() {
            let root = params
                .pointer("/workspaceFolders/0/uri")
                .or_else(|| params.get("rootUri"))
                .and_then(Value::as_str)
                .and_then(uri_to_path)
                .or_else(|| {
                    params
                        .get("rootPath")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            if let Some(root) = root {
                self.documents.set_workspace(root.clone());
                out.push(Record::Session(SessionFact::Workspace(root)));
            }
        }
        if let Some(folders) = params.get("workspaceFolders") {
            self.note_roots(folders, out);
        }
    }

    /// Workspace folders other than the workspace root: their ignore files count too.
    fn note_roots(&mut self, folders: &Value, out: &mut Vec<Record>) {
        let Some(folders) = folders.as_array() else {
            return;
        };
        for folder in folders {
            let Some(root) = folder
                .get("uri")
                .and_then(Value::as_str)
                .and_then(uri_to_path)
            else {
                continue;
            };
            if self.documents.workspace().map(|w| w.trim_end_matches('/'))
                != Some(root.trim_end_matches('/'))
            {
                let prefix = self.documents.relative_path(&format!("file://{root}"));
                out.push(Record::Session(SessionFact::Root {
                    dir: root,
                    prefix: prefix.trim_start_matches('/').to_string(),
                }));
            }
        }
    }

    fn on_notification(
        &mut self,
        dir: Direction,
        t_ns: u64,
        envelope: &Envelope<'_>,
        method: &Method,
        out: &mut Vec<Record>,
    ) {
        if dir == Direction::ServerToClient && *method == Method::Progress && !self.reads.is_empty()
        {
            self.reads
                .on_partial_result(&mut self.seqs, t_ns, envelope, out);
            return;
        }
        if dir != Direction::ClientToServer {
            return;
        }
        match method {
            Method::DidChangeWorkspaceFolders => {
                if let Some(added) = envelope
                    .params_as::<Value>()
                    .and_then(|p| p.pointer("/event/added").cloned())
                {
                    self.note_roots(&added, out);
                }
            }
            Method::DidOpen => {
                if let Some(params) = envelope.params_as::<DidOpen>() {
                    self.documents.on_did_open(
                        &mut self.seqs,
                        &mut self.origins,
                        t_ns,
                        params.text_document,
                        out,
                    );
                }
            }
            Method::DidChange => {
                if let Some(params) = envelope.params_as::<DidChange>() {
                    self.documents.on_did_change(
                        &mut self.seqs,
                        &mut self.origins,
                        t_ns,
                        params,
                        out,
                    );
                }
            }
            Method::DidSave => {
                if let Some(params) = envelope.params_as::<DidSave>() {
                    self.documents
                        .on_did_save(&mut self.seqs, t_ns, params, out);
                }
            }
            Method::DidClose => {
                if let Some(params) = envelope.params_as::<DidClose>() {
                    self.documents.on_did_close(
                        &mut self.seqs,
                        &mut self.origins,
                        t_ns,
                        params,
                        out,
                    );
                }
            }
            Method::Signal(_) => self.on_signal(t_ns, envelope, method, out),
            _ => {}
        }
    }

    /// An editor signal (`$/nextedit/…`): its kind, file and payload.
    fn on_signal(
        &mut self,
        t_ns: u64,
        envelope: &Envelope<'_>,
        method: &Method,
        out: &mut Vec<Record>,
    ) {
        let kind = signal_kind(method.signal().unwrap_or_default());
        let payload = envelope.params_as::<Value>().unwrap_or(Value::Null);
        let uri = payload
            .pointer("/textDocument/uri")
            .or_else(|| payload.get("uri"))
            .and_then(Value::as_str)
            .map(str::to_string);
        // A signal about an excluded file keeps its kind, file and time, not
        // its payload (which may quote the file: selections, visible text).
        let payload = match &uri {
            Some(uri) if self.documents.is_excluded(uri) => Value::Null,
            _ => payload,
        };
        let seq = self.seqs.next();
        out.push(Record::Signal(SignalRecord {
            seq,
            t_ns,
            kind,
            uri,
            payload,
        }));
    }

    /// `workspace/applyEdit` from the server: its edits are a code action's, and an offer.
    fn on_apply_edit(
        &mut self,
        seq: u64,
        t_ns: u64,
        envelope: &Envelope<'_>,
        out: &mut Vec<Record>,
    ) {
        let Some(params) = envelope.params_as::<Value>() else {
            return;
        };
        self.offers
            .on_apply_edit_offer(&self.documents, seq, t_ns, &params, out);
        if let Some(edit) = params.get("edit") {
            let proposals = origin::workspace_edit(edit);
            if let (Some(answer), Some(id)) = (
                self.expect(t_ns, Origin::CodeAction, false, vec![proposals]),
                envelope.id,
            ) {
                self.apply_edits.insert(id.to_string(), answer);
            }
        }
    }

    /// An answer that proposes edits or makes offers (parsed once, here): offers are
    /// recorded, and proposed edits become expectations for later changes.
    fn on_tool_answer(
        &mut self,
        seq: u64,
        t_ns: u64,
        envelope: &Envelope<'_>,
        request: &PendingRequest,
        out: &mut Vec<Record>,
    ) {
        // Cheap test first: only these answers are parsed.
        let answer = request.method.answer_edits();
        if (answer.is_none() && request.method.offers().is_none()) || envelope.error.is_some() {
            return;
        }
        let Some(raw) = envelope.result else {
            return;
        };
        // Completion answers, the largest and most frequent, are read typed (see
        // `super::completion`); the others as values.
        let proposals = match answer {
            Some(AnswerEdits::CompletionItems) => {
                let list = CompletionAnswer::parse(raw);
                self.offers
                    .on_completion_answer(&self.documents, seq, t_ns, &list, request, out);
                // The word at the request's place, in the text as it is now (typing
                // since the request made it longer): what the editor replaces with an
                // item that has no edit.
                let typed_word = request.position.and_then(|at| {
                    let doc = self.documents.get(request.uri.as_deref()?)?;
                    Some(doc.word_range(at, self.documents.encoding()))
                });
                request
                    .uri
                    .as_deref()
                    .map(|uri| (true, origin::completion_list(uri, &list, typed_word)))
            }
            Some(AnswerEdits::ResolvedCompletionItem) => {
                let item = CompletionItem::parse(raw);
                self.offers
                    .on_completion_resolve(&self.documents, &item, out);
                self.completion_uri
                    .as_deref()
                    .map(|uri| (false, origin::completion_item(uri, &item)))
            }
            _ => {
                let Some(result) = envelope.result_as::<Value>() else {
                    return;
                };
                self.offers
                    .on_offer_answer(&self.documents, seq, t_ns, &result, request, out);
                answer.and_then(|answer| {
                    origin::answer_proposals(answer, &result, request.uri.as_deref())
                })
            }
        };
        let (Some(answer), Some((list, alternatives))) = (answer, proposals) else {
            return;
        };
        self.expect(t_ns, origin::answer_origin(answer), list, alternatives);
    }

    /// The editor's answer to `workspace/applyEdit`: a refusal withdraws its edits.
    fn on_apply_edit_answer(&mut self, envelope: &Envelope<'_>, id: &str) {
        let Some(answer) = self.apply_edits.remove(id) else {
            return;
        };
        let refused = envelope.error.is_some()
            || envelope
                .result_as::<Value>()
                .is_some_and(|r| r.get("applied") == Some(&Value::Bool(false)));
        if refused {
            self.origins.withdraw(answer);
        }
    }

    fn expect(
        &mut self,
        t_ns: u64,
        kind: Origin,
        list: bool,
        mut alternatives: Vec<Vec<ProposedEdits>>,
    ) -> Option<u64> {
        // Excluded documents' changes are never stored: nothing to tag.
        for proposals in &mut alternatives {
            proposals.retain(|p| !self.documents.is_excluded(&p.uri));
        }
        self.origins.expect(
            t_ns,
            kind,
            list,
            alternatives,
            self.documents.open_documents(),
            self.documents.encoding(),
        )
    }

    fn on_response(
        &mut self,
        t_ns: u64,
        envelope: &Envelope<'_>,
        request: &PendingRequest,
        out: &mut Vec<Record>,
    ) {
        if request.method == Method::Initialize {
            if let Some(result) = envelope.result_as::<Value>() {
                let encoding = result
                    .pointer("/capabilities/positionEncoding")
                    .and_then(Value::as_str)
                    .and_then(PositionEncoding::parse)
                    .unwrap_or_default();
                self.documents.set_encoding(encoding);
                out.push(Record::Session(SessionFact::PositionEncoding(encoding)));
                if let Some(name) = result.pointer("/serverInfo/name").and_then(Value::as_str) {
                    let version = result
                        .pointer("/serverInfo/version")
                        .and_then(Value::as_str);
                    out.push(Record::Session(SessionFact::Server(join_name(
                        name, version,
                    ))));
                }
            }
            return;
        }
        if request.method.is_read() && envelope.error.is_none() {
            self.reads
                .on_read_answer(&mut self.seqs, t_ns, envelope, request, out);
        }
    }
}

/// The record of `size` bytes that are not a message: no kind, method, id or bytes.
fn bare_message(seq: u64, t_ns: u64, dir: Direction, size: usize) -> MessageRecord {
    MessageRecord {
        seq,
        t_ns,
        dir,
        kind: None,
        method: None,
        id: None,
        size,
        raw: None,
        redactions: 0,
        invalid: None,
        consumed: false,
    }
}

/// Why a frame's body is not a message: what kind of error, and where (neither the
/// bytes nor serde's message, which may quote them).
fn not_json_rpc(error: &serde_json::Error) -> String {
    format!(
        "body is not a JSON-RPC object: {} error at line {} column {}",
        match error.classify() {
            serde_json::error::Category::Io => "I/O",
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "data",
            serde_json::error::Category::Eof => "end-of-input",
        },
        error.line(),
        error.column()
    )
}

fn join_name(name: &str, version: Option<&str>) -> String {
    match version {
        Some(version) => format!("{name} {version}"),
        None => name.to_string(),
    }
}

/// `visibleRanges` → `visible_ranges`: signal kinds in snake case.
fn signal_kind(suffix: &str) -> String {
    let mut out = String::with_capacity(suffix.len() + 4);
    for c in suffix.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lsp::framing::encode_frame;
    use crate::core::trajectory::{LineRange, ReadRole};

    fn recorder() -> SessionRecorder {
        SessionRecorder::new(RecorderConfig {
            record_raw: true,
            record_server_raw: true,
            privacy: PrivacyFilter::with_defaults(),
            workspace: Some("/ws".into()),
        })
    }

    fn feed(rec: &mut SessionRecorder, dir: Direction, body: serde_json::Value) -> Vec<Record> {
        let body = body.to_string();
        let frame = encode_frame(body.as_bytes());
        rec.observe_frame(dir, 7, &frame, frame.len() - body.len(), false)
    }

    fn reads(records: &[Record]) -> Vec<(String, String, ReadRole, LineRange)> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Read(r) => Some((r.uri.clone(), r.via.clone(), r.role, r.lines)),
                _ => None,
            })
            .collect()
    }

    const C2S: Direction = Direction::ClientToServer;
    const S2C: Direction = Direction::ServerToClient;

    #[test]
    fn responses_pair_by_direction_and_raw_id() {
        let mut rec = recorder();
        let at = serde_json::json!({"textDocument": {"uri": "file:///ws/a.py"}, "position": {"line": 4, "character": 2}});
        feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "textDocument/definition", "params": at}),
        );
        // The server's own request 1 and a client request "1" (a string id) are other requests.
        feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "workspace/configuration", "params": {"items": []}}),
        );
        feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": "1", "method": "textDocument/references", "params": at}),
        );
        // The client answers the server's request 1: no read.
        let out = feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": [null]}),
        );
        assert_eq!(reads(&out), vec![]);
        let Record::Message(m) = &out[0] else {
            panic!()
        };
        assert_eq!(m.method.as_deref(), Some("workspace/configuration"));
        // The server answers the client's definition (id 1).
        let target = serde_json::json!([{"targetUri": "file:///ws/b.py", "targetRange": {"start": {"line": 10, "character": 0}, "end": {"line": 12, "character": 0}},
                                         "targetSelectionRange": {"start": {"line": 10, "character": 4}, "end": {"line": 10, "character": 7}}}]);
        let out = feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": target}),
        );
        assert_eq!(
            reads(&out),
            vec![(
                "file:///ws/b.py".into(),
                "textDocument/definition".into(),
                ReadRole::Target,
                LineRange::new(10, 12)
            )]
        );
        // And the string-id references request.
        let refs = serde_json::json!([{"uri": "file:///ws/c.py", "range": {"start": {"line": 3, "character": 1}, "end": {"line": 3, "character": 5}}}]);
        let out = feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": "1", "result": refs}),
        );
        assert_eq!(
            reads(&out),
            vec![(
                "file:///ws/c.py".into(),
                "textDocument/references".into(),
                ReadRole::Target,
                LineRange::new(3, 4)
            )]
        );
        // A second answer to the same id pairs with nothing.
        let out = feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": "1", "result": refs}),
        );
        assert_eq!(reads(&out), vec![]);
    }

    #[test]
    fn streamed_partial_results_are_reads() {
        let mut rec = recorder();
        let params = serde_json::json!({"textDocument": {"uri": "file:///ws/a.py"}, "position": {"line": 1, "character": 0},
                                        "context": {"includeDeclaration": true}, "partialResultToken": "p1"});
        feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": "textDocument/references", "params": params}),
        );
        let chunk = serde_json::json!([{"uri": "file:///ws/b.py", "range": {"start": {"line": 7, "character": 0}, "end": {"line": 7, "character": 3}}}]);
        let out = feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "p1", "value": chunk}}),
        );
        assert_eq!(
            reads(&out),
            vec![(
                "file:///ws/b.py".into(),
                "textDocument/references".into(),
                ReadRole::Target,
                LineRange::new(7, 8)
            )]
        );
        feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 5, "result": []}),
        );
        // After the response the token is closed.
        let out = feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "p1", "value": chunk}}),
        );
        assert_eq!(reads(&out), vec![]);
    }

    #[test]
    fn server_chosen_utf8_and_full_sync() {
        let mut rec = recorder();
        feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {"general": {"positionEncodings": ["utf-8", "utf-16"]}}}}),
        );
        let out = feed(
            &mut rec,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {"positionEncoding": "utf-8"}, "serverInfo": {"name": "srv", "version": "1"}}}),
        );
        assert!(out.contains(&Record::Session(SessionFact::PositionEncoding(
            PositionEncoding::Utf8
        ))));
        assert!(out.contains(&Record::Session(SessionFact::Server("srv 1".into()))));
        feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///ws/a.py", "languageId": "python", "version": 1, "text": "é = 1\n"}}}),
        );
        // utf-8 positions count bytes: character 2 is just after "é".
        let out = feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": "file:///ws/a.py", "version": 2},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 2}}, "text": "x"}, {"text": "ex = 2\n"}]}}),
        );
        let edits: Vec<(usize, usize, String, String)> = out
            .iter()
            .filter_map(|r| match r {
                Record::Edit(e) => Some((
                    e.span.start_byte,
                    e.span.end_byte,
                    e.span.before.clone(),
                    e.span.after.clone(),
                )),
                _ => None,
            })
            .collect();
        // The full-text change is stored as its smallest replacement.
        assert_eq!(
            edits,
            vec![
                (2, 2, "".into(), "x".into()),
                (0, 7, "éx = 1".into(), "ex = 2".into())
            ]
        );
        assert_eq!(
            rec.document_text("file:///ws/a.py").as_deref(),
            Some("ex = 2\n")
        );
    }

    fn feed_at(rec: &mut SessionRecorder, t_s: u64, dir: Direction, body: Value) -> Vec<Record> {
        let body = body.to_string();
        let frame = encode_frame(body.as_bytes());
        rec.observe_frame(
            dir,
            t_s * 1_000_000_000,
            &frame,
            frame.len() - body.len(),
            false,
        )
    }

    /// (uri, after-text, origin) of each edit record.
    fn origins(records: &[Record]) -> Vec<(String, String, Origin)> {
        records
            .iter()
            .filter_map(|r| match r {
                Record::Edit(e) => Some((
                    e.uri.rsplit('/').next().unwrap().to_string(),
                    e.span.after.clone(),
                    e.origin,
                )),
                _ => None,
            })
            .collect()
    }

    fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
        serde_json::json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
    }

    fn edit(l1: u32, c1: u32, l2: u32, c2: u32, text: &str) -> Value {
        serde_json::json!({"range": range(l1, c1, l2, c2), "newText": text})
    }

    fn open(rec: &mut SessionRecorder, name: &str, text: &str) {
        feed_at(
            rec,
            0,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": format!("file:///ws/{name}"), "languageId": "go", "version": 1, "text": text}}}),
        );
    }

    fn change(rec: &mut SessionRecorder, t_s: u64, name: &str, changes: Value) -> Vec<Record> {
        feed_at(
            rec,
            t_s,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"textDocument": {"uri": format!("file:///ws/{name}"), "version": 9}, "contentChanges": changes}}),
        )
    }

    fn ask(
        rec: &mut SessionRecorder,
        t_s: u64,
        id: u64,
        method: &str,
        params: Value,
        result: Value,
    ) {
        feed_at(
            rec,
            t_s,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        feed_at(
            rec,
            t_s,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }

    fn doc(name: &str) -> Value {
        serde_json::json!({"textDocument": {"uri": format!("file:///ws/{name}")}})
    }

    fn tagged(name: &str, after: &str, origin: Origin) -> (String, String, Origin) {
        (name.to_string(), after.to_string(), origin)
    }

    #[test]
    fn formatting_edits_are_tagged_in_every_form_an_editor_sends_them() {
        // UTF-16 positions: the emoji is two code units.
        let text = "s := \"😀\"  ;x\nfunc  f() {}\n";
        let answer = serde_json::json!([edit(0, 9, 0, 12, ""), edit(1, 4, 1, 6, " ")]);
        // Several incremental changes in one didChange, last edit first.
        let mut rec = recorder();
        open(&mut rec, "a.go", text);
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer.clone(),
        );
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(1, 4, 1, 6), "text": " "}, {"range": range(0, 9, 0, 12), "text": ""}]),
        );
        assert_eq!(
            origins(&out),
            vec![
                tagged("a.go", " ", Origin::Format),
                tagged("a.go", "", Origin::Format)
            ]
        );
        // Consumed: the same change again is the user's.
        let out = change(
            &mut rec,
            2,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 0), "text": "// "}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "// ", Origin::User)]);

        // One full-text replacement whose result is the formatted text.
        let mut rec = recorder();
        open(&mut rec, "a.go", text);
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer.clone(),
        );
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"text": "s := \"😀\"x\nfunc f() {}\n"}]),
        );
        assert_eq!(
            origins(&out),
            vec![tagged("a.go", "x\nfunc", Origin::Format)]
        );

        // One didChange per edit, in any order, with the editor's minimised form of
        // the second ("  " → " " sent as deleting one space).
        let mut rec = recorder();
        open(&mut rec, "a.go", text);
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer,
        );
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(1, 5, 1, 6), "text": ""}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "", Origin::Format)]);
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(0, 9, 0, 12), "text": ""}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "", Origin::Format)]);
        assert_eq!(
            rec.document_text("file:///ws/a.go").as_deref(),
            Some("s := \"😀\"x\nfunc f() {}\n")
        );
    }

    #[test]
    fn rename_edits_are_tagged_in_open_and_later_opened_documents() {
        let mut rec = recorder();
        open(&mut rec, "a.go", "func old() {}\nvar x = old()\n");
        let mut params = doc("a.go");
        params["position"] = serde_json::json!({"line": 0, "character": 6});
        params["newName"] = serde_json::json!("fresh");
        let answer = serde_json::json!({"documentChanges": [
            {"textDocument": {"uri": "file:///ws/a.go", "version": 1}, "edits": [edit(0, 5, 0, 8, "fresh"), edit(1, 8, 1, 11, "fresh")]},
            {"textDocument": {"uri": "file:///ws/b.go", "version": 1}, "edits": [edit(0, 4, 0, 7, "fresh")]}
        ]});
        ask(&mut rec, 1, 1, "textDocument/rename", params, answer);
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(1, 8, 1, 11), "text": "fresh"}, {"range": range(0, 5, 0, 8), "text": "fresh"}]),
        );
        assert_eq!(
            origins(&out),
            vec![
                tagged("a.go", "fresh", Origin::Rename),
                tagged("a.go", "fresh", Origin::Rename)
            ]
        );
        // b.go was not open: the editor opens it, then applies the edit.
        open(&mut rec, "b.go", "x = old()\n");
        let out = change(
            &mut rec,
            2,
            "b.go",
            serde_json::json!([{"range": range(0, 4, 0, 7), "text": "fresh"}]),
        );
        assert_eq!(origins(&out), vec![tagged("b.go", "fresh", Origin::Rename)]);
    }

    #[test]
    fn code_actions_and_apply_edit_are_tagged_and_unchosen_actions_expire() {
        let mut rec = recorder();
        open(&mut rec, "a.go", "import (\n\t\"os\"\n\t\"fmt\"\n)\n");
        // The server pushes an edit with workspace/applyEdit (a command's result).
        feed_at(
            &mut rec,
            1,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "workspace/applyEdit",
                               "params": {"edit": {"changes": {"file:///ws/a.go": [edit(1, 0, 2, 0, "")]}}}}),
        );
        feed_at(
            &mut rec,
            1,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": {"applied": true}}),
        );
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(1, 0, 2, 0), "text": ""}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "", Origin::CodeAction)]);
        // An edit the editor refused is not expected any more.
        feed_at(
            &mut rec,
            1,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "workspace/applyEdit",
                               "params": {"edit": {"changes": {"file:///ws/a.go": [edit(0, 0, 0, 0, "// x\n")]}}}}),
        );
        feed_at(
            &mut rec,
            1,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"applied": false, "failureReason": "no"}}),
        );
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 0), "text": "// x\n"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "// x\n", Origin::User)]);
        change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 1, 0), "text": ""}]),
        );
        // Two actions offered; the developer picks the second.
        let actions = serde_json::json!([
            {"title": "one", "edit": {"changes": {"file:///ws/a.go": [edit(0, 0, 0, 0, "// one\n")]}}},
            {"title": "cmd", "command": {"title": "cmd", "command": "x"}},
            {"title": "two", "edit": {"changes": {"file:///ws/a.go": [edit(1, 1, 1, 6, "\"io\"")]}}}
        ]);
        let mut params = doc("a.go");
        params["range"] = range(1, 0, 1, 0);
        params["context"] = serde_json::json!({"diagnostics": []});
        ask(&mut rec, 2, 1, "textDocument/codeAction", params, actions);
        let out = change(
            &mut rec,
            2,
            "a.go",
            serde_json::json!([{"range": range(1, 1, 1, 6), "text": "\"io\""}]),
        );
        assert_eq!(
            origins(&out),
            vec![tagged("a.go", "\"io\"", Origin::CodeAction)]
        );
        // The first action was not chosen: typing its text is the developer's.
        let out = change(
            &mut rec,
            3,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 0), "text": "// one\n"}]),
        );
        assert_eq!(
            origins(&out),
            vec![tagged("a.go", "// one\n", Origin::User)]
        );
    }

    #[test]
    fn completion_edits_follow_the_typed_prefix() {
        let mut rec = recorder();
        open(&mut rec, "a.go", "package main\nfunc f() { fmt.Pr }\n");
        let mut params = doc("a.go");
        params["position"] = serde_json::json!({"line": 1, "character": 17});
        let items = serde_json::json!({"isIncomplete": false, "items": [
            {"label": "Print", "textEdit": edit(1, 15, 1, 17, "Print")},
            {"label": "Println", "textEdit": {"newText": "Println", "insert": range(1, 15, 1, 17), "replace": range(1, 15, 1, 17)},
             "additionalTextEdits": [edit(0, 12, 0, 12, "\nimport \"fmt\"")]}
        ]});
        ask(&mut rec, 1, 1, "textDocument/completion", params, items);
        // The developer types one more letter of the prefix while the menu is open …
        let out = change(
            &mut rec,
            2,
            "a.go",
            serde_json::json!([{"range": range(1, 17, 1, 17), "text": "i"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "i", Origin::User)]);
        // … then accepts Println: the replaced range grew with the prefix.
        let out = change(
            &mut rec,
            3,
            "a.go",
            serde_json::json!([{"range": range(1, 15, 1, 18), "text": "Println"}, {"range": range(0, 12, 0, 12), "text": "\nimport \"fmt\""}]),
        );
        assert_eq!(
            origins(&out),
            vec![
                tagged("a.go", "Println", Origin::Completion),
                tagged("a.go", "\nimport \"fmt\"", Origin::Completion)
            ]
        );
        // completionItem/resolve adds edits to the document of the latest completion.
        let mut params = doc("a.go");
        params["position"] = serde_json::json!({"line": 0, "character": 0});
        ask(
            &mut rec,
            4,
            2,
            "textDocument/completion",
            params,
            serde_json::json!([]),
        );
        ask(
            &mut rec,
            4,
            3,
            "completionItem/resolve",
            serde_json::json!({"label": "x"}),
            serde_json::json!({"label": "x", "additionalTextEdits": [edit(0, 0, 0, 0, "// x\n")]}),
        );
        let out = change(
            &mut rec,
            4,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 0), "text": "// x\n"}]),
        );
        assert_eq!(
            origins(&out),
            vec![tagged("a.go", "// x\n", Origin::Completion)]
        );
    }

    #[test]
    fn completion_items_without_an_edit_use_the_lists_default_range() {
        let mut rec = recorder();
        open(&mut rec, "a.py", "import os\nos.getc\n");
        let mut params = doc("a.py");
        params["position"] = serde_json::json!({"line": 1, "character": 7});
        // LSP 3.17 `itemDefaults.editRange`: plain and insert/replace forms.
        let items = serde_json::json!({"isIncomplete": false,
            "itemDefaults": {"editRange": range(1, 3, 1, 7)},
            "items": [{"label": "getcwd"}, {"label": "getcwdb", "textEditText": "getcwdb()"}]});
        ask(
            &mut rec,
            1,
            1,
            "textDocument/completion",
            params.clone(),
            items,
        );
        let out = change(
            &mut rec,
            2,
            "a.py",
            serde_json::json!([{"range": range(1, 3, 1, 7), "text": "getcwdb()"}]),
        );
        assert_eq!(
            origins(&out),
            vec![tagged("a.py", "getcwdb()", Origin::Completion)]
        );
        let items = serde_json::json!({"isIncomplete": false,
            "itemDefaults": {"editRange": {"insert": range(1, 3, 1, 12), "replace": range(1, 3, 1, 12)}},
            "items": [{"label": "getpid", "insertText": "getpid"}]});
        ask(&mut rec, 3, 2, "textDocument/completion", params, items);
        let out = change(
            &mut rec,
            4,
            "a.py",
            serde_json::json!([{"range": range(1, 3, 1, 12), "text": "getpid"}]),
        );
        assert_eq!(
            origins(&out),
            vec![tagged("a.py", "getpid", Origin::Completion)]
        );
    }

    #[test]
    fn completion_items_without_any_edit_replace_the_typed_word() {
        // pyright's items carry no edit: the editor replaces the word typed so far.
        let mut rec = recorder();
        open(&mut rec, "a.py", "import os\nx = \"é\" + os.getc\n");
        let mut params = doc("a.py");
        // UTF-16: "é" is one unit; the cursor is after "getc".
        params["position"] = serde_json::json!({"line": 1, "character": 17});
        let items = serde_json::json!([{"label": "getcwd"}, {"label": "getcwdb"}]);
        ask(&mut rec, 1, 1, "textDocument/completion", params, items);
        // One more letter typed while the list is open …
        let out = change(
            &mut rec,
            2,
            "a.py",
            serde_json::json!([{"range": range(1, 17, 1, 17), "text": "w"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.py", "w", Origin::User)]);
        // … then Neovim's way of accepting: the word deleted and the item typed in, in
        // one didChange.
        let out = change(
            &mut rec,
            3,
            "a.py",
            serde_json::json!([{"range": range(1, 13, 1, 18), "text": ""},
                               {"range": range(1, 13, 1, 13), "text": "getcwd"}]),
        );
        assert_eq!(
            origins(&out),
            vec![
                tagged("a.py", "", Origin::Completion),
                tagged("a.py", "getcwd", Origin::Completion)
            ]
        );
    }

    #[test]
    fn changes_that_are_not_the_proposed_edits_stay_the_users() {
        let answer = serde_json::json!([edit(0, 0, 0, 1, "X")]);
        // Same place, other text; other place, same text.
        let mut rec = recorder();
        open(&mut rec, "a.go", "abc\nabc\n");
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer.clone(),
        );
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 1), "text": "Y"}, {"range": range(1, 0, 1, 1), "text": "X"}]),
        );
        assert_eq!(
            origins(&out),
            vec![
                tagged("a.go", "Y", Origin::User),
                tagged("a.go", "X", Origin::User)
            ]
        );
        // An overlapping change voids the expectation: restoring and applying it is the user's.
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 1), "text": "X"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "X", Origin::User)]);

        // Expiry after unrelated didChanges …
        let mut rec = recorder();
        open(&mut rec, "a.go", "abc\nabc\n");
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer.clone(),
        );
        for _ in 0..origin::UNRELATED_CHANGES {
            change(
                &mut rec,
                1,
                "a.go",
                serde_json::json!([{"range": range(1, 3, 1, 3), "text": "z"}]),
            );
        }
        let out = change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 1), "text": "X"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "X", Origin::User)]);
        // … and after the time window.
        let mut rec = recorder();
        open(&mut rec, "a.go", "abc\nabc\n");
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer.clone(),
        );
        let out = change(
            &mut rec,
            62,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 1), "text": "X"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "X", Origin::User)]);
        // A few unrelated changes before it are fine, and an error answer proposes nothing.
        let mut rec = recorder();
        open(&mut rec, "a.go", "abc\nabc\n");
        feed_at(
            &mut rec,
            1,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "textDocument/formatting", "params": doc("a.go")}),
        );
        feed_at(
            &mut rec,
            1,
            S2C,
            serde_json::json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32801, "message": "modified"}}),
        );
        ask(
            &mut rec,
            1,
            1,
            "textDocument/formatting",
            doc("a.go"),
            answer,
        );
        change(
            &mut rec,
            1,
            "a.go",
            serde_json::json!([{"range": range(1, 0, 1, 0), "text": "zz"}]),
        );
        let out = change(
            &mut rec,
            2,
            "a.go",
            serde_json::json!([{"range": range(0, 0, 0, 1), "text": "X"}]),
        );
        assert_eq!(origins(&out), vec![tagged("a.go", "X", Origin::Format)]);
    }

    #[test]
    fn signals_and_excluded_documents() {
        let mut rec = recorder();
        let out = feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "method": "$/nextedit/visibleRanges", "params": {"textDocument": {"uri": "file:///ws/a.py"}, "ranges": []}}),
        );
        assert!(out.iter().any(|r| matches!(r, Record::Signal(s) if s.kind == "visible_ranges" && s.uri.as_deref() == Some("file:///ws/a.py"))));
        let out = feed(
            &mut rec,
            C2S,
            serde_json::json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": "file:///ws/.env", "languageId": "dotenv", "version": 1, "text": "TOKEN=abc"}}}),
        );
        let Record::Message(m) = &out[0] else {
            panic!()
        };
        assert_eq!(m.raw, None, "raw bytes of an excluded file are not kept");
        assert!(
            out.iter()
                .any(|r| matches!(r, Record::Snapshot(s) if s.text.is_none()))
        );
        assert!(
            out.iter()
                .any(|r| matches!(r, Record::Document(d) if d.excluded && d.path == ".env"))
        );
    }
}
