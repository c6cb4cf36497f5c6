//! `nextedit live` on a real recording: headless Neovim (the plugin in `editors/nvim`,
//! Neovim's built-in LSP completion `vim.lsp.completion`) with real pyright through the
//! real proxy. The session: a completion list accepted and the accepted name later
//! partly deleted; a list dismissed with `<C-e>` and the same name typed by hand.
//! Then `nextedit live` must give the exact counts, ranks and kept rates, each worked
//! out by hand below.

use crate::common;
use nextedit::store::SessionRead;

use std::path::Path;

use common::nvim::{Nvim, db_count, start, wait_until};
use common::*;
use nextedit::store::Database;
use serde_json::Value;

/// The plugin set up as the README says, plus Neovim's own LSP completion (no
/// automatic trigger: the test asks for each list) that selects but does not insert
/// the first item.
fn init() -> String {
    let root = env!("CARGO_MANIFEST_DIR");
    format!(
        "vim.opt.rtp:append('{root}/editors/nvim')
vim.lsp.config('pyright', {{ cmd = {{ 'pyright-langserver', '--stdio' }}, filetypes = {{ 'python' }},
                            root_markers = {{ 'pyproject.toml', '.git' }} }})
require('nextedit').setup({{ servers = {{ 'pyright' }} }})
vim.lsp.enable('pyright')
vim.o.completeopt = 'menu,menuone,noinsert'
vim.api.nvim_create_autocmd('LspAttach', {{ callback = function(ev)
  vim.lsp.completion.enable(true, ev.data.client_id, ev.buf, {{ autotrigger = false }})
end }})
"
    )
}

const TEXT: &str = "import os\n\n\ndef greet(name):\n    return name\n";

fn recorded_text(db: &Path, uri: &str) -> Option<String> {
    let database = Database::open_existing(db).ok()?;
    let session = database.sessions().ok()?.first()?.id;
    database.document_text(session, uri, None).ok()?
}

/// Types `keys` and waits until the recorded document holds `expect`.
fn type_and_wait(nvim: &Nvim, db: &Path, uri: &str, keys: &str, expect: &str) {
    nvim.keys(keys);
    wait_until(&format!("{expect:?} recorded"), || {
        recorded_text(db, uri).as_deref() == Some(expect)
    });
}

/// Asks for a completion list and waits until the `n`th answer is recorded and shown.
fn complete(nvim: &Nvim, db: &Path, n: i64) {
    nvim.keys("<Cmd>lua vim.lsp.completion.get()<CR>");
    wait_until(&format!("completion answer {n}"), || {
        db_count(db, "SELECT count(DISTINCT request_seq) FROM offers") >= n
    });
    wait_until("the popup", || nvim.eval("pumvisible()").trim() == "1");
}

/// A pause longer than the 2 s that end an edit, so the session's edits (what replay
/// steps through) are cut at the same places however fast the machine is.
fn pause() {
    std::thread::sleep(std::time::Duration::from_millis(2_500));
}

/// Records the session; returns the database.
fn record(dir: &Path) -> std::path::PathBuf {
    let (mut nvim, main, db) = start(common::nvim(), dir, &init(), TEXT);
    let uri = uri(&main);
    nvim.wait_for(
        "pyright to attach",
        "#vim.tbl_filter(function(c) return c.initialized and require('nextedit').is_wrapped(c) end, vim.lsp.get_clients({bufnr = 0})) == 1",
    );
    // 1. "gree" on a new last line, a list, its selected item accepted with <C-y>.
    type_and_wait(&nvim, &db, &uri, "Gogree", &format!("{TEXT}gree\n"));
    complete(&nvim, &db, 1);
    pause();
    nvim.keys("<C-y>");
    wait_until("the accepted item", || {
        recorded_text(&db, &uri).is_some_and(|t| t.contains("\ngreet"))
    });
    type_and_wait(&nvim, &db, &uri, "(1)<Esc>", &format!("{TEXT}greet(1)\n"));
    pause();
    // 2. "gr" on the next line, a list dismissed with <C-e>, "eet" typed key by key.
    type_and_wait(&nvim, &db, &uri, "ogr", &format!("{TEXT}greet(1)\ngr\n"));
    complete(&nvim, &db, 2);
    pause();
    nvim.keys("<C-e>");
    wait_until("the popup to close", || {
        nvim.eval("pumvisible()").trim() == "0"
    });
    let mut line = String::from("gr");
    for key in ["e", "e", "t", "(", "2", ")"] {
        line.push_str(key);
        type_and_wait(&nvim, &db, &uri, key, &format!("{TEXT}greet(1)\n{line}\n"));
    }
    nvim.keys("<Esc>");
    nvim.wait_for("normal mode", "vim.fn.mode() == 'n'");
    pause();
    // 3. "et" of the accepted "greet" deleted: "gre(1)".
    type_and_wait(
        &nvim,
        &db,
        &uri,
        "6G4|2x",
        &format!("{TEXT}gre(1)\ngreet(2)\n"),
    );
    nvim.keys(":w<CR>");
    nvim.wait_for("the save", "not vim.bo.modified");
    nvim.quit_and_wait_for_the_session(":qa<CR>", &db);
    db
}

