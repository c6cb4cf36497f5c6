//! `derive --range --lsp`: one server per language and side for the whole range, its
//! two trees rewritten per commit (only the changed files) and the servers told; the
//! edges equal the ones of servers started afresh for every commit (real pyright).
//! A server that dies is started again for the next commit (`tests/fake_server.py`).

use crate::common;
use crate::derive_lsp::{fake_pyright, refuted_rows};
use crate::derive_support;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::Server;
use derive_support::{TestRepo, edge_rows};
use nextedit::core::trajectory::Trajectory;
use nextedit::engine::history::derive::derive_kept;
use nextedit::engine::history::lsp::{ServerCommand, ServerSet};
use nextedit::engine::history::lsp_workspace::KeptWorkspace;
use nextedit::engine::history::{CommitSource, GitRepository};

const STORE: &str = "class Store:\n    def flush(self):\n        return 0\n";
const APP: &str = "from store import Store\n\n\nclass Cache:\n    def flush(self):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush()\n";

/// Four commits after a base: a typed receiver call (c1); a field and a local of the
/// same name, with store.py shifted down (c2); store.py renamed to storage.py, the
/// import following it (c3: a deletion and a new file); a call resolved into
/// storage.py, which c4 does not change (only a server told of c3 knows it).
fn range_repo() -> (TestRepo, Vec<String>) {
    let mut repo = TestRepo::new();
    repo.write("store.py", STORE);
    repo.write("app.py", APP);
    repo.write("env.py", "class Env:\n    name: str = \"\"\n");
    repo.write(
        "setup.py",
        "def build(args):\n    flags = [args.x]\n    return flags\n",
    );
    let mut shas = vec![repo.commit("base")];
    repo.write(
        "store.py",
        "class Store:\n    def flush(self, force):\n        return 1 if force else 0\n",
    );
    repo.write("app.py", "from store import Store\n\n\nclass Cache:\n    def flush(self, limit):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush(True)\n");
    shas.push(repo.commit("c1: typed receiver"));
    repo.write(
        "store.py",
        "\"\"\"Stores.\"\"\"\n\n\nclass Store:\n    def flush(self, force):\n        return 1 if force else 0\n",
    );
    repo.write(
        "env.py",
        "class Env:\n    name: str = \"\"\n    vcs_rev: str = \"\"\n",
    );
    repo.write(
        "setup.py",
        "def build(args):\n    vcs_rev = args.vcs_rev or \"-\"\n    flags = [vcs_rev]\n    return flags\n",
    );
    shas.push(repo.commit("c2: a local named like a field"));
    repo.remove("store.py");
    repo.write(
        "storage.py",
        "\"\"\"Stores.\"\"\"\n\n\nclass Store:\n    def flush(self, force, wait=False):\n        return 1 if force else 0\n",
    );
    repo.write("app.py", "from storage import Store\n\n\nclass Cache:\n    def flush(self, limit):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush(True)\n");
    shas.push(repo.commit("c3: store.py becomes storage.py"));
    repo.write("app.py", "from storage import Store\n\n\nclass Cache:\n    def flush(self, limit, wait):\n        return 0\n\n\ndef run(s: Store):\n    return s.flush(True, wait=True)\n");
    shas.push(repo.commit("c4: a call into the unchanged storage.py"));
    (repo, shas)
}

