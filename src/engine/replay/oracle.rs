//! Test-only suggesters fed with gold by the engine through [`Suggester::gold_feed`],
//! never through the protocol: `builtin:oracle` answers with the gold edits (proves the
//! metrics reach their maximum); `builtin:unchanged-at-gold` answers with the current,
//! unchanged text of every allowed gold location (proves doing nothing at the right
//! place is never a hit, except under the Historian compat rule). `replay()` takes them
//! like any other suggester.

use std::sync::Mutex;

use crate::engine::suggest::protocol::{
    GenerateParams, GenerateResult, InitializeParams, InitializeResult, SuggestParams,
    SuggestResult, SuggestedEdit,
};
use crate::engine::suggest::{GoldFeed, SuggestError, Suggester};

/// What a fed suggester answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// The gold edits (`builtin:oracle`).
    Gold,
    /// The current text of every allowed gold location (`builtin:unchanged-at-gold`).
    UnchangedAtGold,
}

/// The gold answers of the current step, as the engine offered them.
#[derive(Debug, Default)]
struct OracleFeed {
    suggestions: Mutex<Vec<SuggestedEdit>>,
    unchanged: Mutex<Vec<SuggestedEdit>>,
    generation: Mutex<String>,
}

impl GoldFeed for OracleFeed {
    fn offer_suggestions(&self, gold: Vec<SuggestedEdit>, unchanged: Vec<SuggestedEdit>) {
        *self.suggestions.lock().expect("oracle lock") = gold;
        *self.unchanged.lock().expect("oracle lock") = unchanged;
    }

    fn offer_generation(&self, text: String) {
        *self.generation.lock().expect("oracle lock") = text;
    }
}

/// A suggester the engine feeds with gold (it accepts [`Suggester::gold_feed`]).
#[derive(Debug)]
pub struct FedSuggester {
    feed: OracleFeed,
    answer: Answer,
}

impl FedSuggester {
    /// `builtin:oracle`: answers with the gold edits.
    pub fn oracle() -> FedSuggester {
        Self::with(Answer::Gold)
    }

    /// `builtin:unchanged-at-gold`: answers with the unchanged text at the gold locations.
    pub fn unchanged_at_gold() -> FedSuggester {
        Self::with(Answer::UnchangedAtGold)
    }

    fn with(answer: Answer) -> FedSuggester {
        FedSuggester {
            feed: OracleFeed::default(),
            answer,
        }
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
            Answer::Gold => &self.feed.suggestions,
            Answer::UnchangedAtGold => &self.feed.unchanged,
        };
        Ok(SuggestResult {
            edits: edits.lock().expect("oracle lock").clone(),
            reads: Vec::new(),
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        // The unchanged answer's content is the location's current text (like noop's).
        let text = match self.answer {
            Answer::Gold => self.feed.generation.lock().expect("oracle lock").clone(),
            Answer::UnchangedAtGold => params.location_text(),
        };
        Ok(GenerateResult {
            text,
            reads: Vec::new(),
        })
    }

    fn shutdown(&mut self) {}

    fn needs_history(&self) -> bool {
        // Its answers come from the gold feed; `generate`'s from its own location.
        false
    }

    fn gold_feed(&self) -> Option<&dyn GoldFeed> {
        Some(&self.feed)
    }
}
