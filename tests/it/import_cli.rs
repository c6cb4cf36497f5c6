//! `nextedit import copilot|contextbench` through the real binary into real SQLite
//! files: exact imported events, edits and gold, exports valid against
//! schemas/trajectory.schema.json, batch errors, and ContextBench reads that score
//! exactly like the reference evaluator's results on the shared demo cases.

use crate::common::nextedit_with_db as run;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nextedit::core::metrics::contextbench::{
    ContextBenchConfig, Gold, GoldRegion, LineSpan, Mode, Prediction, RepoView, Step, evaluate,
    parse_predictions_jsonl,
};
use nextedit::core::trajectory::{EventBody, Trajectory, apply_byte_edit};
use serde_json::{Value, json};

const DEMO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/contextbench-demo/");

fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn demo(name: &str) -> PathBuf {
    PathBuf::from(format!("{DEMO}{name}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Exports a session, checks it against the schema, and returns it as JSON.
fn export(db: &Path, id: &str) -> Value {
    let out = run(&["sessions", "export", id], db);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let value: Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../../schemas/trajectory.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "session {id} export: {errors:#?}");
    value
}

/// Applies each file's change events to its base text: must give its final text.
fn assert_replays(trajectory: &Value) {
    let t: Trajectory = serde_json::from_value(trajectory.clone()).unwrap();
    for file in &t.files {
        let mut text = file.base_text.clone().unwrap();
        for e in &t.events {
            if let EventBody::Change(c) = &e.body
                && c.file == file.path
            {
                apply_byte_edit(&mut text, c.start_byte, c.end_byte, &c.before, &c.after).unwrap();
            }
        }
        assert_eq!(Some(&text), file.final_text.as_ref(), "{}", file.path);
    }
}

#[test]
fn copilot_recordings_import_exactly_and_a_bad_one_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let dir = data("tests/data/copilot");
    let out = run(&["import", "copilot", dir.to_str().unwrap()], &db);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "1\t{0}/notes-cjk.recording.w.json\n2\t{0}/point-3d.recording.w.json\n",
            dir.display()
        )
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "skipped {}/bad/overlap.recording.w.json: log entry 3 (changed): replacement 1 (3..5) is not sorted after, or overlaps, 0..4\n",
            dir.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("point-3d.recording.w.json: left out entries without a trajectory equivalent: 1 bookmark, 1 documentEvent\n"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("imported 2 of 3 recordings (1 skipped)\n"),
        "{stderr}"
    );

    let list = text(&run(&["sessions", "list"], &db).stdout);
    assert_eq!(
        list.lines().filter(|l| l.contains("  recorded  ")).count(),
        2,
        "{list}"
    );

    // Two documents (`\` and `../` paths, the latter mapped to `_up_/`), a two-replacement change around an emoji,
    // CJK text, typing coalesced into one edit, and a two-replacement next edit.
    let point = export(&db, "2");
    assert_replays(&point);
    assert_eq!(
        point["session"],
        json!({"id": "2", "kind": "recorded", "workspace": "/home/u/proj",
               "position_encoding": "utf-16", "started_at": "2024-11-07T10:04:32.000Z",
               "ended_at": "2024-11-07T10:04:41.400Z"})
    );
    assert_eq!(
        point["files"],
        json!([
            {"path": "src/point.ts", "uri": "file:///home/u/proj/src/point.ts",
             "base_text": "// 📍 point\nclass Point {\n  x = 0;\n}\n",
             "final_text": "// 📍 point\nclass Point3D {\n  x = 1;\n  y = 0;\n}\n"},
            {"path": "_up_/common/util.ts", "uri": "file:///home/u/proj/../common/util.ts",
             "base_text": "export const 名前 = '点';\n",
             "final_text": "export const 名前 = '点';\nexport const 😀 = 1;\n"}
        ])
    );
    let focus = |file: &str| json!({"focused": true, "textDocument": {"uri": format!("file:///home/u/proj/{file}")}});
    let change =
        |seq: u64, t: f64, file: &str, v: i64, b: [usize; 5], before: &str, after: &str| {
            json!({"seq": seq, "t_ms": t, "type": "change", "file": file, "version": v,
               "start_byte": b[0], "end_byte": b[1], "start_line": b[2], "end_line": b[3],
               "new_end_line": b[4], "before": before, "after": after, "origin": "user"})
        };
    assert_eq!(
        point["events"],
        json!([
            {"seq": 0, "t_ms": 200.0, "type": "open", "file": "src/point.ts", "version": 1},
            // Opening reads the whole document, as in a proxy recording.
            {"seq": 1, "t_ms": 200.0, "type": "read", "file": "src/point.ts",
             "lines": {"start": 0, "end": 5}, "via": "open", "role": "open"},
            {"seq": 2, "t_ms": 210.0, "type": "signal", "kind": "focus", "file": "src/point.ts",
             "payload": focus("src/point.ts")},
            // One entry [[18,23,"Point3D"],[32,33,"1"]] in UTF-16 → right to left in bytes.
            change(3, 3000.0, "src/point.ts", 2, [34, 35, 2, 2, 2], "0", "1"),
            change(4, 3000.0, "src/point.ts", 2, [20, 25, 1, 1, 1], "Point", "Point3D"),
            {"seq": 5, "t_ms": 3001.0, "type": "signal", "kind": "selection", "file": "src/point.ts",
             "payload": {"textDocument": {"uri": "file:///home/u/proj/src/point.ts"},
                         "selections": [{"start": {"line": 2, "character": 7},
                                         "end": {"line": 2, "character": 7}}]}},
            {"seq": 6, "t_ms": 4000.0, "type": "open", "file": "_up_/common/util.ts", "version": 1},
            {"seq": 7, "t_ms": 4000.0, "type": "read", "file": "_up_/common/util.ts",
             "lines": {"start": 0, "end": 2}, "via": "open", "role": "open"},
            {"seq": 8, "t_ms": 4010.0, "type": "signal", "kind": "focus", "file": "_up_/common/util.ts",
             "payload": focus("../common/util.ts")},
            change(9, 5000.0, "_up_/common/util.ts", 2, [29, 29, 1, 1, 2], "", "export const 😀 = 1;\n"),
            {"seq": 10, "t_ms": 8000.0, "type": "signal", "kind": "focus", "file": "src/point.ts",
             "payload": focus("src/point.ts")},
            change(11, 9000.0, "src/point.ts", 3, [39, 39, 3, 3, 3], "", "  y"),
            change(12, 9300.0, "src/point.ts", 4, [42, 42, 3, 3, 4], "", " = 0;\n"),
        ])
    );
    let edit = |id: &str,
                file: &str,
                kind: &str,
                bl: [usize; 2],
                al: [usize; 2],
                before: &str,
                after: &str| {
        json!({"id": id, "file": file, "kind": kind,
               "before_lines": {"start": bl[0], "end": bl[1]},
               "after_lines": {"start": al[0], "end": al[1]},
               "before_text": before, "after_text": after, "origin": "user"})
    };
    let with = |mut e: Value, key: &str, v: Value| {
        e[key] = v;
        e
    };
    let next = json!({"next_user_edit": true, "original_op_idx": 42});
    // Sequential coordinates: each edit's byte offset in the text the earlier ones left
    // (e0 and e1 come from one entry, right to left; e4 and e5 are the answer, in order).
    let mut edits = point["edits"].clone();
    let starts: Vec<Value> = edits
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .map(|e| e.as_object_mut().unwrap().remove("start_byte").unwrap())
        .collect();
    assert_eq!(
        starts,
        vec![
            json!(34),
            json!(20),
            json!(29),
            json!(39),
            json!(8),
            json!(50)
        ]
    );
    assert_eq!(
        edits,
        json!([
            with(
                edit("e0", "src/point.ts", "replace", [2, 3], [2, 3], "0", "1"),
                "events",
                json!([3])
            ),
            with(
                edit(
                    "e1",
                    "src/point.ts",
                    "replace",
                    [1, 2],
                    [1, 2],
                    "Point",
                    "Point3D"
                ),
                "events",
                json!([4])
            ),
            with(
                edit(
                    "e2",
                    "_up_/common/util.ts",
                    "insert",
                    [1, 2],
                    [1, 3],
                    "",
                    "export const 😀 = 1;\n"
                ),
                "events",
                json!([9])
            ),
            with(
                edit(
                    "e3",
                    "src/point.ts",
                    "insert",
                    [3, 4],
                    [3, 5],
                    "",
                    "  y = 0;\n"
                ),
                "events",
                json!([11, 12])
            ),
            // nextUserEdit [[6,11,"Point3D"],[46,46,"  z = 0;\n"]] against the final text.
            with(
                edit(
                    "e4",
                    "src/point.ts",
                    "replace",
                    [0, 1],
                    [0, 1],
                    "point",
                    "Point3D"
                ),
                "annotations",
                next.clone()
            ),
            with(
                edit(
                    "e5",
                    "src/point.ts",
                    "insert",
                    [4, 5],
                    [4, 6],
                    "",
                    "  z = 0;\n"
                ),
                "annotations",
                next
            ),
        ])
    );
    assert_eq!(
        point["gold"],
        json!({"next_edits": ["e4", "e5"], "source": "copilot-nes", "instance_id": "point-3d"})
    );
    assert_eq!(
        point["order"]["natural"],
        json!(["e0", "e1", "e2", "e3", "e4", "e5"])
    );

    // A `meta` log-origin instead of a header, CJK and emoji offsets, a time going
    // backwards, storeContent/restoreContent, NO_EDIT_EXPECTED.
    let notes = export(&db, "1");
    assert_replays(&notes);
    assert_eq!(notes["session"]["workspace"], "/w/notes");
    assert_eq!(
        notes["files"],
        json!([{"path": "docs/読む.md", "uri": "file:///w/notes/docs/読む.md",
                "base_text": "# 日本語 😀\n本文\n", "final_text": "# 日本語 😀\n本文\n"}])
    );
    let f = "docs/読む.md";
    let mut restore = change(
        5,
        600.0,
        f,
        4,
        [0, 15, 0, 0, 0],
        "> # 中文 🎉",
        "# 日本語 😀",
    );
    restore["origin"] = json!("external");
    assert_eq!(
        notes["events"],
        json!([
            {"seq": 0, "t_ms": 1.0, "type": "open", "file": f, "version": 1},
            {"seq": 1, "t_ms": 1.0, "type": "read", "file": f,
             "lines": {"start": 0, "end": 3}, "via": "open", "role": "open"},
            // Logged at time 998, after an entry at 1002: keeps t = 2.
            change(2, 2.0, f, 2, [2, 11, 0, 0, 0], "日本語", "中文"),
            change(3, 500.0, f, 3, [9, 13, 0, 0, 0], "😀", "🎉"),
            change(4, 500.0, f, 3, [0, 0, 0, 0, 0], "", "> "),
            restore,
            {"seq": 6, "t_ms": 601.0, "type": "signal", "kind": "selection", "file": f,
             "payload": {"textDocument": {"uri": "file:///w/notes/docs/読む.md"},
                         "selections": [
                             {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}},
                             {"start": {"line": 1, "character": 1}, "end": {"line": 2, "character": 0}}]}},
            {"seq": 7, "t_ms": 700.0, "type": "close", "file": f},
        ])
    );
    assert_eq!(notes["edits"].as_array().unwrap().len(), 4);
    assert_eq!(notes["edits"][3]["origin"], "external");
    assert_eq!(notes["edits"][3]["events"], json!([5]));
    assert_eq!(
        notes["gold"],
        json!({"source": "copilot-nes:no-edit-expected", "instance_id": "notes-cjk"})
    );
}

