//! Reproducible runs through the real binary: the response cache (`--cache`), repetitions
//! with intervals (`--repetitions`) and `report --baseline`, with a real suggester
//! process whose answers vary from call to call (`suggesters/varying.py`, counting its
//! calls in a file). A cached re-run must give the very same numbers without asking
//! the suggester once; a read-only re-run that misses must fail naming the step.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::assert_estimate;

const TRAJECTORY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/snapshot-trajectory.json"
);

/// A database, the suggester's counter and call log, and its spec.
struct Setup {
    _dir: tempfile::TempDir,
    db: PathBuf,
    log: PathBuf,
    spec: String,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.jsonl");
        let spec = format!(
            "cmd:VARYING_STATE='{}' VARYING_LOG='{}' python3 '{}'",
            dir.path().join("counter").display(),
            log.display(),
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suggesters/varying.py")
        );
        Setup {
            db: dir.path().join("runs.db"),
            log,
            spec,
            _dir: dir,
        }
    }

    /// `nextedit replay` of `trajectory` with `extra` flags (the suggester writes its
    /// counter and log outside any sandbox).
    fn replay(&self, trajectory: &str, extra: &[&str]) -> Output {
        self.replay_with(&self.spec, trajectory, extra)
    }

    /// `nextedit replay` of `trajectory` through `suggester`.
    fn replay_with(&self, suggester: &str, trajectory: &str, extra: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(["replay", "--trajectory", trajectory, "--sandbox", "off"])
            .args(["--suggester", suggester, "--db"])
            .arg(&self.db)
            .args(extra)
            .output()
            .unwrap()
    }

    /// `nextedit report` with `args`, its stdout.
    fn report(&self, args: &[&str]) -> String {
        let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .arg("report")
            .args(args)
            .arg("--db")
            .arg(&self.db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// How many calls the suggester has answered so far.
    fn calls(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .count()
    }
}

fn ok(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The report's text with the spec and latencies masked (they differ run to run),
/// widths kept.
fn masked(text: &str, spec: &str) -> String {
    let latency = regex::Regex::new(r" *\d+\.\d+ / \d+\.\d+").unwrap();
    let text = text.replace(spec, "cmd:varying");
    let text = latency.replace_all(&text, |m: &regex::Captures| {
        format!("{:>width$}", "[ms] / [ms]", width = m[0].len())
    });
    let figure = regex::Regex::new(r"(?m)^((?:suggest|generate)_p\d\d_ms) .*$").unwrap();
    figure.replace_all(&text, "${1}  [ms]").into_owned()
}

/// `report --json` of `run` with latencies and identities masked.
fn masked_json(value: &Value, spec: &str) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| {
                    let v = match key.as_str() {
                        "started_at" => Value::from("[time]"),
                        "p50" | "p95" if v.is_number() => Value::from("[ms]"),
                        k if k.ends_with("_ms") && k.contains("_p") => Value::from("[ms]"),
                        _ => masked_json(v, spec),
                    };
                    (key.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| masked_json(v, spec)).collect()),
        Value::String(s) => Value::from(s.replace(spec, "cmd:varying")),
        other => other.clone(),
    }
}

/// The first run's object of `report --json` (one document: `runs`, `comparison`).
fn report_json(setup: &Setup, args: &[&str]) -> Value {
    let document: Value =
        serde_json::from_str(setup.report(&[&["--json"], args].concat()).trim()).unwrap();
    document["runs"][0].clone()
}

