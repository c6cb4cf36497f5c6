//! Fail before, pass after: with real pytest, a task counts only when its ground truth
//! passes its tests and its do-nothing answers (the empty hole; for an incomplete
//! suffix, the file as cut) fail them. A task one of them passes is left out as
//! non-discriminating, counted by reason beside every figure, so the do-nothing
//! suggester's pass@1 is 0 by construction.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::{Server, available};
use crate::tasks_run::{commit, ok, report_json, task, tasks_run, write_tasks};

const LIB: &str = "\
def clamp(x):
    if x < 0:
        x = 0
    return x


def check(x):
    \"\"\"Raises unless x is positive.\"\"\"
    if x > 0:
        return x
    raise ValueError(x)


def double(x):
    return 2 * x
";

/// `test_clamp` never reaches the clamping, `test_check` only asks that no error is
/// raised: neither tells a right answer from none.
const TEST_LIB: &str = "\
from lib import check, clamp, double


def test_clamp():
    assert clamp(3) == 3


def test_check():
    check(1)


def test_double():
    assert double(2) == 4
";

/// Three tasks: `clamp` (its empty answer passes), `check` (an incomplete suffix whose
/// function's rest is gone: the empty answer raises, the file as cut passes) and
/// `double` (discriminating).
fn fixture(dir: &Path) -> std::path::PathBuf {
    let repo = dir.join("lib");
    let c = commit(&repo, &[("lib.py", LIB), ("test_lib.py", TEST_LIB)], "lib");
    let py = |id, truth, test| {
        task(
            id,
            "lib",
            &c,
            "python",
            "lib.py",
            LIB,
            truth,
            &[("test_lib.py", test)],
        )
    };
    let mut check = py("check", "    if x > 0:\n        return x\n", "test_check");
    let real_suffix = check["suffix"].as_str().unwrap().to_string();
    let shown = &real_suffix[real_suffix.find("\n\n\ndef double").unwrap()..];
    check["scenario"] = json!("incomplete_suffix");
    check["suffix"] = json!(shown);
    check["state_suffix"] = json!(real_suffix);
    let tasks = dir.join("tasks.jsonl");
    write_tasks(
        &tasks,
        &[
            py("clamp", "    if x < 0:\n        x = 0\n", "test_clamp"),
            check,
            py("double", "    return 2 * x\n", "test_double"),
        ],
    );
    tasks
}

