//! Which tool made a document change.
//!
//! Editors apply the text edits a server proposes (formatting, rename, code actions,
//! completion items, `workspace/applyEdit`) and then report them back as ordinary
//! `textDocument/didChange` notifications, indistinguishable from typing. The
//! recorder sees both directions, so it keeps each proposal as an *expectation* and
//! tags a later change with the proposal's origin only when the change is that edit:
//!
//! - **per change**: a content change whose byte range and new text equal one
//!   proposed edit (or the edit with its common prefix and suffix trimmed, as editors
//!   that minimise edits send it), whatever the order the edits arrive in, in one
//!   didChange or several;
//! - **per didChange**: a didChange (any number of incremental changes, or one
//!   full-text replacement) whose resulting text equals the text before it with all
//!   the remaining proposed edits applied.
//!
//! Proposals are converted to byte offsets with the session's position encoding when
//! they arrive (or when their document is opened, for edits to files not open yet)
//! and kept in step with every later change of their document. They expire when
//! consumed, when an alternative of the same answer was chosen (one completion item,
//! one code action), when a change overlaps them, after [`UNRELATED_CHANGES`]
//! didChanges of the document that are not theirs, or [`EXPECTATION_WINDOW_NS`]
//! after they arrived. Pure: no clock (times come in), no I/O.

use std::collections::HashMap;

use serde_json::Value;

use super::completion::{CompletionAnswer, CompletionItem};
use super::document::{
    ChangeSpan, LspRange, LspTextEdit, PositionEncoding, ShadowDocument, minimal_replacement,
};
use crate::core::lsp::AnswerEdits;
use crate::core::trajectory::Origin;

/// How long a proposal waits for its change: editors apply formatting and rename
/// answers at once, and a menu choice (code action, completion) takes seconds.
pub const EXPECTATION_WINDOW_NS: u64 = 60_000_000_000;

/// DidChanges of a document that match nothing before its proposals from formatting,
/// rename and code actions expire (an editor may interleave a few of its own).
pub const UNRELATED_CHANGES: u32 = 4;

/// The same for completion items: the developer keeps typing the prefix while the
/// menu stays open, and each keystroke is a didChange of its own.
pub const UNRELATED_CHANGES_COMPLETION: u32 = 32;

/// Alternatives kept from one answer (completion lists can hold thousands of items).
pub const MAX_ALTERNATIVES: usize = 1_000;

/// The edits one alternative of an answer proposes for one document.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposedEdits {
    /// The document's URI.
    pub uri: String,
    /// The document version the edits were computed for, when the answer names it.
    pub version: Option<i64>,
    /// The edits, all in the coordinates of that version (LSP `TextEdit[]` semantics).
    pub edits: Vec<LspTextEdit>,
}

/// A proposed edit in byte offsets of the document's current text.
#[derive(Debug, Clone, PartialEq)]
struct ExpectedEdit {
    start: usize,
    end: usize,
    before: String,
    after: String,
}

/// One alternative of one answer, for one document.
#[derive(Debug, Clone)]
struct Expectation {
    origin: Origin,
    /// Which answer it came from; alternatives of one answer exclude each other.
    answer: u64,
    alternative: usize,
    /// From a list the editor shows as a menu (completion, code actions): a newer
    /// list of the same origin for the same document replaces it.
    list: bool,
    arrived_ns: u64,
    unrelated_left: u32,
    /// Sorted by start, non-overlapping, in the current text.
    edits: Vec<ExpectedEdit>,
}

impl Expectation {
    /// Completion ranges grow while the developer types the prefix they replace.
    fn grows(&self) -> bool {
        self.origin == Origin::Completion
    }

    /// Length of the document once every remaining edit is applied.
    fn expected_len(&self, current_len: usize) -> usize {
        self.edits.iter().fold(current_len, |len, e| {
            (len + e.after.len()).saturating_sub(e.end - e.start)
        })
    }

    /// Follows a change that is not one of its edits; `false` when the change
    /// overlaps an edit and the expectation no longer holds.
    fn follow(&mut self, span: &ChangeSpan) -> bool {
        let grows = self.grows();
        let delta = span.after.len() as isize - (span.end_byte - span.start_byte) as isize;
        for edit in &mut self.edits {
            if edit.end <= span.start_byte && !(edit.end == span.start_byte && grows) {
                continue;
            }
            if edit.start >= span.end_byte && !(edit.start == span.start_byte && grows) {
                edit.start = (edit.start as isize + delta) as usize;
                edit.end = (edit.end as isize + delta) as usize;
                continue;
            }
            if grows && span.start_byte >= edit.start && span.end_byte <= edit.end {
                // Typing inside (or at the end of) the prefix a completion replaces.
                let at = span.start_byte - edit.start;
                edit.before
                    .replace_range(at..at + (span.end_byte - span.start_byte), &span.after);
                edit.end = (edit.end as isize + delta) as usize;
                continue;
            }
            return false;
        }
        true
    }

