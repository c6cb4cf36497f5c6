//! Issue 12 item 1: nothing from outside makes replay write or delete a file outside
//! its scratch directory. Crafted Copilot recordings and trajectories go through the
//! real binary into real SQLite files; files planted outside must stay untouched and
//! the errors must name the input.

use crate::common;
use crate::common::nextedit_with_db as run;

use std::process::Command;

use common::{git, nextedit_bin};
use nextedit::core::trajectory::{Edit, FileEntry, SessionInfo, SessionKind, Trajectory};
use serde_json::{Value, json};

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A Copilot recording with one document at `relative_path`, typed into once.
fn recording(relative_path: &str, time: f64) -> String {
    json!({"log": [
        {"kind": "header", "repoRootUri": "file:///home/u/proj", "time": time},
        {"kind": "documentEncountered", "id": 0, "time": time, "relativePath": relative_path},
        {"kind": "setContent", "id": 0, "time": time, "content": "x = 1\n", "v": 1},
        {"kind": "changed", "id": 0, "time": time + 1000.0, "edit": [[0, 0, "y = 2\n"]], "v": 2},
    ]})
    .to_string()
}

#[test]
fn copilot_paths_outside_the_root_never_reach_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("n.db");
    let outside = tmp.path().join("v");
    std::fs::create_dir(&outside).unwrap();
    let important = outside.join("important.txt");
    std::fs::write(&important, "keep me\n").unwrap();

    let dir = tmp.path().join("recordings");
    std::fs::create_dir(&dir).unwrap();
    let absolute = important.to_str().unwrap().to_owned();
    std::fs::write(
        dir.join("a-absolute.recording.w.json"),
        recording(&absolute, 1.7e12),
    )
    .unwrap();
    std::fs::write(
        dir.join("b-parent.recording.w.json"),
        recording("../x.txt", 1.7e12),
    )
    .unwrap();
    // Year 275760: used to panic (exit 101) and abandon the batch.
    std::fs::write(
        dir.join("c-far-future.recording.w.json"),
        recording("a.txt", 8.64e15),
    )
    .unwrap();

    // --quiet: the skips and the summary alone, without a progress line per recording.
    let out = run(
        &["import", "copilot", "--quiet", dir.to_str().unwrap()],
        &db,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "skipped {0}/a-absolute.recording.w.json: log entry 1 (documentEncountered): relativePath {1:?}: path {1:?} is absolute; only paths relative to the workspace are allowed\n\
             skipped {0}/c-far-future.recording.w.json: time 8640000000001000 ms is past the year 9999\n\
             imported 1 of 3 recordings (2 skipped)\n",
            dir.display(),
            absolute
        )
    );
    assert_eq!(
        text(&out.stdout),
        format!("1\t{}/b-parent.recording.w.json\n", dir.display())
    );

    // `../x.txt` lives inside the trajectory as `_up_/x.txt`; its URI keeps the truth.
    let exported = run(&["sessions", "export", "1"], &db);
    let trajectory: Value = serde_json::from_slice(&exported.stdout).unwrap();
    assert_eq!(trajectory["files"][0]["path"], "_up_/x.txt");
    assert_eq!(
        trajectory["files"][0]["uri"],
        "file:///home/u/proj/../x.txt"
    );

    // Replaying it writes under the scratch root only: nothing appears beside it.
    let scratch_parent = tmp.path().join("scratch");
    std::fs::create_dir(&scratch_parent).unwrap();
    let out = Command::new(nextedit_bin())
        .args([
            "replay",
            "--suggester",
            "builtin:noop",
            "--session",
            "1",
            "--db",
        ])
        .arg(&db)
        .env("TMPDIR", &scratch_parent)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!scratch_parent.join("x.txt").exists());
    assert!(!tmp.path().join("x.txt").exists());
    assert_eq!(std::fs::read_dir(&scratch_parent).unwrap().count(), 0);
    assert_eq!(std::fs::read_to_string(&important).unwrap(), "keep me\n");
}

/// A commit trajectory with one added file at `path` (no base text: replay's first
/// sync removes whatever is there) and one modified file `ok.py`.
fn trajectory_adding(path: &str) -> Trajectory {
    let mut t = Trajectory::new(SessionInfo::new("crafted", SessionKind::Commit));
    t.files
        .push(FileEntry::new("ok.py", Some("a = 1\n".into())));
    t.files.push(FileEntry::new(path, None));
    t.edits = vec![
        Edit::lines("e0", "ok.py", 0, "a = 1\n", "a = 2\n"),
        Edit::lines("e1", path, 0, "", "planted\n"),
    ];
    t.order.natural = vec!["e0".into(), "e1".into()];
    t.order.initial = vec!["e0".into()];
    t
}

