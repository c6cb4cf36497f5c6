//! `recorded:SERVER`: the offers a language server really made during a recorded
//! session, replayed as a suggester, so a live server and an offline model are scored
//! on the same steps. The engine hands the session's offers over through
//! [`Suggester::offers_feed`] (never through the protocol, never to another
//! suggester) and, before each call, the step's window in session time: from the end
//! of the last applied edit to the start of the next edit of the session. Only offers
//! answered inside that window are suggested, so the suggester never sees what the
//! developer did later, and each was made on exactly the step's text, so its byte
//! offsets are the step's coordinates. Most recent answer first, then each answer's
//! items in their rank order; each item becomes whole-line edits.

use std::sync::Mutex;

use super::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult, SuggestedEdit,
};
use super::{OffersFeed, SuggestError, Suggester};
use crate::core::trajectory::Offer;

/// The offers of the session being replayed and the current step's window.
#[derive(Debug, Default)]
struct Feed {
    offers: Mutex<Vec<Offer>>,
    window: Mutex<Option<(f64, f64)>>,
}

impl OffersFeed for Feed {
    fn session(&self, offers: &[Offer]) {
        *self.offers.lock().expect("offers lock") = offers.to_vec();
        *self.window.lock().expect("offers lock") = None;
    }

    fn window(&self, since_ms: f64, until_ms: f64) {
        *self.window.lock().expect("offers lock") = Some((since_ms, until_ms));
    }
}

/// The `recorded:SERVER` suggester.
#[derive(Debug)]
pub struct RecordedSuggester {
    server: String,
    feed: Feed,
}

/// A `recorded:` spec that names no server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: name the server whose offers to replay, as in recorded:pyright")]
pub struct RecordedSpecError(String);

impl RecordedSuggester {
    /// `recorded:SERVER`: the offers of servers whose name contains SERVER.
    pub fn from_spec(spec: &str) -> Result<RecordedSuggester, RecordedSpecError> {
        match spec.strip_prefix("recorded:") {
            Some(server) if !server.trim().is_empty() => Ok(RecordedSuggester {
                server: server.trim().to_string(),
                feed: Feed::default(),
            }),
            _ => Err(RecordedSpecError(spec.to_owned())),
        }
    }

    /// The window's offers from this server, most recent answer first, then by rank.
    fn in_window(&self) -> Vec<Offer> {
        let Some((since, until)) = *self.feed.window.lock().expect("offers lock") else {
            return Vec::new();
        };
        let mut offers: Vec<Offer> = self
            .feed
            .offers
            .lock()
            .expect("offers lock")
            .iter()
            .filter(|o| o.t_ms >= since && o.t_ms < until)
            .filter(|o| crate::engine::live::server_matches(&o.server, &self.server))
            .cloned()
            .collect();
        offers.sort_by(|a, b| b.request_seq.cmp(&a.request_seq).then(a.rank.cmp(&b.rank)));
        offers
    }
}

/// An offer's edits in one file as one whole-line edit of `text` (the file's text at
/// the answer, which is the step's): from the first touched line to the last.
pub fn whole_line_edit(offer: &Offer, text: &str) -> Option<SuggestedEdit> {
    let mut edits: Vec<_> = offer
        .edits
        .iter()
        .filter(|e| e.file == offer.file)
        .collect();
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|e| e.start_byte);
    let ok = edits.windows(2).all(|w| w[0].end_byte <= w[1].start_byte)
        && edits.iter().all(|e| {
            e.start_byte <= e.end_byte
                && e.end_byte <= text.len()
                && text.is_char_boundary(e.start_byte)
                && text.is_char_boundary(e.end_byte)
        });
    if !ok {
        return None;
    }
    let first = edits[0].start_byte;
    let last = edits[edits.len() - 1].end_byte;
    let line_start = text[..first].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[last..].find('\n').map_or(text.len(), |i| last + i + 1);
    let mut new = String::new();
    let mut at = line_start;
    for e in &edits {
        new.push_str(&text[at..e.start_byte]);
        new.push_str(&e.text);
        at = e.end_byte;
    }
    new.push_str(&text[at..line_end]);
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    let start_line = text[..line_start].matches('\n').count();
    let end_line = start_line
        + text[line_start..line_end].matches('\n').count()
        + usize::from(
            line_end == text.len() && !text[line_start..].ends_with('\n') && line_end > line_start,
        );
    (new != text[line_start..line_end]).then(|| SuggestedEdit {
        file: offer.file.clone(),
        start_line,
        end_line,
        text: new,
        confidence: None,
    })
}

