//! The response cache around any suggester: [`CachedSuggester`] answers a call from a
//! [`ResponseStore`] when the same suggester (its spec), in the same repetition, was
//! asked the same request before, and asks the suggester (then stores its answer)
//! otherwise. A request is identified by the SHA-256 of its method and canonical params
//! (keys sorted, the scratch worktree's path left out: it differs run to run, while
//! the worktree's content is the state the params describe), so the key is leak-free
//! (the params are what the suggester is sent) and deterministic per step. The cache is
//! read-write or read-only; the outcome of each call (served or not) goes into a
//! [`CacheLog`] the run records.
//!
//! Latency: a served call reports the latency stored with its answer (the suggester's
//! own time when it answered), a live call the suggester's own time, measured here
//! (the cache's lookup and write excluded), so a cached re-run reproduces every figure
//! and never reports the cache's speed as the suggester's.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use super::protocol::{
    CompleteParams, CompleteResult, GenerateParams, GenerateResult, InitializeParams,
    InitializeResult, PROTOCOL_VERSION, SuggestParams, SuggestResult,
};
use super::{Call, CallFailure, GoldFeed, SuggestError, Suggester};

/// How a run uses the response cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CacheMode {
    /// Serve cached answers; ask the suggester on a miss and for a cached failure (a
    /// time-out, a refused key, a crash may not happen again) and store what it says.
    ReadWrite,
    /// Serve what is cached, failures included; a miss fails the call and its
    /// trajectory. The suggester is never asked (it need not exist).
    ReadOnly,
    /// No cache.
    Off,
}

impl CacheMode {
    /// The stored and printed name (`read-write`, `read-only`, `off`).
    pub fn key(self) -> &'static str {
        match self {
            CacheMode::ReadWrite => "read-write",
            CacheMode::ReadOnly => "read-only",
            CacheMode::Off => "off",
        }
    }
}

/// Where a cached answer is looked up: suggester spec, repetition, call, request hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheKey {
    /// The suggester spec, as given.
    pub suggester: String,
    /// 1-based repetition of the run (each repetition has answers of its own).
    pub repetition: u32,
    /// The call.
    pub call: Call,
    /// Hex SHA-256 of the call's method and canonical params ([`request_hash`]).
    pub request: String,
}

/// An answer as the cache keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedAnswer {
    /// The result as JSON, or the failure.
    pub result: Result<serde_json::Value, CallFailure>,
    /// The suggester's own time for the call, ms.
    pub latency_ms: f64,
}

/// Where cached answers live (`store::ResponseCache` implements it).
pub trait ResponseStore: Send {
    /// The answer stored under `key`, if any.
    fn cached(&self, key: &CacheKey) -> Result<Option<CachedAnswer>, ResponseStoreError>;
    /// Stores (or replaces) the answer under `key`.
    fn store(&mut self, key: &CacheKey, answer: &CachedAnswer) -> Result<(), ResponseStoreError>;
}

/// The store behind the cache failed: its own error, shown as it is (the call goes on
/// without the cache, [`CallOutcome::problem`] says why).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ResponseStoreError(#[from] pub Box<dyn std::error::Error + Send + Sync>);

/// What the cache did for one call, in call order, for the run to record.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// The call.
    pub call: Call,
    /// Served from the cache (else asked live).
    pub cached: bool,
    /// The suggester's own time, ms (stored with the answer when served).
    pub latency_ms: f64,
    /// Read-only and not cached: why the call could not be answered.
    pub miss: Option<String>,
    /// The cache could not be read or written (the call itself went on).
    pub problem: Option<String>,
}

/// The outcomes of a [`CachedSuggester`]'s calls, shared with whoever records them.
#[derive(Debug, Clone, Default)]
pub struct CacheLog(Arc<Mutex<Vec<CallOutcome>>>);

impl CacheLog {
    /// The outcomes since the last call of `take`, in call order.
    pub fn take(&self) -> Vec<CallOutcome> {
        std::mem::take(&mut *self.0.lock().expect("cache log lock"))
    }

    fn push(&self, outcome: CallOutcome) {
        self.0.lock().expect("cache log lock").push(outcome);
    }
}