#[test]
fn a_cached_rerun_reproduces_every_repetition_without_asking_the_suggester() {
    let setup = Setup::new();
    // Three repetitions (runs 1, 2, 3) fill the cache: the answers differ between them.
    ok(&setup.replay(TRAJECTORY, &["--repetitions", "3"]));
    let asked = setup.calls();
    // initialize, 4 suggests, 3 generates (4 in the third repetition) and shutdown.
    assert_eq!(asked, 28);
    let first = report_json(&setup, &["1"]);
    assert_eq!(first["repetitions"], serde_json::json!([1, 2, 3]));
    insta::assert_json_snapshot!("repetitions_report_json", masked_json(&first, &setup.spec));
    insta::assert_snapshot!(
        "repetitions_report_text",
        masked(&setup.report(&["1"]), &setup.spec)
    );
    // The HTML page shows the mean over the repetitions and its interval (micro F1:
    // 0.127 [-0.147, 0.402] in the text report above).
    let page = setup.db.with_extension("html");
    setup.report(&["1", "--html", page.to_str().unwrap()]);
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains(
        "<span title=\"mean over the repetitions\">0.127</span> <span class=\"ci\">[-0.147, 0.402]</span>"
    ));
    // The yardsticks over the repetitions. Location accuracy 1/2, 1/4, 1/4 and NEP
    // position 1/2, 1/2, 1/4: s = 1/√48 for both, so each is its mean ± t₀.₉₇₅,₂ / 12.
    let t = 0.95 / (2.0f64 * 0.975 * 0.025).sqrt();
    assert_estimate(
        &first,
        "location_acc",
        &[0.5, 0.25, 0.25],
        1.0 / 3.0,
        t / 12.0,
    );
    assert_estimate(
        &first,
        "nep_position",
        &[0.5, 0.5, 0.25],
        5.0 / 12.0,
        t / 12.0,
    );
    assert_estimate(&first, "nep_partial", &[0.0, 0.0, 0.0], 0.0, 0.0);
    // delta-chrF: each repetition's mean as its own report gives it.
    let chrf: Vec<f64> = (1..=3)
        .map(|run| {
            report_json(&setup, &[&run.to_string()])["results"]["yardsticks"]["mean_delta_chrf"]
                .as_f64()
                .unwrap()
        })
        .collect();
    let mean = chrf.iter().sum::<f64>() / 3.0;
    let s = (chrf.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
    assert_estimate(&first, "mean_delta_chrf", &chrf, mean, t * s / 3f64.sqrt());
    assert_eq!(format!("{mean:.3}"), "20.325");
    // An unjudged run has no judge figures at all.
    let names: Vec<&String> = first["figures"].as_object().unwrap().keys().collect();
    assert!(!names.iter().any(|n| n.starts_with("judge_")), "{names:?}");
    assert!(page.contains(
        "<td><span title=\"mean over the repetitions\">0.333</span> <span class=\"ci\">[-0.025, 0.692]</span></td>"
    ));

    // The same command read-only (runs 4, 5, 6): no call at all, the same numbers.
    ok(&setup.replay(TRAJECTORY, &["--repetitions", "3", "--cache", "read-only"]));
    assert_eq!(setup.calls(), asked, "the suggester was asked");
    let cached = report_json(&setup, &["4"]);
    assert_eq!(cached["repetitions"], serde_json::json!([4, 5, 6]));
    // Every figure, latencies included: a served call reports the latency stored with it.
    assert_eq!(cached["figures"], first["figures"]);
    assert_eq!(
        cached["results"]["cache"],
        serde_json::json!({"mode": "read-only", "served": 8, "live": 0})
    );
    assert_eq!(
        first["results"]["cache"],
        serde_json::json!({"mode": "read-write", "served": 0, "live": 8})
    );
    // Against the first group as the baseline: identical, so nothing moved.
    let against = report_json(&setup, &["4", "--baseline", "1"]);
    for (name, figure) in against["figures"].as_object().unwrap() {
        assert_eq!(figure["delta"], serde_json::json!(0.0), "{name}");
        assert_eq!(figure["moved"], serde_json::json!(false), "{name}");
    }
    insta::assert_snapshot!(
        "baseline_report_text",
        masked(&setup.report(&["4", "--baseline", "1"]), &setup.spec)
    );
    // Single runs against the group: the group's interval decides. Run 7 asks the
    // suggester again (no cache) and stays within it; doing nothing (run 8) does not.
    ok(&setup.replay(TRAJECTORY, &["--cache", "off"]));
    assert!(setup.calls() > asked);
    ok(&setup.replay_with("builtin:noop", TRAJECTORY, &[]));
    insta::assert_snapshot!(
        "single_against_group_text",
        masked(&setup.report(&["7", "8", "--baseline", "1"]), &setup.spec)
    );
    let noop = report_json(&setup, &["8", "--baseline", "1"]);
    assert_eq!(noop["results"]["cache"]["mode"], "off");
    assert_eq!(noop["figures"]["mean_bleu"]["moved"], true);
    assert_eq!(noop["figures"]["flow_jumping"]["moved"], false);
}

/// `nextedit runs ARGS --db DB`: its stdout.
fn runs(setup: &Setup, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .arg("runs")
        .args(args)
        .arg("--db")
        .arg(&setup.db)
        .output()
        .unwrap();
    ok(&out);
    String::from_utf8(out.stdout).unwrap()
}

/// (id, repetition, repetition_of) of every run, from `runs list --json`, by id.
fn groups(setup: &Setup) -> Vec<(i64, i64, Option<i64>)> {
    let mut runs: Vec<(i64, i64, Option<i64>)> = runs(setup, &["list", "--jsonl"])
        .lines()
        .map(|l| {
            let run: Value = serde_json::from_str(l).unwrap();
            (
                run["id"].as_i64().unwrap(),
                run["repetition"].as_i64().unwrap(),
                run["repetition_of"].as_i64(),
            )
        })
        .collect();
    runs.sort();
    runs
}

