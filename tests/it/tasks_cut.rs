//! `nextedit tasks cut` on real git repositories with real unit tests (Python with
//! pytest, Go with `go test`: `tasks_support`), on the evolution fixture (context from
//! the latest version leaks and is flagged), with a command retriever, and on a session
//! recorded through the real proxy with real pyright. Every task validates against
//! schemas/task.schema.json and rebuilds its file in its state; exact contents are
//! insta snapshots. The fixtures' own test suites pass in their commits (Python's run
//! as pytest collects them, Go's with `go test`).

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::common::nextedit_output as nextedit;
use crate::common::{
    Pos, Server, TIMEOUT, TextChange, apply_utf16, available, did_change, pyright, spawn_proxied,
    uri,
};
use crate::derive_support::TestRepo;
use crate::tasks_support::{BuiltRepo, evolution_repo, go_repo, python_repo};

/// Runs `tasks cut` on `repo` with `args`; returns the output.
fn cut(repo: &Path, args: &[&str]) -> Output {
    let mut all = vec!["tasks", "cut", "--repo", repo.to_str().unwrap(), "--quiet"];
    all.extend_from_slice(args);
    nextedit(&all)
}

/// The tasks a successful cut printed, each checked against the schema and against
/// its state, with the temporary directory's name replaced by `REPO`.
fn tasks(repo: &TestRepo, output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let schema: Value =
        serde_json::from_str(include_str!("../../schemas/task.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let name = repo
        .path()
        .canonicalize()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            let task: Value = serde_json::from_str(line).unwrap();
            let errors: Vec<String> = validator
                .iter_errors(&task)
                .map(|e| format!("{e} at {}", e.instance_path()))
                .collect();
            assert!(errors.is_empty(), "{}: {errors:#?}", task["id"]);
            assert_rebuilds_state(repo, &task);
            serde_json::from_str(&line.replace(&name, "REPO")).unwrap()
        })
        .collect()
}

/// A commit task's prefix, ground truth and real suffix are its file in the commit.
fn assert_rebuilds_state(repo: &TestRepo, task: &Value) {
    let Some(commit) = task["source"]["commit"].as_str() else {
        return;
    };
    if task["source"]["kind"] != "commit" {
        return;
    }
    let file = repo.git(&[
        "show",
        &format!("{commit}:{}", task["file"].as_str().unwrap()),
    ]);
    let rest = task
        .get("state_suffix")
        .unwrap_or(&task["suffix"])
        .as_str()
        .unwrap();
    let rebuilt = format!(
        "{}{}{rest}",
        task["prefix"].as_str().unwrap(),
        task["ground_truth"].as_str().unwrap()
    );
    assert_eq!(rebuilt, file, "{}", task["id"]);
}

/// (scenario, dependency, ground truth empty?) of each task, for coverage asserts.
fn scenarios(tasks: &[Value]) -> std::collections::BTreeSet<String> {
    tasks
        .iter()
        .map(|t| t["scenario"].as_str().unwrap().to_string())
        .collect()
}

fn check_repo(name: &str, built: &BuiltRepo, levels: &[&str]) {
    let output = cut(
        built.repo.path(),
        &[
            "--range",
            "HEAD",
            "--scenario",
            "all",
            "--max-per-commit",
            "3",
            "--context-k",
            "2",
        ],
    );
    let tasks = tasks(&built.repo, &output);
    assert_eq!(
        scenarios(&tasks).into_iter().collect::<Vec<_>>(),
        [
            "added_function",
            "full_block",
            "incomplete_suffix",
            "inner_block",
            "rag"
        ],
        "{name}"
    );
    assert!(
        tasks
            .iter()
            .any(|t| t["scenario"] == "inner_block" && t["ground_truth"] == ""),
        "{name}: an inner block already complete"
    );
    for level in levels {
        assert!(
            tasks.iter().any(|t| t["dependency"] == *level),
            "{name}: a task of level {level}"
        );
    }
    assert!(
        tasks.iter().any(|t| t.get("tests").is_some()),
        "{name}: covered tasks"
    );
    insta::assert_json_snapshot!(name, tasks);
}

#[test]
fn python_repository_tasks_of_every_scenario() {
    check_repo(
        "python_tasks",
        &python_repo(),
        &["standalone", "intra_class", "intra_file", "cross_file"],
    );
}

