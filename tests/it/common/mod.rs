//! Shared helpers for integration tests: locating real servers (and skipping visibly
//! without them: [`servers`]), an independent UTF-16 text model, and scripted editing
//! sessions through the real proxy binary.
#![allow(dead_code)]

pub mod hostile;
// The busy loops of the benches' loaded runs.
#[path = "../../../benches/support/load.rs"]
mod load;
pub mod nvim;
mod servers;

pub use load::Load;

// Not every test binary that includes this module needs a server.
#[allow(unused_imports)]
pub use servers::*;

use nextedit::store::SessionRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use nextedit::core::record::uri::path_to_uri;
use nextedit::engine::lsp_client::LspClient;
use serde_json::{Value, json};

/// Generous timeout for real servers on a loaded 2-core CI machine.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// The built `nextedit` binary.
pub fn nextedit_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nextedit"))
}

/// A UTF-16 position.
#[derive(Debug, Clone, Copy)]
pub struct Pos(pub u32, pub u32);

/// An LSP incremental change in UTF-16 positions.
#[derive(Debug, Clone)]
pub struct TextChange {
    pub start: Pos,
    pub end: Pos,
    pub text: &'static str,
}

/// Applies a UTF-16 change to `text` with an implementation independent of the
/// library's (UTF-16 code units, LSP line breaks \n, \r\n, \r).
pub fn apply_utf16(text: &str, change: &TextChange) -> String {
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut line_starts = vec![0usize];
    let mut i = 0;
    while i < units.len() {
        if units[i] == b'\r' as u16 {
            if units.get(i + 1) == Some(&(b'\n' as u16)) {
                i += 1;
            }
            line_starts.push(i + 1);
        } else if units[i] == b'\n' as u16 {
            line_starts.push(i + 1);
        }
        i += 1;
    }
    let offset = |p: Pos| -> usize {
        let line = p.0 as usize;
        if line >= line_starts.len() {
            return units.len();
        }
        let start = line_starts[line];
        let mut end = line_starts.get(line + 1).copied().unwrap_or(units.len());
        while end > start && (units[end - 1] == b'\n' as u16 || units[end - 1] == b'\r' as u16) {
            end -= 1;
        }
        (start + p.1 as usize).min(end)
    };
    let (a, b) = (offset(change.start), offset(change.end));
    let mut out: Vec<u16> = units[..a].to_vec();
    out.extend(change.text.encode_utf16());
    out.extend(&units[b..]);
    String::from_utf16(&out).expect("test edits keep surrogate pairs whole")
}

/// Starts `server` behind the proxy, recording into `db` (stderr silenced unless NEXTEDIT_TEST_STDERR is set).
pub fn spawn_proxied(db: &Path, workspace: &Path, server: Command, extra: &[&str]) -> LspClient {
    let mut command = Command::new(nextedit_bin());
    command
        .arg("proxy")
        .arg("--db")
        .arg(db)
        .arg("--workspace")
        .arg(workspace)
        .args(extra)
        .arg("--");
    command.arg(server.get_program()).args(server.get_args());
    for (key, value) in server.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    quiet(&mut command);
    LspClient::spawn(command).expect("spawn proxy")
}

/// `tests/fake_server.py` in `mode` (FAKE_MODE; "" behaves).
pub fn fake_server(mode: &str) -> Command {
    let mut command = Command::new("python3");
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake_server.py"))
        .env("FAKE_MODE", mode);
    command
}

/// Silences a child's stderr unless NEXTEDIT_TEST_STDERR is set.
pub fn quiet(command: &mut Command) {
    if std::env::var_os("NEXTEDIT_TEST_STDERR").is_none() {
        command.stderr(std::process::Stdio::null());
    }
}

