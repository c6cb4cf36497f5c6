//! One call of the `lsp:` suggester against its running server: the step's files
//! synced (those of the server's language only: the trajectory's, or those the
//! document filters the server registered match), the bounded wait for diagnostics,
//! and the requests whose answers become
//! proposals (rename in the state before the last rename, quick fixes near the recent
//! edits, fix-all, inline completion or completion at the cursor), in rank order. The
//! server's start is [`super::lsp`]'s, its transport and failures
//! [`super::lsp_server`]'s; turning answers into edits
//! is [`super::lsp_edits`]'s.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::SuggestError;
use super::lsp_edits::{self, TextEdit};
use super::lsp_server::{Answer, Document, Server, failure, request};
use super::protocol::{AppliedEdit, FileContent, SuggestedEdit};
use crate::core::record::uri::path_to_uri;
use crate::core::record::uri::uri_to_path;
use crate::core::syntax::Language;

/// Longest wait for the diagnostics of the text just synced (a server that publishes
/// none for it costs this much per step; pyright takes ~0.4 s a step here).
pub const DIAGNOSTICS_WAIT: Duration = Duration::from_secs(3);
/// Longest wait for the first diagnostics of a document just opened: a server's first
/// analysis of the workspace (pyright: ~4 s here), which its answers wait for too.
pub const FIRST_DIAGNOSTICS_WAIT: Duration = Duration::from_secs(15);
/// Completion items kept per request (after the editor's prefix filter and sort).
pub const COMPLETION_ITEMS: usize = 3;
/// Most recent applied edits whose neighbourhood is asked for quick fixes.
pub const NEIGHBOURHOOD_EDITS: usize = 3;
/// Lines around each of those edits that make its neighbourhood.
pub const NEIGHBOURHOOD_LINES: usize = 3;

/// The LSP `languageId` of a file, from its extension (`plaintext` when nextedit
/// knows none).
fn language_id(path: &str) -> &'static str {
    Language::from_path(Path::new(path)).map_or("plaintext", |l| match l {
        Language::Tsx => "typescriptreact",
        other => other.name(),
    })
}

/// Languages one server handles alike (a TypeScript server serves TSX).
fn family(language: Language) -> Language {
    match language {
        Language::Tsx => Language::TypeScript,
        other => other,
    }
}

/// Whether a registered document filter (`{language, scheme, pattern}`, or a bare
/// language id) takes the file at `full` whose `languageId` is `id`.
fn filter_takes(filter: &Value, id: &str, full: &Path) -> bool {
    if let Some(language) = filter.as_str() {
        return language == id;
    }
    let field = |name: &str| filter.get(name).and_then(Value::as_str);
    let pattern_takes = |pattern: &str| {
        globset::Glob::new(pattern).is_ok_and(|g| g.compile_matcher().is_match(full))
    };
    (field("language").is_some() || field("pattern").is_some())
        && field("language").is_none_or(|l| l == id)
        && field("scheme").is_none_or(|s| s == "file")
        && field("pattern").is_none_or(pattern_takes)
}

/// One step's conversation with the server: what it was asked and how long it waited.
pub(super) struct Step<'a> {
    pub(super) server: &'a mut Server,
    pub(super) call: &'a str,
    pub(super) deadline: Instant,
    pub(super) waiting: &'a mut Duration,
    pub(super) language: Option<&'a str>,
    /// An error answer, kept in case every request gets one.
    pub(super) last_error: Option<SuggestError>,
    pub(super) answered: usize,
}

impl<'a> Step<'a> {
    /// A step of call `call` that has asked nothing yet.
    pub(super) fn new(
        server: &'a mut Server,
        call: &'a str,
        deadline: Instant,
        waiting: &'a mut Duration,
        language: Option<&'a str>,
    ) -> Step<'a> {
        Step {
            server,
            call,
            deadline,
            waiting,
            language,
            last_error: None,
            answered: 0,
        }
    }
}