#[test]
fn go_repository_tasks_of_every_scenario() {
    check_repo(
        "go_tasks",
        &go_repo(),
        &["standalone", "intra_class", "cross_file"],
    );
}

/// The task for `average_price`'s body cut from the first commit, with context from
/// `from`.
fn average_price_task(built: &BuiltRepo, from: &str, retriever: &str) -> Value {
    let output = cut(
        built.repo.path(),
        &[
            "--commit",
            &built.commits[0],
            "--scenario",
            "added_function",
            "--context-from",
            from,
            "--context-k",
            "3",
            "--retriever",
            retriever,
        ],
    );
    tasks(&built.repo, &output)
        .into_iter()
        .find(|t| t["enclosing"]["name"] == "average_price")
        .expect("a task for average_price")
}

#[test]
fn context_from_head_retrieves_the_later_helper_and_flags_the_leak() {
    let built = evolution_repo();
    let aware = average_price_task(&built, "state", "bm25");
    let ignored = average_price_task(&built, "head", "bm25");
    let files = |task: &Value| -> Vec<(String, bool)> {
        task["context"]["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["file"].as_str().unwrap().to_string(),
                    c["existed_at_state"].as_bool().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        files(&aware),
        [
            ("prices.py".to_string(), true),
            ("tests/test_prices.py".to_string(), true)
        ]
    );
    assert_eq!(aware["context"]["leaked"], false);
    assert_eq!(
        files(&ignored),
        [
            ("stats.py".to_string(), false),
            ("prices.py".to_string(), true),
            ("tests/test_prices.py".to_string(), true)
        ]
    );
    assert_eq!(ignored["context"]["leaked"], true);
    // Everything but the context is the same task.
    let without_context = |t: &Value| {
        let mut t = t.clone();
        t.as_object_mut().unwrap().remove("context");
        t
    };
    assert_eq!(without_context(&aware), without_context(&ignored));
    insta::assert_json_snapshot!("evolution_head_task", ignored);
}

#[test]
fn a_command_retriever_ranks_the_context() {
    let built = evolution_repo();
    // Named by its absolute path: the sandbox shows it only what its command names.
    let retriever = format!(
        "cmd:python3 {}/tests/it/tasks_retriever.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let task = average_price_task(&built, "head", &retriever);
    assert_eq!(task["context"]["retriever"], retriever);
    let chunks: Vec<(String, f64)> = task["context"]["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["file"].as_str().unwrap().to_string(),
                c["score"].as_f64().unwrap(),
            )
        })
        .collect();
    // Jaccard similarity of identifier sets, rounded to 4 places as tasks record it.
    let jaccard = |query: &str, text: &str| {
        let words = |s: &str| -> std::collections::BTreeSet<String> {
            regex::Regex::new(r"[A-Za-z_][A-Za-z0-9_]*")
                .unwrap()
                .find_iter(s)
                .map(|m| m.as_str().to_string())
                .collect()
        };
        let (q, t) = (words(query), words(text));
        let shared = q.intersection(&t).count() as f64;
        let union = q.union(&t).count() as f64;
        ((shared / union) * 1e4).round() / 1e4
    };
    let prefix = task["prefix"].as_str().unwrap();
    let suffix = task["suffix"].as_str().unwrap();
    let before: Vec<&str> = prefix.lines().collect();
    let query = format!(
        "{}\n{}",
        before[before.len().saturating_sub(20)..].join("\n"),
        suffix.lines().take(10).collect::<Vec<_>>().join("\n")
    );
    let expected: Vec<(String, f64)> = task["context"]["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["file"].as_str().unwrap().to_string(),
                jaccard(&query, c["text"].as_str().unwrap()),
            )
        })
        .collect();
    assert_eq!(chunks, expected);
    assert!(chunks.iter().any(|c| c.0 == "stats.py"), "{chunks:?}");
    // A retriever that is not one fails with its name.
    let out = cut(
        built.repo.path(),
        &[
            "--commit",
            "HEAD",
            "--retriever",
            "cmd:/nonexistent/retriever",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("retriever `cmd:/nonexistent/retriever`"),
        "{stderr}"
    );
    // One that never answers is ended after --retriever-timeout (fault injection).
    let out = cut(
        built.repo.path(),
        &[
            "--commit",
            "HEAD",
            "--retriever",
            "cmd:sleep 600",
            "--retriever-timeout",
            "0.5",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "retriever `cmd:sleep 600`: did not answer a query within 0.5 s (--retriever-timeout); ended it"
        ),
        "{stderr}"
    );
}

