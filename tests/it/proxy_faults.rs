//! Fault injection around the real proxy binary with a fake server: crashes,
//! garbage output, a locked or too-new database, signals, editor EOF, bad frames.

use crate::common;
use nextedit::store::SessionRead;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use nextedit::engine::lsp_client::LspClient;
use nextedit::store::Database;
use serde_json::json;

fn proxy_command(db: &Path, server: &Command) -> Command {
    let mut command = Command::new(nextedit_bin());
    command.arg("proxy").arg("--db").arg(db).arg("--");
    command.arg(server.get_program()).args(server.get_args());
    for (key, value) in server.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    command
}

fn message_count(db: &Path) -> i64 {
    let db = Database::open_existing(db).unwrap();
    db.connection()
        .query_row("SELECT count(*) FROM messages", [], |r| r.get(0))
        .unwrap()
}

fn hover(client: &mut LspClient, n: u32) -> serde_json::Value {
    client
        .request("textDocument/hover", json!({"textDocument": {"uri": "file:///x.py"}, "position": {"line": n, "character": 0}}), TIMEOUT)
        .unwrap()
}

#[test]
fn server_crash_ends_the_session_with_its_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("rec.db");
    let mut command = proxy_command(&db, &fake_server("crash:4"));
    quiet(&mut command);
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    assert_eq!(
        hover(&mut client, 1),
        json!({"echo": {"textDocument": {"uri": "file:///x.py"}, "position": {"line": 1, "character": 0}}})
    );
    // The 4th message makes the server exit with 3 before answering.
    let err = client
        .request("textDocument/hover", json!({}), TIMEOUT)
        .unwrap_err();
    assert!(
        matches!(err, nextedit::engine::lsp_client::ClientError::Closed(_)),
        "{err}"
    );
    let status = client.wait(TIMEOUT);
    assert_eq!(status.code(), Some(3));
    // initialize, its response, initialized, hover, its response, the last hover.
    assert_eq!(message_count(&db), 6);
    let session = &Database::open_existing(&db).unwrap().sessions().unwrap()[0];
    assert_eq!(
        (session.status.as_str(), session.exit_code),
        ("ended", Some(3))
    );
}

#[test]
fn server_garbage_is_forwarded_and_recorded_as_invalid() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("rec.db");
    let mut command = proxy_command(&db, &fake_server("garbage"));
    quiet(&mut command);
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    hover(&mut client, 2);
    client.shutdown(TIMEOUT).unwrap();
    let received = client.transcript().received;
    assert_eq!(
        String::from_utf8_lossy(&received)
            .matches("garbage from the server\r\n\r\n")
            .count(),
        3
    );
    let conn = Database::open_existing(&db).unwrap();
    let invalid: Vec<(String, String)> = conn
        .connection()
        .prepare("SELECT dir, invalid FROM messages WHERE invalid IS NOT NULL ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        invalid,
        vec![
            (
                "s2c".to_string(),
                "malformed header line \"garbage from the server\"".to_string()
            );
            3
        ]
    );
}

#[test]
fn editor_garbage_reaches_the_server_byte_for_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("rec.db");
    let server_in = tmp.path().join("in.bin");
    let server_out = tmp.path().join("out.bin");
    let mut command = proxy_command(&db, &teed(&fake_server(""), &server_in, &server_out));
    quiet(&mut command);
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    client
        .send_raw(b"Content-Length: -5\r\n\r\nnot json at all\n")
        .unwrap();
    client.send_raw(b"Content-Length: 3\r\ncontent-type: application/vscode-jsonrpc; charset=utf8\r\n\r\n[1]").unwrap();
    // A frame split across two writes.
    let body = br#"{"jsonrpc":"2.0","method":"textDocument/didSave","params":{"textDocument":{"uri":"file:///x.py"}}}"#;
    let frame = nextedit::core::lsp::framing::encode_frame(body);
    client.send_raw(&frame[..10]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    client.send_raw(&frame[10..]).unwrap();
    hover(&mut client, 3);
    client.shutdown(TIMEOUT).unwrap();
    let transcript = client.transcript();
    assert!(std::fs::read(&server_in).unwrap() == transcript.sent);
    assert!(std::fs::read(&server_out).unwrap() == transcript.received);
    let db = Database::open_existing(&db).unwrap();
    let kinds: Vec<(Option<String>, Option<String>)> = db
        .connection()
        .prepare("SELECT kind, method FROM messages WHERE dir = 'c2s' ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        kinds,
        vec![
            (s("request"), s("initialize")),
            (s("notification"), s("initialized")),
            (None, None),
            (s("other"), None),
            (s("notification"), s("textDocument/didSave")),
            (s("request"), s("textDocument/hover")),
            (s("request"), s("shutdown")),
            (s("notification"), s("exit")),
        ]
    );
}

#[test]
fn locked_database_pauses_recording_without_touching_traffic() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("rec.db");
    Database::open(&db).unwrap();
    let stderr_path = tmp.path().join("stderr.txt");
    let mut command = proxy_command(&db, &fake_server(""));
    command.env("NEXTEDIT_BUSY_TIMEOUT_MS", "20");
    command.stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    hover(&mut client, 0);
    std::thread::sleep(Duration::from_millis(100));
    // Another process takes the write lock for a while.
    let locker = rusqlite::Connection::open(&db).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    // Every one of these hovers is answered while the lock is held: traffic goes on.
    for line in 1..=50 {
        hover(&mut client, line);
    }
    std::thread::sleep(Duration::from_millis(300));
    locker.execute_batch("COMMIT").unwrap();
    drop(locker);
    for line in 51..=60 {
        hover(&mut client, line);
    }
    client.shutdown(TIMEOUT).unwrap();
    // Nothing lost: initialize×2, initialized, 61 hovers×2, shutdown×2, exit.
    assert_eq!(message_count(&db), 3 + 61 * 2 + 3);
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(
        stderr.lines().count(),
        2,
        "one line when recording pauses, one when it resumes: {stderr}"
    );
    assert!(
        stderr.contains("paused") && stderr.contains("resumed"),
        "{stderr}"
    );
}

