//! Scale-out: `replay --plan`, `replay --shard I/N` and `runs merge` against the
//! single-machine run of the same commits of a real git repository, and the Ray
//! driver `replay/ray_replay.py` on a real local two-node Ray cluster with a worker
//! killed mid-run; plans with repetitions (trajectory × repetition units) merged into
//! the repetition group a single-machine `--repetitions 2` run makes, on one machine
//! and on Ray.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::common::{Server, available};
use crate::common::{nextedit_bin, nextedit_output as nextedit};
use crate::derive_support::TestRepo;

/// Five commits that rename identifiers across files (propagate finds some of the
/// other sites, so the figures are neither all zero nor all one).
pub(crate) fn history() -> (TestRepo, String) {
    let mut repo = TestRepo::new();
    repo.write("pkg/prices.py", "def total_price(items):\n    return sum(items)\n\n\ndef describe(items):\n    return total_price(items)\n");
    repo.write(
        "app.py",
        "from pkg.prices import total_price\n\nprint(total_price([1, 2]))\n",
    );
    repo.write("pkg/tax.py", "RATE = 0.2\n\n\ndef tax(amount):\n    return amount * RATE\n\n\ndef gross(amount):\n    return amount + tax(amount)\n");
    let base = repo.commit("base");
    repo.write("pkg/prices.py", "def subtotal(items):\n    return sum(items)\n\n\ndef describe(items):\n    return subtotal(items)\n");
    repo.write(
        "app.py",
        "from pkg.prices import subtotal\n\nprint(subtotal([1, 2]))\n",
    );
    repo.commit("rename total_price to subtotal");
    repo.write("pkg/tax.py", "VAT = 0.2\n\n\ndef tax(amount):\n    return amount * VAT\n\n\ndef gross(amount):\n    return amount + tax(amount)\n");
    repo.commit("RATE is VAT");
    repo.write("pkg/tax.py", "VAT = 0.2\n\n\ndef vat(amount):\n    return amount * VAT\n\n\ndef gross(amount):\n    return amount + vat(amount)\n");
    repo.write(
        "app.py",
        "from pkg.prices import subtotal\nfrom pkg.tax import vat\n\nprint(subtotal([1, 2]), vat(3))\n",
    );
    repo.commit("tax is vat");
    repo.write("README.md", "# shop\n\nPrices and taxes.\n");
    repo.commit("readme");
    repo.write("pkg/prices.py", "def subtotal(items):\n    return sum(items)\n\n\ndef summary(items):\n    return subtotal(items)\n");
    repo.commit("describe is summary");
    (repo, base)
}

/// The replay arguments every run of these tests shares.
fn replay_args(repo: &Path, range: &str) -> Vec<String> {
    replay_with(repo, range, "builtin:propagate")
}

pub(crate) fn replay_with(repo: &Path, range: &str, suggester: &str) -> Vec<String> {
    [
        "replay",
        "--repo",
        repo.to_str().unwrap(),
        "--range",
        range,
        "--suggester",
        suggester,
    ]
    .map(String::from)
    .to_vec()
}

pub(crate) fn run(args: &[String]) -> Output {
    Command::new(nextedit_bin()).args(args).output().unwrap()
}

pub(crate) fn ok(output: &Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

pub(crate) fn with(args: &[String], extra: &[&str]) -> Vec<String> {
    args.iter()
        .cloned()
        .chain(extra.iter().map(|s| s.to_string()))
        .collect()
}

/// A run's `report --json`, with what differs between any two runs by nature (its id,
/// start time, measured latencies) taken out; everything else must be equal.
pub(crate) fn comparable_report(db: &Path, run: i64) -> Value {
    let out = ok(&nextedit(&[
        "report",
        "--json",
        "--db",
        db.to_str().unwrap(),
        &run.to_string(),
    ]));
    let mut report = serde_json::from_str::<Value>(out.trim()).unwrap()["runs"][0].take();
    let run = report["run"].as_object_mut().unwrap();
    run.remove("id");
    run.remove("started_at");
    report["results"]
        .as_object_mut()
        .unwrap()
        .remove("latency_ms");
    // The latency figures too (`suggest_p50_ms`, …).
    report["figures"]
        .as_object_mut()
        .unwrap()
        .retain(|name, _| !name.ends_with("_ms"));
    report
}

/// The first table of `report` (the flow figures) without the run id column.
fn flow_table(db: &Path, run: i64) -> Vec<String> {
    let out = ok(&nextedit(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        &run.to_string(),
    ]));
    out.lines()
        .take_while(|l| !l.is_empty())
        .map(|l| l.trim_start().split_once("  ").unwrap().1.to_string())
        .collect()
}

