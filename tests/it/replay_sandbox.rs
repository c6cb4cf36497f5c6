//! Replay isolation: a suggester that probes every side channel (tests/suggesters/
//! probe.py) finds nothing of the future in the default sandbox, on a real git
//! repository whose last commit alone holds a marker; with `--sandbox off` it finds it,
//! and the run and its report say `unsandboxed`.

use crate::derive_support;

use std::path::{Path, PathBuf};

use derive_support::TestRepo;
use serde_json::Value;

const MARKER: &str = "FUTURE_MARKER_7f3a9c";

/// The probe's settings, set for nextedit (`Probe::nextedit`) and passed on with `--env`.
const PROBE_VARIABLES: [&str; 7] = [
    "PROBE_MARKER_REVERSED",
    "PROBE_REPO",
    "PROBE_DB",
    "PROBE_TRAJECTORIES",
    "PROBE_SHA",
    "PROBE_PORT",
    "PROBE_LOG",
];

/// base → c1 (a rename in a.py) → c2 (a rename in a.py, then the marker in z.py).
fn repo() -> (TestRepo, String, String) {
    let mut repo = TestRepo::new();
    repo.write("a.py", "def f():\n    return 1\n\n\nx = f()\n");
    repo.write("z.py", "y = 2\n");
    repo.commit("base");
    repo.write("a.py", "def g():\n    return 1\n\n\nx = g()\n");
    let c1 = repo.commit("rename f to g");
    repo.write("a.py", "def h():\n    return 1\n\n\nx = h()\n");
    repo.write("z.py", format!("y = 3  # {MARKER}\n"));
    let c2 = repo.commit("rename g to h");
    (repo, c1, c2)
}

/// The commit's trajectory as a file, replayed in a checkout of its parent, its
/// edits in file order (the marker's edit, in z.py, last).
fn trajectory_file(repo: &TestRepo, sha: &str, path: &Path) {
    let mut t = repo.derive(sha).unwrap();
    t.session.workspace = Some(repo.path().canonicalize().unwrap().display().to_string());
    let mut ids: Vec<(String, usize, String)> = t
        .edits
        .iter()
        .map(|e| (e.file.clone(), e.before_lines.start, e.id.clone()))
        .collect();
    ids.sort();
    t.order.natural = ids.iter().map(|(_, _, id)| id.clone()).collect();
    t.order.initial = vec![t.order.natural[0].clone()];
    std::fs::write(path, serde_json::to_string(&t).unwrap()).unwrap();
}

struct Probe {
    dir: tempfile::TempDir,
    repo: TestRepo,
    c2: String,
    trajectories: Vec<PathBuf>,
    log: PathBuf,
    db: PathBuf,
    listener: std::net::TcpListener,
}

fn probe() -> Probe {
    let (repo, c1, c2) = repo();
    let dir = tempfile::tempdir().unwrap();
    let trajectories = vec![dir.path().join("c1.json"), dir.path().join("c2.json")];
    trajectory_file(&repo, &c1, &trajectories[0]);
    trajectory_file(&repo, &c2, &trajectories[1]);
    assert!(
        std::fs::read_to_string(&trajectories[1])
            .unwrap()
            .contains(MARKER)
    );
    let log = dir.path().join("probe.jsonl");
    std::fs::write(&log, "").unwrap();
    Probe {
        db: dir.path().join("runs.db"),
        dir,
        repo,
        c2,
        trajectories,
        log,
        listener: std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
    }
}

impl Probe {
    /// `nextedit ARGS` with the probe's environment.
    fn nextedit(&self, args: &[&str]) -> std::process::Output {
        let joined: Vec<String> = self
            .trajectories
            .iter()
            .map(|t| t.display().to_string())
            .collect();
        std::process::Command::new(env!("CARGO_BIN_EXE_nextedit"))
            .args(args)
            .current_dir(self.repo.path())
            .env("NEXTEDIT_DB", &self.db)
            .env(
                "PROBE_MARKER_REVERSED",
                MARKER.chars().rev().collect::<String>(),
            )
            .env("PROBE_REPO", self.repo.path().canonicalize().unwrap())
            .env("PROBE_DB", &self.db)
            .env("PROBE_TRAJECTORIES", joined.join(":"))
            .env("PROBE_SHA", &self.c2)
            .env(
                "PROBE_PORT",
                self.listener.local_addr().unwrap().port().to_string(),
            )
            .env("PROBE_LOG", &self.log)
            .output()
            .unwrap()
    }

