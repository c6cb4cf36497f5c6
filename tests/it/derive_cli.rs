//! The `derive` and `eval-order` commands end to end: flags are wired, a bad
//! commit in a range is reported and skipped, help teaches.

use crate::common::nextedit_output as nextedit;
use crate::derive_support;

use derive_support::TestRepo;

#[test]
fn range_says_what_it_selected_and_skips_merges() {
    let mut repo = TestRepo::new();
    repo.write("a.py", "a = 1\n");
    let base = repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.write("b.py", "b = 1\n");
    let side = repo.commit("side");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("a.py", "a = 2\n");
    let main = repo.commit("main");
    repo.git(&["merge", "-q", "--no-edit", "side"]);
    let merge = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("a.py", "a = 3\n");
    let last = repo.commit("after the merge");

    let out = tempfile::tempdir().unwrap();
    let range = format!("{base}..HEAD");
    let output = nextedit(&[
        "derive",
        "--repo",
        repo.path().to_str().unwrap(),
        "--range",
        &range,
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let stderr = String::from_utf8(output.stderr).unwrap();
    // Skipping a merge is what was asked for, not a failure.
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // Then one progress line per commit (stderr is a pipe), oldest first.
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 5, "{stderr}");
    assert_eq!(lines[0], format!("{range}: 3 commits, 1 merge skipped"));
    let mut derived: Vec<String> = Vec::new();
    for (i, line) in lines[1..4].iter().enumerate() {
        let prefix = format!("nextedit: [{}/3] ", i + 1);
        let sha = line
            .strip_prefix(&prefix)
            .unwrap()
            .strip_suffix(": derived");
        derived.push(sha.unwrap_or_else(|| panic!("{line}")).to_string());
    }
    derived.sort();
    let mut ten: Vec<String> = [&side, &main, &last].map(|s| s[..10].to_string()).to_vec();
    ten.sort();
    assert_eq!(derived, ten);
    assert_eq!(lines[4], "derived 3 of 3 commits (0 skipped)");
    let mut written: Vec<String> = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let mut expected = vec![
        format!("{side}.json"),
        format!("{main}.json"),
        format!("{last}.json"),
    ];
    expected.sort();
    assert_eq!(written, expected);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join(format!("{last}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(json["session"]["kind"], "commit");
    assert_eq!(json["edits"][0]["after_text"], "a = 3\n");

    // Ranges as git reads them; what each selected is said before any work.
    let selected = |range: &str, merges: &str| {
        let output = nextedit(&[
            "derive",
            "--repo",
            repo.path().to_str().unwrap(),
            "--range",
            range,
            "--merges",
            merges,
        ]);
        let stderr = String::from_utf8(output.stderr).unwrap();
        let trajectories: Vec<serde_json::Value> = String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (
            output.status.code(),
            stderr.lines().next().unwrap().to_string(),
            trajectories,
        )
    };
    // A single revision is it and all its ancestors, like `git log HEAD~1`.
    let (code, line, _) = selected("HEAD~1", "skip");
    assert_eq!(
        (code, line.as_str()),
        (Some(0), "HEAD~1: 3 commits, 1 merge skipped")
    );
    let (_, line, one) = selected("HEAD^!", "skip");
    assert_eq!(line, "HEAD^!: 1 commit");
    assert_eq!(one[0]["session"]["id"], last.as_str());
    let (_, line, _) = selected(&format!("{main}...{side}"), "skip");
    assert_eq!(line, format!("{main}...{side}: 2 commits"));
    let (_, line, _) = selected("HEAD..HEAD", "skip");
    assert_eq!(line, "HEAD..HEAD: 0 commits (the range is empty)");
    // First parent: the merge brings side's b.py into main.
    let (code, line, merged) = selected(&format!("{main}..{merge}"), "first-parent");
    assert_eq!(
        (code, line),
        (Some(0), format!("{main}..{merge}: 2 commits"))
    );
    let merge_trajectory = merged
        .iter()
        .find(|t| t["session"]["id"] == merge.as_str())
        .unwrap();
    assert_eq!(merge_trajectory["files"][0]["path"], "b.py");
    assert_eq!(merge_trajectory["edits"][0]["after_text"], "b = 1\n");
}

#[test]
fn single_commit_to_stdout_and_store_is_not_wired_yet() {
    let mut repo = TestRepo::new();
    repo.write("a.py", "a = 1\n");
    repo.commit("base");
    repo.write("a.py", "a = 2\n");
    let sha = repo.commit("change");
    let output = nextedit(&[
        "derive",
        "--repo",
        repo.path().to_str().unwrap(),
        "--commit",
        "HEAD",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["session"]["id"], sha.as_str());
    assert_eq!(json["order"]["natural"], serde_json::json!(["e0"]));

    // --store keeps it as a `commit` session that replays by id.
    let dbdir = tempfile::tempdir().unwrap();
    let db = dbdir.path().join("nextedit.db");
    let output = nextedit(&[
        "derive",
        "--repo",
        repo.path().to_str().unwrap(),
        "--commit",
        "HEAD",
        "--store",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        format!("stored {} as session 1\n", &sha[..10])
    );
    let list = nextedit(&["sessions", "list", "--json", "--db", db.to_str().unwrap()]);
    let sessions: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(
        (
            sessions[0]["kind"].as_str(),
            sessions[0]["git_head"].as_str()
        ),
        (Some("commit"), Some(sha.as_str()))
    );
    let replayed = nextedit(&[
        "replay",
        "--jsonl",
        "--suggester",
        "builtin:oracle",
        "--session",
        "1",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );

    // `--repo .` names the workspace by its absolute path, so the stored session still
    // finds it from elsewhere.
    let here = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(["derive", "--repo", ".", "--commit", "HEAD"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert_eq!(here.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&here.stdout).unwrap();
    assert_eq!(json["session"]["workspace"].as_str(), repo.path().to_str());

    let output = nextedit(&[
        "derive",
        "--repo",
        repo.path().to_str().unwrap(),
        "--commit",
        "nope",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "nextedit: error: cannot resolve revision \"nope\": revspec 'nope' not found; class=Reference (4); code=NotFound (-3)\n"
    );
}

#[test]
fn help_names_defaults_and_shows_an_example() {
    let output = nextedit(&["derive", "--help"]);
    let help = String::from_utf8(output.stdout).unwrap();
    for needle in [
        "Derive trajectories (edits and their natural partial order) from git commits",
        "[default: .]",
        "nextedit derive --repo ~/src/flask --range v3.0.0..v3.1.0 --out trajectories/",
        "Merge commits are refused.",
    ] {
        assert!(help.contains(needle), "missing {needle:?} in:\n{help}");
    }
    let output = nextedit(&["eval-order", "--help"]);
    let help = String::from_utf8(output.stdout).unwrap();
    assert!(
        help.contains("nextedit eval-order --annotations tests/data/editflow-sample/"),
        "{help}"
    );
    assert!(help.contains("unlisted pairs are no relation"), "{help}");
}

#[test]
fn order_from_replaces_the_derived_order() {
    let mut repo = TestRepo::new();
    repo.write("a.py", "a = 1\n\n\nb = 1\n\n\nc = 1\n");
    repo.commit("base");
    repo.write("a.py", "a = 2\n\n\nb = 2\n\n\nc = 2\n");
    repo.commit("three edits");
    let dir = tempfile::tempdir().unwrap();
    let editflow = dir.path().join("editflow.json");
    std::fs::write(
        &editflow,
        r#"{"partial_orders": [{"edit_hunk_pair": [2, 0], "edit_order": "0 before 1", "reason": "move"},
                               {"edit_hunk_pair": [0, 1], "edit_order": "bi-directional", "reason": "clone"}]}"#,
    )
    .unwrap();
    let historian = dir.path().join("historian.json");
    std::fs::write(
        &historian,
        r#"{"partial_orders": [{"src": 0, "tgt": 1, "reason": "x"}, {"src": 1, "tgt": 0, "reason": "x"},
                               {"src": 1, "tgt": 2, "reason": "y"}], "allowed_init_edits": [0]}"#,
    )
    .unwrap();
    let graph = dir.path().join("results.json");
    std::fs::write(
        &graph,
        r#"{"commit_sha": "x", "partial_order_graph": {"nodes": [], "edges": [{"src": 2, "tgt": 1, "reason": ""}]}}"#,
    )
    .unwrap();
    let repo_path = repo.path().to_str().unwrap();
    let order = |file: &std::path::Path| {
        let output = nextedit(&[
            "derive",
            "--repo",
            repo_path,
            "--commit",
            "HEAD",
            "--order-from",
            file.to_str().unwrap(),
        ]);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        json["order"].clone()
    };
    let from_editflow = order(&editflow);
    assert_eq!(from_editflow["source"], "editflow-annotation");
    assert_eq!(
        from_editflow["edges"],
        serde_json::json!([
            {"from": "e2", "to": "e0", "kind": "before", "reasons": [{"kind": "annotated", "detail": "move"}]},
            {"from": "e0", "to": "e1", "kind": "bi", "reasons": [{"kind": "annotated", "detail": "clone"}]}
        ])
    );
    assert_eq!(from_editflow["initial"], serde_json::json!(["e2"]));
    assert_eq!(
        from_editflow["natural"],
        serde_json::json!(["e2", "e0", "e1"])
    );
    let from_historian = order(&historian);
    assert_eq!(from_historian["source"], "historian");
    assert_eq!(
        from_historian["edges"],
        serde_json::json!([
            {"from": "e0", "to": "e1", "kind": "bi", "reasons": [{"kind": "historian", "detail": "x"}]},
            {"from": "e1", "to": "e2", "kind": "before", "reasons": [{"kind": "historian", "detail": "y"}]}
        ])
    );
    let from_graph = order(&graph);
    assert_eq!(
        from_graph["edges"],
        serde_json::json!([{"from": "e2", "to": "e1", "kind": "before"}])
    );
}

#[test]
fn eval_order_explains_with_a_repository_and_in_pure_json() {
    let mut repo = TestRepo::new();
    repo.write("a.py", "a = 1\n\n\nb = 1\n\n\nc = 1\n");
    repo.commit("base");
    repo.write("a.py", "a = 2\n\n\nb = 2\n\n\nc = 2\n");
    let sha = repo.commit("three edits");
    let dir = tempfile::tempdir().unwrap();
    let annotations = dir.path().join("annotations.json");
    std::fs::write(
        &annotations,
        serde_json::json!([
            {"commit_url": format!("https://example.invalid/o/r/commit/{sha}"),
             "partial_orders": [{"edit_hunk_pair": [0, 2], "edit_order": "0 before 1", "reason": "made up"}]},
            {"commit_url": "https://example.invalid/o/r/commit/0000000000000000000000000000000000000000"}
        ])
        .to_string(),
    )
    .unwrap();
    let args = |json: bool| {
        let mut a = vec![
            "eval-order",
            "--annotations",
            annotations.to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
            "--explain",
        ];
        if json {
            a.push("--json");
        }
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |json: bool| {
        let a = args(json);
        nextedit(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let output = run(true);
    // One commit cannot be found: exit 1, named on stderr; stdout is one JSON document.
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr,
        format!(
            "nextedit: [1/2] r-{sha}: 3 edits, 0 of 3 pairs agree\n\
             nextedit: [2/2] r-0000000000000000000000000000000000000000: skipped\n\
             skipped r-0000000000000000000000000000000000000000: \
             cannot resolve revision \"0000000000000000000000000000000000000000\"\n"
        )
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let name = format!("r-{sha}");
    let clone = |pair: &str, annotated: &str, reason: &str| {
        serde_json::json!({"commit": name, "pair": pair, "annotated": annotated, "reason": reason,
                           "derived": "bi-directional", "derived_reasons": ["clone:-1 +2"]})
    };
    assert_eq!(
        report["disagreements"],
        serde_json::json!([
            clone("e0-e1", "no relation", ""),
            clone("e0-e2", "lower before higher", "made up"),
            clone("e1-e2", "no relation", ""),
        ])
    );
    assert_eq!(report["skipped"].as_array().unwrap().len(), 1);
    let output = run(false);
    let text = String::from_utf8_lossy(&output.stdout);
    let explained: Vec<&str> = text.lines().take(3).collect();
    let line = |pair: &str, annotated: &str| {
        format!("{name} {pair}: annotated {annotated}, derived bi-directional [clone:-1 +2]")
    };
    assert_eq!(
        explained,
        [
            line("e0-e1", "no relation ()"),
            line("e0-e2", "lower before higher (made up)"),
            line("e1-e2", "no relation ()"),
        ]
    );
    assert!(
        text.contains("1 commits skipped (each named with its reason on stderr)"),
        "{text}"
    );
}

#[test]
fn eval_order_cross_validates_by_repository_with_intervals() {
    let samples = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/editflow-sample/");
    let output = nextedit(&[
        "eval-order",
        "--annotations",
        samples,
        "--cv",
        "repo",
        "--json",
    ]);
    // One EditFlow sample has an empty snapshot and is skipped (exit 1, named on stderr).
    assert_eq!(output.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let cv = &report["cross_validation"];
    let folds = cv["folds"].as_array().unwrap();
    assert_eq!(folds.len(), 27);
    // Chosen on the other repositories, every rule kind is kept in every fold (the
    // earlier test_impl rule was dropped in all 27: docs/derive.md).
    assert!(
        folds.iter().all(|f| f["dropped"] == serde_json::json!([])),
        "{folds:?}"
    );
    let figure = |f: &serde_json::Value| {
        (
            format!("{:.4}", f["value"].as_f64().unwrap()),
            format!("{:.4}", f["low"].as_f64().unwrap()),
            format!("{:.4}", f["high"].as_f64().unwrap()),
        )
    };
    let s = |v: &str| v.to_string();
    assert_eq!(
        figure(&cv["held_out"]["accuracy_all_pairs"]),
        (s("0.9202"), s("0.8967"), s("0.9419"))
    );
    assert_eq!(
        figure(&cv["held_out"]["related_f1"]),
        (s("0.8717"), s("0.8298"), s("0.9169"))
    );
    // Links per rule kind and how many of them are annotated related (test_impl's
    // precision fell on unseen commits before; it must stay calibrated).
    let rules: Vec<(String, u64, u64)> = cv["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["links"].as_u64().unwrap(),
                r["related"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(rules.contains(&(s("test_impl"), 3, 3)), "{rules:?}");
    assert_eq!(
        figure(&report["overall"]["intervals"]["accuracy_all_pairs"]),
        (s("0.9202"), s("0.8967"), s("0.9419"))
    );
}

#[test]
fn replay_ranges_skip_merges_with_one_summary_line() {
    let mut repo = TestRepo::new();
    repo.write("a.py", "a = 1\n");
    let base = repo.commit("base");
    repo.git(&["checkout", "-q", "-b", "side"]);
    repo.write("b.py", "b = 1\n");
    repo.commit("side");
    repo.git(&["checkout", "-q", "main"]);
    repo.write("a.py", "a = 2\n");
    let main = repo.commit("main");
    repo.git(&["merge", "-q", "--no-edit", "side"]);
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("n.db");
    let replay = |range: &str| {
        nextedit(&[
            "replay",
            "--db",
            db.to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
            "--range",
            range,
            "--suggester",
            "builtin:noop",
        ])
    };
    let output = replay(&format!("{base}..HEAD"));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.lines().next(),
        Some(format!("nextedit: {base}..HEAD: 2 commits, 1 merge skipped").as_str())
    );
    assert!(!stderr.contains("is a merge"), "{stderr}");
    // Only a merge in the range: said, and not a failure.
    let output = replay(&format!("{main}..HEAD^1"));
    let output2 = replay("HEAD^!");
    for (output, range) in [
        (output, format!("{main}..HEAD^1")),
        (output2, "HEAD^!".to_string()),
    ] {
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(
            stderr.starts_with(&format!("nextedit: {range}: ")),
            "{stderr}"
        );
    }
}
