//! Issue 26, what nextedit reads from others: a command planted in a database is never
//! run on `--resume` (nor a plan's on Ray), a key a server reflects is masked in every
//! output and every column, every numeric flag is checked by range (exit 2), a huge
//! input is cut in messages and stored errors, and `runs merge`, `sessions purge`,
//! `report` and `runs list` hold against hostile or broken databases. A key in a
//! suggester spec is stored masked; a database whose maker was killed is removed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{Server, available, nextedit_bin, nextedit_with_db as nextedit};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Asserts the command succeeded; its stdout.
fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stdout(out)
}

/// A commit trajectory of two one-line edits in one file.
fn trajectory(id: &str) -> Value {
    json!({
        "format": "nextedit.trajectory", "version": 1,
        "session": {"id": id, "kind": "commit"},
        "files": [{"path": "a.py", "base_text": "a = 1\nb = 2\nc = 3\n"}],
        "events": [],
        "edits": [
            {"id": "e0", "file": "a.py", "kind": "replace", "before_lines": {"start": 0, "end": 1},
             "after_lines": {"start": 0, "end": 1}, "before_text": "a = 1\n", "after_text": "a = 10\n"},
            {"id": "e1", "file": "a.py", "kind": "replace", "before_lines": {"start": 2, "end": 3},
             "after_lines": {"start": 2, "end": 3}, "before_text": "c = 3\n", "after_text": "c = 30\n"},
        ],
        "order": {"edges": [], "initial": ["e0"], "natural": ["e0", "e1"]},
    })
}

/// Writes `trajectory(id)` to `dir/id.json`; its path.
fn trajectory_file(dir: &Path, id: &str) -> String {
    let path = dir.join(format!("{id}.json"));
    std::fs::write(&path, trajectory(id).to_string()).unwrap();
    path.to_str().unwrap().to_string()
}

fn sql(db: &Path, statements: &str) {
    rusqlite::Connection::open(db)
        .unwrap()
        .execute_batch(statements)
        .unwrap();
}

// ---------------------------------------------------------------- resume

/// A replay run with `builtin:noop` left interrupted, then planted: the database now
/// says its suggester is `cmd:` touching `marker`, unsandboxed.
fn planted_run(dir: &Path, marker: &Path) -> PathBuf {
    let db = dir.join("runs.db");
    let t = trajectory_file(dir, "t");
    ok(&nextedit(
        &["replay", "--suggester", "builtin:noop", "--trajectory", &t],
        &db,
    ));
    let planted = format!("cmd:touch {}", marker.display());
    sql(
        &db,
        &format!(
            "UPDATE runs SET status = 'running', suggester = '{planted}',
                 config = json_set(config, '$.suggester', '{planted}', '$.sandbox', 'unsandboxed');
             UPDATE run_trajectories SET status = 'pending';
             DELETE FROM run_steps;"
        ),
    );
    db
}

#[test]
fn a_command_planted_in_a_run_database_never_runs_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("planted-ran");
    let db = planted_run(tmp.path(), &marker);
    let planted = format!("cmd:touch {}", marker.display());
    let cases: [(&[&str], String); 4] = [
        (
            &["replay", "--resume", "1"],
            format!(
                "nextedit: error: run 1 was made with --suggester `{planted}`: resume it with the same --suggester (nextedit never runs what a database names)\n"
            ),
        ),
        (
            &["replay", "--resume", "1", "--suggester", "builtin:noop"],
            format!(
                "nextedit: error: run 1 was made with --suggester `{planted}`, not --suggester `builtin:noop`: resume it with the same --suggester\n"
            ),
        ),
        // The planted command itself, with the default sandbox: the stored
        // `unsandboxed` is only compared, never obeyed.
        (
            &["replay", "--resume", "1", "--suggester", &planted],
            "nextedit: error: run 1 was made with --sandbox off, not --sandbox bwrap: resume it with the same --sandbox\n"
                .to_string(),
        ),
        (
            &[
                "replay",
                "--resume",
                "1",
                "--suggester",
                &planted,
                "--sandbox",
                "off",
                "--sandbox-ro",
                "/opt",
            ],
            "nextedit: error: run 1 was made with no --sandbox-ro, not --sandbox-ro /opt: resume it with the same --sandbox-ro\n".to_string(),
        ),
    ];
    for (args, expected) in cases {
        let out = nextedit(args, &db);
        assert_eq!((out.status.code(), stderr(&out)), (Some(2), expected));
        assert_eq!(stdout(&out), "");
        assert!(!marker.exists(), "the planted command ran: {args:?}");
    }
    // The run is left as it was: resumable with the command line the user vouches for.
    let planted_back = "UPDATE runs SET suggester = 'builtin:noop',
         config = json_set(config, '$.suggester', 'builtin:noop', '$.sandbox', 'in-process');";
    sql(&db, planted_back);
    let out = nextedit(
        &["replay", "--resume", "1", "--suggester", "builtin:noop"],
        &db,
    );
    assert!(ok(&out).starts_with("run 1 in "), "{}", stdout(&out));
    assert!(!marker.exists());
}