/// Every row of every run table of `run`, every column but `run_id`, sorted.
fn run_rows(db: &Path, run: i64) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut rows = Vec::new();
    for table in [
        "run_trajectories",
        "run_steps",
        "run_predictions",
        "run_errors",
        "run_reads",
    ] {
        let mut statement = conn
            .prepare(&format!("SELECT * FROM {table} WHERE run_id = ?1"))
            .unwrap();
        let names: Vec<String> = statement
            .column_names()
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut found = statement.query([run]).unwrap();
        while let Some(row) = found.next().unwrap() {
            let mut line = table.to_string();
            for (i, name) in names.iter().enumerate() {
                if name != "run_id" {
                    let value: rusqlite::types::Value = row.get(i).unwrap();
                    line.push_str(&format!(" {name}={value:?}"));
                }
            }
            rows.push(line);
        }
    }
    rows.sort();
    rows
}

/// The plan's lines, run as a driver would: each line's command with `--shard` and
/// its own database.
pub(crate) fn run_plan_shards(plan: &[Value], count: usize, dir: &Path) -> Vec<PathBuf> {
    let command = &plan[0]["command"];
    let args: Vec<String> = serde_json::from_value(command["args"].clone()).unwrap();
    (0..count)
        .map(|i| {
            let db = dir.join(format!("shard-{i}.db"));
            let output = Command::new(nextedit_bin())
                .args(&args)
                .args(["--shard", &format!("{i}/{count}"), "--db"])
                .arg(&db)
                .current_dir(command["cwd"].as_str().unwrap())
                .output()
                .unwrap();
            ok(&output);
            db
        })
        .collect()
}

