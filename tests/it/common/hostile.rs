//! What the sandbox tests share: `tests/suggesters/hostile.py` as a `cmd:` suggester
//! (and, copied into a repository, as a model answer's attack), a repository with a
//! commit to replay and one completion task on it, nextedit run with a known
//! environment, and what must be gone after a run (tagged processes, its cgroups).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::derive_support::TestRepo;

/// The hostile suggester.
pub fn hostile_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/hostile.py")
}

/// The `cmd:` spec of the hostile suggester doing `action`, with `settings`
/// (`NAME=value` words) in front.
pub fn hostile(action: &str, settings: &[String]) -> String {
    format!(
        "cmd:HOSTILE_ACTION={action} {} python3 '{}'",
        settings.join(" "),
        hostile_script().display()
    )
}

/// The task file's module: `probe()` is the hole, a model answer that attacks.
const CALC: &str = "import hostile


def add(a, b):
    return a + b


def probe():
    return hostile.escape()
";

/// Prints what the answer found, one `FOUND {json}` line (pytest `-s`).
const TEST_PROBE: &str = "import json

from calc import add, probe


def test_add():
    assert add(2, 3) == 5


def test_probe():
    print('FOUND ' + json.dumps(probe()))
";

/// A repository whose last commit (two edits to calc.py) is replayed, and one
/// completion task on that commit: the hole is `probe()`'s body.
pub struct World {
    /// Scratch for the test (task file, databases, logs).
    pub dir: tempfile::TempDir,
    /// The repository.
    pub repo: TestRepo,
    /// The task file (one task).
    pub tasks: PathBuf,
}

impl World {
    /// The repository and task file.
    pub fn new() -> World {
        let mut repo = TestRepo::new();
        repo.write(
            "hostile.py",
            std::fs::read_to_string(hostile_script()).unwrap(),
        );
        repo.write("test_calc.py", TEST_PROBE);
        repo.write(
            "calc.py",
            CALC.replace("a + b", "a - b").replace("probe", "check"),
        );
        repo.commit("base");
        repo.write("calc.py", CALC);
        let sha = repo.commit("add, and the probe").trim().to_string();
        let dir = tempfile::tempdir().unwrap();
        let truth = "    return hostile.escape()\n";
        let at = CALC.find(truth).unwrap();
        let prefix = &CALC[..at];
        let task = json!({
            "version": 1,
            "id": "probe",
            "repository": "calc",
            "source": {"kind": "commit", "commit": sha},
            "language": "python",
            "scenario": "full_block",
            "state": {"commit": sha, "block": "statement"},
            "file": "calc.py",
            "cursor": {"line": prefix.matches('\n').count(), "column": 0},
            "prefix": prefix,
            "suffix": &CALC[at + truth.len()..],
            "ground_truth": truth,
            "tests": [{"file": "test_calc.py", "name": "test_probe"}],
        });
        let tasks = dir.path().join("tasks.jsonl");
        std::fs::write(&tasks, format!("{task}\n")).unwrap();
        World { dir, repo, tasks }
    }

    /// A path in the scratch directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `replay` arguments for the last commit into database `db`, then `extra`.
    pub fn replay_args(&self, db: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = ["replay", "-q", "--repo"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(self.repo.path().display().to_string());
        args.extend(["--range", "HEAD~1..HEAD", "--db"].map(String::from));
        args.push(self.path(db).display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    /// `tasks run` arguments for the task into database `db`, then `extra`.
    pub fn tasks_args(&self, db: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec!["tasks".into(), "run".into(), "-q".into()];
        args.push(self.tasks.display().to_string());
        args.push("--repo".into());
        args.push(self.repo.path().display().to_string());
        args.push("--db".into());
        args.push(self.path(db).display().to_string());
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }
}

/// A finished run of nextedit: its output and process id.
pub struct Ran {
    /// What it printed and how it exited.
    pub output: Output,
    /// Its process id (names its cgroups).
    pub pid: u32,
}

impl Ran {
    /// Its stderr.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }
}

/// Runs nextedit with `args` and only `PATH` (pytest's venv first), `HOME` and `env`
/// in its environment.
pub fn run(args: &[String], env: &[(&str, &str)]) -> Ran {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-pytest/bin");
    let path = format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let child = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .env_clear()
        .env("PATH", path)
        .env(
            "HOME",
            std::env::var("HOME").unwrap_or_else(|_| "/root".into()),
        )
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    Ran {
        output: child.wait_with_output().unwrap(),
        pid,
    }
}

/// `(call, kind)` of every error stored in database `db`, in order.
pub fn run_errors(db: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT call, kind FROM run_errors ORDER BY rowid")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// `tasks report --json` of run 1 in `db`: the run's object.
pub fn task_report(db: &Path) -> Value {
    let out = super::nextedit_with_db(&["tasks", "report", "--json", "1"], db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    report["runs"][0].clone()
}

/// What a run left behind: processes whose command line holds `tag`, and cgroups of
/// nextedit process `pid` (`nextedit-PID-N` under /sys/fs/cgroup).
pub fn leftovers(pid: u32, tag: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmdline).contains(tag)
        {
            found.push(format!(
                "process {}: {}",
                entry.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmdline).replace('\0', " ")
            ));
        }
    }
    let prefix = format!("nextedit-{pid}-");
    let mut stack = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                found.push(format!("cgroup {}", path.display()));
            } else if depth < 6 {
                stack.push((path, depth + 1));
            }
        }
    }
    found
}
