//! Progress of the long commands on stderr: a bar under a pseudo-terminal (`script`
//! from util-linux gives the command one), one exact line per item when stderr is a
//! pipe, and nothing with `--quiet`; for `derive --range` and `replay --range` over a
//! real git repository, `import historian-testset` fetching from a local remote,
//! `eval-order` of annotated commits and `export trajectories` of stored sessions.

use std::path::Path;
use std::process::{Command, Output};

use crate::derive_support::TestRepo;

/// Three commits after a base, each changing one line of `a.py`.
fn repository() -> TestRepo {
    let mut repo = TestRepo::new();
    repo.write("a.py", "x = 0\ny = 0\n");
    repo.commit("base");
    for i in 1..=3 {
        repo.write("a.py", format!("x = {i}\ny = 0\n"));
        repo.commit(&format!("x = {i}"));
    }
    repo
}

fn run(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nextedit {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The first 10 hex digits of the last three commits, oldest first.
fn shas(repo: &TestRepo) -> Vec<String> {
    repo.git(&["rev-list", "--reverse", "HEAD~3..HEAD"])
        .lines()
        .map(|l| l[..10].to_string())
        .collect()
}

/// What a command writes to its terminal, run under a pseudo-terminal 120 columns wide.
fn in_terminal(args: &[&str]) -> String {
    in_terminal_status(args, Some(0))
}

/// What a command writes to its terminal (a pseudo-terminal 120 columns wide); it must
/// exit with `status`.
fn in_terminal_status(args: &[&str], status: Option<i32>) -> String {
    let line = std::iter::once(env!("CARGO_BIN_EXE_nextedit"))
        .chain(args.iter().copied())
        .map(|a| format!("'{a}'"))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .args([
            "-q",
            "-e",
            "-c",
            &format!("stty cols 120 rows 40; {line}"),
            "/dev/null",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        status,
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn derive_range_progress_on_a_terminal_in_a_pipe_and_quiet() {
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let r = repo.path().to_str().unwrap();
    let out_dir = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (piped_dir, quiet_dir, tty_dir) = (out_dir("p"), out_dir("q"), out_dir("t"));
    let args = |out: &str| {
        vec!["derive", "--repo", r, "--range", "HEAD~3..HEAD", "--out"]
            .into_iter()
            .chain([out])
            .map(str::to_string)
            .collect::<Vec<_>>()
    };

    let piped = run(&args(&piped_dir)
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    let s = shas(&repo);
    assert_eq!(
        String::from_utf8_lossy(&piped.stderr),
        format!(
            "HEAD~3..HEAD: 3 commits\nnextedit: [1/3] {}: derived\nnextedit: [2/3] {}: derived\nnextedit: [3/3] {}: derived\nderived 3 of 3 commits (0 skipped)\n",
            s[0], s[1], s[2]
        )
    );

    let mut quiet_args = args(&quiet_dir);
    quiet_args.push("--quiet".into());
    let quiet = run(&quiet_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        String::from_utf8_lossy(&quiet.stderr),
        "HEAD~3..HEAD: 3 commits\nderived 3 of 3 commits (0 skipped)\n"
    );

    let terminal = in_terminal(
        &args(&tty_dir)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    // The bar (count, unit, rate, ETA) is drawn and cleared in place; no per-item lines.
    assert!(terminal.contains("/3 commits "), "{terminal:?}");
    assert!(terminal.contains(" eta "), "{terminal:?}");
    assert!(terminal.contains("\u{1b}["), "{terminal:?}");
    assert!(!terminal.contains("nextedit: ["), "{terminal:?}");
    assert!(
        terminal.ends_with("derived 3 of 3 commits (0 skipped)\r\n"),
        "{terminal:?}"
    );
    for d in [&piped_dir, &quiet_dir, &tty_dir] {
        assert_eq!(std::fs::read_dir(Path::new(d)).unwrap().count(), 3);
    }
}

#[test]
fn replay_range_progress_in_a_pipe_on_a_terminal_and_quiet() {
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let args = |quiet: bool| {
        let mut a = vec![
            "replay",
            "--jsonl",
            "--suggester",
            "builtin:oracle",
            "--repo",
            repo.path().to_str().unwrap(),
            "--range",
            "HEAD~3..HEAD",
            "--db",
            db.to_str().unwrap(),
        ];
        if quiet {
            a.push("-q");
        }
        a.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    let piped = run(&args(false).iter().map(String::as_str).collect::<Vec<_>>());
    // The trajectories' keys and step counts, as the JSON lines say them.
    let items: Vec<String> = String::from_utf8_lossy(&piped.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "trajectory")
        .map(|v| {
            let n = v["steps"].as_array().unwrap().len();
            format!(
                "{}: {n} step{}",
                v["key"].as_str().unwrap(),
                if n == 1 { "" } else { "s" }
            )
        })
        .collect();
    assert_eq!(items.len(), 3);
    let s = shas(&repo);
    assert!(items[0].contains(&s[0]), "{items:?}");
    assert_eq!(
        String::from_utf8_lossy(&piped.stderr),
        format!(
            "nextedit: HEAD~3..HEAD: 3 commits\nnextedit: [1/3] {}\nnextedit: [2/3] {}\nnextedit: [3/3] {}\n",
            items[0], items[1], items[2]
        )
    );
    let mut tty_args = args(false);
    tty_args.last_mut().unwrap().push_str(".tty");
    let terminal = in_terminal(&tty_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(terminal.contains("/3 trajectories "), "{terminal:?}");
    assert!(terminal.contains(" eta "), "{terminal:?}");
    assert!(!terminal.contains("nextedit: ["), "{terminal:?}");
    let quiet = run(&args(true).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        String::from_utf8_lossy(&quiet.stderr),
        "nextedit: HEAD~3..HEAD: 3 commits\n"
    );
}

/// `args` as the `&str`s the runners take.
fn as_strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `nextedit ARGS` in a pipe, whatever its exit status.
fn piped(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn historian_import_progress_in_a_pipe_on_a_terminal_and_quiet() {
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let remote = dir.path().join("remotes/acme/alpha");
    let cloned = Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(repo.path())
        .arg(&remote)
        .status()
        .unwrap();
    assert!(cloned.success());
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    let testset = dir.path().join("testset.json");
    let entry =
        |sha: &str| serde_json::json!({"commit_url": format!("{}/commit/{sha}", remote.display())});
    std::fs::write(
        &testset,
        serde_json::json!({"python": [entry(&head)], "go": [entry(&"0".repeat(40))]}).to_string(),
    )
    .unwrap();
    let import = |into: &str, quiet: bool| {
        let into = dir.path().join(into);
        let mut args = vec![
            "import".to_string(),
            "historian-testset".into(),
            testset.to_str().unwrap().into(),
            "--clone-into".into(),
            into.to_str().unwrap().into(),
        ];
        if quiet {
            args.push("--quiet".into());
        }
        args
    };
    // In a pipe: one line per repository, then the failures and the summary.
    let out = piped(&as_strs(&import("p", false)));
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<String> = stderr(&out).lines().map(String::from).collect();
    assert_eq!(
        lines[0],
        "nextedit: [1/1] acme/alpha: 1 of 2 commits ready (1 fetched), 1 failed"
    );
    assert!(lines[1].starts_with("failed acme/alpha 0000"), "{lines:?}");
    assert_eq!(lines.len(), 3, "{lines:?}");
    // Quiet: the failures and the summary only.
    let out = piped(&as_strs(&import("q", true)));
    let quiet: Vec<String> = stderr(&out).lines().map(String::from).collect();
    assert_eq!(quiet.len(), 2, "{quiet:?}");
    assert!(quiet[0].starts_with("failed acme/alpha 0000"), "{quiet:?}");
    // On a terminal: the bar, no item lines; stdout still gets the ready commit.
    let terminal = in_terminal_status(&as_strs(&import("t", false)), Some(1));
    assert!(terminal.contains("/1 repositories "), "{terminal:?}");
    assert!(terminal.contains(" eta "), "{terminal:?}");
    assert!(!terminal.contains("nextedit: ["), "{terminal:?}");
    assert!(
        terminal.contains(&format!(
            "{}\t{head}\tpython",
            dir.path().join("t/acme/alpha.git").display()
        )),
        "{terminal:?}"
    );
}

#[test]
fn eval_order_progress_in_a_pipe_on_a_terminal_and_quiet() {
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let shas: Vec<String> = repo
        .git(&["rev-list", "--reverse", "HEAD~3..HEAD"])
        .lines()
        .map(String::from)
        .collect();
    let annotations = dir.path().join("annotations.json");
    let url = |sha: &str| format!("https://example.invalid/o/r/commit/{sha}");
    std::fs::write(
        &annotations,
        serde_json::json!([
            {"commit_url": url(&shas[0]), "partial_orders": []},
            {"commit_url": url(&"0".repeat(40))},
            {"commit_url": url(&shas[2]), "partial_orders": []},
        ])
        .to_string(),
    )
    .unwrap();
    let args = |quiet: bool| {
        let mut a = vec![
            "eval-order",
            "--annotations",
            annotations.to_str().unwrap(),
            "--repo",
            repo.path().to_str().unwrap(),
        ];
        if quiet {
            a.push("-q");
        }
        a
    };
    let missing = format!(
        "skipped r-{0}: cannot resolve revision \"{0}\"\n",
        "0".repeat(40)
    );
    let out = piped(&args(false));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "nextedit: [1/3] r-{}: 1 edits, 0 of 0 pairs agree\nnextedit: [2/3] r-{}: skipped\n{missing}nextedit: [3/3] r-{}: 1 edits, 0 of 0 pairs agree\n",
            shas[0],
            "0".repeat(40),
            shas[2]
        )
    );
    assert_eq!(stderr(&piped(&args(true))), missing);
    let terminal = in_terminal_status(&args(false), Some(1));
    assert!(terminal.contains("/3 commits "), "{terminal:?}");
    assert!(
        terminal.contains(&missing.replace('\n', "\r\n")),
        "{terminal:?}"
    );
    assert!(!terminal.contains("nextedit: ["), "{terminal:?}");
}

#[test]
fn export_progress_in_a_pipe_on_a_terminal_and_quiet() {
    let repo = repository();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let db = db.to_str().unwrap();
    run(&[
        "derive",
        "--repo",
        repo.path().to_str().unwrap(),
        "--range",
        "HEAD~2..HEAD",
        "--store",
        "--db",
        db,
        "-q",
    ]);
    let out_dir = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let (p, q, t) = (out_dir("p"), out_dir("q"), out_dir("t"));
    let export = |out: &str, quiet: bool| {
        let mut a = vec!["export", "trajectories", "--db", db, "--out"];
        a.push(out);
        if quiet {
            a.push("--quiet");
        }
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let out = run(&as_strs(&export(&p, false)));
    let summary = |d: &str| format!("exported 2 trajectories (0 skipped) and {d}/README.md\n");
    assert_eq!(
        stderr(&out),
        format!(
            "nextedit: [1/2] session 1: 1 edits\nnextedit: [2/2] session 2: 1 edits\n{}",
            summary(&p)
        )
    );
    let out = run(&as_strs(&export(&q, true)));
    assert_eq!(stderr(&out), summary(&q));
    let terminal = in_terminal(&as_strs(&export(&t, false)));
    assert!(terminal.contains("/2 sessions "), "{terminal:?}");
    assert!(!terminal.contains("nextedit: ["), "{terminal:?}");
    assert!(
        terminal.ends_with(&summary(&t).replace('\n', "\r\n")),
        "{terminal:?}"
    );
}
