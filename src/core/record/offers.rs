//! Offers: every item a language server put in front of the developer, one
//! [`OfferRecord`] each: completion items, inline completion items (LSP 3.18), code
//! actions (commands without an edit too), a rename's workspace edit and the edits of
//! a server's `workspace/applyEdit`.
//!
//! An offer keeps its request's place (line and byte column, converted from the
//! session's position encoding in the text at the request), its rank in the answer,
//! the answer's latency and size, the text it inserts at the place (snippets
//! expanded to the text the editor shows) and every edit it makes, in byte offsets of
//! the texts at the answer. Edits are decoded by [`super::origin`]'s functions, the
//! ones that tag applied changes, from the answer `origin` already parsed (one parse
//! per answer), so both read an answer the same way. At most
//! [`MAX_OFFERS`] items of an answer are kept (the list size is). A
//! `completionItem/resolve` answer that changes an item's edits rewrites that item's
//! row (same answer seq and rank).
//!
//! Privacy: an offer about an excluded document keeps its row (counts stay true) but
//! no label, text or edits; edits of excluded documents are dropped from any offer.
//! What becomes of an offer is not decided here: it is computed from the stored
//! edits and signals when read (`nextedit live`).

use serde_json::Value;

use super::completion::{CompletionAnswer, CompletionItem, ItemEdit};
use super::document::{LspPosition, LspRange, LspTextEdit, ShadowDocument};
use super::documents::Documents;
use super::origin::{self, ProposedEdits};
use super::pending::PendingRequest;
use super::records::{OfferEdit, OfferRecord, OfferSpan, Record};
use crate::core::lsp::OfferKind;

/// Items of one answer recorded as offers (completion lists can hold thousands).
pub const MAX_OFFERS: usize = 100;

/// The latest completion answer's offers, for `completionItem/resolve`: what they
/// were made from (the records themselves went to the store).
#[derive(Debug, Default)]
pub(super) struct LatestCompletion {
    /// The answer: its seq and time, its request, its size and `isIncomplete`.
    answer: Option<(u64, u64, PendingRequest, usize, bool)>,
    /// Each recorded item, in rank order.
    items: Vec<Item>,
}

/// What one item offers before its place in the answer is known.
#[derive(Debug, Clone, Default)]
struct Item {
    label: Option<String>,
    text: String,
    /// A completion's edit at the place (`textEdit`).
    main: Option<OfferEdit>,
    /// Its other edits (`additionalTextEdits`; every edit of a workspace edit).
    additional: Vec<OfferEdit>,
}

/// The offers a session's servers make: one record per item of an answer that
/// offers edits, and the latest completion list's, which `completionItem/resolve`
/// may change.
#[derive(Debug, Default)]
pub(super) struct Offers {
    latest_completion: LatestCompletion,
}

impl Offers {
    /// A completion answer: one record per item (the first [`MAX_OFFERS`]), kept as
    /// the latest for `completionItem/resolve`.
    pub(super) fn on_completion_answer(
        &mut self,
        docs: &Documents,
        seq: u64,
        t_ns: u64,
        answer: &CompletionAnswer<'_>,
        request: &PendingRequest,
        out: &mut Vec<Record>,
    ) {
        let uri = request.uri.clone().unwrap_or_default();
        let excluded = docs.is_excluded(&uri);
        let reader = ItemReader { docs };
        let items = answer.items.iter().take(MAX_OFFERS).map(|value| {
            let defaults = answer.defaults.as_ref();
            (!excluded).then(|| reader.completion_item(&uri, request, value, defaults))
        });
        let items: Vec<Option<Item>> = items.collect();
        let list_size = answer.items.len();
        let kept = Self::push_offers(
            (seq, t_ns, request),
            OfferKind::Completion,
            (list_size, answer.incomplete),
            items,
            out,
        );
        self.latest_completion = LatestCompletion {
            answer: Some((seq, t_ns, request.clone(), list_size, answer.incomplete)),
            items: kept,
        };
    }