#[test]
fn a_planted_stored_number_is_refused_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let db = planted_run(tmp.path(), &tmp.path().join("m"));
    sql(
        &db,
        "UPDATE runs SET suggester = 'builtin:noop',
             config = json_set(config, '$.suggester', 'builtin:noop', '$.timeout', 1e308);",
    );
    let out = nextedit(
        &["replay", "--resume", "1", "--suggester", "builtin:noop"],
        &db,
    );
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(2),
            "nextedit: error: --timeout: 1e308 is not a number of seconds greater than 0 and at most 604800\n".to_string()
        )
    );
}

// ---------------------------------------------------------------- secrets

/// The key the tests' suggester holds: nothing about it looks like a key.
pub const KEY: &str = "correct-horse-battery-staple-42";

/// A loopback server speaking just enough of the OpenAI API: `GET /models` lists
/// model `m`; every other request is refused with a body that quotes the request's
/// Authorization header and then the bare key (a server reflecting what it was sent,
/// as some do in their errors). Returns its base URL.
pub fn reflecting_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || answer_reflecting(stream));
        }
    });
    format!("http://127.0.0.1:{port}/v1")
}

fn answer_reflecting(stream: std::net::TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    let (mut auth, mut length) = (String::new(), 0usize);
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let (name, value) = line.split_once(':').unwrap_or((&line, ""));
        match name.to_ascii_lowercase().as_str() {
            "authorization" => auth = value.trim().to_string(),
            "content-length" => length = value.trim().parse().unwrap_or(0),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let (status, answer) = if request_line.starts_with("GET") && request_line.contains("/models") {
        ("200 OK", json!({"data": [{"id": "m"}]}).to_string())
    } else {
        let bare = auth.trim_start_matches("Bearer ");
        (
            "401 Unauthorized",
            format!("{{\"error\": \"key {bare} refused (sent {auth})\"}}"),
        )
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
}

/// Every text value of every column of every table of the database at `db`, with
/// where it is.
fn every_text(db: &Path) -> Vec<(String, String)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut texts = Vec::new();
    for table in tables {
        let mut stmt = conn.prepare(&format!("SELECT * FROM \"{table}\"")).unwrap();
        let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
        let mut rows = stmt.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for (i, column) in columns.iter().enumerate() {
                let text = match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        String::from_utf8_lossy(t).into_owned()
                    }
                    _ => continue,
                };
                texts.push((format!("{table}.{column}"), text));
            }
        }
    }
    texts
}

/// Asserts the key appears in none of `texts`, and that the tables did keep what the
/// server said around it (masked), in `masked_in`.
pub fn assert_masked(db: &Path, masked_in: &[&str]) {
    let texts = every_text(db);
    let leaks: Vec<&(String, String)> = texts.iter().filter(|(_, t)| t.contains(KEY)).collect();
    assert!(leaks.is_empty(), "the key is stored: {leaks:?}");
    let stars = "*".repeat(KEY.len());
    for place in masked_in {
        assert!(
            texts
                .iter()
                .any(|(p, t)| p == place && t.contains(&format!("key {stars} refused"))),
            "{place} does not hold the masked answer: {:?}",
            texts.iter().filter(|(p, _)| p == place).collect::<Vec<_>>()
        );
    }
}

