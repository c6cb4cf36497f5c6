//! `nextedit import zed-examples` and `export zed-examples` through the real binary, on
//! a repository the test makes and examples in Zed's format written here (several
//! alternatives, wrong `@@` numbers, marker lines, a missing repository, a missing
//! revision, an ambiguous hunk): sessions in a real SQLite file, replayed with
//! `builtin:oracle`, `builtin:noop` and a suggester answering the second alternative,
//! and the export read back to the same steps.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::git;
use crate::common::nextedit_with_db as run;
use serde_json::Value;

const CART: &str = "def total(items):\n    s = 0\n    for item in items:\n        s += item.price\n    return s\n\n\ndef count(items):\n    return len(items)\n";

/// REPOS/acme/shop with `cart.py` in one commit; returns its sha.
fn shop(repos: &Path) -> String {
    let repo = repos.join("acme/shop");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("cart.py"), CART).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "cart"]);
    git(&repo, &["rev-parse", "HEAD"])
}

/// An example renaming `s` to `acc`: the history renames its definition (hunk numbers
/// wrong on purpose), the two alternatives rename its uses (`+=`, or `= acc +`), the
/// second with a selection marker line.
fn rename_example(url: &str, revision: &str) -> String {
    format!(
        r#"+++
repository_url = "{url}"
revision = "{revision}"
+++

# shop--rename-accumulator

## Edit History

```diff
--- a/cart.py
+++ b/cart.py
@@ -40,3 +40,3 @@
 def total(items):
-    s = 0
+    acc = 0
     for item in items:
```

## Cursor Position

```cart.py
def total(items):
    acc = 0
#      ^[CURSOR_POSITION]
    for item in items:
```

## Expected Patch

```diff
--- a/cart.py
+++ b/cart.py
@@ -1,21 +1,21 @@
     for item in items:
-        s += item.price
-    return s
+        acc += item.price
+    return acc
```

```diff
--- a/cart.py
+++ b/cart.py
@@ -1,21 +1,21 @@
     for item in items:
-        s += item.price
-    return s
+        acc = acc + item.price
#        ---^[SELECTION]
+    return acc
```
"#
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

fn import(paths: &[&Path], repos: &Path, db: &Path) -> Output {
    let mut args = vec![
        "import",
        "zed-examples",
        "-q",
        "--repos",
        repos.to_str().unwrap(),
    ];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    run(&args, db)
}

/// The stored session `id` as JSON.
fn session(db: &Path, id: &str) -> Value {
    let out = run(&["sessions", "export", id], db);
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Exports every session of `db` into `out`, which must give the one file `name`;
/// returns its path.
fn export_one(db: &Path, out: &Path, name: &str) -> PathBuf {
    let output = run(
        &["export", "zed-examples", "--out", out.to_str().unwrap()],
        db,
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let file = out.join(name);
    assert_eq!(text(&output.stdout), format!("1\t{}\n", file.display()));
    file
}

/// Replays session 1 with `suggester` and returns (its step, the run's yardsticks).
fn replay(db: &Path, suggester: &str) -> (Value, Value) {
    let out = run(
        &[
            "replay",
            "-q",
            "--json",
            "--session",
            "1",
            "--suggester",
            suggester,
        ],
        db,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let replayed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let step = replayed["trajectories"][0]["steps"][0].clone();
    let run_id = replayed["summary"]["run"].to_string();
    let out = run(&["report", "--json", &run_id], db);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    (step, report["runs"][0]["results"]["yardsticks"].clone())
}

/// The spec of a suggester (`suggesters/fixed.py`) that answers `text` in place of the
/// lines `s` is used on (cart.py lines 3–4), the lines every alternative replaces.
fn answering(text: &str) -> String {
    let answer = serde_json::json!([{"file": "cart.py", "start_line": 3, "end_line": 5,
        "text": text, "confidence": 1.0}]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/fixed.py");
    format!("cmd:python3 '{}' '{answer}'", script.display())
}

/// A test's directory: `repos/acme/shop` made, a database path, and the renaming
/// example of that repository written as `shop--rename.md`.
struct Fixture {
    dir: tempfile::TempDir,
    repos: PathBuf,
    db: PathBuf,
    sha: String,
    example: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repos = dir.path().join("repos");
    let sha = shop(&repos);
    let example = write(
        dir.path(),
        "shop--rename.md",
        &rename_example("https://example.com/acme/shop", &sha),
    );
    Fixture {
        repos,
        db: dir.path().join("db.sqlite"),
        sha,
        example,
        dir,
    }
}

#[test]
fn an_example_imports_with_its_alternatives_and_replays_against_them() {
    let Fixture {
        repos,
        db,
        sha,
        example,
        dir: _dir,
    } = fixture();
    let out = import(&[&example], &repos, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("1\t{}\n", example.display()));

    let t = session(&db, "1");
    // The history's hunk found by its lines (not at line 40), then the first alternative.
    let edits: Vec<(&str, &str, &str)> = (t["edits"].as_array().unwrap().iter())
        .map(|e| {
            (
                e["id"].as_str().unwrap(),
                e["before_text"].as_str().unwrap(),
                e["after_text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        edits,
        [
            ("e0", "    s = 0\n", "    acc = 0\n"),
            (
                "e1",
                "        s += item.price\n    return s\n",
                "        acc += item.price\n    return acc\n"
            )
        ]
    );
    assert_eq!(t["edits"][1]["start_byte"], 53);
    assert_eq!(
        t["gold"],
        serde_json::json!({
            "next_edits": ["e1"],
            "source": "zed-example",
            "instance_id": "shop--rename",
            "alternatives": [{
                "of": "e1",
                "start_line": 3,
                "before_text": "        s += item.price\n    return s\n",
                "after_text": "        acc = acc + item.price\n    return acc\n"
            }]
        })
    );
    assert_eq!(
        t["session"]["repository_url"],
        "https://example.com/acme/shop"
    );
    assert_eq!(t["session"]["git_head"], sha.as_str());
    assert_eq!(t["files"][0]["base_text"], CART);
    assert_eq!(
        t["events"],
        serde_json::json!([{"seq": 0, "t_ms": 0.0, "type": "signal", "kind": "cursor",
                            "file": "cart.py", "payload": {"line": 1, "character": 7}}])
    );

    // The oracle answers the first alternative: a hit, delta-chrF 100.
    let (step, yardsticks) = replay(&db, "builtin:oracle");
    assert_eq!(step["predictions"][0]["class"], "flow_keeping");
    assert_eq!(step["content"]["bleu"], 100.0);
    assert_eq!(yardsticks["mean_delta_chrf"], 100.0);
    assert_eq!(yardsticks["location_accuracy"], 1.0);
    // Doing nothing scores below 100: no change where one was expected.
    let (step, yardsticks) = replay(&db, "builtin:noop");
    assert_eq!(step["predictions"], serde_json::json!([]));
    assert_eq!(step["content"]["bleu"], 0.0);
    assert_eq!(yardsticks["mean_delta_chrf"], 0.0);
    assert_eq!(yardsticks["location_accuracy"], 0.0);
    // The second alternative exactly: a hit too, scored against it (its closest).
    let spec = answering("        acc = acc + item.price\n    return acc\n");
    let (step, yardsticks) = replay(&db, &spec);
    assert_eq!(step["predictions"][0]["class"], "flow_keeping");
    assert_eq!(step["predictions"][0]["matched"], "e1");
    assert_eq!(step["content"]["bleu"], 100.0);
    assert_eq!(step["content"]["es"], 1.0);
    assert_eq!(step["content"]["answer"], 1);
    assert_eq!(yardsticks["mean_delta_chrf"], 100.0);
    assert_eq!(yardsticks["nep_partial_rate"], 1.0);
}

/// The stored `content_answer` of every step of run `run`, in step order.
fn stored_answers(db: &Path, run: i64) -> Vec<Option<i64>> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn
        .prepare("SELECT content_answer FROM run_steps WHERE run_id = ?1 ORDER BY step")
        .unwrap();
    statement
        .query_map([run], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_step_records_which_answer_it_was_scored_against() {
    let Fixture {
        dir,
        repos,
        db,
        example,
        ..
    } = fixture();
    // A third expected patch: the edit, alternative 1 and alternative 2.
    let third = "\n```diff\n--- a/cart.py\n+++ b/cart.py\n@@ -1,21 +1,21 @@\n     for item in items:\n-        s += item.price\n-    return s\n+        acc = item.price + acc\n+    return acc\n```\n";
    let body = std::fs::read_to_string(&example).unwrap() + third;
    let example = write(dir.path(), "shop--three.md", &body);
    let out = import(&[&example], &repos, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        session(&db, "1")["gold"]["alternatives"][1]["after_text"],
        "        acc = item.price + acc\n    return acc\n"
    );
    // A suggester answering the second alternative: scored against it, answer 2.
    let spec = answering("        acc = item.price + acc\n    return acc\n");
    let (step, yardsticks) = replay(&db, &spec);
    assert_eq!(step["predictions"][0]["matched"], "e1");
    assert_eq!(step["content"]["answer"], 2);
    assert_eq!(step["content"]["bleu"], 100.0);
    assert_eq!(yardsticks["mean_delta_chrf"], 100.0);
    assert_eq!(stored_answers(&db, 1), [Some(2)]);
    // The oracle answers the edit itself: answer 0.
    let (step, _) = replay(&db, "builtin:oracle");
    assert_eq!(step["content"]["answer"], 0);
    assert_eq!(stored_answers(&db, 2), [Some(0)]);
    // The HTML page's step says which alternative, and only for an alternative.
    let page = dir.path().join("report.html");
    let out = run(&["report", "1", "2", "--html", page.to_str().unwrap()], &db);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = std::fs::read_to_string(&page).unwrap();
    let against = "<summary>step 1: P 1.000, R 1.000, BLEU 100.0, ES 1.000 against alternative 2, 1 prediction</summary>";
    assert!(page.contains(against), "{page}");
    assert!(page.contains(
        "<summary>step 1: P 1.000, R 1.000, BLEU 100.0, ES 1.000, 1 prediction</summary>"
    ));
    // And in the exported steps' column.
    let out_dir = dir.path().join("results");
    let out = run(
        &[
            "export",
            "results",
            "--run",
            "1",
            "--format",
            "jsonl",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let line: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("data/train.jsonl")).unwrap())
            .unwrap();
    assert_eq!(
        (&line["content_answer"], &line["delta_chrf"]),
        (&serde_json::json!(2), &serde_json::json!(100.0))
    );
}

#[test]
fn a_batch_skips_bad_examples_and_names_why() {
    let Fixture {
        dir,
        repos,
        db,
        sha,
        example,
    } = fixture();
    let good = std::fs::read_to_string(example).unwrap();
    let examples = dir.path().join("examples");
    std::fs::create_dir(&examples).unwrap();
    write(&examples, "a-good.md", &good);
    write(
        &examples,
        "b-no-repo.md",
        &good.replace("acme/shop", "acme/gone"),
    );
    let missing = "0123456789abcdef0123456789abcdef01234567";
    write(&examples, "c-no-revision.md", &good.replace(&sha, missing));
    // A hunk whose only old line is a blank one: the file has two.
    let first = "     for item in items:\n-        s += item.price\n-    return s\n+        acc += item.price\n+    return acc\n";
    write(
        &examples,
        "d-ambiguous.md",
        &good.replace(first, "\n+# note\n"),
    );
    write(
        &examples,
        "e-not-found.md",
        &good.replace("-    s = 0\n", "-    t = 0\n"),
    );
    write(&examples, "notes.txt", "not an example");
    let out = import(&[&examples], &repos, &db);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("1\t{}\n", examples.join("a-good.md").display())
    );
    let e = |name: &str| examples.join(name).display().to_string();
    let shop_dir = repos.join("acme/shop").display().to_string();
    let gone = repos.join("acme/gone").display().to_string();
    assert_eq!(
        text(&out.stderr),
        format!(
            "skipped {}: repository https://example.com/acme/gone not found: looked in {gone} (and {gone}.git); give --fetch to clone it there\n\
             skipped {}: revision {missing} is not a commit of {shop_dir}\n\
             skipped {}: expected patch 1: hunk 1 of cart.py: its old lines are in the text 2 times\n\
             skipped {}: edit history: hunk 1 of cart.py: its old lines are not in the text\n\
             imported 1 of 5 examples (4 skipped)\n",
            e("b-no-repo.md"),
            e("c-no-revision.md"),
            e("d-ambiguous.md"),
            e("e-not-found.md"),
        )
    );
    // Nothing imported: a failure.
    let out = import(&[&examples.join("b-no-repo.md")], &repos, &db);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).ends_with("nextedit: error: no example could be imported\n"));
}

#[test]
fn a_missing_repository_is_fetched_from_a_local_url() {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    let sha = shop(&origin);
    let repos = dir.path().join("repos");
    let db = dir.path().join("db.sqlite");
    let url = format!("file://{}", origin.join("acme/shop").display());
    let example = write(dir.path(), "x.md", &rename_example(&url, &sha));
    let mut args = vec!["import", "zed-examples", "-q", "--fetch", "--repos"];
    args.push(repos.to_str().unwrap());
    args.push(example.to_str().unwrap());
    let out = run(&args, &db);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(repos.join("acme/shop.git").is_dir());
    assert_eq!(session(&db, "1")["files"][0]["base_text"], CART);
}

#[test]
fn a_fetch_never_lets_an_example_steer_git() {
    let dir = tempfile::tempdir().unwrap();
    let repos = dir.path().join("repos");
    // `ext::` runs a command; allowed in the user's configuration, it is still refused.
    let planted = dir.path().join("planted/acme");
    std::fs::create_dir_all(&planted).unwrap();
    let ext = format!("ext::sh -c touch% {}/shop", planted.display());
    let id = "a".repeat(40);
    let cases = [
        (
            ext.as_str(),
            id.as_str(),
            "fatal: transport 'ext' not allowed",
        ),
        (
            "--upload-pack=x/acme/shop",
            id.as_str(),
            "not a repository URL or commit id git may be given: `--upload-pack=x/acme/shop`",
        ),
        (
            "file:///nowhere/acme/shop",
            "--output=x",
            "not a repository URL or commit id git may be given: `--output=x`",
        ),
    ];
    for (k, (url, revision, reason)) in cases.into_iter().enumerate() {
        let example = write(
            dir.path(),
            &format!("x{k}.md"),
            &rename_example(url, revision),
        );
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(["import", "zed-examples", "-q", "--fetch", "--repos"])
            .args([&repos, &example])
            .arg("--db")
            .arg(dir.path().join("db.sqlite"))
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "protocol.ext.allow")
            .env("GIT_CONFIG_VALUE_0", "always")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{url}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(reason),
            "{url}: {}",
            text(&out.stderr)
        );
    }
    assert!(!planted.join("shop").exists(), "the ext:: command ran");
}

#[test]
fn an_exported_example_imports_to_the_same_steps() {
    let Fixture {
        dir,
        repos,
        db,
        example,
        ..
    } = fixture();
    assert!(import(&[&example], &repos, &db).status.success());
    let exported = export_one(&db, &dir.path().join("out"), "shop--rename.md");
    let again = dir.path().join("again.sqlite");
    let out = import(&[&exported], &repos, &again);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let steps = |t: Value| {
        let keep = ["edits", "gold", "files", "order", "events"];
        keep.map(|k| t[k].clone())
    };
    assert_eq!(steps(session(&db, "1")), steps(session(&again, "1")));
    // The exported history has its real hunk numbers.
    let written = std::fs::read_to_string(&exported).unwrap();
    assert!(
        written.contains("@@ -1,5 +1,5 @@\n def total(items):\n-    s = 0\n+    acc = 0\n"),
        "{written}"
    );
}

#[test]
fn a_derived_sessions_steps_export_as_examples_that_import_to_them() {
    let Fixture { dir, repos, db, .. } = fixture();
    let repo = repos.join("acme/shop");
    let second = CART
        .replace("    s = 0", "    acc = 0")
        .replace("    return len(items)", "    return len(list(items))");
    std::fs::write(repo.join("cart.py"), second).unwrap();
    git(&repo, &["commit", "-qam", "two"]);
    let out = run(
        &[
            "derive",
            "--commit",
            "HEAD",
            "--store",
            "--repo",
            repo.to_str().unwrap(),
        ],
        &db,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let step = export_one(&db, &dir.path().join("out"), "session-1-step-1.md");
    let written = std::fs::read_to_string(&step).unwrap();
    let url = format!("file://{}", repo.canonicalize().unwrap().display());
    assert!(
        written.starts_with(&format!("+++\nrepository_url = \"{url}\"\n")),
        "{written}"
    );
    // The step's example asks for the derived session's second edit, after its first.
    let again = dir.path().join("again.sqlite");
    let out = import(&[&step], &repos, &again);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let derived = session(&db, "1");
    let imported = session(&again, "1");
    let texts = |t: &Value| -> Vec<(String, String)> {
        (t["edits"].as_array().unwrap().iter())
            .map(|e| (e["before_text"].to_string(), e["after_text"].to_string()))
            .collect()
    };
    let (mut d, i) = (texts(&derived), texts(&imported));
    d.sort();
    let mut sorted = i.clone();
    sorted.sort();
    assert_eq!(d, sorted);
    assert_eq!(imported["gold"]["next_edits"], serde_json::json!(["e1"]));
}
