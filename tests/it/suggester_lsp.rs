//! The `lsp:` suggester with real language servers (pyright, ruff's server, gopls):
//! commits of git repositories the tests make, replayed through
//! `nextedit replay --suggester 'lsp:…'` in the sandbox and without it. What each
//! server proposed at each step, which gold edit it hit and what it read (through the
//! proxy nextedit puts in front of it) is one snapshot per fixture, the same under both
//! sandbox modes. Failures (a missing program, a server that exits, one that never
//! answers) are fault-injected with ordinary programs standing in for servers.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{Server, available, go_path_var};
use crate::derive_support::{self, TestRepo};

/// One fixture: the servers it needs, the spec, the repository whose last commit is
/// replayed, and the environment replay runs with.
struct Case {
    name: &'static str,
    servers: &'static [Server],
    spec: String,
    repo: TestRepo,
    env: Vec<(&'static str, String)>,
}

fn nextedit_replay(case: &Case, db: &Path, sandbox: &str, extra: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nextedit"));
    command
        .args(["replay", "--jsonl", "--repo"])
        .arg(case.repo.path())
        .args([
            "--range",
            "HEAD~1..HEAD",
            "--sandbox",
            sandbox,
            "--suggester",
        ])
        .arg(&case.spec)
        .arg("--db")
        .arg(db)
        .args(extra)
        // The server sees only the variables passed on by name.
        .args(case.env.iter().flat_map(|(k, _)| ["--env", k]))
        .envs(case.env.iter().map(|(k, v)| (k, v)));
    command.output().unwrap()
}

/// The run as text: each step's applied edit, its ranked predictions (with the gold
/// edit each matched), the lsp reads attributed to it, and the errors.
fn run_table(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut out = String::new();
    let mut steps = conn
        .prepare("SELECT step, applied FROM run_steps ORDER BY step")
        .unwrap();
    let steps: Vec<(i64, String)> = steps
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (step, applied) in steps {
        out.push_str(&format!("step {step} (gold {applied}):\n"));
        let mut predictions = conn
            .prepare(
                "SELECT rank, file, start_line, end_line, text, coalesce(matched, '-') FROM run_predictions WHERE step = ?1 ORDER BY rank",
            )
            .unwrap();
        let rows = predictions
            .query_map([step], |r| {
                Ok(format!(
                    "  #{} {}:{}..{} {:?} hit={}\n",
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?
                ))
            })
            .unwrap();
        for row in rows {
            out.push_str(&row.unwrap());
        }
        let reads: i64 = conn
            .query_row(
                "SELECT count(*) FROM run_reads WHERE step = ?1 AND source = 'lsp'",
                [step],
                |r| r.get(0),
            )
            .unwrap();
        out.push_str(&format!(
            "  lsp reads: {}\n",
            if reads > 0 { "yes" } else { "none" }
        ));
    }
    let mut errors = conn
        .prepare("SELECT coalesce(step, -1), call, kind FROM run_errors ORDER BY rowid")
        .unwrap();
    for row in errors
        .query_map([], |r| {
            Ok(format!(
                "error: step {} {} {}\n",
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?
            ))
        })
        .unwrap()
    {
        out.push_str(&row.unwrap());
    }
    out
}

/// Replays the case sandboxed and unsandboxed: both succeed with the same table,
/// which is the case's snapshot.
fn check(case: Case) {
    if !available(case.name, case.servers) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut tables = Vec::new();
    for sandbox in ["bwrap", "off"] {
        let db = tmp.path().join(format!("{sandbox}.db"));
        let out = nextedit_replay(&case, &db, sandbox, &[]);
        assert!(
            out.status.success(),
            "{} ({sandbox}): {}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        tables.push(run_table(&db));
    }
    assert_eq!(tables[0], tables[1], "{}: sandboxed and not", case.name);
    insta::assert_snapshot!(case.name, tables[0]);
}

fn ruff_spec() -> String {
    format!(
        "lsp:{} server",
        Server::Ruff.find().unwrap_or_default().display()
    )
}

fn pyright_spec() -> String {
    format!(
        "lsp:{} --stdio",
        Server::Pyright.find().unwrap_or_default().display()
    )
}

/// gopls with Go on PATH, caches in a directory the sandbox can create (under /tmp,
/// which is the sandbox's own), no network.
fn go_env(tmp: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", go_path_var()),
        ("GOPATH", format!("{tmp}/gopath")),
        ("GOCACHE", format!("{tmp}/gocache")),
        ("GOPROXY", "off".into()),
        ("GOFLAGS", "-mod=mod".into()),
        ("CGO_ENABLED", "0".into()),
    ]
}

/// A Python file with two unused imports (a line apart) and an f-string without
/// placeholders; the commit drops the imports and the `f`.
fn lint_repo() -> TestRepo {
    let mut repo = TestRepo::new();
    repo.write(
        "tool.py",
        "import os\nimport sys\nimport json\n\n\ndef main():\n    count = len(sys.argv)\n    print(count)\n    print(f\"done\")\n",
    );
    repo.commit("base");
    repo.write(
        "tool.py",
        "import sys\n\n\ndef main():\n    count = len(sys.argv)\n    print(count)\n    print(\"done\")\n",
    );
    repo.commit("drop the unused imports and the empty f-string");
    repo
}

/// A Go module whose last commit renames a function at its definition and its calls.
fn go_rename_repo() -> TestRepo {
    let mut repo = TestRepo::new();
    repo.write("go.mod", "module example.com/demo\n\ngo 1.19\n");
    repo.write(
        "main.go",
        "package main\n\nimport \"fmt\"\n\nfunc total(xs []int) int {\n\tn := 0\n\tfor _, x := range xs {\n\t\tn += x\n\t}\n\treturn n\n}\n\nfunc main() {\n\tfmt.Println(total([]int{1, 2}))\n\tfmt.Println(total(nil))\n}\n",
    );
    repo.commit("base");
    repo.write(
        "main.go",
        "package main\n\nimport \"fmt\"\n\nfunc sum(xs []int) int {\n\tn := 0\n\tfor _, x := range xs {\n\t\tn += x\n\t}\n\treturn n\n}\n\nfunc main() {\n\tfmt.Println(sum([]int{1, 2}))\n\tfmt.Println(sum(nil))\n}\n",
    );
    repo.commit("rename total to sum");
    repo
}

#[test]
fn ruff_server_proposes_the_fix_all_edits_of_a_lint_commit() {
    check(Case {
        name: "ruff_lint_commit",
        servers: &[Server::Ruff],
        spec: ruff_spec(),
        repo: lint_repo(),
        env: Vec::new(),
    });
}

#[test]
fn pyright_proposes_the_rest_of_a_rename_across_files() {
    check(Case {
        name: "pyright_rename_commit",
        servers: &[Server::Pyright],
        spec: pyright_spec(),
        repo: derive_support::rename_repo(),
        env: Vec::new(),
    });
}

#[test]
fn gopls_proposes_the_rest_of_a_go_rename() {
    let gopath = tempfile::tempdir().unwrap();
    check(Case {
        name: "gopls_rename_commit",
        servers: &[Server::Gopls],
        spec: "lsp:gopls".into(),
        repo: go_rename_repo(),
        env: go_env(&gopath.path().to_string_lossy()),
    });
}

#[test]
fn a_missing_server_is_an_error_naming_it_and_a_failing_one_is_recorded_per_call() {
    // Not found: refused before the run, exit code 2, the program named.
    let case = Case {
        name: "missing",
        servers: &[],
        spec: "lsp:/nonexistent/language-server --stdio".into(),
        repo: derive_support::rename_repo(),
        env: Vec::new(),
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = nextedit_replay(&case, &tmp.path().join("missing.db"), "off", &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot find the language server `/nonexistent/language-server`"),
        "{stderr}"
    );

    // A "server" that exits at once (crash), one that never answers (time-out) and one
    // that prints garbage (no answer either): each trajectory records its failures and
    // gives up after two in a row; nothing worked, so the run fails (exit 1).
    for (spec, kinds) in [
        (
            "lsp:false",
            "initialize crash, suggest gave_up, generate gave_up",
        ),
        (
            "lsp:sleep 600",
            "initialize timeout, suggest gave_up, generate gave_up",
        ),
        (
            "lsp:sh -c 'echo not-a-language-server; sleep 600'",
            "initialize timeout, suggest gave_up, generate gave_up",
        ),
    ] {
        let case = Case {
            name: "failing",
            servers: &[],
            spec: spec.into(),
            repo: derive_support::rename_repo(),
            env: Vec::new(),
        };
        let db = tmp.path().join(format!("{}.db", spec.len()));
        let out = nextedit_replay(
            &case,
            &db,
            "bwrap",
            &[
                "--init-timeout",
                "2",
                "--timeout",
                "2",
                "--give-up-after",
                "1",
            ],
        );
        assert_eq!(
            out.status.code(),
            Some(1),
            "{spec}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut statement = conn
            .prepare("SELECT DISTINCT call || ' ' || kind FROM run_errors ORDER BY rowid")
            .unwrap();
        let found: Vec<String> = statement
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(found.join(", "), kinds, "{spec}");
    }
}

/// A Python project whose commit edits a reStructuredText page first (in natural
/// order) and then the code.
fn docs_repo() -> TestRepo {
    let mut repo = TestRepo::new();
    repo.write(
        "docs/templating.rst",
        "Templating\n==========\n\nCall ``render`` with a set of names::\n\n    names = set()\n    names\n",
    );
    repo.write(
        "pkg/app.py",
        "def render(names):\n    return sorted(names)\n\n\nprint(render({'a'}))\n",
    );
    repo.commit("base");
    repo.write(
        "docs/templating.rst",
        "Templating\n==========\n\nCall ``render`` with a set of names::\n\n    names = set()\n    names.add\n",
    );
    repo.write(
        "pkg/app.py",
        "def render(names, reverse=False):\n    return sorted(names, reverse=reverse)\n\n\nprint(render({'a'}, reverse=True))\n",
    );
    repo.commit("render takes reverse");
    repo
}

#[test]
fn lsp_asks_only_in_files_of_the_language_its_server_was_started_for() {
    if !available(
        "lsp_asks_only_in_files_of_the_language_its_server_was_started_for",
        &[Server::Pyright],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("server-in.log");
    // What the server receives, byte for byte (through the proxy nextedit puts in front).
    let spec = format!(
        "lsp:sh -c 'tee {} | {} --stdio'",
        log.display(),
        Server::Pyright.find().unwrap().display()
    );
    let case = Case {
        name: "lsp_rst",
        servers: &[Server::Pyright],
        spec,
        repo: docs_repo(),
        env: Vec::new(),
    };
    let db = tmp.path().join("rst.db");
    let out = nextedit_replay(&case, &db, "off", &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not vacuous: the page's edit came first, so a step was asked right after it.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let initial: String = conn
        .query_row("SELECT initial FROM run_trajectories", [], |r| r.get(0))
        .unwrap();
    let trajectory: String = conn
        .query_row("SELECT trajectory FROM run_trajectories", [], |r| r.get(0))
        .unwrap();
    let trajectory: serde_json::Value = serde_json::from_str(&trajectory).unwrap();
    let first = trajectory["edits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == initial.as_str())
        .unwrap();
    assert_eq!(first["file"], "docs/templating.rst");
    let received = std::fs::read(&log).unwrap();
    let messages: Vec<serde_json::Value> = crate::common::frames(&received)
        .iter()
        .filter_map(|frame| {
            let body = frame.split(|&b| b == b'\n').next_back()?;
            serde_json::from_slice(body).ok()
        })
        .collect();
    let asked: Vec<(String, String)> = messages
        .iter()
        .filter_map(|m| {
            let uri = m.pointer("/params/textDocument/uri")?.as_str()?;
            Some((
                m["method"].as_str()?.to_string(),
                uri.rsplit('/').next()?.to_string(),
            ))
        })
        .collect();
    assert!(asked.iter().all(|(_, file)| file == "app.py"), "{asked:?}");
    assert!(
        asked.contains(&("textDocument/didOpen".into(), "app.py".into())),
        "{asked:?}"
    );
}
