//! `replay --judge`: a judge model asked about each content step through the response
//! cache. Fault injection with a small HTTP server on 127.0.0.1 scripted per request (a
//! refusal, garbage, an HTTP 500, a reply slower than `--timeout`): each is a counted
//! failure of its step, a rerun asks again only what failed to arrive, a run whose every
//! judge call failed fails naming the judge. Then the real llama server of the suite:
//! its answers are noise, so what is asserted is the path (one request per content step,
//! each answer read or counted as a failure, the rerun served from the cache); asked for
//! answers constrained to a JSON schema (`--judge-format llama-json`), the same server
//! answers every question readably. And a judged plan run in shards and merged.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{assert_estimate, nextedit_with_db};
use crate::derive_support::{self, TestRepo};
use crate::suggester_openai::{KEY, LlamaServer, tiny_model};

/// What the fake endpoint does with one request.
#[derive(Clone)]
pub(crate) enum Reply {
    /// 200 with a chat answer holding this text.
    Answer(&'static str),
    /// 200 with a body that is not JSON.
    Garbage,
    /// This HTTP status.
    Status(u16),
    /// The answer "yes", after this long.
    Slow(Duration),
    /// 200 with a chat answer chosen by the request.
    Decide(fn(&Value) -> &'static str),
}

/// A scripted OpenAI-compatible endpoint: request N gets `script[N]` (the last one
/// after the end); each request's JSON body is kept.
pub(crate) struct FakeJudge {
    port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl FakeJudge {
    pub(crate) fn start(script: Vec<Reply>) -> FakeJudge {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (seen, count) = (requests.clone(), Arc::new(AtomicUsize::new(0)));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let n = count.fetch_add(1, SeqCst);
                let reply = script[n.min(script.len() - 1)].clone();
                let seen = seen.clone();
                std::thread::spawn(move || serve(stream, &reply, &seen));
            }
        });
        FakeJudge { port, requests }
    }

    pub(crate) fn spec(&self, prompt_params: &str) -> String {
        format!(
            "openai:http://127.0.0.1:{}/v1?model=judge{prompt_params}",
            self.port
        )
    }

