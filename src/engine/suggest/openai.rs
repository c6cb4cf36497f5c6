//! The `openai:` suggester: any OpenAI-compatible HTTP endpoint (llama.cpp's server,
//! llama-cpp-python, vLLM, Ollama) asked in-process, one request per call.
//!
//! Spec: `openai:URL?model=NAME[&template=zeta|nes][&key_env=VAR][&max_tokens=N]
//! [&temperature=T][&seed=N]`. The API key is read from the environment variable
//! `key_env` names (default: `OPENAI_API_KEY` when it is set) and is never part of the
//! spec, so it never reaches a run's stored settings. Requests go to the URL given and
//! nowhere else: no proxy from the environment, no redirects, plain HTTP only.
//! Transport failures are typed, and after a number of them in a row the rest of the
//! trajectory is not asked. The prompt and the answer's parsing are [`super::prompt`]'s.

use std::time::Duration;

use serde_json::{Value, json};

use super::prompt::{self, Prompt, PromptInput, Region, Template};
use super::protocol::{
    AppliedEdit, CompleteParams, CompleteResult, FileContent, GenerateParams, GenerateResult,
    InitializeParams, InitializeResult, SuggestParams, SuggestResult, SuggesterRead,
};
use super::{DEFAULT_GIVE_UP_AFTER, FailureStreak, SuggestError, Suggester};

/// The variable the API key is read from when the spec names none.
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";
/// `max_tokens` when the spec gives none.
pub const DEFAULT_MAX_TOKENS: u32 = 256;
/// Per-request time limit when none is set (replay sets `--timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an `openai:` spec is not usable.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// It does not start with `openai:` followed by a URL.
    #[error("not an openai: spec: {0:?}")]
    NotOpenAi(String),
    /// The URL is not `http://host[:port][/path]`.
    #[error(
        "openai: URL {url:?} is not usable: {reason} (give the API's base, e.g. http://127.0.0.1:8080/v1)"
    )]
    BadUrl {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A parameter is unknown, repeated or has a bad value.
    #[error("openai: parameter {name:?}: {reason}")]
    BadParameter {
        /// The parameter.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// `model=` is missing.
    #[error("openai: spec needs model=NAME (the model the server serves)")]
    NoModel,
    /// `key_env=VAR` names a variable that is not set.
    #[error("openai: key_env={0} names an environment variable that is not set")]
    KeyNotSet(String),
}

/// A parsed `openai:` spec (it holds no secret: only the key's variable name).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiSpec {
    /// Base URL of the API (`http://127.0.0.1:8080/v1`), without a trailing slash.
    pub base_url: String,
    /// Host (and port) of that URL.
    pub host: String,
    /// Model name sent with each request.
    pub model: String,
    /// Prompt format.
    pub template: Template,
    /// The variable holding the API key, if one is to be sent.
    pub key_env: Option<String>,
    /// `key_env` was given explicitly (then it must be set).
    pub key_env_explicit: bool,
    /// Tokens the model may answer with.
    pub max_tokens: u32,
    /// Sampling temperature (0: greedy).
    pub temperature: f64,
    /// Sampling seed sent with each request.
    pub seed: u64,
}