#[test]
fn commits_without_code_are_named_and_nothing_cut_fails() {
    let mut repo = TestRepo::new();
    repo.write("README.md", "# notes\n");
    let readme = repo.commit("notes");
    repo.write("lib.py", "def one():\n    return 1\n");
    repo.commit("one");
    let out = cut(
        repo.path(),
        &["--range", "HEAD", "--scenario", "full_block"],
    );
    // Tasks were cut; a commit that touched only docs is named, and is no failure.
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{readme}: nothing to cut: it touched no code of a supported language (only tests, docs or other files)"
        )),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    // Progress, one line per commit when stderr is not a terminal.
    let out = nextedit(&[
        "tasks",
        "cut",
        "--repo",
        repo.path().to_str().unwrap(),
        "--range",
        "HEAD",
        "--scenario",
        "full_block",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let progress: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("nextedit: ["))
        .collect();
    assert_eq!(
        progress,
        [
            format!(
                "nextedit: [1/2] {}: nothing to cut: it touched no code of a supported language (only tests, docs or other files)",
                &readme[..12]
            ),
            format!(
                "nextedit: [2/2] {}: 2 tasks",
                &repo.git(&["rev-parse", "HEAD"])[..12]
            ),
        ],
        "{stderr}"
    );
    let out = cut(repo.path(), &["--commit", &readme]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no task cut from 1 commit(s)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cut(repo.path(), &["--commit", "HEAD", "--scenario", "blocks"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--scenario \"blocks\": use full_block"));
}

/// Types `text` key by key at `pos` (UTF-16 = bytes here: ASCII), one didChange each.
fn type_at(
    client: &mut nextedit::engine::lsp_client::LspClient,
    doc: &str,
    text: &mut String,
    version: &mut i64,
    pos: Pos,
    typed: &'static str,
) {
    let (mut line, mut column) = (pos.0, pos.1);
    for (i, c) in typed.char_indices() {
        *version += 1;
        let change = TextChange {
            start: Pos(line, column),
            end: Pos(line, column),
            text: &typed[i..i + 1],
        };
        client
            .notify("textDocument/didChange", did_change(doc, *version, &change))
            .unwrap();
        *text = apply_utf16(text, &change);
        if c == '\n' {
            line += 1;
            column = 0;
        } else {
            column += 1;
        }
    }
}

#[test]
fn session_pause_tasks_from_a_recorded_session() {
    if !available(
        "session_pause_tasks_from_a_recorded_session",
        &[Server::Pyright],
    ) {
        return;
    }
    let mut repo = TestRepo::new();
    repo.write(
        "calc.py",
        "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\"\n",
    );
    repo.write(
        "tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    repo.commit("calc: add, to write");
    let db_dir = tempfile::tempdir().unwrap();
    let db = db_dir.path().join("rec.db");
    let mut server = std::process::Command::new(pyright());
    server.arg("--stdio");
    let mut client = spawn_proxied(&db, repo.path(), server, &[]);
    client.initialize(repo.path(), TIMEOUT).expect("initialize");
    let path = repo.path().join("calc.py");
    let doc = uri(&path);
    let mut text = std::fs::read_to_string(&path).unwrap();
    client
        .notify(
            "textDocument/didOpen",
            serde_json::json!({"textDocument": {"uri": doc, "languageId": "python", "version": 1, "text": text}}),
        )
        .unwrap();
    let mut version = 1;
    // Think, write the body; think again, write the next function.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    type_at(
        &mut client,
        &doc,
        &mut text,
        &mut version,
        Pos(2, 0),
        "    return a + b\n",
    );
    std::thread::sleep(std::time::Duration::from_millis(2500));
    type_at(
        &mut client,
        &doc,
        &mut text,
        &mut version,
        Pos(3, 0),
        "\n\ndef sub(a, b):\n    return a - b\n",
    );
    std::fs::write(&path, &text).unwrap();
    client
        .notify(
            "textDocument/didSave",
            serde_json::json!({"textDocument": {"uri": doc}}),
        )
        .unwrap();
    assert!(client.shutdown(TIMEOUT).expect("shutdown").success());
    // No --repo: the session's workspace is its repository.
    let out = nextedit(&[
        "tasks",
        "cut",
        "--session",
        "1",
        "--db",
        db.to_str().unwrap(),
        "--context-k",
        "1",
    ]);
    let mut got = tasks(&repo, &out);
    let seq = regex::Regex::new(r"@\d+:").unwrap();
    for task in &mut got {
        // Event numbers depend on what else the proxy recorded meanwhile.
        task["source"]["seq"] = Value::from(0);
        let id = task["id"].as_str().unwrap();
        let redacted = seq.replace(id, "@SEQ:").into_owned();
        task["id"] = Value::from(redacted);
    }
    assert_eq!(got.len(), 2);
    assert_eq!(got[0]["ground_truth"], "    return a + b\n");
    assert_eq!(
        got[1]["ground_truth"],
        "\n\ndef sub(a, b):\n    return a - b\n"
    );
    insta::assert_json_snapshot!("session_pause_tasks", got);
}

/// Runs a checkout's Python tests the way pytest collects them (every `test*` function
/// and `Test*.test*` method of `tests/test_*.py`), without needing pytest; returns the
/// names that passed, or panics with the failure.
fn python_tests_pass(dir: &Path) -> Vec<String> {
    const RUNNER: &str = r#"
import importlib.util, pathlib, sys
root = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(root))
for path in sorted(root.glob("tests/test_*.py")):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, value in sorted(vars(module).items()):
        if name.startswith("test") and callable(value):
            value()
            print(name)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(RUNNER)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_fixtures_test_suites_pass_in_every_commit() {
    use nextedit::engine::history::{CommitSource, GitRepository};
    let checkout = |built: &BuiltRepo, sha: &str| {
        let dir = tempfile::tempdir().unwrap();
        GitRepository::open(built.repo.path())
            .unwrap()
            .checkout(sha, dir.path())
            .unwrap();
        dir
    };
    let python = python_repo();
    let passed: Vec<Vec<String>> = python
        .commits
        .iter()
        .map(|sha| python_tests_pass(checkout(&python, sha).path()))
        .collect();
    assert_eq!(
        passed,
        [
            vec!["test_parse_price"],
            vec!["test_cart", "test_parse_price"],
            vec!["test_cart", "test_discount", "test_parse_price"]
        ]
    );
    let evolution = evolution_repo();
    for sha in &evolution.commits {
        assert_eq!(
            python_tests_pass(checkout(&evolution, sha).path()),
            ["test_average_price"]
        );
    }
    // The Go toolchain comes with gopls here (Debian's golang-go).
    if !available(
        "the_fixtures_test_suites_pass_in_every_commit",
        &[Server::Gopls],
    ) {
        return;
    }
    let go = go_repo();
    let dir = checkout(&go, go.commits.last().unwrap());
    let cache = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("go")
        .args(["test", "-v", "./..."])
        .current_dir(dir.path())
        .env("PATH", crate::common::go_path_var())
        .env("GOCACHE", cache.path().join("gocache"))
        .env("GOPATH", cache.path().join("gopath"))
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let passed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("--- PASS: "))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(passed, ["TestAdd", "TestStack", "TestSum"]);
}

#[test]
fn all_functions_cuts_from_every_function_of_the_state() {
    let built = python_repo();
    let names = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--commit", built.commits.last().unwrap().as_str()];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--scenario", "added_function", "--context-k", "0"]);
        tasks(&built.repo, &cut(built.repo.path(), &all))
            .iter()
            .map(|t| {
                format!(
                    "{}:{}",
                    t["file"].as_str().unwrap(),
                    t["enclosing"]["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    // The last commit only changed `Cart.subtotal`, which it did not add.
    let out = cut(
        built.repo.path(),
        &["--commit", "HEAD", "--scenario", "added_function"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        names(&["--all-functions"]),
        [
            "rates.py:with_vat",
            "shop.py:parse_price",
            "shop.py:Cart.__init__",
            "shop.py:Cart.add",
            "shop.py:Cart.subtotal",
            "shop.py:Cart.total"
        ]
    );
}
