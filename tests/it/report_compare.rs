//! Comparisons that cannot mislead (issue 29): a run whose calls all failed exits 1 and
//! every report format marks it; every run says how it was scored; runs scored
//! differently or over different trajectories are said to be and compared on their
//! common steps; `--json` is one document and `--jsonl` its lines. Real git
//! repositories the tests make, the real binary, real SQLite files.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::common::nextedit_with_db as nextedit;
use crate::derive_support::{self, TestRepo};

/// The repository of `rename_repo` plus a later commit that renames a second function.
fn two_commit_repo() -> TestRepo {
    let mut repo = derive_support::rename_repo();
    repo.write(
        "pkg/prices.py",
        "def subtotal(items):\n    return sum(items)\n\n\ndef summary(items):\n    return subtotal(items)\n",
    );
    repo.write(
        "app.py",
        "from pkg.prices import subtotal, summary\n\nprint(subtotal([1, 2]))\nprint(summary([3]))\n",
    );
    repo.commit("rename describe to summary and use it");
    repo
}

fn scripted(mode: &str, state: &Path) -> String {
    crate::common::scripted_suggester(Some(mode), state)
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `replay` of `repo`'s commits `revs` (each `--commit`) with `suggester` and `extra`.
fn replay(repo: &TestRepo, db: &Path, revs: &[&str], suggester: &str, extra: &[&str]) -> Output {
    let mut args = vec!["replay", "--quiet", "--repo", repo.path().to_str().unwrap()];
    for rev in revs {
        args.extend(["--commit", rev]);
    }
    args.extend(["--suggester", suggester]);
    args.extend(extra);
    nextedit(&args, db)
}

/// Whether python3's `json.load` reads stdout as one JSON document.
fn python_loads(output: &Output) -> bool {
    let mut python = Command::new("python3")
        .args(["-c", "import json,sys; json.load(sys.stdin)"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    python
        .stdin
        .take()
        .unwrap()
        .write_all(&output.stdout)
        .unwrap();
    python.wait().unwrap().success()
}

#[test]
fn a_run_whose_every_suggest_call_failed_exits_1_and_every_report_format_marks_it() {
    // scripted.py's good answer rewrites line 0 of `a.py`: a file of this commit.
    let mut repo = TestRepo::new();
    repo.write("a.py", "x = 0\ny = 0\nz = 0\n");
    repo.write(
        "b.py",
        "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
    );
    repo.commit("base");
    repo.write("a.py", "x = 1\ny = 0\nz = 1\n");
    repo.write(
        "b.py",
        "def f():\n    return 3\n\n\ndef g():\n    return 4\n",
    );
    repo.commit("four edits");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let state = tmp.path().join("state.json");
    let rw = ["--sandbox-rw", state.to_str().unwrap()];
    // Every `suggest` gets an error answer (initialize and generate work): the run
    // measured nothing, so it fails whatever else went well.
    let out = replay(&repo, &db, &["HEAD"], &scripted("error", &state), &rw);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .ends_with("nextedit: run 1 FAILED: all 3 suggest calls failed (error_response 3)\n"),
        "{}",
        stderr(&out)
    );
    // A run where one call in three failed passes by default and fails with a share
    // below a third.
    let once = replay(&repo, &db, &["HEAD"], &scripted("crash-once", &state), &rw);
    assert_eq!(once.status.code(), Some(0), "{}", stderr(&once));
    std::fs::write(&state, "{}").unwrap();
    let strict = replay(
        &repo,
        &db,
        &["HEAD"],
        &scripted("crash-once", &state),
        &[&rw[..], &["--max-failed-share", "0.25"]].concat(),
    );
    assert_eq!(strict.status.code(), Some(1), "{}", stderr(&strict));
    assert!(
        stderr(&strict).ends_with(
            "nextedit: run 3 FAILED: 1 of 3 suggest calls failed (crash 1; more than --max-failed-share 0.25)\n"
        ),
        "{}",
        stderr(&strict)
    );
    let bad = replay(
        &repo,
        &db,
        &["HEAD"],
        "builtin:noop",
        &["--max-failed-share", "1.5"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains(
            "invalid value '1.5' for '--max-failed-share <SHARE>': 1.5 is not a number from 0 to 1"
        ),
        "{}",
        stderr(&bad)
    );

    // Text: the row, the scoring table's verdict and the reason.
    let report = text(&nextedit(&["report", "1", "2", "3"], &db));
    let verdicts: Vec<&str> = report
        .lines()
        .filter(|l| l.ends_with("  ok") || l.ends_with("FAILED"))
        .collect();
    assert_eq!(verdicts.len(), 5, "{report}");
    assert!(
        report.contains("\nrun 1 FAILED: all 3 suggest calls failed (error_response 3)\n"),
        "{report}"
    );
    assert!(
        report.contains("\nrun 3 FAILED: 1 of 3 suggest calls failed (crash 1; more than --max-failed-share 0.25)\n"),
        "{report}"
    );
    assert!(!report.contains("run 2 FAILED"), "{report}");
    // JSON: the verdict with its calls by kind.
    let json: Value =
        serde_json::from_slice(&nextedit(&["report", "--json", "1", "2"], &db).stdout).unwrap();
    assert_eq!(
        json["runs"][0]["verdict"],
        serde_json::json!({"failed": true, "reason": "all 3 suggest calls failed (error_response 3)",
            "max_failed_share": 1.0, "calls": {
                "initialize": {"made": 1, "failed": 0, "kinds": {}},
                "suggest": {"made": 3, "failed": 3, "kinds": {"error_response": 3}},
                "generate": {"made": 3, "failed": 0, "kinds": {}}}})
    );
    assert_eq!(json["runs"][1]["verdict"]["failed"], false);
    // `runs list` marks it too, in its table and its JSON.
    let list = text(&nextedit(&["runs", "list"], &db));
    assert!(
        list.lines()
            .any(|l| l.starts_with("   1 ") && l.ends_with(" FAILED")),
        "{list}"
    );
    let listed: Value =
        serde_json::from_slice(&nextedit(&["runs", "list", "--json"], &db).stdout).unwrap();
    assert_eq!(listed[2]["id"], 1);
    assert_eq!(listed[2]["verdict"]["failed"], true);
    // HTML: the row and the scoring table.
    let page = tmp.path().join("report.html");
    let html = nextedit(&["report", "1", "--html", page.to_str().unwrap()], &db);
    assert!(html.status.success(), "{}", stderr(&html));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("<span class=\"warn failed\">FAILED</span>"),
        "{page}"
    );
    assert!(
        page.contains("<td class=\"l\">FAILED: all 3 suggest calls failed (error_response 3)</td>"),
        "{page}"
    );
}

#[test]
fn a_bleu_and_an_exact_run_over_different_commits_are_marked_and_compared_on_common_steps() {
    let repo = two_commit_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    for (revs, rule) in [(&["HEAD~1", "HEAD"][..], "bleu"), (&["HEAD"][..], "exact")] {
        let out = replay(&repo, &db, revs, "builtin:oracle", &["--match", rule]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let project = repo
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let old = format!("{project}@{}", &repo.git(&["rev-parse", "HEAD~1"])[..10]);
    let json: Value =
        serde_json::from_slice(&nextedit(&["report", "--json", "1", "2"], &db).stdout).unwrap();
    // The trajectory keys name the repository's (temporary) directory.
    let masked = |s: String| s.replace(&project, "repo");
    let report = masked(text(&nextedit(&["report", "1", "2"], &db)));
    let report = crate::cli_snapshots::masked_text(&report, &db);
    insta::assert_snapshot!("bleu_and_exact_report", report);
    // Without --common each run's figures cover its own steps (run 1: both commits).
    let whole = text(&nextedit(&["report", "1", "2", "--common", "false"], &db));
    let steps = |table: &str, run: &str| -> String {
        let row = table
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{run} ")))
            .unwrap();
        row.split_whitespace().nth(2).unwrap().to_string()
    };
    assert_eq!(steps(&report, "1"), steps(&report, "2"));
    assert_ne!(steps(&whole, "1"), steps(&report, "1"));
    assert!(whole.contains("(--common false)"), "{whole}");
    // The JSON says the same: what differs, what each run kept, what was left out.
    let comparison = &json["comparison"];
    assert_eq!(comparison["common"], true);
    assert_eq!(
        comparison["left_out"],
        serde_json::json!([{"run": 1, "key": old, "steps": 3, "why": "not in run 2"}])
    );
    assert_eq!(json["runs"][0]["definition"]["match"], "bleu");
    assert_eq!(json["runs"][1]["definition"]["match"], "exact");
    assert_eq!(json["runs"][0]["definition"]["trajectories"], 2);
    assert_eq!(json["runs"][1]["definition"]["trajectories"], 1);
}

#[test]
fn json_is_one_document_and_jsonl_one_object_per_line() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let replayed = replay(&repo, &db, &["HEAD"], "builtin:propagate", &["--json"]);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert!(python_loads(&replayed));
    let document: Value = serde_json::from_slice(&replayed.stdout).unwrap();
    assert_eq!(document["run"]["run"], 1);
    assert_eq!(document["trajectories"].as_array().unwrap().len(), 1);
    assert_eq!(
        document["summary"]["verdicts"][0]["verdict"]["failed"],
        false
    );
    let lines = replay(&repo, &db, &["HEAD"], "builtin:oracle", &["--jsonl"]);
    let types: Vec<String> = text(&lines)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
        .collect();
    assert_eq!(types, ["\"run\"", "\"trajectory\"", "\"summary\""]);
    for args in [
        &["report", "--json", "1", "2"][..],
        &["report", "--json"],
        &["runs", "list", "--json"],
    ] {
        let out = nextedit(args, &db);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(python_loads(&out), "{args:?}: {}", text(&out));
    }
    // --jsonl: a line per run, then what was compared.
    let lines: Vec<Value> = text(&nextedit(&["report", "--jsonl", "1", "2"], &db))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(
        (lines[0]["run"]["id"].clone(), lines[1]["run"]["id"].clone()),
        (1.into(), 2.into())
    );
    assert_eq!(lines[2]["comparison"]["runs"], serde_json::json!([1, 2]));
    let refused = nextedit(&["report", "--json", "--jsonl", "1"], &db);
    assert_eq!(refused.status.code(), Some(2));
}

#[test]
fn a_run_without_steps_shows_no_figures_rather_than_zeros() {
    // One changed line: one edit, applied first, so nothing is ever asked.
    let mut repo = TestRepo::new();
    repo.write("a.py", "x = 0\n");
    repo.commit("base");
    repo.write("a.py", "x = 1\n");
    repo.commit("one edit");
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let out = replay(&repo, &db, &["HEAD"], "builtin:oracle", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report = text(&nextedit(&["report", "1"], &db));
    assert_eq!(
        report.lines().nth(1),
        Some(
            "   1     1/1       0                  -        -       -       -      -                        -  builtin:oracle"
        ),
        "{report}"
    );
    let list = text(&nextedit(&["runs", "list"], &db));
    let row: Vec<&str> = list.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[4..], ["-", "bleu>50", "builtin:oracle"], "{list}");
    let page = tmp.path().join("report.html");
    let html = nextedit(&["report", "1", "--html", page.to_str().unwrap()], &db);
    assert!(html.status.success(), "{}", stderr(&html));
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(
        page.contains("<td>1/1</td><td>0</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td><td>–</td>"),
        "{page}"
    );
}
