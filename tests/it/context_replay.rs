//! Replay with a suggester that reports what it read: the reads land in `run_reads`
//! and `nextedit report` scores them with ContextBench against the trajectory's edited
//! lines plus the definitions they use. Every number is computed by hand below.

use crate::common;

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

const BASE: &str =
    "def helper(x):\n    return x + 1\n\n\ndef f():\n    return 0\n\n\ndef g():\n    return 0\n";
const FINAL: &str = "def helper(x):\n    return x + 1\n\n\ndef f():\n    a = 1\n    return helper(a)\n\n\ndef g():\n    return helper(2)\n";

fn edit(
    id: &str,
    file: &str,
    before: (usize, usize),
    after: (usize, usize),
    b: &str,
    a: &str,
) -> Value {
    json!({"id": id, "file": file, "kind": "replace",
           "before_lines": {"start": before.0, "end": before.1}, "after_lines": {"start": after.0, "end": after.1},
           "before_text": b, "after_text": a})
}

fn nextedit(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// m.py and n.py with three edits; fixed order e1 (initial), e0 (step 1), e2 (step 2).
fn trajectory() -> Value {
    json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": "demo", "kind": "commit"},
        "files": [{"path": "m.py", "base_text": BASE, "final_text": FINAL},
                  {"path": "n.py", "base_text": "X = 1\n", "final_text": "X = 2\n"}],
        "events": [],
        "edits": [
            edit("e0", "m.py", (5, 6), (5, 7), "    return 0\n", "    a = 1\n    return helper(a)\n"),
            edit("e1", "m.py", (9, 10), (10, 11), "    return 0\n", "    return helper(2)\n"),
            edit("e2", "n.py", (0, 1), (0, 1), "X = 1\n", "X = 2\n"),
        ],
        // Fixed order: e1 is the initial edit, step 1 applies e0, step 2 applies e2.
        "order": {"natural": ["e1", "e0", "e2"]},
    })
}

type Row = (i64, i64, String, String, String, i64, Option<i64>);