#[test]
fn copilot_errors_name_the_entry_and_fatal_inputs_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let bad = tmp.path().join("restore.recording.w.json");
    let log = json!({"log": [
        {"kind": "documentEncountered", "id": 0, "time": 1, "relativePath": "a.txt"},
        {"kind": "setContent", "id": 0, "time": 1, "content": "a😀b", "v": 1},
        {"kind": "changed", "id": 0, "time": 2, "edit": [[2, 2, "x"]], "v": 2},
    ]});
    std::fs::write(&bad, log.to_string()).unwrap();
    let out = run(&["import", "copilot", bad.to_str().unwrap()], &db);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!(
            "skipped {}: log entry 2 (changed): offset 2 splits a surrogate pair\nnextedit: [1/1] restore: skipped\nimported 0 of 1 recordings (1 skipped)\n",
            bad.display()
        )
    );
    let missing = tmp.path().join("nope.recording.w.json");
    let out = run(&["import", "copilot", missing.to_str().unwrap()], &db);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with(&format!("skipped cannot read {}", missing.display())));
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(&["import", "copilot", empty.to_str().unwrap()], &db);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "nextedit: error: no *recording.w.json files found\n"
    );
}

/// The demo repository: a directory with mod.py and other.py.
fn demo_repo(tmp: &Path) -> PathBuf {
    let repo = tmp.join("repo");
    std::fs::create_dir(&repo).unwrap();
    for f in ["mod.py", "other.py"] {
        std::fs::copy(demo(f), repo.join(f)).unwrap();
    }
    repo
}