impl Step<'_> {
    /// Whether the server was started for `path`'s language, so it may be told about
    /// the file and asked in it: a document filter the server registered takes it, else
    /// its extension names the trajectory's language (any language nextedit knows when
    /// the trajectory names none). A reStructuredText page of a Python project is no
    /// Python file, whatever the trajectory's language.
    fn serves(&self, path: &str) -> bool {
        if !self.server.selectors.is_empty() {
            let full = self.server.root.join(path);
            let id = language_id(path);
            return (self.server.selectors.iter()).any(|f| filter_takes(f, id, &full));
        }
        let Some(file) = Language::from_path(Path::new(path)) else {
            return false;
        };
        match self.language {
            Some(name) => Language::from_name(name).is_some_and(|l| family(l) == family(file)),
            None => true,
        }
    }

    /// A request; `None` for an error answer (kept in `last_error`).
    fn ask(&mut self, method: &str, params: Value) -> Result<Option<Value>, SuggestError> {
        let started = Instant::now();
        let answer = request(self.server, self.call, method, params, self.deadline);
        *self.waiting += started.elapsed();
        Ok(match answer? {
            Answer::Result(value) => {
                self.answered += 1;
                Some(value)
            }
            Answer::Error(error) => {
                self.last_error = Some(error);
                None
            }
        })
    }

    fn notify(&mut self, method: &str, params: Value) -> Result<(), SuggestError> {
        let call = self.call;
        self.server
            .client
            .notify(method, params)
            .map_err(|e| failure(self.server, call, e))
    }

    /// Opens or updates every file of the step the server serves ([`Step::serves`]: the
    /// others are never opened, so nothing is asked in them); returns the paths whose
    /// text changed.
    pub(super) fn sync(&mut self, files: &[FileContent]) -> Result<HashSet<String>, SuggestError> {
        // Registrations the server sent since the last call decide what it serves.
        self.take_notifications();
        let mut changed = HashSet::new();
        for file in files {
            if !self.serves(&file.path)
                || self
                    .server
                    .documents
                    .get(&file.path)
                    .is_some_and(|d| d.text == file.text)
            {
                continue;
            }
            self.set_text(&file.path, &file.text)?;
            changed.insert(file.path.clone());
        }
        Ok(changed)
    }

    /// Tells the server `path` now holds `text` (didOpen the first time).
    fn set_text(&mut self, path: &str, text: &str) -> Result<(), SuggestError> {
        let (method, params, uri) = match self.server.documents.get_mut(path) {
            Some(doc) => {
                doc.version += 1;
                doc.text = text.to_string();
                let params = json!({"textDocument": {"uri": doc.uri, "version": doc.version},
                                    "contentChanges": [{"text": text}]});
                ("textDocument/didChange", params, doc.uri.clone())
            }
            None => {
                let uri = path_to_uri(&self.server.root.join(path));
                let params = json!({"textDocument": {"uri": uri, "languageId": language_id(path),
                                                     "version": 1, "text": text}});
                self.server.documents.insert(
                    path.to_string(),
                    Document {
                        uri: uri.clone(),
                        version: 1,
                        text: text.to_string(),
                    },
                );
                ("textDocument/didOpen", params, uri)
            }
        };
        self.server.fresh.remove(&uri);
        self.notify(method, params)
    }

    /// Takes in the notifications that came, waiting (bounded) until `path`'s
    /// diagnostics are those of its current text.
    pub(super) fn diagnostics_of(&mut self, path: &str, wait: bool) -> Vec<Value> {
        let Some(doc) = self.server.documents.get(path) else {
            return Vec::new();
        };
        let uri = doc.uri.clone();
        let bound = if doc.version == 1 {
            FIRST_DIAGNOSTICS_WAIT
        } else {
            DIAGNOSTICS_WAIT
        };
        let started = Instant::now();
        let until = (started + bound).min(self.deadline);
        loop {
            let fresh = self.server.fresh.contains(&uri);
            let left = until.saturating_duration_since(Instant::now());
            let timeout = if fresh || !wait { Duration::ZERO } else { left };
            let Some(note) = self.server.client.next_notification(timeout) else {
                break;
            };
            self.absorb(&note);
        }
        *self.waiting += started.elapsed();
        self.server
            .diagnostics
            .get(&uri)
            .cloned()
            .unwrap_or_default()
    }

    /// Takes in the notifications that came (diagnostics, registrations) without waiting.
    fn take_notifications(&mut self) {
        while let Some(note) = self.server.client.next_notification(Duration::ZERO) {
            self.absorb(&note);
        }
    }

    /// Takes in one message from the server: a `publishDiagnostics` notification (fresh
    /// when it is for the document's current version), or a `client/registerCapability`
    /// request (the client answered it) whose document filters for `textDocument/…`
    /// methods say which files the server serves; anything else is passed over.
    fn absorb(&mut self, note: &Value) {
        match note.get("method").and_then(Value::as_str) {
            Some("textDocument/publishDiagnostics") => {
                let Some(params) = note.get("params") else {
                    return;
                };
                let Some(for_uri) = params.get("uri").and_then(Value::as_str) else {
                    return;
                };
                let list = (params.get("diagnostics").and_then(Value::as_array))
                    .cloned()
                    .unwrap_or_default();
                let current = (self.server.documents.values())
                    .find(|d| d.uri == for_uri)
                    .map(|d| d.version);
                let of_version = params.get("version").and_then(Value::as_i64);
                if of_version.is_none() || of_version == current {
                    self.server.fresh.insert(for_uri.to_string());
                }
                self.server.diagnostics.insert(for_uri.to_string(), list);
            }
            Some("client/registerCapability") => {
                let registrations = (note.pointer("/params/registrations"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for registration in registrations {
                    let method = registration.get("method").and_then(Value::as_str);
                    let selector = registration
                        .pointer("/registerOptions/documentSelector")
                        .and_then(Value::as_array);
                    if let (Some(method), Some(selector)) = (method, selector)
                        && method.starts_with("textDocument/")
                    {
                        self.server.selectors.extend(selector.iter().cloned());
                    }
                }
            }
            _ => {}
        }
    }

    /// The current text of `path`: the synced document, else the worktree's file.
    pub(super) fn text_of(&self, path: &str) -> Option<String> {
        match self.server.documents.get(path) {
            Some(doc) => Some(doc.text.clone()),
            None => std::fs::read_to_string(self.server.root.join(path)).ok(),
        }
    }

    /// The worktree-relative path of a URI inside the worktree.
    fn path_of(&self, uri: &str) -> Option<String> {
        let path = PathBuf::from(uri_to_path(uri)?);
        let rel = path.strip_prefix(&self.server.root).ok()?;
        crate::core::trajectory::RelPath::parse(&rel.to_string_lossy())
            .ok()
            .map(|p| p.as_str().to_string())
    }

    /// A workspace edit as whole-line edits of the current texts; `bases` gives the
    /// text the edits of a file apply to when it is not the current one (a rename
    /// asked in the state before the edits that made it).
    fn workspace_edit(&self, edit: &Value, bases: &HashMap<String, String>) -> Vec<SuggestedEdit> {
        let mut out = Vec::new();
        for (uri, edits) in lsp_edits::workspace_edits(edit).unwrap_or_default() {
            let Some(path) = self.path_of(&uri) else {
                continue;
            };
            let Some(current) = self.text_of(&path) else {
                continue;
            };
            let from = bases.get(&path).unwrap_or(&current);
            if let Some(new) = lsp_edits::apply(from, &edits) {
                out.extend(lsp_edits::line_edits(&path, &current, &new));
            }
        }
        out
    }

    /// Edits of `path` as whole-line edits of its current text.
    pub(super) fn file_edits(&self, path: &str, edits: &[TextEdit]) -> Vec<SuggestedEdit> {
        let Some(current) = self.text_of(path) else {
            return Vec::new();
        };
        lsp_edits::apply(&current, edits)
            .map(|new| lsp_edits::line_edits(path, &current, &new))
            .unwrap_or_default()
    }

    fn capability(&self, name: &str) -> bool {
        self.server
            .capabilities
            .get(name)
            .is_some_and(|c| !c.is_null() && c != &Value::Bool(false))
    }

    /// Code-action proposals, ranked: the preferred quick fixes for the diagnostics near
    /// the most recent edits (most recent edit first), fix-all of the cursor's file, then
    /// the other quick fixes (a server's "disable this rule here" and its alternatives).
    pub(super) fn code_actions(
        &mut self,
        prior: &[AppliedEdit],
        cursor_file: &str,
    ) -> Result<Vec<Vec<SuggestedEdit>>, SuggestError> {
        let (mut preferred, mut fix_all, mut others) = (Vec::new(), Vec::new(), Vec::new());
        if !self.capability("codeActionProvider") {
            return Ok(Vec::new());
        }
        let mut asked: Vec<(String, usize, usize)> = Vec::new();
        for edit in prior.iter().rev().take(NEIGHBOURHOOD_EDITS) {
            let Some(doc) = self.server.documents.get(&edit.file) else {
                continue;
            };
            let lines = doc.text.split_inclusive('\n').count();
            let start = edit.start_line.saturating_sub(NEIGHBOURHOOD_LINES);
            let end = (edit.end_line + NEIGHBOURHOOD_LINES).min(lines);
            if asked.contains(&(edit.file.clone(), start, end)) {
                continue;
            }
            asked.push((edit.file.clone(), start, end));
            let uri = doc.uri.clone();
            let near: Vec<Value> = self
                .diagnostics_of(&edit.file, false)
                .into_iter()
                .filter(|d| {
                    let line = |p: &str| d.pointer(p).and_then(Value::as_u64).unwrap_or(0) as usize;
                    line("/range/start/line") < end && line("/range/end/line") >= start
                })
                .collect();
            if near.is_empty() {
                continue;
            }
            let params = json!({"textDocument": {"uri": uri},
                "range": {"start": {"line": start, "character": 0}, "end": {"line": end, "character": 0}},
                "context": {"diagnostics": near, "only": ["quickfix"], "triggerKind": 2}});
            if let Some(answer) = self.ask("textDocument/codeAction", params)? {
                for (is_preferred, action) in lsp_edits::code_action_edits(&answer) {
                    let edits = self.workspace_edit(&action, &HashMap::new());
                    if is_preferred {
                        preferred.push(edits);
                    } else {
                        others.push(edits);
                    }
                }
            }
        }
        let all = self.diagnostics_of(cursor_file, false);
        if let Some(doc) = self
            .server
            .documents
            .get(cursor_file)
            .filter(|_| !all.is_empty())
        {
            let lines = doc.text.split_inclusive('\n').count();
            let params = json!({"textDocument": {"uri": doc.uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": lines, "character": 0}},
                "context": {"diagnostics": all, "only": ["source.fixAll"], "triggerKind": 2}});
            if let Some(answer) = self.ask("textDocument/codeAction", params)? {
                for (_, action) in lsp_edits::code_action_edits(&answer) {
                    fix_all.push(self.workspace_edit(&action, &HashMap::new()));
                }
            }
        }
        preferred.extend(fix_all);
        preferred.extend(others);
        Ok(preferred)
    }

    /// Inline completions where the server offers them, else the top completion items,
    /// at `cursor` (line, byte column) of `path`: one proposal each.
    pub(super) fn completions(
        &mut self,
        path: &str,
        cursor: (usize, usize),
    ) -> Result<Vec<Vec<TextEdit>>, SuggestError> {
        let Some(doc) = self.server.documents.get(path) else {
            return Ok(Vec::new());
        };
        let (uri, text) = (doc.uri.clone(), doc.text.clone());
        let position = lsp_edits::position(&text, cursor.0, cursor.1);
        let at = json!({"line": position.0, "character": position.1});
        if self.capability("inlineCompletionProvider") {
            let params = json!({"textDocument": {"uri": uri}, "position": at, "context": {"triggerKind": 2}});
            let answer = self.ask("textDocument/inlineCompletion", params)?;
            return Ok(answer
                .map(|a| lsp_edits::inline_completion_edits(&a, position, COMPLETION_ITEMS))
                .unwrap_or_default()
                .into_iter()
                .map(|e| vec![e])
                .collect());
        }
        let triggers: Vec<String> = self
            .server
            .capabilities
            .pointer("/completionProvider/triggerCharacters")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if !self.capability("completionProvider")
            || !lsp_edits::completes_here(&text, cursor.0, cursor.1, &triggers)
        {
            return Ok(Vec::new());
        }
        let params =
            json!({"textDocument": {"uri": uri}, "position": at, "context": {"triggerKind": 1}});
        let Some(answer) = self.ask("textDocument/completion", params)? else {
            return Ok(Vec::new());
        };
        Ok(
            lsp_edits::completion_items(&answer, &text, cursor, COMPLETION_ITEMS)
                .iter()
                .filter_map(|item| lsp_edits::completion_edits(item, &text, cursor))
                .collect(),
        )
    }

    /// When the last edit renamed an identifier: the server's rename of it, asked in
    /// the state before the edits that made this rename (where every occurrence still
    /// agrees) and diffed against the current texts, so what is left is the other
    /// occurrences.
    pub(super) fn rename(
        &mut self,
        prior: &[AppliedEdit],
    ) -> Result<Vec<SuggestedEdit>, SuggestError> {
        let Some(last) = prior.last() else {
            return Ok(Vec::new());
        };
        let Some(renamed) = lsp_edits::renamed_identifier(last) else {
            return Ok(Vec::new());
        };
        if !self.capability("renameProvider") {
            return Ok(Vec::new());
        }
        let Some(uri) = self.server.documents.get(&last.file).map(|d| d.uri.clone()) else {
            return Ok(Vec::new());
        };
        // Per file, its current text and its text with this rename's edits set back
        // (a rename keeps line numbers, so each edit's current lines stay valid).
        let mut texts: BTreeMap<String, (String, String)> = BTreeMap::new();
        for edit in lsp_edits::same_renames(prior, &renamed) {
            let Some(doc) = self.server.documents.get(&edit.file) else {
                continue;
            };
            let (_, before) = texts
                .entry(edit.file.clone())
                .or_insert_with(|| (doc.text.clone(), doc.text.clone()));
            *before =
                lsp_edits::replace_lines(before, edit.start_line, edit.end_line, &edit.before);
        }
        let mut set_back = Vec::new();
        for (file, (_, before)) in &texts {
            self.set_text(file, before)?;
            set_back.push(file.clone());
        }
        let before = &texts[&last.file].1;
        let position = lsp_edits::position(before, renamed.line, renamed.column);
        let params = json!({"textDocument": {"uri": uri},
            "position": {"line": position.0, "character": position.1}, "newName": renamed.new_name});
        let answer = self.ask("textDocument/rename", params);
        // The server gets the current texts back whatever the answer.
        for file in set_back {
            self.set_text(&file, &texts[&file].0)?;
        }
        let bases: HashMap<String, String> = texts
            .into_iter()
            .map(|(file, (_, before))| (file, before))
            .collect();
        Ok(answer?
            .map(|edit| self.workspace_edit(&edit, &bases))
            .unwrap_or_default())
    }

    /// Every error answer, when nothing was answered: the call failed.
    pub(super) fn outcome<T>(self, value: T) -> Result<T, SuggestError> {
        match self.last_error {
            Some(error) if self.answered == 0 => Err(error),
            _ => Ok(value),
        }
    }
}

/// The text of lines `[start_line, end_line)` after `edits`, when they all fall
/// within those lines; `None` otherwise (an edit elsewhere is not this location's).
pub(super) fn location_after(
    text: &str,
    edits: &[TextEdit],
    start_line: usize,
    end_line: usize,
) -> Option<String> {
    if edits
        .iter()
        .any(|e| e.start.0 < start_line || e.end.0 >= end_line)
    {
        return None;
    }
    let new = lsp_edits::apply(text, edits)?;
    let old_lines = text.split_inclusive('\n').count();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let end = (end_line + new_lines.len()).checked_sub(old_lines)?;
    Some(new_lines.get(start_line..end)?.concat())
}

#[cfg(test)]
mod tests {
    use super::{filter_takes, language_id};
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn a_file_is_served_by_its_extension_or_by_the_filters_a_server_registered() {
        assert_eq!(language_id("docs/templating.rst"), "plaintext");
        assert_eq!(language_id("pkg/app.py"), "python");
        assert_eq!(language_id("ui/view.tsx"), "typescriptreact");
        let full = Path::new("/w/docs/conf.py");
        // By language, by pattern, both; another scheme or an empty filter takes nothing.
        assert!(filter_takes(&json!({"language": "python"}), "python", full));
        assert!(!filter_takes(
            &json!({"language": "python"}),
            "plaintext",
            full
        ));
        assert!(filter_takes(&json!({"pattern": "**/*.py"}), "python", full));
        assert!(!filter_takes(
            &json!({"pattern": "**/*.rst"}),
            "python",
            full
        ));
        assert!(filter_takes(
            &json!({"language": "python", "scheme": "file", "pattern": "**/docs/*.py"}),
            "python",
            full
        ));
        assert!(!filter_takes(
            &json!({"language": "python", "scheme": "untitled"}),
            "python",
            full
        ));
        assert!(!filter_takes(&json!({"scheme": "file"}), "python", full));
        assert!(filter_takes(&json!("python"), "python", full));
    }
}
