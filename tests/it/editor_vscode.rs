//! The VS Code extension in `editors/vscode`: its `.vsix` package, and the extension in real
//! VS Code (code-server from npm, in headless Debian Chromium driven by playwright-core
//! through `tests/editors/vscode_driver.cjs`) with real pyright through the real proxy.
//!
//! The end-to-end test types real keys into VS Code, as a user would: scroll, go to the
//! line with non-ASCII text, select, hover, type, undo, save, then "nextedit: Pause
//! Recording" (which stops the proxied server cleanly), and "nextedit: Show Session Summary"
//! (which opens `nextedit sessions show` of that session). Then it asserts on the recorded
//! session: the edits rebuild the saved file exactly, the undone text was recorded and
//! undone, the signals carry exact positions, the reads include the opened file and the hover.
//!
//! It needs `editors/vscode/node_modules` (`npm ci`), Debian `chromium`, and the tools that
//! `tests/editors/install-vscode-tools` puts in `tests/editors/.tools` (Node 24, code-server
//! 4.139.1, playwright-core): about 1 GB and several minutes to install. `scripts/test`
//! installs them and sets `NEXTEDIT_VSCODE_E2E=1`, with which missing tools fail the test
//! instead of skipping it (so do `CI=true` and `NEXTEDIT_REQUIRE_SERVERS=1`, unless
//! `NEXTEDIT_SKIP_VSCODE_E2E` is set); elsewhere it runs when they are present.

use crate::common;
use nextedit::store::SessionRead;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use nextedit::store::Database;
use serde_json::{Value, json};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn extension_dir() -> PathBuf {
    repo().join("editors/vscode")
}

