//! The limits of an untrusted process tree, as root (where `RLIMIT_NPROC` does not
//! hold): a fork bomb (5,000 `sleep`s, one after the other), a 4 GiB file, a flood of
//! 1 MiB files, a full `/tmp` and 4 children of 700 MB each hit `--pids`, `--disk` and
//! `--memory`,
//! in a `cmd:` suggester of `replay` (the call fails as `limit_pids`, `limit_disk`,
//! `limit_memory`) and in a test run of `tasks run` (the answer's run is recorded as
//! `limit: pids`, … and counted in `tasks report`); the tree is killed at once, and
//! nothing survives the run: no process, no cgroup. A daemon started unsandboxed
//! (`--sandbox off`) does not outlive the run either, with a cgroup or, without one
//! (`NEXTEDIT_CGROUP=off`), adopted as subreaper.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::hostile::{Ran, World, hostile, leftovers, run, run_errors, task_report};

/// One limit to hit: the hostile action (replay) or test command (tasks run), the
/// flags that make it small, and the limit's key.
struct Hit {
    action: &'static str,
    test: String,
    flags: [&'static str; 2],
    limit: &'static str,
}

/// The limits to hit; the bomb's processes run `sleep TAG`, so what survives is found
/// by its command line (each test its own tag: they run at once).
fn hits(tag: &str) -> Vec<Hit> {
    vec![
        Hit {
            action: "fork",
            test: format!("for i in $(seq 5000); do sleep {tag} & done; wait"),
            flags: ["--pids", "64"],
            limit: "pids",
        },
        Hit {
            action: "disk",
            test: "head -c 4294967296 /dev/zero > big".into(),
            flags: ["--disk", "64"],
            limit: "disk",
        },
        Hit {
            action: "files",
            test: "for i in $(seq 4096); do head -c 1048576 /dev/zero > f$i; done".into(),
            flags: ["--disk", "64"],
            limit: "disk",
        },
        Hit {
            action: "tmp",
            test: format!(
                "for i in $(seq 4096); do head -c 1048576 /dev/zero > /tmp/f$i || break; done; sleep {tag}"
            ),
            flags: ["--disk", "64"],
            limit: "disk",
        },
        Hit {
            action: "memory",
            test: format!(
                "for i in 1 2 3 4; do python3 -c \"x = bytearray(b'1') * 700000000; import time; time.sleep({tag})\" & done; wait"
            ),
            flags: ["--memory", "1024"],
            limit: "memory",
        },
    ]
}

/// Generous bound on a run that hits a limit: it stops at the limit, not when the
/// bomb is done (5,000 processes, 4 GiB, ten minutes of sleep).
const QUICK: Duration = Duration::from_secs(30);

/// The run stopped at the limit, quickly, and left nothing: no tagged process, no cgroup.
fn stopped_clean(ran: &Ran, took: Duration, tag: &str, what: &str) {
    assert!(took < QUICK, "{what}: {took:?}");
    assert_eq!(leftovers(ran.pid, tag), Vec::<String>::new(), "{what}");
}

#[test]
fn a_suggester_past_a_limit_is_killed_and_its_call_fails_as_that_limit() {
    const TAG: &str = "600.4417";
    let world = World::new();
    for (i, hit) in hits(TAG).iter().enumerate() {
        let db = format!("r{i}.db");
        let spec = hostile(hit.action, &[format!("HOSTILE_TAG={TAG}")]);
        let mut flags = vec!["--suggester", spec.as_str()];
        flags.extend(hit.flags);
        let started = Instant::now();
        let ran = run(&world.replay_args(&db, &flags), &[]);
        let took = started.elapsed();
        let kind = format!("limit_{}", hit.limit);
        // The trajectory's one `suggest` fails as the limit; the run goes on.
        assert_eq!(
            run_errors(&world.path(&db)),
            [("suggest".to_string(), kind)],
            "{}: {}",
            hit.action,
            ran.stderr()
        );
        stopped_clean(&ran, took, TAG, hit.action);
    }
}

#[test]
fn a_test_run_past_a_limit_is_killed_and_recorded_as_that_limit() {
    const TAG: &str = "600.4419";
    let world = World::new();
    let mut found = Vec::new();
    for (i, hit) in hits(TAG).iter().enumerate() {
        let db = format!("t{i}.db");
        // The ground truth (the hole filled) passes; the empty answer runs the bomb.
        let command = format!("grep -q 'hostile.escape' calc.py || {{ {}; }}", hit.test);
        let mut flags = vec!["--suggester", "builtin:noop", "--test-command", &command];
        flags.extend(hit.flags);
        let started = Instant::now();
        let ran = run(&world.tasks_args(&db, &flags), &[]);
        stopped_clean(&ran, started.elapsed(), TAG, hit.action);
        let report = task_report(&world.path(&db));
        let conn = rusqlite::Connection::open(world.path(&db)).unwrap();
        let (passed, limit, tail): (bool, Option<String>, String) = conn
            .query_row(
                "SELECT passed, limit_hit, output_tail FROM task_answers",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        found.push(json!({
            "limits_hit": report["limits_hit"],
            "passed": passed,
            "limit_hit": limit,
            "said": tail.lines().last(),
        }));
    }
    let expected: Vec<Value> = hits(TAG)
        .iter()
        .map(|hit| {
            json!({
                "limits_hit": {hit.limit: 1},
                "passed": false,
                "limit_hit": hit.limit,
                "said": format!(
                    "[nextedit: limit: {} ({} {}{}): the tests' processes were killed]",
                    hit.limit,
                    hit.flags[0],
                    hit.flags[1],
                    if hit.limit == "pids" { "" } else { " MiB" }
                ),
            })
        })
        .collect();
    assert_eq!(found, expected);
    // The wall clock is a limit too.
    let command = format!("grep -q 'hostile.escape' calc.py || sleep {TAG}");
    let ran = run(
        &world.tasks_args(
            "time.db",
            &[
                "--suggester",
                "builtin:noop",
                "--test-command",
                &command,
                "--timeout",
                "1",
            ],
        ),
        &[],
    );
    assert_eq!(leftovers(ran.pid, TAG), Vec::<String>::new());
    assert_eq!(
        task_report(&world.path("time.db"))["limits_hit"],
        json!({"time": 1})
    );
}

#[test]
fn a_daemon_of_an_unsandboxed_run_does_not_outlive_it() {
    let world = World::new();
    let tag = "600.4418";
    let spec = hostile("daemon", &[format!("HOSTILE_TAG={tag}")]);
    // It passes with the ground truth only (the empty answer fails: the task counts).
    let daemon = format!(
        "setsid sh -c 'sleep {tag} >/dev/null 2>&1 &'; sleep 0.2; grep -q hostile.escape calc.py"
    );
    // With a cgroup, and with the subreaper alone.
    for (i, cgroup) in ["on", "off"].into_iter().enumerate() {
        let env = [("NEXTEDIT_CGROUP", cgroup)];
        let flags = ["--suggester", spec.as_str(), "--sandbox", "off"];
        let ran = run(&world.replay_args(&format!("d{i}.db"), &flags), &env);
        assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
        assert_eq!(
            leftovers(ran.pid, tag),
            Vec::<String>::new(),
            "replay, cgroup {cgroup}"
        );
        let flags = [
            "--suggester",
            "builtin:oracle",
            "--test-command",
            daemon.as_str(),
            "--sandbox",
            "off",
        ];
        let ran = run(&world.tasks_args(&format!("t{i}.db"), &flags), &env);
        assert_eq!(ran.output.status.code(), Some(0), "{}", ran.stderr());
        assert_eq!(
            leftovers(ran.pid, tag),
            Vec::<String>::new(),
            "tasks run, cgroup {cgroup}"
        );
        if cgroup == "off" {
            assert!(
                ran.stderr().contains(
                    "no cgroup (NEXTEDIT_CGROUP=off): --memory and --pids limit each process"
                ),
                "{}",
                ran.stderr()
            );
        }
    }
}