struct Dir(PathBuf);

impl RepoView for Dir {
    fn read(&self, path: &str) -> Option<String> {
        matches!(path, "mod.py" | "other.py")
            .then(|| std::fs::read_to_string(self.0.join(path)).unwrap())
    }
}

/// The documented step convention read back: reads with equal `t_ms` form one step;
/// an empty line range names the file only; the final context is the union.
fn steps_of(trajectory: &Trajectory) -> (Vec<Step>, Step) {
    let mut steps: Vec<(f64, Step)> = Vec::new();
    for e in &trajectory.events {
        let EventBody::Read(r) = &e.body else {
            continue;
        };
        if steps.last().is_none_or(|(t, _)| *t != e.t_ms) {
            steps.push((e.t_ms, Step::default()));
        }
        let step = &mut steps.last_mut().unwrap().1;
        if !step.files.contains(&r.file) {
            step.files.push(r.file.clone());
        }
        if !r.lines.is_empty() {
            step.spans
                .entry(r.file.clone())
                .or_default()
                .push(LineSpan {
                    start: r.lines.start as i64 + 1,
                    end: r.lines.end as i64,
                });
        }
    }
    let steps: Vec<Step> = steps.into_iter().map(|(_, s)| s).collect();
    let mut fin = Step::default();
    let mut spans: BTreeMap<String, Vec<LineSpan>> = BTreeMap::new();
    for s in &steps {
        for f in &s.files {
            if !fin.files.contains(f) {
                fin.files.push(f.clone());
            }
        }
        for (f, v) in &s.spans {
            spans.entry(f.clone()).or_default().extend(v);
        }
    }
    fin.spans = spans;
    (steps, fin)
}

