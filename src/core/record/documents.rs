//! Documents: which files a session names (notebooks and their cells too, and whether
//! the privacy rules exclude them), and their text through
//! didOpen/didChange/didSave/didClose, kept as shadow copies ([`super::document`]) so
//! each change is recorded in byte offsets with the texts it replaced.

use serde::Deserialize;
use serde_json::Value;

use super::document::{LspRange, ShadowDocument};
use super::privacy::redact_text;
use super::recorder::{PendingRequest, SessionRecorder};
use super::records::{
    DocumentRecord, EditRecord, ReadRecord, Record, SnapshotKind, SnapshotRecord,
};
use super::uri::uri_to_path;
use crate::core::lsp::Envelope;
use crate::core::trajectory::{LineRange, Origin, ReadRole};

/// `TextDocumentItem`: a document as opened.
#[derive(Deserialize)]
pub(super) struct TextDocumentItem {
    uri: String,
    #[serde(default, rename = "languageId")]
    language_id: Option<String>,
    #[serde(default)]
    version: i64,
    text: String,
}

/// `didOpen` params.
#[derive(Deserialize)]
pub(super) struct DidOpen {
    #[serde(rename = "textDocument")]
    pub(super) text_document: TextDocumentItem,
}

/// `VersionedTextDocumentIdentifier` (the version optional, as some editors omit it).
#[derive(Deserialize)]
pub(super) struct VersionedId {
    pub(super) uri: String,
    #[serde(default)]
    version: Option<i64>,
}

#[derive(Deserialize)]
struct ContentChange {
    #[serde(default)]
    range: Option<LspRange>,
    text: String,
}

/// `didChange` params.
#[derive(Deserialize)]
pub(super) struct DidChange {
    #[serde(rename = "textDocument")]
    text_document: VersionedId,
    #[serde(rename = "contentChanges")]
    content_changes: Vec<ContentChange>,
}

/// `didSave` params.
#[derive(Deserialize)]
pub(super) struct DidSave {
    #[serde(rename = "textDocument")]
    text_document: VersionedId,
    #[serde(default)]
    text: Option<String>,
}

/// `didClose` params.
#[derive(Deserialize)]
pub(super) struct DidClose {
    #[serde(rename = "textDocument")]
    text_document: VersionedId,
}

impl SessionRecorder {
    /// Classifies every document URI the message names; returns whether any is excluded.
    pub(super) fn note_documents(
        &mut self,
        envelope: &Envelope<'_>,
        answered: Option<&PendingRequest>,
        out: &mut Vec<Record>,
    ) -> bool {
        let mut excluded = false;
        if let Some(uri) = answered.and_then(|p| p.uri.as_deref()) {
            excluded |= self.excluded_uris.contains(uri);
        }
        let Some(params) = envelope.params else {
            return excluded;
        };
        #[derive(Deserialize)]
        struct UriOnly {
            uri: String,
            #[serde(default, rename = "languageId")]
            language_id: Option<String>,
        }
        #[derive(Deserialize)]
        struct Named {
            #[serde(default, rename = "textDocument")]
            text_document: Option<UriOnly>,
            #[serde(default, rename = "notebookDocument")]
            notebook_document: Option<UriOnly>,
            #[serde(default)]
            uri: Option<String>,
        }
        let Ok(named) = serde_json::from_str::<Named>(params.get()) else {
            return excluded;
        };
        if let Some(notebook) = named.notebook_document {
            // An excluded notebook's cells are excluded documents too, whatever
            // their URIs look like: every URI the message names is marked.
            if self.see_document(&notebook.uri, None, out) {
                if let Ok(value) = serde_json::from_str::<Value>(params.get()) {
                    let mut uris = Vec::new();
                    collect_uris(&value, &mut uris);
                    for uri in uris {
                        self.exclude_document(&uri, out);
                    }
                }
                return true;
            }
        }
        let (uri, language_id) = match (named.text_document, named.uri) {
            (Some(doc), _) => (doc.uri, doc.language_id),
            (None, Some(uri)) => (uri, None),
            (None, None) => return excluded,
        };
        excluded |= self.see_document(&uri, language_id, out);
        excluded
    }

    /// Emits a document record the first time a URI appears; returns whether it is excluded.
    fn see_document(
        &mut self,
        uri: &str,
        language_id: Option<String>,
        out: &mut Vec<Record>,
    ) -> bool {
        if let Some(&excluded) = self.known.get(uri) {
            return excluded;
        }
        let path = self.relative_path(uri);
        let excluded = self.config.privacy.is_excluded(&path);
        self.known.insert(uri.to_string(), excluded);
        if excluded {
            self.excluded_uris.insert(uri.to_string());
        }
        out.push(Record::Document(DocumentRecord {
            uri: uri.to_string(),
            path,
            language_id,
            excluded,
            first_seq: self.seq,
        }));
        excluded
    }

    /// Marks a document excluded whatever its path (a cell of an excluded notebook).
    fn exclude_document(&mut self, uri: &str, out: &mut Vec<Record>) {
        if self.known.get(uri) == Some(&true) {
            return;
        }
        let first = !self.known.contains_key(uri);
        self.known.insert(uri.to_string(), true);
        self.excluded_uris.insert(uri.to_string());
        if first {
            let path = self.relative_path(uri);
            out.push(Record::Document(DocumentRecord {
                uri: uri.to_string(),
                path,
                language_id: None,
                excluded: true,
                first_seq: self.seq,
            }));
        }
    }

