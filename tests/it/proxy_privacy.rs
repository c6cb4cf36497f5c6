//! Privacy through the real proxy binary: excluded files are forwarded but never
//! stored, secrets are masked in everything stored, the database is private.

use crate::common;
use nextedit::store::SessionRead;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::*;
use nextedit::engine::lsp_client::LspClient;
use nextedit::store::Database;
use serde_json::json;

const AWS_KEY: &str = "AKIAIOSFODNN7EXAMPLE";
const DOTENV_SECRET: &str = "hunter2-very-private";
const IGNORED_TEXT: &str = "private notes nobody may read";

#[test]
fn excluded_files_and_secrets_never_reach_the_database() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("ws")).unwrap();
    let workspace = tmp.path().join("ws").canonicalize().unwrap();
    std::fs::write(workspace.join(".nexteditignore"), "# mine\nnotes/\n").unwrap();
    let db = tmp.path().join("data/nextedit/rec.db");
    let server_in = tmp.path().join("in.bin");
    let server_out = tmp.path().join("out.bin");
    let mut fake = Command::new("python3");
    fake.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"));
    let mut client = spawn_proxied(&db, &workspace, teed(&fake, &server_in, &server_out), &[]);
    client.initialize(&workspace, TIMEOUT).unwrap();
    let open = |client: &LspClient, name: &str, text: &str| {
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri(&workspace.join(name)), "languageId": "plaintext", "version": 1, "text": text}}),
            )
            .unwrap();
    };
    open(&client, ".env", &format!("PASSWORD={DOTENV_SECRET}\n"));
    open(&client, "notes/todo.txt", IGNORED_TEXT);
    open(&client, "config.py", &format!("KEY = '{AWS_KEY}'\n"));
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri(&workspace.join(".env")), "version": 2},
                   "contentChanges": [{"range": {"start": {"line": 1, "character": 0}, "end": {"line": 1, "character": 0}}, "text": DOTENV_SECRET}]}),
        )
        .unwrap();
    client
        .request(
            "textDocument/hover",
            at(&uri(&workspace.join(".env")), Pos(0, 1)),
            TIMEOUT,
        )
        .unwrap();
    client.shutdown(TIMEOUT).unwrap();

    // The server saw everything, unchanged.
    let forwarded = std::fs::read(&server_in).unwrap();
    assert!(String::from_utf8_lossy(&forwarded).contains(DOTENV_SECRET));
    assert!(String::from_utf8_lossy(&forwarded).contains(AWS_KEY));

    // The database file holds none of it, in any table or page.
    let mut stored = std::fs::read(&db).unwrap();
    for suffix in ["-wal", "-shm"] {
        let side = db.with_file_name(format!("rec.db{suffix}"));
        if side.exists() {
            stored.extend(std::fs::read(side).unwrap());
        }
    }
    let stored = String::from_utf8_lossy(&stored);
    for secret in [DOTENV_SECRET, IGNORED_TEXT, AWS_KEY] {
        assert!(!stored.contains(secret), "{secret:?} was stored");
    }

    let database = Database::open_existing(&db).unwrap();
    let session = &database.sessions().unwrap()[0];
    let docs: Vec<(String, bool)> = database
        .documents(session.id)
        .unwrap()
        .into_iter()
        .map(|d| (d.path, d.excluded))
        .collect();
    assert_eq!(
        docs,
        vec![
            (".env".into(), true),
            ("notes/todo.txt".into(), true),
            ("config.py".into(), false)
        ]
    );
    let config_uri = uri(&workspace.join("config.py"));
    assert_eq!(
        database
            .document_text(session.id, &config_uri, None)
            .unwrap()
            .as_deref(),
        Some("KEY = '********************'\n")
    );
    assert_eq!(
        database
            .document_text(session.id, &uri(&workspace.join(".env")), None)
            .unwrap(),
        None
    );
    assert_eq!(session.changes, 0, "the change to .env is not stored");

    // Private files: 0600 database in a 0700 directory.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(db.parent().unwrap()), 0o700);
    let wal = db.with_file_name("rec.db-wal");
    if wal.exists() {
        assert_eq!(mode(&wal), 0o600);
    }
}

/// Every byte SQLite wrote for `db` (the file, its WAL and shared memory).
fn stored_bytes(db: &Path) -> String {
    let mut stored = std::fs::read(db).unwrap();
    for suffix in ["-wal", "-shm"] {
        let mut side = db.as_os_str().to_owned();
        side.push(suffix);
        if let Ok(bytes) = std::fs::read(&side) {
            stored.extend(bytes);
        }
    }
    String::from_utf8_lossy(&stored).into_owned()
}