/// The instance id each expected result row carries.
fn want_id(expected: &str) -> &'static str {
    match &expected[..5] {
        "case1" => "demo__demo-1",
        "case2" => "demo__demo-2",
        _ => "demo__demo-3",
    }
}

fn gold_of(trajectory: &Trajectory, patch: &str) -> Gold {
    Gold {
        instance_id: trajectory.gold.instance_id.clone().unwrap(),
        keyed_inst_id: true,
        original_instance_id: None,
        init: trajectory
            .gold
            .context
            .iter()
            .map(|c| GoldRegion {
                file: c.file.clone(),
                start_line: c.lines.start as i64 + 1,
                end_line: c.lines.end as i64,
            })
            .collect(),
        add: Vec::new(),
        patch: patch.to_owned(),
    }
}

#[test]
fn contextbench_demo_cases_import_and_score_like_the_reference() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let repo = demo_repo(tmp.path());
    let repo_arg = repo.to_str().unwrap();
    let path = |n: &str| demo(n).display().to_string();
    for (gold, flag, reads, compat) in [
        ("case1_gold.jsonl", "--pred", "case1_pred.jsonl", false),
        ("case2_gold.jsonl", "--pred", "case2_pred.jsonl", false),
        (
            "case3_benchkit_gold.jsonl",
            "--trace",
            "case3_trace.jsonl",
            true,
        ),
    ] {
        let (g, r) = (path(gold), path(reads));
        let mut args = vec![
            "import",
            "contextbench",
            "--gold",
            &g,
            flag,
            &r,
            "--repo",
            repo_arg,
        ];
        if compat {
            args.push("--compat");
        }
        let out = run(&args, &db);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let list = text(&run(&["sessions", "list"], &db).stdout);
    assert_eq!(
        list.lines().filter(|l| l.contains("  imported  ")).count(),
        3,
        "{list}"
    );

    let read = |seq: u64, t: f64, file: &str, lines: [usize; 2], via: &str| {
        json!({"seq": seq, "t_ms": t, "type": "read", "file": file,
               "lines": {"start": lines[0], "end": lines[1]}, "via": via, "role": "target"})
    };
    let mod_py = std::fs::read_to_string(demo("mod.py")).unwrap();
    let other_py = std::fs::read_to_string(demo("other.py")).unwrap();

    let one = export(&db, "1");
    assert_eq!(
        one["gold"],
        json!({"context": [{"file": "mod.py", "lines": {"start": 3, "end": 5}},
                           {"file": "mod.py", "lines": {"start": 8, "end": 11}}],
               "source": "contextbench", "instance_id": "demo__demo-1"})
    );
    assert_eq!(
        one["events"],
        json!([
            read(0, 0.0, "other.py", [0, 0], "traj_data"),
            read(1, 1.0, "mod.py", [0, 6], "traj_data"),
            read(2, 2.0, "mod.py", [7, 12], "traj_data"),
            read(3, 3.0, "mod.py", [7, 12], "traj_data"),
            read(4, 4.0, "/testbed/mod.py", [0, 400], "traj_data"),
        ])
    );
    assert_eq!(
        one["files"],
        json!([{"path": "mod.py", "base_text": mod_py},
               {"path": "other.py", "base_text": other_py}])
    );
    assert_eq!(one["session"]["kind"], "imported");
    assert_eq!(
        one["session"]["git_head"],
        "22900eecacc95b38adcd46b3a957a15750b86896"
    );

    let two = export(&db, "2");
    assert_eq!(
        two["gold"]["context"],
        json!([{"file": "mod.py", "lines": {"start": 3, "end": 5}},
               {"file": "/workspace/run_test.py", "lines": {"start": 0, "end": 10}}])
    );
    assert_eq!(
        two["events"],
        json!([
            read(0, 0.0, "LOCAL_PATH", [0, 0], "traj_data"),
            read(1, 1.0, "mod.py", [0, 0], "traj_data"),
        ])
    );

    let three = export(&db, "3");
    assert_eq!(
        three["events"],
        json!([
            read(0, 0.0, "testbed", [0, 0], "Grep"),
            read(1, 1.0, "mod.py", [0, 0], "Read"),
            read(2, 2.0, "mod.py", [7, 12], "Bash"),
            read(3, 3.0, "mod.py", [3, 6], "Read"),
        ])
    );
    assert_eq!(
        three["files"],
        json!([{"path": "mod.py", "base_text": mod_py}])
    );

    // The default (fixed) conversion reads full-file reads and `nl -ba f | sed -n` too.
    let (g, r) = (path("case3_benchkit_gold.jsonl"), path("case3_trace.jsonl"));
    let args = [
        "import",
        "contextbench",
        "--gold",
        &g,
        "--trace",
        &r,
        "--repo",
        repo_arg,
    ];
    let out = run(&args, &db);
    assert_eq!(text(&out.stdout), "4\tdemo__demo-3\n");
    assert_eq!(
        export(&db, "4")["events"],
        json!([
            read(0, 0.0, "testbed", [0, 0], "Grep"),
            read(1, 1.0, "mod.py", [0, 18], "Read"),
            read(2, 2.0, "mod.py", [7, 12], "Bash"),
            read(3, 3.0, "mod.py", [3, 6], "Read"),
            read(4, 4.0, "mod.py", [0, 20], "Bash"),
        ])
    );

    // Read back with the step convention, the reference evaluator's numbers come out
    // exactly (patches come from the source rows: trajectories do not carry them).
    let compat = ContextBenchConfig {
        mode: Mode::Compat,
        ..Default::default()
    };
    let view = Dir(repo.clone());
    for (session, gold_file, pred_file, expected) in [
        (
            &one,
            "case1_gold.jsonl",
            "case1_pred.jsonl",
            "case1_expected_results.jsonl",
        ),
        (
            &two,
            "case2_gold.jsonl",
            "case2_pred.jsonl",
            "case2_expected_results.jsonl",
        ),
        (
            &three,
            "case3_benchkit_gold.jsonl",
            "case3_benchkit_converted_pred.jsonl",
            "case3_expected_results.jsonl",
        ),
    ] {
        let t: Trajectory = serde_json::from_value(session.clone()).unwrap();
        let source = parse_predictions_jsonl(&std::fs::read_to_string(demo(pred_file)).unwrap())
            .unwrap()
            .remove(0);
        let gold_row: Value =
            serde_json::from_str(std::fs::read_to_string(demo(gold_file)).unwrap().trim()).unwrap();
        let (steps, final_context) = steps_of(&t);
        assert_eq!(t.gold.instance_id.as_deref(), Some(want_id(expected)));
        let pred = Prediction {
            instance_id: t.gold.instance_id.clone().unwrap(),
            model_patch: source.model_patch.clone(),
            steps,
            final_context,
        };
        let gold = gold_of(&t, gold_row["patch"].as_str().unwrap());
        let got = serde_json::to_value(evaluate(&gold, &pred, &view, &compat).unwrap()).unwrap();
        let want: Value =
            serde_json::from_str(std::fs::read_to_string(demo(expected)).unwrap().trim()).unwrap();
        assert_eq!(got, want, "{expected}");
        // The same through `nextedit context` on the stored session.
        let id = session["session"]["id"].as_str().unwrap();
        let out = run(&["context", id, "--mode", "compat", "--json"], &db);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let context: Value = serde_json::from_slice(&out.stdout).unwrap();
        for key in ["num_steps", "final", "trajectory"] {
            assert_eq!(context["scores"][key], want[key], "{expected}: {key}");
        }
    }
}