#[test]
fn a_key_the_server_reflects_is_masked_in_every_output_and_every_column() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let t = trajectory_file(tmp.path(), "t");
    let spec = format!(
        "openai:{}?model=m&key_env=NEXTEDIT_TEST_MODEL_CREDENTIAL",
        reflecting_server()
    );
    let replay = Command::new(nextedit_bin())
        .args(["replay", "--suggester", &spec, "--trajectory", &t, "--db"])
        .arg(&db)
        .env("NEXTEDIT_TEST_MODEL_CREDENTIAL", KEY)
        .output()
        .unwrap();
    // Every call failed (exit 1: the trajectory gave up), and said why, masked.
    let (out, err) = (stdout(&replay), stderr(&replay));
    assert!(!out.contains(KEY) && !err.contains(KEY), "{out}\n{err}");
    let stars = "*".repeat(KEY.len());
    assert!(out.contains(&format!("key {stars} refused")), "{out}");
    assert_masked(
        &db,
        &["run_errors.message", "response_cache.failure_message"],
    );
    // Every report format, from a process that holds no key at all.
    for args in [
        &["report", "1"][..],
        &["report", "1", "--json"],
        &["runs", "show", "1"],
    ] {
        let out = nextedit(args, &db);
        assert!(
            !stdout(&out).contains(KEY) && !stderr(&out).contains(KEY),
            "{args:?}"
        );
    }
    let html = tmp.path().join("report.html");
    ok(&nextedit(
        &["report", "1", "--html", html.to_str().unwrap()],
        &db,
    ));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(!page.contains(KEY));
    assert!(
        page.contains(&format!("key {stars} refused")),
        "the page shows no failure"
    );
    // A URL with credentials is refused without repeating them.
    for (scheme, why) in [
        ("http", "credentials in the URL would be stored"),
        ("https", "https is not supported"),
    ] {
        let with_key = format!("openai:{scheme}://me:{KEY}@127.0.0.1:9/v1?model=m");
        let out = nextedit(
            &["replay", "--suggester", &with_key, "--trajectory", &t],
            &tmp.path().join("other.db"),
        );
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(err.contains(why) && !err.contains(KEY), "{err}");
    }
    // `complete` says the same failure, masked.
    std::fs::write(tmp.path().join("a.py"), "x = 1\n").unwrap();
    let complete = Command::new(nextedit_bin())
        .args([
            "complete",
            "--suggester",
            &spec,
            "--file",
            "a.py",
            "--at",
            "0:0",
            "--dir",
        ])
        .arg(tmp.path())
        .env("NEXTEDIT_TEST_MODEL_CREDENTIAL", KEY)
        .output()
        .unwrap();
    assert_eq!(complete.status.code(), Some(2));
    assert!(
        stderr(&complete).contains(&format!("key {stars} refused"))
            && !stderr(&complete).contains(KEY),
        "{}",
        stderr(&complete)
    );
}

// ---------------------------------------------------------------- numbers

/// Every numeric flag of every command, with the arguments that reach it, and whether
/// 0 is a value it takes.
const NUMERIC_FLAGS: &[(&[&str], &str, bool)] = &[
    (
        &["replay", "--suggester", "builtin:noop"],
        "--timeout",
        false,
    ),
    (
        &["replay", "--suggester", "builtin:noop"],
        "--init-timeout",
        false,
    ),
    (&["replay", "--suggester", "builtin:noop"], "--jobs", false),
    (
        &["replay", "--suggester", "builtin:noop"],
        "--repetitions",
        false,
    ),
    (
        &["replay", "--suggester", "builtin:noop"],
        "--give-up-after",
        false,
    ),
    (
        &["replay", "--suggester", "builtin:noop"],
        "--es-threshold",
        true,
    ),
    (
        &["replay", "--session", "1", "--suggester", "builtin:noop"],
        "--pause-ms",
        true,
    ),
    (
        &["complete", "--suggester", "builtin:noop"],
        "--timeout",
        false,
    ),
    (
        &["complete", "--suggester", "builtin:noop"],
        "--init-timeout",
        false,
    ),
    (
        &["tasks", "run", "t.jsonl", "--suggester", "builtin:noop"],
        "--timeout",
        false,
    ),
    (
        &["tasks", "run", "t.jsonl", "--suggester", "builtin:noop"],
        "--call-timeout",
        false,
    ),
    (
        &["tasks", "run", "t.jsonl", "--suggester", "builtin:noop"],
        "--jobs",
        false,
    ),
    (
        &["tasks", "run", "t.jsonl", "--suggester", "builtin:noop"],
        "--samples",
        false,
    ),
    (
        &["tasks", "run", "t.jsonl", "--suggester", "builtin:noop"],
        "--memory",
        false,
    ),
    (
        &["tasks", "cut", "--range", "A..B"],
        "--max-per-commit",
        false,
    ),
    (&["tasks", "cut", "--range", "A..B"], "--context-k", true),
    (
        &["tasks", "cut", "--range", "A..B"],
        "--retriever-timeout",
        false,
    ),
    (&["tasks", "cut", "--range", "A..B"], "--pause-ms", true),
    (&["sessions", "export", "1"], "--pause-ms", true),
    (&["sessions", "link", "1"], "--limit", false),
    (&["live", "1"], "--within", true),
    (&["proxy"], "--exit-timeout", true),
    (
        &[
            "score",
            "bleu",
            "--reference",
            "a",
            "--prediction",
            "b",
            "--smoothing",
            "floor",
        ],
        "--smooth-value",
        true,
    ),
];