/// Builds the extension and packages it into `out` (a `.vsix`).
fn package_vsix(out: &Path) {
    // Both tests build into editors/vscode/out: one at a time.
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let dir = extension_dir();
    let run = |program: &str, args: &[&str]| {
        let output = Command::new(dir.join("node_modules/.bin").join(program))
            .args(args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{program}: {e}"));
        assert!(
            output.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    };
    run("tsc", &["-p", "."]);
    run(
        "vsce",
        &["package", "--skip-license", "-o", out.to_str().unwrap()],
    );
}

/// The `.vsix` holds the compiled extension and its runtime dependency, nothing else of ours.
#[test]
fn vsix_package_contents() {
    if !available("vsix_package_contents", &[Server::VsCodeExtension]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let vsix = tmp.path().join("nextedit.vsix");
    package_vsix(&vsix);
    let listing = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
        ])
        .arg(&vsix)
        .output()
        .unwrap();
    assert!(listing.status.success());
    let names: Vec<String> = String::from_utf8(listing.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let ours: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| n.starts_with("extension/") && !n.starts_with("extension/node_modules/"))
        .collect();
    let mut ours = ours;
    ours.sort();
    assert_eq!(
        ours,
        vec![
            "extension/out/src/core.js",
            "extension/out/src/extension.js",
            "extension/package.json",
            "extension/readme.md",
        ]
    );
    assert!(names.contains(&"extension.vsixmanifest".to_string()));
    assert!(
        names
            .iter()
            .any(|n| n == "extension/node_modules/vscode-languageclient/package.json")
    );
    assert!(
        !names
            .iter()
            .any(|n| n.contains("node_modules/typescript/")
                || n.contains("node_modules/@vscode/vsce/")),
        "dev dependencies are not packaged"
    );
    let manifest = Command::new("python3")
        .args(["-c", "import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read('extension/package.json').decode())"])
        .arg(&vsix)
        .output()
        .unwrap();
    let manifest: Value = serde_json::from_slice(&manifest.stdout).unwrap();
    assert_eq!(manifest["main"], "./out/src/extension.js");
    assert_eq!(
        manifest["contributes"]["configuration"]["properties"]["nextedit.servers"]["default"],
        json!(["pyright"])
    );
    let commands: Vec<&str> = manifest["contributes"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        commands,
        vec![
            "nextedit.pause",
            "nextedit.resume",
            "nextedit.toggle",
            "nextedit.showSession"
        ]
    );
}

/// The JSON block of the README's "Use with VS Code" section.
fn readme_settings() -> Value {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("## Use with VS Code")
        .nth(1)
        .expect("README has a \"Use with VS Code\" section");
    let block = section
        .split("```json\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section has a json block");
    serde_json::from_str(block).expect("the README settings are JSON")
}

/// code-server in its own process group (stopping it stops its file watcher too).
struct CodeServer(Child);

impl Drop for CodeServer {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created; no memory is involved.
        unsafe {
            libc::kill(-(self.0.id() as i32), libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// The playwright driver, one command per line.
struct Driver {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Driver {
    fn send(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        let line = line.trim_end().to_string();
        assert!(
            line == "ok" || line.starts_with("ok "),
            "driver: {command}: {line:?}"
        );
        line.strip_prefix("ok").unwrap().trim().to_string()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn query_i64(db: &Path, sql: &str) -> i64 {
    if !db.exists() {
        return 0;
    }
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap_or(0)
}

fn signals(db: &Path, kind: &str) -> Vec<Value> {
    if !db.exists() {
        return Vec::new();
    }
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(10)).unwrap();
    let mut stmt = conn
        .prepare("SELECT payload FROM signals WHERE kind = ?1 ORDER BY seq")
        .unwrap();
    stmt.query_map([kind], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|p| serde_json::from_str(&p.unwrap()).unwrap())
        .collect()
}

/// The document's text rebuilt from the recording so far.
fn recorded_text(db: &Path, uri: &str) -> Option<String> {
    let database = Database::open_existing(db).ok()?;
    let session = database.sessions().ok()?.first()?.id;
    database.document_text(session, uri, None).ok()?
}

const ORIGINAL_HEAD: &str = "import os\n\n\ndef add(a, b):\n    return a + b\n\n";

fn original_text() -> String {
    let mut text = String::from(ORIGINAL_HEAD);
    for i in 7..30 {
        text.push_str(&format!("v{i} = add({i}, 1)\n"));
    }
    text.push_str("label = \"naïve 😀 text\"\n");
    for i in 31..=40 {
        text.push_str(&format!("w{i} = add({i}, 2)\n"));
    }
    text
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.write_all(b"GET /healthz HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    let mut response = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut response);
    response.starts_with("HTTP/1.1 200") || response.starts_with("HTTP/1.0 200")
}

#[test]
fn vscode_extension_records_a_real_session() {
    if !available(
        "vscode_extension_records_a_real_session",
        &[Server::VsCode, Server::Pyright],
    ) {
        return;
    }
    let tools = vscode_tools().expect("checked by available");
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let workspace = root.join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let main = workspace.join("main.py");
    std::fs::write(&main, original_text()).unwrap();
    let db = root.join("rec.db");
    let uri = uri(&main);

    // User settings: the README's, plus quiet typing (no auto-closing, no suggestions).
    let mut settings = readme_settings();
    for (key, value) in [
        ("editor.autoClosingBrackets", json!("never")),
        ("editor.autoClosingQuotes", json!("never")),
        (
            "editor.quickSuggestions",
            json!({"other": false, "comments": false, "strings": false}),
        ),
        ("editor.suggestOnTriggerCharacters", json!(false)),
        ("editor.acceptSuggestionOnEnter", json!("off")),
        ("editor.parameterHints.enabled", json!(false)),
        ("editor.minimap.enabled", json!(false)),
        ("workbench.startupEditor", json!("none")),
        ("workbench.tips.enabled", json!(false)),
        ("files.trimTrailingWhitespace", json!(false)),
        ("files.insertFinalNewline", json!(false)),
        ("security.workspace.trust.enabled", json!(false)),
        ("extensions.autoCheckUpdates", json!(false)),
        ("telemetry.telemetryLevel", json!("off")),
    ] {
        settings[key] = value;
    }
    std::fs::create_dir_all(root.join("ud/User")).unwrap();
    std::fs::write(
        root.join("ud/User/settings.json"),
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();

    let vsix = root.join("nextedit.vsix");
    package_vsix(&vsix);

    let node_bin = tools.node24.parent().unwrap();
    let path = format!(
        "{}:{}:{}:{}",
        node_bin.display(),
        nextedit_bin().parent().unwrap().display(),
        pyright().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let code_server = |args: &[&str]| {
        let mut command = Command::new(&tools.code_server);
        command
            .arg("--user-data-dir")
            .arg(root.join("ud"))
            .arg("--extensions-dir")
            .arg(root.join("exts"))
            .args(args)
            .env("PATH", &path)
            .env("HOME", root.join("home"))
            .env("XDG_DATA_HOME", root.join("home/data"))
            .env("XDG_CONFIG_HOME", root.join("home/config"))
            .env("NEXTEDIT_DB", &db)
            .env("SHELL", "/bin/bash")
            .stdin(Stdio::null());
        command
    };
    // code-server gives the extension host the environment of a login shell (bash -l):
    // like a user, put nextedit, pyright and Node on PATH in ~/.profile.
    std::fs::create_dir_all(root.join("home")).unwrap();
    std::fs::write(
        root.join("home/.profile"),
        format!("export PATH='{path}'\n"),
    )
    .unwrap();
    let install = code_server(&["--install-extension", vsix.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        install.status.success(),
        "install the vsix: {}",
        String::from_utf8_lossy(&install.stderr)
    );

    let port = free_port();
    let mut serve = code_server(&[
        "--auth",
        "none",
        "--bind-addr",
        &format!("127.0.0.1:{port}"),
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        "--ignore-last-opened",
        workspace.to_str().unwrap(),
    ]);
    serve.process_group(0).stdout(Stdio::null());
    quiet(&mut serve);
    let _server = CodeServer(serve.spawn().expect("start code-server"));
    wait_until("code-server's /healthz", || healthy(port));

    let mut driver = Command::new(&tools.node24);
    driver
        .arg(repo().join("tests/editors/vscode_driver.cjs"))
        .arg(format!(
            "http://127.0.0.1:{port}/?folder={}",
            workspace.display()
        ))
        .arg(root.join("chromium-profile"))
        .env("PLAYWRIGHT_CORE", &tools.playwright)
        .env("CHROMIUM", &tools.chromium)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    quiet(&mut driver);
    let mut child = driver.spawn().expect("start the playwright driver");
    let mut vscode = Driver {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        child,
    };

    // 1. Open the file: pyright starts through the proxy, the initial state is sent.
    vscode.send("open main.py");
    wait_until("the document to be opened through the proxy", || {
        query_i64(&db, "SELECT count(*) FROM documents") == 1
            && !signals(&db, "visible_ranges").is_empty()
    });
    let first_visible = signals(&db, "visible_ranges")[0].clone();
    let visible_lines = first_visible["ranges"][0]["end"]["line"].as_i64().unwrap();

    // 2. Scroll three lines (Ctrl+Down scrolls without moving the cursor).
    vscode.send("press Control+ArrowDown 3");
    wait_until("the scroll", || {
        signals(&db, "visible_ranges")
            .last()
            .is_some_and(|v| v["ranges"][0]["start"]["line"] == 3)
    });

    // 3. Go to the 'x' of "text" after "ï" and "😀" (UTF-16 column 21, character 20).
    vscode.send("goto 30:21");
    let doc = json!({"uri": uri});
    let pos = |line: i64, character: i64| json!({"line": line, "character": character});
    let cursor =
        |line: i64, character: i64| json!({"textDocument": doc, "position": pos(line, character)});
    wait_until("the cursor on x", || {
        signals(&db, "cursor").last() == Some(&cursor(29, 20))
    });
    // The status bar counts the emoji as one column; LSP counts two UTF-16 units.
    assert_eq!(vscode.send("status"), "Ln 30, Col 20");

    // 4. Select "xt".
    vscode.send("press Shift+ArrowRight 2");
    let selection = |start: Value, end: Value| json!({"textDocument": doc, "selections": [{"start": start, "end": end}]});
    wait_until("the selection", || {
        signals(&db, "selection").last() == Some(&selection(pos(29, 20), pos(29, 22)))
    });

    // 5. Hover over `add` on line 4 (Ctrl+K Ctrl+I: Show Hover).
    vscode.send("goto 4:5");
    vscode.send("press Control+K");
    vscode.send("press Control+I");
    wait_until("the hover read", || {
        query_i64(
            &db,
            "SELECT count(*) FROM reads WHERE via = 'textDocument/hover'",
        ) > 0
    });
    vscode.send("press Escape");

    // 6. Type a line at the end (non-ASCII included).
    let mut expected = original_text();
    expected.push_str("total = add(1, 2)  # ünïcode ✓\n");
    vscode.send("press Control+End");
    vscode.send("type total = add(1, 2)  # ünïcode ✓\\n");
    wait_until("the typed line to be recorded", || {
        recorded_text(&db, &uri).as_deref() == Some(expected.as_str())
    });
    // The cursor signal is debounced (100 ms) while the text is recorded at once: wait for
    // the cursor after the typed line, or the next key press could replace it before it is
    // sent (a flaky miss of `cursor(41, 0)` below).
    wait_until("the cursor after the typed line", || {
        signals(&db, "cursor").contains(&cursor(41, 0))
    });

    // 7. Type a line at the top, then undo until the text is as before.
    vscode.send("press Control+Home");
    vscode.send("type remove_me = 1\\n");
    let with_line = format!("remove_me = 1\n{expected}");
    wait_until("remove_me to be recorded", || {
        recorded_text(&db, &uri).as_deref() == Some(with_line.as_str())
    });
    for _ in 0..10 {
        if recorded_text(&db, &uri).as_deref() == Some(expected.as_str()) {
            break;
        }
        let edits = query_i64(&db, "SELECT count(*) FROM edits");
        vscode.send("press Control+Z");
        wait_until("the undo to be recorded", || {
            query_i64(&db, "SELECT count(*) FROM edits") > edits
        });
    }
    assert_eq!(recorded_text(&db, &uri).as_deref(), Some(expected.as_str()));

    // 8. Save; then pause recording (stops the proxied server cleanly).
    vscode.send("press Control+S");
    wait_until("the save", || {
        query_i64(&db, "SELECT count(*) FROM snapshots WHERE kind = 'save'") > 0
    });
    vscode.send("command nextedit: Pause Recording");
    wait_until("the session to end", || {
        query_i64(
            &db,
            "SELECT count(*) FROM sessions WHERE status != 'running'",
        ) == 1
    });
    // "nextedit: Show Session Summary" opens `nextedit sessions show` of this workspace.
    vscode.send("command nextedit: Show Session Summary");
    let mut summary: Vec<String> = Vec::new();
    wait_until("the session summary", || {
        summary = serde_json::from_str(&vscode.send("text")).unwrap();
        summary.first().is_some_and(|l| l.starts_with("session "))
    });
    assert_eq!(summary[0], "session 1  (recorded, ended)");
    vscode.send("quit");

    // The recording.
    let on_disk = std::fs::read_to_string(&main).unwrap();
    assert_eq!(on_disk, expected, "what VS Code saved");
    let database = Database::open_existing(&db).unwrap();
    let sessions = database.sessions().unwrap();
    assert_eq!(
        sessions.len(),
        1,
        "pausing starts pyright without the proxy"
    );
    let session = &sessions[0];
    assert_eq!(session.status, "ended");
    assert_eq!(
        session.server_command,
        vec!["pyright-langserver".to_string(), "--stdio".to_string()]
    );
    assert_eq!(session.position_encoding.as_deref(), Some("utf-16"));
    let documents = database.documents(session.id).unwrap();
    assert_eq!(documents.len(), 1);
    assert_eq!(documents[0].path, "main.py");
    assert_eq!(documents[0].language_id.as_deref(), Some("python"));
    assert_eq!(
        database.document_text(session.id, &uri, None).unwrap(),
        Some(on_disk.clone())
    );
    let conn = database.connection();
    let texts = texts_after_each_edit(&database, session.id, &uri);
    let with_removed = texts
        .iter()
        .position(|t| *t == with_line)
        .expect("a recorded state with the line later undone");
    assert!(texts[with_removed..].contains(&on_disk));

    // Signals.
    let all: Vec<(String, Option<String>, Value)> = conn
        .prepare("SELECT kind, uri, payload FROM signals WHERE session_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([session.id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                serde_json::from_str(&r.get::<_, String>(2)?).unwrap(),
            ))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (kind, signal_uri, payload) in &all {
        if kind == "focus" && payload.get("textDocument").is_none() {
            continue; // the browser window's own focus
        }
        assert_eq!(signal_uri.as_deref(), Some(uri.as_str()), "{kind} signal");
    }
    let doc_signals: Vec<&(String, Option<String>, Value)> =
        all.iter().filter(|(_, u, _)| u.is_some()).collect();
    assert_eq!(
        (doc_signals[0].0.as_str(), &doc_signals[0].2),
        ("focus", &json!({"textDocument": doc, "focused": true})),
        "the first signal"
    );
    let lines = |first: i64, end: i64| json!({"textDocument": doc, "ranges": [{"start": pos(first, 0), "end": pos(end, 0)}]});
    let visible = signals(&db, "visible_ranges");
    if std::env::var_os("NEXTEDIT_TEST_DUMP").is_some() {
        eprintln!("{}", serde_json::to_string(&all).unwrap());
    }
    // A 1280×800 window shows 35 lines: open, scroll by 3, go to line 30.
    assert_eq!(visible_lines, 35);
    // (Key presses slower than the debounce may add in-between states, e.g. lines 1–36.)
    assert_eq!(visible[0], lines(0, 35));
    assert_subsequence(&visible, &[lines(0, 35), lines(3, 38), lines(12, 41)]);
    let of_kind = |kind: &str| signals(&db, kind);
    assert_subsequence(
        &of_kind("cursor"),
        &[
            cursor(0, 0),
            cursor(29, 20),
            cursor(29, 22),
            cursor(3, 4),
            cursor(41, 0),
        ],
    );
    assert_subsequence(
        &of_kind("selection"),
        &[
            selection(pos(0, 0), pos(0, 0)),
            selection(pos(29, 20), pos(29, 20)),
            selection(pos(29, 20), pos(29, 22)),
        ],
    );
    let reads = reads_of(conn, session.id, &uri);
    assert_eq!(reads[0], ("open".into(), "open".into(), 0, 41));
    assert!(
        reads.contains(&("textDocument/hover".into(), "request".into(), 3, 4)),
        "{reads:?}"
    );
}
