//! The sandbox holds for root (as CI runs): untrusted code (a `cmd:` suggester in
//! `replay`, a model answer run by pytest in `tasks run`) cannot remount a read-only
//! path read-write, remount /usr or /etc, unmount the mask over /etc/shadow, read
//! /etc/ssl/private or make a user namespace; it runs with no capability under the
//! seccomp filters; the host file stays as it was. No sandbox, no run: with bubblewrap
//! missing or failing, `replay` (cmd: and lsp:), `complete`, `tasks run` and `tasks
//! cut --retriever cmd:` exit 2 naming the cause and the fix, and never start the
//! program; `--sandbox off` runs it and says so on stderr, `-q` or not. Untrusted code
//! gets only the allowed environment: no `OPENAI_API_KEY` unless `--env
//! OPENAI_API_KEY`; a retriever command reads no file beside its script.

use std::path::Path;

use serde_json::{Value, json};

use crate::common::hostile::{World, hostile, run, task_report};
use crate::common::{Server, available, nextedit_with_db};

/// What the escape attempts of hostile.py find in the default sandbox: no capability,
/// both seccomp filters, every remount, unmount and new namespace refused, the
/// machine's secrets hidden, nothing planted through the read-only path.
fn held(with_ro: bool) -> Value {
    let mut found = json!({
        "CapEff": "0000000000000000",
        "Seccomp": "2",
        "Seccomp_filters": "2",
        "remount /usr": "EPERM",
        "remount /etc": "EPERM",
        "umount /etc/shadow": "EPERM",
        // Masked by /dev/null, which a mount of the sandbox's user namespace cannot open.
        "/etc/shadow": "EACCES",
        "unshare user": "EPERM",
    });
    found["/etc/ssl/private"] = if Path::new("/etc/ssl/private").exists() {
        json!([])
    } else {
        json!("ENOENT")
    };
    if with_ro {
        found["remount read-only path"] = json!("EPERM");
        found["planted"] = json!(false);
    }
    found
}

#[test]
fn root_in_the_sandbox_cannot_escape_from_a_suggester() {
    let world = World::new();
    let ro = world.path("models");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("weights"), "host file").unwrap();
    let log = world.path("hostile.jsonl");
    std::fs::write(&log, "").unwrap();
    let spec = hostile(
        "escape",
        &[
            format!("HOSTILE_RO='{}'", ro.display()),
            format!("HOSTILE_LOG='{}'", log.display()),
        ],
    );
    let args = world.replay_args(
        "runs.db",
        &[
            "--suggester",
            &spec,
            "--sandbox-ro",
            ro.to_str().unwrap(),
            "--sandbox-rw",
            log.to_str().unwrap(),
        ],
    );
    let ran = run(&args, &[]);
    assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, [json!({"action": "escape", "found": held(true)})]);
    // The host's files are as they were.
    assert_eq!(
        std::fs::read_to_string(ro.join("weights")).unwrap(),
        "host file"
    );
    assert!(!ro.join("planted").exists());
}

#[test]
fn root_in_the_sandbox_cannot_escape_from_a_task_answer() {
    if !available(
        "root_in_the_sandbox_cannot_escape_from_a_task_answer",
        &[Server::Pytest],
    ) {
        return;
    }
    let world = World::new();
    // pytest's venv is bound read-only: the answer tries to remount it and plant a file.
    let venv = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(".venv-pytest")
        .canonicalize()
        .unwrap();
    let planted = venv.join("planted");
    let command = format!(
        "HOSTILE_RO='{}' python3 -m pytest -q -s -p no:cacheprovider {{tests}}",
        venv.display()
    );
    // The oracle answers the hole with the attack; the tests run it.
    let args = world.tasks_args(
        "tasks.db",
        &["--suggester", "builtin:oracle", "--test-command", &command],
    );
    let ran = run(&args, &[]);
    let escaped = planted.exists();
    let _ = std::fs::remove_file(&planted);
    assert!(!escaped, "the answer planted {}", planted.display());
    assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
    let conn = rusqlite::Connection::open(world.path("tasks.db")).unwrap();
    let output: String = conn
        .query_row("SELECT truth_output FROM task_run_tasks", [], |r| r.get(0))
        .unwrap();
    let found: Value = output
        .lines()
        .find_map(|l| l.find("FOUND ").map(|at| &l[at + 6..]))
        .map(|json| serde_json::from_str(json).unwrap())
        .unwrap_or_else(|| panic!("no FOUND line in {output}"));
    assert_eq!(found, held(true));
    let report = task_report(&world.path("tasks.db"));
    assert_eq!(report["sandbox"], "bwrap");
    assert_eq!(report["unsandboxed"], false);
}

