//! `nextedit replay` with suggester processes that fail: orphans never survive, a
//! suggester that never answers fails the run loudly, time-outs are honoured as
//! given, an interrupted replay leaves no scratch directory behind.

use crate::derive_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use derive_support::TestRepo;

/// A commit of three independent one-line edits, as a trajectory file (steps 1 and 2
/// ask the suggester) replayed in a checkout of its parent.
fn trajectory(dir: &Path) -> (TestRepo, PathBuf) {
    let mut repo = TestRepo::new();
    repo.write("a.py", "a = 1\n");
    repo.write("b.py", "b = 1\n");
    repo.write("c.py", "c = 1\n");
    repo.commit("base");
    repo.write("a.py", "a = 2\n");
    repo.write("b.py", "b = 2\n");
    repo.write("c.py", "c = 2\n");
    let sha = repo.commit("two");
    let mut t = repo.derive(&sha).unwrap();
    t.session.workspace = Some(repo.path().canonicalize().unwrap().display().to_string());
    assert_eq!(t.edits.len(), 3);
    let path = dir.join("t.json");
    std::fs::write(&path, serde_json::to_string(&t).unwrap()).unwrap();
    (repo, path)
}

fn scripted(mode: &str, state: &Path) -> String {
    crate::common::scripted_suggester(Some(mode), state)
}

/// `nextedit replay ARGS` with `ORPHAN_TAG` set and passed on to the suggester.
fn nextedit(args: &[&str], tmpdir: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .args(["--env", "ORPHAN_TAG"])
        .env("TMPDIR", tmpdir)
        .env("ORPHAN_TAG", "3017.25")
        .output()
        .unwrap()
}

/// Processes whose command line is `sleep TAG`.
fn sleepers(tag: &str) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && cmdline == format!("sleep\0{tag}\0").as_bytes()
        {
            n += 1;
        }
    }
    n
}

/// `(call, kind)` of every stored error of run 1, in the order they were stored.
fn errors(db: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT call, kind FROM run_errors WHERE run_id = 1 ORDER BY rowid")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_crashed_suggesters_background_children_are_killed_with_it() {
    for sandbox in ["bwrap", "off"] {
        let dir = tempfile::tempdir().unwrap();
        let (_repo, path) = trajectory(dir.path());
        let db = dir.path().join("runs.db");
        let state = dir.path().join("state");
        let spec = scripted("orphan", &state);
        let out = nextedit(
            &[
                "replay",
                "--jsonl",
                "--sandbox",
                sandbox,
                "--sandbox-rw",
                state.to_str().unwrap(),
                "--suggester",
                &spec,
                "--trajectory",
                path.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ],
            dir.path(),
        );
        // Every suggest crashed; generate (after a restart) answered: the run FAILED.
        assert_eq!(
            out.status.code(),
            Some(1),
            "{sandbox}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .ends_with("nextedit: run 1 FAILED: all 2 suggest calls failed (crash 2)\n"),
            "{sandbox}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            errors(&db),
            pairs(&[("suggest", "crash"), ("suggest", "crash")]),
            "{sandbox}"
        );
        // Each crash left two `sleep`s (one in a session of its own): none survives.
        assert_eq!(sleepers("3017.25"), 0, "{sandbox}: orphans left");
        assert_eq!(
            std::fs::read_dir(dir.path())
                .unwrap()
                .filter(|e| e
                    .as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("nextedit-replay-"))
                .count(),
            0
        );
    }
}

#[test]
fn a_suggester_that_cannot_start_fails_the_run_loudly() {
    let dir = tempfile::tempdir().unwrap();
    let (_repo, path) = trajectory(dir.path());
    let db = dir.path().join("runs.db");
    let out = nextedit(
        &[
            "replay",
            "--suggester",
            "cmd:nosuch-suggester",
            "--trajectory",
            path.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with(
            "nextedit: run 1 FAILED: the suggester never answered: all 3 calls failed; the first with crash: suggester exited during `initialize` (exit status: 127)"
        )),
        "{stderr}"
    );
    // initialize is stored; after three failures in a row the rest is not asked.
    assert_eq!(
        errors(&db),
        pairs(&[
            ("initialize", "crash"),
            ("suggest", "crash"),
            ("generate", "crash"),
            ("suggest", "gave_up"),
            ("generate", "gave_up"),
        ])
    );
}

#[test]
fn a_hung_initialize_costs_the_init_timeout_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let (_repo, path) = trajectory(dir.path());
    let db = dir.path().join("runs.db");
    let state = dir.path().join("state");
    let spec = scripted("hang-init", &state);
    let started = Instant::now();
    let out = nextedit(
        &[
            "replay",
            "--timeout",
            "1",
            "--init-timeout",
            "1",
            "--sandbox-rw",
            state.to_str().unwrap(),
            "--suggester",
            &spec,
            "--trajectory",
            path.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        dir.path(),
    );
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1));
    // Three one-second time-outs, then nothing is asked.
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert_eq!(
        errors(&db),
        pairs(&[
            ("initialize", "timeout"),
            ("suggest", "timeout"),
            ("generate", "timeout"),
            ("suggest", "gave_up"),
            ("generate", "gave_up"),
        ])
    );
}

#[test]
fn an_interrupted_replay_never_leaves_its_scratch_checkout() {
    // Interrupted at different moments: while checking out, initializing, hanging.
    for delay_ms in [0u64, 20, 60, 150, 400, 1000] {
        let dir = tempfile::tempdir().unwrap();
        let tmpdir = dir.path().join("tmp");
        std::fs::create_dir(&tmpdir).unwrap();
        let (_repo, path) = trajectory(dir.path());
        let db = dir.path().join("runs.db");
        let state = dir.path().join("state");
        let spec = scripted("hang", &state);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(["replay", "--suggester", &spec, "--sandbox-rw"])
            .arg(&state)
            .arg("--trajectory")
            .arg(&path)
            .arg("--db")
            .arg(&db)
            .env("TMPDIR", &tmpdir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        // SAFETY: kill(2) on a child this test spawned.
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGINT);
        }
        let status = child.wait().unwrap();
        // Before its handler is installed, the signal simply ends it (nothing made yet).
        use std::os::unix::process::ExitStatusExt;
        assert!(
            status.code() == Some(128 + libc::SIGINT) || status.signal() == Some(libc::SIGINT),
            "after {delay_ms} ms: {status:?}"
        );
        assert_eq!(
            std::fs::read_dir(&tmpdir).unwrap().count(),
            0,
            "scratch left after {delay_ms} ms"
        );
        // Nor a cgroup of its suggester's tree (the hanging process killed with it).
        let left = crate::common::hostile::leftovers(child.id(), &state.display().to_string());
        assert_eq!(left, Vec::<String>::new(), "after {delay_ms} ms");
    }
}
