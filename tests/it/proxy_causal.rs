//! The record is causal: a scripted fast editor through the real proxy binary to a
//! fast server (`tests/fake_server.py` answering completions at once), with the machine
//! loaded. The editor sends a didChange the moment each completion answer arrives,
//! 2,000 times; the recording must hold every answer after its request (so it is
//! attributed: method and offers) and every reaction after its cause, in sequence and
//! in time.

use crate::common;

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::*;
use nextedit::core::lsp::framing::{FrameDecoder, encode_frame};
use serde_json::{Value, json};

/// Round trips of the fast editor.
const ROUNDS: u64 = 2_000;
/// Items in each completion answer.
const ITEMS: usize = 3;

/// An editor written for speed: it reads the proxy's output itself and writes its
/// reaction in the same thread, with no client library between.
struct FastEditor {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    decoder: FrameDecoder,
    buf: Vec<u8>,
}

impl FastEditor {
    fn spawn(mut command: Command) -> FastEditor {
        quiet(&mut command);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        FastEditor {
            stdin: child.stdin.take().unwrap(),
            stdout: child.stdout.take().unwrap(),
            child,
            decoder: FrameDecoder::new(),
            buf: vec![0; 64 * 1024],
        }
    }

    /// Writes the messages in one write.
    fn send(&mut self, messages: &[Value]) {
        let mut bytes = Vec::new();
        for message in messages {
            bytes.extend(encode_frame(message.to_string().as_bytes()));
        }
        self.stdin.write_all(&bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads until the answer to request `id`.
    fn answer(&mut self, id: u64) -> Value {
        loop {
            while let Some(chunk) = self.decoder.next_chunk() {
                let message: Value = serde_json::from_slice(chunk.body().unwrap()).unwrap();
                if message["id"] == id && message.get("method").is_none() {
                    return message;
                }
            }
            let n = self.stdout.read(&mut self.buf).unwrap();
            assert!(n > 0, "the proxy closed its output before answer {id}");
            self.decoder.feed(&self.buf[..n]);
        }
    }
}

fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// One recorded message: seq, time, direction, kind, method, id.
type Row = (
    i64,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn messages(db: &Path) -> Vec<Row> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT seq, t_ns, dir, kind, method, msg_id FROM messages ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
        ))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn a_fast_editors_reactions_are_recorded_after_their_causes_under_load() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("causal.db");
    let uri = "file:///ws/a.py";
    let items: Vec<Value> = (0..ITEMS)
        .map(|i| json!({"label": format!("item{i}"), "insertText": format!("item{i}")}))
        .collect();
    let mut server = fake_server("");
    server.env(
        "FAKE_RESULTS",
        json!({"textDocument/completion": {"isIncomplete": false, "items": items}}).to_string(),
    );
    let mut command = Command::new(nextedit_bin());
    command.args(["proxy", "--db"]).arg(&db).arg("--");
    command.arg(server.get_program()).args(server.get_args());
    command.envs(server.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let load = Load::start();
    let mut editor = FastEditor::spawn(command);
    editor.send(&[request(0, "initialize", json!({"capabilities": {}}))]);
    editor.answer(0);
    editor.send(&[
        notification("initialized", json!({})),
        notification(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": ""}}),
        ),
        request(
            1,
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
        ),
    ]);
    for k in 1..=ROUNDS {
        let answer = editor.answer(k);
        assert_eq!(
            answer["result"]["items"].as_array().map(Vec::len),
            Some(ITEMS)
        );
        // The reaction, at once: the change, then the next request.
        let column = k - 1;
        let mut reaction = vec![notification(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": k + 1},
                   "contentChanges": [{"range": {"start": {"line": 0, "character": column}, "end": {"line": 0, "character": column}}, "text": "x"}]}),
        )];
        if k < ROUNDS {
            reaction.push(request(
                k + 1,
                "textDocument/completion",
                json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": k}}),
            ));
        }
        editor.send(&reaction);
    }
    editor.send(&[request(ROUNDS + 1, "shutdown", Value::Null)]);
    editor.answer(ROUNDS + 1);
    editor.send(&[notification("exit", Value::Null)]);
    drop(editor.stdin);
    assert!(editor.child.wait().unwrap().success());
    drop(load);

    let rows = messages(&db);
    let completion_id = |id: &Option<String>| {
        id.as_deref()
            .and_then(|id| id.parse::<u64>().ok())
            .is_some_and(|id| (1..=ROUNDS).contains(&id))
    };
    let answers: Vec<&Row> = rows
        .iter()
        .filter(|r| r.2 == "s2c" && r.3.as_deref() == Some("response") && completion_id(&r.5))
        .collect();
    let changes: Vec<&Row> = rows
        .iter()
        .filter(|r| r.2 == "c2s" && r.4.as_deref() == Some("textDocument/didChange"))
        .collect();
    assert_eq!(
        (answers.len(), changes.len()),
        (ROUNDS as usize, ROUNDS as usize)
    );
    // An answer sequenced before its request pairs with nothing: no method, no offers.
    let unattributed = answers
        .iter()
        .filter(|a| a.4.as_deref() != Some("textDocument/completion"))
        .count();
    let conn = rusqlite::Connection::open(&db).unwrap();
    let offered: std::collections::HashMap<i64, i64> = conn
        .prepare("SELECT seq, count(*) FROM offers GROUP BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let without_offers = answers
        .iter()
        .filter(|a| offered.get(&a.0) != Some(&(ITEMS as i64)))
        .count();
    // The k-th change reacts to the k-th answer (each direction keeps its own order).
    let sequenced_before = answers
        .iter()
        .zip(&changes)
        .filter(|(answer, change)| change.0 < answer.0)
        .count();
    let stamped_before = answers
        .iter()
        .zip(&changes)
        .filter(|(answer, change)| change.1 < answer.1)
        .count();
    assert_eq!(
        (
            unattributed,
            without_offers,
            sequenced_before,
            stamped_before
        ),
        (0, 0, 0, 0),
        "of {ROUNDS} round trips: answers without their request, answers without their offers, reactions sequenced before their cause, reactions stamped before their cause"
    );
    // Times rise with the sequence over the whole session, both directions together.
    assert!(rows.windows(2).all(|w| w[0].1 <= w[1].1));
    // initialize, its answer, initialized, didOpen; the rounds; shutdown, its answer, exit.
    assert_eq!(rows.len() as u64, 4 + 3 * ROUNDS + 3);
}
