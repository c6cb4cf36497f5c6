//! The `openai:` suggester against a real OpenAI-compatible server: llama-cpp-python's
//! server (built from PyPI into `.venv-llama` by scripts/test) serving a tiny
//! random-weight llama model that tests/suggesters/make_tiny_gguf.py writes, replaying
//! the commits of a git repository the test makes. The model's answers are garbage;
//! what is asserted is what is deterministic: the prompts the server received, how many
//! requests it got, the key it was sent, and the same stored predictions run to run.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{Server, available};
use crate::derive_support::{self, TestRepo};

/// The key the server requires; it must never be stored by nextedit.
pub(crate) const KEY: &str = "sk-nextedit-test-4f9c2e";

/// The Python of `.venv-llama` if it can run llama-cpp-python's server; `None` means
/// skip (after saying so, through [`available`]), unless servers are required (CI).
pub(crate) fn llama_python(test: &str) -> Option<PathBuf> {
    available(test, &[Server::Llama]).then(|| Server::Llama.path())
}

/// A running llama-cpp-python server (killed on drop) and its request log.
pub(crate) struct LlamaServer {
    child: Child,
    pub(crate) port: u16,
    log: PathBuf,
}

impl LlamaServer {
    /// Starts the server on `model` in `dir`; waits until it listens.
    pub(crate) fn start(python: &Path, model: &Path, dir: &Path) -> LlamaServer {
        let log = dir.join(format!("requests-{}.jsonl", rand_suffix()));
        let stderr = std::fs::File::create(log.with_extension("stderr")).unwrap();
        let mut child = Command::new(python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/suggesters/llama_server.py"
            ))
            .arg(model)
            .args(["tiny", KEY])
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_default();
        let Ok(port) = line.trim().parse() else {
            let _ = child.kill();
            panic!(
                "the llama server did not start: {}",
                std::fs::read_to_string(log.with_extension("stderr")).unwrap_or_default()
            );
        };
        LlamaServer { child, port, log }
    }

    /// The requests it has received, in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A distinct name per server in one test.
fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Writes the tiny model into `dir`.
pub(crate) fn tiny_model(python: &Path, dir: &Path) -> PathBuf {
    let model = dir.join("tiny.gguf");
    let out = Command::new(python)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/suggesters/make_tiny_gguf.py"
        ))
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    model
}

/// `nextedit replay --json` of the repository's last commit through `spec`.
fn replay(repo: &TestRepo, spec: &str, db: &Path, key: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nextedit"));
    command
        .args(["replay", "--jsonl", "--repo"])
        .arg(repo.path())
        .args(["--range", "HEAD~1..HEAD", "--suggester", spec, "--db"])
        .arg(db)
        .env_remove("OPENAI_API_KEY");
    if let Some(key) = key {
        command.env("OPENAI_API_KEY", key);
    }
    command.output().unwrap()
}

/// A stored prediction: step, rank, file, start line, end line, text.
type Prediction = (i64, i64, String, i64, i64, String);

/// Every stored prediction of the database's only run, and its errors.
fn stored(db: &Path) -> (Vec<Prediction>, Vec<String>) {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT step, rank, file, start_line, end_line, text FROM run_predictions ORDER BY step, rank",
        )
        .unwrap();
    let predictions = statement
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let mut statement = conn
        .prepare("SELECT kind || ': ' || message FROM run_errors ORDER BY rowid")
        .unwrap();
    let errors = statement
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (predictions, errors)
}

/// One number from the database's only run.
fn count(db: &Path, sql: &str) -> i64 {
    rusqlite::Connection::open(db)
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

/// The summary line of `replay --json` output.
fn summary(out: &Output) -> Value {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "summary")
        .expect("a summary line")
}