#[test]
fn every_numeric_flag_refuses_values_out_of_its_range() {
    let mut messages = String::new();
    for (command, flag, zero_ok) in NUMERIC_FLAGS {
        let mut bad = vec!["-1", "nan", "inf", "1e308", "18446744073709551616"];
        if !zero_ok {
            bad.push("0");
        }
        if ["--jobs", "--samples", "--repetitions"].contains(flag) {
            bad.push("4294967295");
        }
        for value in bad {
            let out = Command::new(nextedit_bin())
                .args(*command)
                .args([flag, value])
                .output()
                .unwrap();
            let err = stderr(&out);
            let first = err.lines().next().unwrap_or_default().to_string();
            assert_eq!(
                out.status.code(),
                Some(2),
                "{command:?} {flag} {value}: {err}"
            );
            assert!(
                first.starts_with(&format!("error: invalid value '{value}' for '{flag} <")),
                "{command:?} {flag} {value}: {err}"
            );
            let name: Vec<&str> = (command.iter())
                .take_while(|w| w.chars().all(|c| c.is_ascii_lowercase()))
                .copied()
                .collect();
            messages.push_str(&format!("{} {flag} {value}: {first}\n", name.join(" ")));
        }
    }
    insta::assert_snapshot!(messages);
}

// ---------------------------------------------------------------- long inputs

#[test]
fn a_huge_input_is_cut_in_messages_and_stored_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    // A 5 MB file path outside the root: refused, and the error names it.
    let mut t = trajectory("huge");
    let huge = format!("../{}", "x".repeat(5_000_000));
    t["files"][0]["path"] = json!(huge);
    for edit in t["edits"].as_array_mut().unwrap() {
        edit["file"] = json!(huge);
    }
    let path = tmp.path().join("huge.json");
    std::fs::write(&path, t.to_string()).unwrap();
    let out = nextedit(
        &[
            "replay",
            "--suggester",
            "builtin:noop",
            "--trajectory",
            path.to_str().unwrap(),
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.len() < 6_000, "{} bytes of stderr", err.len());
    assert!(
        err.contains("unsafe file path") && err.contains(" bytes cut) …"),
        "{err}"
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    for column in [
        "SELECT error FROM run_trajectories",
        "SELECT message FROM run_errors",
    ] {
        let stored: String = conn.query_row(column, [], |r| r.get(0)).unwrap();
        assert!(
            stored.len() <= 4096 && stored.contains(" bytes cut) …"),
            "{column}: {} bytes",
            stored.len()
        );
    }
}

// ---------------------------------------------------------------- merge, purge, report

/// Shard `i` of 2 of a replay of two trajectory files, in `dir/name`.
fn shard(dir: &Path, i: usize, name: &str) -> PathBuf {
    let db = dir.join(name);
    let (a, b) = (trajectory_file(dir, "a"), trajectory_file(dir, "b"));
    let spec = format!("{i}/2");
    ok(&nextedit(
        &[
            "replay",
            "--suggester",
            "builtin:noop",
            "--trajectory",
            &a,
            "--trajectory",
            &b,
            "--shard",
            &spec,
        ],
        &db,
    ));
    db
}

#[test]
fn merge_refuses_odd_columns_and_a_target_with_triggers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (s0, s1) = (shard(dir, 0, "s0.db"), shard(dir, 1, "s1.db"));
    // A column whose name would close the statement and drop a table if it were
    // spliced into SQL unquoted.
    let evil = dir.join("evil.db");
    std::fs::copy(&s1, &evil).unwrap();
    sql(
        &evil,
        r#"ALTER TABLE run_steps ADD COLUMN "x) VALUES (1); DROP TABLE runs; --" TEXT;"#,
    );
    let out_db = dir.join("out.db");
    let merge = |shards: &[&Path]| {
        let mut command = Command::new(nextedit_bin());
        command.args(["runs", "merge"]).arg(&out_db).args(shards);
        command.output().unwrap()
    };
    let out = merge(&[&s0, &evil]);
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(2),
            format!(
                "nextedit: error: database {}: table run_steps has a column \"x) VALUES (1); DROP TABLE runs; --\" this nextedit does not know\n",
                evil.display()
            )
        )
    );
    assert!(
        !out_db.exists(),
        "the output was created before every shard checked out"
    );
    // A target that carries a trigger (one that deletes every session) is refused
    // before anything is written: the trigger never fires.
    nextedit::store::Database::open(&out_db).unwrap();
    sql(
        &out_db,
        "INSERT INTO sessions (kind, started_at, status, nextedit_version) VALUES ('recorded', '2025-01-01', 'ended', '0');
         CREATE TRIGGER wipe AFTER INSERT ON runs BEGIN DELETE FROM sessions; END;",
    );
    let out = merge(&[&s0, &s1]);
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(2),
            format!(
                "nextedit: error: database {} holds triggers nextedit did not create (wipe): they would fire on the rows nextedit writes; use another database, or drop them (DROP TRIGGER name) if they are yours\n",
                out_db.display()
            )
        )
    );
    let conn = rusqlite::Connection::open(&out_db).unwrap();
    let counts: (i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM runs)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(counts, (1, 0));
    // Without the trigger the same shards merge.
    sql(&out_db, "DROP TRIGGER wipe;");
    assert!(ok(&merge(&[&s0, &s1])).starts_with("merged 2 of 2 shards into run 1 in "));
}

