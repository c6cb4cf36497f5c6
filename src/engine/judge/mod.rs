//! LLM-as-judge (`replay --judge openai:URL?model=… --judge-prompt nep|zed-qa
//! --judge-format text|json-schema|llama-json`): a model behind an OpenAI-compatible
//! endpoint asked one question about each scored step's prediction, its answer free
//! text or constrained to a JSON schema ([`prompt`]: what is asked, the schema, and how
//! the answer is read).
//!
//! Every question goes through the response cache (`suggest::cache`'s store, call
//! `judge`, keyed by the judge's spec, the run's repetition and the hash of the request),
//! so the same question is never asked twice: the model's raw answer is cached and
//! parsed each time it is used. A refusal, garbage, an HTTP error or a time-out is a
//! [`Judgement`] with a failure, never a verdict. The endpoint is reached through the
//! `openai:` suggester's client (no proxy, no redirects, the key from the environment,
//! never stored).

pub mod prompt;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::engine::suggest::cache::{
    CacheKey, CacheMode, CachedAnswer, ResponseStore, request_hash,
};
use crate::engine::suggest::openai::{OpenAiSuggester, SpecError};
use crate::engine::suggest::prompt::Prompt;
use crate::engine::suggest::{Call, CallFailure, FailureKind, SuggestError};

/// Which question the judge is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JudgePrompt {
    /// The Next Edit Prediction benchmark's: is the prediction a reasonable next edit,
    /// given the real one? yes or no.
    Nep,
    /// Zed's edit prediction QA: does it revert the programmer's edits, and how likely is
    /// it to be accepted (1–5)? JSON.
    ZedQa,
}

impl JudgePrompt {
    /// Its name on the command line and in the database (`nep`, `zed-qa`).
    pub fn key(self) -> &'static str {
        match self {
            JudgePrompt::Nep => "nep",
            JudgePrompt::ZedQa => "zed-qa",
        }
    }

    /// The prompt named `key`, if it is one.
    pub fn from_key(key: &str) -> Option<JudgePrompt> {
        [JudgePrompt::Nep, JudgePrompt::ZedQa]
            .into_iter()
            .find(|p| p.key() == key)
    }
}

/// How the judge is asked to shape its answer (`--judge-format`): the request's
/// `response_format`, and how strictly the answer is then read ([`prompt::parse`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum JudgeFormat {
    /// Free text, read by the prompt's own rules (no `response_format` sent).
    #[default]
    Text,
    /// OpenAI's structured outputs (`{"type": "json_schema", "json_schema": {…,
    /// "strict": true}}`; OpenAI, vLLM, llama.cpp's `llama-server`).
    JsonSchema,
    /// llama-cpp-python's (and llama.cpp's) `{"type": "json_object", "schema": …}`.
    LlamaJson,
}

impl JudgeFormat {
    /// Its name on the command line and in the stored settings.
    pub fn key(self) -> &'static str {
        match self {
            JudgeFormat::Text => "text",
            JudgeFormat::JsonSchema => "json-schema",
            JudgeFormat::LlamaJson => "llama-json",
        }
    }
}

/// What the judge is shown about one step: the lines around the gold edit as they are,
/// as the gold edit leaves them and as the prediction leaves them, and the edits so far.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeCase {
    /// The file, relative to the worktree.
    pub file: String,
    /// First line shown (0-based).
    pub start_line: usize,
    /// The lines before the next edit.
    pub before: String,
    /// The same lines with the gold edit applied.
    pub gold: String,
    /// The same lines with the prediction written in place of the gold edit's lines.
    pub predicted: String,
    /// The edits applied so far, as a unified diff (the most recent ones).
    pub history: String,
}

/// A parsed answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// `nep`: judged a reasonable next edit (yes) or not (no).
    Nep {
        /// The answer was yes.
        yes: bool,
    },
    /// `zed-qa`: whether the prediction reverts the programmer's edits, and how likely
    /// it is to be accepted (1–5).
    ZedQa {
        /// It undoes edits of the history.
        reverts_edits: bool,
        /// 1 (surely rejected) to 5 (surely accepted).
        confidence: u8,
    },
}

/// What the judge said about one step.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The question asked.
    pub prompt: JudgePrompt,
    /// The verdict, or why there is none (the answer did not parse: `bad_result`; the
    /// endpoint failed: its kind).
    pub result: Result<Verdict, CallFailure>,
    /// Served from the response cache.
    pub cached: bool,
}

/// The judge of a run: its endpoint's client, the question, and the cache.
pub struct Judge {
    /// The spec as given (the cache's key; it holds no secret).
    spec: String,
    prompt: JudgePrompt,
    format: JudgeFormat,
    client: OpenAiSuggester,
    /// The response cache and how it is used (`None`: no cache).
    cache: Option<(Box<dyn ResponseStore>, CacheMode)>,
    repetition: u32,
}