#[test]
fn a_real_llama_server_is_asked_with_the_zeta_prompt_and_answers_the_same_twice() {
    let Some(python) = llama_python(
        "a_real_llama_server_is_asked_with_the_zeta_prompt_and_answers_the_same_twice",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = tiny_model(&python, tmp.path());
    let repo = derive_support::rename_repo();

    let mut runs = Vec::new();
    for n in 0..2 {
        // A fresh server each time: the same numbers do not depend on its state.
        let server = LlamaServer::start(&python, &model, tmp.path());
        let spec = format!(
            "openai:http://127.0.0.1:{}/v1?model=tiny&template=zeta&max_tokens=24",
            server.port
        );
        let db = tmp.path().join(format!("run{n}.db"));
        let started = Instant::now();
        let out = replay(&repo, &spec, &db, Some(KEY));
        eprintln!(
            "replay {n} through the llama server: {:?}",
            started.elapsed()
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(summary(&out)["summary"]["steps"], 3);

        let mut requests = server.requests();
        let generates = count(
            &db,
            "SELECT count(*) FROM run_steps WHERE generate_ms IS NOT NULL",
        );
        // `initialize` checks the model is served; then one request per suggest (every
        // step) and per generate, nothing else.
        assert_eq!(
            requests.remove(0),
            json!({"method": "GET", "path": "/v1/models",
                   "authorization": format!("Bearer {KEY}"), "body": null})
        );
        assert_eq!(requests.len() as i64, 3 + generates);
        for request in &requests {
            assert_eq!(request["method"], "POST");
            assert_eq!(request["path"], "/v1/completions");
            assert_eq!(request["authorization"], format!("Bearer {KEY}"));
            let mut body = request["body"].clone();
            assert!(
                body["prompt"]
                    .as_str()
                    .unwrap()
                    .contains("<|editable_region_start|>")
            );
            body["prompt"] = json!("…");
            assert_eq!(
                body,
                json!({"model": "tiny", "max_tokens": 24, "temperature": 0.0, "seed": 0,
                       "stream": false, "prompt": "…"})
            );
        }
        let (predictions, errors) = stored(&db);
        assert_eq!(errors, Vec::<String>::new());
        // The key is nowhere in the database; the spec (which names no key) is stored as given.
        let bytes = std::fs::read(&db).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()));
        let stored_spec: String = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT suggester FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored_spec, spec);
        runs.push((requests, predictions, generates));
    }
    let (first, second) = (&runs[0], &runs[1]);
    // Step 1's prompt: the rendering of the zeta template.
    insta::assert_snapshot!(
        "zeta_prompt_step_1",
        first.0[0]["body"]["prompt"].as_str().unwrap()
    );
    let prompts = |requests: &[Value]| -> Vec<Value> {
        requests
            .iter()
            .map(|r| r["body"]["prompt"].clone())
            .collect()
    };
    assert_eq!(prompts(&first.0), prompts(&second.0));
    assert_eq!(first.1, second.1, "the same predictions twice");
    assert_eq!(first.2, second.2);
}