/// `nextedit derive --range BASE..HEAD --lsp` (pyright only) into `out`.
fn derive_range(repo: &TestRepo, base: &str, out: &Path, extra: &[&str]) -> Output {
    let output = std::process::Command::new(common::nextedit_bin())
        .args(["derive", "--repo"])
        .arg(repo.path())
        .args(["--range", &format!("{base}..HEAD"), "--lsp", "-q", "--out"])
        .arg(out)
        .args(extra)
        .env("NEXTEDIT_PYRIGHT", common::pyright())
        // Only pyright: a gopls or jdtls on PATH has no Go or Java to read here anyway.
        .env("NEXTEDIT_GOPLS", "/nonexistent/gopls")
        .env("NEXTEDIT_JDTLS", "/nonexistent/jdtls")
        .output()
        .expect("nextedit runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn read_trajectory(dir: &Path, sha: &str) -> (String, Trajectory) {
    let text = std::fs::read_to_string(dir.join(format!("{sha}.json"))).unwrap();
    let trajectory = serde_json::from_str(&text).unwrap();
    (text, trajectory)
}

/// The `lsp: …` summary line of a range.
fn summary(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .find(|l| l.starts_with("lsp: "))
        .unwrap_or_default()
        .split(", ")
        .take(2)
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn kept_servers_derive_a_range_exactly_like_servers_per_commit() {
    let name = "kept_servers_derive_a_range_exactly_like_servers_per_commit";
    if !common::available(name, &[Server::Pyright]) {
        return;
    }
    let (repo, shas) = range_repo();
    let scratch = tempfile::tempdir().unwrap();
    let (kept_dir, fresh_dir) = (scratch.path().join("kept"), scratch.path().join("fresh"));
    let kept = derive_range(&repo, &shas[0], &kept_dir, &[]);
    let fresh = derive_range(&repo, &shas[0], &fresh_dir, &["--lsp-per-commit"]);
    // (edges, refuted reasons) per commit, c1 to c4.
    let expected: [(&[&str], &[&str]); 4] = [
        (
            &["e1-e2 bi: lsp_def_use/flush, lsp_reference/flush"],
            &["e0-e1 signature_call/flush -> store.py:2"],
        ),
        (&[], &["e0-e1 def_use/vcs_rev -> setup.py:2"]),
        (&[], &[]),
        // Cache.flush gained `wait` too; the call is Store's, in storage.py (c3's file).
        (
            &[],
            &[
                "e0-e1 signature_call/flush -> storage.py:5",
                "e0-e1 argument_parameter/flush(wait) -> storage.py:5",
            ],
        ),
    ];
    let rows = |dir: &Path| -> Vec<(Vec<String>, Vec<String>)> {
        shas[1..]
            .iter()
            .map(|sha| {
                let (_, t) = read_trajectory(dir, sha);
                (edge_rows(&t), refuted_rows(&t))
            })
            .collect()
    };
    let expected: Vec<(Vec<String>, Vec<String>)> = expected
        .iter()
        .map(|(edges, refuted)| {
            (
                edges.iter().map(|s| s.to_string()).collect(),
                refuted.iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(rows(&fresh_dir), expected, "servers per commit");
    assert_eq!(rows(&kept_dir), expected, "servers kept");
    for sha in &shas[1..] {
        // Everything else is the same too (the trajectories name no scratch path).
        assert_eq!(
            read_trajectory(&kept_dir, sha).0,
            read_trajectory(&fresh_dir, sha).0,
            "{sha}"
        );
    }
    // Two servers (parent and commit side) for the range, against two per commit.
    assert_eq!(
        (summary(&kept), summary(&fresh)),
        (
            "lsp: 2 server(s) started (0 restarted), 16 definition and 7 references requests"
                .to_string(),
            "lsp: 8 server(s) started (0 restarted), 16 definition and 7 references requests"
                .to_string()
        )
    );
}

/// A Python "server" that crashes on its first start in each tree directory
/// (`tests/fake_server.py`, FAKE_MODE=crash-once:3: after `initialized`).
fn crash_once_pyright(markers: &Path) -> ServerCommand {
    let mut server = fake_pyright("crash-once:3");
    server
        .env
        .push(("FAKE_CRASH_DIR".into(), markers.display().to_string()));
    server
}

#[test]
fn a_kept_server_that_dies_is_started_again_for_the_next_commit() {
    let (repo, shas) = range_repo();
    let markers = tempfile::tempdir().unwrap();
    let servers = ServerSet {
        python: Some(crash_once_pyright(markers.path())),
        ..ServerSet::default()
    };
    let mut kept = KeptWorkspace::new(servers, Duration::from_secs(30), 500).unwrap();
    let git = GitRepository::open(repo.path()).unwrap();
    // Per commit: (servers started, of them restarted, every request failed).
    let rows: Vec<(usize, usize, bool)> = shas[1..]
        .iter()
        .map(|sha| {
            let record = git.load(sha).unwrap();
            let (t, stats) = derive_kept(&git, &record, Some("test"), &mut kept).unwrap();
            // A failing server refutes and adds nothing: the tree-sitter edges stay.
            assert_eq!(edge_rows(&t), edge_rows(&repo.derive(sha).unwrap()));
            let requests = stats.requests + stats.reference_requests;
            (
                stats.servers_started,
                stats.restarted,
                requests > 0 && stats.failures == requests,
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![(2, 0, true), (2, 2, false), (0, 0, false), (0, 0, false)]
    );
}

/// glances-d67fd87 in small: `viewkeys` defined in both branches of `if PY3:` and
/// imported elsewhere, where pyright's answer once varied between runs.
fn branches_repo() -> TestRepo {
    let mut repo = TestRepo::new();
    let compat = |extra: [&str; 3]| {
        format!(
            "{}import sys\n\nPY3 = sys.version_info[0] == 3\n\nif PY3:\n    text_type = str\n{}\n    def iteritems(d):\n        return iter(d.items())\nelse:\n    text_type = unicode\n{}\n    def iteritems(d):\n        return d.iteritems()\n",
            extra[0], extra[1], extra[2]
        )
    };
    repo.write("compat.py", compat(["", "", ""]));
    repo.write(
        "plugin.py",
        "from compat import iteritems\n\n\ndef keys(d):\n    return [k for k, _ in d.items()]\n",
    );
    repo.commit("base");
    repo.write(
        "compat.py",
        compat([
            "import operator\n",
            "    viewkeys = operator.methodcaller('keys')\n",
            "    viewkeys = operator.methodcaller('viewkeys')\n",
        ]),
    );
    repo.write(
        "plugin.py",
        "from compat import iteritems, viewkeys\n\n\ndef keys(d):\n    return list(viewkeys(d))\n",
    );
    repo.commit("viewkeys");
    repo
}

#[test]
fn pyright_answers_the_same_in_five_runs() {
    let name = "pyright_answers_the_same_in_five_runs";
    if !common::available(name, &[Server::Pyright]) {
        return;
    }
    let repo = branches_repo();
    let runs: Vec<String> = (0..5)
        .map(|_| {
            let output = std::process::Command::new(common::nextedit_bin())
                .args(["derive", "--repo"])
                .arg(repo.path())
                .args(["--commit", "HEAD", "--lsp"])
                .env("NEXTEDIT_PYRIGHT", common::pyright())
                .env("NEXTEDIT_GOPLS", "/nonexistent/gopls")
                .env("NEXTEDIT_JDTLS", "/nonexistent/jdtls")
                .output()
                .expect("nextedit runs");
            assert!(output.status.success());
            String::from_utf8(output.stdout).unwrap()
        })
        .collect();
    let t: Trajectory = serde_json::from_str(&runs[0]).unwrap();
    // pyright names the last branch's `viewkeys` (e2) only: it alone gains
    // `lsp_def_use` and `lsp_reference`.
    assert_eq!(
        edge_rows(&t),
        vec![
            "e0-e1 bi: import_use/operator",
            "e0-e2 bi: import_use/operator",
            "e1-e2 bi: clone/- +'keys' ( ) . = methodcaller operator viewkeys",
            "e1-e3 bi: def_import/viewkeys",
            "e1-e4 bi: def_use/viewkeys",
            "e2-e3 bi: def_import/viewkeys, lsp_reference/viewkeys",
            "e2-e4 bi: def_use/viewkeys, lsp_def_use/viewkeys, lsp_reference/viewkeys",
            "e3-e4 bi: import_use/viewkeys",
        ]
    );
    assert_eq!(refuted_rows(&t), Vec::<String>::new());
    for (run, output) in runs.iter().enumerate() {
        assert_eq!(output, &runs[0], "run {run} against run 0");
    }
}
