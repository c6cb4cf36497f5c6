//! Snapshots of what the binary prints, as the guard of refactors that must not change
//! it: every command's `--help` (one snapshot per command, nested ones too), and the
//! steps of `builtin:oracle` and `builtin:noop` replays of a small trajectory
//! (`tests/data/snapshot-trajectory.json`, Historian's worked example with a partial
//! order) with the report that compares them, in JSON and text.
//!
//! Only what differs between runs is masked: the database path, start times and
//! latencies. A deliberate change: `INSTA_UPDATE=always cargo test --test it cli_snapshots`,
//! then review `git diff tests/it/snapshots` and commit it.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const TRAJECTORY: &str = "tests/data/snapshot-trajectory.json";

/// Runs the built binary in the repository root with a fixed help width; returns stdout
/// (the command must succeed).
fn nextedit(args: &[&str]) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_nextedit"))
        .args(args)
        .current_dir(ROOT)
        // clap wraps help text to $COLUMNS (else the terminal's width).
        .env("COLUMNS", "100")
        .env_remove("NEXTEDIT_DB")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "nextedit {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// The subcommands a `--help` text lists under `Commands:` (without `help`).
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        // A command's line starts with two spaces; its description's wrapped lines with more.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// Snapshots `nextedit <command> --help` as `help_<command>` (`help` for the top level),
/// then every subcommand's help the same way.
fn check_help(command: &[&str]) {
    let mut args = command.to_vec();
    args.push("--help");
    let help = nextedit(&args);
    let name = std::iter::once("help")
        .chain(command.iter().copied())
        .collect::<Vec<_>>()
        .join("_");
    insta::assert_snapshot!(name, help, &format!("nextedit {}", args.join(" ")));
    for sub in subcommands(&help) {
        let mut nested = command.to_vec();
        nested.push(&sub);
        check_help(&nested);
    }
}

#[test]
fn help_top_level() {
    let help = nextedit(&["--help"]);
    insta::assert_snapshot!("help", help, "nextedit --help");
    // Each command has a test of its own below: a new one needs one too.
    assert_eq!(
        subcommands(&help),
        [
            "proxy",
            "sessions",
            "score",
            "replay",
            "report",
            "runs",
            "context",
            "complete",
            "live",
            "derive",
            "import",
            "export",
            "eval-order",
            "tasks",
            "doctor"
        ]
    );
}

#[test]
fn help_complete() {
    check_help(&["complete"]);
}

#[test]
fn help_live() {
    check_help(&["live"]);
}

#[test]
fn help_proxy() {
    check_help(&["proxy"]);
}

#[test]
fn help_sessions() {
    check_help(&["sessions"]);
}

#[test]
fn help_score() {
    check_help(&["score"]);
}

#[test]
fn help_replay() {
    check_help(&["replay"]);
}

#[test]
fn help_report() {
    check_help(&["report"]);
}

#[test]
fn help_runs() {
    check_help(&["runs"]);
}

#[test]
fn help_context() {
    check_help(&["context"]);
}

#[test]
fn help_derive() {
    check_help(&["derive"]);
}

#[test]
fn help_import() {
    check_help(&["import"]);
}

#[test]
fn help_tasks() {
    check_help(&["tasks"]);
}

#[test]
fn help_export() {
    check_help(&["export"]);
}

#[test]
fn help_eval_order() {
    check_help(&["eval-order"]);
}

#[test]
fn help_doctor() {
    check_help(&["doctor"]);
}

/// `value` with what differs between runs masked: the database path, start times and
/// latencies (a number, or a latency figure, becomes `"[ms]"`; `null`, for no call, stays).
fn masked(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(key, value)| {
                    let value = match key.as_str() {
                        "db" => Value::from("[db]"),
                        "started_at" => Value::from("[time]"),
                        "p50" | "p95" if value.is_number() => Value::from("[ms]"),
                        // A latency figure of `report --json` (`suggest_p50_ms`, …).
                        k if k.ends_with("_ms") && value.is_object() => Value::from("[ms]"),
                        _ => masked(value),
                    };
                    (key, value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(masked).collect()),
        other => other,
    }
}

/// JSON lines, masked.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| masked(serde_json::from_str(l).unwrap()))
        .collect()
}

/// Text output with the database path and the latency columns (`p50 / p95` in ms)
/// masked, widths kept so the columns still line up.
pub(crate) fn masked_text(text: &str, db: &Path) -> String {
    let latency = regex::Regex::new(r" *\d+\.\d+ / \d+\.\d+").unwrap();
    let text = text.replace(&db.display().to_string(), "[db]");
    latency
        .replace_all(&text, |m: &regex::Captures| {
            format!("{:>width$}", "[ms] / [ms]", width = m[0].len())
        })
        .into_owned()
}

#[test]
fn oracle_and_noop_replays_of_a_small_trajectory() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db_arg = db.to_str().unwrap();
    let replay = |suggester: &str, json: bool| {
        let mut args = vec![
            "replay",
            "--suggester",
            suggester,
            "--trajectory",
            TRAJECTORY,
            "--db",
            db_arg,
        ];
        if json {
            args.push("--jsonl");
        }
        nextedit(&args)
    };
    insta::assert_json_snapshot!(
        "replay_oracle_json",
        json_lines(&replay("builtin:oracle", true))
    );
    insta::assert_json_snapshot!(
        "replay_noop_json",
        json_lines(&replay("builtin:noop", true))
    );
    insta::assert_json_snapshot!(
        "report_json",
        masked(
            serde_json::from_str(&nextedit(&["report", "--json", "--db", db_arg, "1", "2"]))
                .unwrap()
        )
    );
    insta::assert_snapshot!(
        "report_text",
        masked_text(&nextedit(&["report", "--db", db_arg, "1", "2"]), &db)
    );
    insta::assert_snapshot!(
        "replay_oracle_text",
        masked_text(&replay("builtin:oracle", false), &db)
    );
    insta::assert_snapshot!(
        "replay_noop_text",
        masked_text(&replay("builtin:noop", false), &db)
    );
}
