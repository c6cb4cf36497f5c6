//! `nextedit tasks run` and `tasks report` on real git repositories with real tests:
//! pytest (from `.venv-pytest`) and `go test` (Go 1.19), in bubblewrap. The ground truth
//! passes, an empty answer fails, the oracle scores pass@1 = 1, a task whose ground
//! truth fails is invalid and left out, a second run is served by the execution cache,
//! `--resume` continues, an answer copied from the future passes only with head context.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::nextedit_bin;
use crate::common::{Server, available, go_path_var};

/// Runs a git command in `dir` with a fixed identity and dates.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// Writes `files` into the repository at `dir` (created on first use) and commits them.
pub(crate) fn commit(dir: &Path, files: &[(&str, &str)], message: &str) -> String {
    if !dir.join(".git").exists() {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q", "-b", "main"]);
    }
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A task whose hole is the one occurrence of `truth` in `text` (file `file` of `commit`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn task(
    id: &str,
    repo: &str,
    commit: &str,
    language: &str,
    file: &str,
    text: &str,
    truth: &str,
    tests: &[(&str, &str)],
) -> Value {
    let at = text.find(truth).expect("the ground truth is in the file");
    assert_eq!(text.matches(truth).count(), 1, "{truth:?} is unique");
    let prefix = &text[..at];
    let line = prefix.matches('\n').count();
    let column = prefix.len() - prefix.rfind('\n').map_or(0, |i| i + 1);
    json!({
        "version": 1,
        "id": id,
        "repository": repo,
        "source": {"kind": "commit", "commit": commit},
        "language": language,
        "scenario": "full_block",
        "state": {"commit": commit, "block": "statement"},
        "file": file,
        "cursor": {"line": line, "column": column},
        "prefix": prefix,
        "suffix": &text[at + truth.len()..],
        "ground_truth": truth,
        "tests": tests.iter().map(|(f, n)| json!({"file": f, "name": n})).collect::<Vec<_>>(),
    })
}

pub(crate) fn write_tasks(path: &Path, tasks: &[Value]) {
    let lines: Vec<String> = tasks.iter().map(|t| t.to_string() + "\n").collect();
    std::fs::write(path, lines.concat()).unwrap();
}

pub(crate) fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `nextedit ARGS --db DB` with pytest's venv and Go on PATH, progress lines on stderr.
pub(crate) fn nextedit(args: &[&str], db: &Path) -> Output {
    nextedit_with(args, db, &[])
}

/// [`nextedit`] with the variables `envs` set too.
pub(crate) fn nextedit_with(args: &[&str], db: &Path, envs: &[(&str, &Path)]) -> Output {
    let path = format!(
        "{}:{}",
        repo_root().join(".venv-pytest/bin").display(),
        go_path_var()
    );
    Command::new(nextedit_bin())
        .args(args)
        .arg("--db")
        .arg(db)
        .env("PATH", path)
        .envs(envs.iter().copied())
        .output()
        .unwrap()
}

/// `tasks run TASKS --repo REPO --suggester SPEC -q EXTRA… --db DB`.
pub(crate) fn tasks_run(
    tasks: &Path,
    repo: &Path,
    suggester: &str,
    extra: &[&str],
    db: &Path,
) -> Output {
    tasks_run_with(tasks, repo, suggester, extra, db, &[])
}

/// [`tasks_run`] with the variables `envs` set too.
pub(crate) fn tasks_run_with(
    tasks: &Path,
    repo: &Path,
    suggester: &str,
    extra: &[&str],
    db: &Path,
    envs: &[(&str, &Path)],
) -> Output {
    let mut args = vec![
        "tasks",
        "run",
        tasks.to_str().unwrap(),
        "--repo",
        repo.to_str().unwrap(),
        "--suggester",
        suggester,
        "-q",
    ];
    args.extend(extra);
    nextedit_with(&args, db, envs)
}

/// Runs `args` and returns its stdout; fails the test with stderr if it failed.
pub(crate) fn ok(args: &[&str], db: &Path) -> String {
    let out = nextedit(args, db);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub(crate) fn report_json(runs: &[&str], db: &Path) -> Value {
    let mut args = vec!["tasks", "report", "--json"];
    args.extend(runs);
    serde_json::from_str(&ok(&args, db)).unwrap()
}

const CALC: &str = "\
def add(a, b):
    return a + b


def mul(a, b):
    total = 0
    for _ in range(b):
        total += a
    return total


def neg(a):
    return -a
";

const TEST_CALC: &str = "\
from calc import add, mul, neg


def test_add():
    assert add(2, 3) == 5


def test_mul():
    assert mul(4, 3) == 12


def test_neg():
    assert neg(2) == -3
";

/// A Python repository and its four tasks: two valid, one without tests, one whose
/// ground truth fails its (wrong) test.
fn python_fixture(dir: &Path) -> PathBuf {
    let repo = dir.join("calc");
    let c = commit(
        &repo,
        &[("calc.py", CALC), ("test_calc.py", TEST_CALC)],
        "calc",
    );
    let py = |id, truth, tests: &[(&str, &str)]| {
        task(id, "calc", &c, "python", "calc.py", CALC, truth, tests)
    };
    let tasks = dir.join("tasks.jsonl");
    write_tasks(
        &tasks,
        &[
            py("add", "    return a + b\n", &[("test_calc.py", "test_add")]),
            py(
                "mul",
                "    for _ in range(b):\n        total += a\n",
                &[("test_calc.py", "test_mul")],
            ),
            py("untested", "    total = 0\n", &[]),
            py("neg", "    return -a\n", &[("test_calc.py", "test_neg")]),
        ],
    );
    tasks
}

#[test]
fn python_oracle_passes_noop_fails_and_invalid_tasks_are_left_out() {
    if !available(
        "python_oracle_passes_noop_fails_and_invalid_tasks_are_left_out",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = python_fixture(dir.path());
    let tasks = tasks.to_str().unwrap();
    let repo = dir.path().join("calc");
    let repo = repo.to_str().unwrap();
    let db = dir.path().join("t.db");
    let run = |suggester: &str| {
        ok(
            &[
                "tasks",
                "run",
                tasks,
                "--repo",
                repo,
                "--suggester",
                suggester,
                "--sandbox",
                "bwrap",
                // The fixture's tasks are about tests found by name (one names none).
                "--tests-by",
                "name",
            ],
            &db,
        )
    };
    // The ground truth runs first, then the empty answer of each task it passes; the
    // oracle's answers are the ground truths: cached.
    assert_eq!(
        run("builtin:oracle"),
        "task run 1: 4 tasks done, 5 test runs, 2 from the cache\n"
    );
    // The noop's answers are the empty answers, already run.
    assert_eq!(
        run("builtin:noop"),
        "task run 2: 4 tasks done, 0 test runs, 7 from the cache\n"
    );
    // A second run of both: every test run comes from the cache, none is run again.
    assert_eq!(
        run("builtin:oracle"),
        "task run 3: 4 tasks done, 0 test runs, 7 from the cache\n"
    );
    assert_eq!(
        run("builtin:noop"),
        "task run 4: 4 tasks done, 0 test runs, 7 from the cache\n"
    );
    let report = report_json(&["1", "2"], &db);
    let all = |run: usize| report["runs"][run]["all"].clone();
    assert_eq!(all(0)["pass_at_1"], json!(1.0));
    assert_eq!(all(0)["valid"], json!(2));
    assert_eq!(all(0)["exact_match"], json!(1.0));
    assert_eq!(all(1)["pass_at_1"], json!(0.0));
    let reasons: Vec<(Value, Value, Value)> = (report["runs"][0]["left_out"].as_array())
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["kind"].clone(),
                g["reason"].clone(),
                g["tasks"][0]["task"].clone(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            (
                json!("invalid"),
                json!(
                    "no covering test: none executes the hole's lines or calls its function by name"
                ),
                json!("untested")
            ),
            (
                json!("invalid"),
                json!("the ground truth fails its tests (exit 1)"),
                json!("neg")
            ),
        ]
    );
    // What the test output said, stored per task and answer.
    let db_conn = rusqlite::Connection::open(&db).unwrap();
    let tail: String = db_conn
        .query_row(
            "SELECT truth_output FROM task_run_tasks WHERE run_id = 1 AND task_index = 3",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        tail.ends_with("1 failed in 0.0") || tail.contains("1 failed"),
        "{tail}"
    );
    let cached: Vec<(i64, bool)> = db_conn
        .prepare("SELECT task_index, cached FROM task_answers WHERE run_id = 3 ORDER BY task_index")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(cached, vec![(0, true), (1, true)]);
    insta::assert_snapshot!("python_report", ok(&["tasks", "report", "1", "2"], &db));
}

const GO_CALC: &str = "\
package calc

// Add sums.
func Add(a, b int) int {
	return a + b
}

// Max is the larger.
func Max(a, b int) int {
	if a > b {
		return a
	}
	return b
}
";

const GO_TEST: &str = "\
package calc

import \"testing\"

func TestAdd(t *testing.T) {
	if Add(2, 3) != 5 {
		t.Fatal(\"add\")
	}
}

func TestMax(t *testing.T) {
	if Max(2, 3) != 3 || Max(4, 1) != 4 {
		t.Fatal(\"max\")
	}
}
";

#[test]
fn go_oracle_passes_and_noop_fails() {
    if !available("go_oracle_passes_and_noop_fails", &[Server::Go]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("gocalc");
    let c = commit(
        &repo,
        &[
            ("go.mod", "module example.com/gocalc\n\ngo 1.19\n"),
            ("calc/calc.go", GO_CALC),
            ("calc/calc_test.go", GO_TEST),
        ],
        "calc",
    );
    let go = |id, truth, test| {
        task(
            id,
            "gocalc",
            &c,
            "go",
            "calc/calc.go",
            GO_CALC,
            truth,
            &[("calc/calc_test.go", test)],
        )
    };
    let tasks = dir.path().join("tasks.jsonl");
    write_tasks(
        &tasks,
        &[
            go("add", "\treturn a + b\n", "TestAdd"),
            go("max", "\tif a > b {\n\t\treturn a\n\t}\n", "TestMax"),
        ],
    );
    let db = dir.path().join("t.db");
    let (tasks, repo) = (tasks.to_str().unwrap(), repo.to_str().unwrap());
    let run = |suggester: &str| {
        ok(
            &[
                "tasks",
                "run",
                tasks,
                "--repo",
                repo,
                "--suggester",
                suggester,
                "--jobs",
                "2",
            ],
            &db,
        )
    };
    assert_eq!(
        run("builtin:oracle"),
        "task run 1: 2 tasks done, 4 test runs, 2 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    // The empty answer is each task's do-nothing answer, already run.
    assert_eq!(
        run("builtin:noop"),
        "task run 2: 2 tasks done, 0 test runs, 6 from the cache\ncoverage maps: 0 made, 1 from the cache\n"
    );
    let report = report_json(&["1", "2"], &db);
    assert_eq!(report["runs"][0]["all"]["pass_at_1"], json!(1.0));
    assert_eq!(report["runs"][0]["all"]["valid"], json!(2));
    assert_eq!(report["runs"][1]["all"]["pass_at_1"], json!(0.0));
    assert_eq!(report["runs"][1]["all"]["valid"], json!(2));
    // `Add` without its body does not compile; `Max` without its `if` returns b.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let tails: Vec<String> = conn
        .prepare("SELECT output_tail FROM task_answers WHERE run_id = 2 ORDER BY task_index")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(tails[0].contains("missing return"), "{}", tails[0]);
    assert!(tails[1].contains("--- FAIL: TestMax"), "{}", tails[1]);
}

#[test]
fn resume_runs_only_the_tasks_left() {
    if !available("resume_runs_only_the_tasks_left", &[Server::Pytest]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = python_fixture(dir.path());
    let repo = dir.path().join("calc");
    let db = dir.path().join("t.db");
    let (tasks, repo) = (tasks.to_str().unwrap(), repo.to_str().unwrap());
    ok(
        &[
            "tasks",
            "run",
            tasks,
            "--repo",
            repo,
            "--suggester",
            "builtin:oracle",
            "-q",
            // Stored with the run: the resumed part chooses its tests alike.
            "--tests-by",
            "name",
        ],
        &db,
    );
    let before = ok(&["tasks", "report", "1"], &db);
    // An interrupted run: its last two tasks were never stored, it never finished.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "DELETE FROM task_answers WHERE task_index >= 2; DELETE FROM task_run_tasks WHERE task_index >= 2;
         UPDATE task_runs SET finished_ns = NULL;",
    )
    .unwrap();
    assert!(
        ok(&["tasks", "report", "1"], &db)
            .starts_with("task run 1: builtin:oracle (1 sample, unfinished)\n")
    );
    let again = ["--repo", repo, "--suggester", "builtin:oracle"];
    let out = nextedit(
        &[&["tasks", "run", tasks, "--resume", "1"][..], &again].concat(),
        &db,
    );
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "task run 1: 2 tasks done, 0 test runs, 1 from the cache\n"
    );
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "nextedit: task run 1: 2 of 4 tasks to do\n\
         nextedit: [1/2] untested: invalid: no covering test: none executes the hole's lines or calls its function by name\n\
         nextedit: [2/2] neg: invalid: the ground truth fails its tests (exit 1)\n"
    );
    assert_eq!(ok(&["tasks", "report", "1"], &db), before);
    // Another task file cannot resume it.
    std::fs::write(dir.path().join("other.jsonl"), "").unwrap();
    let other = dir.path().join("other.jsonl");
    let out = nextedit(
        &[
            &["tasks", "run", other.to_str().unwrap(), "--resume", "1"][..],
            &again,
        ]
        .concat(),
        &db,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("task run 1 holds task \"add\" at line 1 of its task file, "),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

const TEXT_V1: &str = "\
def shout(s):
    return s.upper() + \"!\"
";

const TEXT_V2: &str = "\
def shout(s):
    return s.upper() + \"!\"


def slug(s):
    return \"-\".join(s.lower().split())


def shout_twice(s):
    return shout(s) + \" \" + shout(s)
";

const APP: &str = "\
from text import shout


def title_slug(s):
    return \"-\".join(s.lower().split())


def greet_loudly(name):
    return shout(name) + \" \" + shout(name)
";

const TEST_APP: &str = "\
from app import greet_loudly, title_slug


def test_title_slug():
    assert title_slug(\"Hello Big World\") == \"hello-big-world\"


def test_greet_loudly():
    assert greet_loudly(\"bo\") == \"BO! BO!\"
";

/// HumanEvo's fixture: tasks cut at the first commit, whose context comes from that
/// state (only `shout`) or from the latest commit (which added `slug` and
/// `shout_twice`, the very bodies the tasks need).
fn evolution_fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let repo = dir.join("evo");
    let c = commit(
        &repo,
        &[
            ("text.py", TEXT_V1),
            ("app.py", APP),
            ("test_app.py", TEST_APP),
        ],
        "app",
    );
    commit(&repo, &[("text.py", TEXT_V2)], "text: slug and shout_twice");
    let chunk = |text: &str, start: usize, existed: bool| json!({"file": "text.py", "start_line": start, "end_line": start + 2, "text": text, "existed_at_state": existed});
    let shout = chunk("def shout(s):\n    return s.upper() + \"!\"\n", 0, true);
    let slug = chunk(
        "def slug(s):\n    return \"-\".join(s.lower().split())\n",
        4,
        false,
    );
    let twice = chunk(
        "def shout_twice(s):\n    return shout(s) + \" \" + shout(s)\n",
        8,
        false,
    );
    let mut tasks = Vec::new();
    for (from, slug_context, twice_context, leaked) in [
        ("state", vec![shout.clone()], vec![shout.clone()], false),
        ("head", vec![slug, shout.clone()], vec![twice, shout], true),
    ] {
        for (id, truth, test, level, context) in [
            (
                "title_slug",
                "    return \"-\".join(s.lower().split())\n",
                "test_title_slug",
                "standalone",
                slug_context.clone(),
            ),
            (
                "greet_loudly",
                "    return shout(name) + \" \" + shout(name)\n",
                "test_greet_loudly",
                "cross_file",
                twice_context.clone(),
            ),
        ] {
            let mut t = task(
                &format!("{id}@{from}"),
                "evo",
                &c,
                "python",
                "app.py",
                APP,
                truth,
                &[("test_app.py", test)],
            );
            t["scenario"] = json!("added_function");
            t["dependency"] = json!(level);
            t["context"] =
                json!({"from": from, "retriever": "bm25", "chunks": context, "leaked": leaked});
            tasks.push(t);
        }
    }
    let file = dir.join("evo.jsonl");
    write_tasks(&file, &tasks);
    (file, repo)
}

#[test]
fn copying_passes_only_with_head_context_and_the_report_shows_the_inflation() {
    if !available(
        "copying_passes_only_with_head_context_and_the_report_shows_the_inflation",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (tasks, repo) = evolution_fixture(dir.path());
    let calc_tasks = python_fixture(dir.path());
    let db = dir.path().join("t.db");
    let copy = format!(
        "cmd:python3 {}",
        repo_root()
            .join("tests/suggesters/complete_copy.py")
            .display()
    );
    let run = |tasks: &Path, repo: &Path, suggester: &str| {
        // The calc fixture's tasks are about tests found by name (one names none).
        let by = if tasks == calc_tasks {
            "name"
        } else {
            "coverage"
        };
        ok(
            &[
                "tasks",
                "run",
                tasks.to_str().unwrap(),
                "--repo",
                repo.to_str().unwrap(),
                "--suggester",
                suggester,
                "-q",
                "--tests-by",
                by,
            ],
            &db,
        )
    };
    run(&tasks, &repo, &copy);
    let report = report_json(&["1"], &db);
    let passed: Vec<(String, bool)> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare(
            "SELECT t.task_id, a.passed FROM task_answers a JOIN task_run_tasks t
             USING (run_id, task_index) ORDER BY t.task_index",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        passed,
        [
            ("title_slug@state".to_string(), false),
            ("greet_loudly@state".to_string(), false),
            ("title_slug@head".to_string(), true),
            ("greet_loudly@head".to_string(), true),
        ]
    );
    let all = report["evolution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dependency"] == "all")
        .unwrap()
        .clone();
    assert_eq!(all["aware"]["pass_at_1"], json!(0.0));
    assert_eq!(all["ignored"]["pass_at_1"], json!(1.0));
    assert_eq!(all["inflation"]["pass@1"], json!(1.0));
    // The script's path is this checkout's: not part of the snapshot.
    let here = repo_root().display().to_string();
    let report_text = |args: &[&str]| ok(args, &db).replace(&here, "[repo]");
    insta::assert_snapshot!("evolution_report", report_text(&["tasks", "report", "1"]));

    // The correlation table over every answer of several suggesters on both fixtures.
    let html = dir.path().join("correlation.html");
    let calc_repo = dir.path().join("calc");
    for suggester in ["builtin:noop", "builtin:oracle", "builtin:retrieve"] {
        run(&tasks, &repo, suggester);
    }
    for suggester in [
        "builtin:noop",
        "builtin:oracle",
        copy.as_str(),
        "builtin:retrieve",
    ] {
        run(&calc_tasks, &calc_repo, suggester);
    }
    insta::assert_snapshot!(
        "correlation",
        report_text(&[
            "tasks",
            "report",
            "1",
            "2",
            "3",
            "4",
            "5",
            "6",
            "7",
            "8",
            "--correlation",
            "--html",
            html.to_str().unwrap(),
        ])
    );
    // The page holds the same correlation table, one escaped row per metric.
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("<table class=\"correlation\">").count(), 1);
    for row in [
        "<tr><td class=\"l\">es_line</td><td>24</td><td>1.000</td><td>–</td></tr>",
        "<tr><td class=\"l\">es_token</td><td>24</td><td>0.990</td><td>[0.976, 0.996]</td></tr>",
        "<tr><td class=\"l\">sari</td><td>24</td><td>0.834</td><td>[0.649, 0.926]</td></tr>",
    ] {
        assert!(page.contains(row), "{row} not in {page}");
    }
}

/// The `average_price` task of `tasks_support::evolution_repo`'s first commit, cut by
/// the real `tasks cut` with BM25 context from the state (`state`) or from the latest
/// version (`head`), as a task file line.
fn cut_average_price(built: &crate::tasks_support::BuiltRepo, from: &str) -> String {
    let cut = Command::new(nextedit_bin())
        .args(["tasks", "cut", "--repo"])
        .arg(built.repo.path())
        .args(["--quiet", "--scenario", "added_function", "--commit"])
        .arg(&built.commits[0])
        .args(["--context-from", from, "--context-k", "3"])
        .output()
        .unwrap();
    assert!(
        cut.status.success(),
        "{}",
        String::from_utf8_lossy(&cut.stderr)
    );
    String::from_utf8(cut.stdout)
        .unwrap()
        .lines()
        .find(|l| serde_json::from_str::<Value>(l).unwrap()["enclosing"]["name"] == "average_price")
        .expect("an average_price task")
        .to_string()
}

/// HumanEvo's claim end to end: `tasks cut` itself retrieves the later `mean_price`
/// (same logic) first only from HEAD, the copying suggester passes only with that
/// context, and `tasks report` (text and `--html`) shows the inflation.
#[test]
fn cut_context_from_head_lets_copying_pass_and_the_report_shows_the_inflation() {
    if !available(
        "cut_context_from_head_lets_copying_pass_and_the_report_shows_the_inflation",
        &[Server::Pytest],
    ) {
        return;
    }
    let built = crate::tasks_support::evolution_repo();
    let dir = tempfile::tempdir().unwrap();
    let (aware, ignored) = (
        cut_average_price(&built, "state"),
        cut_average_price(&built, "head"),
    );
    let top = |line: &str| {
        let task: Value = serde_json::from_str(line).unwrap();
        let chunk = task["context"]["chunks"][0].clone();
        (chunk["file"].clone(), chunk["existed_at_state"].clone())
    };
    assert_eq!(top(&aware), (json!("prices.py"), json!(true)));
    assert_eq!(top(&ignored), (json!("stats.py"), json!(false)));
    let tasks = dir.path().join("evo.jsonl");
    std::fs::write(&tasks, format!("{aware}\n{ignored}\n")).unwrap();
    let db = dir.path().join("t.db");
    let copy = format!(
        "cmd:python3 {}",
        repo_root()
            .join("tests/suggesters/complete_copy.py")
            .display()
    );
    let repo = built.repo.path().to_str().unwrap();
    ok(
        &[
            "tasks",
            "run",
            tasks.to_str().unwrap(),
            "--repo",
            repo,
            "--suggester",
            &copy,
            "-q",
        ],
        &db,
    );
    let passed: Vec<bool> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare("SELECT passed FROM task_answers ORDER BY task_index")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(passed, [false, true]);
    let report = report_json(&["1"], &db);
    let all = report["evolution"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["dependency"] == "all")
        .unwrap()
        .clone();
    assert_eq!(all["inflation"]["pass@1"], json!(1.0));
    let here = repo_root().display().to_string();
    let html = dir.path().join("tasks.html");
    let text = ok(
        &["tasks", "report", "1", "--html", html.to_str().unwrap()],
        &db,
    );
    insta::assert_snapshot!("evolution_cut_report", text.replace(&here, "[repo]"));
    tasks_page_renders(&html);
}

/// The `tasks report --html` page in headless Chromium: the run's figures and the
/// evolution table with its inflation are in the DOM, nothing is scripted, and the
/// screenshot is a real picture.
fn tasks_page_renders(html: &Path) {
    if !available("tasks_page_renders", &[Server::Chromium]) {
        return;
    }
    let page = std::fs::read_to_string(html).unwrap();
    assert!(!page.contains("<script"));
    assert!(page.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
    let url = format!("file://{}", html.display());
    let profile = tempfile::tempdir().unwrap();
    let dom = crate::report_html::chromium(profile.path())
        .args(["--dump-dom", &url])
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(dom.status.success());
    let dom = String::from_utf8(dom.stdout).unwrap();
    assert_eq!(dom.matches("<script").count(), 0);
    assert_eq!(dom.matches("<table class=\"figures\"").count(), 1, "{dom}");
    assert_eq!(
        dom.matches("<table class=\"evolution\"").count(),
        1,
        "{dom}"
    );
    for cell in [
        "<tr><td class=\"l\">all</td><td>2</td><td>2</td><td>0</td><td>2</td><td>0</td><td>0.500</td>",
        "<tr><td class=\"l\">dependency intra_file</td><td>2</td><td>2</td><td>0</td><td>2</td><td>0</td><td>0.500</td>",
        "<tr><td class=\"l\">all</td><td class=\"l\">tasks</td><td>1/1</td><td>1/1</td><td></td></tr>",
        "<tr><td class=\"l\"></td><td class=\"l\">pass@1</td><td>0.000</td><td>1.000</td><td>+1.000</td></tr>",
    ] {
        assert!(dom.contains(cell), "{cell} not in {dom}");
    }
    let png = html.with_extension("png");
    crate::report_html::screenshot(profile.path(), &url, &png, "1200,700");
    let (w, h, rgb) = crate::report_html::decode(&png);
    assert_eq!((w, h), (1200, 700));
    let dark = rgb
        .iter()
        .filter(|[r, g, b]| (*r as u32 + *g as u32 + *b as u32) < 384)
        .count();
    assert!(dark > 2000, "{dark} dark pixels");
}

#[test]
fn samples_give_pass_at_k() {
    if !available("samples_give_pass_at_k", &[Server::Pytest]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (tasks, repo) = evolution_fixture(dir.path());
    let db = dir.path().join("t.db");
    // Every second answer of the copying script is empty: copy, empty, copy.
    let copy = format!(
        "cmd:COMPLETE_COPY_ALTERNATE=1 python3 {}",
        repo_root()
            .join("tests/suggesters/complete_copy.py")
            .display()
    );
    let out = ok(
        &[
            "tasks",
            "run",
            tasks.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--suggester",
            &copy,
            "--samples",
            "3",
        ],
        &db,
    );
    // A task's @state and @head forms share their state (context does not change a
    // test run; one job, so the second always finds the first's runs in the cache): 2
    // ground truths, 2 do-nothing (empty) answers and 2 wrong copies run; the other 14
    // of the 20 executions (4 ground truths, 4 empty answers, 12 answers) come from
    // the cache.
    assert_eq!(
        out,
        "task run 1: 4 tasks done, 6 test runs, 14 from the cache\n\
         coverage maps: 1 made, 0 from the cache\n\
         complete calls: 12 asked, 0 from the response cache\n"
    );
    // Read-only: every answer comes from the response cache (the script is never
    // started), each sample's under its own index, so the figures are run 1's.
    let again = ok(
        &[
            "tasks",
            "run",
            tasks.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--suggester",
            &copy,
            "--samples",
            "3",
            "--cache",
            "read-only",
        ],
        &db,
    );
    assert_eq!(
        again,
        "task run 2: 4 tasks done, 0 test runs, 20 from the cache\n\
         coverage maps: 0 made, 1 from the cache\n\
         complete calls: 0 asked, 12 from the response cache\n"
    );
    let figures = |run: &str| {
        let mut report = report_json(&[run], &db);
        report["evolution"].take()
    };
    assert_eq!(figures("1"), figures("2"));
    let report = report_json(&["1"], &db);
    let by_from = |level: &str, side: &str| {
        report["evolution"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["dependency"] == level)
            .unwrap()[side]
            .clone()
    };
    let ignored = by_from("all", "ignored");
    // n = 3, c = 2: pass@1 = 1 - C(1,1)/C(3,1) = 2/3; pass@3 = 1.
    let pass1 = ignored["pass_at_1"].as_f64().unwrap();
    assert!((pass1 - 2.0 / 3.0).abs() < 1e-12, "{pass1}");
    assert_eq!(ignored["pass_at_k"], json!({"k": 3, "value": 1.0}));
    assert_eq!(ignored["answers"], json!(6));
    let aware = by_from("all", "aware");
    assert_eq!(aware["pass_at_1"], json!(0.0));
    assert_eq!(aware["pass_at_k"], json!({"k": 3, "value": 0.0}));
}

/// `tasks cut` (every scenario, the whole history) then `tasks run` with the oracle,
/// noop and retrieve on the shared fixtures: the oracle passes every valid task.
fn cut_and_run(built: &crate::tasks_support::BuiltRepo, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let repo = built.repo.path().to_str().unwrap();
    let cut = Command::new(nextedit_bin())
        .args([
            "tasks",
            "cut",
            "--repo",
            repo,
            "--quiet",
            "--scenario",
            "all",
        ])
        .args(["--range", &built.commits.last().unwrap().to_string()])
        .output()
        .unwrap();
    assert!(
        cut.status.success(),
        "{}",
        String::from_utf8_lossy(&cut.stderr)
    );
    let tasks = dir.path().join("tasks.jsonl");
    std::fs::write(&tasks, &cut.stdout).unwrap();
    let db = dir.path().join("t.db");
    for suggester in ["builtin:oracle", "builtin:noop", "builtin:retrieve"] {
        ok(
            &[
                "tasks",
                "run",
                tasks.to_str().unwrap(),
                "--repo",
                repo,
                "--suggester",
                suggester,
                "--jobs",
                "2",
                "-q",
            ],
            &db,
        );
    }
    let report = report_json(&["1"], &db);
    let all = &report["runs"][0]["all"];
    assert_eq!(all["pass_at_1"], json!(1.0), "{report}");
    let text = ok(&["tasks", "report", "1", "2", "3"], &db);
    let dirname = built
        .repo
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    insta::assert_snapshot!(name, text.replace(&dirname, "REPO"));
}

#[test]
fn cut_python_tasks_run_with_the_oracle_noop_and_retrieve() {
    if !available(
        "cut_python_tasks_run_with_the_oracle_noop_and_retrieve",
        &[Server::Pytest],
    ) {
        return;
    }
    cut_and_run(&crate::tasks_support::python_repo(), "cut_python");
}

#[test]
fn cut_go_tasks_run_with_the_oracle_noop_and_retrieve() {
    if !available(
        "cut_go_tasks_run_with_the_oracle_noop_and_retrieve",
        &[Server::Go],
    ) {
        return;
    }
    cut_and_run(&crate::tasks_support::go_repo(), "cut_go");
}

#[test]
fn nothing_valid_fails_loudly_and_a_suggester_without_complete_is_refused() {
    if !available(
        "nothing_valid_fails_loudly_and_a_suggester_without_complete_is_refused",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = python_fixture(dir.path());
    let repo = dir.path().join("calc");
    let db = dir.path().join("t.db");
    // Only the two invalid tasks (lines 3 and 4).
    let text = std::fs::read_to_string(&tasks).unwrap();
    let invalid = dir.path().join("invalid.jsonl");
    std::fs::write(
        &invalid,
        text.lines()
            .skip(2)
            .map(|l| format!("{l}\n"))
            .collect::<String>(),
    )
    .unwrap();
    let out = nextedit(
        &[
            "tasks",
            "run",
            invalid.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--suggester",
            "builtin:oracle",
            "-q",
            "--tests-by",
            "name",
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).ends_with(
            "nextedit: no valid task: every task's ground truth failed its tests, it named none, or a do-nothing answer passed them too (tasks report 1 lists why)\n"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A process that does not implement `complete` (method not found → unsupported)
    // is refused before the first task, and no run is stored.
    let scripted = format!(
        "cmd:python3 {}",
        repo_root().join("tests/suggesters/scripted.py").display()
    );
    for suggester in [scripted.as_str(), "builtin:propagate"] {
        let out = tasks_run(&tasks, &repo, suggester, &[], &db);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "nextedit: error: task run into {}: suggester {suggester} does not answer `complete`, the call tasks run asks: use one that fills a hole (builtin:noop, builtin:retrieve, builtin:oracle, openai:, lsp:, or a cmd: process implementing `complete`)\n",
                db.display()
            )
        );
    }
    let runs: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM task_runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 1);
}

#[test]
fn test_commands_run_without_network_under_time_and_memory_limits() {
    if !available(
        "test_commands_run_without_network_under_time_and_memory_limits",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = python_fixture(dir.path());
    let repo = dir.path().join("calc");
    // The first task alone.
    let text = std::fs::read_to_string(&tasks).unwrap();
    let one = dir.path().join("one.jsonl");
    std::fs::write(&one, format!("{}\n", text.lines().next().unwrap())).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let db = dir.path().join("t.db");
    let mut run = 0;
    // The task's validity (or why not) under a test command and flags.
    let mut outcome = |command: &str, flags: &[&str]| -> String {
        let mut args = vec![
            "tasks",
            "run",
            one.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--suggester",
            "builtin:oracle",
            "--test-command",
            command,
            "-q",
        ];
        args.extend(flags);
        nextedit(&args, &db);
        run += 1;
        let report = report_json(&[&run.to_string()], &db);
        match report["runs"][0]["left_out"][0]["reason"].as_str() {
            Some(reason) => reason.to_string(),
            None => "valid".to_string(),
        }
    };
    // {tests} is the pytest ids: the default command, spelled out.
    assert_eq!(
        outcome("python3 -m pytest -q -p no:cacheprovider {tests}", &[]),
        "valid"
    );
    assert_eq!(
        outcome("echo {tests} {names} {packages} {files}; exit 3", &[]),
        "the ground truth fails its tests (exit 3)"
    );
    let connect = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5)'"
    );
    // The host's loopback is not there inside the sandbox's network namespace.
    assert_eq!(
        outcome(&connect, &["--sandbox", "bwrap"]),
        "the ground truth fails its tests (exit 1)"
    );
    // Unsandboxed it connects, whatever the answer: the empty one passes as well.
    assert_eq!(
        outcome(&connect, &["--sandbox", "off"]),
        "the empty answer passes its tests"
    );
    assert_eq!(
        outcome("sleep 30", &["--timeout", "1"]),
        "the ground truth's tests timed out after 1 s"
    );
    let allocate = "python3 -c 'x = bytearray(512 * 1024 * 1024)'";
    // The whole tree's limit in a cgroup (its OOM kill is the limit's); where none can
    // be made, RLIMIT_AS per process (Python's MemoryError).
    let over = if nextedit::base::sys::cgroup::layout().is_ok() {
        "the ground truth's tests hit their limit: memory"
    } else {
        "the ground truth fails its tests (exit 1)"
    };
    assert_eq!(outcome(allocate, &["--memory", "256"]), over);
    assert_eq!(
        outcome(allocate, &["--memory", "2048"]),
        "the empty answer passes its tests"
    );
    drop(listener);
}

#[test]
fn a_command_planted_in_a_task_run_database_never_runs_and_keys_are_masked() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = python_fixture(dir.path());
    let (tasks, repo) = (tasks.to_str().unwrap(), dir.path().join("calc"));
    let repo = repo.to_str().unwrap();
    let db = dir.path().join("t.db");
    let key = crate::untrusted_inputs::KEY;
    // The tests print the environment's secret; the suggester's server reflects its key.
    let spec = format!(
        "openai:{}?model=m&key_env=NEXTEDIT_TEST_MODEL_CREDENTIAL",
        crate::untrusted_inputs::reflecting_server()
    );
    // It passes only with `add`'s body, so `add`'s empty answer fails (the task counts
    // and its suggester is asked).
    let print_key = "echo \"test sees $NEXTEDIT_TEST_MODEL_CREDENTIAL\"; grep -q 'a + b' calc.py";
    let run = |args: &[&str]| {
        Command::new(nextedit_bin())
            .args(args)
            .arg("--db")
            .arg(&db)
            .env("NEXTEDIT_TEST_MODEL_CREDENTIAL", key)
            .output()
            .unwrap()
    };
    let first = run(&[
        "tasks",
        "run",
        tasks,
        "--repo",
        repo,
        "--suggester",
        &spec,
        "--test-command",
        print_key,
        "--cache",
        "off",
    ]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(!said.contains(key), "{said}");
    crate::untrusted_inputs::assert_masked(&db, &["task_answers.error"]);
    let report = ok(&["tasks", "report", "1", "--json"], &db);
    assert!(!report.contains(key));
    // An interrupted run, then planted: its suggester and test command now touch markers.
    let marker = dir.path().join("planted-ran");
    let planted = format!("touch {}", marker.display());
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE task_runs SET finished_ns = NULL, suggester = ?1,
             settings = json_set(settings, '$.suggester', ?1, '$.test_command', ?2, '$.sandbox', 'off')",
        [format!("cmd:{planted}"), planted.clone()],
    )
    .unwrap();
    conn.execute_batch(
        "DELETE FROM task_answers WHERE task_index >= 2; DELETE FROM task_run_tasks WHERE task_index >= 2;",
    )
    .unwrap();
    let resume = |given: &[&str]| {
        let out = run(&[&["tasks", "run", tasks, "--resume", "1"][..], given].concat());
        assert!(!marker.exists(), "the planted command ran: {given:?}");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let suggester = format!("cmd:{planted}");
    assert_eq!(
        resume(&[]),
        (
            Some(2),
            format!(
                "nextedit: error: task run into {}: task run 1 was made with --suggester `{suggester}`: resume it with the same --suggester (nextedit never runs what a database names)\n",
                db.display()
            )
        )
    );
    assert_eq!(
        resume(&["--suggester", &suggester, "--repo", repo]),
        (
            Some(2),
            format!(
                "nextedit: error: task run into {}: task run 1 was made with --test-command `{planted}`, not no --test-command: resume it with the same --test-command\n",
                db.display()
            )
        )
    );
    assert_eq!(
        resume(&[
            "--suggester",
            &suggester,
            "--repo",
            repo,
            "--test-command",
            &planted
        ]),
        (
            Some(2),
            format!(
                "nextedit: error: task run into {}: task run 1 was made with --sandbox off, not --sandbox bwrap: resume it with the same --sandbox\n",
                db.display()
            )
        )
    );
}