    /// An answer to a request that offers something other than completions: one
    /// record per item.
    pub(super) fn on_offer_answer(
        &self,
        docs: &Documents,
        seq: u64,
        t_ns: u64,
        result: &Value,
        request: &PendingRequest,
        out: &mut Vec<Record>,
    ) {
        let Some(kind) = request.method.offers() else {
            return;
        };
        let uri = request.uri.clone().unwrap_or_default();
        let excluded = docs.is_excluded(&uri);
        let reader = ItemReader { docs };
        let (values, incomplete): (Vec<&Value>, bool) = match (kind, result) {
            (OfferKind::Rename, Value::Object(_)) => (vec![result], false),
            (_, Value::Array(items)) => (items.iter().collect(), false),
            (OfferKind::InlineCompletion, Value::Object(list)) => (
                list.get("items")
                    .and_then(Value::as_array)
                    .map(|items| items.iter().collect())
                    .unwrap_or_default(),
                list.get("isIncomplete") == Some(&Value::Bool(true)),
            ),
            _ => (Vec::new(), false),
        };
        let list_size = values.len();
        let items: Vec<Option<Item>> = values
            .into_iter()
            .take(MAX_OFFERS)
            .filter_map(|value| {
                let item = match kind {
                    OfferKind::InlineCompletion => reader.inline_item(&uri, request, value),
                    OfferKind::CodeAction => reader.code_action(&uri, value),
                    OfferKind::Rename => reader.workspace_item(&uri, None, value),
                    OfferKind::Completion | OfferKind::ApplyEdit => return None,
                };
                Some((!excluded).then_some(item))
            })
            .collect();
        Self::push_offers(
            (seq, t_ns, request),
            kind,
            (list_size, incomplete),
            items,
            out,
        );
    }

    /// One offer record per item, in rank order (`None`: an item about an excluded
    /// document, recorded without what it offers); returns the items recorded whole.
    fn push_offers(
        (seq, t_ns, request): (u64, u64, &PendingRequest),
        kind: OfferKind,
        (list_size, incomplete): (usize, bool),
        items: Vec<Option<Item>>,
        out: &mut Vec<Record>,
    ) -> Vec<Item> {
        let mut kept = Vec::with_capacity(items.len());
        let withheld = Item::default();
        for (rank, item) in items.into_iter().enumerate() {
            let offer = Self::offer(
                seq,
                t_ns,
                request,
                kind,
                (rank, list_size),
                incomplete,
                item.as_ref().unwrap_or(&withheld),
            );
            out.push(Record::Offer(offer));
            kept.extend(item);
        }
        kept
    }

    /// A server's `workspace/applyEdit` request: one offer, made by the request itself.
    pub(super) fn on_apply_edit_offer(
        &self,
        docs: &Documents,
        seq: u64,
        t_ns: u64,
        params: &Value,
        out: &mut Vec<Record>,
    ) {
        let Some(edit) = params.get("edit") else {
            return;
        };
        let request = PendingRequest {
            method: crate::core::lsp::Method::ApplyEdit,
            uri: None,
            seq,
            t_ns,
            position: None,
            place: None,
        };
        let label = params.get("label").and_then(Value::as_str);
        let proposals = origin::workspace_edit(edit);
        let uri = proposals.first().map(|p| p.uri.clone()).unwrap_or_default();
        let excluded = proposals.iter().all(|p| docs.is_excluded(&p.uri));
        let item = if excluded {
            Item::default()
        } else {
            ItemReader { docs }.proposals_item(&uri, label, proposals)
        };
        let mut offer = Self::offer(
            seq,
            t_ns,
            &request,
            OfferKind::ApplyEdit,
            (0, 1),
            false,
            &item,
        );
        offer.uri = uri;
        out.push(Record::Offer(offer));
    }