#[test]
fn a_task_a_do_nothing_answer_passes_is_non_discriminating() {
    if !available(
        "a_task_a_do_nothing_answer_passes_is_non_discriminating",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = fixture(dir.path());
    let repo = dir.path().join("lib");
    let db = dir.path().join("t.db");
    let run = |suggester: &str| {
        let out = tasks_run(&tasks, &repo, suggester, &[], &db);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    // Ground truth, then the empty answer of each (and `check` as cut): 7 test runs;
    // the oracle's one answer is the ground truth's run, cached.
    assert_eq!(
        run("builtin:oracle"),
        "task run 1: 3 tasks done, 7 test runs, 1 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    assert_eq!(
        run("builtin:noop"),
        "task run 2: 3 tasks done, 0 test runs, 8 from the cache\ncoverage maps: 0 made, 1 from the cache\n"
    );
    let report = report_json(&["1", "2"], &db);
    let all = |run: usize| report["runs"][run]["all"].clone();
    for run in 0..2 {
        assert_eq!(all(run)["tasks"], json!(3));
        assert_eq!(all(run)["valid"], json!(1));
        assert_eq!(all(run)["non_discriminating"], json!(2));
    }
    assert_eq!(all(0)["pass_at_1"], json!(1.0));
    // The do-nothing answer fails every task that counts, by construction.
    assert_eq!(all(1)["pass_at_1"], json!(0.0));
    let left_out = &report["runs"][0]["left_out"];
    let summary: Vec<(Value, Value, Value)> = (left_out.as_array().unwrap().iter())
        .map(|g| (g["kind"].clone(), g["reason"].clone(), g["count"].clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                json!("non_discriminating"),
                json!("the empty answer passes its tests"),
                json!(1)
            ),
            (
                json!("non_discriminating"),
                json!("the state as cut passes its tests"),
                json!(1)
            ),
        ]
    );
    assert_eq!(left_out[0]["tasks"][0]["task"], json!("clamp"));
    assert_eq!(left_out[1]["tasks"][0]["task"], json!("check"));
    // The output tail of the run that passed, one field away.
    let output = left_out[0]["tasks"][0]["output"].as_str().unwrap();
    assert!(output.contains("1 passed"), "{output}");
    // By scenario: the excluded task is counted beside its scenario's figures.
    assert_eq!(
        report["runs"][0]["by_scenario"]["incomplete_suffix"]["non_discriminating"],
        json!(1)
    );
    insta::assert_snapshot!(
        "non_discriminating_report",
        ok(&["tasks", "report", "1", "2"], &db)
    );
}

#[test]
fn failed_calls_are_their_own_column() {
    if !available("failed_calls_are_their_own_column", &[Server::Pytest]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = fixture(dir.path());
    let repo = dir.path().join("lib");
    let db = dir.path().join("t.db");
    // A process that exits at once: it answers `complete` with nothing, each call fails.
    let suggester = "cmd:python3 -c 'import sys; sys.exit(1)'";
    let out = tasks_run(&tasks, &repo, suggester, &[], &db);
    assert_eq!(out.status.code(), Some(1));
    let all = report_json(&["1"], &db)["runs"][0]["all"].clone();
    assert_eq!(
        (
            all["valid"].clone(),
            all["answers"].clone(),
            all["failed_answers"].clone(),
            all["pass_at_1"].clone()
        ),
        (json!(1), json!(1), json!(1), json!(0.0))
    );
    let text = ok(&["tasks", "report", "1"], &db);
    // After the run's line and where its tests came from.
    let header = text.lines().nth(2).unwrap();
    let all_row = text.lines().nth(3).unwrap();
    let failed_at = header.find("failed").unwrap() + "failed".len();
    assert_eq!(&all_row[failed_at - 1..failed_at], "1", "{text}");
}

#[test]
fn a_changed_environment_misses_the_execution_cache() {
    if !available(
        "a_changed_environment_misses_the_execution_cache",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tasks = fixture(dir.path());
    let repo = dir.path().join("lib");
    let db = dir.path().join("t.db");
    // PYTHONPATH (passed by name with --env; unsandboxed, so the directory is seen)
    // holds nothing, then one more installed distribution: the same tests, another
    // environment.
    let site = dir.path().join("site");
    std::fs::create_dir_all(&site).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "tasks",
            "run",
            tasks.to_str().unwrap(),
            "--repo",
            repo.to_str().unwrap(),
            "--suggester",
            "builtin:oracle",
            "--sandbox",
            "off",
            "--env",
            "PYTHONPATH",
            "-q",
        ];
        args.extend(extra);
        let out = std::process::Command::new(crate::common::nextedit_bin())
            .args(&args)
            .arg("--db")
            .arg(&db)
            .env(
                "PATH",
                format!(
                    "{}:/usr/bin:/bin",
                    crate::tasks_run::repo_root()
                        .join(".venv-pytest/bin")
                        .display()
                ),
            )
            .env("PYTHONPATH", &site)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    assert_eq!(
        run(&[]),
        "task run 1: 3 tasks done, 7 test runs, 1 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    assert_eq!(
        run(&[]),
        "task run 2: 3 tasks done, 0 test runs, 8 from the cache\ncoverage maps: 0 made, 1 from the cache\n"
    );
    let info = site.join("extra-1.0.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: extra\nVersion: 1.0\n",
    )
    .unwrap();
    assert_eq!(
        run(&[]),
        "task run 3: 3 tasks done, 7 test runs, 1 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    // Off: every test runs, even the oracle's answer just run as the ground truth.
    assert_eq!(
        run(&["--exec-cache", "off"]),
        "task run 4: 3 tasks done, 8 test runs, 0 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    let cached: i64 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row("SELECT count(*) FROM task_executions", [], |r| r.get(0))
        .unwrap();
    assert_eq!(cached, 14);
}