impl Judge {
    /// The judge `spec` names (`openai:URL?model=…`; its key read from the environment
    /// now), asking `prompt`, each request within `timeout`, giving up on a trajectory
    /// after `give_up_after` failures to reach it in a row.
    pub fn from_spec(
        spec: &str,
        prompt: JudgePrompt,
        timeout: Duration,
        give_up_after: u32,
    ) -> Result<Judge, SpecError> {
        let client = OpenAiSuggester::from_spec(spec)?
            .with_timeout(timeout)
            .with_give_up_after(give_up_after);
        Ok(Judge {
            spec: spec.to_string(),
            prompt,
            format: JudgeFormat::Text,
            client,
            cache: None,
            repetition: 1,
        })
    }

    /// Asks for answers shaped by `format` (a different request from a `text` one, so
    /// never served a `text` answer from the cache).
    pub fn with_format(mut self, format: JudgeFormat) -> Judge {
        self.format = format;
        self
    }

    /// Asks through `store` in `mode`, keyed under `repetition` (1-based).
    pub fn with_cache(
        mut self,
        store: Box<dyn ResponseStore>,
        mode: CacheMode,
        repetition: u32,
    ) -> Judge {
        self.repetition = repetition;
        if mode != CacheMode::Off {
            self.cache = Some((store, mode));
        }
        self
    }

    /// Whether the endpoint is on this machine.
    pub fn is_local(&self) -> bool {
        self.client.spec().is_local()
    }

    /// A new trajectory: failures of the last one no longer count towards giving up.
    pub fn new_trajectory(&mut self) {
        self.client.reset_failures();
    }

    /// The judge's verdict on `case` (one request at most; none when cached).
    pub fn judge(&mut self, case: &JudgeCase) -> Judgement {
        let request = prompt::render(self.prompt, case);
        let response_format = prompt::response_format(self.prompt, self.format);
        let (answer, cached) = self.answer(&request, response_format.as_ref());
        let result = answer.and_then(|text| {
            prompt::parse(self.prompt, self.format, &text).map_err(|reason| CallFailure {
                kind: FailureKind::BadResult,
                message: crate::base::secrets::scrub(&reason.to_string()).into_owned(),
            })
        });
        Judgement {
            prompt: self.prompt,
            result,
            cached,
        }
    }

    /// The model's raw answer to `request` (shaped by `response_format`), from the
    /// cache or asked (then cached), and whether it was served.
    fn answer(
        &mut self,
        request: &Prompt,
        response_format: Option<&serde_json::Value>,
    ) -> (Result<String, CallFailure>, bool) {
        let Some((store, mode)) = &mut self.cache else {
            return (
                self.ask(request, response_format).map(|(text, _)| text),
                false,
            );
        };
        let key = CacheKey {
            suggester: self.spec.clone(),
            repetition: self.repetition,
            call: Call::Judge,
            request: request_hash(
                Call::Judge,
                &CachedRequest::of(self.prompt, request, response_format),
            ),
        };
        // A store that cannot be read is no answer: the question is asked.
        let found = store.cached(&key).ok().flatten();
        // Read-write asks again rather than serve a failure; read-only reproduces it.
        if let Some(found) = found.filter(|a| a.result.is_ok() || *mode == CacheMode::ReadOnly) {
            let text = found.result.and_then(|json| {
                json.get("text")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| CallFailure {
                        kind: FailureKind::BadResult,
                        message: "the cached answer holds no text".into(),
                    })
            });
            return (text, true);
        }
        if *mode == CacheMode::ReadOnly {
            let error = SuggestError::NotCached {
                call: Call::Judge.key().to_string(),
                at: String::new(),
            };
            return (Err(CallFailure::from(&error)), false);
        }
        let started = Instant::now();
        let asked = self.ask(request, response_format);
        let answer = CachedAnswer {
            result: match &asked {
                Ok((_, json)) => Ok(json.clone()),
                Err(failure) => Err(failure.clone()),
            },
            latency_ms: started.elapsed().as_secs_f64() * 1e3,
        };
        if let Some((store, _)) = &mut self.cache {
            // A cache that cannot be written costs a question next time, nothing more.
            let _ = store.store(&key, &answer);
        }
        (asked.map(|(text, _)| text), false)
    }

    /// One request to the endpoint: the answer's text, and the JSON the cache keeps.
    fn ask(
        &mut self,
        request: &Prompt,
        response_format: Option<&serde_json::Value>,
    ) -> Result<(String, serde_json::Value), CallFailure> {
        match (self.client).ask_text(Call::Judge.key(), request, response_format) {
            Ok(text) => {
                let json = serde_json::json!({ "text": text });
                Ok((text, json))
            }
            Err(error) => Err(CallFailure::from(&error)),
        }
    }
}

