//! Origins of recorded changes, through the real proxy binary with real gopls: a
//! scripted editor asks gopls to format, organize imports (a code action) and
//! rename, applies each answer the way editors do (several changes in one
//! didChange, one didChange per edit, one full-text replacement), types something
//! itself, and the exported trajectory says exactly which change came from where.

use crate::common;

use std::process::Command;

use common::*;
use serde_json::{Value, json};

const MAIN: &str = "package main\n\nimport (\n\t\"os\"\n\t\"fmt\"\n)\n\nfunc  helper(x int) int {\nreturn x+1\n}\n\nfunc main() {\n\tfmt.Println(helper(1))\n}\n";

/// LSP `TextEdit`s as incremental changes, last position first, so that each range
/// is still valid after the changes before it (the order VS Code sends them in).
fn as_changes(edits: &Value) -> Vec<TextChange> {
    let mut changes: Vec<TextChange> = edits
        .as_array()
        .expect("TextEdit[]")
        .iter()
        .map(|e| {
            let pos = |p: &Value| {
                Pos(
                    p["line"].as_u64().unwrap() as u32,
                    p["character"].as_u64().unwrap() as u32,
                )
            };
            TextChange {
                start: pos(&e["range"]["start"]),
                end: pos(&e["range"]["end"]),
                text: String::from(e["newText"].as_str().unwrap()).leak(),
            }
        })
        .collect();
    changes.sort_by_key(|c| std::cmp::Reverse((c.start.0, c.start.1)));
    changes
}

fn content_change(c: &TextChange) -> Value {
    json!({"range": {"start": {"line": c.start.0, "character": c.start.1},
                     "end": {"line": c.end.0, "character": c.end.1}}, "text": c.text})
}

#[test]
fn gopls_format_code_action_and_rename_are_tagged() {
    if !available(
        "gopls_format_code_action_and_rename_are_tagged",
        &[Server::Gopls],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    std::fs::write(
        workspace.join("go.mod"),
        "module example.com/demo\n\ngo 1.19\n",
    )
    .unwrap();
    std::fs::write(workspace.join("main.go"), MAIN).unwrap();
    let db = tmp.path().join("rec.db");
    let mut client = spawn_proxied(&db, &workspace, gopls_command(tmp.path()), &[]);
    client.initialize(&workspace, TIMEOUT).unwrap();
    let main_uri = uri(&workspace.join("main.go"));
    let document = json!({"uri": main_uri});
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": main_uri, "languageId": "go", "version": 1, "text": MAIN}}))
        .unwrap();
    let mut text = MAIN.to_string();
    let mut version = 1;

    // 1. Formatting, applied as several changes in one didChange.
    let edits = client
        .request(
            "textDocument/formatting",
            json!({"textDocument": document, "options": {"tabSize": 4, "insertSpaces": false}}),
            TIMEOUT,
        )
        .unwrap();
    let changes = as_changes(&edits);
    version += 1;
    client
        .notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": main_uri, "version": version},
            "contentChanges": changes.iter().map(content_change).collect::<Vec<_>>()}),
        )
        .unwrap();
    for c in &changes {
        text = apply_utf16(&text, c);
    }

    // 2. Organize imports (a code action with an edit), one didChange per edit.
    let actions = client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": document, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                   "context": {"diagnostics": [], "only": ["source.organizeImports"]}}),
            TIMEOUT,
        )
        .unwrap();
    let action = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "source.organizeImports")
        .expect("organize imports");
    let change = &action["edit"]["documentChanges"][0];
    assert_eq!(
        change["textDocument"],
        json!({"uri": main_uri, "version": 2})
    );
    let changes = as_changes(&change["edits"]);
    for c in &changes {
        version += 1;
        client
            .notify("textDocument/didChange", did_change(&main_uri, version, c))
            .unwrap();
        text = apply_utf16(&text, c);
    }

    // 3. Rename helper → bump, applied as one full-text replacement.
    let rename = client
        .request(
            "textDocument/rename",
            json!({"textDocument": document, "position": {"line": 6, "character": 6}, "newName": "bump"}),
            TIMEOUT,
        )
        .unwrap();
    let change = &rename["documentChanges"][0];
    assert_eq!(
        change["textDocument"],
        json!({"uri": main_uri, "version": 3})
    );
    for c in as_changes(&change["edits"]) {
        text = apply_utf16(&text, &c);
    }
    version += 1;
    client
        .notify("textDocument/didChange", json!({"textDocument": {"uri": main_uri, "version": version}, "contentChanges": [{"text": text}]}))
        .unwrap();

    // 4. The developer types a comment.
    let typed = TextChange {
        start: Pos(12, 0),
        end: Pos(12, 0),
        text: "\t// done\n",
    };
    version += 1;
    client
        .notify(
            "textDocument/didChange",
            did_change(&main_uri, version, &typed),
        )
        .unwrap();
    text = apply_utf16(&text, &typed);
    client
        .notify("textDocument/didSave", json!({"textDocument": document}))
        .unwrap();
    client
        .notify("textDocument/didClose", json!({"textDocument": document}))
        .unwrap();
    assert!(client.shutdown(TIMEOUT).unwrap().success());

    let output = Command::new(nextedit_bin())
        .args(["sessions", "export", "1", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let trajectory: Value = serde_json::from_slice(&output.stdout).unwrap();
    let triple = |e: &Value, before: &str, after: &str| {
        (
            e["origin"].as_str().unwrap().to_string(),
            e[before].as_str().unwrap().to_string(),
            e[after].as_str().unwrap().to_string(),
        )
    };
    let changes: Vec<(String, String, String)> = trajectory["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "change")
        .map(|e| triple(e, "before", "after"))
        .collect();
    let row = |origin: &str, before: &str, after: &str| {
        (origin.to_string(), before.to_string(), after.to_string())
    };
    let expected = vec![
        // gopls's formatting edits, as the editor sent them (last first).
        row("format", "", " "),
        row("format", "", " "),
        row("format", "", "\t"),
        row("format", " ", ""),
        row("format", "fmt", "os"),
        row("format", "os", "fmt"),
        // Organize imports drops the unused "os".
        row("code_action", "\"\n\t\"os", ""),
        // The rename sent as a full text is stored as its smallest replacement.
        row(
            "rename",
            "helper(x int) int {\n\treturn x + 1\n}\n\nfunc main() {\n\tfmt.Println(helper",
            "bump(x int) int {\n\treturn x + 1\n}\n\nfunc main() {\n\tfmt.Println(bump",
        ),
        row("user", "", "\t// done\n"),
    ];
    assert_eq!(changes, expected);
    // Coalesced edits keep the origins apart (each formatting edit is a place of its own).
    let edits: Vec<(String, String, String)> = trajectory["edits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| triple(e, "before_text", "after_text"))
        .collect();
    assert_eq!(edits, expected);
    assert_eq!(trajectory["files"][0]["final_text"], json!(text));
    assert_eq!(
        text,
        "package main\n\nimport (\n\t\"fmt\"\n)\n\nfunc bump(x int) int {\n\treturn x + 1\n}\n\nfunc main() {\n\tfmt.Println(bump(1))\n\t// done\n}\n"
    );
    // The database column holds the same names.
    let database = nextedit::store::Database::open_existing(&db).unwrap();
    let origins: Vec<String> = database
        .connection()
        .prepare("SELECT origin FROM edits ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        origins,
        expected.iter().map(|r| r.0.clone()).collect::<Vec<_>>()
    );
}
