//! The real proxy binary between a scripted client and real language servers
//! (pyright from npm, gopls from Debian; jdtls when its venv is present).
//!
//! Each scenario: initialize, open a file, type incremental edits (CJK, emoji with
//! surrogate pairs, CRLF lines, a deletion across lines), hover, go to definition,
//! find references, document symbols, send editor signals, save, shut down. Then:
//! - every byte the server received equals what the client sent (minus the
//!   consumed `$/nextedit/*` signals), every byte the client received equals what
//!   the server sent (a `tee` around the server captures both);
//! - the same script run directly against the server gives the same answers;
//! - the recording rebuilds the file on disk exactly after every step;
//! - reads carry the right files and lines.

use crate::common;
use nextedit::store::SessionRead;

use std::path::Path;
use std::process::Command;

use common::*;
use nextedit::store::Database;
use serde_json::{Value, json};

struct Scenario {
    /// Files written to the workspace before the session.
    files: Vec<(&'static str, &'static str)>,
    /// The file the scenario edits.
    main: &'static str,
    language_id: &'static str,
    edits: Vec<TextChange>,
    /// Where to hover / go to definition / find references, in the final text.
    symbol_at: Pos,
}

struct Outcome {
    /// Answers to hover, definition, references, documentSymbol.
    answers: Vec<Value>,
    sent: Vec<u8>,
    received: Vec<u8>,
    /// Text on disk after each step (index 0: at open).
    disk: Vec<String>,
}

fn write_files(dir: &Path, scenario: &Scenario) {
    for (name, text) in &scenario.files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn signal_frames() -> Vec<(&'static str, Value)> {
    vec![
        (
            "$/nextedit/cursor",
            json!({"position": {"line": 1, "character": 2}}),
        ),
        (
            "$/nextedit/visibleRanges",
            json!({"ranges": [{"start": {"line": 0, "character": 0}, "end": {"line": 40, "character": 0}}]}),
        ),
    ]
}

/// Runs the scenario with `client`; writes the disk state after every edit.
fn drive(
    mut client: nextedit::engine::lsp_client::LspClient,
    workspace: &Path,
    scenario: &Scenario,
) -> Outcome {
    let path = workspace.join(scenario.main);
    let main_uri = uri(&path);
    client.initialize(workspace, TIMEOUT).expect("initialize");
    let mut text = std::fs::read_to_string(&path).unwrap();
    let mut disk = vec![text.clone()];
    client
        .notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": main_uri, "languageId": scenario.language_id, "version": 1, "text": text}}),
        )
        .unwrap();
    for (i, change) in scenario.edits.iter().enumerate() {
        client
            .notify(
                "textDocument/didChange",
                did_change(&main_uri, i as i64 + 2, change),
            )
            .unwrap();
        text = apply_utf16(&text, change);
        std::fs::write(&path, &text).unwrap();
        disk.push(text.clone());
    }
    for (method, mut params) in signal_frames() {
        params["textDocument"] = json!({"uri": main_uri});
        client.notify(method, params).unwrap();
    }
    let pos = scenario.symbol_at;
    let mut answers = Vec::new();
    answers.push(
        client
            .request("textDocument/hover", at(&main_uri, pos), TIMEOUT)
            .expect("hover"),
    );
    answers.push(
        client
            .request("textDocument/definition", at(&main_uri, pos), TIMEOUT)
            .expect("definition"),
    );
    let mut refs = at(&main_uri, pos);
    refs["context"] = json!({"includeDeclaration": true});
    answers.push(
        client
            .request("textDocument/references", refs, TIMEOUT)
            .expect("references"),
    );
    answers.push(
        client
            .request(
                "textDocument/documentSymbol",
                json!({"textDocument": {"uri": main_uri}}),
                TIMEOUT,
            )
            .expect("documentSymbol"),
    );
    client
        .notify(
            "textDocument/didSave",
            json!({"textDocument": {"uri": main_uri}}),
        )
        .unwrap();
    client
        .notify(
            "textDocument/didClose",
            json!({"textDocument": {"uri": main_uri}}),
        )
        .unwrap();
    let status = client.shutdown(TIMEOUT).expect("shutdown");
    assert!(status.success(), "server exit status {status:?}");
    let transcript = client.transcript();
    Outcome {
        answers,
        sent: transcript.sent,
        received: transcript.received,
        disk,
    }
}