    /// A resolved completion item whose edits differ from its offer's: the offer again.
    pub(super) fn on_completion_resolve(
        &mut self,
        docs: &Documents,
        result: &CompletionItem<'_>,
        out: &mut Vec<Record>,
    ) {
        let Some(label) = result.label.as_deref() else {
            return;
        };
        let latest = &self.latest_completion;
        let (Some((seq, t_ns, request, list_size, incomplete)), Some(rank)) = (
            &latest.answer,
            latest
                .items
                .iter()
                .position(|item| item.label.as_deref() == Some(label)),
        ) else {
            return;
        };
        let item = &latest.items[rank];
        let reader = ItemReader { docs };
        let uri = request.uri.clone().unwrap_or_default();
        let mut resolved = item.clone();
        if result.text_edit.is_some() || result.insert_text.is_some() {
            resolved.text = completion_text(result, None);
        }
        if let Some(main) = result
            .text_edit
            .as_ref()
            .and_then(|e| reader.main_edit(&uri, e))
        {
            resolved.main = Some(OfferEdit {
                text: resolved.text.clone(),
                ..main
            });
        }
        if let Some(additional) = &result.additional {
            resolved.additional = reader.lsp_edits(&uri, additional);
        }
        if resolved.edits() == item.edits() && resolved.text == item.text {
            return;
        }
        let updated = Self::offer(
            *seq,
            *t_ns,
            request,
            OfferKind::Completion,
            (rank, *list_size),
            *incomplete,
            &resolved,
        );
        self.latest_completion.items[rank] = resolved;
        out.push(Record::Offer(updated));
    }

    /// The record of one item.
    #[allow(clippy::too_many_arguments)]
    fn offer(
        seq: u64,
        t_ns: u64,
        request: &PendingRequest,
        kind: OfferKind,
        (rank, list_size): (usize, usize),
        incomplete: bool,
        item: &Item,
    ) -> OfferRecord {
        OfferRecord {
            seq,
            rank,
            request_seq: request.seq,
            t_ns,
            latency_ns: t_ns.saturating_sub(request.t_ns),
            kind,
            method: request.method.name().to_string(),
            uri: request.uri.clone().unwrap_or_default(),
            position: request.place,
            label: item.label.clone(),
            text: item.text.clone(),
            edits: item.edits(),
            list_size,
            incomplete,
        }
    }
}

/// Reads a server's answer items into what they offer, against the documents as they
/// are: byte offsets in open documents, nothing of excluded ones.
struct ItemReader<'a> {
    docs: &'a Documents,
}

