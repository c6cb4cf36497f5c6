//! Issue 12 low items: gold regions past the end of their file are reported, and a
//! suggester's reads with paths outside the worktree, inverted ranges or lines past
//! the end of a file are left out of `run_reads` with a warning.

use crate::common::nextedit_output as nextedit;

use std::path::Path;

use serde_json::json;

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[test]
fn gold_regions_past_the_end_of_their_file_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.json");
    let trajectory = json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": "g", "kind": "imported"},
        "files": [{"path": "a.py", "base_text": "x = 1\ny = 2\nz = 3\n"}],
        "events": [{"seq": 0, "t_ms": 0.0, "type": "read", "file": "a.py",
                    "lines": {"start": 0, "end": 2}, "via": "open", "role": "target"}],
        "gold": {"context": [{"file": "a.py", "lines": {"start": 1, "end": 9}}]},
    });
    std::fs::write(&path, trajectory.to_string()).unwrap();
    let out = nextedit(&["context", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.ends_with(
            "  line       0.5000    0.5000   0.5000   0.5000     0.0000\n  gold regions past the end of their file (scored clipped): a.py 2..=9 (3 lines)\n"
        ),
        "{stdout}"
    );
}

#[test]
fn bad_suggester_reads_are_left_out_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let base = "a = 1\nb = 2\nc = 3\n";
    let trajectory = json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": "r", "kind": "commit"},
        "files": [{"path": "a.py", "base_text": base}],
        "events": [],
        "edits": [
            {"id": "e0", "file": "a.py", "kind": "replace", "before_lines": {"start": 0, "end": 1},
             "after_lines": {"start": 0, "end": 1}, "before_text": "a = 1\n", "after_text": "a = 10\n"},
            {"id": "e1", "file": "a.py", "kind": "replace", "before_lines": {"start": 2, "end": 3},
             "after_lines": {"start": 2, "end": 3}, "before_text": "c = 3\n", "after_text": "c = 30\n"},
        ],
        "order": {"edges": [], "initial": ["e0"], "natural": ["e0", "e1"]},
    });
    let path = dir.path().join("t.json");
    std::fs::write(&path, trajectory.to_string()).unwrap();
    let plan = json!({"1": {"suggest": [
        {"file": "./a.py", "start_line": 0, "end_line": 1},
        {"file": "a.py", "start_line": 2, "end_line": 1},
        {"file": "../x.py", "start_line": 0},
        {"file": "a.py", "start_line": 1, "end_line": 40},
        {"file": "other.py", "start_line": 7, "end_line": 9},
    ]}});
    let plan_path = dir.path().join("plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/reader.py");
    let spec = format!(
        "cmd:READER_PLAN='{}' python3 '{}'",
        plan_path.display(),
        script.display()
    );
    let db = dir.path().join("runs.db");
    let out = nextedit(&[
        "replay",
        "--db",
        db.to_str().unwrap(),
        "--suggester",
        &spec,
        "--trajectory",
        path.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let key = path.display();
    for line in [
        format!(
            "nextedit: {key} step 1: left out the suggester's suggest read a.py 2..1: the range ends before it starts\n"
        ),
        format!(
            "nextedit: {key} step 1: left out the suggester's suggest read ../x.py 0..: path \"../x.py\" leaves the workspace through `..`\n"
        ),
        format!(
            "nextedit: {key} step 1: left out the suggester's suggest read a.py 1..40: past the end of the file (3 lines now)\n"
        ),
    ] {
        assert!(stderr.contains(&line), "{stderr}");
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let rows: Vec<(String, i64, Option<i64>)> = conn
        .prepare("SELECT file, start_line, end_line FROM run_reads ORDER BY step, seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        rows,
        [
            ("a.py".to_string(), 0, Some(1)),
            ("other.py".to_string(), 7, Some(9)),
        ]
    );
}