fn run(
    scenario: &Scenario,
    server: impl Fn(&Path) -> Command,
) -> (Outcome, Outcome, tempfile::TempDir) {
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    // Each run gets its own server state directory (jdtls keeps an index there).
    let cache_direct = tmp.path().join("cache-direct");
    let cache = tmp.path().join("cache-proxied");
    std::fs::create_dir(&cache_direct).unwrap();
    std::fs::create_dir(&cache).unwrap();

    // Direct run: the reference answers.
    write_files(&workspace, scenario);
    let mut direct_cmd = server(&cache_direct);
    quiet(&mut direct_cmd);
    let direct_client = nextedit::engine::lsp_client::LspClient::spawn(direct_cmd).unwrap();
    let direct = drive(direct_client, &workspace, scenario);

    // Proxied run, with a tee around the server.
    write_files(&workspace, scenario);
    let server_in = tmp.path().join("server-in.bin");
    let server_out = tmp.path().join("server-out.bin");
    let db = tmp.path().join("rec.db");
    let client = spawn_proxied(
        &db,
        &workspace,
        teed(&server(&cache), &server_in, &server_out),
        &[],
    );
    let proxied = drive(client, &workspace, scenario);
    let got_in = std::fs::read(&server_in).unwrap();
    let got_out = std::fs::read(&server_out).unwrap();
    // The consumed signals are the only frames the server must not see.
    let expected_in: Vec<u8> = frames(&proxied.sent)
        .into_iter()
        .filter(|f| !String::from_utf8_lossy(f).contains("$/nextedit/"))
        .flatten()
        .collect();
    assert!(expected_in.len() < proxied.sent.len(), "signals were sent");
    assert!(
        got_in == expected_in,
        "server received other bytes than the client sent ({} vs {} bytes)",
        got_in.len(),
        expected_in.len()
    );
    assert!(
        got_out == proxied.received,
        "client received other bytes than the server sent ({} vs {} bytes)",
        proxied.received.len(),
        got_out.len()
    );
    (direct, proxied, tmp)
}

