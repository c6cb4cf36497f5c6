//! Documents: which files a session names (notebooks and their cells too, and whether
//! the privacy rules exclude them), and their text through
//! didOpen/didChange/didSave/didClose, kept as shadow copies ([`super::document`]) so
//! each change is recorded in byte offsets with the texts it replaced.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;
use serde_json::Value;

use super::document::{LspRange, PositionEncoding, ShadowDocument};
use super::origin::OriginTracker;
use super::pending::PendingRequest;
use super::privacy::{PrivacyFilter, redact_text};
use super::records::{
    DocumentRecord, EditRecord, ReadRecord, Record, Sequence, SnapshotKind, SnapshotRecord,
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

/// The documents a session names: which the privacy rules exclude, the open ones'
/// shadow copies, and the workspace and position encoding their paths and positions
/// are read in.
#[derive(Debug)]
pub(super) struct Documents {
    /// Which files are never stored.
    privacy: PrivacyFilter,
    /// The workspace root (given on the command line, else from `initialize`).
    workspace: Option<String>,
    /// The position encoding in effect.
    encoding: PositionEncoding,
    /// Shadow copies of the open documents, by URI.
    open: HashMap<String, ShadowDocument>,
    /// Every URI seen so far, and whether the privacy rules exclude it.
    known: HashMap<String, bool>,
    excluded_uris: HashSet<String>,
}

impl Documents {
    /// No document seen yet, UTF-16 positions until the server says otherwise.
    pub(super) fn new(privacy: PrivacyFilter, workspace: Option<String>) -> Documents {
        Documents {
            privacy,
            workspace,
            encoding: PositionEncoding::Utf16,
            open: HashMap::new(),
            known: HashMap::new(),
            excluded_uris: HashSet::new(),
        }
    }

    /// The privacy filter in force.
    pub(super) fn privacy(&self) -> &PrivacyFilter {
        &self.privacy
    }

    /// Replaces the privacy filter (after the workspace's ignore file was read).
    pub(super) fn set_privacy(&mut self, privacy: PrivacyFilter) {
        self.privacy = privacy;
    }

    /// The workspace root, once known.
    pub(super) fn workspace(&self) -> Option<&str> {
        self.workspace.as_deref()
    }

    /// The workspace root `initialize` named (when none was given).
    pub(super) fn set_workspace(&mut self, root: String) {
        self.workspace = Some(root);
    }

    /// The position encoding in effect.
    pub(super) fn encoding(&self) -> PositionEncoding {
        self.encoding
    }

    /// The position encoding the server chose.
    pub(super) fn set_encoding(&mut self, encoding: PositionEncoding) {
        self.encoding = encoding;
    }

    /// The shadow copy of an open document.
    pub(super) fn get(&self, uri: &str) -> Option<&ShadowDocument> {
        self.open.get(uri)
    }

    /// Every open document's shadow copy, by URI.
    pub(super) fn open_documents(&self) -> &HashMap<String, ShadowDocument> {
        &self.open
    }

    /// Whether the privacy rules exclude `uri` (as far as it was seen).
    pub(super) fn is_excluded(&self, uri: &str) -> bool {
        self.excluded_uris.contains(uri)
    }

    /// The URIs excluded so far.
    pub(super) fn excluded_uris(&self) -> impl Iterator<Item = &str> {
        self.excluded_uris.iter().map(String::as_str)
    }

    /// Classifies every document URI the message numbered `seqs.last()` names; returns
    /// whether any is excluded.
    pub(super) fn note_documents(
        &mut self,
        seqs: &Sequence,
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
            if self.see_document(seqs, &notebook.uri, None, out) {
                if let Ok(value) = serde_json::from_str::<Value>(params.get()) {
                    let mut uris = Vec::new();
                    collect_uris(&value, &mut uris);
                    for uri in uris {
                        self.exclude_document(seqs, &uri, out);
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
        excluded |= self.see_document(seqs, &uri, language_id, out);
        excluded
    }

    /// Emits a document record the first time a URI appears; returns whether it is excluded.
    fn see_document(
        &mut self,
        seqs: &Sequence,
        uri: &str,
        language_id: Option<String>,
        out: &mut Vec<Record>,
    ) -> bool {
        if let Some(&excluded) = self.known.get(uri) {
            return excluded;
        }
        let path = self.relative_path(uri);
        let excluded = self.privacy.is_excluded(&path);
        self.known.insert(uri.to_string(), excluded);
        if excluded {
            self.excluded_uris.insert(uri.to_string());
        }
        out.push(Record::Document(DocumentRecord {
            uri: uri.to_string(),
            path,
            language_id,
            excluded,
            first_seq: seqs.last(),
        }));
        excluded
    }

    /// Marks a document excluded whatever its path (a cell of an excluded notebook).
    fn exclude_document(&mut self, seqs: &Sequence, uri: &str, out: &mut Vec<Record>) {
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
                first_seq: seqs.last(),
            }));
        }
    }

    /// Workspace-relative path of a URI, else its absolute path, else the URI.
    pub(super) fn relative_path(&self, uri: &str) -> String {
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
    pub(super) fn on_did_open(
        &mut self,
        seqs: &mut Sequence,
        origins: &mut OriginTracker,
        t_ns: u64,
        item: TextDocumentItem,
        out: &mut Vec<Record>,
    ) {
        let excluded = self.see_document(seqs, &item.uri, item.language_id.clone(), out);
        let doc = ShadowDocument::new(&item.text, item.version);
        if !excluded {
            origins.on_open(t_ns, &item.uri, &doc, self.encoding);
        }
        let n_lines = doc.len_lines();
        self.open.insert(item.uri.clone(), doc);
        let (text, redactions) = if excluded {
            (None, 0)
        } else {
            let (text, n) = redact_text(&item.text);
            (Some(text), n)
        };
        let seq = seqs.next();
        out.push(Record::Snapshot(SnapshotRecord {
            seq,
            t_ns,
            uri: item.uri.clone(),
            kind: SnapshotKind::Open,
            version: item.version,
            text,
            redactions,
        }));
        let seq = seqs.next();
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
    pub(super) fn on_did_change(
        &mut self,
        seqs: &mut Sequence,
        origins: &mut OriginTracker,
        t_ns: u64,
        params: DidChange,
        out: &mut Vec<Record>,
    ) {
        let uri = params.text_document.uri;
        let excluded = self.excluded_uris.contains(&uri);
        let encoding = self.encoding;
        let Some(doc) = self.open.get_mut(&uri) else {
            // A change to a document never opened: nothing to anchor it to.
            return;
        };
        if let Some(version) = params.text_document.version {
            doc.version = version;
        }
        let version = doc.version;
        // Only documents a tool proposed edits for pay for keeping the text before.
        let before = origins.is_watching(&uri).then(|| doc.clone());
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
            Some(before) => origins.classify(t_ns, &uri, &before, doc, &spans),
            None => vec![Origin::User; spans.len()],
        };
        for (change_index, (mut span, origin)) in spans.into_iter().zip(origins).enumerate() {
            let (before, n1) = redact_text(&span.before);
            let (after, n2) = redact_text(&span.after);
            span.before = before;
            span.after = after;
            let seq = seqs.next();
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
    pub(super) fn on_did_save(
        &mut self,
        seqs: &mut Sequence,
        t_ns: u64,
        params: DidSave,
        out: &mut Vec<Record>,
    ) {
        let uri = params.text_document.uri;
        let excluded = self.excluded_uris.contains(&uri);
        let version = self.open.get(&uri).map_or(0, |d| d.version);
        let (text, redactions) = match params.text {
            Some(text) if !excluded => {
                // A save with text is authoritative: resync the shadow copy.
                if let Some(doc) = self.open.get_mut(&uri) {
                    doc.apply_full_change(&text);
                }
                let (text, n) = redact_text(&text);
                (Some(text), n)
            }
            _ => (None, 0),
        };
        let seq = seqs.next();
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
    pub(super) fn on_did_close(
        &mut self,
        seqs: &mut Sequence,
        origins: &mut OriginTracker,
        t_ns: u64,
        params: DidClose,
        out: &mut Vec<Record>,
    ) {
        let uri = params.text_document.uri;
        origins.on_close(&uri);
        let version = self.open.remove(&uri).map_or(0, |d| d.version);
        let seq = seqs.next();
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