const DOC_MARKER: &str = "docmarker3e9d1c";
const FINAL_MARKER: &str = "finalmarker77ab42";
const FN_MARKER: &str = "fnmarker5c0ffe";
const NOTEBOOK_MARKER: &str = "nbmarkera1b2c3";
const TOKEN: &str = "tokmarker0d15ea5e";

/// Issue 12 item 2: a real pyright quotes an excluded module (docstrings, `Final`
/// values) in hover, completion and signature answers about a normal file; an
/// excluded notebook is opened; the server command carries `--token=…`. None of
/// it reaches the database, in any page, WAL or shared memory.
#[test]
fn server_answers_quoting_excluded_files_are_not_stored() {
    if !available(
        "server_answers_quoting_excluded_files_are_not_stored",
        &[Server::Pyright],
    ) {
        return;
    }
    let pyright = pyright();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("ws")).unwrap();
    let workspace = tmp.path().join("ws").canonicalize().unwrap();
    std::fs::write(
        workspace.join("secret_config.py"),
        format!(
            "\"\"\"Settings: {DOC_MARKER}.\"\"\"\nfrom typing import Final\n\nAPI_KEY: Final = \"{FINAL_MARKER}\"\n\n\ndef connect(host: str) -> None:\n    \"\"\"Connects: {FN_MARKER}.\"\"\"\n"
        ),
    )
    .unwrap();
    let main_text =
        "import secret_config\nx = secret_config.API_KEY\nsecret_config.connect(\nsecret_config.\n";
    std::fs::write(workspace.join("main.py"), main_text).unwrap();
    let db = tmp.path().join("rec.db");
    // A wrapper as editors configure them, with a token on the command line.
    let mut server = Command::new("sh");
    server
        .arg("-c")
        .arg("exec \"$0\" --stdio")
        .arg(&pyright)
        .arg(format!("--token={TOKEN}"));
    let mut client = spawn_proxied(&db, &workspace, server, &[]);
    client
        .request(
            "initialize",
            json!({
                "processId": std::process::id(),
                "clientInfo": {"name": "editor", "version": format!("1.0 AKIAIOSFODNN7EXAMPLE")},
                "rootUri": uri(&workspace),
                "workspaceFolders": [{"uri": uri(&workspace), "name": "ws"}],
                "capabilities": {
                    "textDocument": {
                        "hover": {"contentFormat": ["markdown", "plaintext"]},
                        "completion": {"completionItem": {"documentationFormat": ["markdown", "plaintext"]}},
                        "signatureHelp": {"signatureInformation": {"documentationFormat": ["markdown", "plaintext"]}}
                    },
                    "notebookDocument": {"synchronization": {}},
                    "workspace": {"configuration": true, "workspaceFolders": true}
                }
            }),
            TIMEOUT,
        )
        .unwrap();
    client.notify("initialized", json!({})).unwrap();
    let main = uri(&workspace.join("main.py"));
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": main, "languageId": "python", "version": 1, "text": main_text}}),
        )
        .unwrap();
    // An excluded notebook (the default `*secret*` glob), opened for real.
    let notebook = uri(&workspace.join("secret_analysis.ipynb"));
    client
        .notify(
            "notebookDocument/didOpen",
            json!({
                "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1,
                    "cells": [{"kind": 2, "document": format!("{notebook}#cell1")}]},
                "cellTextDocuments": [{"uri": format!("{notebook}#cell1"), "languageId": "python", "version": 1,
                    "text": format!("password = '{NOTEBOOK_MARKER}'\n")}]
            }),
        )
        .unwrap();
    let hover = client
        .request("textDocument/hover", at(&main, Pos(1, 20)), TIMEOUT)
        .unwrap();
    let module_hover = client
        .request("textDocument/hover", at(&main, Pos(0, 10)), TIMEOUT)
        .unwrap();
    let completion = client
        .request("textDocument/completion", at(&main, Pos(3, 14)), TIMEOUT)
        .unwrap();
    let items = completion["items"].as_array().cloned().unwrap_or_default();
    let connect = items
        .iter()
        .find(|i| i["label"] == "connect")
        .cloned()
        .expect("pyright completes `connect`");
    let resolved = client
        .request("completionItem/resolve", connect, TIMEOUT)
        .unwrap();
    let signature = client
        .request("textDocument/signatureHelp", at(&main, Pos(2, 22)), TIMEOUT)
        .unwrap();
    // The answers really quote the excluded module: otherwise this test proves nothing.
    let answers = format!("{hover} {module_hover} {completion} {resolved} {signature}");
    for marker in [DOC_MARKER, FINAL_MARKER, FN_MARKER] {
        assert!(
            answers.contains(marker),
            "{marker} not in answers: {answers}"
        );
    }
    client.shutdown(TIMEOUT).unwrap();

    let stored = stored_bytes(&db);
    for marker in [
        DOC_MARKER,
        FINAL_MARKER,
        FN_MARKER,
        NOTEBOOK_MARKER,
        TOKEN,
        "AKIAIOSFODNN7EXAMPLE",
    ] {
        assert!(!stored.contains(marker), "{marker} was stored");
    }
    let database = Database::open_existing(&db).unwrap();
    let (command, client_info): (String, String) = database
        .connection()
        .query_row("SELECT server_command, client FROM sessions", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    let command: Vec<String> = serde_json::from_str(&command).unwrap();
    assert_eq!(
        command.last().unwrap(),
        &format!("--token={}", "*".repeat(TOKEN.len()))
    );
    assert_eq!(client_info, "editor 1.0 ********************");
    // What is kept of the answers: the reads' locations; the notebook is excluded.
    let session = &database.sessions().unwrap()[0];
    let docs: Vec<(String, bool)> = database
        .documents(session.id)
        .unwrap()
        .into_iter()
        .map(|d| (d.path, d.excluded))
        .collect();
    assert_eq!(
        docs,
        vec![
            ("main.py".into(), false),
            ("secret_analysis.ipynb".into(), true),
            ("secret_analysis.ipynb#cell1".into(), true),
        ]
    );
    let server_raw: i64 = database
        .connection()
        .query_row(
            "SELECT count(*) FROM messages WHERE dir = 's2c' AND raw IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(server_raw, 0, "server raw bytes are off by default");
}

fn fake_server() -> Command {
    let mut fake = Command::new("python3");
    fake.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"));
    fake
}

/// Issue 12's privacy gaps: the second root's ignore file, an invalid ignore line,
/// an ignore file that is a symlink to /dev/zero, new default excludes, PGP keys,
/// an excluded didOpen that is not valid JSON, a signal about an excluded file.
#[test]
fn privacy_gaps_are_closed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = |name: &str| {
        std::fs::create_dir_all(tmp.path().join(name)).unwrap();
        tmp.path().join(name).canonicalize().unwrap()
    };
    let (a, b, c) = (root("a"), root("b"), root("c"));
    std::fs::write(a.join(".nexteditignore"), "[bad\nprivate_a.txt\n").unwrap();
    std::fs::write(b.join(".nexteditignore"), "/drafts/*.txt\n").unwrap();
    std::os::unix::fs::symlink("/dev/zero", c.join(".nexteditignore")).unwrap();
    let db = tmp.path().join("rec.db");
    let stderr_path = tmp.path().join("stderr.txt");
    let mut command = Command::new(nextedit_bin());
    command
        .args(["proxy", "--db"])
        .arg(&db)
        .arg("--")
        .arg("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"))
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut client = LspClient::spawn(command).unwrap();
    let folders: Vec<_> = [&a, &b, &c]
        .iter()
        .map(|d| json!({"uri": uri(d), "name": "x"}))
        .collect();
    client
        .request(
            "initialize",
            json!({"rootUri": uri(&a), "workspaceFolders": folders, "capabilities": {}}),
            TIMEOUT,
        )
        .unwrap();
    let open = |path: &Path, text: &str| {
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri(path), "languageId": "plaintext", "version": 1, "text": text}}),
            )
            .unwrap();
    };
    open(&a.join("private_a.txt"), "marker-one-private-a");
    open(&b.join("drafts/x.txt"), "marker-two-second-root");
    open(&b.join("kept.txt"), "kept text");
    open(&a.join(".ssh/id_ed25519"), "marker-three-ssh-key");
    open(&a.join(".aws/credentials"), "marker-four-aws");
    open(&a.join("secrets/db.yaml"), "marker-five-secrets-dir");
    open(
        &a.join("keys.txt"),
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nmarker-six-pgp\n-----END PGP PRIVATE KEY BLOCK-----\n",
    );
    // An excluded didOpen whose body is not valid JSON (cut short).
    let body = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"{}","text":"marker-seven-bad-json"#,
        uri(&a.join(".env"))
    );
    client
        .send_raw(&nextedit::core::lsp::framing::encode_frame(body.as_bytes()))
        .unwrap();
    client
        .notify(
            "$/nextedit/selection",
            json!({"textDocument": {"uri": uri(&a.join("private_a.txt"))}, "text": "marker-eight-signal"}),
        )
        .unwrap();
    client.shutdown(TIMEOUT).unwrap();

    let stored = stored_bytes(&db);
    for marker in [
        "marker-one",
        "marker-two",
        "marker-three",
        "marker-four",
        "marker-five",
        "marker-six",
        "marker-seven",
        "marker-eight",
    ] {
        assert!(!stored.contains(marker), "{marker} was stored");
    }
    assert!(stored.contains("kept text"));
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert!(
        stderr.contains(&format!(
            "{}: skipping a line: invalid exclude glob \"[bad\"",
            a.join(".nexteditignore").display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "ignoring {}: not a regular file",
            c.join(".nexteditignore").display()
        )),
        "{stderr}"
    );
    let database = Database::open_existing(&db).unwrap();
    let session = &database.sessions().unwrap()[0];
    let excluded: Vec<(String, bool)> = database
        .documents(session.id)
        .unwrap()
        .into_iter()
        .map(|d| (d.path, d.excluded))
        .collect();
    let b_path = b.to_string_lossy().into_owned();
    assert_eq!(
        excluded,
        vec![
            ("private_a.txt".to_string(), true),
            (format!("{b_path}/drafts/x.txt"), true),
            (format!("{b_path}/kept.txt"), false),
            (".ssh/id_ed25519".to_string(), true),
            (".aws/credentials".to_string(), true),
            ("secrets/db.yaml".to_string(), true),
            ("keys.txt".to_string(), false),
        ]
    );
}

