//! The main job, for now: record a real pyright session through `nextedit proxy`
//! on a sample file, then print `nextedit sessions show` for it.
//!
//! Run with `scripts/demo` (installs pyright first). The session is recorded into
//! `target/demo/nextedit.db` unless `--db PATH` is given.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, bail};
use nextedit::core::record::uri::path_to_uri;
use nextedit::engine::lsp_client::LspClient;
use serde_json::json;

const SAMPLE: &str = "\"\"\"A tiny inventory module.\"\"\"\n\n\ndef total_price(items):\n    return sum(item.price for item in items)\n\n\ndef describe(items):\n    return f\"{len(items)} items, {total_price(items)} in total\"\n";

fn main() -> anyhow::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let args: Vec<String> = std::env::args().collect();
    let db = match args.iter().position(|a| a == "--db") {
        Some(i) => PathBuf::from(args.get(i + 1).context("--db needs a path")?),
        None => root.join("target/demo/nextedit.db"),
    };
    let pyright = root.join("tests/servers/node_modules/.bin/pyright-langserver");
    if !pyright.exists() {
        bail!(
            "pyright is not installed: run `npm ci --prefix tests/servers` (scripts/demo does it)"
        );
    }
    let nextedit = root.join("target/release/nextedit");
    let nextedit = if nextedit.exists() {
        nextedit
    } else {
        root.join("target/debug/nextedit")
    };

    let workspace = tempfile::tempdir()?;
    let workspace = workspace.path().canonicalize()?;
    let file = workspace.join("inventory.py");
    std::fs::write(&file, SAMPLE)?;
    let uri = path_to_uri(&file);

    println!(
        "recording a pyright session on {} into {}",
        file.display(),
        db.display()
    );
    let mut command = Command::new(&nextedit);
    command
        .arg("proxy")
        .arg("--db")
        .arg(&db)
        .arg("--workspace")
        .arg(&workspace)
        .arg("--")
        .arg(&pyright)
        .arg("--stdio");
    let mut client = LspClient::spawn(command)?;
    let timeout = Duration::from_secs(60);
    client.initialize(&workspace, timeout)?;
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": SAMPLE}}),
    )?;
    // Rename total_price → subtotal at its definition and its call site, typed as an editor would.
    let edits = [
        ((8, 34), (8, 45), "subtotal"),
        ((3, 4), (3, 15), "subtotal"),
    ];
    for (version, ((l1, c1), (l2, c2), text)) in edits.iter().enumerate() {
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version + 2}, "contentChanges": [{
                "range": {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}, "text": text}]}),
        )?;
    }
    let at = json!({"textDocument": {"uri": uri}, "position": {"line": 8, "character": 36}});
    let hover = client.request("textDocument/hover", at.clone(), timeout)?;
    let definition = client.request("textDocument/definition", at, timeout)?;
    client.notify(
        "textDocument/didSave",
        json!({"textDocument": {"uri": uri}}),
    )?;
    client.shutdown(timeout)?;
    println!(
        "hover: {}",
        hover
            .pointer("/contents/value")
            .and_then(|v| v.as_str())
            .unwrap_or("-")
    );
    println!("definition: {definition}\n");

    let sessions = Command::new(&nextedit)
        .args(["sessions", "list", "--db"])
        .arg(&db)
        .output()?;
    let listing = String::from_utf8_lossy(&sessions.stdout);
    let id = listing
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .context("no session recorded")?
        .to_string();
    let status = Command::new(&nextedit)
        .args(["sessions", "show", "--db"])
        .arg(&db)
        .arg(&id)
        .status()?;
    if !status.success() {
        bail!("nextedit sessions show failed");
    }
    println!("\nfinal text of inventory.py, rebuilt from the recording:");
    Command::new(&nextedit)
        .args(["sessions", "replay-text", "--db"])
        .arg(&db)
        .arg(&id)
        .arg("inventory.py")
        .status()?;
    Ok(())
}
