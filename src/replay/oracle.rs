//! `builtin:oracle`: answers with the gold edits (test-only; proves the metrics
//! reach their maximum). It gets the answers from the engine's [`OracleFeed`],
//! never through the protocol.

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
