//! `nextedit replay`'s LLM-as-judge flags (`--judge`, `--judge-prompt`,
//! `--judge-format`), a flattened argument group turned into the library's settings here.

use clap::{Args, ValueEnum};
use nextedit::engine::judge::{JudgeFormat, JudgePrompt};
use nextedit::service::run::RunSettings;

/// The judge model and its question.
#[derive(Debug, Args)]
pub(super) struct JudgeArgs {
    /// Ask a judge model about each step's scored prediction (the kept prediction's or
    /// generated content): openai:<URL>?model=<NAME>[&max_tokens=N] (an OpenAI-compatible
    /// endpoint, its key from $OPENAI_API_KEY or key_env=VAR, never stored; one
    /// off this machine needs --allow-network). Answers go through the response cache
    /// (--cache); a refusal, an unreadable answer, an HTTP error or a time-out
    /// (--timeout) is a counted judge failure, and a run whose every judge call failed
    /// fails. `report` shows the judge's columns (docs/metrics.md)
    #[arg(long, value_name = "SPEC")]
    judge: Option<String>,

    /// What the judge is asked: nep (the Next Edit Prediction benchmark's question: is
    /// the prediction a reasonable next edit, given the real one? its first word must
    /// be yes or no) or zed-qa (Zed's QA question: does it revert the programmer's
    /// edits, and how likely are they to accept it? a JSON object with reverts_edits
    /// and confidence 1-5)
    #[arg(long, value_enum, value_name = "PROMPT", default_value_t = JudgePromptArg::Nep, requires = "judge")]
    judge_prompt: JudgePromptArg,

    /// How the judge is asked to shape its answer: text (free text, read by the
    /// question's own rules; no response_format is sent), json-schema (OpenAI's
    /// structured outputs, response_format {"type": "json_schema", …, "strict": true}:
    /// OpenAI, vLLM, llama.cpp's llama-server) or llama-json (response_format
    /// {"type": "json_object", "schema": …}: llama-cpp-python, llama.cpp's
    /// llama-server). Both structured formats ask for one JSON object, {"answer":
    /// "yes"|"no"} for nep and {"reverts_edits": true|false, "confidence": 1-5} for
    /// zed-qa, and read nothing else. A resumed run needs the same --judge-format
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = JudgeFormatArg::Text, requires = "judge")]
    judge_format: JudgeFormatArg,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum JudgePromptArg {
    Nep,
    ZedQa,
}

#[derive(Debug, Clone, Copy, PartialEq, ValueEnum)]
enum JudgeFormatArg {
    Text,
    JsonSchema,
    LlamaJson,
}

impl JudgeArgs {
    /// `--judge` as given.
    pub(super) fn spec(&self) -> Option<String> {
        self.judge.clone()
    }

    /// `--judge-format` as given.
    pub(super) fn format(&self) -> JudgeFormat {
        match self.judge_format {
            JudgeFormatArg::Text => JudgeFormat::Text,
            JudgeFormatArg::JsonSchema => JudgeFormat::JsonSchema,
            JudgeFormatArg::LlamaJson => JudgeFormat::LlamaJson,
        }
    }

    /// `settings` with these flags.
    pub(super) fn apply(&self, settings: RunSettings) -> RunSettings {
        RunSettings {
            judge: self.judge.clone(),
            judge_prompt: match self.judge_prompt {
                JudgePromptArg::Nep => JudgePrompt::Nep,
                JudgePromptArg::ZedQa => JudgePrompt::ZedQa,
            },
            judge_format: self.format(),
            ..settings
        }
    }
}