#[test]
fn the_nes_template_asks_the_chat_endpoint_and_a_missing_key_is_an_error_per_call() {
    let Some(python) = llama_python(
        "the_nes_template_asks_the_chat_endpoint_and_a_missing_key_is_an_error_per_call",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = tiny_model(&python, tmp.path());
    let repo = derive_support::rename_repo();
    let server = LlamaServer::start(&python, &model, tmp.path());
    let spec = format!(
        "openai:http://127.0.0.1:{}/v1?model=tiny&template=nes&max_tokens=16",
        server.port
    );

    let db = tmp.path().join("nes.db");
    let out = replay(&repo, &spec, &db, Some(KEY));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut requests = server.requests();
    let generates = count(
        &db,
        "SELECT count(*) FROM run_steps WHERE generate_ms IS NOT NULL",
    );
    assert_eq!(requests.remove(0)["path"], "/v1/models");
    assert_eq!(requests.len() as i64, 3 + generates);
    assert!(requests.iter().all(|r| r["path"] == "/v1/chat/completions"));
    assert_eq!(stored(&db).1, Vec::<String>::new());
    let messages = &requests[0]["body"]["messages"];
    assert_eq!(messages[0]["role"], "system");
    insta::assert_snapshot!(
        "nes_prompt_step_1",
        messages[1]["content"].as_str().unwrap()
    );
    // The last request's current file differs from an applied edit's: that one is shown
    // as recently viewed.
    insta::assert_snapshot!(
        "nes_prompt_last",
        requests.last().unwrap()["body"]["messages"][1]["content"]
            .as_str()
            .unwrap()
    );

    // Without the key the server refuses every call: the run fails, saying so.
    let db = tmp.path().join("nokey.db");
    let before = server.requests().len();
    let out = replay(&repo, &spec, &db, None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("FAILED: the suggester never answered"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every call was sent without a key and refused (401), and recorded as such.
    let refused = &server.requests()[before..];
    assert_eq!(
        refused.len(),
        7,
        "initialize, then 3 steps of suggest and generate"
    );
    assert!(refused.iter().all(|r| r["authorization"].is_null()));
    assert_eq!(refused[0]["path"], "/v1/models");
    let errors = stored(&db).1;
    assert_eq!(errors.len(), refused.len(), "{errors:?}");
    assert!(
        errors[0].starts_with("error_response: suggester failed `initialize` with code 401: "),
        "{errors:?}"
    );
    assert!(
        errors.iter().all(|e| e.contains("with code 401: ")),
        "{errors:?}"
    );
}

#[test]
fn an_endpoint_off_this_machine_needs_allow_network_and_a_key_never_goes_in_the_spec() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    // Refused before any connection is tried (`.invalid` names no host anyway).
    let out = replay(
        &repo,
        "openai:http://model.invalid:8080/v1?model=m",
        &db,
        Some(KEY),
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().last().unwrap(),
        "nextedit: error: \"openai:http://model.invalid:8080/v1?model=m\" is not on this machine: \
         pass --allow-network to let nextedit reach model.invalid:8080"
    );
    let out = replay(
        &repo,
        "openai:http://127.0.0.1:9/v1?model=m&api_key=sk-in-the-spec",
        &db,
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "openai: parameter \"api_key\": a key in the spec would be stored with the run"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_cached_rerun_of_the_llama_server_gives_the_same_numbers_without_a_request() {
    let Some(python) =
        llama_python("a_cached_rerun_of_the_llama_server_gives_the_same_numbers_without_a_request")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = tiny_model(&python, tmp.path());
    let repo = derive_support::rename_repo();
    let server = LlamaServer::start(&python, &model, tmp.path());
    let spec = format!(
        "openai:http://127.0.0.1:{}/v1?model=tiny&template=zeta&max_tokens=24",
        server.port
    );
    let db = tmp.path().join("cached.db");
    // The first run asks the server (the cache is read-write by default) and fills it.
    let first = replay(&repo, &spec, &db, Some(KEY));
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let asked = server.requests().len();
    let generates = count(
        &db,
        "SELECT count(*) FROM run_steps WHERE run_id = 1 AND generate_ms IS NOT NULL",
    );
    assert_eq!(asked as i64, 1 + 3 + generates);
    // Read-only, without the key: served from the cache, not one request.
    let mut command = Command::new(env!("CARGO_BIN_EXE_nextedit"));
    command
        .args(["replay", "--jsonl", "--cache", "read-only", "--repo"])
        .arg(repo.path())
        .args(["--range", "HEAD~1..HEAD", "--suggester", &spec, "--db"])
        .arg(&db)
        .env_remove("OPENAI_API_KEY");
    let second = command.output().unwrap();
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    assert_eq!(server.requests().len(), asked, "the server was asked");
    // The same steps, predictions and numbers, latencies included.
    let steps = |out: &Output| -> Vec<Value> {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["type"] == "trajectory")
            .collect()
    };
    assert_eq!(steps(&first), steps(&second));
    assert_eq!(summary(&first)["summary"], summary(&second)["summary"]);
    let latencies = |run: i64| -> Vec<(f64, Option<f64>)> {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut statement = conn
            .prepare(
                "SELECT suggest_ms, generate_ms FROM run_steps WHERE run_id = ?1 ORDER BY step",
            )
            .unwrap();
        statement
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(latencies(1), latencies(2));
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM run_steps WHERE run_id = 2 AND suggest_cached = 1"
        ) + count(
            &db,
            "SELECT count(*) FROM run_steps WHERE run_id = 2 AND generate_cached = 1"
        ) + count(
            &db,
            "SELECT count(*) FROM run_trajectories WHERE run_id = 2 AND initialize_cached = 1"
        ),
        asked as i64
    );
}