#[test]
fn too_new_schema_is_reported_once_and_forwarding_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("rec.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let stderr_path = tmp.path().join("stderr.txt");
    let mut command = proxy_command(&db, &fake_server(""));
    command.stderr(std::fs::File::create(&stderr_path).unwrap());
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    for line in 0..5 {
        hover(&mut client, line);
    }
    let status = client.shutdown(TIMEOUT).unwrap();
    assert!(status.success());
    let stderr = std::fs::read_to_string(&stderr_path).unwrap();
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("schema version 99"))
            .count(),
        1,
        "{stderr}"
    );
}

fn spawn_raw_proxy(db: &Path) -> (std::process::Child, PathBuf) {
    let mut command = proxy_command(db, &fake_server(""));
    quiet(&mut command);
    let child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    (child, db.to_path_buf())
}

fn send_hovers(stdin: &mut impl std::io::Write, n: usize) {
    for i in 0..n {
        let body = json!({"jsonrpc": "2.0", "id": i + 1, "method": "textDocument/hover", "params": {"position": {"line": i, "character": 0}}});
        stdin
            .write_all(&nextedit::core::lsp::framing::encode_frame(
                body.to_string().as_bytes(),
            ))
            .unwrap();
    }
    stdin.flush().unwrap();
}

fn wait_for_responses(stdout: &mut impl std::io::Read, n: usize) {
    let mut decoder = nextedit::core::lsp::framing::FrameDecoder::new();
    let mut seen = 0;
    let mut buf = [0u8; 4096];
    while seen < n {
        let k = stdout.read(&mut buf).unwrap();
        assert!(k > 0, "proxy closed stdout after {seen} responses");
        decoder.feed(&buf[..k]);
        while decoder.next_chunk().is_some() {
            seen += 1;
        }
    }
}

#[test]
fn sigterm_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, db) = spawn_raw_proxy(&tmp.path().join("rec.db"));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    send_hovers(&mut stdin, 200);
    wait_for_responses(&mut stdout, 200);
    unsafe_kill(child.id(), libc::SIGTERM);
    let status = child.wait().unwrap();
    // The proxy passes SIGTERM on; the server dies of it and the proxy reports 128 + 15.
    assert_eq!(status.code(), Some(128 + 15));
    assert_eq!(message_count(&db), 400);
    let session = &Database::open_existing(&db).unwrap().sessions().unwrap()[0];
    assert_eq!(
        (session.status.as_str(), session.exit_code),
        ("signalled", Some(143))
    );
}

#[test]
fn sigkill_keeps_what_the_recorder_committed() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, db) = spawn_raw_proxy(&tmp.path().join("rec.db"));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    send_hovers(&mut stdin, 300);
    wait_for_responses(&mut stdout, 300);
    // The recorder commits while the proxy runs (in batches, not at exit): all 600
    // messages reach the database with the proxy still alive. How soon is the proxy
    // bench's business (a timed assertion here would fail on a loaded machine).
    common::nvim::wait_until("600 messages committed by the running proxy", || {
        message_count(&db) == 600
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // SIGKILL takes nothing committed and leaves a database SQLite finds intact.
    assert_eq!(message_count(&db), 600);
    let integrity: String = Database::open_existing(&db)
        .unwrap()
        .connection()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

#[test]
fn editor_eof_lets_the_server_finish() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("rec.db");
    let mut command = proxy_command(&db, &fake_server(""));
    quiet(&mut command);
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    client
        .request("shutdown", serde_json::Value::Null, TIMEOUT)
        .unwrap();
    client.notify("exit", serde_json::Value::Null).unwrap();
    client.close_stdin();
    assert_eq!(client.wait(TIMEOUT).code(), Some(0));
    // Without shutdown, `exit` makes the server exit with 1, and so does the proxy.
    let mut command = proxy_command(&db, &fake_server(""));
    quiet(&mut command);
    let mut client = LspClient::spawn(command).unwrap();
    client.initialize(tmp.path(), TIMEOUT).unwrap();
    client.notify("exit", serde_json::Value::Null).unwrap();
    assert_eq!(client.wait(TIMEOUT).code(), Some(1));
    assert_eq!(
        Database::open_existing(&db)
            .unwrap()
            .sessions()
            .unwrap()
            .len(),
        2
    );
}

fn unsafe_kill(pid: u32, signal: i32) {
    // SAFETY: kill(2) on a child process this test spawned.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

#[test]
fn several_proxies_record_into_one_database_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("shared.db");
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            let dir = tmp.path().to_path_buf();
            std::thread::spawn(move || {
                let mut command = proxy_command(&db, &fake_server(""));
                quiet(&mut command);
                let mut client = LspClient::spawn(command).unwrap();
                client.initialize(&dir, TIMEOUT).unwrap();
                for line in 0..300 {
                    hover(&mut client, line);
                }
                assert!(client.shutdown(TIMEOUT).unwrap().success());
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    let db = Database::open_existing(&db).unwrap();
    let sessions = db.sessions().unwrap();
    assert_eq!(sessions.len(), 4);
    for session in sessions {
        // initialize ×2, initialized, 300 hovers ×2, shutdown ×2, exit.
        assert_eq!(
            (session.messages, session.dropped, session.status.as_str()),
            (606, 0, "ended")
        );
    }
}