/// A symbolic link at the database path is refused (forwarding goes on); an
/// existing database readable by others is made private, and the proxy says so.
#[test]
fn database_path_must_be_a_private_regular_file() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("target.db");
    let link = tmp.path().join("link.db");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let run = |db: &Path| {
        let stderr_path = tmp.path().join("stderr.txt");
        let mut command = Command::new(nextedit_bin());
        command
            .args(["proxy", "--db"])
            .arg(db)
            .arg("--")
            .args(fake_server().get_program().to_str())
            .args(fake_server().get_args())
            .stderr(std::fs::File::create(&stderr_path).unwrap());
        let mut client = LspClient::spawn(command).unwrap();
        client.initialize(tmp.path(), TIMEOUT).unwrap();
        client.shutdown(TIMEOUT).unwrap();
        std::fs::read_to_string(&stderr_path).unwrap()
    };
    let stderr = run(&link);
    assert!(stderr.contains("it is a symbolic link"), "{stderr}");
    assert!(!target.exists(), "nothing created through the link");

    let open = tmp.path().join("open.db");
    Database::open(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    let stderr = run(&open);
    assert!(
        stderr.contains(&format!(
            "{} was readable by others (mode 666); made it private (600)",
            open.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::metadata(&open).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        Database::open_existing(&open)
            .unwrap()
            .sessions()
            .unwrap()
            .len(),
        1
    );
}

/// `derive --store` and `replay --repo` apply the same rules as the proxy: a
/// committed `.env` keeps no text, AWS keys in other files are masked.
#[test]
fn derived_and_replayed_trajectories_are_stored_with_the_privacy_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@e",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(&repo)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("app.py"), "x = 1\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    std::fs::write(repo.join(".env"), format!("PASSWORD={DOTENV_SECRET}\n")).unwrap();
    std::fs::write(repo.join("app.py"), format!("x = 1\nKEY = '{AWS_KEY}'\n")).unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "secrets"]);
    let db = tmp.path().join("rec.db");
    let output = Command::new(nextedit_bin())
        .args(["derive", "--repo"])
        .arg(&repo)
        .args(["--commit", "HEAD", "--store", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stored = stored_bytes(&db);
    for secret in [DOTENV_SECRET, AWS_KEY] {
        assert!(!stored.contains(secret), "{secret:?} was stored");
    }
    let database = Database::open_existing(&db).unwrap();
    let id = database.sessions().unwrap()[0].id;
    let trajectory = database.trajectory(id).unwrap();
    let files: Vec<(String, bool, Option<String>)> = trajectory
        .files
        .iter()
        .map(|f| (f.path.clone(), f.excluded, f.final_text.clone()))
        .collect();
    assert_eq!(
        files,
        vec![
            (".env".to_string(), true, None),
            (
                "app.py".to_string(),
                false,
                Some("x = 1\nKEY = '********************'\n".to_string())
            ),
        ]
    );
    assert!(trajectory.edits.iter().all(|e| e.file == "app.py"));

    // `replay --repo` stores the trajectories it runs: the same rules.
    let replay_db = tmp.path().join("replay.db");
    let output = Command::new(nextedit_bin())
        .args(["replay", "--repo"])
        .arg(&repo)
        .args([
            "--commit",
            "HEAD",
            "--suggester",
            "builtin:propagate",
            "--db",
        ])
        .arg(&replay_db)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stored = stored_bytes(&replay_db);
    for secret in [DOTENV_SECRET, AWS_KEY] {
        assert!(!stored.contains(secret), "{secret:?} was stored by replay");
    }
}
