//! Acceptance as editors make it, through the real proxy binary. A scripted editor (the
//! tests' LSP client) takes real pyright's completion items each way editors do, the
//! moment the answer arrives: the rest of the word typed in one change, the typed word
//! replaced (VS Code; Neovim with a `textEdit`), the word deleted and the item typed in
//! again in one didChange (Neovim without one), and an item with
//! `additionalTextEdits` (an import) applied with it in one didChange, in either order.
//! Inline items (from `tests/fake_server.py`, pyright has none) are taken whole, word by
//! word and line by line. `nextedit live --json` must name each outcome.
//!
//! Then issue 28's case: "pa" replaced by "path" at once, with the machine loaded,
//! counts 1 accepted of 2 answers in every run.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::*;
use nextedit::engine::lsp_client::LspClient;
use serde_json::{Value, json};

/// A scripted editor on one document (`common::Doc` keeps its text).
struct Editor {
    client: LspClient,
    doc: Doc,
}

impl Editor {
    /// Opens `ws/main.py` (written with `text`) through a recording proxy into `db`.
    fn open(db: &Path, ws: &Path, server: Command, text: &str) -> Editor {
        let path = ws.join("main.py");
        std::fs::write(&path, text).unwrap();
        let mut client = spawn_proxied(db, ws, server, &[]);
        client.initialize(ws, TIMEOUT).expect("initialize");
        let doc = Doc::open(&mut client, path);
        Editor { client, doc }
    }

    /// Real pyright on `dir/ws/main.py` holding "import os\n", recording into `dir/rec.db`.
    fn pyright(dir: &Path) -> (Editor, std::path::PathBuf) {
        let ws = dir.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("pyproject.toml"), "").unwrap();
        let db = dir.join("rec.db");
        let mut pyright = Command::new(common::pyright());
        pyright.arg("--stdio");
        (Editor::open(&db, &ws, pyright, "import os\n"), db)
    }

    /// One didChange of `changes` ((start, end, text) in UTF-16 positions, each in the
    /// text the earlier ones left).
    fn change(&mut self, changes: &[(Pos, Pos, &str)]) {
        let changes: Vec<TextChange> = changes
            .iter()
            .map(|(start, end, text)| TextChange {
                start: *start,
                end: *end,
                // The model takes a `&'static str`: the test's few texts are leaked.
                text: Box::leak(text.to_string().into_boxed_str()),
            })
            .collect();
        self.doc.change_many(&mut self.client, &changes);
    }

    /// Where the text ends (the documents here are ASCII).
    fn end(&self) -> Pos {
        let text = &self.doc.text;
        let line = text.matches('\n').count() as u32;
        let column = text.rsplit('\n').next().unwrap_or("").len() as u32;
        Pos(line, column)
    }

    /// Types `text` at the end as one change.
    fn append(&mut self, text: &str) {
        let end = self.end();
        self.change(&[(end, end, text)]);
    }

    /// Asks `method` at the end of the text; returns the answer's items.
    fn ask(&mut self, method: &str) -> Vec<Value> {
        let answer = self
            .client
            .request(method, at(&self.doc.uri, self.end()), TIMEOUT)
            .expect(method);
        answer
            .get("items")
            .unwrap_or(&answer)
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn close(mut self) {
        self.client.shutdown(TIMEOUT).expect("shutdown");
    }
}

/// The label of an item, and its rank in `items`.
fn rank_of(items: &[Value], label: &str) -> usize {
    items
        .iter()
        .position(|i| i["label"] == label)
        .unwrap_or_else(|| panic!("no {label:?} in {items:?}"))
}