    /// Index of the remaining edit this change is, if any.
    fn matching_edit(&self, span: &ChangeSpan) -> Option<usize> {
        self.edits.iter().position(|e| {
            if (e.start, e.end, e.after.as_str())
                == (span.start_byte, span.end_byte, span.after.as_str())
            {
                return true;
            }
            let (prefix, old_end, new_end) = minimal_replacement(&e.before, &e.after);
            let trimmed = &e.after[prefix..new_end];
            // A completion's last missing character typed by hand is the same change
            // as the editor writing it: only a longer remainder tells a tool did it.
            if self.grows() && old_end == prefix && trimmed.chars().count() < 2 {
                return false;
            }
            (e.start + prefix, e.start + old_end, trimmed)
                == (span.start_byte, span.end_byte, span.after.as_str())
        })
    }

    /// `text` with every remaining edit applied.
    fn apply_to(&self, text: &str) -> Option<String> {
        let mut out = text.to_string();
        for edit in self.edits.iter().rev() {
            if edit.end > out.len()
                || !out.is_char_boundary(edit.start)
                || !out.is_char_boundary(edit.end)
            {
                return None;
            }
            out.replace_range(edit.start..edit.end, &edit.after);
        }
        Some(out)
    }
}

/// Evidence waiting for a document that is not open yet.
#[derive(Debug, Clone)]
struct Unopened {
    template: Expectation,
    proposed: ProposedEdits,
}

/// The pending expectations of a session, by document.
#[derive(Debug, Default)]
pub struct OriginTracker {
    pending: HashMap<String, Vec<Expectation>>,
    unopened: HashMap<String, Vec<Unopened>>,
    answers: u64,
}

impl OriginTracker {
    /// An empty tracker.
    pub fn new() -> OriginTracker {
        OriginTracker::default()
    }

    /// Whether changes of `uri` may be a tool's (so the caller keeps the text before them).
    pub fn is_watching(&self, uri: &str) -> bool {
        self.pending.get(uri).is_some_and(|p| !p.is_empty())
    }

    /// Records one answer's proposals: each alternative is a set of edits over one or
    /// more documents, and at most one alternative of an answer gets applied.
    /// `list` marks menus (completion, code actions) that replace older menus.
    /// Returns the answer's number (for [`OriginTracker::withdraw`]), if it proposed anything.
    pub fn expect(
        &mut self,
        t_ns: u64,
        origin: Origin,
        list: bool,
        alternatives: Vec<Vec<ProposedEdits>>,
        documents: &HashMap<String, ShadowDocument>,
        encoding: PositionEncoding,
    ) -> Option<u64> {
        if alternatives
            .iter()
            .all(|a| a.iter().all(|p| p.edits.is_empty()))
        {
            return None;
        }
        self.answers += 1;
        let answer = self.answers;
        // Edits for files never opened in the window will not be applied through didChange.
        self.unopened.retain(|_, waiting| {
            waiting.retain(|w| t_ns.saturating_sub(w.template.arrived_ns) <= EXPECTATION_WINDOW_NS);
            !waiting.is_empty()
        });
        if list {
            let uris: Vec<&String> = alternatives.iter().flatten().map(|p| &p.uri).collect();
            for uri in uris {
                if let Some(pending) = self.pending.get_mut(uri) {
                    pending.retain(|e| !(e.list && e.origin == origin));
                }
            }
        }
        let unrelated = if origin == Origin::Completion {
            UNRELATED_CHANGES_COMPLETION
        } else {
            UNRELATED_CHANGES
        };
        for (alternative, proposals) in alternatives.into_iter().take(MAX_ALTERNATIVES).enumerate()
        {
            for proposed in proposals {
                if proposed.edits.is_empty() {
                    continue;
                }
                let template = Expectation {
                    origin,
                    answer,
                    alternative,
                    list,
                    arrived_ns: t_ns,
                    unrelated_left: unrelated,
                    edits: Vec::new(),
                };
                match documents.get(&proposed.uri) {
                    Some(doc) => {
                        if proposed.version.is_some_and(|v| v != doc.version) {
                            // Computed for another version of the text: it cannot apply as is.
                            continue;
                        }
                        if let Some(expectation) = resolve(template, &proposed.edits, doc, encoding)
                        {
                            self.pending
                                .entry(proposed.uri)
                                .or_default()
                                .push(expectation);
                        }
                    }
                    None => self
                        .unopened
                        .entry(proposed.uri.clone())
                        .or_default()
                        .push(Unopened { template, proposed }),
                }
            }
        }
        Some(answer)
    }