/// A server command wrapped in a shell tee that captures what the server
/// received and sent, byte for byte.
pub fn teed(server: &Command, server_in: &Path, server_out: &Path) -> Command {
    let mut argv = vec![server.get_program().to_string_lossy().into_owned()];
    argv.extend(server.get_args().map(|a| a.to_string_lossy().into_owned()));
    let quoted: Vec<String> = argv
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    let script = format!(
        "tee '{}' | {} | tee '{}'",
        server_in.display(),
        quoted.join(" "),
        server_out.display()
    );
    let mut command = Command::new("sh");
    command.arg("-c").arg(script);
    for (key, value) in server.get_envs() {
        if let Some(value) = value {
            command.env(key, value);
        }
    }
    command
}

/// LSP `textDocument/didChange` params for one change.
pub fn did_change(uri: &str, version: i64, change: &TextChange) -> Value {
    json!({
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{
            "range": {"start": {"line": change.start.0, "character": change.start.1},
                      "end": {"line": change.end.0, "character": change.end.1}},
            "text": change.text
        }]
    })
}

/// One open document the scripted developer types into.
pub struct Doc {
    pub uri: String,
    pub path: std::path::PathBuf,
    pub text: String,
    pub version: i64,
}

impl Doc {
    pub fn open(client: &mut LspClient, path: std::path::PathBuf) -> Doc {
        let text = std::fs::read_to_string(&path).unwrap();
        let uri = uri(&path);
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
            )
            .unwrap();
        Doc {
            uri,
            path,
            text,
            version: 1,
        }
    }

    pub fn change(&mut self, client: &mut LspClient, change: TextChange) {
        self.change_many(client, &[change]);
    }

    /// One didChange of several changes, each in the text the earlier ones left.
    pub fn change_many(&mut self, client: &mut LspClient, changes: &[TextChange]) {
        self.version += 1;
        let mut params = did_change(&self.uri, self.version, &changes[0]);
        params["contentChanges"] = changes
            .iter()
            .map(|c| did_change(&self.uri, self.version, c)["contentChanges"][0].clone())
            .collect();
        client.notify("textDocument/didChange", params).unwrap();
        for change in changes {
            self.text = apply_utf16(&self.text, change);
        }
    }

    /// Selects `[from, to)` on `line` and types `text` over it key by key.
    pub fn retype(
        &mut self,
        client: &mut LspClient,
        line: u32,
        from: u32,
        to: u32,
        text: &'static str,
    ) {
        for (i, _) in text.char_indices() {
            let (start, end) = if i == 0 {
                (from, to)
            } else {
                (from + i as u32, from + i as u32)
            };
            self.change(
                client,
                TextChange {
                    start: Pos(line, start),
                    end: Pos(line, end),
                    text: &text[i..i + 1],
                },
            );
        }
    }

    /// Saves (which also ends the edit being typed).
    pub fn save(&mut self, client: &mut LspClient) {
        std::fs::write(&self.path, &self.text).unwrap();
        client
            .notify(
                "textDocument/didSave",
                json!({"textDocument": {"uri": self.uri}}),
            )
            .unwrap();
    }
}

/// `{textDocument, position}` params.
pub fn at(uri: &str, pos: Pos) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": pos.0, "character": pos.1}})
}

/// `file://` URI of a path.
pub fn uri(path: &Path) -> String {
    path_to_uri(path)
}

/// Frames of a byte stream, as bodies (for comparing streams message by message).
pub fn frames(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut decoder = nextedit::core::lsp::framing::FrameDecoder::new();
    decoder.feed(bytes);
    let mut out = Vec::new();
    while let Some(chunk) = decoder.next_chunk() {
        out.push(chunk.bytes().to_vec());
    }
    out.extend(decoder.finish().map(|c| c.bytes().to_vec()));
    out
}

/// `expected` appears in `actual` in order (other values may come in between).
pub fn assert_subsequence(actual: &[Value], expected: &[Value]) {
    let mut rest = actual.iter();
    for want in expected {
        assert!(
            rest.any(|got| got == want),
            "{want} not found in order in {}",
            serde_json::to_string_pretty(actual).unwrap()
        );
    }
}