    fn replay(&self, extra: &[&str], walk: bool) -> std::process::Output {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/probe.py");
        let spec = format!(
            "cmd:PROBE_WALK={} python3 '{}'",
            u8::from(walk),
            script.display()
        );
        let mut args = vec![
            "replay",
            "--jsonl",
            "--jobs",
            "2",
            // The first walk of the file system takes seconds on a loaded machine.
            "--timeout",
            "120",
            "--suggester",
            &spec,
            "--sandbox-rw",
            self.log.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        // The probe's settings reach it only passed on by name.
        for name in PROBE_VARIABLES {
            args.extend(["--env", name]);
        }
        for t in &self.trajectories {
            args.extend(["--trajectory", t.to_str().unwrap()]);
        }
        let out = self.nextedit(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn calls(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

fn findings(calls: &[Value]) -> Vec<String> {
    let mut all: Vec<String> = calls
        .iter()
        .filter_map(|c| c["findings"].as_array())
        .flatten()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    all.sort();
    all.dedup();
    all
}

#[test]
fn a_probing_suggester_finds_nothing_in_the_default_sandbox() {
    let p = probe();
    let out = p.replay(&[], true);
    let run: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(run["sandbox"], "bwrap");
    let calls = p.calls();
    let mut methods: Vec<&str> = calls
        .iter()
        .map(|c| c["method"].as_str().unwrap())
        .collect();
    methods.sort();
    // c1: one step (its second a.py edit), c2: two (a.py, then z.py's marker); each
    // suggest misses and asks generate; each worker shuts its process down.
    assert_eq!(
        methods,
        [
            vec!["generate"; 3],
            vec!["initialize"; 2],
            vec!["shutdown"; 2],
            vec!["suggest"; 3]
        ]
        .concat()
    );
    assert_eq!(findings(&calls), Vec::<String>::new());
    for call in calls.iter().filter(|c| c["method"] == "initialize") {
        // An opaque name, no project; the process runs in its worktree.
        let name = call["trajectory"].as_str().unwrap();
        assert!(name == "trajectory-1" || name == "trajectory-2", "{name}");
        assert_eq!(call["project"], Value::Null);
        assert_eq!(call["cwd"], call["worktree"]);
    }
    // The probe's checks were not vacuous: the marker is in the last commit, and in the
    // worktree once the last gold edit is applied (the probe looks at shutdown too).
    assert!(p.repo.git(&["show", "HEAD:z.py"]).contains(MARKER));
    let report = p.nextedit(&["report", "1"]);
    assert!(!String::from_utf8_lossy(&report.stdout).contains("unsandboxed"));
}

#[test]
fn without_the_sandbox_the_probe_finds_the_future_and_the_run_says_unsandboxed() {
    let p = probe();
    let out = p.replay(&["--sandbox", "off"], false);
    let run: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(run["sandbox"], "unsandboxed");
    let found = findings(&p.calls());
    let repo = p.repo.path().canonicalize().unwrap();
    for expected in [
        format!("repository visible: {}", repo.display()),
        format!("database visible: {}", p.db.display()),
        "marker in the repository's z.py".to_string(),
        "marker in the database's run_trajectories".to_string(),
        "git log in {REPO} shows the marker".replace("{REPO}", &repo.display().to_string()),
        format!(
            "network: connected to 127.0.0.1:{}",
            p.listener.local_addr().unwrap().port()
        ),
        "repository reachable through a symlink in the worktree".to_string(),
    ] {
        assert!(found.contains(&expected), "{expected} not in {found:#?}");
    }
    // The environment is cleaned in both modes: no NEXTEDIT_DB, no PWD.
    assert!(!found.iter().any(|f| f.starts_with("env ")), "{found:#?}");
    let report = p.nextedit(&["report", "1"]);
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains(
            "run 1: unsandboxed (its suggester could read the repository, the database and the network)"
        ),
        "{text}"
    );
    let json = p.nextedit(&["report", "--json", "1"]);
    let json: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["runs"][0]["run"]["config"]["sandbox"], "unsandboxed");
    drop(p.dir);
}

#[test]
fn reveal_commit_names_the_commit_in_initialize() {
    let p = probe();
    p.replay(&["--reveal", "commit"], false);
    // Only c2's initialize carries the probe's sha (c1's carries c1's); nothing else leaks.
    assert_eq!(
        findings(&p.calls()),
        ["commit sha in the initialize message"]
    );
    let names: Vec<String> = p
        .calls()
        .iter()
        .filter(|c| c["method"] == "initialize")
        .map(|c| c["trajectory"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&p.c2), "{names:?}");
}