#[test]
fn crafted_trajectories_cannot_write_or_delete_outside_the_scratch_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("n.db");
    let important = tmp.path().join("important.txt");
    std::fs::write(&important, "keep me\n").unwrap();

    let absolute = tmp.path().join("absolute.json");
    let absolute_path = important.to_str().unwrap().to_owned();
    std::fs::write(
        &absolute,
        serde_json::to_string(&trajectory_adding(&absolute_path)).unwrap(),
    )
    .unwrap();
    let parent = tmp.path().join("parent.json");
    std::fs::write(
        &parent,
        serde_json::to_string(&trajectory_adding("a/../../important.txt")).unwrap(),
    )
    .unwrap();
    // A recorded session's library file outside the workspace, never edited: left out.
    let mut library = trajectory_adding("c.py");
    library.files.push(FileEntry::new(
        absolute_path.clone(),
        Some("overwritten\n".into()),
    ));
    let with_library = tmp.path().join("library.json");
    std::fs::write(&with_library, serde_json::to_string(&library).unwrap()).unwrap();
    let fine = tmp.path().join("fine.json");
    std::fs::write(
        &fine,
        serde_json::to_string(&trajectory_adding("./new/../b.py")).unwrap(),
    )
    .unwrap();

    let out = run(
        &[
            "replay",
            "--jsonl",
            "--suggester",
            "builtin:noop",
            "--trajectory",
            absolute.to_str().unwrap(),
            "--trajectory",
            parent.to_str().unwrap(),
            "--trajectory",
            with_library.to_str().unwrap(),
            "--trajectory",
            fine.to_str().unwrap(),
        ],
        &db,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "nextedit: skipping {}: unsafe file path: files[1].path: path {absolute_path:?} is absolute; only paths relative to the workspace are allowed\n",
            absolute.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "nextedit: skipping {}: unsafe file path: files[1].path: path \"a/../../important.txt\" leaves the workspace through `..`\n",
            parent.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "nextedit: {}: left out {absolute_path}: outside the workspace and never edited (replay writes only inside its scratch directory)\n",
            with_library.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&important).unwrap(), "keep me\n");
    // The normalized one (`./new/../b.py` is `b.py`) replayed: e0 first, then e1.
    let lines: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let replayed: Vec<&Value> = lines.iter().filter(|l| l["type"] == "trajectory").collect();
    assert_eq!(replayed.len(), 2, "{lines:?}");
    assert_eq!(replayed[0]["key"], with_library.display().to_string());
    assert_eq!(replayed[1]["key"], fine.display().to_string());
    assert_eq!(replayed[1]["steps"][0]["applied"], "e1");
    assert_eq!(lines.last().unwrap()["failed"], 2);
}

#[test]
fn a_symlinked_directory_in_the_checkout_cannot_redirect_a_write() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("n.db");
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("important.txt"), "keep me\n").unwrap();
    // The parent commit holds `link -> <outside>`; replay checks it out into scratch.
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("ok.py"), "a = 1\n").unwrap();
    std::os::unix::fs::symlink(&outside, repo.join("link")).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    let parent = git(&repo, &["rev-parse", "HEAD"]);

    let mut t = trajectory_adding("link/important.txt");
    t.session.workspace = Some(repo.to_str().unwrap().to_owned());
    t.session.commit = Some(nextedit::core::trajectory::CommitInfo {
        sha: "0".repeat(40),
        parent: Some(parent),
        message: None,
        project: Some("repo".into()),
    });
    let path = tmp.path().join("symlinked.json");
    std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
    let out = run(
        &[
            "replay",
            "--suggester",
            "builtin:noop",
            "--trajectory",
            path.to_str().unwrap(),
        ],
        &db,
    );
    let stderr = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("/link: it is a symbolic link"), "{stderr}");
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(outside.join("important.txt")).unwrap(),
        "keep me\n"
    );
}

#[test]
fn non_utf8_file_names_stay_distinct_in_derive() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    git(repo, &["init", "-q"]);
    let name = |b: &[u8]| repo.join(std::ffi::OsStr::from_bytes(b));
    for (version, _) in [(1, "one"), (2, "two")] {
        std::fs::write(name(b"a\xe9.py"), format!("x = {version}\n")).unwrap();
        std::fs::write(name(b"a\xe8.py"), format!("y = {version}\n")).unwrap();
        std::fs::write(repo.join("ok.py"), format!("z = {version}\n")).unwrap();
        git(repo, &["add", "."]);
        git(repo, &["commit", "-qm", "c"]);
    }
    let out = Command::new(nextedit_bin())
        .args([
            "derive",
            "--repo",
            repo.to_str().unwrap(),
            "--commit",
            "HEAD",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    let files: Vec<(&str, Option<&str>)> = t["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap(), f["skipped"].as_str()))
        .collect();
    let skipped = Some("file name not valid UTF-8 (shown as %XX)");
    assert_eq!(
        files,
        [("a%E8.py", skipped), ("a%E9.py", skipped), ("ok.py", None)]
    );
    assert_eq!(t["edits"].as_array().unwrap().len(), 1);
}
