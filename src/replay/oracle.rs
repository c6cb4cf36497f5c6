//! Test-only suggesters fed with gold by the engine's [`OracleFeed`], never through
//! the protocol: `builtin:oracle` answers with the gold edits (proves the metrics reach
//! their maximum); `builtin:unchanged-at-gold` answers with the current, unchanged
//! text of every allowed gold location (proves doing nothing at the right place is
//! never a hit, except under the Historian compat rule).

use std::sync::Arc;

use super::engine::OracleFeed;
use crate::suggest::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult,
};
use crate::suggest::{SuggestError, Suggester};

/// The oracle suggester.
#[derive(Debug, Clone, Default)]
pub struct OracleSuggester {
    feed: Arc<OracleFeed>,
}

impl OracleSuggester {
    /// An oracle and the feed the engine must be given.
    pub fn new() -> (OracleSuggester, Arc<OracleFeed>) {
        let feed = Arc::new(OracleFeed::default());
        (OracleSuggester { feed: feed.clone() }, feed)
    }
}

impl Suggester for OracleSuggester {
    fn name(&self) -> String {
        "builtin:oracle".to_string()
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult {
            name: Some(self.name()),
            version: None,
        })
    }

    fn suggest(&mut self, _: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        Ok(SuggestResult {
            edits: self.feed.suggestions(),
            reads: Vec::new(),
        })
    }

    fn generate(&mut self, _: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        Ok(GenerateResult {
            text: self.feed.generation(),
            reads: Vec::new(),
        })
    }

    fn shutdown(&mut self) {}
}

/// `builtin:unchanged-at-gold`: at every step, each allowed gold edit's lines with their
/// current text; `generate` returns the location's current text (like `builtin:noop`).
#[derive(Debug, Clone, Default)]
pub struct UnchangedAtGoldSuggester {
    feed: Arc<OracleFeed>,
}

impl UnchangedAtGoldSuggester {
    /// The suggester and the feed the engine must be given.
    pub fn new() -> (UnchangedAtGoldSuggester, Arc<OracleFeed>) {
        let feed = Arc::new(OracleFeed::default());
        (UnchangedAtGoldSuggester { feed: feed.clone() }, feed)
    }
}

impl Suggester for UnchangedAtGoldSuggester {
    fn name(&self) -> String {
        "builtin:unchanged-at-gold".to_string()
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult {
            name: Some(self.name()),
            version: None,
        })
    }

    fn suggest(&mut self, _: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        Ok(SuggestResult {
            edits: self.feed.unchanged(),
            reads: Vec::new(),
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        Ok(GenerateResult {
            text: params.location_text(),
            reads: Vec::new(),
        })
    }

    fn shutdown(&mut self) {}
}
