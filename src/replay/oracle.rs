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

/// What a fed suggester answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The gold edits (`builtin:oracle`).
    Gold,
    /// The current text of every allowed gold location (`builtin:unchanged-at-gold`).
    UnchangedAtGold,
}

/// A suggester the engine feeds with gold through an [`OracleFeed`].
#[derive(Debug, Clone)]
pub struct FedSuggester {
    feed: Arc<OracleFeed>,
    answer: Answer,
}

impl FedSuggester {
    /// `builtin:oracle` and the feed the engine must be given.
    pub fn oracle() -> (FedSuggester, Arc<OracleFeed>) {
        Self::with(Answer::Gold)
    }

    /// `builtin:unchanged-at-gold` and the feed the engine must be given.
    pub fn unchanged_at_gold() -> (FedSuggester, Arc<OracleFeed>) {
        Self::with(Answer::UnchangedAtGold)
    }

    fn with(answer: Answer) -> (FedSuggester, Arc<OracleFeed>) {
        let feed = Arc::new(OracleFeed::default());
        (
            FedSuggester {
                feed: feed.clone(),
                answer,
            },
            feed,
        )
    }
}

impl Suggester for FedSuggester {
    fn name(&self) -> String {
        match self.answer {
            Answer::Gold => "builtin:oracle",
            Answer::UnchangedAtGold => "builtin:unchanged-at-gold",
        }
        .to_string()
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult {
            name: Some(self.name()),
            version: None,
        })
    }

    fn suggest(&mut self, _: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let edits = match self.answer {
            Answer::Gold => self.feed.suggestions(),
            Answer::UnchangedAtGold => self.feed.unchanged(),
        };
        Ok(SuggestResult {
            edits,
            reads: Vec::new(),
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        // The unchanged answer's content is the location's current text (like noop's).
        let text = match self.answer {
            Answer::Gold => self.feed.generation(),
            Answer::UnchangedAtGold => params.location_text(),
        };
        Ok(GenerateResult {
            text,
            reads: Vec::new(),
        })
    }

    fn shutdown(&mut self) {}
}