/// Hex SHA-256 of a call's method and canonical params: object keys sorted, no
/// whitespace, `worktree` left out, the protocol version in front.
pub fn request_hash(call: Call, params: &impl Serialize) -> String {
    let mut value = serde_json::to_value(params).expect("protocol params serialise");
    if let Some(map) = value.as_object_mut() {
        map.remove("worktree");
    }
    let mut text = format!("nextedit-protocol-{PROTOCOL_VERSION}\n{}\n", call.key());
    canonical(&value, &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` as JSON with every object's keys sorted (whatever map type serde_json uses).
fn canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A suggester behind the response cache (see the module doc).
pub struct CachedSuggester {
    inner: Box<dyn Suggester>,
    store: Box<dyn ResponseStore>,
    suggester: String,
    repetition: u32,
    mode: CacheMode,
    log: CacheLog,
    /// An `initialize` served from the cache: the suggester itself is initialized with
    /// it before the trajectory's first live call.
    deferred_initialize: Option<InitializeParams>,
    /// Whether the last call was served from the cache.
    last_served: bool,
}

impl CachedSuggester {
    /// `inner` (spec `suggester`, run repetition `repetition`) behind `store` in `mode`;
    /// what happens to each call goes to `log`.
    pub fn new(
        inner: Box<dyn Suggester>,
        store: Box<dyn ResponseStore>,
        suggester: &str,
        repetition: u32,
        mode: CacheMode,
        log: CacheLog,
    ) -> CachedSuggester {
        CachedSuggester {
            inner,
            store,
            suggester: suggester.to_string(),
            repetition,
            mode,
            log,
            deferred_initialize: None,
            last_served: false,
        }
    }

    /// Keys the calls from now on under `repetition` (1-based): `tasks run` asks each
    /// sample of a task under its own, so N samples are N answers, each reproducible.
    pub fn set_repetition(&mut self, repetition: u32) {
        self.repetition = repetition;
    }

    /// One call through the cache; `at` (` of step N`, ` of task ID`) names it in a
    /// read-only miss.
    fn call<P: Serialize, R: Serialize + DeserializeOwned>(
        &mut self,
        call: Call,
        at: String,
        params: &P,
        live: impl FnOnce(&mut dyn Suggester) -> Result<R, SuggestError>,
    ) -> Result<R, SuggestError> {
        let key = CacheKey {
            suggester: self.suggester.clone(),
            repetition: self.repetition,
            call,
            request: request_hash(call, params),
        };
        self.last_served = false;
        let mut outcome = CallOutcome {
            call,
            cached: false,
            latency_ms: 0.0,
            miss: None,
            problem: None,
        };
        let found = match self.store.cached(&key) {
            Ok(found) => found,
            Err(problem) => {
                outcome.problem = Some(format!("cannot read the response cache: {problem}"));
                None
            }
        };
        // Read-write asks again rather than serve a failure; read-only reproduces it.
        let servable =
            found.filter(|answer| answer.result.is_ok() || self.mode == CacheMode::ReadOnly);
        if let Some(answer) = servable {
            let result = match answer.result {
                Ok(json) => serde_json::from_value(json).map_err(|e| SuggestError::BadResult {
                    method: call.key().to_string(),
                    reason: format!("the cached answer does not parse: {e}"),
                }),
                Err(failure) => Err(SuggestError::Cached(failure)),
            };
            outcome.cached = true;
            self.last_served = true;
            outcome.latency_ms = answer.latency_ms;
            self.log.push(outcome);
            return result;
        }
        if self.mode == CacheMode::ReadOnly {
            let error = SuggestError::NotCached {
                call: call.key().to_string(),
                at,
            };
            outcome.miss = Some(error.to_string());
            self.log.push(outcome);
            return Err(error);
        }
        if call != Call::Initialize
            && let Some(init) = self.deferred_initialize.take()
            && let Err(error) = self.inner.initialize(&init)
        {
            // The trajectory's cached `initialize` did not hold for the live suggester.
            self.log.push(outcome);
            return Err(error);
        }
        let started = Instant::now();
        let result = live(self.inner.as_mut());
        outcome.latency_ms = started.elapsed().as_secs_f64() * 1e3;
        let answer = CachedAnswer {
            result: match &result {
                Ok(r) => Ok(serde_json::to_value(r).expect("protocol results serialise")),
                Err(e) => Err(CallFailure::from(e)),
            },
            latency_ms: outcome.latency_ms,
        };
        if let Err(problem) = self.store.store(&key, &answer) {
            outcome.problem = Some(format!("cannot write the response cache: {problem}"));
        }
        self.log.push(outcome);
        result
    }
}

impl Suggester for CachedSuggester {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn initialize(&mut self, params: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        self.deferred_initialize = None;
        let result = self.call(Call::Initialize, String::new(), params, |s| {
            s.initialize(params)
        });
        if self.last_served && self.mode == CacheMode::ReadWrite {
            self.deferred_initialize = Some(params.clone());
        }
        result
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let at = format!(" of step {}", params.step);
        self.call(Call::Suggest, at, params, |s| s.suggest(params))
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        let at = format!(" of step {}", params.step);
        self.call(Call::Generate, at, params, |s| s.generate(params))
    }

    fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        let at = format!(" of task {}", params.task);
        self.call(Call::Complete, at, params, |s| s.complete(params))
    }

    fn shutdown(&mut self) {
        self.deferred_initialize = None;
        self.inner.shutdown();
    }

    fn gold_feed(&self) -> Option<&dyn GoldFeed> {
        self.inner.gold_feed()
    }

    fn offers_feed(&self) -> Option<&dyn super::OffersFeed> {
        self.inner.offers_feed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::suggest::protocol::{Revealed, SuggestedEdit};
    use std::collections::HashMap;

    /// (suggester, repetition, call, request).
    type Key = (String, u32, Call, String);

    /// A cache in memory.
    #[derive(Default)]
    struct Memory(Arc<Mutex<HashMap<Key, CachedAnswer>>>);

    impl ResponseStore for Memory {
        fn cached(&self, key: &CacheKey) -> Result<Option<CachedAnswer>, ResponseStoreError> {
            let map = self.0.lock().unwrap();
            Ok(map
                .get(&(
                    key.suggester.clone(),
                    key.repetition,
                    key.call,
                    key.request.clone(),
                ))
                .cloned())
        }
        fn store(
            &mut self,
            key: &CacheKey,
            answer: &CachedAnswer,
        ) -> Result<(), ResponseStoreError> {
            self.0.lock().unwrap().insert(
                (
                    key.suggester.clone(),
                    key.repetition,
                    key.call,
                    key.request.clone(),
                ),
                answer.clone(),
            );
            Ok(())
        }
    }

    /// Answers each `suggest` with a different line, counting every call.
    struct Counting(Arc<Mutex<Vec<&'static str>>>);

    impl Suggester for Counting {
        fn name(&self) -> String {
            "counting".into()
        }
        fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
            self.0.lock().unwrap().push("initialize");
            Ok(InitializeResult::default())
        }
        fn suggest(&mut self, _: &SuggestParams) -> Result<SuggestResult, SuggestError> {
            let mut calls = self.0.lock().unwrap();
            calls.push("suggest");
            if calls.len() == 3 {
                return Err(SuggestError::Timeout {
                    method: "suggest".into(),
                    after: std::time::Duration::from_secs(1),
                });
            }
            Ok(SuggestResult {
                edits: vec![SuggestedEdit {
                    file: "a.py".into(),
                    start_line: 0,
                    end_line: 1,
                    text: format!("call {}\n", calls.len()),
                    confidence: None,
                }],
                reads: vec![],
            })
        }
        fn generate(&mut self, _: &GenerateParams) -> Result<GenerateResult, SuggestError> {
            unreachable!()
        }
        fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
            let mut calls = self.0.lock().unwrap();
            calls.push("complete");
            Ok(CompleteResult {
                text: format!("{} {}", params.task, calls.len()),
                reads: vec![],
            })
        }
        fn shutdown(&mut self) {}
    }

    fn init(worktree: &str) -> InitializeParams {
        InitializeParams {
            protocol_version: PROTOCOL_VERSION,
            worktree: worktree.into(),
            language: None,
            project: None,
            trajectory: "trajectory-1".into(),
            revealed: Revealed::default(),
        }
    }

    fn step(step: usize, worktree: &str) -> SuggestParams {
        SuggestParams {
            step,
            worktree: worktree.into(),
            language: None,
            prior_edits: vec![],
            files: vec![],
        }
    }

    #[test]
    fn the_request_hash_ignores_the_worktree_and_key_order_only() {
        let a = request_hash(Call::Suggest, &step(1, "/tmp/x"));
        assert_eq!(a, request_hash(Call::Suggest, &step(1, "/tmp/y")));
        assert_ne!(a, request_hash(Call::Suggest, &step(2, "/tmp/x")));
        assert_ne!(a, request_hash(Call::Generate, &step(1, "/tmp/x")));
        let mut value = String::new();
        canonical(
            &serde_json::json!({"b": [1, {"d": 2, "c": "é"}], "a": null}),
            &mut value,
        );
        assert_eq!(value, r#"{"a":null,"b":[1,{"c":"é","d":2}]}"#);
    }

    fn task(id: &str, worktree: &str) -> CompleteParams {
        CompleteParams {
            task: id.into(),
            worktree: worktree.into(),
            language: Some("python".into()),
            file: "a.py".into(),
            line: 1,
            column: 4,
            prefix: "def f():\n    ".into(),
            suffix: "\n".into(),
            scenario: "full_block".into(),
            context: vec![],
        }
    }

    #[test]
    fn complete_is_cached_without_the_worktree_and_a_miss_names_the_task() {
        let memory = Memory::default();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = CacheLog::default();
        let wrap = |mode| {
            CachedSuggester::new(
                Box::new(Counting(calls.clone())),
                Box::new(Memory(memory.0.clone())),
                "cmd:x",
                1,
                mode,
                log.clone(),
            )
        };
        let mut live = wrap(CacheMode::ReadWrite);
        assert_eq!(live.complete(&task("t1", "/w1")).unwrap().text, "t1 1");
        // Another scratch worktree, the same task: served.
        let mut again = wrap(CacheMode::ReadWrite);
        assert_eq!(again.complete(&task("t1", "/w2")).unwrap().text, "t1 1");
        assert_eq!(calls.lock().unwrap().len(), 1);
        let outcomes = log.take();
        assert_eq!(
            outcomes
                .iter()
                .map(|o| (o.call, o.cached))
                .collect::<Vec<_>>(),
            [(Call::Complete, false), (Call::Complete, true)]
        );
        let error = wrap(CacheMode::ReadOnly)
            .complete(&task("t2", "/w3"))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "not in the response cache (--cache read-only): `complete` of task t2"
        );
        assert_ne!(
            request_hash(Call::Complete, &task("t1", "/w")),
            request_hash(Call::Generate, &task("t1", "/w"))
        );
    }

    #[test]
    fn read_write_fills_read_only_serves_and_misses_name_the_step() {
        let memory = Memory::default();
        let calls = Arc::new(Mutex::new(Vec::new()));
        let log = CacheLog::default();
        let wrap = |mode, repetition| {
            CachedSuggester::new(
                Box::new(Counting(calls.clone())),
                Box::new(Memory(memory.0.clone())),
                "cmd:x",
                repetition,
                mode,
                log.clone(),
            )
        };
        let texts = |s: &mut CachedSuggester, worktree: &str| -> Vec<String> {
            s.initialize(&init(worktree)).unwrap();
            (1..=3)
                .map(|n| match s.suggest(&step(n, worktree)) {
                    Ok(r) => r.edits[0].text.clone(),
                    Err(e) => e.to_string(),
                })
                .collect()
        };
        let first = texts(&mut wrap(CacheMode::ReadWrite, 1), "/w1");
        assert_eq!(
            first,
            [
                "call 2\n",
                "suggester did not answer `suggest` within 1s",
                "call 4\n"
            ]
        );
        assert_eq!(calls.lock().unwrap().len(), 4);
        let live: Vec<bool> = log.take().iter().map(|o| o.cached).collect();
        assert_eq!(live, [false; 4]);
        // Read-only serves everything, the time-out included, and asks nothing.
        assert_eq!(texts(&mut wrap(CacheMode::ReadOnly, 1), "/w2"), first);
        assert_eq!(calls.lock().unwrap().len(), 4);
        assert!(log.take().iter().all(|o| o.cached));
        // Read-write asks again only for the time-out, initializing the suggester first.
        let again = texts(&mut wrap(CacheMode::ReadWrite, 1), "/w3");
        assert_eq!(again[1], "call 6\n");
        assert_eq!(calls.lock().unwrap()[4..], ["initialize", "suggest"]);
        log.take();
        // Another repetition has answers of its own: read-only misses, naming the step.
        let mut other = wrap(CacheMode::ReadOnly, 2);
        let error = other.initialize(&init("/w4")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "not in the response cache (--cache read-only): `initialize`"
        );
        let error = other.suggest(&step(2, "/w4")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "not in the response cache (--cache read-only): `suggest` of step 2"
        );
        assert_eq!(
            log.take()[1].miss.as_deref(),
            Some(error.to_string().as_str())
        );
    }
}