impl ItemReader<'_> {
    /// A `CompletionItem` (with the list's `itemDefaults`).
    fn completion_item(
        &self,
        uri: &str,
        request: &PendingRequest,
        item: &CompletionItem<'_>,
        defaults: Option<&Value>,
    ) -> Item {
        let label = item.label.as_deref().map(str::to_string);
        let text = completion_text(item, defaults);
        let main = match &item.text_edit {
            // Its text is the item's, snippet expanded.
            Some(edit) => self.main_edit(uri, edit).map(|e| OfferEdit {
                text: text.clone(),
                ..e
            }),
            // LSP 3.17: the list's default range, with the item's `textEditText`.
            None => match defaults.and_then(|d| d.get("editRange")) {
                Some(range) => {
                    let range = range.get("insert").unwrap_or(range);
                    LspRange::from_json(range)
                        .map(|range| self.offer_edit(uri, range, text.clone()))
                }
                // The editor replaces the word typed so far (its own notion of a word;
                // letters, digits and `_` here), else inserts at the place.
                None => request.position.map(|at| match self.docs.get(uri) {
                    Some(doc) => {
                        let end = doc.position_to_byte(at, self.docs.encoding());
                        OfferEdit {
                            uri: uri.to_string(),
                            at: OfferSpan::Bytes(doc.word_start(end), end),
                            text: text.clone(),
                        }
                    }
                    None => self.offer_edit(uri, point(at), text.clone()),
                }),
            },
        };
        let additional = item
            .additional
            .as_ref()
            .map(|edits| self.lsp_edits(uri, edits))
            .unwrap_or_default();
        Item {
            label,
            text,
            main,
            additional,
        }
    }

    /// An `InlineCompletionItem`: its text replaces its range, else goes in at the place.
    fn inline_item(&self, uri: &str, request: &PendingRequest, item: &Value) -> Item {
        let text = match item.get("insertText") {
            Some(Value::String(text)) => text.clone(),
            Some(snippet) => expand_snippet(
                snippet
                    .get("value")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            None => String::new(),
        };
        let range = item
            .get("range")
            .and_then(LspRange::from_json)
            .or_else(|| request.position.map(point));
        let main = range.map(|range| self.offer_edit(uri, range, text.clone()));
        let label = item
            .get("filterText")
            .and_then(Value::as_str)
            .map(str::to_string);
        Item {
            label,
            text,
            main,
            additional: Vec::new(),
        }
    }

    /// A `CodeAction` (its `edit`, if any) or a bare `Command` (no edit).
    fn code_action(&self, uri: &str, action: &Value) -> Item {
        let label = action.get("title").and_then(Value::as_str);
        match action.get("edit") {
            Some(edit) => self.workspace_item(uri, label, edit),
            None => self.proposals_item(uri, label, Vec::new()),
        }
    }

    /// A `WorkspaceEdit` (rename, a code action's edit).
    fn workspace_item(&self, uri: &str, label: Option<&str>, edit: &Value) -> Item {
        self.proposals_item(uri, label, origin::workspace_edit(edit))
    }

    /// Edits over documents; the text is that of the first edit in `uri`.
    fn proposals_item(
        &self,
        uri: &str,
        label: Option<&str>,
        proposals: Vec<ProposedEdits>,
    ) -> Item {
        let edits: Vec<OfferEdit> = proposals
            .iter()
            .flat_map(|p| self.lsp_edits(&p.uri, &p.edits))
            .collect();
        let text = edits
            .iter()
            .find(|e| e.uri == uri)
            .map(|e| e.text.clone())
            .unwrap_or_default();
        Item {
            label: label.map(str::to_string),
            text,
            main: None,
            additional: edits,
        }
    }

    /// A completion item's `textEdit` (`TextEdit`, or `InsertReplaceEdit` by its insert range).
    fn main_edit(&self, uri: &str, edit: &ItemEdit<'_>) -> Option<OfferEdit> {
        let range = edit.range.or(edit.insert)?;
        Some(self.offer_edit(uri, range, edit.new_text.as_deref()?.to_string()))
    }

    /// LSP edits of one document; none for an excluded document.
    fn lsp_edits(&self, uri: &str, edits: &[LspTextEdit]) -> Vec<OfferEdit> {
        if self.docs.is_excluded(uri) {
            return Vec::new();
        }
        edits
            .iter()
            .map(|(range, text)| self.offer_edit(uri, *range, text.clone()))
            .collect()
    }

    /// One edit, in byte offsets when its document is open.
    fn offer_edit(&self, uri: &str, range: LspRange, text: String) -> OfferEdit {
        let at = match self.docs.get(uri) {
            Some(doc) => {
                let (start, end) = (
                    doc.position_to_byte(range.start, self.docs.encoding()),
                    doc.position_to_byte(range.end, self.docs.encoding()),
                );
                OfferSpan::Bytes(start.min(end), start.max(end))
            }
            None => OfferSpan::Lsp(range),
        };
        OfferEdit {
            uri: uri.to_string(),
            at,
            text,
        }
    }
}

impl Item {
    /// Every edit: the main one first.
    fn edits(&self) -> Vec<OfferEdit> {
        self.main.iter().chain(&self.additional).cloned().collect()
    }
}