/// A document's reads in a session: (via, role, start line, end line), in order.
pub fn reads_of(
    conn: &rusqlite::Connection,
    session: i64,
    uri: &str,
) -> Vec<(String, String, i64, i64)> {
    conn.prepare("SELECT via, role, start_line, end_line FROM reads WHERE session_id = ?1 AND uri = ?2 ORDER BY seq")
        .unwrap()
        .query_map(rusqlite::params![session, uri], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// The document's text after each recorded edit, in order.
pub fn texts_after_each_edit(
    database: &nextedit::store::Database,
    session: i64,
    uri: &str,
) -> Vec<String> {
    let seqs: Vec<i64> = database
        .connection()
        .prepare("SELECT seq FROM edits WHERE session_id = ?1 ORDER BY seq")
        .unwrap()
        .query_map([session], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    seqs.iter()
        .map(|&seq| {
            database
                .document_text(session, uri, Some(seq as u64))
                .unwrap()
                .unwrap()
        })
        .collect()
}

/// `nextedit replay -q --suggester builtin:noop` of the trajectory file `trajectory`
/// into `db`, its scratch directory in `tmpdir` (as `TMPDIR`).
pub fn noop_replay(trajectory: &Path, db: &Path, tmpdir: &Path) -> Command {
    let mut command = Command::new(nextedit_bin());
    command
        .args([
            "replay",
            "-q",
            "--suggester",
            "builtin:noop",
            "--trajectory",
        ])
        .arg(trajectory)
        .arg("--db")
        .arg(db)
        .env("TMPDIR", tmpdir);
    command
}

/// Runs the built binary with `args` and then `--db db`.
pub fn nextedit_with_db(args: &[&str], db: &Path) -> Output {
    Command::new(nextedit_bin())
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

/// Runs the built binary with `args`.
pub fn nextedit_output(args: &[&str]) -> Output {
    Command::new(nextedit_bin()).args(args).output().unwrap()
}

/// The JSON lines a successful command printed (fails the test, with its stderr, if
/// the command failed).
pub fn json_lines(output: &Output) -> Vec<Value> {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    lines_of(output)
}

/// The JSON lines of a replay whose run FAILED for `reason` (exit status 1, the
/// verdict as stderr's last line): a suggester none of whose calls of one kind worked.
pub fn failed_run_json_lines(output: &Output, reason: &str) -> Vec<Value> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .lines()
            .last()
            .is_some_and(|l| l.ends_with(&format!(" FAILED: {reason}"))),
        "{stderr}"
    );
    lines_of(output)
}

fn lines_of(output: &Output) -> Vec<Value> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `cmd:` spec of tests/suggesters/scripted.py in `mode` (default: good), counting
/// its starts and calls in `state` (created here: the replay names it with
/// `--sandbox-rw`, the only place outside its worktree the suggester may write).
pub fn scripted_suggester(mode: Option<&str>, state: &std::path::Path) -> String {
    if !state.exists() {
        std::fs::write(state, "{}").unwrap();
    }
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/scripted.py");
    let mode = mode
        .map(|m| format!("SUGGESTER_MODE={m} "))
        .unwrap_or_default();
    format!(
        "cmd:{mode}SUGGESTER_STATE='{}' python3 '{}'",
        state.display(),
        script.display()
    )
}

/// Runs `git args` in `dir` as a fixed test user; returns its trimmed stdout (fails
/// the test, with git's stderr, when git fails).
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_owned()
}

/// Figure `name` of a `report --json` run (`figures.NAME`, over its repetitions):
/// exactly these `values`, their mean and a 95 % interval of half-width `half` about it
/// (within 1e-12).
pub fn assert_estimate(
    report: &serde_json::Value,
    name: &str,
    values: &[f64],
    mean: f64,
    half: f64,
) {
    let figure = &report["figures"][name];
    let got: Vec<f64> = (figure["values"].as_array().unwrap().iter())
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(got, values, "{name}");
    let close = |a: &serde_json::Value, b: f64| {
        assert!(
            (a.as_f64().unwrap() - b).abs() < 1e-12,
            "{name}: {a} vs {b}"
        )
    };
    close(&figure["mean"], mean);
    close(&figure["ci95"][0], mean - half);
    close(&figure["ci95"][1], mean + half);
}
