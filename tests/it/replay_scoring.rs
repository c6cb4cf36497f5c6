//! Replay scoring validity (issue 11): a hit means a change, predictions in files the
//! commit does not change are ordinary misses, and `report` puts the do-nothing floor
//! beside every content score. Real git repositories made by the test, the real binary.

use crate::common::json_lines;
use crate::common::nextedit_with_db as nextedit;
use crate::derive_support;

use derive_support::TestRepo;

/// (micro P, micro R, keeping share, mean content BLEU) of one `--json` replay.
fn replay(repo: &TestRepo, db: &std::path::Path, suggester: &str, rule: &str) -> serde_json::Value {
    let lines = json_lines(&nextedit(
        &[
            "replay",
            "--jsonl",
            "--repo",
            repo.path().to_str().unwrap(),
            "--commit",
            "HEAD",
            "--suggester",
            suggester,
            "--match",
            rule,
        ],
        db,
    ));
    lines.last().unwrap().clone()
}

#[test]
fn doing_nothing_at_gold_is_a_hit_only_in_historian_compat() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    for rule in ["bleu", "es", "exact"] {
        let summary = replay(&repo, &db, "builtin:unchanged-at-gold", rule);
        assert_eq!(
            summary["summary"]["micro"],
            serde_json::json!({"precision": 0.0, "recall": 0.0, "f1": 0.0}),
            "{rule}"
        );
        assert_eq!(summary["summary"]["shares"]["flow_breaking"], 1.0, "{rule}");
    }
    // Historian's rule, quirk included: an unchanged line at a gold location whose
    // BLEU-4 against the edited line is above 50 is a hit: three of six, app.py's import
    // at step 1 and its `print` at steps 1 and 2 (the natural order renames the
    // definition first; before issue 32 it started with the import: one of six).
    let summary = replay(&repo, &db, "builtin:unchanged-at-gold", "historian");
    assert_eq!(
        summary["summary"]["micro"],
        serde_json::json!({"precision": 0.5, "recall": 0.5, "f1": 0.5})
    );
    // The default run is the first: its report shows its content score (0: every answer
    // was unchanged) beside the floor, and its results in JSON.
    let report = json_lines(&nextedit(&["report", "--jsonl", "1", "4"], &db));
    let default = &report[0]["results"];
    assert_eq!(default["mean_bleu"], 0.0);
    assert_eq!(default["mean_es"], 0.0);
    assert_eq!(default["baseline"]["unchanged_bleu"], 0.0);
    // A built-in suggester runs inside nextedit: no process to sandbox.
    assert_eq!(report[0]["sandbox"], "in-process");
    assert_eq!(report[0]["unsandboxed"], false);
    assert!(default["latency_ms"]["suggest"]["p50"].is_number());
    assert_eq!(default["errors"], serde_json::json!({}));
    // Compat: the unchanged text keeps Historian's BLEU, as its floor does (its mean over
    // the steps of the natural order; 48.6–48.7 before issue 32's order).
    let compat = &report[1]["results"];
    assert_eq!(compat["content_steps"], 3);
    let unchanged = compat["baseline"]["unchanged_bleu"].as_f64().unwrap();
    assert!(unchanged > 52.5 && unchanged < 52.6, "{compat}");
    // Doing nothing scores exactly the floor the report prints beside it.
    assert_eq!(compat["mean_bleu"], compat["baseline"]["unchanged_bleu"]);
    // An empty answer removes the replaced lines: half of what ES rewards, both modes.
    assert_eq!(default["baseline"]["empty_es"], 0.5);
    assert_eq!(compat["baseline"]["empty_es"], 0.5);
}