    /// Forgets an answer whose edits will not be applied (the editor refused a
    /// `workspace/applyEdit`).
    pub fn withdraw(&mut self, answer: u64) {
        for pending in self.pending.values_mut() {
            pending.retain(|e| e.answer != answer);
        }
        for waiting in self.unopened.values_mut() {
            waiting.retain(|w| w.template.answer != answer);
        }
        self.pending.retain(|_, p| !p.is_empty());
        self.unopened.retain(|_, w| !w.is_empty());
    }

    /// A document was opened: evidence that named it before now has offsets.
    pub fn on_open(
        &mut self,
        t_ns: u64,
        uri: &str,
        doc: &ShadowDocument,
        encoding: PositionEncoding,
    ) {
        let Some(waiting) = self.unopened.remove(uri) else {
            return;
        };
        for Unopened { template, proposed } in waiting {
            if t_ns.saturating_sub(template.arrived_ns) > EXPECTATION_WINDOW_NS {
                continue;
            }
            if let Some(expectation) = resolve(template, &proposed.edits, doc, encoding) {
                self.pending
                    .entry(uri.to_string())
                    .or_default()
                    .push(expectation);
            }
        }
    }

    /// A document was closed: what was expected of it will not come.
    pub fn on_close(&mut self, uri: &str) {
        self.pending.remove(uri);
    }

    /// The origin of each change of one didChange of `uri`: `before` is the document
    /// before the didChange, `after` after it, `spans` what each change did.
    pub fn classify(
        &mut self,
        t_ns: u64,
        uri: &str,
        before: &ShadowDocument,
        after: &ShadowDocument,
        spans: &[ChangeSpan],
    ) -> Vec<Origin> {
        let mut origins = vec![Origin::User; spans.len()];
        let Some(mut pending) = self.pending.remove(uri) else {
            return origins;
        };
        pending.retain(|e| t_ns.saturating_sub(e.arrived_ns) <= EXPECTATION_WINDOW_NS);
        let mut chosen: Vec<(u64, usize)> = Vec::new();
        // The whole didChange is one alternative's edits (any form, any order).
        let (mut before_text, mut after_text) = (None, None);
        // One typed character that completes an item is the developer's (see
        // `matching_edit`), whichever way it is matched.
        let one_typed_char = spans.iter().all(|s| s.start_byte == s.end_byte)
            && spans.iter().map(|s| s.after.chars().count()).sum::<usize>() < 2;
        let whole = pending.iter().position(|e| {
            if spans.is_empty()
                || (e.grows() && one_typed_char)
                || e.expected_len(before.len_bytes()) != after.len_bytes()
            {
                return false;
            }
            let before_text = before_text.get_or_insert_with(|| before.text());
            let after_text = after_text.get_or_insert_with(|| after.text());
            e.apply_to(before_text).as_deref() == Some(after_text.as_str())
        });
        if let Some(i) = whole {
            let expectation = pending.remove(i);
            origins.fill(expectation.origin);
            chosen.push((expectation.answer, expectation.alternative));
            for span in spans {
                pending.retain_mut(|e| e.follow(span));
            }
        } else {
            for (span, origin) in spans.iter().zip(origins.iter_mut()) {
                let hit = pending
                    .iter()
                    .enumerate()
                    .find_map(|(i, e)| Some((i, e.matching_edit(span)?)));
                if let Some((i, edit)) = hit {
                    let expectation = &mut pending[i];
                    *origin = expectation.origin;
                    expectation.edits.remove(edit);
                    chosen.push((expectation.answer, expectation.alternative));
                    let matched = pending.remove(i);
                    pending.retain_mut(|e| e.follow(span));
                    if !matched.edits.is_empty() {
                        let mut rest = matched;
                        if rest.follow(span) {
                            pending.push(rest);
                        }
                    }
                } else {
                    pending.retain_mut(|e| e.follow(span));
                }
            }
        }
        // Alternatives of a chosen answer that were not chosen will not come.
        pending.retain(|e| {
            !chosen
                .iter()
                .any(|&(answer, alt)| e.answer == answer && e.alternative != alt)
        });
        for e in &mut pending {
            if !chosen.contains(&(e.answer, e.alternative)) {
                e.unrelated_left = e.unrelated_left.saturating_sub(1);
            }
        }
        pending.retain(|e| e.unrelated_left > 0 && !e.edits.is_empty());
        if !pending.is_empty() {
            self.pending.insert(uri.to_string(), pending);
        }
        if !chosen.is_empty() {
            for other in self.pending.values_mut() {
                other.retain(|e| {
                    !chosen
                        .iter()
                        .any(|&(answer, alt)| e.answer == answer && e.alternative != alt)
                });
            }
            self.pending.retain(|_, p| !p.is_empty());
        }
        origins
    }
}

