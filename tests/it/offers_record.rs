//! Offers recorded from real servers through the real proxy binary: every completion
//! item, code action and rename a server answered with is a row of `offers`, with its
//! rank, its request's place, its latency and its edits; about an excluded file, the
//! row keeps no text.
//!
//! - Real headless Neovim 0.12 (its built-in `vim.lsp.completion`, `vim.lsp.buf.code_action`
//!   and `vim.lsp.buf.rename`) with real pyright, configured by the README snippet.
//! - Real pyright driven by the test's LSP client, for the privacy rules.
//!
//! Rows are shown one a line as insta snapshots; times are not (they vary), but each
//! row's latency is checked against its request's and answer's recorded times.

use crate::common;
use nextedit::store::OfferRead;
use nextedit::store::SessionRead;

use std::path::Path;

use common::nvim::{db_count, start, wait_until};
use common::*;
use nextedit::core::record::OfferSpan;
use nextedit::store::{Database, StoredOffer};
use serde_json::json;

/// One offer on one line, every field but the times; `seq` numbers are shown relative
/// to the first offer's answer, since the server's own notifications interleave.
fn render(offers: &[StoredOffer]) -> String {
    let mut out = String::new();
    for stored in offers {
        let o = &stored.offer;
        let edits: Vec<String> = o
            .edits
            .iter()
            .map(|e| {
                let at = match e.at {
                    OfferSpan::Bytes(start, end) => format!("{start}..{end}"),
                    OfferSpan::Lsp(r) => format!(
                        "lsp {}:{}..{}:{}",
                        r.start.line, r.start.character, r.end.line, r.end.character
                    ),
                };
                let name = e.uri.rsplit('/').next().unwrap_or_default();
                format!("{name} {at} {:?}", e.text)
            })
            .collect();
        out.push_str(&format!(
            "{} {}/{}{} {} {} at={} label={} text={:?} edits=[{}]{}\n",
            o.kind.as_str(),
            o.rank,
            o.list_size,
            if o.incomplete { " incomplete" } else { "" },
            o.method,
            stored.path.as_deref().unwrap_or("-"),
            o.position
                .map_or("-".to_string(), |(line, col)| format!("{line}:{col}")),
            o.label
                .as_deref()
                .map_or("-".to_string(), |l| format!("{l:?}")),
            o.text,
            edits.join(", "),
            if stored.excluded { " (excluded)" } else { "" },
        ));
    }
    out
}