#[test]
fn contextbench_batch_skips_bad_rows_and_unmatched_predictions() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let gold = tmp.path().join("gold.jsonl");
    std::fs::write(
        &gold,
        [
            r#"{"inst_id": "a", "gold_ctx": [{"file": "x.py", "start_line": 2, "end_line": 3}]}"#,
            "{not json",
            r#"{"inst_id": "b", "gold_ctx": [{"file": "y.py", "start_line": 0, "end_line": 3}]}"#,
            r#"{"inst_id": "c", "gold_ctx": []}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let pred = tmp.path().join("pred.jsonl");
    std::fs::write(
        &pred,
        [
            r#"{"instance_id": "a", "traj_data": {"pred_steps": [{"files": ["x.py", "z.py"], "spans": {"x.py": [{"start": 1, "end": 2}, {"start": 5, "end": 9}]}}, {"files": [], "spans": {}}]}}"#,
            r#"{"instance_id": "zz", "traj_data": {"pred_steps": []}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let out = run(
        &[
            "import",
            "contextbench",
            "--gold",
            gold.to_str().unwrap(),
            "--pred",
            pred.to_str().unwrap(),
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stdout), "1\ta\n2\tc\n");
    let g = gold.display();
    let p = pred.display();
    assert_eq!(
        text(&out.stderr),
        format!(
            "skipped {g}: line 2: invalid JSON: key must be a string at line 1 column 2\n\
             a: 1 empty steps left out\n\
             nextedit: [1/3] a: session 1\n\
             skipped b: gold region 0 (y.py): lines 0..=3 are not a 1-based inclusive range\n\
             nextedit: [2/3] b: skipped\n\
             c: no row of {p} matches; imported without reads\n\
             nextedit: [3/3] c: session 2\n\
             skipped zz: no gold row matches\n\
             imported 2 of 3 tasks (3 items skipped)\n"
        )
    );
    let a = export(&db, "1");
    assert_eq!(
        a["events"],
        json!([
            {"seq": 0, "t_ms": 0.0, "type": "read", "file": "x.py", "lines": {"start": 0, "end": 2}, "via": "traj_data", "role": "target"},
            {"seq": 1, "t_ms": 0.0, "type": "read", "file": "x.py", "lines": {"start": 4, "end": 9}, "via": "traj_data", "role": "target"},
            {"seq": 2, "t_ms": 0.0, "type": "read", "file": "z.py", "lines": {"start": 0, "end": 0}, "via": "traj_data", "role": "target"},
        ])
    );
    // Without --repo the files are listed by path, without text.
    assert_eq!(
        a["files"],
        json!([{"path": "x.py", "base_text": null}, {"path": "z.py", "base_text": null}])
    );
    assert_eq!(
        a["gold"],
        json!({"context": [{"file": "x.py", "lines": {"start": 1, "end": 3}}], "source": "contextbench", "instance_id": "a"})
    );
    let c = export(&db, "2");
    assert_eq!(c["events"], json!([]));
    assert_eq!(
        c["gold"],
        json!({"source": "contextbench", "instance_id": "c"})
    );
    // jsonl exports end with the gold.
    let out = run(&["sessions", "export", "1", "--format", "jsonl"], &db);
    let last = text(&out.stdout).lines().last().unwrap().to_owned();
    assert_eq!(
        serde_json::from_str::<Value>(&last).unwrap(),
        json!({"type": "gold", "gold": a["gold"]})
    );
}

#[test]
fn copilot_sessions_show_their_counts_and_score_with_nextedit_context() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let dir = data("tests/data/copilot");
    run(&["import", "copilot", dir.to_str().unwrap()], &db);
    // Raw changes and perceived edits apart; imported sessions count from their trajectory
    // (the two gold next edits are edits without changes).
    let show = text(&run(&["sessions", "show", "2"], &db).stdout);
    assert!(
        show.contains("  recorded    0 messages, 5 changes (6 edits), 2 reads, 4 signals, 0 dropped\n  documents   2\n"),
        "{show}"
    );
    let list = text(&run(&["sessions", "list"], &db).stdout);
    let row: Vec<&str> = list.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        &row[..8],
        [
            "2",
            "recorded",
            "2024-11-07T10:04:32.000Z",
            "ended",
            "0",
            "5",
            "6",
            "2"
        ]
    );
    let out = run(&["context", "2", "--json"], &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // Two opens (whole documents) and one caret position are the reads.
    assert_eq!(v["read_steps"], 3);
    assert_eq!(v["scores"]["step_times"], json!([200.0, 3001.0, 4000.0]));
    let f = &v["scores"]["final"];
    assert_eq!(
        f["file"],
        json!({"coverage": 1.0, "precision": 1.0, "f1": 1.0, "intersection": 2, "gold_size": 2, "pred_size": 2})
    );
    assert_eq!(
        (
            &f["line"]["intersection"],
            &f["line"]["gold_size"],
            &f["line"]["pred_size"]
        ),
        (&json!(4), &json!(4), &json!(7))
    );
    assert_eq!(
        v["scores"]["trajectory"]["auc_coverage"]["file"],
        json!(2.0 / 3.0)
    );
    // The notes session edits nothing that stays: no gold, but the read is still scored.
    let out = run(&["context", "1", "--json"], &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
