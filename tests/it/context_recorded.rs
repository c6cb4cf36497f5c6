//! `nextedit context` on a session recorded through the real proxy with real pyright:
//! a scripted client opens two files, reports visible ranges, hovers, goes to a
//! definition, then edits a function. Every number is computed by hand below.

use crate::common;

use std::process::Command;

use common::*;
use serde_json::{Value, json};

const UTIL: &str = "def helper(x):\n    return x + 1\n\n\ndef unused():\n    y = 2\n    return y\n";
const MAIN: &str =
    "from util import helper\n\n\ndef compute(a):\n    return a\n\n\ndef other():\n    return 1\n";

fn visible(uri: &str, end_line: u32) -> Value {
    json!({"textDocument": {"uri": uri},
           "ranges": [{"start": {"line": 0, "character": 0}, "end": {"line": end_line, "character": 0}}]})
}

#[test]
fn recorded_pyright_session_scores_by_hand() {
    if !available(
        "recorded_pyright_session_scores_by_hand",
        &[Server::Pyright],
    ) {
        return;
    }
    let pyright = pyright();
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("util.py"), UTIL).unwrap();
    std::fs::write(ws.join("main.py"), MAIN).unwrap();
    let db = tmp.path().join("rec.db");
    let mut server = Command::new(&pyright);
    server.arg("--stdio");
    let mut client = spawn_proxied(&db, &ws, server, &[]);
    client.initialize(&ws, TIMEOUT).expect("initialize");
    let (util, main) = (uri(&ws.join("util.py")), uri(&ws.join("main.py")));
    for (u, text) in [(&util, UTIL), (&main, MAIN)] {
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": u, "languageId": "python", "version": 1, "text": text}}),
            )
            .unwrap();
    }
    client
        .notify("$/nextedit/visibleRanges", visible(&main, 5))
        .unwrap();
    // On `helper` of `from util import helper`.
    client
        .request("textDocument/hover", at(&main, Pos(0, 17)), TIMEOUT)
        .expect("hover");
    let definition = client
        .request("textDocument/definition", at(&main, Pos(0, 17)), TIMEOUT)
        .expect("definition");
    assert_eq!(
        definition,
        json!([{"uri": util, "range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 10}}}])
    );
    client
        .notify("$/nextedit/visibleRanges", visible(&util, 3))
        .unwrap();
    // `return a` → `return helper(a)`.
    client
        .notify(
            "textDocument/didChange",
            did_change(
                &main,
                2,
                &TextChange {
                    start: Pos(4, 11),
                    end: Pos(4, 12),
                    text: "helper(a)",
                },
            ),
        )
        .unwrap();
    assert!(client.shutdown(TIMEOUT).expect("shutdown").success());

    let curve = tmp.path().join("curve.csv");
    let out = Command::new(nextedit_bin())
        .args(["context", "1", "--db"])
        .arg(&db)
        .arg("--curve")
        .arg(&curve)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();

    // Gold: the edited line (main.py line 5, 1-based) and the definition of what it
    // uses: `helper` → util.py lines 1–2 (`a` is a parameter, no definition).
    assert_eq!(got["gold_source"], "edits");
    assert_eq!(
        got["gold"],
        json!([{"file": "main.py", "start_line": 5, "end_line": 5},
               {"file": "util.py", "start_line": 1, "end_line": 2}])
    );
    // Steps (visible ranges were sent for both files, so the opens name files only):
    //  1 open util.py (file)        2 open main.py (file)
    //  3 visible main.py 1–5        4 hover main.py 1
    //  5 definition main.py 1 + its target util.py 1
    //  6 visible util.py 1–3
    let s = &got["scores"];
    assert_eq!(
        (got["read_steps"].as_u64(), s["num_steps"].as_u64()),
        (Some(6), Some(6))
    );
    // Bytes. main.py (final): line 1 = 0..=23, line 5 = 42..=62 (21 bytes), lines 1–5 =
    // 0..=62 (63). util.py: lines 1–2 = 0..=31 (32), line 1 = 0..=14 (15), lines 1–3 =
    // 0..=32 (33). Gold spans: 21 + 32 = 53; gold lines: 1 + 2 = 3.
    // Symbols: gold bytes overlap compute (26..62) and helper (0..31) → 2.
    // Final context = union of the steps: main.py lines 1–5, util.py lines 1–3:
    // 8 lines, 63 + 33 = 96 bytes, symbols compute and helper, files 2.
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
        assert_eq!(fin[g]["coverage"], json!(inter as f64 / gold as f64), "{g}");
        assert_eq!(
            fin[g]["precision"],
            json!(inter as f64 / pred as f64),
            "{g}"
        );
    };
    expect("file", 2, 2, 2);
    expect("symbol", 2, 2, 2);
    expect("span", 53, 53, 96);
    expect("line", 3, 3, 8);
    let f1 = |p: f64| 2.0 * 1.0 * p / (1.0 + p);
    assert_eq!(s["f1"]["line"], json!(f1(3.0 / 8.0)));
    assert_eq!(s["f1"]["span"], json!(f1(53.0 / 96.0)));
    // Cumulative coverage per step (file, symbol, span, line):
    //  1: 1/2, 0, 0, 0            2: 1, 0, 0, 0
    //  3: 1, 1/2, 21/53, 1/3      4: same (line 1 of main.py adds nothing)
    //  5: 1, 1, 36/53, 2/3        6: 1, 1, 1, 1
    let rows = [
        (0.5, 0.0, 0.0, 0.0),
        (1.0, 0.0, 0.0, 0.0),
        (1.0, 0.5, 21.0 / 53.0, 1.0 / 3.0),
        (1.0, 0.5, 21.0 / 53.0, 1.0 / 3.0),
        (1.0, 1.0, 36.0 / 53.0, 2.0 / 3.0),
        (1.0, 1.0, 1.0, 1.0),
    ];
    for (i, (f, sy, sp, l)) in rows.iter().enumerate() {
        assert_eq!(
            s["trajectory"]["steps"][i]["coverage"],
            json!({"file": f, "symbol": sy, "span": sp, "line": l}),
            "step {}",
            i + 1
        );
    }
    let auc = |pick: fn(&(f64, f64, f64, f64)) -> f64| {
        let mut sum = 0.0;
        for r in &rows {
            sum += pick(r);
        }
        sum / 6.0
    };
    assert_eq!(
        s["trajectory"]["auc_coverage"],
        json!({"file": auc(|r| r.0), "symbol": auc(|r| r.1), "span": auc(|r| r.2), "line": auc(|r| r.3)})
    );
    // Redundancy 1 − |∪|/Σ|step|. Files per step 1,1,1,1,2,1 (7; union 2). Symbols
    // 0,0,1,0,1,1 (3; union 2). Bytes 0,0,63,24,24+15,33 (159; union 96). Lines
    // 0,0,5,1,2,3 (11; union 8).
    assert_eq!(
        s["trajectory"]["redundancy"],
        json!({"file": 1.0 - 2.0 / 7.0, "symbol": 1.0 - 2.0 / 3.0,
               "span": 1.0 - 96.0 / 159.0, "line": 1.0 - 8.0 / 11.0})
    );
    // The curve's times are the recorded times of the steps, increasing.
    let text = std::fs::read_to_string(&curve).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "step,t_ms,file,symbol,span,line");
    assert_eq!(lines.len(), 7);
    let times: Vec<f64> = lines[1..]
        .iter()
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(lines[6].ends_with(",1,1,1,1"), "{}", lines[6]);
}