/// Each offer answers its request: the request message has the offer's method, and
/// the latency is the time between the two messages.
fn check_requests(db: &Path, session: i64, offers: &[StoredOffer]) {
    let database = Database::open_existing(db).unwrap();
    let conn = database.connection();
    for stored in offers {
        let o = &stored.offer;
        let (method, request_t, answer_t): (String, i64, i64) = conn
            .query_row(
                "SELECT q.method, q.t_ns, a.t_ns FROM messages q, messages a
                  WHERE q.session_id = ?1 AND a.session_id = ?1 AND q.seq = ?2 AND a.seq = ?3",
                [session, o.request_seq as i64, o.seq as i64],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(method, o.method, "{o:?}");
        assert_eq!(o.t_ns as i64, answer_t);
        assert_eq!(o.latency_ns as i64, answer_t - request_t);
        if o.method != "workspace/applyEdit" {
            assert!(o.request_seq < o.seq && o.latency_ns > 0, "{o:?}");
        }
    }
}

const SAMPLE: &str = "import sys\nimport os\n\n\nclass Point:\n    def __init__(self):\n        self.xray = 1\n        self.yank = 2\n\n\np = Point()\nprint(os.sep, sys.argv, p.yank)\n";

#[test]
fn neovim_completion_code_action_and_rename_offers_from_pyright() {
    if !available(
        "neovim_completion_code_action_and_rename_offers_from_pyright",
        &[Server::Nvim, Server::Pyright],
    ) {
        return;
    }
    let nvim = common::nvim();
    let tmp = tempfile::tempdir().unwrap();
    // The README snippet, and Neovim's built-in LSP completion for every client.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let snippet = readme
        .split("## Use with Neovim")
        .nth(1)
        .and_then(|s| s.split("```lua\n").nth(1))
        .and_then(|s| s.split("```").next())
        .unwrap()
        .replace("/path/to/nextedit", env!("CARGO_MANIFEST_DIR"));
    let init = format!(
        "{snippet}
vim.o.completeopt = 'menuone,noselect'
vim.api.nvim_create_autocmd('LspAttach', {{ callback = function(args)
  vim.lsp.completion.enable(true, args.data.client_id, args.buf, {{ autotrigger = false }})
end }})
"
    );
    let (mut nvim, _main, db) = start(nvim, tmp.path(), &init, SAMPLE);
    nvim.wait_for(
        "pyright to attach",
        "#vim.tbl_filter(function(c) return c.initialized and require('nextedit').is_wrapped(c) end, vim.lsp.get_clients({bufnr = 0})) == 1",
    );
    let offers_of = |kind: &str| {
        db_count(
            &db,
            &format!("SELECT count(*) FROM offers WHERE kind = '{kind}'"),
        )
    };

    // 1. Completion after `p.ya` at the end of the file (line 12, column 4), from the
    //    omnifunc (Ctrl-X Ctrl-O); the item is taken.
    nvim.keys("Gop.ya<C-x><C-o>");
    wait_until("the completion offers", || offers_of("completion") > 0);
    nvim.wait_for("the completion menu", "vim.fn.pumvisible() == 1");
    nvim.keys("<C-n><C-y><Esc>");
    nvim.wait_for(
        "the accepted item",
        "vim.api.nvim_get_current_line() == 'p.yank' and vim.fn.mode() == 'n'",
    );
    // A second list, at `os.getc` on a new line, dismissed.
    nvim.keys("oos.getc<C-x><C-o>");
    wait_until("the second list", || offers_of("completion") > 1);
    nvim.wait_for("the second menu", "vim.fn.pumvisible() == 1");
    nvim.keys("<C-e><Esc>");
    nvim.wait_for(
        "the dismissed menu",
        "vim.api.nvim_get_current_line() == 'os.getc' and vim.fn.mode() == 'n'",
    );

    // 2. A code action in the wider sense: pyright's organize-imports command (which
    //    pyright does not list, so `exec_cmd` would refuse it), whose edit pyright
    //    sends back as a `workspace/applyEdit`. Pyright's codeAction answers only hold
    //    a command for missing type stubs: code actions come from gopls below.
    nvim.keys(
        ":lua vim.lsp.get_clients({ bufnr = 0 })[1]:request('workspace/executeCommand', { command = 'pyright.organizeimports', arguments = { vim.uri_from_bufnr(0) } }, nil, 0)<CR>",
    );
    nvim.wait_for(
        "the sorted imports",
        "vim.api.nvim_buf_get_lines(0, 0, 2, true)[1] == 'import os'",
    );

    // 3. Rename the class on line 5 (0-based 4).
    nvim.keys("5G0w:lua vim.lsp.buf.rename('Spot')<CR>");
    nvim.wait_for(
        "the rename",
        "vim.api.nvim_buf_get_lines(0, 4, 5, true)[1] == 'class Spot:'",
    );
    wait_until("the rename offer", || offers_of("rename") == 1);
    nvim.quit_and_wait_for_the_session(":qa!<CR>", &db);
    assert_eq!(
        db_count(&db, "SELECT count(*) FROM sessions WHERE status = 'ended'"),
        1,
        "no frame was dropped"
    );

    let database = Database::open_existing(&db).unwrap();
    let session = database.sessions().unwrap()[0].id;
    let offers = database.offers(session).unwrap();
    check_requests(&db, session, &offers);
    assert!(offers.iter().all(|o| o.path.as_deref() == Some("main.py")));
    insta::assert_snapshot!(render(&offers));
}

const GO_MAIN: &str = "package main\n\nimport (\n\t\"os\"\n\t\"fmt\"\n)\n\nfunc helper(x int) int {\n\treturn x + 1\n}\n\nfunc main() {\n\tfmt.Println(helper(1))\n}\n";

/// Real code actions (pyright's hold none with an edit): gopls's organize imports, and
/// a gopls rename, asked by the test's LSP client through the proxy.
#[test]
fn gopls_code_action_and_rename_offers() {
    if !available("gopls_code_action_and_rename_offers", &[Server::Gopls]) {
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
    std::fs::write(workspace.join("main.go"), GO_MAIN).unwrap();
    let db = tmp.path().join("rec.db");
    let mut client = spawn_proxied(&db, &workspace, gopls_command(tmp.path()), &[]);
    client.initialize(&workspace, TIMEOUT).unwrap();
    let main_uri = uri(&workspace.join("main.go"));
    let document = json!({"uri": main_uri});
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": main_uri, "languageId": "go", "version": 1, "text": GO_MAIN}}))
        .unwrap();
    client
        .request(
            "textDocument/codeAction",
            json!({"textDocument": document, "range": {"start": {"line": 3, "character": 1}, "end": {"line": 3, "character": 1}},
                   "context": {"diagnostics": [], "only": ["source.organizeImports"]}}),
            TIMEOUT,
        )
        .unwrap();
    client
        .request(
            "textDocument/rename",
            json!({"textDocument": document, "position": {"line": 7, "character": 6}, "newName": "bump"}),
            TIMEOUT,
        )
        .unwrap();
    assert!(client.shutdown(TIMEOUT).unwrap().success());

    let database = Database::open_existing(&db).unwrap();
    let session = database.sessions().unwrap()[0].id;
    let offers = database.offers(session).unwrap();
    check_requests(&db, session, &offers);
    insta::assert_snapshot!(render(&offers));
}

/// The privacy rules: an offer about an excluded file is a row without label, text or
/// edits; an offer made elsewhere keeps no edit of an excluded file; `sessions purge`
/// removes the offers about a purged file and those that edit it.
#[test]
fn offers_about_excluded_files_keep_no_text() {
    if !available(
        "offers_about_excluded_files_keep_no_text",
        &[Server::Pyright],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    std::fs::write(workspace.join(".nexteditignore"), "secret.py\n").unwrap();
    std::fs::write(workspace.join("pyproject.toml"), "").unwrap();
    let secret = "token_value = 'hunter2-offer-secret'\ntoken_value.upp";
    let main = "from secret import token_value\n\nprint(token_value)\n";
    std::fs::write(workspace.join("secret.py"), secret).unwrap();
    std::fs::write(workspace.join("main.py"), main).unwrap();
    let db = tmp.path().join("rec.db");
    let mut pyright = std::process::Command::new(pyright());
    pyright.arg("--stdio");
    let mut client = spawn_proxied(&db, &workspace, pyright, &[]);
    client.initialize(&workspace, TIMEOUT).unwrap();
    let (secret_uri, main_uri) = (
        uri(&workspace.join("secret.py")),
        uri(&workspace.join("main.py")),
    );
    for (u, text) in [(&secret_uri, secret), (&main_uri, main)] {
        client
            .notify("textDocument/didOpen", json!({"textDocument": {"uri": u, "languageId": "python", "version": 1, "text": text}}))
            .unwrap();
    }
    // Completion in the excluded file: the server answers (the editor gets it all) …
    let answer = client
        .request(
            "textDocument/completion",
            at(&secret_uri, Pos(1, 15)),
            TIMEOUT,
        )
        .unwrap();
    assert!(
        answer["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|i| i["label"] == "upper"))
    );
    // … and a rename in main.py that edits secret.py too.
    let mut params = at(&main_uri, Pos(2, 8));
    params["newName"] = json!("renamed");
    let rename = client
        .request("textDocument/rename", params, TIMEOUT)
        .unwrap();
    assert!(rename.to_string().contains("secret.py"), "{rename}");
    assert!(client.shutdown(TIMEOUT).unwrap().success());

    let database = Database::open_existing(&db).unwrap();
    let session = database.sessions().unwrap()[0].id;
    let offers = database.offers(session).unwrap();
    check_requests(&db, session, &offers);
    let excluded: Vec<&StoredOffer> = offers.iter().filter(|o| o.excluded).collect();
    assert!(!excluded.is_empty());
    let items = answer["items"].as_array().unwrap().len();
    for o in &excluded {
        assert_eq!(
            (
                o.offer.kind.as_str(),
                &o.offer.label,
                o.offer.text.as_str(),
                o.offer.edits.len(),
                o.offer.list_size
            ),
            ("completion", &None, "", 0, items)
        );
    }
    assert_eq!(
        excluded.len(),
        items.min(nextedit::core::record::MAX_OFFERS)
    );
    let renames: Vec<&StoredOffer> = offers
        .iter()
        .filter(|o| o.offer.kind.as_str() == "rename")
        .collect();
    insta::assert_snapshot!(render(&renames.into_iter().cloned().collect::<Vec<_>>()));
    drop(database);
    let mut stored = std::fs::read(&db).unwrap();
    stored.extend(std::fs::read(db.with_extension("db-wal")).unwrap_or_default());
    assert!(memchr_find(&stored, b"hunter2-offer-secret").is_none());

    // Purging main.py removes the rename offer made there; purging secret.py the rest.
    let out = nextedit_with_db(&["sessions", "purge", "--file", "main.py"], &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let count = |kind: &str| {
        db_count(
            &db,
            &format!("SELECT count(*) FROM offers WHERE kind = '{kind}'"),
        )
    };
    assert_eq!((count("rename"), count("completion") > 0), (0, true));
    let out = nextedit_with_db(&["sessions", "purge", "--file", "secret.py"], &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(db_count(&db, "SELECT count(*) FROM offers"), 0);
}

fn memchr_find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// famulus 0.0.6 (crates.io; `scripts/test` installs it into `.famulus`), or `None`
/// after saying so (through [`available`]); required under CI like every real server.
pub(crate) fn famulus(test: &str) -> Option<std::path::PathBuf> {
    available(test, &[Server::Famulus]).then(|| Server::Famulus.path())
}

/// Inline completions from a real server: famulus (a language server offering LSP 3.18
/// `textDocument/inlineCompletion`) backed by the real llama-cpp-python server with the
/// tests' tiny model, asked through the proxy by the test's LSP client. The offer row
/// holds exactly the item famulus answered with, at the asked place.
#[test]
fn famulus_inline_completions_are_offers() {
    let test = "famulus_inline_completions_are_offers";
    let Some(python) = crate::suggester_openai::llama_python(test) else {
        return;
    };
    let Some(famulus) = famulus(test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = crate::suggester_openai::tiny_model(&python, tmp.path());
    let llama = crate::suggester_openai::LlamaServer::start(&python, &model, tmp.path());
    let workspace = tmp.path().join("ws");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let text = "def add(a, b):\n    return \n";
    // famulus reads an opened document from disk too.
    std::fs::write(workspace.join("calc.py"), text).unwrap();
    let db = tmp.path().join("rec.db");
    let mut server = std::process::Command::new(&famulus);
    server.env("NEXTEDIT_TEST_LLAMA_KEY", crate::suggester_openai::KEY);
    let mut client = spawn_proxied(&db, &workspace, server, &[]);
    let root = uri(&workspace);
    let options = json!({"infill": {
        "provider": "OpenAICompletions",
        "config": {"url": format!("http://127.0.0.1:{}/v1/completions", llama.port),
                   "api_key_env": "NEXTEDIT_TEST_LLAMA_KEY", "model": "tiny",
                   "temperature": 0.0, "max_tokens": 8, "stop": [], "seed": 42},
        "template": "<PRE>{{ prefix }}<SUF>{{ suffix }}<MID>"}});
    let init = client
        .request(
            "initialize",
            json!({"processId": null, "rootUri": root, "capabilities": {}, "initializationOptions": options}),
            TIMEOUT,
        )
        .unwrap();
    assert_eq!(
        init["capabilities"]["inlineCompletionProvider"],
        json!(true)
    );
    client.notify("initialized", json!({})).unwrap();
    let file = uri(&workspace.join("calc.py"));
    client
        .notify("textDocument/didOpen", json!({"textDocument": {"uri": file, "languageId": "python", "version": 1, "text": text}}))
        .unwrap();
    let answer = client
        .request(
            "textDocument/inlineCompletion",
            json!({"textDocument": {"uri": file}, "position": {"line": 1, "character": 11},
                   "context": {"triggerKind": 1}}),
            TIMEOUT,
        )
        .unwrap();
    let items = answer.as_array().expect("famulus answers a list of items");
    assert_eq!(items.len(), 1, "{answer}");
    let inserted = items[0]["insertText"].as_str().unwrap().to_string();
    // famulus 0.0.6 never answers `shutdown`: the editor closing its end is the exit
    // the proxy supervises (grace period, then the server's tree ended; nothing lost).
    client.close_stdin();
    client.wait(TIMEOUT);

    // The model was asked with the document's prefix and suffix around the cursor.
    let asked: Vec<_> = llama
        .requests()
        .into_iter()
        .filter(|r| r["path"] == "/v1/completions")
        .collect();
    assert_eq!(asked.len(), 1);
    assert_eq!(
        asked[0]["body"]["prompt"],
        json!("<PRE>def add(a, b):\n    return <SUF>\n<MID>")
    );

    let database = Database::open_existing(&db).unwrap();
    let session = database.sessions().unwrap()[0].id;
    let offers = database.offers(session).unwrap();
    check_requests(&db, session, &offers);
    assert_eq!(offers.len(), 1);
    let offer = &offers[0].offer;
    assert_eq!(offer.kind.as_str(), "inline_completion");
    assert_eq!(offer.method, "textDocument/inlineCompletion");
    assert_eq!((offer.rank, offer.list_size), (0, 1));
    assert_eq!(offer.position, Some((1, 11)));
    assert_eq!(offer.text, inserted);
    assert_eq!(offer.edits.len(), 1);
    assert_eq!(offer.edits[0].text, inserted);
}
