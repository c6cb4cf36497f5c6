//! A real editing session recorded through the proxy with real pyright (rename a
//! function, update its call sites, add a parameter, fix a typo, undo a change),
//! then replayed with `nextedit replay --session` by the oracle and by propagate.

use crate::common;
use crate::common::json_lines;
use crate::common::nextedit_output as nextedit;

use std::path::Path;

use common::{Doc, Pos, TIMEOUT, TextChange, pyright, spawn_proxied};
use serde_json::{Value, json};

const LIB: &str = "def compute_total(items):\n    return sum(items)\n\n\ndef average(items):\n    \"\"\"Avrage of the items.\"\"\"\n    return compute_total(items) / len(items)\n";
const MAIN: &str = "from lib import average, compute_total\n\nprint(compute_total([1, 2, 3]))\nprint(average([1, 2, 3]))\n";

/// Records the session; returns the database and the final texts.
fn record(workspace: &Path, db: &Path) -> (String, String) {
    std::fs::write(workspace.join("lib.py"), LIB).unwrap();
    std::fs::write(workspace.join("main.py"), MAIN).unwrap();
    let mut server = std::process::Command::new(pyright());
    server.arg("--stdio");
    let mut client = spawn_proxied(db, workspace, server, &[]);
    client.initialize(workspace, TIMEOUT).expect("initialize");
    let mut lib = Doc::open(&mut client, workspace.join("lib.py"));
    let mut main = Doc::open(&mut client, workspace.join("main.py"));
    // Look the function up before renaming it.
    client
        .request(
            "textDocument/references",
            json!({"textDocument": {"uri": lib.uri}, "position": {"line": 0, "character": 6},
                   "context": {"includeDeclaration": true}}),
            TIMEOUT,
        )
        .expect("references");
    // 1. Rename the function at its definition, 2–4. update the call sites.
    lib.retype(&mut client, 0, 4, 17, "sum_prices");
    lib.save(&mut client);
    lib.retype(&mut client, 6, 11, 24, "sum_prices");
    lib.save(&mut client);
    main.retype(&mut client, 0, 25, 38, "sum_prices");
    main.save(&mut client);
    main.retype(&mut client, 2, 6, 19, "sum_prices");
    main.save(&mut client);
    // 5–6. Add a parameter and use it.
    lib.retype(&mut client, 0, 20, 20, ", rate=1.0");
    lib.save(&mut client);
    lib.retype(&mut client, 1, 21, 21, " * rate");
    lib.save(&mut client);
    // 7. Fix the typo in the docstring.
    lib.retype(&mut client, 5, 9, 9, "e");
    lib.save(&mut client);
    // 8. Undo the use of the parameter (an editor's undo sends one change).
    lib.change(
        &mut client,
        TextChange {
            start: Pos(1, 21),
            end: Pos(1, 28),
            text: "",
        },
    );
    lib.save(&mut client);
    let status = client.shutdown(TIMEOUT).expect("shutdown");
    assert!(status.success());
    (lib.text, main.text)
}

/// Each step as (applied edit, precision, recall, predictions as (matched, class)).
type StepSummary = (String, f64, f64, Vec<(Option<String>, String)>);