#[test]
fn purge_refuses_an_empty_pattern() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("s.db");
    for pattern in ["", " "] {
        let out = nextedit(&["sessions", "purge", "--file", pattern], &db);
        assert_eq!(
            (
                out.status.code(),
                stderr(&out).lines().next().unwrap_or_default().to_string()
            ),
            (
                Some(2),
                format!(
                    "error: invalid value '{pattern}' for '--file <GLOB>': an empty pattern would match everything: name what to match"
                )
            )
        );
    }
    assert!(!db.exists());
}

#[test]
fn report_never_writes_into_a_file_that_is_not_a_nextedit_database() {
    let tmp = tempfile::tempdir().unwrap();
    let foreign = tmp.path().join("foreign.db");
    sql(
        &foreign,
        "CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('mine');",
    );
    let files: [(&str, Vec<u8>, &str); 3] = [
        ("empty.db", Vec::new(), "it is empty"),
        (
            "random.db",
            (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
            "it is not a SQLite database",
        ),
        (
            "foreign.db",
            std::fs::read(&foreign).unwrap(),
            "it is a SQLite database without nextedit's tables",
        ),
    ];
    for (name, bytes, why) in files {
        let path = tmp.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        for args in [
            &["report"][..],
            &["report", "1"],
            &["runs", "list"],
            &["sessions", "list"],
        ] {
            let out = nextedit(args, &path);
            assert_eq!(
                (out.status.code(), stderr(&out)),
                (
                    Some(2),
                    format!(
                        "nextedit: error: {} is not a nextedit database: {why} (nothing was written to it; pass the database nextedit wrote with --db)\n",
                        path.display()
                    )
                ),
                "{args:?}"
            );
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{name} changed");
        }
        for suffix in ["-wal", "-shm", "-journal"] {
            assert!(!tmp.path().join(format!("{name}{suffix}")).exists());
        }
    }
}

#[test]
fn a_bad_row_makes_its_run_unreadable_and_the_others_are_still_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let t = trajectory_file(tmp.path(), "t");
    for _ in 0..3 {
        ok(&nextedit(
            &[
                "replay",
                "--suggester",
                "builtin:oracle",
                "--trajectory",
                &t,
            ],
            &db,
        ));
    }
    // Run 1: a repetition no u32 holds; run 2: a step number that is text.
    sql(
        &db,
        "UPDATE runs SET repetition = 99999999999 WHERE id = 1;
         UPDATE run_steps SET step = 'x' WHERE run_id = 2;",
    );
    let out = nextedit(&["runs", "list"], &db);
    assert_eq!(out.status.code(), Some(1));
    let listed = stdout(&out);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 4, "{listed}");
    assert!(
        lines[1].starts_with("   3  ") && lines[1].contains("builtin:oracle"),
        "{listed}"
    );
    assert!(lines[2].starts_with("   2  unreadable: "), "{listed}");
    assert!(lines[3].starts_with("   1  unreadable: "), "{listed}");
    let json = nextedit(&["runs", "list", "--json"], &db);
    assert_eq!(json.status.code(), Some(1));
    // One JSON document: an array of runs, the unreadable ones among them.
    let listed: Value = serde_json::from_str(&stdout(&json)).unwrap();
    let ids: Vec<(Value, bool)> = (listed.as_array().unwrap().iter())
        .map(|v| (v["id"].clone(), v.get("unreadable").is_some()))
        .collect();
    assert_eq!(ids, [(json!(3), false), (json!(2), true), (json!(1), true)]);
    // `report` of all three reports run 3 and says why it skipped the others.
    let out = nextedit(&["report", "1", "2", "3"], &db);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("nextedit: skipping run 1: ")
            && err.contains("\nnextedit: skipping run 2: "),
        "{err}"
    );
    let table = stdout(&out);
    assert!(
        table.lines().nth(1).unwrap().starts_with("   3  "),
        "{table}"
    );
    assert_eq!(
        table
            .lines()
            .filter(|l| l.starts_with("   1  ") || l.starts_with("   2  "))
            .count(),
        0
    );
}