impl OpenAiSpec {
    /// Parses `openai:URL?model=…&…`.
    pub fn parse(spec: &str) -> Result<OpenAiSpec, SpecError> {
        let rest = spec
            .strip_prefix("openai:")
            .ok_or_else(|| SpecError::NotOpenAi(spec.to_string()))?;
        let (url, query) = rest.split_once('?').unwrap_or((rest, ""));
        let bad_url = |reason| SpecError::BadUrl {
            // A URL may carry credentials (refused below): never repeated.
            url: crate::base::secrets::mask(url).into_owned(),
            reason,
        };
        if url.starts_with("https://") {
            return Err(bad_url(
                "https is not supported (nextedit is built without TLS): use a local endpoint, or a local TLS-terminating proxy",
            ));
        }
        let after_scheme = url
            .strip_prefix("http://")
            .ok_or_else(|| bad_url("it must start with http://"))?;
        let host = after_scheme.split('/').next().unwrap_or("");
        if host.is_empty() {
            return Err(bad_url("it names no host"));
        }
        if host.contains('@') {
            return Err(bad_url(
                "credentials in the URL would be stored with the run: put the key in an environment variable and name it with key_env=VAR",
            ));
        }
        let mut parsed = OpenAiSpec {
            base_url: url.trim_end_matches('/').to_string(),
            host: host.to_string(),
            model: String::new(),
            template: Template::Zeta,
            key_env: Some(DEFAULT_KEY_ENV.to_string()),
            key_env_explicit: false,
            max_tokens: DEFAULT_MAX_TOKENS,
            temperature: 0.0,
            seed: 0,
        };
        let mut seen = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let bad = |reason: &str| SpecError::BadParameter {
                name: name.to_string(),
                reason: reason.to_string(),
            };
            if seen.contains(&name) {
                return Err(bad("given twice"));
            }
            seen.push(name);
            match name {
                "model" if !value.is_empty() => parsed.model = value.to_string(),
                "template" => {
                    parsed.template =
                        Template::from_name(value).ok_or_else(|| bad("use zeta or nes"))?
                }
                "key_env" if !value.is_empty() => {
                    parsed.key_env = Some(value.to_string());
                    parsed.key_env_explicit = true;
                }
                "max_tokens" => {
                    parsed.max_tokens = value
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad("a positive whole number"))?
                }
                "temperature" => {
                    parsed.temperature = value
                        .parse()
                        .ok()
                        .filter(|t: &f64| (0.0..=2.0).contains(t))
                        .ok_or_else(|| bad("a number from 0 to 2"))?
                }
                "seed" => parsed.seed = value.parse().map_err(|_| bad("a whole number"))?,
                "key" | "api_key" | "apikey" | "token" => {
                    return Err(bad(
                        "a key in the spec would be stored with the run: put it in an environment variable and name it with key_env=VAR",
                    ));
                }
                _ => {
                    return Err(bad(
                        "unknown (model, template, key_env, max_tokens, temperature, seed)",
                    ));
                }
            }
        }
        if parsed.model.is_empty() {
            return Err(SpecError::NoModel);
        }
        Ok(parsed)
    }

    /// Whether the endpoint is on this machine (loopback): no `--allow-network` needed.
    pub fn is_local(&self) -> bool {
        let name = match self.host.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => self.host.split(':').next().unwrap_or(""),
        };
        name == "localhost"
            || name == "::1"
            || name
                .parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

/// An in-process suggester asking an OpenAI-compatible endpoint.
pub struct OpenAiSuggester {
    spec: OpenAiSpec,
    /// The key read from `spec.key_env` when built (never written anywhere).
    api_key: Option<String>,
    agent: ureq::Agent,
    timeout: Duration,
    /// Failures in a row in this trajectory, and when to stop asking.
    failures: FailureStreak,
}