#[test]
fn a_prediction_in_a_file_the_commit_does_not_change_is_an_ordinary_miss() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/renamer.py");
    let plain = replay(
        &repo,
        &db,
        &format!("cmd:python3 '{}'", script.display()),
        "bleu",
    );
    let extra = replay(
        &repo,
        &db,
        &format!("cmd:RENAMER_README=1 python3 '{}'", script.display()),
        "bleu",
    );
    let micro = |s: &serde_json::Value, k: &str| s["summary"]["micro"][k].as_f64().unwrap();
    assert_eq!(micro(&plain, "recall"), 1.0);
    // Same recall; the README edit is one more false positive per step, not a failed step.
    assert_eq!(micro(&extra, "recall"), 1.0);
    assert!(micro(&extra, "precision") < micro(&plain, "precision"));
    assert!(micro(&extra, "precision") > 0.0);
    let conn = rusqlite::Connection::open(&db).unwrap();
    let classes: Vec<String> = conn
        .prepare(
            "SELECT DISTINCT class FROM run_predictions WHERE run_id = 2 AND file = 'README.md'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(classes, ["flow_breaking"]);
    let errors: i64 = conn
        .query_row(
            "SELECT count(*) FROM run_errors WHERE run_id = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(errors, 0);
}

#[test]
fn a_run_stored_without_sandbox_is_marked_unsandboxed_in_the_report() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    replay(&repo, &db, "builtin:noop", "bleu");
    replay(&repo, &db, "builtin:noop", "bleu");
    // The sandbox setting as the replay stores it: a plain field of the run's config.
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "UPDATE runs SET config = json_set(config, '$.sandbox', 'off') WHERE id = 1",
        [],
    )
    .unwrap();
    conn.execute(
        "UPDATE runs SET config = json_set(config, '$.sandbox', 'bwrap') WHERE id = 2",
        [],
    )
    .unwrap();
    let report = json_lines(&nextedit(&["report", "--jsonl", "1", "2"], &db));
    assert_eq!(report[0]["sandbox"], "off");
    assert_eq!(report[0]["unsandboxed"], true);
    assert_eq!(report[1]["sandbox"], "bwrap");
    assert_eq!(report[1]["unsandboxed"], false);
    let table = String::from_utf8(nextedit(&["report", "1", "2"], &db).stdout).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[1].ends_with("  builtin:noop unsandboxed"), "{table}");
    assert!(lines[2].ends_with("  builtin:noop"), "{table}");
}

#[test]
fn report_without_runs_lists_them_and_runs_show_and_delete_work() {
    let repo = derive_support::rename_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let stdout = |args: &[&str]| {
        let out = nextedit(args, &db);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    // Suggester specs are printed in full (this one is longer than the old 24-character
    // column, which cut it).
    let unchanged = "builtin:unchanged-at-gold";
    replay(&repo, &db, unchanged, "bleu");
    replay(&repo, &db, "builtin:oracle", "bleu");
    let listed = stdout(&["report"]);
    let rows: Vec<Vec<&str>> = listed
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "RUN",
            "STARTED",
            "STATUS",
            "TRAJ",
            "MICRO",
            "F1",
            "MATCH",
            "SUGGESTER"
        ]
    );
    assert_eq!(rows.len(), 3, "{listed}");
    assert_eq!(
        (
            rows[1][0], rows[1][2], rows[1][3], rows[1][4], rows[1][5], rows[1][6]
        ),
        ("2", "done", "1/1", "1.000", "bleu>50", "builtin:oracle")
    );
    assert_eq!(
        (rows[2][0], rows[2][4], rows[2][5], rows[2][6]),
        ("1", "0.000", "bleu>50", unchanged)
    );
    assert_eq!(stdout(&["runs", "list"]), listed);
    let show = stdout(&["runs", "show", "2"]);
    assert!(
        show.lines()
            .last()
            .unwrap()
            .trim_start()
            .starts_with("done"),
        "{show}"
    );
    assert!(show.contains("builtin:oracle"), "{show}");
    assert_eq!(stdout(&["runs", "delete", "1"]), "deleted replay run 1\n");
    assert_eq!(stdout(&["report"]).lines().count(), 2);
    let gone = nextedit(&["runs", "show", "1"], &db);
    assert_eq!(gone.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&gone.stderr),
        "nextedit: error: no replay run 1 in the database\n"
    );
}