// ---------------------------------------------------------------- Ray plans

#[test]
fn the_ray_driver_refuses_a_plan_whose_command_was_planted() {
    if !available(
        "the_ray_driver_refuses_a_plan_whose_command_was_planted",
        &[Server::Ray],
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = trajectory_file(tmp.path(), "t");
    let plan = tmp.path().join("plan.jsonl");
    ok(&nextedit(
        &[
            "replay",
            "--suggester",
            "builtin:noop",
            "--trajectory",
            &t,
            "--plan",
            plan.to_str().unwrap(),
        ],
        &tmp.path().join("plan.db"),
    ));
    let marker = tmp.path().join("planted-ran");
    let planted = format!("cmd:touch {}", marker.display());
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("builtin:noop", &planted);
    std::fs::write(&plan, text).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = |given: &[&str]| {
        Command::new(root.join(".venv-ray/bin/python"))
            .arg(root.join("replay/ray_replay.py"))
            .arg(&plan)
            .args(["--out", tmp.path().join("out.db").to_str().unwrap()])
            .args(["--nextedit", nextedit_bin().to_str().unwrap()])
            .arg("--")
            .args(given)
            .output()
            .unwrap()
    };
    let out = driver(&["--suggester", "builtin:noop"]);
    assert_eq!(
        (out.status.code(), stderr(&out)),
        (
            Some(2),
            format!(
                "ray_replay: error: {} runs its shards with --suggester {planted}, but this command line gives --suggester builtin:noop after `--`: give the same flags to run it (a plan is data: nothing it names is run on its word)\n",
                plan.display()
            )
        )
    );
    assert!(!marker.exists());
}

#[test]
fn a_key_in_a_suggester_spec_is_stored_masked_and_the_spec_still_resumes() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let renamer = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/renamer.py");
    let key = "sk-spec-4d1e8a7b93";
    let spec = format!("cmd:python3 {} api_key={key}", renamer.display());
    let path = trajectory_file(tmp.path(), "t1");
    ok(&nextedit(
        &["replay", "-q", "--suggester", &spec, "--trajectory", &path],
        &db,
    ));
    let texts = every_text(&db);
    let leaks: Vec<&(String, String)> = texts.iter().filter(|(_, t)| t.contains(key)).collect();
    assert!(leaks.is_empty(), "the key is stored: {leaks:?}");
    let masked = spec.replace(key, &"*".repeat(key.len()));
    let stored: (String, String) = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT suggester, json_extract(config, '$.suggester') FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(stored, (masked.clone(), masked));
    // The response cache is keyed by the masked spec too.
    assert!(
        texts
            .iter()
            .any(|(p, t)| p == "response_cache.suggester" && t.contains(&"*".repeat(key.len()))),
        "{texts:?}"
    );
    // Given again, the spec with its key is the stored one; another program is not.
    ok(&nextedit(
        &["replay", "-q", "--resume", "1", "--suggester", &spec],
        &db,
    ));
    let other = nextedit(
        &[
            "replay",
            "-q",
            "--resume",
            "1",
            "--suggester",
            "cmd:python3 /x.py",
        ],
        &db,
    );
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    // A task run's likewise.
    let world = crate::common::hostile::World::new();
    let echo = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suggesters/complete_echo.py");
    let spec = format!("cmd:python3 {} api_key={key}", echo.display());
    // Its test command and setup carry the key too (`true` ignores its arguments).
    let command = format!("true api_key={key}");
    let given = [
        "--suggester",
        &spec,
        "--test-command",
        &command,
        "--setup",
        &command,
    ];
    let ran = crate::common::hostile::run(&world.tasks_args("t.db", &given), &[]);
    // (`true` passes the empty answer too: no valid task, exit 1; the run is stored.)
    assert_eq!(ran.output.status.code(), Some(1), "{}", ran.stderr());
    let texts = every_text(&world.path("t.db"));
    let leaks: Vec<&(String, String)> = texts.iter().filter(|(_, t)| t.contains(key)).collect();
    assert!(leaks.is_empty(), "the key is stored: {leaks:?}");
    let stars = "*".repeat(key.len());
    assert!(
        texts.contains(&("task_runs.suggester".to_string(), spec.replace(key, &stars))),
        "{texts:?}"
    );
    let settings: (String, String) = rusqlite::Connection::open(world.path("t.db"))
        .unwrap()
        .query_row(
            "SELECT json_extract(settings, '$.test_command'), json_extract(settings, '$.setup') FROM task_runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let masked = command.replace(key, &stars);
    assert_eq!(settings, (masked.clone(), masked));
    // Given again with the key, the run resumes; another test command does not.
    let resume = |command: &str| {
        let given = [
            "--resume",
            "1",
            "--suggester",
            &spec,
            "--test-command",
            command,
            "--setup",
            command,
        ];
        crate::common::hostile::run(&world.tasks_args("t.db", &given), &[])
    };
    let again = resume(&command);
    assert_ne!(again.output.status.code(), Some(2), "{}", again.stderr());
    let other = resume("false");
    assert_eq!(other.output.status.code(), Some(2), "{}", other.stderr());
    assert!(!other.stderr().contains(key), "{}", other.stderr());
}

#[test]
fn a_database_creation_killed_midway_is_removed_by_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("runs.db");
    let scratch = tmp.path().join("tmp");
    std::fs::create_dir(&scratch).unwrap();
    let path = trajectory_file(tmp.path(), "t1");
    let leftovers = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".nextedit-new-"))
            .collect();
        names.sort();
        names
    };
    let replay = || {
        let mut command = crate::common::noop_replay(Path::new(&path), &db, &scratch);
        command
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        command
    };
    // SIGKILLed ever later, until one dies while it makes the database (a debug
    // build takes tens of milliseconds to).
    let mut delay = std::time::Duration::from_millis(2);
    while leftovers().is_empty() {
        assert!(
            delay < std::time::Duration::from_millis(500),
            "no replay was killed while it made the database"
        );
        let mut child = replay().spawn().unwrap();
        std::thread::sleep(delay);
        child.kill().unwrap();
        child.wait().unwrap();
        // Made in full: made again by the next one.
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(tmp.path().join(format!("runs.db{suffix}")));
        }
        delay += std::time::Duration::from_millis(2);
    }
    // One being made by a live process: locked (as its maker holds it) and kept.
    let live = tmp.path().join(".nextedit-new-live.db");
    let held = std::fs::File::create(&live).unwrap();
    // SAFETY: flock(2) on a descriptor this test owns.
    assert_eq!(
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&held), libc::LOCK_EX) },
        0
    );
    // Abandoned a while ago (a maker locks its file at once: only an old free one is
    // abandoned).
    for name in leftovers() {
        let status = Command::new("touch")
            .args(["-d", "1 minute ago"])
            .arg(tmp.path().join(name))
            .status()
            .unwrap();
        assert!(status.success());
    }
    let done = replay().status().unwrap();
    assert!(done.success());
    assert!(db.exists());
    assert_eq!(leftovers(), [".nextedit-new-live.db"]);
}