#[test]
fn deleting_the_first_run_of_a_repetition_group_hands_the_group_to_the_next() {
    let setup = Setup::new();
    ok(&setup.replay_with("builtin:noop", TRAJECTORY, &["--repetitions", "3"]));
    assert_eq!(
        groups(&setup),
        [(1, 1, None), (2, 2, Some(1)), (3, 3, Some(1))]
    );
    // The group's first run goes: repetition 2 names the group, repetition 3 follows.
    assert_eq!(
        runs(&setup, &["delete", "1"]),
        "deleted replay run 1\nrun 2 now names the repetition group run 1 started\n"
    );
    assert_eq!(groups(&setup), [(2, 2, None), (3, 3, Some(2))]);
    assert_eq!(
        report_json(&setup, &["2"])["repetitions"],
        serde_json::json!([2, 3])
    );
    // Another repetition goes: nothing to hand on.
    assert_eq!(runs(&setup, &["delete", "3"]), "deleted replay run 3\n");
    assert_eq!(groups(&setup), [(2, 2, None)]);
    assert_eq!(
        report_json(&setup, &["2"])["repetitions"],
        serde_json::json!([2])
    );

    // A session delete takes every run that replayed the session: a group deleted
    // whole hands nothing on (and never to a run deleted with it).
    let mut repo = crate::derive_support::TestRepo::new();
    repo.write("a.py", "x = 0\n");
    repo.commit("base");
    repo.write("a.py", "x = 1\n");
    repo.commit("x = 1");
    let nextedit = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(args)
            .arg("--db")
            .arg(&setup.db)
            .output()
            .unwrap();
        ok(&out);
        String::from_utf8(out.stdout).unwrap()
    };
    let repo_path = repo.path().to_str().unwrap();
    nextedit(&["derive", "--repo", repo_path, "--commit", "HEAD", "--store"]);
    nextedit(&[
        "replay",
        "--session",
        "1",
        "--suggester",
        "builtin:noop",
        "--repetitions",
        "2",
        "-q",
    ]);
    assert_eq!(
        groups(&setup),
        [(2, 2, None), (4, 1, None), (5, 2, Some(4))]
    );
    assert_eq!(
        nextedit(&["sessions", "delete", "1"]),
        "deleted session 1\ndeleted replay run 4 (it held a copy)\ndeleted replay run 5 (it held a copy)\n"
    );
    assert_eq!(groups(&setup), [(2, 2, None)]);
}

#[test]
fn read_only_fails_on_a_miss_naming_the_step() {
    let setup = Setup::new();
    ok(&setup.replay(TRAJECTORY, &[]));
    let asked = setup.calls();
    // The same trajectory but edit e0 (applied at step 3) inserts another line: steps
    // 1 to 3 ask what was cached, step 4 does not.
    let dir = tempfile::tempdir().unwrap();
    let changed = dir.path().join("changed.json");
    let text = std::fs::read_to_string(TRAJECTORY)
        .unwrap()
        .replace("\"import math\\n\"", "\"import math as m\\n\"");
    std::fs::write(&changed, text).unwrap();
    let out = setup.replay(changed.to_str().unwrap(), &["--cache", "read-only"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "nextedit: skipping {}: cannot record step 4: not in the response cache (--cache read-only): `suggest` of step 4",
            changed.display()
        )),
        "{stderr}"
    );
    assert_eq!(setup.calls(), asked, "the suggester was asked");
    // The steps before the miss were stored, served from the cache.
    let conn = rusqlite::Connection::open(&setup.db).unwrap();
    let served: Vec<(i64, Option<i64>)> = conn
        .prepare("SELECT step, suggest_cached FROM run_steps WHERE run_id = 2 ORDER BY step")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(served, [(1, Some(1)), (2, Some(1)), (3, Some(1))]);
    // The cached answers quote the replayed files: deleting the run that stored them
    // deletes them.
    let entries = |conn: &rusqlite::Connection| -> i64 {
        conn.query_row("SELECT count(*) FROM response_cache", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(entries(&conn), asked as i64 - 1, "every call but shutdown");
    drop(conn);
    let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(["runs", "delete", "1", "--db"])
        .arg(&setup.db)
        .output()
        .unwrap();
    ok(&out);
    assert_eq!(entries(&rusqlite::Connection::open(&setup.db).unwrap()), 0);
}

#[test]
fn a_cache_database_carries_answers_to_another_run_database() {
    let setup = Setup::new();
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("answers.db");
    let shared_arg = shared.to_str().unwrap();
    ok(&setup.replay(TRAJECTORY, &["--cache-db", shared_arg]));
    let asked = setup.calls();
    let count = |db: &std::path::Path| -> i64 {
        rusqlite::Connection::open(db)
            .unwrap()
            .query_row("SELECT count(*) FROM response_cache", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!((count(&setup.db), count(&shared)), (0, asked as i64 - 1));
    // Another run database, read-only from the shared answers: nothing asked.
    let other = Setup {
        _dir: tempfile::tempdir().unwrap(),
        db: dir.path().join("other.db"),
        log: setup.log.clone(),
        spec: setup.spec.clone(),
    };
    ok(&other.replay(
        TRAJECTORY,
        &["--cache", "read-only", "--cache-db", shared_arg],
    ));
    assert_eq!(setup.calls(), asked);
    let figures = |s: &Setup| report_json(s, &["1"])["figures"].clone();
    assert_eq!(figures(&other), figures(&setup));
}