pub(crate) fn merge(args: &[&Path], extra: &[&str]) -> Output {
    Command::new(nextedit_bin())
        .args(["runs", "merge"])
        .args(args)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_plan_run_in_shards_and_merged_reports_what_the_single_machine_run_reports() {
    let (repo, base) = history();
    let tmp = tempfile::tempdir().unwrap();
    let range = format!("{base}..HEAD");
    let args = replay_args(repo.path(), &range);
    let single = tmp.path().join("single.db");
    ok(&run(&with(&args, &["--db", single.to_str().unwrap()])));

    // The plan: one line per commit, oldest first, each naming its commit and the
    // command that runs it (without the planning machine's database or plan file).
    let plan_path = tmp.path().join("plan.jsonl");
    let said = ok(&run(&with(
        &args,
        &[
            "--plan",
            plan_path.to_str().unwrap(),
            "--db",
            tmp.path().join("plan.db").to_str().unwrap(),
        ],
    )));
    assert_eq!(said, format!("wrote 5 shards to {}\n", plan_path.display()));
    let plan: Vec<Value> = std::fs::read_to_string(&plan_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let shas: Vec<String> = repo
        .git(&["rev-list", "--reverse", &range])
        .lines()
        .map(String::from)
        .collect();
    let workspace = repo.path().canonicalize().unwrap();
    let project = workspace.file_name().unwrap().to_str().unwrap().to_string();
    for (i, (line, sha)) in plan.iter().zip(&shas).enumerate() {
        let settings = &line["settings"];
        assert_eq!(
            (
                &line["shard"],
                &line["shards"],
                &line["key"],
                &line["repetition"],
                &line["suggester"],
                &line["source"],
                &line["command"]["args"],
                &settings["suggester"],
                &settings["match"],
            ),
            (
                &json!(i),
                &json!(5),
                &json!(format!("{project}@{}", &sha[..10])),
                &json!(0),
                &json!("builtin:propagate"),
                &json!({"kind": "commit", "repo": workspace, "commit": sha}),
                &json!(args),
                &json!("builtin:propagate"),
                &json!("bleu"),
            ),
            "{line}"
        );
    }

    // Two shards (the units 0, 2, 4 and 1, 3), merged in either order: the same report.
    let shards = run_plan_shards(&plan, 2, tmp.path());
    for (name, order) in [("merged.db", [0, 1]), ("reversed.db", [1, 0])] {
        let out = tmp.path().join(name);
        let said = ok(&merge(&[&out, &shards[order[0]], &shards[order[1]]], &[]));
        assert_eq!(
            said,
            format!("merged 2 of 2 shards into run 1 in {}\n", out.display())
        );
        assert_eq!(comparable_report(&out, 1), comparable_report(&single, 1));
        assert_eq!(flow_table(&out, 1), flow_table(&single, 1));
        // Exact by design: the merged run is the shards' rows as they stored them.
        let mut shard_rows = run_rows(&shards[0], 1);
        shard_rows.extend(run_rows(&shards[1], 1));
        shard_rows.sort();
        assert_eq!(run_rows(&out, 1), shard_rows);
    }
    // Not vacuous: the figures are neither empty nor perfect.
    let report = comparable_report(&single, 1);
    assert_eq!(
        (&report["run"]["trajectories"], &report["run"]["done"]),
        (&json!(5), &json!(5))
    );
    let f1 = report["summary"]["micro"]["f1"].as_f64().unwrap();
    assert!(f1 > 0.0 && f1 < 1.0, "{report}");
    // `--db` adds a run to an existing database, as every other command's `--db` names
    // the database it works on (`--into`, its earlier name, still does).
    let merged = tmp.path().join("merged.db");
    let said = ok(&merge(
        &[&shards[0], &shards[1]],
        &["--db", merged.to_str().unwrap()],
    ));
    assert_eq!(
        said,
        format!("merged 2 of 2 shards into run 2 in {}\n", merged.display())
    );
    let said = ok(&merge(
        &[&shards[0], &shards[1]],
        &["--into", merged.to_str().unwrap()],
    ));
    assert_eq!(
        said,
        format!("merged 2 of 2 shards into run 3 in {}\n", merged.display())
    );
}

/// `runs merge` with these databases fails with exit status 2 and this message.
fn check_refused(dbs: &[&Path], expected: &str) {
    let out = merge(dbs, &[]);
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        (Some(2), format!("nextedit: error: {expected}").as_str())
    );
}

#[test]
fn merge_refuses_shards_of_other_settings_or_plans_twice_the_same_or_missing_ones() {
    let (repo, base) = history();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let range = format!("{base}..HEAD");
    let args = replay_args(repo.path(), &range);
    let shard = |i: usize, n: usize, name: &str, suggester: &str| {
        let db = dir.join(name);
        let spec = format!("{i}/{n}");
        let args = replay_with(repo.path(), &range, suggester);
        ok(&run(&with(
            &args,
            &["--shard", &spec, "--db", db.to_str().unwrap()],
        )));
        db
    };
    let propagate = "builtin:propagate";
    let s0 = shard(0, 3, "s0.db", propagate);
    let s1 = shard(1, 3, "s1.db", propagate);
    let s2 = shard(2, 3, "s2.db", propagate);
    let noop = shard(2, 3, "noop.db", "builtin:noop");
    let other_plan = shard(1, 2, "half.db", propagate);
    let single = dir.join("single.db");
    ok(&run(&with(&args, &["--db", single.to_str().unwrap()])));
    let out = dir.join("out.db");

    check_refused(
        &[&out, &s0, &s1, &noop],
        &format!(
            "{} and {} ran with different settings (suggester: \"builtin:propagate\" vs \"builtin:noop\"): they are not shards of one plan",
            noop.display(),
            s0.display()
        ),
    );
    check_refused(
        &[&out, &s0, &other_plan],
        &format!(
            "{} and {} are shards of different plans (2 shards vs 3)",
            other_plan.display(),
            s0.display()
        ),
    );
    check_refused(
        &[&out, &s0, &s1, &s1],
        &format!(
            "shard 1/3 is given twice: {} and {}",
            s1.display(),
            s1.display()
        ),
    );
    check_refused(
        &[&out, &s0, &single],
        &format!(
            "{} holds 0 shard runs (runs made by `nextedit replay --shard I/N`); a shard database holds one shard's runs",
            single.display()
        ),
    );
    check_refused(
        &[&s0, &s0, &s1],
        &format!(
            "{} is both the output and a shard: merge into another database",
            s0.display()
        ),
    );
    check_refused(
        &[&out, &s0, &s2],
        "shards 1 of 3 are missing (2 trajectories not merged); merge them too, or pass --allow-partial for a run marked partial",
    );
    // A shard whose run did not finish, and one that claims another shard's place
    // (its stored plan says 2/3 while it holds shard 1's commits).
    let altered = |name: &str, sql: &str| {
        let db = dir.join(name);
        std::fs::copy(&s1, &db).unwrap();
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch(sql)
            .unwrap();
        db
    };
    let unfinished = altered("unfinished.db", "UPDATE runs SET status = 'interrupted'");
    check_refused(
        &[&out, &s0, &unfinished],
        &format!(
            "{db}: shard 1/3 (run 1) is interrupted, not done: finish it with `nextedit replay --resume 1 --db {db}` and the shard's --suggester",
            db = unfinished.display()
        ),
    );
    let moved = altered(
        "moved.db",
        "UPDATE runs SET shard = json_set(shard, '$.index', 2)",
    );
    let keys = |shard: &Path| -> Vec<String> {
        rusqlite::Connection::open(shard)
            .unwrap()
            .prepare("SELECT key FROM run_trajectories ORDER BY position")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    check_refused(
        &[&out, &s0, &moved],
        &format!(
            "{}: shard 2/3 holds {:?} where the plan assigns {:?} (overlapping or altered shards)",
            moved.display(),
            keys(&s1),
            keys(&s2)
        ),
    );
    // A database holding two shards' runs (shard 1 run into shard 0's database).
    let mixed = dir.join("mixed.db");
    std::fs::copy(&s0, &mixed).unwrap();
    ok(&run(&with(
        &args,
        &["--shard", "1/3", "--db", mixed.to_str().unwrap()],
    )));
    check_refused(
        &[&out, &mixed],
        &format!(
            "{}: run 1 is not one more repetition of shard 1/3: a shard database holds one shard's runs, one per repetition",
            mixed.display()
        ),
    );
    let nowhere = dir.join("nowhere.db");
    check_refused(
        &[&out, &s0, &nowhere],
        &format!(
            "shard database {} does not exist (`nextedit replay --shard I/N --db FILE` writes one)",
            nowhere.display()
        ),
    );
    // The refused merges did not even create the output database.
    assert!(!out.exists());

    // --allow-partial: the run says it is partial and which trajectories it lacks.
    let partial = merge(&[&out, &s0, &s2], &["--allow-partial"]);
    assert_eq!(
        (
            partial.status.code(),
            String::from_utf8_lossy(&partial.stderr).trim()
        ),
        (Some(1), "nextedit: run 1 is partial: shards 1 are missing")
    );
    let report = comparable_report(&out, 1);
    assert_eq!(
        (
            &report["run"]["status"],
            &report["run"]["trajectories"],
            &report["run"]["done"]
        ),
        (&json!("partial"), &json!(5), &json!(3))
    );
    let listed = ok(&nextedit(&[
        "runs",
        "show",
        "--db",
        out.to_str().unwrap(),
        "1",
    ]));
    let lines: Vec<&str> = listed.lines().collect();
    let statuses: Vec<&str> = lines[lines.len() - 5..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(statuses, ["done", "missing", "done", "done", "missing"]);
}

#[test]
fn the_ray_driver_runs_the_shards_on_two_nodes_retries_a_killed_worker_and_merges() {
    if !available(
        "the_ray_driver_runs_the_shards_on_two_nodes_retries_a_killed_worker_and_merges",
        &[Server::Ray],
    ) {
        return;
    }
    let (repo, base) = history();
    let tmp = tempfile::tempdir().unwrap();
    // Two repetitions: ten units, each trajectory × repetition a shard of its own.
    let args = with(
        &replay_args(repo.path(), &format!("{base}..HEAD")),
        &["--repetitions", "2"],
    );
    let single = tmp.path().join("single.db");
    ok(&run(&with(&args, &["--db", single.to_str().unwrap()])));
    let plan = tmp.path().join("plan.jsonl");
    ok(&run(&with(
        &args,
        &[
            "--plan",
            plan.to_str().unwrap(),
            "--db",
            tmp.path().join("plan.db").to_str().unwrap(),
        ],
    )));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let marker = tmp.path().join("killed-once");
    let ray_tmp = tempfile::Builder::new()
        .prefix("ray")
        .tempdir_in("/tmp")
        .unwrap();
    let merged = tmp.path().join("merged.db");
    let output = Command::new(root.join(".venv-ray/bin/python"))
        .arg(root.join("replay/ray_replay.py"))
        .arg(&plan)
        .args(["--out", merged.to_str().unwrap()])
        .args(["--nextedit", nextedit_bin().to_str().unwrap()])
        .args(["--local-nodes", "2", "--max-retries", "2"])
        .args(["--ray-temp-dir", ray_tmp.path().to_str().unwrap()])
        // The plan's suggester, said again: a plan is data.
        .args(["--", "--suggester", "builtin:propagate"])
        .env("RAY_REPLAY_KILL_ONCE", &marker)
        .output()
        .unwrap();
    let stdout = ok(&output);
    let lines: Vec<&str> = stdout.lines().collect();
    // One line per shard, each finished (the killed one on its second attempt), then
    // the merge, then the summary.
    let mut finished: Vec<Value> = lines[..10]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    finished.sort_by_key(|l| l["shard"].as_u64());
    for (i, line) in finished.iter().enumerate() {
        assert_eq!(
            (&line["shard"], &line["shards"], &line["status"]),
            (&json!(i), &json!(10), &json!(0)),
            "{line}"
        );
    }
    assert_eq!(
        lines[10],
        format!(
            "merged 10 of 10 shards into run 1 in {} (2 repetitions: runs 1, 2)",
            merged.display()
        )
    );
    assert!(lines[11].contains("\"wall_seconds\""), "{stdout}");
    // A worker was killed mid-run (its nextedit had created its database), and the
    // retried shard's result is complete: the merged report is the single machine's.
    let killed = std::fs::read_to_string(&marker).unwrap();
    assert!(killed.starts_with("shard "), "{killed}");
    // The group (mean and interval of every figure) and each repetition.
    assert_eq!(comparable_report(&merged, 1), comparable_report(&single, 1));
    assert_eq!(comparable_report(&merged, 2), comparable_report(&single, 2));
    assert_eq!(flow_table(&merged, 1), flow_table(&single, 1));
}

/// The `report --json` figures of a run group: each figure's values per repetition,
/// mean and interval, without the measured latencies.
fn group_figures(db: &Path, run: i64) -> Value {
    let mut report = comparable_report(db, run);
    report["figures"].take()
}

#[test]
fn a_plan_with_repetitions_merges_into_the_group_a_single_machine_run_makes() {
    // The suggester's answers differ from call to call (so between repetitions): a
    // first single-machine run stores them per repetition in a cache database; the
    // single-machine re-run and the shards are then served the very same answers,
    // repetition by repetition, and must report the same means and intervals.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let trajectory = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/snapshot-trajectory.json"
    );
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    std::fs::copy(trajectory, &a).unwrap();
    std::fs::copy(trajectory, &b).unwrap();
    let spec = format!(
        "cmd:VARYING_STATE='{}' VARYING_LOG='{}' python3 '{}'",
        dir.join("counter").display(),
        dir.join("calls.jsonl").display(),
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/suggesters/varying.py")
    );
    let cache = dir.join("cache.db");
    let args: Vec<String> = [
        "replay",
        "--trajectory",
        a.to_str().unwrap(),
        "--trajectory",
        b.to_str().unwrap(),
        "--suggester",
        &spec,
        "--sandbox",
        "off",
        "--repetitions",
        "2",
        "--cache-db",
        cache.to_str().unwrap(),
        "--quiet",
    ]
    .map(String::from)
    .to_vec();
    ok(&run(&with(
        &args,
        &["--db", dir.join("first.db").to_str().unwrap()],
    )));
    let served = with(&args, &["--cache", "read-only"]);
    let single = dir.join("single.db");
    ok(&run(&with(&served, &["--db", single.to_str().unwrap()])));

    // The plan: trajectory × repetition, the repetitions of a trajectory side by side.
    let plan_path = dir.join("plan.jsonl");
    let said = ok(&run(&with(
        &served,
        &[
            "--plan",
            plan_path.to_str().unwrap(),
            "--db",
            dir.join("plan.db").to_str().unwrap(),
        ],
    )));
    assert_eq!(said, format!("wrote 4 shards to {}\n", plan_path.display()));
    let plan: Vec<Value> = std::fs::read_to_string(&plan_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let units: Vec<(Value, Value, Value)> = plan
        .iter()
        .map(|l| {
            (
                l["shard"].clone(),
                l["key"].clone(),
                l["repetition"].clone(),
            )
        })
        .collect();
    let (ka, kb) = (json!(a.to_str().unwrap()), json!(b.to_str().unwrap()));
    assert_eq!(
        units,
        [
            (json!(0), ka.clone(), json!(0)),
            (json!(1), ka.clone(), json!(1)),
            (json!(2), kb.clone(), json!(0)),
            (json!(3), kb.clone(), json!(1)),
        ]
    );

    // Three shards: 0/3 has units 0 and 3 (a in repetition 1, b in repetition 2: two
    // runs), 1/3 only a's repetition 2, 2/3 only b's repetition 1.
    let shards = run_plan_shards(&plan, 3, dir);
    let held = |db: &Path| -> Vec<(i64, Option<i64>, String)> {
        rusqlite::Connection::open(db)
            .unwrap()
            .prepare(
                "SELECT r.repetition, r.repetition_of, t.key FROM runs r
                 JOIN run_trajectories t ON t.run_id = r.id ORDER BY r.id, t.position",
            )
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let (ka, kb) = (a.display().to_string(), b.display().to_string());
    assert_eq!(
        held(&shards[0]),
        [(1, None, ka.clone()), (2, Some(1), kb.clone())]
    );
    assert_eq!(held(&shards[1]), [(2, None, ka.clone())]);
    assert_eq!(held(&shards[2]), [(1, None, kb.clone())]);

    let out = dir.join("merged.db");
    let said = ok(&merge(&[&out, &shards[2], &shards[0], &shards[1]], &[]));
    assert_eq!(
        said,
        format!(
            "merged 3 of 3 shards into run 1 in {} (2 repetitions: runs 1, 2)\n",
            out.display()
        )
    );
    assert_eq!(
        held(&out),
        [
            (1, None, ka.clone()),
            (1, None, kb.clone()),
            (2, Some(1), ka.clone()),
            (2, Some(1), kb.clone())
        ]
    );
    // The group's report (mean and interval of every figure) is the single machine's,
    // and so is each repetition's.
    assert_eq!(comparable_report(&out, 1), comparable_report(&single, 1));
    assert_eq!(comparable_report(&out, 2), comparable_report(&single, 2));
    assert_eq!(flow_table(&out, 1), flow_table(&single, 1));
    // Not vacuous: the repetitions differ, so the interval has a width.
    let figures = group_figures(&out, 1);
    insta::assert_json_snapshot!("repetitions_merged_figures", figures);

    // A shard missing: every repetition it had units of is partial.
    let partial = dir.join("partial.db");
    let output = merge(&[&partial, &shards[0], &shards[2]], &["--allow-partial"]);
    assert_eq!(output.status.code(), Some(1));
    let statuses: Vec<(i64, String, String)> = rusqlite::Connection::open(&partial)
        .unwrap()
        .prepare(
            "SELECT r.repetition, r.status, t.status FROM runs r
             JOIN run_trajectories t ON t.run_id = r.id ORDER BY r.id, t.position",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let row = |r: i64, run: &str, t: &str| (r, run.to_string(), t.to_string());
    assert_eq!(
        statuses,
        [
            row(1, "done", "done"),
            row(1, "done", "done"),
            row(2, "partial", "missing"),
            row(2, "partial", "done"),
        ]
    );
}

#[test]
fn a_plan_names_files_then_commits_each_with_its_source() {
    let (repo, _) = history();
    let tmp = tempfile::tempdir().unwrap();
    let trajectory = tmp.path().join("head.json");
    let derived = ok(&nextedit(&[
        "derive",
        "--repo",
        repo.path().to_str().unwrap(),
        "--commit",
        "HEAD",
    ]));
    std::fs::write(&trajectory, derived).unwrap();
    let plan_path = tmp.path().join("plan.jsonl");
    ok(&nextedit(&[
        "replay",
        "--trajectory",
        trajectory.to_str().unwrap(),
        "--repo",
        repo.path().to_str().unwrap(),
        "--commit",
        "HEAD~1",
        "--suggester",
        "builtin:oracle",
        "--plan",
        plan_path.to_str().unwrap(),
        "--db",
        tmp.path().join("plan.db").to_str().unwrap(),
    ]));
    let sources: Vec<(Value, Value)> = std::fs::read_to_string(&plan_path)
        .unwrap()
        .lines()
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap();
            (line["shard"].clone(), line["source"].clone())
        })
        .collect();
    assert_eq!(
        sources,
        [
            (
                json!(0),
                json!({"kind": "file", "path": trajectory.canonicalize().unwrap()})
            ),
            (
                json!(1),
                json!({"kind": "commit", "repo": repo.path().canonicalize().unwrap(),
                       "commit": repo.git(&["rev-parse", "HEAD~1"]).trim()})
            ),
        ]
    );
}