    fn asked(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

/// One request on its own connection (the reply closes it).
fn serve(stream: TcpStream, reply: &Reply, seen: &Mutex<Vec<Value>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap();
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let request: Value = serde_json::from_slice(&body).unwrap();
    seen.lock().unwrap().push(request.clone());
    let answer = |text: &str| json!({"choices": [{"message": {"content": text}}]}).to_string();
    let (status, body) = match reply {
        Reply::Answer(text) => (200, answer(text)),
        Reply::Garbage => (200, "{\"choices\": [".to_string()),
        Reply::Status(code) => (*code, "the judge broke".to_string()),
        Reply::Slow(after) => {
            std::thread::sleep(*after);
            (200, answer("yes"))
        }
        Reply::Decide(decide) => (200, answer(decide(&request))),
    };
    let _ = write!(
        &stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// `nextedit replay` of the repository's last commit with `builtin:oracle` (a content
/// step for each edit) and `--judge SPEC --judge-prompt PROMPT`.
fn replay(repo: &TestRepo, db: &Path, judge: &str, prompt: &str) -> Output {
    replay_in(repo, db, judge, prompt, &[])
}

/// [`replay`] with more arguments (`--judge-format FORMAT`).
fn replay_in(repo: &TestRepo, db: &Path, judge: &str, prompt: &str, more: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(["replay", "--quiet", "--repo"])
        .arg(repo.path())
        .args(["--range", "HEAD~1..HEAD", "--suggester", "builtin:oracle"])
        .args(["--judge", judge, "--judge-prompt", prompt, "--timeout", "1"])
        .args(more)
        .arg("--db")
        .arg(db)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

/// The stored judgements of run `run`: step, yes, reverts_edits, confidence, failure kind,
/// served from the cache.
type Row = (
    i64,
    Option<bool>,
    Option<bool>,
    Option<i64>,
    Option<String>,
    bool,
);

fn judgements(db: &Path, run: i64) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT step, yes, reverts_edits, confidence, failure_kind, cached
               FROM run_step_judgements WHERE run_id = ?1 ORDER BY step",
        )
        .unwrap();
    statement
        .query_map([run], |r| {
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
        .collect()
}

/// The judge's lines of `nextedit report RUN`, the port masked.
fn judge_report(db: &Path, run: &str, port: u16) -> String {
    let out = nextedit_with_db(&["report", run], db);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let start = text.find(" RUN  JUDGE").expect("a judge table");
    let section: Vec<&str> = text[start..]
        .lines()
        .take_while(|l| !l.is_empty())
        .collect();
    section.join("\n").replace(&port.to_string(), "PORT")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn failure(step: i64, kind: &str, cached: bool) -> Row {
    (step, None, None, None, Some(kind.to_string()), cached)
}

#[test]
fn a_refusal_an_http_error_and_a_time_out_are_counted_failures_and_all_failing_fails_the_run() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("judge.db");
    let slow = Reply::Slow(Duration::from_secs(3));
    let judge = FakeJudge::start(vec![
        Reply::Answer("I cannot help with that."),
        Reply::Status(500),
        slow,
        Reply::Answer("Yes."),
    ]);
    let spec = judge.spec("");
    let first = replay(&repo, &db, &spec, "nep");
    // Every judge call failed: the run fails, naming the judge.
    assert_eq!(first.status.code(), Some(1), "{}", stderr(&first));
    assert!(
        stderr(&first).contains(&format!(
            "nextedit: run 1 FAILED: all 3 judge calls failed (bad_result 1, error_response 1, timeout 1) (judge {spec})"
        )),
        "{}",
        stderr(&first)
    );
    assert_eq!(judge.asked(), 3);
    assert_eq!(
        judgements(&db, 1),
        [
            failure(1, "bad_result", false),
            failure(2, "error_response", false),
            failure(3, "timeout", false),
        ]
    );
    insta::assert_snapshot!("judge_failures_report", judge_report(&db, "1", judge.port));
    // Each request was the nep question about one step, in a chat.
    let request = judge.requests.lock().unwrap()[0].clone();
    assert_eq!(request["model"], "judge");
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(system.ends_with("Answer with one word, yes or no, and nothing else."));

    // A rerun: the refusal arrived and is served from the cache (read again, still a
    // failure); the HTTP error and the time-out are asked again, and answered.
    let second = replay(&repo, &db, &spec, "nep");
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert_eq!(judge.asked(), 5);
    assert_eq!(
        judgements(&db, 2),
        [
            failure(1, "bad_result", true),
            (2, Some(true), None, None, None, false),
            (3, Some(true), None, None, None, false),
        ]
    );
    // A third run asks nothing: every answer arrived.
    let third = replay(&repo, &db, &spec, "nep");
    assert_eq!(third.status.code(), Some(0), "{}", stderr(&third));
    assert_eq!(judge.asked(), 5);
    insta::assert_snapshot!("judge_cached_report", judge_report(&db, "3", judge.port));
}

#[test]
fn zed_qa_answers_are_read_strictly_and_garbage_is_a_failure() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("judge.db");
    let judge = FakeJudge::start(vec![
        Reply::Answer(
            "```json\n{\"reasoning\": \"fine\", \"reverts_edits\": false, \"confidence\": 4}\n```",
        ),
        Reply::Answer("{\"reverts_edits\": \"maybe\", \"confidence\": 3}"),
        Reply::Garbage,
    ]);
    let out = replay(&repo, &db, &judge.spec("&max_tokens=64"), "zed-qa");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(judge.asked(), 3);
    assert_eq!(
        judgements(&db, 1),
        [
            (1, None, Some(false), Some(4), None, false),
            failure(2, "bad_result", false),
            failure(3, "bad_json", false),
        ]
    );
    let requests = judge.requests.lock().unwrap();
    assert_eq!(requests[0]["max_tokens"], 64);
    let user = requests[0]["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("reverts_edits: does the prediction undo"),
        "{user}"
    );
    drop(requests);
    insta::assert_snapshot!("judge_zed_qa_report", judge_report(&db, "1", judge.port));
    // A resumed run reaches its judge only when the command line names it again.
    let resume = |judge: &[&str]| {
        let mut args = vec![
            "replay",
            "--quiet",
            "--resume",
            "1",
            "--suggester",
            "builtin:oracle",
        ];
        args.extend(judge);
        nextedit_with_db(&args, &db)
    };
    let bare = resume(&[]);
    assert_eq!(bare.status.code(), Some(2), "{}", stderr(&bare));
    assert!(
        stderr(&bare).contains(&format!(
            "run 1 was made with --judge {:?}, not no --judge: resume it with the same --judge",
            judge.spec("&max_tokens=64")
        )),
        "{}",
        stderr(&bare)
    );
    let spec = judge.spec("&max_tokens=64");
    let again = resume(&["--judge", &spec]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(judge.asked(), 3);
    let report = nextedit_with_db(&["report", "--json", "1"], &db);
    let json: Value = serde_json::from_slice(&report.stdout).unwrap();
    let judged = &json["runs"][0]["results"]["judge"];
    assert_eq!(
        (
            &judged["asked"],
            &judged["judged"],
            &judged["failed"],
            &judged["reverting_share"],
            &judged["mean_confidence"]
        ),
        (&json!(3), &json!(1), &json!(2), &json!(0.0), &json!(4.0))
    );
}

#[test]
fn the_judge_figures_have_a_mean_and_interval_over_repetitions() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("judge.db");
    let (yes, no) = (Reply::Answer("Yes."), Reply::Answer("No."));
    let refusal = Reply::Answer("I cannot help with that.");
    // Three steps a repetition, each repetition asked anew (its own cache entries):
    // yes 2 of 3; 1 of 3; 2 of 2 read and one refusal.
    let judge = FakeJudge::start(vec![
        yes.clone(),
        yes.clone(),
        no.clone(),
        yes.clone(),
        no.clone(),
        no,
        yes.clone(),
        refusal,
        yes,
    ]);
    let out = replay_in(&repo, &db, &judge.spec(""), "nep", &["--repetitions", "3"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(judge.asked(), 9);
    let report = nextedit_with_db(&["report", "--json", "1"], &db);
    let json: Value = serde_json::from_slice(&report.stdout).unwrap();
    let run = &json["runs"][0];
    assert_eq!(run["repetitions"], json!([1, 2, 3]));
    // Yes shares 2/3, 1/3, 1: s = 1/3; failures 0, 0, 1: s = 1/√3.
    let t = 0.95 / (2.0f64 * 0.975 * 0.025).sqrt();
    let third = 1.0 / 3.0;
    let half = t * third / 3f64.sqrt();
    assert_estimate(
        run,
        "judge_yes",
        &[2.0 * third, third, 1.0],
        2.0 * third,
        half,
    );
    assert_estimate(run, "judge_failures", &[0.0, 0.0, 1.0], third, t / 3.0);
    // nep has no reverting share or confidence: no such figures.
    assert_eq!(run["figures"].get("judge_reverting"), None);
    assert_eq!(run["figures"].get("judge_confidence"), None);
    let text = nextedit_with_db(&["report", "1"], &db);
    let text = String::from_utf8(text.stdout).unwrap();
    let lines: Vec<&str> = (text.lines()).filter(|l| l.starts_with("judge_")).collect();
    assert_eq!(
        lines,
        [
            "judge_yes               0.667 [-0.161, 1.495]",
            "judge_failures          0.333 [-1.101, 1.768]"
        ]
    );
    let page = tmp.path().join("report.html");
    let html = nextedit_with_db(&["report", "1", "--html", page.to_str().unwrap()], &db);
    assert!(html.status.success(), "{}", stderr(&html));
    let page = std::fs::read_to_string(&page).unwrap();
    for shown in [
        "<td><span title=\"mean over the repetitions\">0.33</span> <span class=\"ci\">[-1.10, 1.77]</span></td>",
        "<td><span title=\"mean over the repetitions\">0.667</span> <span class=\"ci\">[-0.161, 1.495]</span></td>",
    ] {
        assert!(page.contains(shown), "{shown}");
    }
    // Against itself as the baseline: nothing moved.
    let against = nextedit_with_db(&["report", "--json", "1", "--baseline", "1"], &db);
    let against: Value = serde_json::from_slice(&against.stdout).unwrap();
    let figure = &against["runs"][0]["figures"]["judge_yes"];
    assert_eq!(
        (&figure["delta"], &figure["moved"]),
        (&json!(0.0), &json!(false))
    );
}

#[test]
fn a_judge_off_this_machine_needs_allow_network_and_a_key_never_goes_in_the_spec() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("judge.db");
    let remote = replay(&repo, &db, "openai:http://10.1.2.3:80/v1?model=m", "nep");
    assert_eq!(remote.status.code(), Some(2));
    assert!(stderr(&remote).contains("is not on this machine: pass --allow-network"));
    let keyed = replay(
        &repo,
        &db,
        "openai:http://127.0.0.1:9/v1?model=m&key=sk-1",
        "nep",
    );
    assert_eq!(keyed.status.code(), Some(2));
    assert!(stderr(&keyed).contains("a key in the spec would be stored with the run"));
    assert!(!db.exists() || judgements(&db, 1).is_empty());
}

#[test]
fn the_real_llama_server_judges_every_content_step_once_and_a_rerun_asks_nothing() {
    // Named by its module, so the tidy count of tests that can skip sees it.
    let Some(python) = crate::suggester_openai::llama_python(
        "the_real_llama_server_judges_every_content_step_once_and_a_rerun_asks_nothing",
    ) else {
        return;
    };
    let llama = LlamaJudge::start(&python, 8);
    let (server, db, spec) = (&llama.server, &llama.db, &llama.spec);
    for (prompt, first_run) in [("nep", 1), ("zed-qa", 3)] {
        let asked_before = server.requests().len();
        let first = llama.replay(prompt, &[]);
        let rows = judgements(db, first_run);
        // One question per content step, each answer a verdict or a counted failure.
        assert!(llama.content_steps(first_run) > 0);
        assert_eq!(rows.len() as i64, llama.content_steps(first_run));
        assert_eq!(server.requests().len() - asked_before, rows.len());
        for (_, yes, reverts, confidence, kind, cached) in &rows {
            assert!(!cached);
            match (prompt, kind.as_deref()) {
                (_, Some(kind)) => assert_eq!(kind, "bad_result", "{rows:?}"),
                ("nep", None) => assert!(yes.is_some()),
                (_, None) => assert!(reverts.is_some() && confidence.is_some()),
            }
        }
        // All failed: the run fails naming the judge; else it passes.
        let all_failed = rows.iter().all(|r| r.4.is_some());
        assert_eq!(
            first.status.code(),
            Some(i32::from(all_failed)),
            "{}",
            stderr(&first)
        );
        assert_eq!(
            stderr(&first).contains(&format!("(judge {spec})")),
            all_failed,
            "{}",
            stderr(&first)
        );
        // The key went to the server, never into the database.
        let request = server.requests().pop().unwrap();
        assert_eq!(request["authorization"], format!("Bearer {KEY}"));
        let bytes = std::fs::read(db).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()));
        llama.check_rerun_asks_nothing(prompt, &[], &first, &rows);
    }
}

/// The real llama server of the suite as a judge, with what its tests share: the
/// model's directory, the repository replayed, the database and the judge's spec.
struct LlamaJudge {
    server: LlamaServer,
    repo: TestRepo,
    db: std::path::PathBuf,
    spec: String,
    _dir: tempfile::TempDir,
}

impl LlamaJudge {
    /// The server on the tiny model, each answer at most `max_tokens` long.
    fn start(python: &Path, max_tokens: u32) -> LlamaJudge {
        let dir = tempfile::tempdir().unwrap();
        let model = tiny_model(python, dir.path());
        let server = LlamaServer::start(python, &model, dir.path());
        let spec = format!(
            "openai:http://127.0.0.1:{}/v1?model=tiny&max_tokens={max_tokens}",
            server.port
        );
        LlamaJudge {
            repo: derive_support::rename_repo(),
            db: dir.path().join("llama.db"),
            server,
            spec,
            _dir: dir,
        }
    }

    /// A judged replay of the repository's last commit asking `prompt` (and `more`).
    fn replay(&self, prompt: &str, more: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(["replay", "--quiet", "--repo"])
            .arg(self.repo.path())
            .args(["--range", "HEAD~1..HEAD", "--suggester", "builtin:oracle"])
            .args(["--judge", &self.spec, "--judge-prompt", prompt])
            .args(more)
            .arg("--db")
            .arg(&self.db)
            .env("OPENAI_API_KEY", KEY)
            .output()
            .unwrap()
    }

    /// The steps of run `run` with content (the ones the judge is asked about).
    fn content_steps(&self, run: i64) -> i64 {
        rusqlite::Connection::open(&self.db)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM run_steps WHERE run_id = ?1 AND content_edit IS NOT NULL",
                [run],
                |r| r.get(0),
            )
            .unwrap()
    }

    /// The rerun of a run that gave `first` and stored `rows`: every answer arrived,
    /// so not one request, the same exit and the same verdicts, each served.
    fn check_rerun_asks_nothing(&self, prompt: &str, more: &[&str], first: &Output, rows: &[Row]) {
        let asked = self.server.requests().len();
        let second = self.replay(prompt, more);
        assert_eq!(
            second.status.code(),
            first.status.code(),
            "{}",
            stderr(&second)
        );
        assert_eq!(self.server.requests().len(), asked);
        let served: Vec<Row> = rows
            .iter()
            .map(|r| (r.0, r.1, r.2, r.3, r.4.clone(), true))
            .collect();
        let last: i64 = rusqlite::Connection::open(&self.db)
            .unwrap()
            .query_row("SELECT max(id) FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(judgements(&self.db, last), served);
    }
}

/// The verdict of a `nep` row.
fn yes(step: i64, yes: bool) -> Row {
    (step, Some(yes), None, None, None, false)
}

#[test]
fn a_structured_format_sends_its_schema_reads_only_json_and_is_asked_apart_from_text() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("judge.db");
    // The object a structured answer must be, asked for or not.
    let judge = FakeJudge::start(vec![Reply::Decide(|request| {
        match request.get("response_format") {
            Some(_) => "{\"answer\":\"no\"}",
            None => "{\"answer\": \"yes\"}",
        }
    })]);
    let spec = judge.spec("");
    // Free text (the default): the request as it was before there were formats, and
    // a JSON answer has no first word.
    let text = replay(&repo, &db, &spec, "nep");
    assert_eq!(text.status.code(), Some(1), "{}", stderr(&text));
    assert_eq!(
        judgements(&db, 1),
        [
            failure(1, "bad_result", false),
            failure(2, "bad_result", false),
            failure(3, "bad_result", false),
        ]
    );
    let first = judge.requests.lock().unwrap()[0].clone();
    let fields: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(
        fields,
        [
            "max_tokens",
            "messages",
            "model",
            "seed",
            "stream",
            "temperature"
        ]
    );
    // json-schema: another request (nothing served from the text answers), the
    // schema sent, each answer read as the object it must be.
    let structured = replay_in(&repo, &db, &spec, "nep", &["--judge-format", "json-schema"]);
    assert_eq!(structured.status.code(), Some(0), "{}", stderr(&structured));
    assert_eq!(judge.asked(), 6);
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
        "required": ["answer"],
        "additionalProperties": false,
    });
    let requests = judge.requests.lock().unwrap().clone();
    for (request, as_text) in requests[3..].iter().zip(&requests) {
        assert_eq!(
            request["response_format"],
            json!({
                "type": "json_schema",
                "json_schema": {"name": "nep_verdict", "schema": schema, "strict": true},
            })
        );
        assert_eq!(request["messages"], as_text["messages"]);
    }
    assert_eq!(
        judgements(&db, 2),
        [yes(1, false), yes(2, false), yes(3, false)]
    );
    insta::assert_snapshot!(
        "judge_structured_report",
        judge_report(&db, "2", judge.port)
    );
    // A resume needs the same format: another would read half the run another way.
    let resume = |more: &[&str]| {
        let mut args = vec!["replay", "--quiet", "--resume", "2"];
        args.extend(["--suggester", "builtin:oracle", "--judge", &spec]);
        args.extend(more);
        nextedit_with_db(&args, &db)
    };
    let other = resume(&[]);
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    assert!(
        stderr(&other).contains(
            "run 2 was made with --judge-format json-schema, not --judge-format text: resume it with the same --judge-format"
        ),
        "{}",
        stderr(&other)
    );
    let same = resume(&["--judge-format", "json-schema"]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert_eq!(judge.asked(), 6);
}

#[test]
fn the_real_llama_server_answers_every_structured_question_and_a_rerun_asks_nothing() {
    // Named by its module, so the tidy count of tests that can skip sees it.
    let Some(python) = crate::suggester_openai::llama_python(
        "the_real_llama_server_answers_every_structured_question_and_a_rerun_asks_nothing",
    ) else {
        return;
    };
    // Room for the longest object (zed-qa's, ~45 one-character tokens).
    let llama = LlamaJudge::start(&python, 64);
    let (server, db) = (&llama.server, &llama.db);
    let structured = ["--judge-format", "llama-json"];
    for (prompt, first_run) in [("nep", 1), ("zed-qa", 3)] {
        let asked_before = server.requests().len();
        let first = llama.replay(prompt, &structured);
        assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
        let rows = judgements(db, first_run);
        // One question per content step, every answer read: a verdict each.
        assert_eq!(llama.content_steps(first_run), 3);
        assert_eq!(rows.len(), 3);
        assert_eq!(server.requests().len() - asked_before, rows.len());
        for (_, yes, reverts, confidence, kind, cached) in &rows {
            assert_eq!((kind, cached), (&None, &false), "{rows:?}");
            match prompt {
                "nep" => assert!(yes.is_some() && reverts.is_none(), "{rows:?}"),
                _ => assert!(
                    reverts.is_some() && confidence.is_some_and(|c| (1..=5).contains(&c)),
                    "{rows:?}"
                ),
            }
        }
        let report = nextedit_with_db(&["report", "--json", &first_run.to_string()], db);
        let json: Value = serde_json::from_slice(&report.stdout).unwrap();
        let judged = &json["runs"][0]["results"]["judge"];
        assert_eq!(
            (
                &judged["asked"],
                &judged["judged"],
                &judged["failed"],
                &judged["format"]
            ),
            (&json!(3), &json!(3), &json!(0), &json!("llama-json"))
        );
        // Each request asked llama-cpp-python's way for the question's schema.
        let request = server.requests().pop().unwrap();
        let format = &request["body"]["response_format"];
        assert_eq!(format["type"], "json_object");
        let schema_fields: Vec<&String> = format["schema"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        match prompt {
            "nep" => assert_eq!(schema_fields, ["answer"]),
            _ => assert_eq!(schema_fields, ["confidence", "reverts_edits"]),
        }
        llama.check_rerun_asks_nothing(prompt, &structured, &first, &rows);
    }
}

#[test]
fn a_judged_plan_run_in_two_shards_merges_into_the_judge_table_of_the_single_run() {
    use crate::replay_shards::{
        comparable_report, history, merge, ok, replay_with, run, run_plan_shards, with,
    };
    let (repo, base) = history();
    let tmp = tempfile::tempdir().unwrap();
    // Answers chosen by what the judge is shown, the same whichever shard asks: a
    // refusal once `vat` is defined (commit 3 of 5, in shard 0 with commit 1's
    // verdicts), a no about the rest of the tax commits, a yes about the others (each
    // shard has a verdict: none fails outright).
    let judge = FakeJudge::start(vec![Reply::Decide(|request| {
        let user = request["messages"][1]["content"].as_str().unwrap();
        if user.contains("def vat") {
            "I cannot judge that."
        } else if user.contains("VAT") {
            "no"
        } else {
            "Yes."
        }
    })]);
    let spec = judge.spec("");
    let args = with(
        &replay_with(repo.path(), &format!("{base}..HEAD"), "builtin:propagate"),
        &["--judge", &spec, "--quiet"],
    );
    let single = tmp.path().join("single.db");
    ok(&run(&with(&args, &["--db", single.to_str().unwrap()])));
    let asked = judge.asked();
    let plan_path = tmp.path().join("plan.jsonl");
    let plan_db = tmp.path().join("plan.db");
    ok(&run(&with(
        &args,
        &[
            "--plan",
            plan_path.to_str().unwrap(),
            "--db",
            plan_db.to_str().unwrap(),
        ],
    )));
    let plan: Vec<Value> = std::fs::read_to_string(&plan_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(plan.len(), 5);
    assert!(
        plan.iter()
            .all(|line| line["settings"]["judge"] == json!(spec))
    );
    // Planning asks nothing; the shards ask what the single run asked, once more.
    assert_eq!(judge.asked(), asked);
    let shards = run_plan_shards(&plan, 2, tmp.path());
    assert_eq!(judge.asked(), 2 * asked);
    let merged = tmp.path().join("merged.db");
    ok(&merge(&[&merged, &shards[0], &shards[1]], &[]));
    assert_eq!(
        judge_report(&merged, "1", judge.port),
        judge_report(&single, "1", judge.port)
    );
    assert_eq!(comparable_report(&merged, 1), comparable_report(&single, 1));
    insta::assert_snapshot!(
        "judge_sharded_report",
        judge_report(&merged, "1", judge.port)
    );
    let mut sharded = judgements(&shards[0], 1);
    sharded.extend(judgements(&shards[1], 1));
    assert_eq!(judgements(&merged, 1).len(), sharded.len());
}
