//! Built-in suggesters that need no process (`builtin:noop`).

use super::protocol::{
    CompleteParams, CompleteResult, GenerateParams, GenerateResult, InitializeParams,
    InitializeResult, SuggestParams, SuggestResult,
};
use super::{SuggestError, Suggester};

/// `builtin:noop`: never suggests anything, leaves text as it is and fills a
/// completion task's hole with nothing (scores 0).
#[derive(Debug, Default)]
pub struct NoopSuggester;

impl Suggester for NoopSuggester {
    fn name(&self) -> String {
        "builtin:noop".to_string()
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        Ok(InitializeResult {
            name: Some(self.name()),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        })
    }

    fn suggest(&mut self, _: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        Ok(SuggestResult::default())
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        // "Do nothing": the location's current text, unchanged.
        let text = params.location_text();
        Ok(GenerateResult {
            text,
            reads: Vec::new(),
        })
    }

    fn complete(&mut self, _: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        Ok(CompleteResult::default())
    }

    fn shutdown(&mut self) {}

    fn needs_history(&self) -> bool {
        // It never looks at the request: `generate` echoes its location's current text.
        false
    }
}
