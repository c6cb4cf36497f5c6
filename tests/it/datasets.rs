//! Datasets in and out through the real binary: `import historian-testset` fetching
//! local repositories (bare, plain path and file:// remotes; an unreachable repository,
//! a missing commit and a bad entry skipped and named), its commits then derived; and
//! `export trajectories|results` of real derived sessions and an oracle replay run,
//! loaded by the real Hugging Face `datasets` library (`.venv-datasets`) with exact
//! row counts and values; and `export tasks` of a task file built from `Task` values.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nextedit::engine::task::{Definition, DependencyLevel, TASK_FORMAT_VERSION, Task, TestRef};
use serde_json::{Value, json};

use crate::common::nextedit_output;
use crate::common::nextedit_with_db as run;
use crate::common::{Server, available};
use crate::derive_support::TestRepo;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A small Python project with a base commit and `changes` commits after it (commit
/// i changes line i of `app.py` and adds `mod{i}.py`: two edits each); returns the
/// repository and the commits after the base, oldest first.
fn project(changes: usize) -> (TestRepo, Vec<String>) {
    let mut repo = TestRepo::new();
    let lines: Vec<String> = (0..changes.max(1))
        .map(|i| format!("value_{i} = {i}\n"))
        .collect();
    repo.write("app.py", lines.concat());
    repo.commit("base");
    let mut commits = Vec::new();
    let mut current = lines;
    for i in 0..changes {
        current[i] = format!("value_{i} = {}\n", i * 10 + 7);
        repo.write("app.py", current.concat());
        repo.write(
            &format!("mod{i}.py"),
            format!("def f{i}():\n    return {i}\n"),
        );
        commits.push(repo.commit(&format!("change {i}")));
    }
    (repo, commits)
}

/// Copies `repo` to `dest` with `git clone` (`--bare` when asked).
fn clone_to(repo: &TestRepo, dest: &Path, bare: bool) {
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    let mut command = Command::new("git");
    command.args(["clone", "-q"]);
    if bare {
        command.arg("--bare");
    }
    let status = command.arg(repo.path()).arg(dest).status().unwrap();
    assert!(status.success());
}

/// The sample testset with each entry's URL pointing at a local remote, plus a bad
/// entry, a missing commit and an unreachable repository.
fn rewrite_testset(urls: &[String], extra: &[(&str, String)]) -> Value {
    let sample: Value =
        serde_json::from_str(include_str!("../data/historian-testset-sample.json")).unwrap();
    let mut testset = sample.clone();
    let mut next = urls.iter();
    for language in ["go", "python"] {
        for entry in testset[language].as_array_mut().unwrap() {
            entry["commit_url"] = json!(next.next().unwrap());
        }
    }
    for (language, url) in extra {
        let list = testset
            .as_object_mut()
            .unwrap()
            .entry(*language)
            .or_insert(json!([]));
        list.as_array_mut().unwrap().push(json!({
            "commit_url": url, "edit_order_seq": [], "edit_order_graph": null
        }));
    }
    testset
}

fn import(testset: &Path, clone_into: &Path) -> Output {
    nextedit_output(&[
        "import",
        "historian-testset",
        s(testset),
        "--clone-into",
        s(clone_into),
    ])
}

const MISSING: &str = "deadbeefdeadbeefdeadbeefdeadbeefdeadbeef";

#[test]
fn historian_testset_fetches_each_repository_once_and_names_each_failure() {
    let tmp = tempfile::tempdir().unwrap();
    let remotes = tmp.path().join("remotes");
    // The sample's repositories, as a bare remote (file:// URL, `.git` name), a plain
    // path and a bare remote named by its path.
    let (zulip, z) = project(2);
    let (posthog, p) = project(1);
    let (gvisor, g) = project(1);
    clone_to(&zulip, &remotes.join("zulip/zulip.git"), true);
    clone_to(&posthog, &remotes.join("PostHog/posthog"), false);
    clone_to(&gvisor, &remotes.join("google/gvisor"), true);
    let zulip_url = format!("file://{}", remotes.join("zulip/zulip.git").display());
    let posthog_url = remotes.join("PostHog/posthog").display().to_string();
    let gvisor_url = remotes.join("google/gvisor").display().to_string();
    let gone_url = format!("file://{}", remotes.join("acme/gone").display());
    let urls = [
        format!("{gvisor_url}/commit/{}", g[0]),
        format!("{zulip_url}/commit/{}", z[0]),
        format!("{zulip_url}/commit/{}", z[1]),
        format!("{posthog_url}/commit/{}", p[0]),
    ];
    let testset = rewrite_testset(
        &urls,
        &[
            ("go", format!("{gvisor_url}/commit/{MISSING}")),
            ("java", "https://github.com/a/b/commit/abc1234".into()),
            ("python", format!("{gone_url}/commit/{}", z[0])),
        ],
    );
    let file = tmp.path().join("testset.json");
    std::fs::write(&file, testset.to_string()).unwrap();
    let clones = tmp.path().join("clones");

    let out = import(&file, &clones);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let dir = |name: &str| clones.join(name).display().to_string();
    let expected_stdout = format!(
        "{0}\t{1}\tgo\n{2}\t{3}\tpython\n{2}\t{4}\tpython\n{5}\t{6}\tpython\n",
        dir("google/gvisor.git"),
        g[0],
        dir("zulip/zulip.git"),
        z[0],
        z[1],
        dir("PostHog/posthog.git"),
        p[0]
    );
    assert_eq!(text(&out.stdout), expected_stdout);
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 8, "{stderr}");
    assert_eq!(
        lines[..5],
        [
            format!(
                "skipped {}: java[0]: `https://github.com/a/b/commit/abc1234`: `abc1234` is not a full commit id (40 or 64 hex digits)",
                file.display()
            )
            .as_str(),
            "nextedit: [1/4] google/gvisor: 1 of 2 commits ready (1 fetched), 1 failed",
            "nextedit: [2/4] zulip/zulip: 2 of 2 commits ready (2 fetched)",
            "nextedit: [3/4] PostHog/posthog: 1 of 1 commits ready (1 fetched)",
            "nextedit: [4/4] acme/gone: 0 of 1 commits ready (0 fetched), 1 failed",
        ]
    );
    assert!(
        lines[5].starts_with(&format!("failed google/gvisor {MISSING}: "))
            && lines[5].contains(&format!("not our ref {MISSING}")),
        "{}",
        lines[5]
    );
    assert!(
        lines[6].starts_with(&format!("failed acme/gone ({gone_url}, all 1 commits): "))
            && lines[6].contains("does not appear to be a git repository"),
        "{}",
        lines[6]
    );
    assert_eq!(
        lines[7],
        format!(
            "4 of 6 commits ready in 3 of 4 repositories under {} (2 failed, 1 entries skipped)",
            clones.display()
        )
    );

    // The unreachable repository leaves no empty clone behind.
    assert!(!clones.join("acme/gone.git").exists());
    assert!(clones.join("acme").is_dir());

    // Only the commits and their parents were fetched: the clones are shallow.
    let shallow = std::fs::read_to_string(clones.join("zulip/zulip.git/shallow")).unwrap();
    assert_eq!(shallow.lines().count(), 1, "{shallow}");

    // Again: nothing new is fetched, the same commits are ready.
    let again = import(&file, &clones);
    assert_eq!(again.status.code(), Some(1), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), expected_stdout);
    assert!(
        text(&again.stderr)
            .contains("nextedit: [2/4] zulip/zulip: 2 of 2 commits ready (0 fetched)\n"),
        "{}",
        text(&again.stderr)
    );

    // Each ready commit derives from its clone.
    for (repo, sha, edits) in [
        ("zulip/zulip.git", &z[1], 2),
        ("google/gvisor.git", &g[0], 2),
        ("PostHog/posthog.git", &p[0], 2),
    ] {
        let out = nextedit_output(&["derive", "--repo", &dir(repo), "--commit", sha]);
        assert!(out.status.success(), "{repo}: {}", text(&out.stderr));
        let trajectory: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(trajectory["session"]["commit"]["sha"], json!(sha));
        assert_eq!(
            trajectory["edits"].as_array().unwrap().len(),
            edits,
            "{repo}"
        );
    }

    // A directory that is not the clone of the URL is never touched.
    let other = tmp.path().join("other");
    std::fs::create_dir_all(other.join("zulip/zulip.git")).unwrap();
    std::fs::write(other.join("zulip/zulip.git/notes.txt"), "mine").unwrap();
    let out = import(&file, &other);
    assert!(
        text(&out.stderr).contains(&format!(
            "failed zulip/zulip ({zulip_url}, all 2 commits): {} exists and is not a clone made by nextedit",
            other.join("zulip/zulip.git").display()
        )),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(
        std::fs::read_dir(other.join("zulip/zulip.git"))
            .unwrap()
            .count(),
        1
    );
}

