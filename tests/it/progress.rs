//! Progress of the long commands on stderr: a bar under a pseudo-terminal (`script`
//! from util-linux gives the command one), one exact line per item when stderr is a
//! pipe, and nothing with `--quiet`; for `derive --range` and `replay --range` over a
//! real git repository.

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
    assert!(
        out.status.success(),
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
            "--json",
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