/// A program that writes `marker` when it runs.
fn marker_script(world: &World, marker: &Path) -> String {
    let script = world.path("server.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\ntouch '{}'\nexit 3\n", marker.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script.display().to_string()
}

/// How one command that would run untrusted code is invoked; `marker` is written by
/// whatever of it runs.
struct Untrusted {
    name: &'static str,
    args: Vec<String>,
}

fn commands(world: &World, marker: &Path) -> Vec<Untrusted> {
    let touch = format!("cmd:touch '{}'", marker.display());
    let lsp = format!("lsp:{}", marker_script(world, marker));
    let dir = world.repo.path().display().to_string();
    let test = format!("touch '{}'", marker.display());
    vec![
        Untrusted {
            name: "replay cmd:",
            args: world.replay_args("r1.db", &["--suggester", &touch]),
        },
        Untrusted {
            name: "replay lsp:",
            args: world.replay_args("r2.db", &["--suggester", &lsp]),
        },
        Untrusted {
            name: "complete",
            args: [
                "complete",
                "--suggester",
                &touch,
                "--dir",
                &dir,
                "--file",
                "calc.py",
                "--at",
                "0:0",
            ]
            .map(String::from)
            .to_vec(),
        },
        Untrusted {
            name: "tasks run",
            args: world.tasks_args("t.db", &["--suggester", &touch, "--test-command", &test]),
        },
        Untrusted {
            name: "tasks cut",
            args: [
                "tasks", "cut", "--quiet", "--repo", &dir, "--commit", "HEAD",
            ]
            .map(String::from)
            .into_iter()
            .chain(["--retriever".to_string(), touch.clone()])
            .collect(),
        },
    ]
}

/// Runs every command with the bubblewrap `bwrap` names (and `extra` flags), and
/// returns per command: its exit code, whether the program ran, and the lines of
/// stderr that mention the sandbox.
fn outcomes(bwrap: &str, extra: &[&str]) -> Vec<(String, Option<i32>, bool, Vec<String>)> {
    let world = World::new();
    let marker = world.path("ran");
    commands(&world, &marker)
        .into_iter()
        .map(|command| {
            let _ = std::fs::remove_file(&marker);
            let mut args = command.args.clone();
            args.extend(extra.iter().map(|s| s.to_string()));
            let ran = run(&args, &[("NEXTEDIT_BWRAP", bwrap)]);
            let said: Vec<String> = ran
                .stderr()
                .lines()
                .filter(|l| l.contains("sandbox") || l.contains("SANDBOX"))
                .map(|l| l.replace(&world.dir.path().display().to_string(), "DIR"))
                .map(|l| l.replace(&world.repo.path().display().to_string(), "REPO"))
                .collect();
            (
                command.name.to_string(),
                ran.output.status.code(),
                marker.exists(),
                said,
            )
        })
        .collect()
}

#[test]
fn no_sandbox_no_run_unless_sandbox_off_is_given() {
    let world = World::new();
    let failing = world.path("bwrap");
    std::fs::write(
        &failing,
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&failing, std::fs::Permissions::from_mode(0o755)).unwrap();
    let failing = failing.display().to_string();
    let missing = "/nonexistent/bwrap";
    let cause = |bwrap: &str| {
        if bwrap == missing {
            format!(
                "bubblewrap ({missing}) is not installed; install it (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
            )
        } else {
            format!(
                "{bwrap} cannot make a sandbox here (exit status: 1): bwrap: setting up uid map: Permission denied; allow user namespaces (sysctl kernel.unprivileged_userns_clone=1 and a non-zero user.max_user_namespaces; on Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0), and use bubblewrap 0.8 or newer"
            )
        }
    };
    for bwrap in [missing, failing.as_str()] {
        let found = outcomes(bwrap, &[]);
        let mut expected = Vec::new();
        for (name, what, off) in [
            (
                "replay cmd:",
                "the suggester",
                "run it unsandboxed (it can then read the repository, the database and the network)",
            ),
            (
                "replay lsp:",
                "the suggester",
                "run it unsandboxed (it can then read the repository, the database and the network)",
            ),
            ("complete", "the suggester", "run it unsandboxed"),
            (
                "tasks run",
                "the tests and the suggester",
                "run them unsandboxed (they can then read the repository, the database and the network)",
            ),
            (
                "tasks cut",
                "it",
                "run it unsandboxed (it can then read the repository, your files and the network)",
            ),
        ] {
            let prefix = match name {
                "complete" => {
                    "nextedit: error: cmd:touch 'DIR/ran' at calc.py:0:0 of REPO: ".to_string()
                }
                "tasks run" => "nextedit: error: task run into DIR/t.db: ".to_string(),
                "tasks cut" => "nextedit: error: retriever `cmd:touch 'DIR/ran'`: ".to_string(),
                _ => "nextedit: error: ".to_string(),
            };
            expected.push((
                name.to_string(),
                Some(2),
                false,
                vec![format!(
                    "{prefix}cannot sandbox {what}: {}; or pass --sandbox off to {off}",
                    cause(bwrap)
                )],
            ));
        }
        // Refused before anything ran, naming the cause and the fix.
        assert_eq!(found, expected, "NEXTEDIT_BWRAP={bwrap}");
    }
    // --sandbox off on the command line runs the program, and says so even with -q.
    let found = outcomes(missing, &["--sandbox", "off"]);
    let ran: Vec<(&str, bool)> = found.iter().map(|f| (f.0.as_str(), f.2)).collect();
    assert_eq!(
        ran,
        [
            ("replay cmd:", true),
            ("replay lsp:", true),
            ("complete", true),
            ("tasks run", true),
            ("tasks cut", true)
        ]
    );
    let warnings: Vec<&str> = found
        .iter()
        .map(|f| {
            f.3.iter()
                .find(|l| l.contains("UNSANDBOXED"))
                .map(String::as_str)
                .unwrap_or("")
        })
        .collect();
    assert_eq!(
        warnings,
        [
            "nextedit: suggesters run UNSANDBOXED (--sandbox off): they can read the repository, the database and the network",
            "nextedit: suggesters run UNSANDBOXED (--sandbox off): they can read the repository, the database and the network",
            "nextedit: the suggester runs UNSANDBOXED (--sandbox off): it can read --dir's repository, your files and the network",
            "nextedit: tests and suggester run UNSANDBOXED (--sandbox off): they can read the repository, the database and the network",
            "nextedit: the retriever runs UNSANDBOXED (--sandbox off): it can read the repository, your files and the network",
        ]
    );
}

#[test]
fn tasks_run_has_no_sandbox_auto_any_more() {
    let world = World::new();
    let args = world.tasks_args(
        "t.db",
        &["--suggester", "builtin:oracle", "--sandbox", "auto"],
    );
    let ran = run(&args, &[]);
    assert_eq!(ran.output.status.code(), Some(2));
    assert!(
        ran.stderr()
            .contains("invalid value 'auto' for '--sandbox <SANDBOX>'")
            && ran.stderr().contains("[possible values: bwrap, off]"),
        "{}",
        ran.stderr()
    );
}

/// The variables a replay suggester finds, with `extra` flags, nextedit's own
/// environment holding an API key and a token.
fn suggester_environment(world: &World, extra: &[&str]) -> Value {
    let log = world.path(&format!("env-{}.jsonl", extra.len()));
    std::fs::write(&log, "").unwrap();
    let spec = hostile("env", &[format!("HOSTILE_LOG='{}'", log.display())]);
    let mut flags = vec!["--suggester", &spec, "--sandbox-rw", log.to_str().unwrap()];
    flags.extend(extra);
    let db = format!("env-{}.db", extra.len());
    let ran = run(
        &world.replay_args(&db, &flags),
        &[
            ("OPENAI_API_KEY", "sk-test-5b1f"),
            ("GITHUB_TOKEN", "ghp-test"),
            ("PYTHONPATH", "/nowhere"),
        ],
    );
    assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    line["found"].clone()
}

#[test]
fn untrusted_code_gets_only_the_allowed_environment() {
    let world = World::new();
    let found = suggester_environment(&world, &[]);
    assert_eq!(found["OPENAI_API_KEY"], false);
    let names: Vec<&str> = found["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    for name in ["GITHUB_TOKEN", "PYTHONPATH", "NEXTEDIT_BWRAP"] {
        assert!(!names.contains(&name), "{name} in {names:?}");
    }
    for name in ["PATH", "HOME", "TMPDIR", "NEXTEDIT_REPLAY_DB"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    // HOME is a directory of the worker's scratch, not nextedit's.
    let home = found["HOME"].as_str().unwrap();
    assert!(home.ends_with("/w0/home"), "{home}");
    assert_ne!(Some(home.to_string()), std::env::var("HOME").ok());
    // Named with --env, it passes.
    let found = suggester_environment(&world, &["--env", "OPENAI_API_KEY"]);
    assert_eq!(found["OPENAI_API_KEY"], true);
    // A test run likewise: valid only when the key is not there.
    // (The grep fails on the empty answer: the task discriminates.)
    let check = "grep -q hostile.escape calc.py && python3 -c 'import os, sys; sys.exit(3 if \"OPENAI_API_KEY\" in os.environ else 0)'";
    let mut reasons = Vec::new();
    for (db, extra) in [
        ("t1.db", vec![]),
        ("t2.db", vec!["--env", "OPENAI_API_KEY"]),
    ] {
        let mut flags = vec!["--suggester", "builtin:oracle", "--test-command", check];
        flags.extend(extra);
        run(
            &world.tasks_args(db, &flags),
            &[("OPENAI_API_KEY", "sk-test-5b1f")],
        );
        let report = task_report(&world.path(db));
        reasons.push(report["left_out"][0]["reason"].clone());
    }
    assert_eq!(
        reasons,
        [
            Value::Null,
            json!("the ground truth fails its tests (exit 3)")
        ]
    );
    // A name that is not set is refused before anything runs.
    let ran = run(
        &world.replay_args(
            "x.db",
            &["--suggester", "cmd:true", "--env", "NOT_SET_HERE"],
        ),
        &[],
    );
    assert_eq!(ran.output.status.code(), Some(2));
    assert!(
        ran.stderr()
            .contains("--env NOT_SET_HERE: NOT_SET_HERE is not set in nextedit's environment"),
        "{}",
        ran.stderr()
    );
}

#[test]
fn an_unsandboxed_task_run_is_marked_in_every_report_format() {
    let world = World::new();
    let flags = [
        "--suggester",
        "builtin:oracle",
        "--test-command",
        // Passes with the ground truth only, not with the empty answer.
        "grep -q hostile.escape calc.py",
        "--sandbox",
        "off",
    ];
    let ran = run(&world.tasks_args("t.db", &flags), &[]);
    assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
    let db = world.path("t.db");
    let page = world.path("report.html");
    let out = nextedit_with_db(
        &["tasks", "report", "1", "--html", page.to_str().unwrap()],
        &db,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines().nth(1),
        Some(
            "  UNSANDBOXED (sandbox off): its tests and suggester could read the repository, the database and the network"
        ),
        "{text}"
    );
    let report = task_report(&db);
    assert_eq!(
        (&report["sandbox"], &report["unsandboxed"]),
        (&json!("off"), &json!(true))
    );
    assert!(
        std::fs::read_to_string(&page).unwrap().contains(
            "<p class=\"warn\">Unsandboxed (sandbox off): its tests and suggester could read the repository, the database and the network.</p>"
        )
    );
}

/// A retriever command that says on stderr, at its first query, what it found: the
/// text of `secret` (or the error reading it) and whether `OPENAI_API_KEY` is set;
/// then scores every candidate 0.
fn probing_retriever(world: &World, secret: &Path) -> String {
    let script = world.path("probe_retriever.py");
    std::fs::write(
        &script,
        format!(
            r#"import json, os, sys
said = False
for line in sys.stdin:
    if not said:
        try:
            found = open({secret:?}).read()
        except OSError as e:
            found = type(e).__name__
        print("PROBE " + json.dumps({{"secret": found, "key": "OPENAI_API_KEY" in os.environ}}), file=sys.stderr, flush=True)
        said = True
    print(json.dumps({{"scores": [0.0] * len(json.loads(line)["candidates"])}}), flush=True)
"#,
            secret = secret.display().to_string()
        ),
    )
    .unwrap();
    format!(
        "cmd:python3 {} api_key=sk-retriever-7c2e9a",
        script.display()
    )
}

#[test]
fn a_retriever_command_reads_no_file_and_no_key_outside_its_sandbox() {
    let world = World::new();
    // Beside the retriever's own script, which it is shown (and nothing else there).
    let secret = world.path("secret.txt");
    std::fs::write(&secret, "s3cret").unwrap();
    let spec = probing_retriever(&world, &secret);
    let dir = world.repo.path().display().to_string();
    let probe = |extra: &[&str]| {
        let args: Vec<String> = ["tasks", "cut", "--quiet", "--repo", &dir]
            .iter()
            .chain(&["--commit", "HEAD", "--scenario", "full_block"])
            .chain(&["--retriever", &spec])
            .chain(extra)
            .map(|s| s.to_string())
            .collect();
        let ran = run(&args, &[("OPENAI_API_KEY", "sk-test-5b1f")]);
        assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
        let stderr = ran.stderr();
        let line = stderr
            .lines()
            .find_map(|l| l.strip_prefix("PROBE "))
            .unwrap_or_else(|| panic!("the retriever was never asked: {stderr}"));
        let found: Value = serde_json::from_str(line).unwrap();
        // Tasks name their retriever with the key its spec carries masked.
        let task: Value = serde_json::from_str(
            String::from_utf8_lossy(&ran.output.stdout)
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        let named = task["context"]["retriever"].as_str().unwrap().to_string();
        (found, named)
    };
    let masked = spec.replace("sk-retriever-7c2e9a", "*******************");
    assert_eq!(
        probe(&[]),
        (
            json!({"secret": "FileNotFoundError", "key": false}),
            masked.clone()
        )
    );
    assert_eq!(
        probe(&["--env", "OPENAI_API_KEY"]).0,
        json!({"secret": "FileNotFoundError", "key": true})
    );
    // Unsandboxed it reads the file (the probe works), and still gets no key.
    assert_eq!(
        probe(&["--sandbox", "off"]).0,
        json!({"secret": "s3cret", "key": false})
    );
}