/// Converts LSP edits to byte offsets in `doc`; `None` when they overlap.
fn resolve(
    mut template: Expectation,
    edits: &[LspTextEdit],
    doc: &ShadowDocument,
    encoding: PositionEncoding,
) -> Option<Expectation> {
    let mut resolved: Vec<ExpectedEdit> = edits
        .iter()
        .map(|(range, after)| {
            let mut start = doc.position_to_byte(range.start, encoding);
            let mut end = doc.position_to_byte(range.end, encoding);
            if end < start {
                std::mem::swap(&mut start, &mut end);
            }
            ExpectedEdit {
                start,
                end,
                before: doc.slice(start, end),
                after: after.clone(),
            }
        })
        .filter(|e| e.before != e.after)
        .collect();
    resolved.sort_by_key(|e| (e.start, e.end));
    if resolved.is_empty() || resolved.windows(2).any(|w| w[0].end > w[1].start) {
        return None;
    }
    template.edits = resolved;
    Some(template)
}

/// LSP `TextEdit[]` (also `AnnotatedTextEdit`); `None` when the value is not one.
pub fn text_edits(value: &Value) -> Option<Vec<LspTextEdit>> {
    let items = value.as_array()?;
    items.iter().map(text_edit).collect()
}

/// One LSP `TextEdit` (also `AnnotatedTextEdit`); `None` when the value is not one.
pub fn text_edit(value: &Value) -> Option<LspTextEdit> {
    let range = LspRange::from_json(value.get("range")?)?;
    let text = value.get("newText")?.as_str()?;
    Some((range, text.to_string()))
}

/// The text edits of an LSP `WorkspaceEdit` (`changes` or `documentChanges`), per document.
pub fn workspace_edit(value: &Value) -> Vec<ProposedEdits> {
    let mut out: Vec<ProposedEdits> = Vec::new();
    if let Some(changes) = value.get("documentChanges").and_then(Value::as_array) {
        for change in changes {
            // Create/rename/delete file operations have a `kind`; they carry no text edits.
            let Some(document) = change.get("textDocument") else {
                continue;
            };
            let (Some(uri), Some(edits)) = (
                document.get("uri").and_then(Value::as_str),
                change.get("edits").and_then(text_edits),
            ) else {
                continue;
            };
            out.push(ProposedEdits {
                uri: uri.to_string(),
                version: document.get("version").and_then(Value::as_i64),
                edits,
            });
        }
    } else if let Some(changes) = value.get("changes").and_then(Value::as_object) {
        for (uri, edits) in changes {
            if let Some(edits) = text_edits(edits) {
                out.push(ProposedEdits {
                    uri: uri.clone(),
                    version: None,
                    edits,
                });
            }
        }
    }
    out
}

/// The alternatives of a `textDocument/codeAction` answer: one per action with an `edit`.
pub fn code_actions(result: &Value) -> Vec<Vec<ProposedEdits>> {
    let Some(actions) = result.as_array() else {
        return Vec::new();
    };
    actions
        .iter()
        .filter_map(|action| action.get("edit"))
        .map(workspace_edit)
        .collect()
}

/// The alternatives of one completion item in document `uri`: its `textEdit` (both
/// ranges of an insert/replace edit) together with its `additionalTextEdits`.
pub fn completion_item(uri: &str, item: &CompletionItem<'_>) -> Vec<Vec<ProposedEdits>> {
    completion_item_with_defaults(uri, item, None, None)
}