fn steps(lines: &[Value]) -> Vec<StepSummary> {
    let trajectory = lines
        .iter()
        .find(|l| l["type"] == "trajectory")
        .expect("a trajectory line");
    trajectory["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["applied"].as_str().unwrap().to_string(),
                s["precision"].as_f64().unwrap(),
                s["recall"].as_f64().unwrap(),
                s["predictions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| {
                        (
                            p["matched"].as_str().map(str::to_string),
                            p["class"].as_str().unwrap().to_string(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn a_recorded_pyright_session_replays_with_oracle_and_propagate() {
    if !common::available(
        "a_recorded_pyright_session_replays_with_oracle_and_propagate",
        &[common::Server::Pyright],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let db = tmp.path().join("sessions.db");
    let (lib, main) = record(&workspace, &db);
    assert_eq!(
        lib,
        "def sum_prices(items, rate=1.0):\n    return sum(items)\n\n\ndef average(items):\n    \"\"\"Average of the items.\"\"\"\n    return sum_prices(items) / len(items)\n"
    );
    assert_eq!(main.matches("sum_prices").count(), 2);
    let db = db.to_str().unwrap();

    // The coalesced edits: one per logical change, in the order they were made.
    let export: Value =
        serde_json::from_slice(&nextedit(&["sessions", "export", "1", "--db", db]).stdout).unwrap();
    let edits: Vec<(&str, &str, &str, &str, u64)> = export["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap(),
                e["file"].as_str().unwrap(),
                e["before_text"].as_str().unwrap(),
                e["after_text"].as_str().unwrap(),
                e["before_lines"]["start"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        edits,
        vec![
            ("e0", "lib.py", "compute_total", "sum_prices", 0),
            ("e1", "lib.py", "compute_total", "sum_prices", 6),
            ("e2", "main.py", "compute_total", "sum_prices", 0),
            ("e3", "main.py", "compute_total", "sum_prices", 2),
            ("e4", "lib.py", "", ", rate=1.0", 0),
            ("e5", "lib.py", "", " * rate", 1),
            ("e6", "lib.py", "", "e", 5),
            ("e7", "lib.py", " * rate", "", 1),
        ]
    );
    assert_eq!(export["edits"][7]["annotations"]["reverts"], "e5");
    // Dependency edges from the same analysis as commits: the rename's clones and
    // def→use/import, the new parameter's uses; all mutual (bi).
    let edges: Vec<(&str, &str, Vec<&str>)> = export["order"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            assert_eq!(e["kind"], "bi");
            let mut kinds: Vec<&str> = e["reasons"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["kind"].as_str().unwrap())
                .collect();
            kinds.dedup();
            (
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
                kinds,
            )
        })
        .collect();
    assert_eq!(
        edges,
        vec![
            ("e0", "e1", vec!["def_use", "clone"]),
            ("e0", "e2", vec!["def_import", "clone"]),
            ("e0", "e3", vec!["def_use", "clone"]),
            ("e0", "e5", vec!["def_use"]),
            ("e0", "e7", vec!["def_use"]),
            ("e1", "e2", vec!["clone"]),
            ("e1", "e3", vec!["clone"]),
            ("e1", "e4", vec!["signature_call"]),
            ("e2", "e3", vec!["import_use", "clone"]),
            ("e2", "e4", vec!["def_import"]),
            ("e3", "e4", vec!["signature_call"]),
            ("e4", "e5", vec!["def_use"]),
            ("e4", "e7", vec!["def_use"]),
        ]
    );
    assert_eq!(export["order"]["initial"], json!(["e0"]));
    // A longer pause threshold changes nothing here (every change ends with a save);
    // a negative one is refused by name.
    let long_pause: Value = serde_json::from_slice(
        &nextedit(&[
            "sessions",
            "export",
            "1",
            "--db",
            db,
            "--pause-ms",
            "600000",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(long_pause["edits"], export["edits"]);
    let bad = nextedit(&["sessions", "export", "1", "--db", db, "--pause-ms=-5"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains(
            "invalid value '-5' for '--pause-ms <MS>': -5 is not a number of milliseconds from 0 to 86400000"
        )
    );
    assert_eq!(
        export["order"]["natural"],
        json!(["e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7"])
    );

    // The oracle in the recorded order: every step kept, P = R = 1.
    let oracle = json_lines(&nextedit(&[
        "replay",
        "--jsonl",
        "--session",
        "1",
        "--suggester",
        "builtin:oracle",
        "--db",
        db,
    ]));
    let oracle_steps = steps(&oracle);
    assert_eq!(
        oracle_steps
            .iter()
            .map(|s| (s.0.as_str(), s.1, s.2))
            .collect::<Vec<_>>(),
        vec![
            ("e1", 1.0, 1.0),
            ("e2", 1.0, 1.0),
            ("e3", 1.0, 1.0),
            ("e4", 1.0, 1.0),
            ("e5", 1.0, 1.0),
            ("e6", 1.0, 1.0),
            ("e7", 1.0, 1.0),
        ]
    );
    let offered: Vec<usize> = oracle_steps.iter().map(|s| s.3.len()).collect();
    // Allowed = the edits related to those applied; the undo (e7) rewrites e5's
    // line, so it is offered only once e5 is applied (step 6).
    assert_eq!(offered, vec![4, 4, 3, 2, 1, 1, 1]);
    assert_eq!(
        oracle_steps[4].3,
        vec![(Some("e5".into()), "flow_keeping".into())]
    );
    assert_eq!(
        oracle_steps[5].3,
        vec![(Some("e7".into()), "flow_keeping".into())]
    );

    let summary = oracle.iter().find(|l| l["type"] == "summary").unwrap();
    assert_eq!(summary["failed"], 0);

    // Propagate repeats the rename at the remaining call sites, nearest first: all
    // kept; recall is over the allowed edits (e1, e2, e3, e5 at the first step).
    let propagate = json_lines(&nextedit(&[
        "replay",
        "--jsonl",
        "--session",
        "1",
        "--suggester",
        "builtin:propagate",
        "--db",
        db,
    ]));
    let propagate_steps = steps(&propagate);
    let keep = |id: &str| (Some(id.to_string()), "flow_keeping".to_string());
    assert_eq!(
        propagate_steps,
        vec![
            (
                "e1".into(),
                1.0,
                0.75,
                vec![keep("e1"), keep("e2"), keep("e3")]
            ),
            ("e2".into(), 1.0, 0.5, vec![keep("e2"), keep("e3")]),
            ("e3".into(), 1.0, 1.0 / 3.0, vec![keep("e3")]),
            ("e4".into(), 0.0, 0.0, vec![]),
            ("e5".into(), 0.0, 0.0, vec![]),
            ("e6".into(), 0.0, 0.0, vec![]),
            ("e7".into(), 0.0, 0.0, vec![]),
        ]
    );

    // Where nothing kept the flow, propagate's generate leaves the location as it is:
    // ES 0 (BLEU only rewards the overlap with the old line).
    let contents: Vec<(String, f64, bool)> = propagate
        .iter()
        .find(|l| l["type"] == "trajectory")
        .unwrap()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let c = &s["content"];
            (
                c["edit"].as_str().unwrap().to_string(),
                c["es"].as_f64().unwrap(),
                c["generated"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        contents,
        ["e1", "e2", "e3", "e4", "e5", "e6", "e7"]
            .iter()
            .enumerate()
            .map(|(i, e)| (e.to_string(), if i < 3 { 1.0 } else { 0.0 }, i >= 3))
            .collect::<Vec<_>>()
    );
    // Micro: 6 kept of 6 predicted, of 4+4+3+2+1+1+1 = 16 allowed; macro recall is
    // the mean of 3/4, 2/4, 1/3 and four zeros.
    let summary = &propagate.iter().find(|l| l["type"] == "summary").unwrap()["summary"];
    assert_eq!(summary["micro"]["precision"], 1.0);
    assert_eq!(summary["micro"]["recall"], 6.0 / 16.0);
    let macro_recall = summary["macro"]["recall"].as_f64().unwrap();
    assert!((macro_recall - (0.75 + 0.5 + 1.0 / 3.0) / 7.0).abs() < 1e-12);
    assert_eq!(summary["hit_at"][0], json!([1, 3.0 / 7.0]));

    // Adaptive order follows the suggester; same result for the oracle.
    let adaptive = json_lines(&nextedit(&[
        "replay",
        "--jsonl",
        "--session",
        "1",
        "--suggester",
        "builtin:oracle",
        "--order",
        "adaptive",
        "--db",
        db,
    ]));
    let adaptive_steps = steps(&adaptive);
    assert_eq!(adaptive_steps.len(), 7);
    assert!(adaptive_steps.iter().all(|s| s.1 == 1.0 && s.2 == 1.0));
}