/// Items and answer latencies (ms) per answer, as recorded: pyright's lists vary with
/// how far it has indexed, so the test reads them rather than guessing.
fn answers(db: &Path) -> Vec<(i64, f64)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare("SELECT count(*), max(latency_ns) FROM offers GROUP BY request_seq ORDER BY request_seq")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as f64 / 1e6)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn live_figures_of_a_real_neovim_session() {
    if !available(
        "live_figures_of_a_real_neovim_session",
        &[Server::Nvim, Server::Pyright],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let db = record(tmp.path());
    let out = nextedit_with_db(&["live", "1", "--json"], &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: Value = serde_json::from_slice(&out.stdout).unwrap();
    let answers = answers(&db);
    assert_eq!(answers.len(), 2, "two lists were asked for");
    let group = &live["groups"][0];
    // Two answers: the first accepted, the second dismissed; none superseded, so the
    // acceptance rate is 1 / 2.
    assert_eq!(group["offers"], 2);
    assert_eq!(group["items"], answers[0].0 + answers[1].0);
    assert_eq!(
        (
            group["accepted"].clone(),
            group["partial"].clone(),
            group["dismissed"].clone(),
            group["superseded"].clone()
        ),
        (1.into(), 0.into(), 1.into(), 0.into())
    );
    assert_eq!(group["acceptance_rate"], 0.5);
    // `greet` is pyright's first item (rank 0) for "gree".
    assert_eq!(group["ranks"], serde_json::json!({"0": 1}));
    assert_eq!(group["rank_mean"], 0.0);
    // Two latencies: the median of two is the larger (index round(0.5) = 1), and so is p95.
    let slower = answers[0].1.max(answers[1].1);
    assert_eq!(group["latency_p50_ms"], slower);
    assert_eq!(group["latency_p95_ms"], slower);
    // "greet" taken: 5 characters. Typed (user changes not part of the taking): Neovim's
    // "o" with its indent "\n    \n" (6), "gree" (4), "(1)" (3), "o" as "\n\n" (2),
    // "gr" (2), Neovim putting "gre" back after <C-e> (3), "e", "t", "(", "2", ")" (5):
    // 6 + 4 + 3 + 2 + 2 + 3 + 5 = 25.
    assert_eq!(group["chars_accepted"], 5);
    assert_eq!(group["chars_typed"], 25);
    // "et" of "greet" deleted: 3 of 5 characters kept = 0.6; the session is shorter than
    // 30 s, so the 30 s and 5 min figures are the end's. One edit inside, no reversal.
    assert_eq!(
        (
            group["kept_30s"].clone(),
            group["kept_5min"].clone(),
            group["kept_end"].clone()
        ),
        (0.6.into(), 0.6.into(), 0.6.into())
    );
    // Zed's kept rate is by token: the "gre" left of "greet" keeps none of it.
    assert_eq!(group["zed_kept_rate"], 0.0);
    assert_eq!(group["reversals"], 0);
    assert_eq!(group["edits_inside"], 1);
    // The dismissed list's "greet" typed key by key: right but not taken.
    assert_eq!(group["right_but_not_taken"], 1);
    let offers = live["offers"].as_array().unwrap();
    assert_eq!(offers[0]["outcome"]["outcome"], "accepted");
    assert_eq!(offers[0]["outcome"]["rank"], 0);
    // Neovim deletes the typed word and types the item in again in one didChange;
    // pyright's items carry no edit, so the recorder expects the item over the typed
    // word and tags that didChange `completion`: the origin is the evidence.
    assert_eq!(offers[0]["outcome"]["evidence"], "origin");
    assert_eq!(offers[0]["outcome"]["origin"], "completion");
    assert_eq!(offers[1]["outcome"]["reason"], "typed_by_hand");
    assert_eq!(offers[1]["right_but_not_taken"]["rank"], 0);

    // The text form says the same.
    let out = nextedit_with_db(&["live", "1"], &db);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("  outcomes             1 accepted, 0 partial, 1 dismissed, 0 superseded\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "  kept                 60.0 % after 30 s, 60.0 % after 5 min, 60.0 % at the end\n"
        ),
        "{text}"
    );
    assert!(text.contains("  Zed's kept rate      0.0 %\n"), "{text}");
    assert!(text.contains("  right but not taken  1\n"), "{text}");

    check_replay(&db);
    check_export(&db);
    check_html(&db);
}

/// `live --html`: the page in real headless Chromium, no script, the figures in the
/// DOM, the outcome bar drawn (half accepted green, half dismissed red).
fn check_html(db: &Path) {
    if !available(
        "live_figures_of_a_real_neovim_session (html)",
        &[Server::Chromium],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("live.html");
    let out = nextedit_with_db(&["live", "1", "--html", html.to_str().unwrap()], db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = format!("file://{}", html.display());
    let profile = tempfile::tempdir().unwrap();
    let dom = crate::report_html::chromium(profile.path())
        .args(["--dump-dom", &url])
        .stderr(std::process::Stdio::null())
        .output()
        .unwrap();
    let dom = String::from_utf8(dom.stdout).unwrap();
    assert_eq!(dom.matches("<script").count(), 0);
    // group, sessions, offers, accepted, partial, dismissed, superseded, acceptance; the
    // kept shares after 30 s, 5 min and at the end, then Zed's kept rate (by token: the
    // "gre" left of "greet" keeps none of it), reversals and right-but-not-taken.
    assert!(
        dom.contains("<tr><td class=\"l\">all</td><td>1</td><td>2</td><td>1</td><td>0</td><td>1</td><td>0</td><td>50.0 %</td>"),
        "{dom}"
    );
    assert!(
        dom.contains(
            "<td>60.0 %</td><td>60.0 %</td><td>60.0 %</td><td>0.0 %</td><td>0</td><td>1</td></tr>"
        ),
        "{dom}"
    );
    let png = dir.path().join("live.png");
    crate::report_html::screenshot(profile.path(), &url, &png, "1400,600");
    let (_, _, rgb) = crate::report_html::decode(&png);
    let green = rgb.iter().filter(|p| **p == [0x2b, 0x8a, 0x3e]).count();
    let red = rgb.iter().filter(|p| **p == [0xc9, 0x2a, 0x2a]).count();
    // Two bars of 300 × 22 pixels (one answer each of 2), and the legend's keys.
    assert!(
        green >= 300 * 22 && red >= 300 * 22,
        "{green} green, {red} red pixels"
    );
    assert!(green.abs_diff(red) < 200, "{green} green, {red} red pixels");

    // The same section in `report --html` of the recorded:pyright run (run 1).
    let report = dir.path().join("report.html");
    let out = nextedit_with_db(
        &[
            "report",
            "1",
            "--html",
            report.to_str().unwrap(),
            "--live",
            "1",
        ],
        db,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&report).unwrap();
    assert_eq!(page.matches("<h2 id=\"live\">").count(), 1);
    assert!(page.contains(
        "<td>60.0 %</td><td>60.0 %</td><td>60.0 %</td><td>0.0 %</td><td>0</td><td>1</td></tr>"
    ));
    assert!(!page.contains("not part of this report yet"));
}

/// Distinct edits per answer, as recorded (each is one suggestion of `recorded:`).
fn distinct_edits(db: &Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT count(DISTINCT edits) FROM offers GROUP BY request_seq ORDER BY request_seq",
        )
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// `recorded:pyright` on the session: pyright's own lists, at the steps they were made.
fn check_replay(db: &Path) {
    let lines = json_lines(&nextedit_with_db(
        &[
            "replay",
            "--jsonl",
            "--session",
            "1",
            "--suggester",
            "recorded:pyright",
        ],
        db,
    ));
    // The edits (pauses of 2.5 s and a change of origin cut them): e0 "gree"; e1 the
    // "e" Neovim takes back when the list opens; e2 the accepted item, "gre" → "greet"
    // (tagged `completion`); e3 "(1)"; e4 a new line "gr"; e5 "gr" → "greet(2)"; e6
    // "et" deleted. Steps 1–6 apply e1–e6.
    let steps = lines[1]["steps"].as_array().unwrap();
    let applied: Vec<&str> = steps
        .iter()
        .map(|s| s["applied"].as_str().unwrap())
        .collect();
    assert_eq!(applied, ["e1", "e2", "e3", "e4", "e5", "e6"]);
    let predictions: Vec<usize> = steps
        .iter()
        .map(|s| s["predictions"].as_array().unwrap().len())
        .collect();
    let edits = distinct_edits(db);
    // Before e1 the first list (answered after e0, before e1 began), before e5 the
    // second; nothing was offered before the other steps.
    assert_eq!(
        predictions,
        [edits[0] as usize, 0, 0, 0, edits[1] as usize, 0]
    );
    // Rank 0 is `greet` on the line being typed (line 5, then line 6): the right place,
    // but the developer's next edit there was another one (taking back "e", then
    // "(2)" after the name), so no content match.
    for (step, line, bleu) in [(0, 5, 1.2213386697554703e-75), (4, 6, 22.313016014842983)] {
        let first = &steps[step]["predictions"][0];
        assert_eq!(
            (
                first["start_line"].clone(),
                first["end_line"].clone(),
                first["class"].clone()
            ),
            (line.into(), (line + 1).into(), "flow_breaking".into())
        );
        // generate: the offer for exactly those lines: "greet\n" against "gre\n",
        // then against "greet(2)\n".
        let content = &steps[step]["content"];
        assert_eq!(
            (content["bleu"].clone(), content["es"].clone()),
            (bleu.into(), 0.5.into())
        );
    }
    let summary = &lines[2]["summary"];
    assert_eq!(summary["steps"], 6);
    assert_eq!(summary["micro"]["precision"], 0.0);
    assert_eq!(summary["shares"]["flow_breaking"], 1.0);
}

/// `sessions export --offers`: one line per answer; fields that vary with pyright's
/// indexing and the machine's speed (latencies, times, the lists' other items) left out.
fn check_export(db: &Path) {
    let out = nextedit_with_db(
        &["sessions", "export", "1", "--offers", "--format", "jsonl"],
        db,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = json_lines(&out)
        .into_iter()
        .map(|mut l| {
            let o = l.as_object_mut().unwrap();
            for key in ["latency_ms", "t_ms", "list_size", "seq", "request_seq"] {
                o.remove(key);
            }
            o["items"] = Value::Array(vec![o["items"][0].clone()]);
            let outcome = o["outcome"].as_object_mut().unwrap();
            outcome.remove("after_ms");
            outcome.remove("seq");
            outcome.remove("change_seq");
            if let Some(r) = o["right_but_not_taken"].as_object_mut() {
                r.remove("after_ms");
                r.remove("change_seq");
            }
            l
        })
        .collect();
    insta::assert_json_snapshot!("export_offers", lines);
}

/// Bad input: a clear error naming the input, exit code 2.
#[test]
fn live_names_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let check = |args: &[&str], needle: &str| {
        let out = nextedit_output(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    };
    let missing = dir.path().join("missing.db");
    check(
        &["live", "5", "--db", missing.to_str().unwrap()],
        "missing.db",
    );
    check(
        &["live", "5", "--within=-1"],
        "invalid value '-1' for '--within <S>': -1 is not a number of seconds from 0 to 604800",
    );
    // A commit-derived trajectory has no offers.
    let file = dir.path().join("commit.json");
    let trajectory =
        nextedit::core::trajectory::Trajectory::new(nextedit::core::trajectory::SessionInfo::new(
            "c",
            nextedit::core::trajectory::SessionKind::Commit,
        ));
    std::fs::write(&file, serde_json::to_string(&trajectory).unwrap()).unwrap();
    check(
        &["live", file.to_str().unwrap()],
        &format!("session {} is not a recorded session", file.display()),
    );
}

/// An inline suggestion taken in real Neovim 0.12: `vim.lsp.inline_completion` asks
/// famulus (backed by the real llama server with the tests' tiny model) through the
/// plugin's proxy when insert mode starts, and the plugin's `inline_accept()` puts the
/// item in and sends `$/nextedit/suggestion` `accepted`. The recording holds the offer,
/// the signal and the text; `nextedit live` counts one accepted offer.
#[test]
fn an_inline_suggestion_accepted_in_neovim() {
    let test = "an_inline_suggestion_accepted_in_neovim";
    if !available(test, &[Server::Nvim]) {
        return;
    }
    let Some(python) = crate::suggester_openai::llama_python(test) else {
        return;
    };
    let Some(famulus) = crate::offers_record::famulus(test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let model = crate::suggester_openai::tiny_model(&python, tmp.path());
    let llama = crate::suggester_openai::LlamaServer::start(&python, &model, tmp.path());
    let root = env!("CARGO_MANIFEST_DIR");
    let init = format!(
        "vim.opt.rtp:append('{root}/editors/nvim')
vim.lsp.config('famulus', {{ cmd = {{ '{famulus}' }}, filetypes = {{ 'python' }},
  root_markers = {{ 'pyproject.toml' }},
  cmd_env = {{ NEXTEDIT_TEST_LLAMA_KEY = '{key}' }},
  init_options = {{ infill = {{ provider = 'OpenAICompletions',
    config = {{ url = 'http://127.0.0.1:{port}/v1/completions', api_key_env = 'NEXTEDIT_TEST_LLAMA_KEY',
                model = 'tiny', temperature = 0.0, max_tokens = 8, stop = {{}}, seed = 42 }},
    template = '<PRE>{{{{ prefix }}}}<SUF>{{{{ suffix }}}}<MID>' }} }} }})
require('nextedit').setup({{ servers = {{ 'famulus' }} }})
vim.lsp.enable('famulus')
vim.api.nvim_create_autocmd('LspAttach', {{ callback = function(ev)
  vim.lsp.inline_completion.enable(true, {{ bufnr = ev.buf }})
end }})
",
        famulus = famulus.display(),
        key = crate::suggester_openai::KEY,
        port = llama.port,
    );
    let text = "def add(a, b):\n    return \n";
    let (mut nvim, main, db) = start(common::nvim(), tmp.path(), &init, text);
    let uri = uri(&main);
    nvim.wait_for(
        "famulus to attach through the proxy",
        "#vim.tbl_filter(function(c) return c.initialized and require('nextedit').is_wrapped(c) end, vim.lsp.get_clients({bufnr = 0})) == 1",
    );
    // Insert mode at the end of `    return `: Neovim asks for inline completions.
    nvim.keys("2GA");
    wait_until("the inline answer recorded", || {
        db_count(
            &db,
            "SELECT count(*) FROM offers WHERE kind = 'inline_completion'",
        ) >= 1
    });
    let offered: String = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT text FROM offers WHERE kind = 'inline_completion' ORDER BY request_seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!offered.is_empty(), "the tiny model offered nothing");
    // The item is shown once Neovim has its answer; accept it through the plugin.
    let expected = format!("def add(a, b):\n    return {offered}\n");
    // The item shows once Neovim has the answer: press the accept key until the plugin
    // has sent its signal (one press that takes an item, never a second one).
    let sent = "table.concat(require('nextedit').status_lines(), ' '):find('suggestion 1', 1, true) ~= nil";
    wait_until("the suggestion accepted", || {
        nvim.keys("<Cmd>lua require('nextedit').inline_accept()<CR>");
        std::thread::sleep(std::time::Duration::from_millis(200));
        nvim.lua(sent) == Value::Bool(true)
    });
    wait_until("the accepted text recorded", || {
        recorded_text(&db, &uri).as_deref() == Some(expected.as_str())
    });
    nvim.keys("<Esc>");
    nvim.wait_for("normal mode", "vim.fn.mode() == 'n'");
    let signals: Vec<Value> = {
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut stmt = conn
            .prepare("SELECT payload FROM signals WHERE kind = 'suggestion' ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| r.get::<_, String>(0))
            .unwrap()
            .map(|p| serde_json::from_str(&p.unwrap()).unwrap())
            .collect()
    };
    assert_eq!(signals.len(), 1, "{signals:?}");
    assert_eq!(signals[0]["event"], "accepted");
    assert_eq!(signals[0]["text"], offered.as_str());
    assert_eq!(signals[0]["acceptedLength"], offered.encode_utf16().count());
    assert_eq!(signals[0]["textDocument"]["uri"], uri.as_str());
    // famulus never answers `shutdown`: Neovim gives up on it and the proxy's
    // supervised exit ends the session with nothing lost.
    nvim.quit_and_wait_for_the_session(":qa!<CR>", &db);
    let out = nextedit_with_db(&["live", "1", "--json"], &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let live: Value = serde_json::from_slice(&out.stdout).unwrap();
    let group = &live["groups"][0];
    assert_eq!(group["accepted"], 1, "{live:#}");
    let accepted = live["offers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["outcome"]["outcome"] == "accepted")
        .expect("an accepted offer");
    // The editor said so: the signal is the evidence.
    assert_eq!(accepted["outcome"]["evidence"], "signal", "{accepted:#}");
    assert_eq!(group["chars_accepted"], offered.chars().count());
}