    /// Workspace-relative path of a URI, else its absolute path, else the URI.
    pub fn relative_path(&self, uri: &str) -> String {
        let Some(path) = uri_to_path(uri) else {
            return uri.to_string();
        };
        if let Some(root) = &self.workspace {
            let root = root.trim_end_matches('/');
            // Only a path that stays inside the root (no `..` climbing out of it) is
            // made relative; anything else keeps its absolute form, which replay refuses.
            if let Some(rest) = path.strip_prefix(root)
                && let Some(rest) = rest.strip_prefix('/')
                && let Ok(rel) = crate::core::trajectory::RelPath::parse(rest)
            {
                return rel.as_str().to_string();
            }
        }
        path
    }

    /// didOpen: the full text (unless excluded) and the whole file as a read.
    pub(super) fn on_did_open(&mut self, t_ns: u64, item: TextDocumentItem, out: &mut Vec<Record>) {
        let excluded = self.see_document(&item.uri, item.language_id.clone(), out);
        let doc = ShadowDocument::new(&item.text, item.version);
        if !excluded {
            self.origins.on_open(t_ns, &item.uri, &doc, self.encoding);
        }
        let n_lines = doc.len_lines();
        self.documents.insert(item.uri.clone(), doc);
        let (text, redactions) = if excluded {
            (None, 0)
        } else {
            let (text, n) = redact_text(&item.text);
            (Some(text), n)
        };
        let seq = self.next_seq();
        out.push(Record::Snapshot(SnapshotRecord {
            seq,
            t_ns,
            uri: item.uri.clone(),
            kind: SnapshotKind::Open,
            version: item.version,
            text,
            redactions,
        }));
        let seq = self.next_seq();
        out.push(Record::Read(ReadRecord {
            seq,
            t_ns,
            uri: item.uri,
            via: "open".to_string(),
            role: ReadRole::Open,
            lines: LineRange::new(0, n_lines),
            request_id: None,
        }));
    }

    /// didChange: each content change applied to the shadow copy and recorded (unless
    /// excluded), tagged with the tool whose proposed edit it is.
    pub(super) fn on_did_change(&mut self, t_ns: u64, params: DidChange, out: &mut Vec<Record>) {
        let uri = params.text_document.uri;
        let excluded = self.excluded_uris.contains(&uri);
        let encoding = self.encoding;
        let Some(doc) = self.documents.get_mut(&uri) else {
            // A change to a document never opened: nothing to anchor it to.
            return;
        };
        if let Some(version) = params.text_document.version {
            doc.version = version;
        }
        let version = doc.version;
        // Only documents a tool proposed edits for pay for keeping the text before.
        let before = self.origins.is_watching(&uri).then(|| doc.clone());
        let mut spans = Vec::with_capacity(params.content_changes.len());
        for change in params.content_changes {
            let span = match change.range {
                Some(range) => Some(doc.apply_range_change(range, &change.text, encoding)),
                None => doc.apply_full_change(&change.text),
            };
            spans.extend(span);
        }
        if excluded {
            return;
        }
        let origins = match before {
            Some(before) => self.origins.classify(t_ns, &uri, &before, doc, &spans),
            None => vec![Origin::User; spans.len()],
        };
        for (change_index, (mut span, origin)) in spans.into_iter().zip(origins).enumerate() {
            let (before, n1) = redact_text(&span.before);
            let (after, n2) = redact_text(&span.after);
            span.before = before;
            span.after = after;
            let seq = self.next_seq();
            out.push(Record::Edit(EditRecord {
                seq,
                t_ns,
                uri: uri.clone(),
                version,
                change_index,
                span,
                redactions: n1 + n2,
                origin,
            }));
        }
    }

    /// didSave: a save snapshot, with the text when the editor sent it.
    pub(super) fn on_did_save(&mut self, t_ns: u64, params: DidSave, out: &mut Vec<Record>) {
        let uri = params.text_document.uri;
        let excluded = self.excluded_uris.contains(&uri);
        let version = self.documents.get(&uri).map_or(0, |d| d.version);
        let (text, redactions) = match params.text {
            Some(text) if !excluded => {
                // A save with text is authoritative: resync the shadow copy.
                if let Some(doc) = self.documents.get_mut(&uri) {
                    doc.apply_full_change(&text);
                }
                let (text, n) = redact_text(&text);
                (Some(text), n)
            }
            _ => (None, 0),
        };
        let seq = self.next_seq();
        out.push(Record::Snapshot(SnapshotRecord {
            seq,
            t_ns,
            uri,
            kind: SnapshotKind::Save,
            version,
            text,
            redactions,
        }));
    }

    /// didClose: the shadow copy goes, a close marker stays.
    pub(super) fn on_did_close(&mut self, t_ns: u64, params: DidClose, out: &mut Vec<Record>) {
        let uri = params.text_document.uri;
        self.origins.on_close(&uri);
        let version = self.documents.remove(&uri).map_or(0, |d| d.version);
        let seq = self.next_seq();
        out.push(Record::Snapshot(SnapshotRecord {
            seq,
            t_ns,
            uri,
            kind: SnapshotKind::Close,
            version,
            text: None,
            redactions: 0,
        }));
    }
}

/// Every `uri` string anywhere in a JSON value.
fn collect_uris(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::String(uri) if key == "uri" => out.push(uri.clone()),
                    _ => collect_uris(value, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_uris(v, out)),
        _ => {}
    }
}
