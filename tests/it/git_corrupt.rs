//! Issue 12 item 4: a truncated loose object in a real repository. The bundled
//! libgit2 loops forever inflating it; `derive`, `replay --repo` and a proxy session
//! in that workspace must all finish within a bounded time, the commands with an
//! error naming the object.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{git, nextedit_bin, quiet, spawn_proxied};

const BOUND: Duration = Duration::from_secs(20);

/// A repository of two commits whose HEAD commit object is cut in half; returns
/// (repository, HEAD sha, the object's file).
fn corrupt_repo(root: &Path) -> (PathBuf, String, PathBuf) {
    let repo = root.join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("a.py"), "x = 1\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "one"]);
    std::fs::write(repo.join("a.py"), "x = 2\n").unwrap();
    git(
        &repo,
        &["commit", "-qam", "two with a longer message to compress"],
    );
    let head = git(&repo, &["rev-parse", "HEAD"]);
    let object = repo.join(".git/objects").join(&head[..2]).join(&head[2..]);
    let bytes = std::fs::read(&object).unwrap();
    let mut perms = std::fs::metadata(&object).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    perms.set_readonly(false);
    std::fs::set_permissions(&object, perms).unwrap();
    std::fs::write(&object, &bytes[..bytes.len() / 2]).unwrap();
    (repo, head, object)
}

/// Runs the binary, killing it (and failing) if it takes longer than [`BOUND`].
fn bounded(args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(nextedit_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > BOUND {
            child.kill().unwrap();
            panic!("nextedit {args:?} hung for {BOUND:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().unwrap(), started.elapsed())
}

#[test]
fn commands_on_a_truncated_object_fail_fast_and_name_it() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("n.db");
    let (repo, head, object) = corrupt_repo(tmp.path());
    let repo_arg = repo.to_str().unwrap();
    let named = format!(
        "git object {head} ({}) is corrupt: the zlib stream is truncated",
        object.display()
    );

    let (out, took) = bounded(&["derive", "--repo", repo_arg, "--commit", "HEAD"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&named), "{stderr}");
    eprintln!("derive on a truncated object: {took:?}");

    let (out, took) = bounded(&[
        "replay",
        "--suggester",
        "builtin:noop",
        "--repo",
        repo_arg,
        "--commit",
        "HEAD",
        "--db",
        db.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&named), "{stderr}");
    // The cause is printed once, not repeated by the context chain.
    assert_eq!(stderr.matches("is corrupt").count(), 1, "{stderr}");
    eprintln!("replay --repo on a truncated object: {took:?}");
}

#[test]
fn a_proxy_session_in_a_corrupt_workspace_records_head_and_ends_promptly() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("n.db");
    let (repo, head, _) = corrupt_repo(tmp.path());
    let mut server = Command::new("python3");
    server
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"))
        .env("FAKE_MODE", "");
    let started = Instant::now();
    let mut client = spawn_proxied(&db, &repo, server, &[]);
    client.initialize(&repo, Duration::from_secs(10)).unwrap();
    let status = client.shutdown(Duration::from_secs(10)).unwrap();
    let took = started.elapsed();
    assert!(status.success());
    // The recorder used to spin in libgit2 and the proxy waited 10 s for it.
    assert!(took < Duration::from_secs(5), "session took {took:?}");
    let mut export = Command::new(nextedit_bin());
    export.args(["sessions", "export", "1", "--db"]).arg(&db);
    quiet(&mut export);
    let out = export.output().unwrap();
    assert!(out.status.success());
    let session: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(session["session"]["git_head"], head.as_str());
}