/// The place of a request in its document's text: 0-based line and byte column.
pub(super) fn place(
    doc: &ShadowDocument,
    at: LspPosition,
    encoding: super::document::PositionEncoding,
) -> (usize, usize) {
    let byte = doc.position_to_byte(at, encoding);
    let line = doc.byte_to_line(byte);
    let line_start = doc.position_to_byte(
        LspPosition {
            line: line as u32,
            character: 0,
        },
        encoding,
    );
    (line, byte - line_start)
}

/// An empty range at a position.
fn point(at: LspPosition) -> LspRange {
    LspRange { start: at, end: at }
}

/// The text a completion item puts in the document: its edit's, else `insertText`,
/// else the label; snippets expanded (the item's or the list's default format).
fn completion_text(item: &CompletionItem<'_>, defaults: Option<&Value>) -> String {
    let text = item
        .text_edit
        .as_ref()
        .and_then(|edit| edit.new_text.as_deref())
        .unwrap_or_else(|| origin::item_text(item));
    let format = item.insert_text_format.or_else(|| {
        defaults
            .and_then(|d| d.get("insertTextFormat"))
            .and_then(Value::as_u64)
    });
    if format == Some(2) {
        expand_snippet(text)
    } else {
        text.to_string()
    }
}

/// The text an LSP snippet inserts before the developer fills its fields: tab stops
/// and variables vanish, placeholders keep their text, choices their first option.
pub fn expand_snippet(snippet: &str) -> String {
    let chars: Vec<char> = snippet.chars().collect();
    let mut out = String::with_capacity(snippet.len());
    let mut i = 0;
    expand_until(&chars, &mut i, None, &mut out);
    out
}

/// Expands from `chars[*i]` up to an unescaped `end` (consumed), or the end.
fn expand_until(chars: &[char], i: &mut usize, end: Option<char>, out: &mut String) {
    while *i < chars.len() {
        let c = chars[*i];
        if Some(c) == end {
            *i += 1;
            return;
        }
        match c {
            '\\' if *i + 1 < chars.len()
                && matches!(chars[*i + 1], '$' | '}' | '\\' | ',' | '|') =>
            {
                out.push(chars[*i + 1]);
                *i += 2;
            }
            '$' => expand_dollar(chars, i, out),
            _ => {
                out.push(c);
                *i += 1;
            }
        }
    }
}