/// `nextedit live --json` of session 1.
fn live(db: &Path) -> Value {
    let out = nextedit_with_db(&["live", "1", "--json"], db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Each answer's outcome as (outcome, evidence or reason, rank, characters taken).
fn outcomes(live: &Value) -> Vec<(String, String, Value, Value)> {
    live["offers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let outcome = &o["outcome"];
            let how = outcome
                .get("evidence")
                .or(outcome.get("reason"))
                .and_then(Value::as_str)
                .unwrap_or("");
            (
                outcome["outcome"].as_str().unwrap().to_string(),
                how.to_string(),
                outcome["rank"].clone(),
                o["aftermath"]["chars"].clone(),
            )
        })
        .collect()
}

fn accepted(how: &str, rank: usize, chars: usize) -> (String, String, Value, Value) {
    ("accepted".into(), how.into(), rank.into(), chars.into())
}

#[test]
fn completion_items_accepted_the_ways_editors_accept_them() {
    let test = "completion_items_accepted_the_ways_editors_accept_them";
    if !available(test, &[Server::Pyright]) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (mut editor, db) = Editor::pyright(tmp.path());
    let mut expected = Vec::new();

    // "os.pa" taken as "os.path" four ways: (start column, end column, text) on its line.
    let ways: [&[(u32, u32, &str)]; 4] = [
        // The rest of the word in one change.
        &[(5, 5, "th")],
        // The typed word replaced by the item (VS Code; Neovim with a `textEdit`).
        &[(3, 5, "path")],
        // Deleted and typed in again in one didChange (Neovim's built-in completion).
        &[(3, 5, ""), (3, 3, "path")],
        // The same keystroke by keystroke, all in one didChange.
        &[
            (3, 5, ""),
            (3, 3, "p"),
            (4, 4, "a"),
            (5, 5, "t"),
            (6, 6, "h"),
        ],
    ];
    for way in ways {
        editor.append("\nos.pa");
        let items = editor.ask("textDocument/completion");
        let Pos(line, _) = editor.end();
        let changes: Vec<(Pos, Pos, &str)> = way
            .iter()
            .map(|(from, to, text)| (Pos(line, *from), Pos(line, *to), *text))
            .collect();
        editor.change(&changes);
        expected.push(accepted("origin", rank_of(&items, "path"), 4));
    }

    // 5. An auto-import: the item (its `textEdit`) and its `additionalTextEdits` (the
    //    import, on the first line) in one didChange: the lower change first (VS Code),
    //    then the import first (its line moves the item's down).
    for (import_first, typed, name) in [
        (false, "OrderedDi", "OrderedDict"),
        (true, "Iterabl", "Iterable"),
    ] {
        editor.append(&format!("\n{typed}"));
        let items = editor.ask("textDocument/completion");
        let rank = items
            .iter()
            .position(|i| i["label"] == name && i.get("additionalTextEdits").is_some())
            .unwrap_or_else(|| panic!("no auto-import of {name} in {items:?}"));
        let pos = |p: &Value| {
            Pos(
                p["line"].as_u64().unwrap() as u32,
                p["character"].as_u64().unwrap() as u32,
            )
        };
        let edit = |e: &Value| {
            (
                pos(&e["range"]["start"]),
                pos(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        };
        let (start, end, text) = edit(&items[rank]["textEdit"]);
        let (import_start, import_end, import_text) = edit(&items[rank]["additionalTextEdits"][0]);
        assert!(import_start.0 < start.0, "{items:?}");
        let import = (import_start, import_end, import_text.as_str());
        if import_first {
            let added = import_text.matches('\n').count() as u32;
            let main = (
                Pos(start.0 + added, start.1),
                Pos(end.0 + added, end.1),
                text.as_str(),
            );
            editor.change(&[import, main]);
        } else {
            editor.change(&[(start, end, text.as_str()), import]);
        }
        expected.push(accepted("origin", rank, name.len()));
    }
    editor.append("\n");
    editor.close();

    let live = live(&db);
    let decided: Vec<_> = outcomes(&live)
        .into_iter()
        .filter(|o| o.0 != "superseded")
        .collect();
    assert_eq!(decided, expected, "{live:#}");
}

#[test]
fn inline_items_taken_whole_word_by_word_and_line_by_line() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let db = tmp.path().join("rec.db");
    let item = "total = a + b\n    return total";
    let mut server = fake_server("");
    server.env(
        "FAKE_RESULTS",
        json!({"textDocument/inlineCompletion": {"items": [{"insertText": item}]}}).to_string(),
    );
    let mut editor = Editor::open(&db, &ws, server, "");
    let inline = "textDocument/inlineCompletion";

    // 1. Whole, in one change.
    editor.append("def one(a, b):\n    ");
    editor.ask(inline);
    editor.append(item);
    // 2. Word by word: "total", " = a": then the developer goes elsewhere.
    editor.append("\n\ndef two(a, b):\n    ");
    editor.ask(inline);
    for word in ["total", " = a"] {
        editor.append(word);
    }
    editor.change(&[(Pos(0, 0), Pos(0, 0), "# two\n")]);
    // 3. Line by line: the first line, then the rest: the whole item in parts.
    editor.append("\n\ndef three(a, b):\n    ");
    editor.ask(inline);
    editor.append("total = a + b");
    editor.append("\n    return total");
    // 4. The first line only, then the session ends.
    editor.append("\n\ndef four(a, b):\n    ");
    editor.ask(inline);
    editor.append("total = a + b");
    editor.close();

    let live = live(&db);
    let partial = |chars: usize| ("partial".to_string(), String::new(), 0.into(), chars.into());
    assert_eq!(
        outcomes(&live),
        vec![
            accepted("text", 0, item.chars().count()),
            partial("total = a".len()),
            accepted("text", 0, item.chars().count()),
            partial("total = a + b".len()),
        ],
        "{live:#}"
    );
}

#[test]
fn a_word_replaced_at_once_counts_one_accepted_of_two_in_every_run_under_load() {
    let test = "a_word_replaced_at_once_counts_one_accepted_of_two_in_every_run_under_load";
    if !available(test, &[Server::Pyright]) {
        return;
    }
    let _load = Load::start();
    for run in 0..3 {
        let tmp = tempfile::tempdir().unwrap();
        let (mut editor, db) = Editor::pyright(tmp.path());
        // "pa" replaced by "path" the moment the list arrives, as VS Code does.
        editor.append("\nos.pa");
        let items = editor.ask("textDocument/completion");
        let Pos(line, _) = editor.end();
        editor.change(&[(Pos(line, 3), Pos(line, 5), "path")]);
        // A second list, left for a change on another line.
        editor.append("\nos.ge");
        editor.ask("textDocument/completion");
        editor.change(&[(Pos(0, 0), Pos(0, 0), "import sys\n")]);
        editor.close();
        let live = live(&db);
        let group = &live["groups"][0];
        assert_eq!(
            (group["offers"].clone(), group["accepted"].clone()),
            (2.into(), 1.into()),
            "run {run}: {live:#}"
        );
        assert_eq!(
            outcomes(&live)[0],
            accepted("origin", rank_of(&items, "path"), 4),
            "run {run}"
        );
    }
}