impl Suggester for RecordedSuggester {
    fn name(&self) -> String {
        format!("recorded:{}", self.server)
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult {
            name: Some(self.name()),
            version: None,
        })
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let mut edits: Vec<SuggestedEdit> = Vec::new();
        for offer in self.in_window() {
            // The worktree holds exactly the step's state.
            let path = std::path::Path::new(&params.worktree).join(&offer.file);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            if let Some(edit) = whole_line_edit(&offer, &text)
                && !edits.contains(&edit)
            {
                edits.push(edit);
            }
        }
        Ok(SuggestResult {
            edits,
            reads: Vec::new(),
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        // The first offer of the window that rewrites exactly these lines, else the
        // lines as they are (what a developer who took no offer kept).
        let path = std::path::Path::new(&params.worktree).join(&params.file);
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let offered = self
            .in_window()
            .iter()
            .filter(|o| o.file == params.file)
            .filter_map(|o| whole_line_edit(o, &text))
            .find(|e| e.start_line == params.start_line && e.end_line == params.end_line);
        Ok(GenerateResult {
            text: offered.map_or_else(|| params.location_text(), |e| e.text),
            reads: Vec::new(),
        })
    }

    fn shutdown(&mut self) {}

    fn needs_history(&self) -> bool {
        // Its answers are the session's offers; it reads the worktree, not the request.
        false
    }

    fn offers_feed(&self) -> Option<&dyn OffersFeed> {
        Some(&self.feed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lsp::OfferKind;
    use crate::core::trajectory::OfferEdit;

    fn offer(edits: Vec<(usize, usize, &str)>) -> Offer {
        Offer {
            seq: 2,
            rank: 0,
            request_seq: 1,
            t_ms: 10.0,
            latency_ms: 1.0,
            kind: OfferKind::Completion,
            method: "textDocument/completion".into(),
            file: "a.py".into(),
            line: Some(1),
            col_byte: Some(4),
            label: None,
            text: String::new(),
            edits: edits
                .into_iter()
                .map(|(s, e, t)| OfferEdit {
                    file: "a.py".into(),
                    start_byte: s,
                    end_byte: e,
                    text: t.into(),
                })
                .collect(),
            list_size: 1,
            server: "pyright-langserver".into(),
        }
    }

    #[test]
    fn offers_become_whole_line_edits() {
        let text = "import os\ngree\n";
        // "gree" (bytes 10..14) → "greet": line 1 rewritten.
        let edit = whole_line_edit(&offer(vec![(10, 14, "greet")]), text).unwrap();
        assert_eq!(
            (edit.start_line, edit.end_line, edit.text.as_str()),
            (1, 2, "greet\n")
        );
        // With an import on line 0: lines 0..2.
        let edit = whole_line_edit(
            &offer(vec![(9, 9, "\nimport sys"), (10, 14, "greet")]),
            text,
        )
        .unwrap();
        assert_eq!(
            (edit.start_line, edit.end_line, edit.text.as_str()),
            (0, 2, "import os\nimport sys\ngreet\n")
        );
        // Offsets past the text: not this state.
        assert_eq!(whole_line_edit(&offer(vec![(30, 31, "x")]), text), None);
        // Changing nothing is no suggestion.
        assert_eq!(whole_line_edit(&offer(vec![(10, 14, "gree")]), text), None);
    }
}
