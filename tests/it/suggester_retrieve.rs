//! `builtin:retrieve` on a commit of a real git repository the test builds: the same
//! change made in several similar functions, replayed with the retrieval baseline
//! and, beside it, `builtin:propagate`; the exact predictions, ranks and hits of each
//! step and the report of both runs.

use crate::cli_snapshots::masked_text;
use crate::common::{json_lines, nextedit_output as nextedit};
use crate::derive_support::TestRepo;

/// Three JSON loaders and an unrelated `banner` that opens a file the same way; the
/// commit makes the loaders read UTF-8 and drop empty rows (a changed line and an
/// inserted one in each), and leaves `banner` alone.
fn loaders_repo() -> TestRepo {
    let loader = |name: &str, class: &str, utf8: bool| {
        let (open, filter) = if utf8 {
            (
                "open(path, encoding=\"utf-8\")",
                "    rows = [r for r in rows if r]\n",
            )
        } else {
            ("open(path)", "")
        };
        format!(
            "def load_{name}(path):\n    with {open} as f:\n        rows = json.load(f)\n{filter}    return [{class}(**r) for r in rows]\n"
        )
    };
    let file = |utf8: bool| {
        format!(
            "import json\n\nfrom models import Order, User\n\n\n{}\n\n{}",
            loader("users", "User", utf8),
            loader("orders", "Order", utf8)
        )
    };
    let mut repo = TestRepo::new();
    repo.write("store/users.py", file(false));
    repo.write(
        "store/items.py",
        format!(
            "import json\n\nfrom models import Item\n\n\ndef banner(path):\n    with open(path) as f:\n        print(f.read())\n\n\n{}",
            loader("items", "Item", false)
        ),
    );
    repo.write(
        "models.py",
        "class User:\n    pass\n\n\nclass Order:\n    pass\n\n\nclass Item:\n    pass\n",
    );
    repo.commit("base");
    repo.write("store/users.py", file(true));
    repo.write(
        "store/items.py",
        format!(
            "import json\n\nfrom models import Item\n\n\ndef banner(path):\n    with open(path) as f:\n        print(f.read())\n\n\n{}",
            loader("items", "Item", true)
        ),
    );
    repo.commit("loaders read UTF-8 and skip empty rows");
    repo
}

/// Each step as `step applied: rank file:start-end class matched`, one prediction a line.
fn steps(trajectory: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for step in trajectory["steps"].as_array().unwrap() {
        out.push(format!("step {} applied {}", step["step"], step["applied"]));
        for p in step["predictions"].as_array().unwrap() {
            out.push(format!(
                "  {} {}:{}-{} {} {}",
                p["rank"], p["file"], p["start_line"], p["end_line"], p["class"], p["matched"]
            ));
        }
    }
    out
}

#[test]
fn retrieve_repeats_the_change_in_the_most_similar_functions() {
    let repo = loaders_repo();
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let replay = |suggester: &str| {
        json_lines(&nextedit(&[
            "replay",
            "--jsonl",
            "--repo",
            repo.path().to_str().unwrap(),
            "--commit",
            "HEAD",
            "--suggester",
            suggester,
            "--db",
            db.to_str().unwrap(),
        ]))
    };
    let retrieve = replay("builtin:retrieve");
    assert_eq!(retrieve[0]["sandbox"], "in-process");
    insta::assert_snapshot!("retrieve_steps", steps(&retrieve[1]).join("\n"));
    let propagate = replay("builtin:propagate");
    insta::assert_snapshot!("propagate_steps", steps(&propagate[1]).join("\n"));
    let report = nextedit(&["report", "--db", db.to_str().unwrap(), "1", "2"]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    // Trajectories are keyed `<repository directory>@<sha>`: the directory is a
    // temporary one (masked, width kept); the sha is fixed (hermetic commits).
    let dir_name = repo.path().file_name().unwrap().to_str().unwrap();
    let text = masked_text(&String::from_utf8(report.stdout).unwrap(), &db)
        .replace(dir_name, &format!("{:_<w$}", "[repo]", w = dir_name.len()));
    insta::assert_snapshot!("report", text);
}