fn run_reads(db: &Path) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.prepare("SELECT step, seq, call, source, file, start_line, end_line FROM run_reads WHERE run_id = 1 ORDER BY step, seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn reported_reads_are_stored_and_scored_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let trajectory = trajectory();
    let path = dir.path().join("t.json");
    std::fs::write(&path, trajectory.to_string()).unwrap();
    // Current coordinates. Step 1 (e1 applied, e0 not): m.py lines 0..2 and 5..6 (e0's
    // place) in suggest; m.py 8..10 (below e0, which adds a line) and all of n.py in
    // generate. Step 2 (e1, e0 applied): m.py 4..7 in suggest.
    let plan = json!({
        "1": {"suggest": [{"file": "m.py", "start_line": 0, "end_line": 2}, {"file": "m.py", "start_line": 5, "end_line": 6}],
              "generate": [{"file": "m.py", "start_line": 8, "end_line": 10}, {"file": "n.py", "start_line": 0}]},
        "2": {"suggest": [{"file": "m.py", "start_line": 4, "end_line": 7}]},
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/reader.py");
    let spec = format!(
        "cmd:READER_PLAN='{}' python3 '{}'",
        plan_path.display(),
        script.display()
    );
    let db = dir.path().join("runs.db");
    let db_s = db.to_str().unwrap();
    nextedit(&[
        "replay",
        "--db",
        db_s,
        "--jsonl",
        "--suggester",
        &spec,
        "--trajectory",
        path.to_str().unwrap(),
    ]);

    let rows = run_reads(&db);
    let row = |step, seq, call: &str, file: &str, start, end| {
        (
            step,
            seq,
            call.to_string(),
            "reported".to_string(),
            file.to_string(),
            start,
            end,
        )
    };
    assert_eq!(
        rows,
        [
            row(1, 0, "suggest", "m.py", 0, Some(2)),
            row(1, 1, "suggest", "m.py", 5, Some(6)),
            row(1, 2, "generate", "m.py", 8, Some(10)),
            row(1, 3, "generate", "n.py", 0, None),
            row(2, 0, "suggest", "m.py", 4, Some(7)),
        ]
    );

    let out = nextedit(&["report", "1", "--db", db_s, "--json"]);
    let report = serde_json::from_slice::<Value>(&out.stdout).unwrap()["runs"][0].clone();
    let cb = &report["contextbench"];
    assert_eq!(cb.as_array().unwrap().len(), 1);
    assert_eq!(cb[0]["key"], path.display().to_string());
    let s = &cb[0]["scores"];
    // Gold (final texts): m.py edited lines 6–7 and 11, n.py line 1, plus `helper`'s
    // definition (m.py 1–2) used by both m.py edits. m.py bytes: lines 1–2 = 0..=31
    // (32), 6–7 = 43..=73 (31), 11 = 85..=105 (21); n.py 0..=5 (6): 90 bytes, 6 lines,
    // symbols helper, f, g (each overlaps a gold span), 2 files.
    // Steps in final coordinates (e0 turns one line into two):
    //  1 suggest@1:  m.py 1–2, 6–7 (e0's place widens to its two final lines)
    //  2 generate@1: m.py 10–11 (current 9–10 shifted by e0), n.py 1
    //  3 suggest@2:  m.py 5–7
    assert_eq!(s["num_steps"], 3);
    let fin = &s["final"];
    let expect = |g: &str, inter: u64, gold: u64, pred: u64| {
        assert_eq!(
            (
                fin[g]["intersection"].as_u64(),
                fin[g]["gold_size"].as_u64(),
                fin[g]["pred_size"].as_u64()
            ),
            (Some(inter), Some(gold), Some(pred)),
            "{g}"
        );
        assert_eq!(
            fin[g]["precision"],
            json!(inter as f64 / pred as f64),
            "{g}"
        );
    };
    // Union: m.py lines 1–2, 5–7, 10–11 (7 lines; 32 + 40 + 30 bytes) and n.py 1 (6).
    expect("file", 2, 2, 2);
    expect("symbol", 3, 3, 3);
    expect("span", 90, 90, 108);
    expect("line", 6, 6, 8);
    // Cumulative coverage: step 1 files 1/2, symbols {helper, f} 2/3, bytes 63/90,
    // lines 4/6; step 2 adds g, 21 + 6 bytes, lines 11 and n.py 1: all 1; step 3: 1.
    let rows = [
        (0.5, 2.0 / 3.0, 63.0 / 90.0, 4.0 / 6.0),
        (1.0, 1.0, 1.0, 1.0),
        (1.0, 1.0, 1.0, 1.0),
    ];
    for (i, (f, sy, sp, l)) in rows.iter().enumerate() {
        assert_eq!(
            s["trajectory"]["steps"][i]["coverage"],
            json!({"file": f, "symbol": sy, "span": sp, "line": l})
        );
    }
    let auc = |pick: fn(&(f64, f64, f64, f64)) -> f64| {
        let mut sum = 0.0;
        for r in &rows {
            sum += pick(r);
        }
        sum / 3.0
    };
    assert_eq!(
        s["trajectory"]["auc_coverage"],
        json!({"file": auc(|r| r.0), "symbol": auc(|r| r.1), "span": auc(|r| r.2), "line": auc(|r| r.3)})
    );
    // Redundancy: files 1 + 2 + 1 (union 2); symbols 2 + 1 (g) + 1 (f) (union 3);
    // bytes 63 + 36 + 40 (union 108); lines 4 + 3 + 3 (union 8).
    assert_eq!(
        s["trajectory"]["redundancy"],
        json!({"file": 1.0 - 2.0 / 4.0, "symbol": 1.0 - 3.0 / 4.0, "span": 1.0 - 108.0 / 139.0, "line": 1.0 - 8.0 / 10.0})
    );
    // The table shows the same numbers.
    let text = String::from_utf8(nextedit(&["report", "1", "--db", db_s]).stdout).unwrap();
    assert!(text.contains("CONTEXT: what the suggester read"), "{text}");
    assert!(
        text.contains("1.000/1.000    1.000/1.000    1.000/0.833    1.000/0.750"),
        "{text}"
    );
    // Its STEPS are the trajectory's steps (ContextBench's own count is of the calls
    // that read: `num_steps` above).
    let row = text
        .lines()
        .skip_while(|l| !l.starts_with("CONTEXT"))
        .nth(2)
        .unwrap();
    assert_eq!(row.split_whitespace().nth(2), Some("2"), "{text}");
}

#[test]
fn reads_of_a_proxied_language_server_are_attributed_to_steps() {
    if !common::available(
        "reads_of_a_proxied_language_server_are_attributed_to_steps",
        &[common::Server::Pyright],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    std::fs::write(&path, trajectory().to_string()).unwrap();
    // Step 1 (current m.py: e1 applied, e0 not): definition on `helper` of
    // `    return helper(2)` (current line 9), then a hover on `helper`'s name in generate.
    // Step 2 (e0 applied): definition on `helper` of `    return helper(a)` (line 6).
    let plan = json!({
        "1": {"suggest": [["textDocument/definition", "m.py", 9, 11]],
              "generate": [["textDocument/hover", "m.py", 0, 4]]},
        "2": {"suggest": [["textDocument/definition", "m.py", 6, 11]]},
    });
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/lsp_reader.py");
    let spec = format!(
        "cmd:LSP_PLAN='{}' NEXTEDIT_BIN='{}' PYRIGHT='{}' python3 '{}'",
        plan_path.display(),
        env!("CARGO_BIN_EXE_nextedit"),
        common::pyright().display(),
        script.display()
    );
    let servers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/node_modules");
    let db = dir.path().join("runs.db");
    let db_s = db.to_str().unwrap();
    nextedit(&[
        "replay",
        "--db",
        db_s,
        "--jsonl",
        "--suggester",
        &spec,
        // The sandbox shows the suggester its program and the paths its command line
        // names; pyright's package is given explicitly.
        "--sandbox-ro",
        servers.to_str().unwrap(),
        "--trajectory",
        path.to_str().unwrap(),
    ]);
    // The proxy recorded, after each `$/nextedit/replayStep` marker (current coordinates):
    // step 1 suggest: the open of m.py (10 lines + the empty line after the last break),
    // the definition request on line 9 and its target, `helper`'s name on line 0; step 1
    // generate: the hover on line 0 and the range its answer names; step 2 suggest: the
    // request on line 6 and the same target.
    let row = |step, seq, call: &str, start, end| {
        (
            step,
            seq,
            call.to_string(),
            "lsp".to_string(),
            "m.py".to_string(),
            start,
            Some(end),
        )
    };
    assert_eq!(
        run_reads(&db),
        [
            row(1, 0, "suggest", 0, 11),
            row(1, 1, "suggest", 9, 10),
            row(1, 2, "suggest", 0, 1),
            row(1, 3, "generate", 0, 1),
            row(1, 4, "generate", 0, 1),
            row(2, 0, "suggest", 6, 7),
            row(2, 1, "suggest", 0, 1),
        ]
    );
    let out = nextedit(&["report", "1", "--db", db_s, "--json"]);
    let report = serde_json::from_slice::<Value>(&out.stdout).unwrap()["runs"][0].clone();
    let s = &report["contextbench"][0]["scores"];
    // Final coordinates (e0, unapplied at step 1, turns current line 5 into two): step 1
    // suggest reads m.py 1–12 (clipped to its 11 lines: all 106 bytes, helper, f, g),
    // 11 and 1; generate reads line 1; step 2 suggest lines 7 and 1. Gold as in the test
    // above: 6 lines (5 in m.py), 90 bytes (84 in m.py), 3 symbols, 2 files. n.py is never
    // read, so every step covers files 1/2, symbols 3/3, bytes 84/90, lines 5/6.
    assert_eq!(s["num_steps"], 3);
    let fin = &s["final"];
    for (g, inter, gold, pred) in [
        ("file", 1, 2, 1),
        ("symbol", 3, 3, 3),
        ("span", 84, 90, 106),
        ("line", 5, 6, 11),
    ] {
        assert_eq!(
            (
                fin[g]["intersection"].as_u64(),
                fin[g]["gold_size"].as_u64(),
                fin[g]["pred_size"].as_u64()
            ),
            (Some(inter), Some(gold), Some(pred)),
            "{g}"
        );
    }
    let step = json!({"file": 0.5, "symbol": 1.0, "span": 84.0 / 90.0, "line": 5.0 / 6.0});
    for i in 0..3 {
        assert_eq!(s["trajectory"]["steps"][i]["coverage"], step);
    }
    // Redundancy: files 1 + 1 + 1 (union 1); symbols 3 + 1 + 2 (helper; f and helper)
    // (union 3); bytes 106 + 15 + (21 + 15) (union 106); lines 11 + 1 + 2 (union 11).
    assert_eq!(
        s["trajectory"]["redundancy"],
        json!({"file": 1.0 - 1.0 / 3.0, "symbol": 1.0 - 3.0 / 6.0, "span": 1.0 - 106.0 / 157.0, "line": 1.0 - 11.0 / 14.0})
    );
}

/// A recorded session's edits are sequential, and with `--exclude-origin` the replay
/// applies tool edits between steps: the report rebuilds each step's state the same
/// way (here e2 rewrites the line the formatter, e1, rewrote, so it needs e1 first).
#[test]
fn reads_of_a_recorded_session_with_excluded_origins_are_scored() {
    let dir = tempfile::tempdir().unwrap();
    let seq_edit = |id: &str, start_byte: usize, line: usize, b: &str, a: &str, origin: &str| {
        json!({"id": id, "file": "m.py", "kind": "replace", "start_byte": start_byte,
               "before_lines": {"start": line, "end": line + 1}, "after_lines": {"start": line, "end": line + 1},
               "before_text": b, "after_text": a, "origin": origin})
    };
    let trajectory = json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": "rec", "kind": "recorded"},
        "files": [{"path": "m.py", "base_text": "def f():\n    return 0\n",
                   "final_text": "def f():\n    a = 2\n    return 0\n"}],
        "events": [],
        "edits": [
            seq_edit("e0", 9, 1, "", "  a = 1\n", "user"),
            seq_edit("e1", 9, 1, "  ", "    ", "format"),
            seq_edit("e2", 17, 1, "1", "2", "user"),
        ],
        "order": {"natural": ["e0", "e1", "e2"]},
    });
    let path = dir.path().join("t.json");
    std::fs::write(&path, trajectory.to_string()).unwrap();
    // Step 1 is asked after e0 and the formatter's e1: it reads "    a = 1" (line 1).
    let plan = json!({"1": {"suggest": [{"file": "m.py", "start_line": 1, "end_line": 2}]}});
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/reader.py");
    let spec = format!(
        "cmd:READER_PLAN='{}' python3 '{}'",
        plan_path.display(),
        script.display()
    );
    let db = dir.path().join("runs.db");
    let db_s = db.to_str().unwrap();
    let out = nextedit(&[
        "replay",
        "--db",
        db_s,
        "--jsonl",
        "--suggester",
        &spec,
        "--exclude-origin",
        "format",
        "--trajectory",
        path.to_str().unwrap(),
    ]);
    let steps: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "trajectory")
        .flat_map(|l| l["steps"].as_array().unwrap().clone())
        .collect();
    assert_eq!(
        steps
            .iter()
            .map(|s| s["applied"].clone())
            .collect::<Vec<_>>(),
        vec![json!("e2")]
    );
    let report =
        serde_json::from_slice::<Value>(&nextedit(&["report", "1", "--db", db_s, "--json"]).stdout)
            .unwrap()["runs"][0]
            .clone();
    let s = &report["contextbench"][0]["scores"];
    assert_eq!(s["num_steps"], 1);
    // Gold: the one line the session finally changed (line 1, "    a = 2"); the read
    // lands on it in the final text.
    let line = &s["final"]["line"];
    assert_eq!(
        (
            &line["intersection"],
            &line["gold_size"],
            &line["pred_size"]
        ),
        (&json!(1), &json!(1), &json!(1))
    );
}
