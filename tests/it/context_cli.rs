//! `nextedit context` on the ContextBench demo cases expressed as trajectories: the
//! reads of each case's prediction become Read events, its gold the trajectory's gold
//! context (or `--gold FILE`), and the scores equal the upstream evaluator's exactly.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::nextedit_bin;
use serde_json::{Value, json};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/contextbench-demo");

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// One step per predicted step: its first location a `request` read, the others
/// `target` reads of the same request; a file without spans is read file-only (an
/// empty line range). Steps are one second apart.
fn trajectory(pred: &Value, gold: Option<&Value>) -> Value {
    let mut events = Vec::new();
    let mut seq = 0;
    for (i, step) in pred["traj_data"]["pred_steps"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let mut locations = Vec::new();
        for file in step["files"].as_array().unwrap() {
            let file = file.as_str().unwrap();
            match step["spans"].get(file).and_then(Value::as_array) {
                Some(spans) => {
                    for s in spans {
                        let (a, b) = (s["start"].as_u64().unwrap(), s["end"].as_u64().unwrap());
                        locations.push((file, a - 1, b));
                    }
                }
                None => locations.push((file, 0, 0)),
            }
        }
        for (k, (file, start, end)) in locations.into_iter().enumerate() {
            seq += 1;
            events.push(json!({
                "seq": seq, "t_ms": i as f64 * 1000.0, "type": "read", "file": file,
                "lines": {"start": start, "end": end}, "via": format!("tool-{i}"),
                "role": if k == 0 { "request" } else { "target" },
            }));
        }
    }
    let file = |name: &str| json!({"path": name, "base_text": std::fs::read_to_string(Path::new(DEMO).join(name)).unwrap()});
    let mut t = json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": pred["instance_id"], "kind": "imported"},
        "files": [file("mod.py"), file("other.py")],
        "events": events,
    });
    if let Some(gold) = gold {
        let context: Vec<Value> = gold["gold_ctx"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                json!({"file": r["file"], "lines": {"start": r["start_line"].as_u64().unwrap() - 1, "end": r["end_line"]}})
            })
            .collect();
        t["gold"] = json!({"context": context, "source": "contextbench"});
    }
    t
}

fn run(args: &[&str]) -> Value {
    let out = Command::new(nextedit_bin())
        .arg("context")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn write(dir: &Path, name: &str, value: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).unwrap();
    path
}

#[test]
fn demo_cases_as_trajectories_match_the_reference_evaluator() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "case1_pred.jsonl",
            "case1_gold.jsonl",
            "case1_expected_results.jsonl",
        ),
        (
            "case2_pred.jsonl",
            "case2_gold.jsonl",
            "case2_expected_results.jsonl",
        ),
        (
            "case3_benchkit_converted_pred.jsonl",
            "case3_benchkit_gold.jsonl",
            "case3_expected_results.jsonl",
        ),
    ];
    for (pred, gold, expected) in cases {
        let pred = &jsonl(&Path::new(DEMO).join(pred))[0];
        let gold = &jsonl(&Path::new(DEMO).join(gold))[0];
        let expected = &jsonl(&Path::new(DEMO).join(expected))[0];
        let path = write(dir.path(), "t.json", &trajectory(pred, Some(gold)));
        let got = run(&[path.to_str().unwrap(), "--mode", "compat", "--json"]);
        let scores = &got["scores"];
        assert_eq!(got["gold_source"], "trajectory", "{expected}");
        assert_eq!(scores["num_steps"], expected["num_steps"], "{expected}");
        assert_eq!(scores["final"], expected["final"], "{expected}");
        assert_eq!(scores["trajectory"], expected["trajectory"], "{expected}");
    }
}

#[test]
fn gold_file_path_and_curve_files() {
    let dir = tempfile::tempdir().unwrap();
    let pred = &jsonl(&Path::new(DEMO).join("case1_pred.jsonl"))[0];
    let expected = &jsonl(&Path::new(DEMO).join("case1_expected_results.jsonl"))[0];
    let path = write(dir.path(), "t.json", &trajectory(pred, None));
    let gold = Path::new(DEMO).join("case1_gold.jsonl");
    let csv = dir.path().join("curve.csv");
    let got = run(&[
        path.to_str().unwrap(),
        "--gold",
        gold.to_str().unwrap(),
        "--instance",
        "demo__demo-1",
        "--mode",
        "compat",
        "--curve",
        csv.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(got["gold_source"], "file");
    assert_eq!(got["scores"]["final"], expected["final"]);
    assert_eq!(got["scores"]["trajectory"], expected["trajectory"]);
    // F1 of file granularity: coverage 1, precision 0.5.
    assert_eq!(got["scores"]["f1"]["file"], json!(2.0 / 3.0));
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap(),
        "step,t_ms,file,symbol,span,line\n\
         1,0,0,0,0,0\n\
         2,1000,1,0.3333333333333333,0.35555555555555557,0.4\n\
         3,2000,1,1,1,1\n\
         4,3000,1,1,1,1\n\
         5,4000,1,1,1,1\n"
    );
    // Fixed mode drops nothing here (every step names mod.py or other.py); the JSON
    // curve carries the same times.
    let curve = dir.path().join("curve.json");
    run(&[
        path.to_str().unwrap(),
        "--gold",
        gold.to_str().unwrap(),
        "--curve",
        curve.to_str().unwrap(),
        "--json",
    ]);
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&curve).unwrap()).unwrap();
    let times: Vec<f64> = c
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["t_ms"].as_f64().unwrap())
        .collect();
    assert_eq!(times, [0.0, 1000.0, 2000.0, 3000.0, 4000.0]);
}