/// [`completion_item`] for an item of a list whose `itemDefaults` are `defaults`: an
/// item without `textEdit` writes its `textEditText` (else `insertText`, else label)
/// over the list's default `editRange` (LSP 3.17; both ranges of an insert/replace one),
/// else over `typed_word`, the word the editor replaces (pyright's items have no edit).
fn completion_item_with_defaults(
    uri: &str,
    item: &CompletionItem<'_>,
    defaults: Option<&Value>,
    typed_word: Option<LspRange>,
) -> Vec<Vec<ProposedEdits>> {
    let additional = item.additional.clone().unwrap_or_default();
    let mut mains: Vec<LspTextEdit> = Vec::new();
    let mut push_ranges = |ranges: [Option<LspRange>; 2], text: &str| {
        for range in ranges.into_iter().flatten() {
            if !mains.iter().any(|(r, _)| *r == range) {
                mains.push((range, text.to_string()));
            }
        }
    };
    let default_ranges = |range: &Value| {
        ["insert", "replace"].map(|key| range.get(key).and_then(LspRange::from_json))
    };
    match (&item.text_edit, defaults.and_then(|d| d.get("editRange"))) {
        (Some(edit), _) => {
            if let Some(edit) = edit.text_edit() {
                mains.push(edit);
            } else if let Some(text) = edit.new_text.as_deref() {
                push_ranges([edit.insert, edit.replace], text);
            }
        }
        (None, Some(range)) => {
            let text = item_text(item);
            match LspRange::from_json(range) {
                Some(range) => mains.push((range, text.to_string())),
                None => push_ranges(default_ranges(range), text),
            }
        }
        (None, None) => {
            // A snippet's text is not what the editor writes: no expectation then.
            let snippet = item.insert_text_format == Some(2)
                || defaults
                    .and_then(|d| d.get("insertTextFormat"))
                    .and_then(Value::as_u64)
                    == Some(2);
            if let Some(word) = typed_word.filter(|_| !snippet) {
                mains.push((word, item_text(item).to_string()));
            }
        }
    }
    let proposal = |edits: Vec<LspTextEdit>| {
        vec![ProposedEdits {
            uri: uri.to_string(),
            version: None,
            edits,
        }]
    };
    if mains.is_empty() {
        return if additional.is_empty() {
            Vec::new()
        } else {
            vec![proposal(additional)]
        };
    }
    mains
        .into_iter()
        .map(|main| {
            let mut edits = additional.clone();
            edits.push(main);
            proposal(edits)
        })
        .collect()
}

/// What an item without an edit writes: `textEditText`, else `insertText`, else label.
pub(super) fn item_text<'i>(item: &'i CompletionItem<'_>) -> &'i str {
    [&item.text_edit_text, &item.insert_text, &item.label]
        .into_iter()
        .find_map(|text| text.as_deref())
        .unwrap_or_default()
}

/// The alternatives of a `textDocument/completion` answer; `typed_word` is the word
/// at the request's position (see `completion_item_with_defaults`).
pub fn completion_list(
    uri: &str,
    answer: &CompletionAnswer<'_>,
    typed_word: Option<LspRange>,
) -> Vec<Vec<ProposedEdits>> {
    answer
        .items
        .iter()
        .take(MAX_ALTERNATIVES)
        .flat_map(|item| {
            completion_item_with_defaults(uri, item, answer.defaults.as_ref(), typed_word)
        })
        .collect()
}

/// The origin of a change that applies edits from an answer of this shape.
pub fn answer_origin(answer: AnswerEdits) -> Origin {
    match answer {
        AnswerEdits::TextEdits => Origin::Format,
        AnswerEdits::WorkspaceEdit => Origin::Rename,
        AnswerEdits::CodeActions | AnswerEdits::ResolvedCodeAction => Origin::CodeAction,
        AnswerEdits::CompletionItems | AnswerEdits::ResolvedCompletionItem => Origin::Completion,
    }
}

/// What an answer other than a completion's proposes ([`completion_list`] and
/// [`completion_item`] read those): whether its alternatives are a menu to choose
/// one from, and the alternatives. `request_uri` is the request's document; `None`
/// when the answer has no edits or no document to put them in.
pub fn answer_proposals(
    answer: AnswerEdits,
    result: &Value,
    request_uri: Option<&str>,
) -> Option<(bool, Vec<Vec<ProposedEdits>>)> {
    Some(match answer {
        AnswerEdits::WorkspaceEdit => (false, vec![workspace_edit(result)]),
        AnswerEdits::CodeActions => (true, code_actions(result)),
        AnswerEdits::ResolvedCodeAction => (false, vec![workspace_edit(result.get("edit")?)]),
        AnswerEdits::CompletionItems | AnswerEdits::ResolvedCompletionItem => return None,
        AnswerEdits::TextEdits => {
            let edits = text_edits(result);
            (
                false,
                vec![vec![ProposedEdits {
                    uri: request_uri?.to_string(),
                    version: None,
                    edits: edits?,
                }]],
            )
        }
    })
}