impl OpenAiSuggester {
    /// The suggester `spec` names, its key read from the environment now.
    pub fn from_spec(spec: &str) -> Result<OpenAiSuggester, SpecError> {
        let spec = OpenAiSpec::parse(spec)?;
        let api_key = match &spec.key_env {
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.is_empty() => {
                    // Whatever a server reflects of it is masked wherever it is printed or stored.
                    crate::base::secrets::remember(&key);
                    Some(key)
                }
                _ if spec.key_env_explicit => return Err(SpecError::KeyNotSet(var.clone())),
                _ => None,
            },
            None => None,
        };
        Ok(OpenAiSuggester {
            agent: agent(DEFAULT_TIMEOUT),
            spec,
            api_key,
            timeout: DEFAULT_TIMEOUT,
            failures: FailureStreak::new(DEFAULT_GIVE_UP_AFTER),
        })
    }

    /// Sets the per-request time limit.
    pub fn with_timeout(mut self, timeout: Duration) -> OpenAiSuggester {
        self.timeout = timeout;
        self.agent = agent(timeout);
        self
    }

    /// Sets how many failures in a row end the asking for a trajectory.
    pub fn with_give_up_after(mut self, failures: u32) -> OpenAiSuggester {
        self.failures = FailureStreak::new(failures);
        self
    }

    /// The parsed spec.
    pub fn spec(&self) -> &OpenAiSpec {
        &self.spec
    }

    /// Sends `prompt` as call `method`, with `response_format` (the shape the answer
    /// must take, as the server reads it) when given, and returns the answer's text
    /// (the judge's questions: `engine::judge`), counted in the failure streak like any
    /// call.
    pub fn ask_text(
        &mut self,
        method: &str,
        prompt: &Prompt,
        response_format: Option<&Value>,
    ) -> Result<String, SuggestError> {
        self.ask_prompt(method, prompt, response_format)
    }

    /// Forgets the failures in a row so far (a new trajectory starts).
    pub fn reset_failures(&mut self) {
        self.failures.reset();
    }

    /// The step's files, plus for the `nes` template the files of the most recent
    /// applied edits (its "recently viewed" files) read from the worktree, which holds
    /// exactly the current state; a path that leaves the worktree (a symlink) is skipped.
    fn shown_files(
        &self,
        worktree: &str,
        prior_edits: &[AppliedEdit],
        files: &[FileContent],
    ) -> Vec<FileContent> {
        let mut shown = files.to_vec();
        if self.spec.template != Template::Nes {
            return shown;
        }
        let Ok(root) = std::path::Path::new(worktree).canonicalize() else {
            return shown;
        };
        let mut added = 0;
        for edit in prior_edits.iter().rev() {
            if added == prompt::VIEWED_FILES {
                break;
            }
            if shown.iter().any(|f| f.path == edit.file) {
                continue;
            }
            let text = root
                .join(&edit.file)
                .canonicalize()
                .ok()
                .filter(|real| real.starts_with(&root))
                .and_then(|real| std::fs::read_to_string(real).ok());
            if let Some(text) = text {
                shown.push(FileContent {
                    path: edit.file.clone(),
                    text,
                });
                added += 1;
            }
        }
        shown
    }

    /// Asks the model to rewrite `region` and returns its answer's text.
    fn ask(
        &mut self,
        method: &str,
        prior_edits: &[AppliedEdit],
        files: &[FileContent],
        region: &Region,
    ) -> Result<String, SuggestError> {
        let input = PromptInput {
            prior_edits,
            files,
            region,
        };
        let prompt = prompt::render(self.spec.template, &input);
        self.ask_prompt(method, &prompt, None)
    }

    /// Sends `prompt` and returns its answer's text, counting time-outs and
    /// unreachable endpoints in the failure streak.
    fn ask_prompt(
        &mut self,
        method: &str,
        prompt: &Prompt,
        response_format: Option<&Value>,
    ) -> Result<String, SuggestError> {
        self.failures.check()?;
        match self.request(method, prompt, response_format) {
            Ok(text) => {
                self.failures.reset();
                Ok(text)
            }
            Err(error) => {
                if matches!(
                    error,
                    SuggestError::Timeout { .. } | SuggestError::Unreachable { .. }
                ) {
                    self.failures.fail(&error);
                }
                Err(error)
            }
        }
    }

    /// One request: the body for `prompt`, sent; the answer's text.
    fn request(
        &self,
        method: &str,
        prompt: &Prompt,
        response_format: Option<&Value>,
    ) -> Result<String, SuggestError> {
        let (path, mut body) = request_body(&self.spec, prompt);
        if let Some(format) = response_format {
            body["response_format"] = format.clone();
        }
        let url = format!("{}{path}", self.spec.base_url);
        let mut request = self.agent.post(&url);
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let response = request.send_json(&body);
        let value = self.answer(method, &url, response)?;
        answer_text(&value).ok_or_else(|| SuggestError::BadResult {
            method: method.to_string(),
            reason: "no choices[0].text or choices[0].message.content".to_string(),
        })
    }

    /// `GET /models`: the server is there, takes the key, and serves the model (when it
    /// lists model ids at all).
    fn check_model(&self) -> Result<(), SuggestError> {
        let url = format!("{}/models", self.spec.base_url);
        let mut request = self.agent.get(&url);
        if let Some(key) = &self.api_key {
            request = request.header("Authorization", &format!("Bearer {key}"));
        }
        let response = request.call();
        let value = self.answer("initialize", &url, response)?;
        let served: Vec<&str> = value
            .get("data")
            .and_then(Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if served.is_empty() || served.contains(&self.spec.model.as_str()) {
            Ok(())
        } else {
            Err(SuggestError::BadResult {
                method: "initialize".to_string(),
                reason: format!(
                    "the server does not serve model {:?} (it serves {served:?})",
                    self.spec.model
                ),
            })
        }
    }

    /// The JSON body of a 200 response; a typed error for everything else.
    fn answer(
        &self,
        method: &str,
        url: &str,
        response: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<Value, SuggestError> {
        let transport = |error: ureq::Error| match error {
            ureq::Error::Timeout(_) => SuggestError::Timeout {
                method: method.to_string(),
                after: self.timeout,
            },
            other => SuggestError::Unreachable {
                url: url.to_string(),
                reason: other.to_string(),
            },
        };
        let response = response.map_err(transport)?;
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().map_err(transport)?;
        if status != 200 {
            return Err(SuggestError::Response {
                method: method.to_string(),
                code: i64::from(status),
                message: text.chars().take(200).collect(),
            });
        }
        serde_json::from_str(&text).map_err(|_| SuggestError::BadJson {
            method: method.to_string(),
            line: text.chars().take(200).collect(),
        })
    }
}

/// The endpoint path and JSON body of a request for `prompt`.
pub fn request_body(spec: &OpenAiSpec, prompt: &Prompt) -> (&'static str, Value) {
    let mut body = json!({
        "model": spec.model,
        "max_tokens": spec.max_tokens,
        "temperature": spec.temperature,
        "seed": spec.seed,
        "stream": false,
    });
    match prompt {
        Prompt::Completion(text) => {
            body["prompt"] = json!(text);
            ("/completions", body)
        }
        Prompt::Chat { system, user } => {
            body["messages"] = json!([
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ]);
            ("/chat/completions", body)
        }
    }
}

/// The answer in a completions or chat completions response.
fn answer_text(response: &Value) -> Option<String> {
    let choice = response.get("choices")?.get(0)?;
    choice
        .get("text")
        .or_else(|| choice.get("message")?.get("content"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// An HTTP client that talks only to the URL it is given: no proxy from the
/// environment, no redirects, statuses returned rather than raised.
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .build()
        .into()
}

impl Suggester for OpenAiSuggester {
    fn name(&self) -> String {
        format!("openai:{}", self.spec.model)
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        self.failures.reset();
        self.check_model()?;
        Ok(InitializeResult {
            name: Some(self.name()),
            version: Some(self.spec.template.name().to_string()),
        })
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let Some(region) = prompt::region_at_last_edit(&params.prior_edits, &params.files) else {
            return Ok(SuggestResult::default());
        };
        let files = self.shown_files(&params.worktree, &params.prior_edits, &params.files);
        let answer = self.ask("suggest", &params.prior_edits, &files, &region)?;
        let text = params
            .files
            .iter()
            .find(|f| f.path == region.file)
            .map(|f| f.text.as_str())
            .unwrap_or("");
        Ok(SuggestResult {
            edits: prompt::region_edits(text, &region, &prompt::parse_answer(&answer)),
            reads: vec![region_read(&region)],
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        let empty = FileContent {
            path: params.file.clone(),
            text: String::new(),
        };
        let file = params
            .files
            .iter()
            .find(|f| f.path == params.file)
            .unwrap_or(&empty);
        let region = prompt::region_around(file, params.start_line, params.end_line);
        let files = self.shown_files(&params.worktree, &params.prior_edits, &params.files);
        let answer = self.ask("generate", &params.prior_edits, &files, &region)?;
        Ok(GenerateResult {
            text: prompt::location_text(
                &file.text,
                &region,
                params.start_line,
                params.end_line,
                &prompt::parse_answer(&answer),
            ),
            reads: vec![region_read(&region)],
        })
    }

    fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        let prompt = prompt::render_complete(params);
        let answer = self.ask_prompt("complete", &prompt, None)?;
        Ok(CompleteResult {
            text: prompt::parse_complete_answer(&answer),
            reads: vec![shown_lines(params)],
        })
    }

    fn shutdown(&mut self) {}
}

/// The lines of the task's file the `complete` template shows, as a read.
fn shown_lines(params: &CompleteParams) -> SuggesterRead {
    let prefix_lines = params.prefix.split_inclusive('\n').count();
    let suffix_lines = params.suffix.split_inclusive('\n').count();
    SuggesterRead {
        file: params.file.clone(),
        start_line: prefix_lines.saturating_sub(prompt::COMPLETE_PREFIX_LINES),
        end_line: Some(params.line + suffix_lines.clamp(1, prompt::COMPLETE_SUFFIX_LINES)),
    }
}

/// The region shown to the model, as a read.
fn region_read(region: &Region) -> SuggesterRead {
    SuggesterRead {
        file: region.file.clone(),
        start_line: region.start_line,
        end_line: Some(region.end_line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_names_url_model_and_options_but_never_a_key() {
        let spec = OpenAiSpec::parse(
            "openai:http://127.0.0.1:8080/v1/?model=tiny&template=nes&max_tokens=16&temperature=0.5&seed=7&key_env=MY_KEY",
        )
        .unwrap();
        assert_eq!(
            spec,
            OpenAiSpec {
                base_url: "http://127.0.0.1:8080/v1".into(),
                host: "127.0.0.1:8080".into(),
                model: "tiny".into(),
                template: Template::Nes,
                key_env: Some("MY_KEY".into()),
                key_env_explicit: true,
                max_tokens: 16,
                temperature: 0.5,
                seed: 7,
            }
        );
        assert!(spec.is_local());
        for (bad, why) in [
            ("openai:http://h/v1?model=m&key=sk-1", "key in the spec"),
            ("openai:http://u:sk@h/v1?model=m", "credentials in the URL"),
            (
                "openai:https://api.example/v1?model=m",
                "https is not supported",
            ),
            ("openai:http://h/v1", "needs model=NAME"),
            ("openai:http://h/v1?model=m&template=x", "use zeta or nes"),
            ("openai:http://h/v1?model=m&model=n", "given twice"),
            ("openai:http://h/v1?model=m&stream=1", "unknown"),
        ] {
            let error = OpenAiSpec::parse(bad).unwrap_err().to_string();
            assert!(error.contains(why), "{bad}: {error}");
        }
        let remote = OpenAiSpec::parse("openai:http://10.1.2.3:80/v1?model=m").unwrap();
        assert!(!remote.is_local());
        assert!(
            OpenAiSpec::parse("openai:http://[::1]:9/v1?model=m")
                .unwrap()
                .is_local()
        );
    }

    #[test]
    fn an_explicit_key_variable_must_be_set() {
        let error = OpenAiSuggester::from_spec(
            "openai:http://127.0.0.1:9/v1?model=m&key_env=NEXTEDIT_TEST_UNSET_KEY_VARIABLE",
        )
        .err()
        .unwrap();
        assert!(matches!(error, SpecError::KeyNotSet(_)), "{error}");
    }
}
