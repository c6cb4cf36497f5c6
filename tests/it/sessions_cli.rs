//! `nextedit sessions …` on a session recorded through the real proxy binary:
//! listing, showing, exporting (validated against schemas/trajectory.schema.json),
//! rebuilding text, deleting, and the errors a user sees.

use crate::common;
use crate::common::nextedit_with_db as nextedit;
use nextedit::store::SessionRead;

use std::path::Path;
use std::process::{Command, Output};

use common::*;
use serde_json::{Value, json};

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Records: open a.py, two edits, a signal, a definition answered by the fake
/// server's echo (so its "target" is whatever we sent), save, close.
fn record(tmp: &Path) -> std::path::PathBuf {
    let workspace = tmp.join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let db = tmp.join("rec.db");
    let mut fake = Command::new("python3");
    fake.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"));
    let mut client = spawn_proxied(&db, &workspace, fake, &[]);
    client.initialize(&workspace, TIMEOUT).unwrap();
    let a = uri(&workspace.join("a.py"));
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": a, "languageId": "python", "version": 1, "text": "x = 1\ny = 2\n"}}))
        .unwrap();
    client
        .notify(
            "textDocument/didChange",
            did_change(
                &a,
                2,
                &TextChange {
                    start: Pos(0, 4),
                    end: Pos(0, 5),
                    text: "10",
                },
            ),
        )
        .unwrap();
    client
        .notify(
            "textDocument/didChange",
            did_change(
                &a,
                3,
                &TextChange {
                    start: Pos(2, 0),
                    end: Pos(2, 0),
                    text: "z = x\n",
                },
            ),
        )
        .unwrap();
    client
        .notify(
            "$/nextedit/cursor",
            json!({"textDocument": {"uri": a}, "position": {"line": 2, "character": 4}}),
        )
        .unwrap();
    client
        .request("textDocument/hover", at(&a, Pos(2, 4)), TIMEOUT)
        .unwrap();
    client
        .notify("textDocument/didSave", json!({"textDocument": {"uri": a}}))
        .unwrap();
    client
        .notify("textDocument/didClose", json!({"textDocument": {"uri": a}}))
        .unwrap();
    client.shutdown(TIMEOUT).unwrap();
    db
}

#[test]
fn list_show_export_replay_delete() {
    let tmp = tempfile::tempdir().unwrap();
    let db = record(tmp.path());

    let list = stdout(&nextedit(&["sessions", "list"], &db));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    assert!(lines[1].trim_start().starts_with("1  recorded"), "{list}");
    assert!(lines[1].contains("ended"), "{list}");

    let show = stdout(&nextedit(&["sessions", "show", "1"], &db));
    assert!(
        show.contains(
            "recorded    14 messages, 2 changes (2 edits), 2 reads, 1 signals, 0 dropped"
        ),
        "{show}"
    );
    assert!(show.contains("a.py"), "{show}");

    let export = stdout(&nextedit(&["sessions", "export", "1"], &db));
    let trajectory: Value = serde_json::from_str(&export).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../../schemas/trajectory.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&trajectory)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "export does not follow the schema: {errors:#?}"
    );
    assert_eq!(trajectory["files"][0]["path"], "a.py");
    assert_eq!(trajectory["files"][0]["base_text"], "x = 1\ny = 2\n");
    assert_eq!(
        trajectory["files"][0]["final_text"],
        "x = 10\ny = 2\nz = x\n"
    );
    let types: Vec<&str> = trajectory["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "open", "read", "change", "change", "signal", "read", "save", "close"
        ]
    );
    let change = &trajectory["events"][2];
    assert_eq!(
        (
            change["start_byte"].as_u64(),
            change["end_byte"].as_u64(),
            change["before"].as_str(),
            change["after"].as_str()
        ),
        (Some(4), Some(5), Some("1"), Some("10"))
    );

    // The changes coalesced into the edits a person would name, in temporal order.
    let edits: Vec<(&str, &str, &str, &str)> = trajectory["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap(),
                e["kind"].as_str().unwrap(),
                e["before_text"].as_str().unwrap(),
                e["after_text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        edits,
        vec![
            ("e0", "replace", "1", "10"),
            ("e1", "insert", "", "z = x\n")
        ]
    );
    assert_eq!(
        trajectory["order"]["natural"],
        serde_json::json!(["e0", "e1"])
    );

    let jsonl = stdout(&nextedit(
        &["sessions", "export", "1", "--format", "jsonl"],
        &db,
    ));
    let kinds: Vec<String> = jsonl
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds.first().map(String::as_str), Some("session"));
    assert_eq!(kinds.iter().filter(|k| *k == "event").count(), 8);
    assert_eq!(kinds.last().map(String::as_str), Some("order"));

    assert_eq!(
        stdout(&nextedit(&["sessions", "replay-text", "1", "a.py"], &db)),
        "x = 10\ny = 2\nz = x\n"
    );
    assert_eq!(
        stdout(&nextedit(
            &["sessions", "replay-text", "1", "a.py", "--seq", "5"],
            &db
        )),
        "x = 1\ny = 2\n"
    );

    let missing = nextedit(&["sessions", "replay-text", "1", "b.py"], &db);
    assert_eq!(missing.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "nextedit: error: session 1 has no document matching \"b.py\"; it has: a.py\n"
    );
    let no_session = nextedit(&["sessions", "show", "9"], &db);
    assert_eq!(
        String::from_utf8_lossy(&no_session.stderr),
        "nextedit: error: no session 9 in the database\n"
    );

    assert_eq!(
        stdout(&nextedit(&["sessions", "delete", "1"], &db)),
        "deleted session 1\n"
    );
    assert_eq!(
        stdout(&nextedit(&["sessions", "list"], &db)),
        "no sessions recorded yet\n"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    for table in [
        "messages",
        "documents",
        "snapshots",
        "edits",
        "reads",
        "signals",
    ] {
        let n: i64 = conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 0, "{table} still has rows");
    }
}