#[test]
fn a_testset_of_which_nothing_can_be_fetched_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("testset.json");
    let url = format!("file://{}/acme/gone/commit/{MISSING}", tmp.path().display());
    std::fs::write(&file, json!({"go": [{"commit_url": url}]}).to_string()).unwrap();
    let out = import(&file, &tmp.path().join("clones"));
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).ends_with(&format!(
            "nextedit: error: no commit of {} could be fetched\n",
            file.display()
        )),
        "{}",
        text(&out.stderr)
    );

    std::fs::write(&file, "[1, 2]").unwrap();
    let out = import(&file, &tmp.path().join("clones"));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "nextedit: error: {}: not a Historian testset: expected an object of language → list of {{\"commit_url\": …}}\n",
            file.display()
        )
    );
}

/// Three repositories under `root` (alpha: 2 commits, beta and gamma: 1), each commit
/// derived and stored in `db`; returns the session ids in order.
fn stored_commits(root: &Path, db: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for (name, changes) in [("alpha", 2), ("beta", 1), ("gamma", 1)] {
        let (repo, commits) = project(changes);
        let dest = root.join(name);
        clone_to(&repo, &dest, false);
        for sha in commits {
            let out = run(
                &["derive", "--repo", s(&dest), "--commit", &sha, "--store"],
                db,
            );
            assert!(out.status.success(), "{}", text(&out.stderr));
            let stderr = text(&out.stderr);
            let id = stderr
                .split("as session ")
                .nth(1)
                .unwrap()
                .trim()
                .to_string();
            ids.push(id);
        }
    }
    ids
}

