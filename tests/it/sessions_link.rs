//! `nextedit sessions link`: a session recorded through the real proxy with real
//! gopls in a real git repository, then commits made after it; the session is
//! linked to the first commit that holds its final texts, and exports carry it.

use crate::common;
use crate::common::nextedit_with_db as nextedit;
use nextedit::store::SessionRead;

use std::path::Path;

use common::*;
use serde_json::{Value, json};

const A: &str = "package p\n\nvar X = 1\n";
const A_FINAL: &str = "package p\n\nvar X = 10\n";
const B: &str = "package p\n\nvar Y = 2\n";
const B_FINAL: &str = "package p\n\nvar Y = 2\nvar Z = Y\n";
const SECRET: &str = "package p\n\nvar K = 0\n";

/// Writes `files` into the work tree and commits them on HEAD; returns the commit id.
fn commit(repo: &git2::Repository, files: &[(&str, &str)], message: &str, at: i64) -> String {
    let root = repo.workdir().unwrap().to_path_buf();
    let mut index = repo.index().unwrap();
    for (path, text) in files {
        std::fs::write(root.join(path), text).unwrap();
        index.add_path(Path::new(path)).unwrap();
    }
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::new("T", "t@example.com", &git2::Time::new(at, 0)).unwrap();
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(Some("HEAD"), &who, &who, message, &tree, &parents)
        .unwrap()
        .to_string()
}

fn edit(client: &nextedit::engine::lsp_client::LspClient, uri: &str, change: TextChange) {
    client
        .notify("textDocument/didChange", did_change(uri, 2, &change))
        .unwrap();
}

#[test]
fn a_session_is_linked_to_the_first_commit_with_its_final_texts() {
    if !available(
        "a_session_is_linked_to_the_first_commit_with_its_final_texts",
        &[Server::Gopls],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let workspace = tmp.path().join("proj");
    std::fs::create_dir(&workspace).unwrap();
    let workspace = workspace.canonicalize().unwrap();
    let repo = git2::Repository::init(&workspace).unwrap();
    let start = commit(
        &repo,
        &[
            ("go.mod", "module example.com/proj\n\ngo 1.19\n"),
            ("a.go", A),
            ("b.go", B),
            ("secret.go", SECRET),
        ],
        "start",
        1_700_000_000,
    );

    // The session edits a.go, b.go and secret.go, whose text is never stored.
    let db = tmp.path().join("rec.db");
    let mut client = spawn_proxied(&db, &workspace, gopls_command(tmp.path()), &[]);
    client.initialize(&workspace, TIMEOUT).unwrap();
    for (name, text) in [("a.go", A), ("b.go", B), ("secret.go", SECRET)] {
        client
            .notify(
                "textDocument/didOpen",
                json!({"textDocument": {"uri": uri(&workspace.join(name)), "languageId": "go", "version": 1, "text": text}}),
            )
            .unwrap();
    }
    let (a, b, secret) = (
        uri(&workspace.join("a.go")),
        uri(&workspace.join("b.go")),
        uri(&workspace.join("secret.go")),
    );
    let at = |line, from, to, text| TextChange {
        start: Pos(line, from),
        end: Pos(line, to),
        text,
    };
    edit(&client, &a, at(2, 8, 9, "10"));
    edit(&client, &b, at(3, 0, 0, "var Z = Y\n"));
    edit(&client, &secret, at(2, 8, 9, "9"));
    assert!(client.shutdown(TIMEOUT).unwrap().success());

    // Only a.go is committed yet: no link, and the closest commit says why.
    let first = commit(&repo, &[("a.go", A_FINAL)], "a: ten", 1_700_000_100);
    let output = nextedit(&["sessions", "link", "1"], &db);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!(
            "no commit links session 1: none of the 1 commits after {} has the session's final text in every edited file (a.go, b.go)\n\
             closest: {first} a: ten (1 of 2 files match; differs: b.go)\n",
            &start[..12]
        )
    );

    // b.go follows, then an unrelated commit: the first commit with both is the link.
    let second = commit(
        &repo,
        &[("b.go", B_FINAL)],
        "b: use y\n\nWith a body.",
        1_700_000_200,
    );
    commit(
        &repo,
        &[("c.go", "package p\n")],
        "unrelated",
        1_700_000_300,
    );
    let output = nextedit(&["sessions", "link", "1"], &db);
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("session 1 linked to {second} b: use y\n")
    );

    // Stored, listed, shown and exported with the commit's header.
    let database = nextedit::store::Database::open_existing(&db).unwrap();
    let session = database.session(1).unwrap();
    assert_eq!(session.git_head.as_deref(), Some(start.as_str()));
    assert_eq!(session.linked_commit.as_deref(), Some(second.as_str()));
    let list = String::from_utf8(nextedit(&["sessions", "list"], &db).stdout).unwrap();
    let lines: Vec<&str> = list.lines().collect();
    assert!(lines[0].contains("  COMMIT        WORKSPACE"), "{list}");
    assert!(
        lines[1].ends_with(&format!("  {}  {}", &second[..12], workspace.display())),
        "{list}"
    );
    let show = String::from_utf8(nextedit(&["sessions", "show", "1"], &db).stdout).unwrap();
    assert!(
        show.contains(&format!("\n  commit      {second}\n")),
        "{show}"
    );
    let export: Value =
        serde_json::from_slice(&nextedit(&["sessions", "export", "1"], &db).stdout).unwrap();
    assert_eq!(
        export["session"]["commit"],
        json!({"sha": second, "parent": first, "message": "b: use y\n\nWith a body.", "project": "proj"})
    );

    // A directory outside any repository is a clear error.
    let outside = tmp.path().join("elsewhere");
    std::fs::create_dir(&outside).unwrap();
    let output = nextedit(
        &["sessions", "link", "1", "--repo", outside.to_str().unwrap()],
        &db,
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).starts_with(&format!(
            "nextedit: error: session 1: {} is not in a git repository",
            outside.display()
        )),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