#[test]
fn a_missing_database_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("nope.db");
    let output = nextedit(&["sessions", "list"], &db);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "nextedit: error: no database at {} (record a session first, or pass --db)\n",
            db.display()
        )
    );
    assert!(!db.exists(), "read commands never create a database");
}

#[test]
fn workspace_from_initialize_and_its_git_head() {
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("repo");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    std::fs::write(workspace.join("a.py"), "x = 1\n").unwrap();
    std::fs::write(workspace.join(".nexteditignore"), "a.py\n").unwrap();
    let repo = git2::Repository::init(&workspace).unwrap();
    let mut index = repo.index().unwrap();
    index.add_path(Path::new("a.py")).unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who =
        git2::Signature::new("T", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
    let commit = repo
        .commit(Some("HEAD"), &who, &who, "init", &tree, &[])
        .unwrap();

    let db = tmp.path().join("rec.db");
    let mut command = Command::new(nextedit_bin());
    command
        .arg("proxy")
        .arg("--db")
        .arg(&db)
        .arg("--")
        .arg("python3");
    command.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"));
    quiet(&mut command);
    let mut client = nextedit::engine::lsp_client::LspClient::spawn(command).unwrap();
    client.initialize(&workspace, TIMEOUT).unwrap();
    let a = uri(&workspace.join("a.py"));
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": a, "languageId": "python", "version": 1, "text": "x = 1\n"}}))
        .unwrap();
    client.shutdown(TIMEOUT).unwrap();

    let db = nextedit::store::Database::open_existing(&db).unwrap();
    let session = &db.sessions().unwrap()[0];
    assert_eq!(
        session.workspace.as_deref(),
        Some(workspace.to_str().unwrap())
    );
    assert_eq!(
        session.git_head.as_deref(),
        Some(commit.to_string().as_str())
    );
    // The workspace's .nexteditignore applies once the workspace is known.
    let docs = db.documents(session.id).unwrap();
    assert_eq!((docs[0].path.as_str(), docs[0].excluded), ("a.py", true));
}

/// (id, kind, before, after) of each coalesced edit of an exported trajectory.
fn edit_rows(trajectory: &Value) -> Vec<(String, String, String, String)> {
    trajectory["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let field = |k: &str| e[k].as_str().unwrap().to_string();
            (
                field("id"),
                field("kind"),
                field("before_text"),
                field("after_text"),
            )
        })
        .collect()
}