/// What identifies a question in the cache: the prompt's name, its messages and the
/// answer's shape (left out when free text, so `text` questions keep the keys they
/// had before there were formats).
#[derive(Serialize)]
struct CachedRequest<'a> {
    prompt: &'static str,
    system: &'a str,
    user: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a serde_json::Value>,
}

impl<'a> CachedRequest<'a> {
    fn of(
        prompt: JudgePrompt,
        request: &'a Prompt,
        response_format: Option<&'a serde_json::Value>,
    ) -> CachedRequest<'a> {
        let (system, user) = match request {
            Prompt::Chat { system, user } => (system.as_str(), user.as_str()),
            Prompt::Completion(text) => ("", text.as_str()),
        };
        CachedRequest {
            prompt: prompt.key(),
            system,
            user,
            response_format,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::suggest::cache::ResponseStoreError;
    use std::sync::{Arc, Mutex};

    /// A cache in memory: (request hash, answer).
    #[derive(Default, Clone)]
    struct Memory(Arc<Mutex<Vec<(CacheKey, CachedAnswer)>>>);

    impl ResponseStore for Memory {
        fn cached(&self, key: &CacheKey) -> Result<Option<CachedAnswer>, ResponseStoreError> {
            let entries = self.0.lock().unwrap();
            Ok(entries
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, a)| a.clone()))
        }
        fn store(
            &mut self,
            key: &CacheKey,
            answer: &CachedAnswer,
        ) -> Result<(), ResponseStoreError> {
            self.0.lock().unwrap().push((key.clone(), answer.clone()));
            Ok(())
        }
    }

    fn case() -> JudgeCase {
        JudgeCase {
            file: "a.py".into(),
            start_line: 0,
            before: "x = 1\n".into(),
            gold: "x = 2\n".into(),
            predicted: "x = 3\n".into(),
            history: String::new(),
        }
    }

    /// A judge of an endpoint nothing listens on (port 9 of loopback).
    fn judge(prompt: JudgePrompt, memory: &Memory, mode: CacheMode) -> Judge {
        Judge::from_spec(
            "openai:http://127.0.0.1:9/v1?model=m",
            prompt,
            Duration::from_secs(1),
            3,
        )
        .unwrap()
        .with_cache(Box::new(memory.clone()), mode, 1)
    }

    #[test]
    fn a_cached_answer_is_read_again_and_a_read_only_miss_is_a_failure() {
        let memory = Memory::default();
        // Read-only, nothing cached: a counted failure, nothing asked.
        let missed = judge(JudgePrompt::Nep, &memory, CacheMode::ReadOnly).judge(&case());
        let failure = missed.result.unwrap_err();
        assert_eq!(failure.kind, FailureKind::NotCached);
        assert!(!missed.cached);
        // Read-write: the endpoint is not there, the failure is cached and counted.
        let unreachable = judge(JudgePrompt::Nep, &memory, CacheMode::ReadWrite).judge(&case());
        assert_eq!(
            unreachable.result.unwrap_err().kind,
            FailureKind::Unreachable
        );
        assert_eq!(memory.0.lock().unwrap().len(), 1);
        // An answer in the cache under the same key is served and parsed each time.
        let key = memory.0.lock().unwrap()[0].0.clone();
        for (text, expected) in [
            ("No.", Ok(Verdict::Nep { yes: false })),
            ("I cannot help", Err(FailureKind::BadResult)),
        ] {
            memory.0.lock().unwrap()[0] = (
                key.clone(),
                CachedAnswer {
                    result: Ok(serde_json::json!({ "text": text })),
                    latency_ms: 1.0,
                },
            );
            for mode in [CacheMode::ReadWrite, CacheMode::ReadOnly] {
                let served = judge(JudgePrompt::Nep, &memory, mode).judge(&case());
                assert!(served.cached);
                assert_eq!(served.result.map_err(|f| f.kind), expected);
            }
        }
        // Another question is another request.
        let other = judge(JudgePrompt::ZedQa, &memory, CacheMode::ReadOnly).judge(&case());
        assert_eq!(other.result.unwrap_err().kind, FailureKind::NotCached);
        // So is the same question asked for a structured answer.
        let structured = judge(JudgePrompt::Nep, &memory, CacheMode::ReadOnly)
            .with_format(JudgeFormat::LlamaJson)
            .judge(&case());
        assert_eq!(structured.result.unwrap_err().kind, FailureKind::NotCached);
    }
}
