//! Privacy through the real proxy binary: excluded files are forwarded but never
//! stored, secrets are masked in everything stored, the database is private.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::*;
use nextedit::lsp::client::LspClient;
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