/// Loads `dir` with `datasets.load_dataset` and returns, per split, the row count,
/// the columns and the rows with `drop` columns left out.
fn load_with_datasets(dir: &Path, drop: &[&str]) -> Value {
    let tmp = tempfile::tempdir().unwrap();
    let script = r#"
import json, sys
import datasets
ds = datasets.load_dataset(sys.argv[1])
drop = set(sys.argv[2:])
out = {}
for name, split in ds.items():
    out[name] = {
        "num_rows": split.num_rows,
        "features": {k: str(v.dtype) for k, v in split.features.items()},
        "rows": [{k: v for k, v in row.items() if k not in drop} for row in split],
    }
print(json.dumps(out, sort_keys=True))
"#;
    let out = Command::new(hf_python())
        .arg("-c")
        .arg(script)
        .arg(dir)
        .args(drop)
        .env("HF_HOME", tmp.path())
        .env("HF_DATASETS_OFFLINE", "1")
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_HUB_DISABLE_TELEMETRY", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn hf_python() -> PathBuf {
    Server::HfDatasets.path()
}

#[test]
fn exported_trajectories_and_results_load_in_hugging_face_datasets() {
    if !available(
        "exported_trajectories_and_results_load_in_hugging_face_datasets",
        &[Server::HfDatasets],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("x.db");
    let ids = stored_commits(&tmp.path().join("repos"), &db);
    assert_eq!(ids, ["1", "2", "3", "4"]);

    // Trajectories as Parquet, split by repository.
    let out_dir = tmp.path().join("trajectories");
    let out = run(
        &[
            "export",
            "trajectories",
            "--out",
            s(&out_dir),
            "--split",
            "train=0.5,eval=0.5",
            "--by",
            "repo",
            "--seed",
            "3",
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{0}/data/train.parquet\t2 rows\t1 repositories\n{0}/data/eval.parquet\t2 rows\t2 repositories\n",
            out_dir.display()
        )
    );
    let loaded = load_with_datasets(&out_dir, &["trajectory", "commit", "parent"]);
    let row = |session: i64, repository: &str| {
        json!({"session": session, "kind": "commit", "repository": repository,
               "started_at": null, "files": 2, "events": 2, "edits": 2})
    };
    assert_eq!(
        loaded["train"]["rows"],
        json!([row(1, "alpha"), row(2, "alpha")])
    );
    assert_eq!(
        loaded["eval"]["rows"],
        json!([row(3, "beta"), row(4, "gamma")])
    );
    assert_eq!(loaded["train"]["num_rows"], 2);
    assert_eq!(
        loaded["eval"]["features"],
        json!({"session": "int64", "kind": "string", "repository": "string",
               "commit": "string", "parent": "string", "started_at": "string",
               "files": "int64", "events": "int64", "edits": "int64", "trajectory": "string"})
    );
    // The trajectory column is the whole document; commit and parent agree with it.
    let full = load_with_datasets(&out_dir, &[]);
    for r in full["train"]["rows"].as_array().unwrap() {
        let t: Value = serde_json::from_str(r["trajectory"].as_str().unwrap()).unwrap();
        assert_eq!(t["session"]["commit"]["sha"], r["commit"]);
        assert_eq!(t["session"]["commit"]["parent"], r["parent"]);
        assert_eq!(t["edits"].as_array().unwrap().len(), 2);
    }

    // One session as JSON Lines: the columns in order, one object per line.
    let one = tmp.path().join("one");
    let out = run(
        &[
            "export",
            "trajectories",
            "--session",
            "3",
            "--format",
            "jsonl",
            "--out",
            s(&one),
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{}/data/train.jsonl\t1 rows\t1 repositories\n",
            one.display()
        )
    );
    let jsonl = std::fs::read_to_string(one.join("data/train.jsonl")).unwrap();
    assert_eq!(jsonl.lines().count(), 1);
    let line: Value = serde_json::from_str(&jsonl).unwrap();
    assert!(
        jsonl.starts_with(&format!(
            "{{\"session\":3,\"kind\":\"commit\",\"repository\":\"beta\",\"commit\":{},\"parent\":{},\"started_at\":null,\"files\":2,\"events\":2,\"edits\":2,\"trajectory\":",
            line["commit"], line["parent"]
        )),
        "{jsonl}"
    );

    // An oracle replay of the four sessions, its steps as JSON Lines.
    let mut replay: Vec<&str> = vec!["replay", "--suggester", "builtin:oracle"];
    for id in &ids {
        replay.extend(["--session", id]);
    }
    let out = run(&replay, &db);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = tmp.path().join("results");
    let out = run(
        &[
            "export",
            "results",
            "--format",
            "jsonl",
            "--out",
            s(&results),
            "--split",
            "train=0.5,eval=0.5",
            "--seed",
            "3",
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{0}/data/train.jsonl\t2 rows\t1 repositories\n{0}/data/eval.jsonl\t2 rows\t2 repositories\n",
            results.display()
        )
    );
    let loaded = load_with_datasets(
        &results,
        &["suggest_ms", "generate_ms", "predictions", "commit"],
    );
    let steps: Vec<(String, String, i64, f64, i64)> = ["train", "eval"]
        .iter()
        .flat_map(|split| loaded[split]["rows"].as_array().unwrap().clone())
        .map(|r| {
            (
                r["repository"].as_str().unwrap().to_owned(),
                r["trajectory"].as_str().unwrap().to_owned(),
                r["step"].as_i64().unwrap(),
                r["recall"].as_f64().unwrap(),
                r["run"].as_i64().unwrap(),
            )
        })
        .collect();
    let step = |repo: &str, key: &str, step: i64| (repo.to_owned(), key.to_owned(), step, 1.0, 1);
    assert_eq!(
        steps,
        [
            step("alpha", "session:1", 1),
            step("alpha", "session:2", 1),
            step("beta", "session:3", 1),
            step("gamma", "session:4", 1),
        ]
    );
    assert_eq!(loaded["eval"]["features"]["content_bleu"], "float64");
    // The yardsticks, the answer scored against and the judge's verdict, as columns.
    let columns = [
        "content_answer",
        "delta_chrf",
        "nep_partial",
        "nep_position",
        "location_hit",
        "judge_yes",
        "judge_reverts_edits",
        "judge_confidence",
        "judge_failure",
    ];
    let kinds: Vec<&Value> = (columns.iter())
        .map(|c| &loaded["eval"]["features"][c])
        .collect();
    assert_eq!(
        kinds,
        [
            "int64", "float64", "int64", "int64", "int64", "int64", "int64", "int64", "string"
        ]
    );
    // The oracle: the edit itself, delta-chrF 100, both NEP matches, at the location;
    // no judge.
    for r in ["train", "eval"]
        .iter()
        .flat_map(|split| loaded[split]["rows"].as_array().unwrap().clone())
    {
        let values: Vec<Value> = columns.iter().map(|c| r[c].clone()).collect();
        assert_eq!(
            values,
            [
                json!(0),
                json!(100.0),
                json!(1),
                json!(1),
                json!(1),
                json!(null),
                json!(null),
                json!(null),
                json!(null)
            ],
            "{r}"
        );
    }
    // The oracle's one prediction per step is the applied gold edit, kept.
    let full = load_with_datasets(&results, &[]);
    for r in full["eval"]["rows"].as_array().unwrap() {
        let predictions: Value = serde_json::from_str(r["predictions"].as_str().unwrap()).unwrap();
        assert_eq!(predictions.as_array().unwrap().len(), 1, "{predictions}");
        assert_eq!(predictions[0]["rank"], 0);
        assert_eq!(predictions[0]["class"], "flow_keeping");
        assert_eq!(predictions[0]["matched"], r["applied"]);
        assert_eq!(
            (r["tp"].as_i64(), r["fp"].as_i64(), r["fn"].as_i64()),
            (Some(1), Some(0), Some(0))
        );
    }
    judged_steps_export_their_verdicts(&db, tmp.path());
    let card = std::fs::read_to_string(results.join("README.md")).unwrap();
    assert!(card.starts_with(
        "---\nlicense: other\npretty_name: nextedit results\ntags:\n- code\n- next-edit-suggestion\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: data/train.jsonl\n  - split: eval\n    path: data/eval.jsonl\n"
    ), "{card}");
    assert!(
        card.contains("| `content_answer` | int64 | yes | the right answer the content was scored against: 0 the gold edit, k its k-th alternative |\n| `delta_chrf` | float64 | yes |"),
        "{card}"
    );

    // The directory now holds a dataset: a second export refuses to write into it,
    // before it reads a single run.
    let out = run(&["export", "results", "--out", s(&results)], &db);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        format!(
            "nextedit: error: exporting results to {0}: {0}: not empty (an export writes only into a new or empty directory)\n",
            results.display()
        )
    );
}