/// Checks the recording against the disk states; returns the reads as
/// `(via, role, path, start_line, end_line)`.
fn check_recording(
    tmp: &Path,
    scenario: &Scenario,
    outcome: &Outcome,
) -> Vec<(String, String, String, i64, i64)> {
    let db = Database::open_existing(&tmp.join("rec.db")).unwrap();
    let sessions = db.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    assert_eq!(
        (session.status.as_str(), session.exit_code, session.dropped),
        ("ended", Some(0), 0)
    );
    assert_eq!(session.position_encoding.as_deref(), Some("utf-16"));
    assert_eq!(session.changes, scenario.edits.len() as i64);
    assert_eq!(session.signals, 2);
    let main = db.find_document(session.id, scenario.main).unwrap();
    assert_eq!(main.path, scenario.main);
    let conn = db.connection();
    for (step, expected) in outcome.disk.iter().enumerate() {
        let seq: i64 = if step == 0 {
            conn.query_row(
                "SELECT min(seq) FROM snapshots WHERE kind = 'open'",
                [],
                |r| r.get(0),
            )
            .unwrap()
        } else {
            conn.query_row(
                "SELECT max(seq) FROM edits WHERE version = ?1",
                [step as i64 + 1],
                |r| r.get(0),
            )
            .unwrap()
        };
        let text = db
            .document_text(session.id, &main.uri, Some(seq as u64))
            .unwrap()
            .unwrap();
        assert!(
            text == *expected,
            "step {step}: reconstructed text differs:\n{text:?}\nvs disk\n{expected:?}"
        );
    }
    // The CLI prints the same final text.
    let output = Command::new(nextedit_bin())
        .args(["sessions", "replay-text", "--db"])
        .arg(tmp.join("rec.db"))
        .arg(session.id.to_string())
        .arg(scenario.main)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        *outcome.disk.last().unwrap()
    );
    let kinds: Vec<String> = conn
        .prepare("SELECT kind FROM signals ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(kinds, ["cursor", "visible_ranges"]);
    let mut stmt = conn
        .prepare(
            "SELECT r.via, r.role, coalesce(d.path, r.uri), r.start_line, r.end_line FROM reads r
               LEFT JOIN documents d ON d.session_id = r.session_id AND d.uri = r.uri ORDER BY r.seq",
        )
        .unwrap();
    stmt.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

/// Reads with workspace prefixes removed, sorted (servers list references in no promised order).
fn strip_workspace(
    reads: Vec<(String, String, String, i64, i64)>,
    workspace: &Path,
) -> Vec<(String, String, String, i64, i64)> {
    let prefix = format!("{}/", workspace.display());
    let mut reads: Vec<_> = reads
        .into_iter()
        .map(|(via, role, path, a, b)| {
            let path = path
                .trim_start_matches("file://")
                .trim_start_matches(&prefix)
                .to_string();
            (via, role, path, a, b)
        })
        .collect();
    reads.sort();
    reads
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

fn read(
    via: &str,
    role: &str,
    path: &str,
    start: i64,
    end: i64,
) -> (String, String, String, i64, i64) {
    (via.into(), role.into(), path.into(), start, end)
}

fn python_scenario() -> Scenario {
    Scenario {
        files: vec![
            (
                "helper.py",
                "def greet(name: str) -> str:\n    return \"Hello, \" + name\n\n\ndef shout(text: str) -> str:\n    return text.upper()\n",
            ),
            (
                "main.py",
                "from helper import greet, shout\r\n\r\nmessage = greet(\"wörld\")\r\nprint(shout(message))\r\n",
            ),
        ],
        main: "main.py",
        language_id: "python",
        edits: vec![
            TextChange {
                start: Pos(3, 0),
                end: Pos(3, 0),
                text: "# 漢字 comment 😀\r\n",
            },
            TextChange {
                start: Pos(3, 15),
                end: Pos(3, 15),
                text: "!",
            },
            TextChange {
                start: Pos(2, 17),
                end: Pos(2, 22),
                text: "monde 🌍",
            },
            TextChange {
                start: Pos(0, 31),
                end: Pos(1, 0),
                text: "",
            },
            TextChange {
                start: Pos(4, 0),
                end: Pos(4, 0),
                text: "result = greet('x')\n",
            },
        ],
        symbol_at: Pos(1, 11),
    }
}

#[test]
fn pyright_through_the_proxy() {
    if !available("pyright_through_the_proxy", &[Server::Pyright]) {
        return;
    }
    let pyright = pyright();
    let scenario = python_scenario();
    let (direct, proxied, tmp) = run(&scenario, |_| {
        let mut c = Command::new(&pyright);
        c.arg("--stdio");
        c
    });
    assert_eq!(
        proxied.disk.last().unwrap(),
        "from helper import greet, shout\r\nmessage = greet(\"monde 🌍\")\r\n# 漢字 comment 😀!\r\nprint(shout(message))\r\nresult = greet('x')\n"
    );
    assert_eq!(
        direct.answers, proxied.answers,
        "answers through the proxy differ from direct ones"
    );
    let reads = strip_workspace(
        check_recording(tmp.path(), &scenario, &proxied),
        &tmp.path().join("ws").canonicalize().unwrap(),
    );
    assert_eq!(
        reads,
        sorted(vec![
            read("open", "open", "main.py", 0, 5),
            read("textDocument/hover", "request", "main.py", 1, 2),
            read("textDocument/hover", "target", "main.py", 1, 2),
            read("textDocument/definition", "request", "main.py", 1, 2),
            read("textDocument/definition", "target", "helper.py", 0, 1),
            read("textDocument/references", "request", "main.py", 1, 2),
            read("textDocument/references", "target", "helper.py", 0, 1),
            read("textDocument/references", "target", "main.py", 0, 1),
            read("textDocument/references", "target", "main.py", 1, 2),
            read("textDocument/references", "target", "main.py", 4, 5),
            read("textDocument/documentSymbol", "request", "main.py", 0, 0),
        ])
    );
}

fn go_scenario() -> Scenario {
    Scenario {
        files: vec![
            ("go.mod", "module example.com/demo\n\ngo 1.19\n"),
            (
                "util.go",
                "package main\n\n// Greet says hello.\nfunc Greet(name string) string {\n\treturn \"Hello, \" + name\n}\n",
            ),
            (
                "main.go",
                "package main\r\n\r\nimport \"fmt\"\r\n\r\nfunc main() {\r\n\tmsg := Greet(\"wörld\")\r\n\tfmt.Println(msg)\r\n}\r\n",
            ),
        ],
        main: "main.go",
        language_id: "go",
        edits: vec![
            TextChange {
                start: Pos(6, 0),
                end: Pos(6, 0),
                text: "\t// 漢字 comment 😀\r\n",
            },
            TextChange {
                start: Pos(6, 17),
                end: Pos(6, 17),
                text: "!",
            },
            TextChange {
                start: Pos(5, 15),
                end: Pos(5, 20),
                text: "monde 🌍",
            },
            TextChange {
                start: Pos(0, 12),
                end: Pos(1, 0),
                text: "",
            },
            TextChange {
                start: Pos(8, 0),
                end: Pos(8, 0),
                text: "\nfunc extra() string { return Greet(\"x\") }\n",
            },
        ],
        symbol_at: Pos(4, 9),
    }
}

#[test]
fn gopls_through_the_proxy() {
    if !available("gopls_through_the_proxy", &[Server::Gopls]) {
        return;
    }
    let scenario = go_scenario();
    let (direct, proxied, tmp) = run(&scenario, gopls_command);
    assert_eq!(
        proxied.disk.last().unwrap(),
        "package main\r\nimport \"fmt\"\r\n\r\nfunc main() {\r\n\tmsg := Greet(\"monde 🌍\")\r\n\t// 漢字 comment 😀!\r\n\tfmt.Println(msg)\r\n}\r\n\nfunc extra() string { return Greet(\"x\") }\n"
    );
    assert_eq!(
        direct.answers, proxied.answers,
        "answers through the proxy differ from direct ones"
    );
    let reads = strip_workspace(
        check_recording(tmp.path(), &scenario, &proxied),
        &tmp.path().join("ws").canonicalize().unwrap(),
    );
    assert_eq!(
        reads,
        sorted(vec![
            read("open", "open", "main.go", 0, 9),
            read("textDocument/hover", "request", "main.go", 4, 5),
            read("textDocument/hover", "target", "main.go", 4, 5),
            read("textDocument/definition", "request", "main.go", 4, 5),
            read("textDocument/definition", "target", "util.go", 3, 4),
            read("textDocument/references", "request", "main.go", 4, 5),
            read("textDocument/references", "target", "main.go", 4, 5),
            read("textDocument/references", "target", "main.go", 9, 10),
            read("textDocument/references", "target", "util.go", 3, 4),
            read("textDocument/documentSymbol", "request", "main.go", 0, 0),
        ])
    );
}

fn java_scenario() -> Scenario {
    Scenario {
        files: vec![
            (
                "src/demo/Util.java",
                "package demo;\n\npublic class Util {\n    public static String greet(String name) {\n        return \"Hello, \" + name;\n    }\n}\n",
            ),
            (
                "src/demo/Main.java",
                "package demo;\r\n\r\npublic class Main {\r\n    public static void main(String[] args) {\r\n        String msg = Util.greet(\"wörld\");\r\n        System.out.println(msg);\r\n    }\r\n}\r\n",
            ),
        ],
        main: "src/demo/Main.java",
        language_id: "java",
        edits: vec![
            TextChange {
                start: Pos(5, 0),
                end: Pos(5, 0),
                text: "        // 漢字 comment 😀\r\n",
            },
            TextChange {
                start: Pos(5, 24),
                end: Pos(5, 24),
                text: "!",
            },
            TextChange {
                start: Pos(4, 33),
                end: Pos(4, 38),
                text: "monde 🌍",
            },
            TextChange {
                start: Pos(0, 13),
                end: Pos(1, 0),
                text: "",
            },
            TextChange {
                start: Pos(7, 0),
                end: Pos(7, 0),
                text: "    static String extra() { return Util.greet(\"x\"); }\r\n",
            },
        ],
        symbol_at: Pos(3, 27),
    }
}

#[test]
fn jdtls_through_the_proxy() {
    if !available("jdtls_through_the_proxy", &[Server::Jdtls]) {
        return;
    }
    let venv = jdtls_venv();
    let java_home = crate::common::jdtls_java_home();
    let scenario = java_scenario();
    let (direct, proxied, tmp) = run(&scenario, |cache| {
        let mut c = Command::new(venv.join("bin/jdtls"));
        c.arg("-configuration")
            .arg(cache.join("jdtls-config"))
            .arg("-data")
            .arg(cache.join("jdtls-data"));
        c.env("JAVA_HOME", &java_home);
        c.env(
            "PATH",
            format!(
                "{}/bin:{}",
                java_home.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
        c
    });
    assert_eq!(
        proxied.disk.last().unwrap(),
        "package demo;\r\npublic class Main {\r\n    public static void main(String[] args) {\r\n        String msg = Util.greet(\"monde 🌍\");\r\n        // 漢字 comment 😀!\r\n        System.out.println(msg);\r\n    }\r\n    static String extra() { return Util.greet(\"x\"); }\r\n}\r\n"
    );
    assert_eq!(
        direct.answers, proxied.answers,
        "answers through the proxy differ from direct ones"
    );
    let reads = strip_workspace(
        check_recording(tmp.path(), &scenario, &proxied),
        &tmp.path().join("ws").canonicalize().unwrap(),
    );
    assert_eq!(
        reads,
        sorted(vec![
            read("open", "open", "src/demo/Main.java", 0, 9),
            read("textDocument/hover", "request", "src/demo/Main.java", 3, 4),
            read(
                "textDocument/definition",
                "request",
                "src/demo/Main.java",
                3,
                4
            ),
            read(
                "textDocument/definition",
                "target",
                "src/demo/Util.java",
                3,
                4
            ),
            read(
                "textDocument/references",
                "request",
                "src/demo/Main.java",
                3,
                4
            ),
            read(
                "textDocument/references",
                "target",
                "src/demo/Main.java",
                3,
                4
            ),
            read(
                "textDocument/references",
                "target",
                "src/demo/Main.java",
                7,
                8
            ),
            read(
                "textDocument/references",
                "target",
                "src/demo/Util.java",
                3,
                4
            ),
            read(
                "textDocument/documentSymbol",
                "request",
                "src/demo/Main.java",
                0,
                0
            ),
        ])
    );
}