fn event_types(trajectory: &Value) -> Vec<String> {
    trajectory["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn export_slices_a_window_and_files_of_a_recorded_session() {
    let tmp = tempfile::tempdir().unwrap();
    let db = record(tmp.path());
    let export = |args: &[&str]| -> Value {
        let mut all = vec!["sessions", "export", "1"];
        all.extend_from_slice(args);
        serde_json::from_str(&stdout(&nextedit(&all, &db))).unwrap()
    };
    let full = export(&[]);
    let changes: Vec<String> = full["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "change")
        .map(|e| e["seq"].to_string())
        .collect();
    assert_eq!(changes.len(), 2);

    // From the second change on: the base text already has the first.
    let sliced = export(&["--from", &changes[1]]);
    assert_eq!(sliced["files"][0]["base_text"], "x = 10\ny = 2\n");
    assert_eq!(sliced["files"][0]["final_text"], "x = 10\ny = 2\nz = x\n");
    assert_eq!(
        event_types(&sliced),
        ["change", "signal", "read", "save", "close"]
    );
    assert_eq!(
        edit_rows(&sliced),
        [("e0".into(), "insert".into(), "".into(), "z = x\n".into())]
    );
    assert_eq!(sliced["order"]["natural"], json!(["e0"]));
    assert_eq!(sliced["events"][0]["seq"].to_string(), changes[1]);

    // Up to the first change, of a.py: the text it ends with is that change's.
    let sliced = export(&["--to", &changes[0], "--file", "a.py"]);
    assert_eq!(sliced["files"][0]["base_text"], "x = 1\ny = 2\n");
    assert_eq!(sliced["files"][0]["final_text"], "x = 10\ny = 2\n");
    assert_eq!(event_types(&sliced), ["open", "read", "change"]);
    assert_eq!(
        edit_rows(&sliced),
        [("e0".into(), "replace".into(), "1".into(), "10".into())]
    );
    // A time window covering the whole session is the whole session.
    assert_eq!(export(&["--from", "0ms", "--to", "1h"]), full);

    let empty = nextedit(&["sessions", "export", "1", "--from", "1h"], &db);
    assert_eq!(empty.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&empty.stderr),
        "nextedit: error: cannot slice session 1: no events between 3600000ms and the end\n"
    );
    let unknown = nextedit(&["sessions", "export", "1", "--file", "b.py"], &db);
    assert_eq!(
        String::from_utf8_lossy(&unknown.stderr),
        "nextedit: error: cannot slice session 1: no file \"b.py\" in the trajectory (files: a.py)\n"
    );
    let bad = nextedit(&["sessions", "export", "1", "--to", "5 parsecs"], &db);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .contains("\"5 parsecs\" is not an event number or a time"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

/// Records one pyright session through the proxy that opens each `(file, text)` and
/// appends `typed` to the first.
fn record_texts(db: &Path, workspace: &Path, files: &[(&str, &str)], typed: &'static str) {
    let mut server = Command::new(pyright());
    server.arg("--stdio");
    let mut client = spawn_proxied(db, workspace, server, &[]);
    client.initialize(workspace, TIMEOUT).unwrap();
    for (i, (name, text)) in files.iter().enumerate() {
        let u = uri(&workspace.join(name));
        client
            .notify("textDocument/didOpen", json!({"textDocument": {"uri": u, "languageId": "python", "version": 1, "text": text}}))
            .unwrap();
        if i == 0 {
            let end = Pos(text.lines().count() as u32, 0);
            client
                .notify(
                    "textDocument/didChange",
                    did_change(
                        &u,
                        2,
                        &TextChange {
                            start: end,
                            end,
                            text: typed,
                        },
                    ),
                )
                .unwrap();
            client
                .request("textDocument/hover", at(&u, Pos(0, 1)), TIMEOUT)
                .unwrap();
        }
    }
    client.shutdown(TIMEOUT).unwrap();
}

/// Whether any of the database's files (main, -wal, -shm) holds `needle`.
fn database_holds(db: &Path, needle: &str) -> bool {
    ["", "-wal", "-shm"].iter().any(|suffix| {
        let file = format!("{}{suffix}", db.display());
        std::fs::read(&file)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
    })
}

#[test]
fn delete_and_purge_erase_the_text_from_the_database_files() {
    if !available(
        "delete_and_purge_erase_the_text_from_the_database_files",
        &[Server::Pyright],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let db = tmp.path().join("rec.db");
    record_texts(
        &db,
        &workspace,
        &[
            ("conf_alpha.py", "ALPHA = 'purge-me-7731'\n"),
            ("keep.py", "BETA = 'keep-me-2468'\n"),
        ],
        "GAMMA = 'purge-me-typed-5519'\n",
    );
    record_texts(
        &db,
        &workspace,
        &[("other.py", "DELTA = 'delete-me-9042'\n")],
        "EPS = 'delete-me-typed-3377'\n",
    );
    // Each session replayed once: the runs hold copies of the texts.
    for session in ["1", "2"] {
        let replay = nextedit(
            &[
                "replay",
                "--session",
                session,
                "--suggester",
                "builtin:noop",
            ],
            &db,
        );
        assert!(
            replay.status.success(),
            "{}",
            String::from_utf8_lossy(&replay.stderr)
        );
    }
    for marker in [
        "purge-me-7731",
        "purge-me-typed-5519",
        "keep-me-2468",
        "delete-me-9042",
    ] {
        assert!(database_holds(&db, marker), "{marker} was recorded");
    }

    assert_eq!(
        stdout(&nextedit(
            &["sessions", "purge", "--file", "conf_*.py"],
            &db
        )),
        "removed conf_alpha.py from session 1\ndeleted replay run 1 (it held a copy)\n"
    );
    assert!(!database_holds(&db, "purge-me-7731"));
    assert!(!database_holds(&db, "purge-me-typed-5519"));
    assert!(database_holds(&db, "keep-me-2468"), "other files stay");
    let show = stdout(&nextedit(&["sessions", "show", "1"], &db));
    assert!(show.contains("  documents   1\n    keep.py "), "{show}");

    assert_eq!(
        stdout(&nextedit(&["sessions", "delete", "2"], &db)),
        "deleted session 2\ndeleted replay run 2 (it held a copy)\n"
    );
    assert!(!database_holds(&db, "delete-me-9042"));
    assert!(!database_holds(&db, "delete-me-typed-3377"));
    assert!(database_holds(&db, "keep-me-2468"));
}