/// An oracle replay of sessions 1 and 2 judged (`--judge`, nep; a fake endpoint saying
/// yes, then refusing), exported and loaded: each step's verdict in its columns.
fn judged_steps_export_their_verdicts(db: &Path, tmp: &Path) {
    use crate::replay_judge::{FakeJudge, Reply};
    let judge = FakeJudge::start(vec![
        Reply::Answer("Yes."),
        Reply::Answer("I cannot help with that."),
    ]);
    let spec = judge.spec("");
    let replay = [
        "replay",
        "-q",
        "--suggester",
        "builtin:oracle",
        "--session",
        "1",
        "--session",
        "2",
        "--judge",
        &spec,
        "--judge-prompt",
        "nep",
    ];
    let out = run(&replay, db);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let judged = tmp.join("judged");
    let out = run(
        &[
            "export",
            "results",
            "--run",
            "2",
            "--format",
            "jsonl",
            "--out",
            s(&judged),
        ],
        db,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let loaded = load_with_datasets(&judged, &[]);
    let verdicts: Vec<(Value, Value, Value, Value, Value)> = (loaded["train"]["rows"].as_array())
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["trajectory"].clone(),
                r["judge_yes"].clone(),
                r["judge_reverts_edits"].clone(),
                r["judge_confidence"].clone(),
                r["judge_failure"].clone(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [
            (
                json!("session:1"),
                json!(1),
                json!(null),
                json!(null),
                json!(null)
            ),
            (
                json!("session:2"),
                json!(null),
                json!(null),
                json!(null),
                json!("bad_result")
            ),
        ]
    );
}

/// A completion task of `repository` with the hole at `line` of `file` (read from its
/// JSON, so fields the task format gains with defaults need no change here).
fn task(repository: &str, line: usize, file: &str) -> Task {
    let commit = format!("{:0>40}", line);
    serde_json::from_value(json!({
        "version": TASK_FORMAT_VERSION,
        "id": format!("{repository}@{}:{file}:{line}:full_block", &commit[..12]),
        "repository": repository,
        "source": {"kind": "commit", "commit": commit},
        "language": "python",
        "scenario": "full_block",
        "state": {"commit": commit, "block": "function"},
        "file": file,
        "cursor": {"line": line, "column": 4},
        "prefix": "def f():\n    ",
        "suffix": "\n",
        "ground_truth": format!("return {line}"),
    }))
    .unwrap()
}

#[test]
fn exported_tasks_load_in_hugging_face_datasets_with_their_fields_as_columns() {
    if !available(
        "exported_tasks_load_in_hugging_face_datasets_with_their_fields_as_columns",
        &[Server::HfDatasets],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Four tasks of three repositories; the second has the optional fields the others
    // leave out, and line 3 of the file is not a task.
    let mut rich = task("alpha", 7, "b.py");
    rich.enclosing = Some(Definition {
        name: "f".into(),
        kind: "function".into(),
        start_line: 6,
        end_line: 8,
    });
    rich.dependency = Some(DependencyLevel::IntraFile);
    rich.tests = vec![TestRef {
        file: "test_b.py".into(),
        name: "test_f".into(),
    }];
    let tasks = [
        task("alpha", 1, "a.py"),
        rich,
        task("beta", 2, "c.py"),
        task("gamma", 3, "d.py"),
    ];
    let mut lines: Vec<String> = tasks
        .iter()
        .map(|t| serde_json::to_string(t).unwrap())
        .collect();
    lines.insert(2, "{\"id\": \"half a task\"}".to_owned());
    let file = tmp.path().join("tasks.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();

    let out_dir = tmp.path().join("tasks");
    let out = nextedit_output(&[
        "export",
        "tasks",
        "--from",
        s(&file),
        "--out",
        s(&out_dir),
        "--split",
        "train=0.5,eval=0.5",
        "--by",
        "repo",
        "--seed",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!(
            "{0}/data/train.parquet\t2 rows\t1 repositories\n{0}/data/eval.parquet\t2 rows\t2 repositories\n",
            out_dir.display()
        )
    );
    assert_eq!(
        text(&out.stderr),
        format!(
            "skipped {0}: line 3: not a task: missing field `version` at line 1 column 21\nexported 4 tasks (1 skipped) and {1}/README.md\n",
            file.display(),
            out_dir.display()
        )
    );
    let loaded = load_with_datasets(&out_dir, &["prefix", "suffix", "id"]);
    // The columns in the format's order, the ones only some tasks have included.
    assert_eq!(
        loaded["train"]["features"],
        json!({"version": "int64", "id": "string", "repository": "string",
               "source": "string", "language": "string", "scenario": "string",
               "state": "string", "file": "string", "cursor": "string",
               "prefix": "string", "suffix": "string", "ground_truth": "string",
               "enclosing": "string", "dependency": "string", "tests": "string"})
    );
    let row = |repository: &str, line: usize, file: &str| {
        let commit = format!("{:0>40}", line);
        json!({"version": 1, "repository": repository,
               "source": format!("{{\"kind\":\"commit\",\"commit\":\"{commit}\"}}"),
               "language": "python", "scenario": "full_block",
               "state": format!("{{\"commit\":\"{commit}\",\"block\":\"function\"}}"),
               "file": file, "cursor": format!("{{\"line\":{line},\"column\":4}}"),
               "ground_truth": format!("return {line}"),
               "enclosing": null, "dependency": null, "tests": null})
    };
    let mut rich_row = row("alpha", 7, "b.py");
    rich_row["enclosing"] =
        json!("{\"name\":\"f\",\"kind\":\"function\",\"start_line\":6,\"end_line\":8}");
    rich_row["dependency"] = json!("intra_file");
    rich_row["tests"] = json!("[{\"file\":\"test_b.py\",\"name\":\"test_f\"}]");
    assert_eq!(
        loaded["train"]["rows"],
        json!([row("alpha", 1, "a.py"), rich_row])
    );
    assert_eq!(
        loaded["eval"]["rows"],
        json!([row("beta", 2, "c.py"), row("gamma", 3, "d.py")])
    );
    // Every row reads back as the task it was (nested columns are JSON text).
    let full = load_with_datasets(&out_dir, &[]);
    let back: Vec<Task> = ["train", "eval"]
        .iter()
        .flat_map(|split| full[split]["rows"].as_array().unwrap().clone())
        .map(|mut row| {
            let row = row.as_object_mut().unwrap();
            row.retain(|_, v| !v.is_null());
            for (_, value) in row.iter_mut() {
                if let Some(nested) = value
                    .as_str()
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                    .filter(|v| v.is_object() || v.is_array())
                {
                    *value = nested;
                }
            }
            serde_json::from_value(Value::Object(row.clone())).unwrap()
        })
        .collect();
    assert_eq!(back, tasks);
    let card = std::fs::read_to_string(out_dir.join("README.md")).unwrap();
    assert!(card.contains("pretty_name: nextedit tasks\n"), "{card}");
    assert!(
        card.contains("| `enclosing` | string | yes | the innermost definition around the hole (name, kind, lines), JSON |\n"),
        "{card}"
    );

    // As JSON Lines: one object per task, the columns in order.
    let jsonl = tmp.path().join("jsonl");
    let out = nextedit_output(&[
        "export",
        "tasks",
        "--from",
        s(&file),
        "--format",
        "jsonl",
        "--out",
        s(&jsonl),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let first = std::fs::read_to_string(jsonl.join("data/train.jsonl")).unwrap();
    assert_eq!(first.lines().count(), 4);
    assert!(
        first.starts_with(&format!(
            "{{\"version\":1,\"id\":\"alpha@000000000000:a.py:1:full_block\",\"repository\":\"alpha\",\"source\":{},",
            json!(format!("{{\"kind\":\"commit\",\"commit\":\"{:0>40}\"}}", 1))
        )),
        "{first}"
    );

    // A file of which nothing is a task fails loudly.
    let bad = tmp.path().join("bad.jsonl");
    std::fs::write(&bad, "not json\n").unwrap();
    let out = nextedit_output(&[
        "export",
        "tasks",
        "--from",
        s(&bad),
        "--out",
        s(&tmp.path().join("none")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(&format!(
            "skipped {}: line 1: not a task: expected ident at line 1 column 2\n",
            bad.display()
        )),
        "{}",
        text(&out.stderr)
    );
}