/// `$1`, `$name`, `${1}`, `${1:placeholder}`, `${1|one,two|}`, `${name:default}`.
fn expand_dollar(chars: &[char], i: &mut usize, out: &mut String) {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let next = chars.get(*i + 1).copied();
    match next {
        Some(c) if word(c) => {
            *i += 1;
            while *i < chars.len() && word(chars[*i]) {
                *i += 1;
            }
        }
        Some('{') => {
            *i += 2;
            while *i < chars.len() && word(chars[*i]) {
                *i += 1;
            }
            match chars.get(*i) {
                Some(':') => {
                    *i += 1;
                    expand_until(chars, i, Some('}'), out);
                }
                Some('|') => {
                    *i += 1;
                    let mut first = String::new();
                    let mut in_first = true;
                    while *i < chars.len() && !(chars[*i] == '|' && chars.get(*i + 1) == Some(&'}'))
                    {
                        let c = chars[*i];
                        if c == '\\' && *i + 1 < chars.len() {
                            if in_first {
                                first.push(chars[*i + 1]);
                            }
                            *i += 2;
                            continue;
                        }
                        if c == ',' {
                            in_first = false;
                        } else if in_first {
                            first.push(c);
                        }
                        *i += 1;
                    }
                    *i = (*i + 2).min(chars.len());
                    out.push_str(&first);
                }
                Some('}') => *i += 1,
                // A transform (`${1/a/b/}`) or a malformed field: skip to its end.
                _ => {
                    let mut ignored = String::new();
                    expand_until(chars, i, Some('}'), &mut ignored);
                }
            }
        }
        _ => {
            out.push('$');
            *i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lsp::Direction;
    use crate::core::lsp::framing::encode_frame;
    use crate::core::record::privacy::PrivacyFilter;
    use crate::core::record::{RecorderConfig, SessionRecorder};
    use serde_json::json;

    const C2S: Direction = Direction::ClientToServer;
    const S2C: Direction = Direction::ServerToClient;

    fn recorder() -> SessionRecorder {
        SessionRecorder::new(RecorderConfig {
            record_raw: false,
            record_server_raw: false,
            privacy: PrivacyFilter::with_defaults(),
            workspace: Some("/ws".into()),
        })
    }

    fn feed(rec: &mut SessionRecorder, t_ms: u64, dir: Direction, body: Value) -> Vec<Record> {
        let body = body.to_string();
        let frame = encode_frame(body.as_bytes());
        rec.observe_frame(
            dir,
            t_ms * 1_000_000,
            &frame,
            frame.len() - body.len(),
            false,
        )
    }

    fn open(rec: &mut SessionRecorder, name: &str, text: &str) {
        feed(
            rec,
            0,
            C2S,
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": format!("file:///ws/{name}"), "languageId": "python", "version": 1, "text": text}}}),
        );
    }

    fn range(l1: u32, c1: u32, l2: u32, c2: u32) -> Value {
        json!({"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}})
    }

    fn edit(l1: u32, c1: u32, l2: u32, c2: u32, text: &str) -> Value {
        json!({"range": range(l1, c1, l2, c2), "newText": text})
    }

    fn at(name: &str, line: u32, character: u32) -> Value {
        json!({"textDocument": {"uri": format!("file:///ws/{name}")}, "position": {"line": line, "character": character}})
    }

    /// Request at `t_ms`, answer 5 ms later: the offers, one line each.
    fn ask(
        rec: &mut SessionRecorder,
        t_ms: u64,
        id: u64,
        method: &str,
        params: Value,
        result: Value,
    ) -> Vec<String> {
        feed(
            rec,
            t_ms,
            C2S,
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        let out = feed(
            rec,
            t_ms + 5,
            S2C,
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
        lines(&out)
    }

    fn lines(out: &[Record]) -> Vec<String> {
        out.iter()
            .filter_map(|r| match r {
                Record::Offer(o) => Some(format!(
                    "{} {}/{}{} seq={} req={} {}ms {} at={:?} label={:?} text={:?} edits={}",
                    o.kind.as_str(),
                    o.rank,
                    o.list_size,
                    if o.incomplete { " incomplete" } else { "" },
                    o.seq,
                    o.request_seq,
                    o.latency_ns / 1_000_000,
                    o.uri.trim_start_matches("file:///ws/"),
                    o.position,
                    o.label,
                    o.text,
                    o.edits
                        .iter()
                        .map(|e| format!(
                            "{}:{}{:?}",
                            e.uri.trim_start_matches("file:///ws/"),
                            match e.at {
                                OfferSpan::Bytes(s, e) => format!("{s}..{e}"),
                                OfferSpan::Lsp(r) => format!(
                                    "L{}:{}-{}:{}",
                                    r.start.line, r.start.character, r.end.line, r.end.character
                                ),
                            },
                            e.text
                        ))
                        .collect::<Vec<_>>()
                        .join(",")
                )),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn completion_items_are_offers_with_their_place_rank_and_edits() {
        let mut rec = recorder();
        // UTF-16 positions: the emoji is two code units, four bytes.
        open(&mut rec, "a.py", "import os\nx = \"😀\"; os.pa\n");
        let list = json!({"isIncomplete": true, "items": [
            {"label": "path", "textEdit": edit(1, 13, 1, 15, "path")},
            {"label": "pathsep", "insertText": "pathsep", "additionalTextEdits": [edit(0, 9, 0, 9, "\nimport sys")]},
            {"label": "popen", "insertTextFormat": 2, "textEdit": {"newText": "popen(${1:cmd})$0", "insert": range(1, 13, 1, 15), "replace": range(1, 13, 1, 16)}}
        ]});
        assert_eq!(
            ask(
                &mut rec,
                10,
                1,
                "textDocument/completion",
                at("a.py", 1, 15),
                list
            ),
            vec![
                "completion 0/3 incomplete seq=5 req=4 5ms a.py at=Some((1, 17)) label=Some(\"path\") text=\"path\" edits=a.py:25..27\"path\"",
                "completion 1/3 incomplete seq=5 req=4 5ms a.py at=Some((1, 17)) label=Some(\"pathsep\") text=\"pathsep\" edits=a.py:25..27\"pathsep\",a.py:9..9\"\\nimport sys\"",
                "completion 2/3 incomplete seq=5 req=4 5ms a.py at=Some((1, 17)) label=Some(\"popen\") text=\"popen(cmd)\" edits=a.py:25..27\"popen(cmd)\"",
            ]
        );
        // A resolved item that adds an edit rewrites its offer (same seq and rank) …
        let resolved = json!({"label": "path", "textEdit": edit(1, 13, 1, 15, "path"), "additionalTextEdits": [edit(0, 0, 0, 0, "# x\n")]});
        assert_eq!(
            ask(
                &mut rec,
                20,
                2,
                "completionItem/resolve",
                json!({"label": "path"}),
                resolved.clone()
            ),
            vec![
                "completion 0/3 incomplete seq=5 req=4 5ms a.py at=Some((1, 17)) label=Some(\"path\") text=\"path\" edits=a.py:25..27\"path\",a.py:0..0\"# x\\n\""
            ]
        );
        // … once: the same answer again changes nothing.
        assert_eq!(
            ask(
                &mut rec,
                30,
                3,
                "completionItem/resolve",
                json!({"label": "path"}),
                resolved
            ),
            Vec::<String>::new()
        );
        // A list's default edit range (LSP 3.17) and the cap on recorded items.
        let items: Vec<Value> = (0..MAX_OFFERS + 5)
            .map(|i| json!({"label": format!("p{i}")}))
            .collect();
        let list = json!({"isIncomplete": false, "itemDefaults": {"editRange": range(1, 13, 1, 15)}, "items": items});
        let offers = ask(
            &mut rec,
            40,
            4,
            "textDocument/completion",
            at("a.py", 1, 15),
            list,
        );
        assert_eq!(offers.len(), MAX_OFFERS);
        assert_eq!(
            offers[0],
            "completion 0/105 seq=11 req=10 5ms a.py at=Some((1, 17)) label=Some(\"p0\") text=\"p0\" edits=a.py:25..27\"p0\""
        );
    }

    #[test]
    fn inline_completions_code_actions_renames_and_applied_edits_are_offers() {
        let mut rec = recorder();
        open(&mut rec, "a.py", "def f(x):\n    ret\n");
        let inline = json!({"items": [
            {"insertText": "return x + 1", "range": range(1, 4, 1, 7), "filterText": "ret"},
            {"insertText": {"kind": "snippet", "value": "urn ${1:x}"}}
        ]});
        assert_eq!(
            ask(
                &mut rec,
                10,
                1,
                "textDocument/inlineCompletion",
                at("a.py", 1, 7),
                inline
            ),
            vec![
                "inline_completion 0/2 seq=5 req=4 5ms a.py at=Some((1, 7)) label=Some(\"ret\") text=\"return x + 1\" edits=a.py:14..17\"return x + 1\"",
                "inline_completion 1/2 seq=5 req=4 5ms a.py at=Some((1, 7)) label=None text=\"urn x\" edits=a.py:17..17\"urn x\"",
            ]
        );
        let actions = json!([
            {"title": "Add import", "edit": {"changes": {"file:///ws/a.py": [edit(0, 0, 0, 0, "import os\n")]}}},
            {"title": "Run", "command": "run.it"},
        ]);
        let params = json!({"textDocument": {"uri": "file:///ws/a.py"}, "range": range(1, 4, 1, 7), "context": {"diagnostics": []}});
        assert_eq!(
            ask(&mut rec, 20, 2, "textDocument/codeAction", params, actions),
            vec![
                "code_action 0/2 seq=8 req=6 5ms a.py at=Some((1, 4)) label=Some(\"Add import\") text=\"import os\\n\" edits=a.py:0..0\"import os\\n\"",
                "code_action 1/2 seq=8 req=6 5ms a.py at=Some((1, 4)) label=Some(\"Run\") text=\"\" edits=",
            ]
        );
        let mut params = at("a.py", 0, 6);
        params["newName"] = json!("y");
        let rename = json!({"documentChanges": [
            {"textDocument": {"uri": "file:///ws/a.py", "version": 1}, "edits": [edit(0, 6, 0, 7, "y")]},
            {"textDocument": {"uri": "file:///ws/b.py", "version": null}, "edits": [edit(3, 0, 3, 1, "y")]}
        ]});
        assert_eq!(
            ask(&mut rec, 30, 3, "textDocument/rename", params, rename),
            vec![
                "rename 0/1 seq=10 req=9 5ms a.py at=Some((0, 6)) label=None text=\"y\" edits=a.py:6..7\"y\",b.py:L3:0-3:1\"y\""
            ]
        );
        let out = feed(
            &mut rec,
            40,
            S2C,
            json!({"jsonrpc": "2.0", "id": 0, "method": "workspace/applyEdit", "params": {"label": "Fix all", "edit": {"changes": {"file:///ws/a.py": [edit(1, 4, 1, 7, "pass")]}}}}),
        );
        assert_eq!(
            lines(&out),
            vec![
                "apply_edit 0/1 seq=11 req=11 0ms a.py at=None label=Some(\"Fix all\") text=\"pass\" edits=a.py:14..17\"pass\""
            ]
        );
    }

    #[test]
    fn offers_about_excluded_documents_keep_no_text() {
        let mut rec = recorder();
        open(&mut rec, ".env", "TOKEN=abc\n");
        open(&mut rec, "a.py", "x = 1\n");
        let list = json!([{"label": "TOKEN_SECRET", "textEdit": edit(0, 0, 0, 5, "TOKEN_SECRET")}]);
        assert_eq!(
            ask(
                &mut rec,
                10,
                1,
                "textDocument/completion",
                at(".env", 0, 5),
                list
            ),
            vec!["completion 0/1 seq=8 req=7 5ms .env at=Some((0, 5)) label=None text=\"\" edits="]
        );
        // A rename from a normal file keeps only the normal file's edits.
        let rename = json!({"changes": {"file:///ws/a.py": [edit(0, 0, 0, 1, "y")], "file:///ws/.env": [edit(0, 0, 0, 5, "y")]}});
        let mut params = at("a.py", 0, 0);
        params["newName"] = json!("y");
        assert_eq!(
            ask(&mut rec, 20, 2, "textDocument/rename", params, rename),
            vec![
                "rename 0/1 seq=10 req=9 5ms a.py at=Some((0, 0)) label=None text=\"y\" edits=a.py:0..1\"y\""
            ]
        );
    }

    #[test]
    fn snippets_expand_to_the_text_the_editor_shows() {
        for (snippet, text) in [
            ("print($1)$0", "print()"),
            (
                "def ${1:name}(${2:args}):\n\t${0:pass}",
                "def name(args):\n\tpass",
            ),
            ("${1|one,two|} ${TM_FILENAME} $$ \\$x \\}", "one  $$ $x }"),
            ("${1:outer ${2:inner}} end", "outer inner end"),
            ("${1/(.*)/$1/} x", " x"),
            ("plain", "plain"),
            ("a $", "a $"),
        ] {
            assert_eq!(expand_snippet(snippet), text, "{snippet}");
        }
    }
}
