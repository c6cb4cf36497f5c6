//! The checkout is what is tested: `tasks run --python` runs the tests with a venv's
//! interpreter and the checkout first on the import path (a src layout found), an
//! installed copy shadowing the checkout is refused by the import canary (or makes a
//! later state's task invalid), `--setup` runs once per checkout, and `--sandbox off`
//! gives bubblewrap's verdicts. Real pytest; venvs made in the test from
//! `.venv-pytest`'s interpreter, without pip, its packages reached through a `.pth`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{Server, available, nextedit_bin};
use crate::tasks_run::{commit, repo_root, task, write_tasks};

const PRICE: &str = "\
def total(items):
    s = 0
    for x in items:
        s += x
    return s
";

const COUNT: &str = "\
def count(items):
    n = 0
    for _ in items:
        n += 1
    return n
";

const TESTS: &str = "\
from shop.price import total
from stock.count import count


def test_total():
    assert total([1, 2]) == 3


def test_count():
    assert count([5, 6]) == 2
";

/// A src-layout repository with two packages, `shop` and `stock`, tests under
/// `tests/` (not importable from the root), and its two tasks: `price` (the loop of
/// `shop.price.total`) and `count` (the loop of `stock.count.count`), in that order
/// in `tasks.jsonl` and reversed in `reversed.jsonl`.
struct Fixture {
    dir: PathBuf,
    /// Where the runs are stored.
    db: PathBuf,
    repo: PathBuf,
    tasks: PathBuf,
    reversed: PathBuf,
}

fn fixture(dir: &Path) -> Fixture {
    let dir = dir.canonicalize().unwrap();
    let repo = dir.join("shop");
    let c = commit(
        &repo,
        &[
            (
                "pyproject.toml",
                "[project]\nname = \"shop\"\n\n[tool.setuptools.packages.find]\nwhere = [\"src\"]\n",
            ),
            ("src/shop/__init__.py", ""),
            ("src/shop/price.py", PRICE),
            ("src/stock/__init__.py", ""),
            ("src/stock/count.py", COUNT),
            ("tests/test_shop.py", TESTS),
        ],
        "shop",
    );
    let price = task(
        "price",
        "shop",
        &c,
        "python",
        "src/shop/price.py",
        PRICE,
        "    for x in items:\n        s += x\n",
        &[("tests/test_shop.py", "test_total")],
    );
    let count = task(
        "count",
        "shop",
        &c,
        "python",
        "src/stock/count.py",
        COUNT,
        "    for _ in items:\n        n += 1\n",
        &[("tests/test_shop.py", "test_count")],
    );
    let tasks = dir.join("tasks.jsonl");
    write_tasks(&tasks, &[price.clone(), count.clone()]);
    let reversed = dir.join("reversed.jsonl");
    write_tasks(&reversed, &[count, price]);
    Fixture {
        db: dir.join("t.db"),
        dir,
        repo,
        tasks,
        reversed,
    }
}

/// The fixture in a new directory (kept while the first value lives), when pytest
/// is there (else `None`: `available` said why the test is skipped).
fn python_fixture(test: &str) -> Option<(tempfile::TempDir, Fixture)> {
    if !available(test, &[Server::Pytest]) {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = fixture(dir.path());
    Some((dir, f))
}

/// A venv at `dir/name` made by `.venv-pytest`'s interpreter, without pip, pytest
/// reached through a `.pth` naming `.venv-pytest`'s site-packages; `extra(site)` gives
/// more `.pth` lines. Returns its interpreter.
fn venv(dir: &Path, name: &str, extra: impl Fn(&Path) -> Vec<String>) -> PathBuf {
    let venv = dir.join(name);
    let made = Command::new(repo_root().join(".venv-pytest/bin/python3"))
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let pytest_site = site(&repo_root().join(".venv-pytest").canonicalize().unwrap());
    let mut pth = vec![pytest_site.display().to_string()];
    pth.extend(extra(&site(&venv)));
    std::fs::write(site(&venv).join("test-env.pth"), pth.join("\n") + "\n").unwrap();
    venv.join("bin/python")
}

/// The site-packages directory of the venv at `root`.
fn site(root: &Path) -> PathBuf {
    let lib = root.join("lib");
    let version = std::fs::read_dir(&lib)
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("python3"))
        .unwrap()
        .file_name();
    lib.join(version).join("site-packages")
}

/// No more `.pth` lines.
fn plain(_: &Path) -> Vec<String> {
    Vec::new()
}

/// A copy of the `stock` package installed as an egg in the venv's `site` (complete:
/// its empty answer would pass) and the `.pth` line that puts it first on the import
/// path, ahead of PYTHONPATH, as easy-install did.
fn shadowing_copy(site: &Path) -> Vec<String> {
    let egg = site.join("stock-1.0.egg");
    std::fs::create_dir_all(egg.join("stock")).unwrap();
    std::fs::write(egg.join("stock/__init__.py"), "").unwrap();
    std::fs::write(egg.join("stock/count.py"), COUNT).unwrap();
    vec![format!(
        "import sys; sys.path.insert(0, {:?})",
        egg.display().to_string()
    )]
}

/// `nextedit tasks run TASKS --repo REPO -q EXTRA… --db DB` with only the system's
/// directories on PATH: its `python3` has no pytest, so a test that passes ran with
/// `--python`'s interpreter.
fn run(fixture: &Fixture, tasks: &Path, extra: &[&str], db: &Path) -> Output {
    Command::new(nextedit_bin())
        .args(["tasks", "run"])
        .arg(tasks)
        .arg("--repo")
        .arg(&fixture.repo)
        .arg("-q")
        .args(extra)
        .arg("--db")
        .arg(db)
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap()
}

/// Each task's verdict in task run `run`: (task, valid, invalid reason, exclusion).
fn verdicts(db: &Path, run: i64) -> Vec<(String, bool, Option<String>, Option<String>)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT task_id, valid, invalid_reason, excluded FROM task_run_tasks
             WHERE run_id = ?1 ORDER BY task_index",
        )
        .unwrap();
    statement
        .query_map([run], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// A stored task's truth output (the setup's or the canary's words for an invalid one).
fn truth_output(db: &Path, run: i64, task: &str) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(
        "SELECT truth_output FROM task_run_tasks WHERE run_id = ?1 AND task_id = ?2",
        rusqlite::params![run, task],
        |row| row.get(0),
    )
    .unwrap()
}

fn valid(task: &str) -> (String, bool, Option<String>, Option<String>) {
    (task.to_string(), true, None, None)
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn python_runs_the_tests_with_that_interpreter_and_finds_the_src_layout() {
    let Some((_dir, f)) =
        python_fixture("python_runs_the_tests_with_that_interpreter_and_finds_the_src_layout")
    else {
        return;
    };
    let python = venv(&f.dir, "plain", plain);
    let db = f.db.clone();
    let python_flag = ["--python", python.to_str().unwrap()];
    let oracle = [&["--suggester", "builtin:oracle"][..], &python_flag].concat();
    // Ground truth and empty answer of each task; the oracle's answer is cached.
    assert_eq!(
        stdout(&run(&f, &f.tasks, &oracle, &db)),
        "task run 1: 2 tasks done, 4 test runs, 2 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    assert_eq!(verdicts(&db, 1), [valid("price"), valid("count")]);
    // Without --python, PATH's python3 has no pytest: every ground truth fails.
    let out = run(&f, &f.tasks, &["--suggester", "builtin:oracle"], &db);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        truth_output(&db, 2, "price").contains("No module named pytest"),
        "{}",
        truth_output(&db, 2, "price")
    );
    // A path that is no Python is refused by name, before anything runs.
    let out = run(
        &f,
        &f.tasks,
        &["--suggester", "builtin:oracle", "--python", "/bin/true"],
        &db,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--python /bin/true: not a Python interpreter"),
        "{stderr}"
    );
    let out = run(
        &f,
        &f.tasks,
        &[
            "--suggester",
            "builtin:oracle",
            "--python",
            "/no/such/python",
        ],
        &db,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--python /no/such/python: "));
    // A resumed run is given its interpreter again, or refused.
    let out = run(
        &f,
        &f.tasks,
        &["--resume", "1", "--suggester", "builtin:oracle"],
        &db,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "task run 1 was made with --python {}, not no --python: resume it with the same --python",
            python.display()
        )),
        "{stderr}"
    );
}

#[test]
fn an_installed_copy_shadowing_the_checkout_is_refused() {
    let Some((_dir, f)) = python_fixture("an_installed_copy_shadowing_the_checkout_is_refused")
    else {
        return;
    };
    let python = venv(&f.dir, "shadow", shadowing_copy);
    let db = f.db.clone();
    for sandbox in ["bwrap", "off"] {
        // The first task's module (stock.count) is the copy's: nothing runs.
        let out = run(
            &f,
            &f.reversed,
            &[
                "--suggester",
                "builtin:oracle",
                "--python",
                python.to_str().unwrap(),
                "--sandbox",
                sandbox,
            ],
            &db,
        );
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr)
            .replace(site(&f.dir.join("shadow")).to_str().unwrap(), "[SITE]")
            .replace(f.dir.to_str().unwrap(), "[DIR]");
        insta::assert_snapshot!(format!("shadowed_refused_{sandbox}"), stderr);
    }
    // No run was stored.
    let conn = rusqlite::Connection::open(&db).unwrap();
    let runs: i64 = conn
        .query_row("SELECT count(*) FROM task_runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(runs, 0);
}

#[test]
fn sandbox_off_gives_the_verdicts_of_bubblewrap() {
    let Some((_dir, f)) = python_fixture("sandbox_off_gives_the_verdicts_of_bubblewrap") else {
        return;
    };
    // `dev`: the package installed in development mode from the user's repository
    // (its HEAD, where the loops are whole); `shadow`: `stock` shadowed by a copy.
    let dev_install = |_: &Path| vec![f.repo.join("src").display().to_string()];
    let dev = venv(&f.dir, "dev", dev_install);
    let shadow = venv(&f.dir, "shadow", shadowing_copy);
    let db = f.db.clone();
    let shadowed = (
        "count".to_string(),
        false,
        Some("shadowed".to_string()),
        None,
    );
    let mut run_id = 0;
    for (python, expected) in [
        (&dev, vec![valid("price"), valid("count")]),
        // The first canary (price: the checkout's) passes; count's state is shadowed.
        (&shadow, vec![valid("price"), shadowed]),
    ] {
        for sandbox in ["bwrap", "off"] {
            for suggester in ["builtin:oracle", "builtin:noop"] {
                let out = run(
                    &f,
                    &f.tasks,
                    &[
                        "--suggester",
                        suggester,
                        "--python",
                        python.to_str().unwrap(),
                        "--sandbox",
                        sandbox,
                        "--exec-cache",
                        "off",
                    ],
                    &db,
                );
                stdout(&out);
                run_id += 1;
                assert_eq!(
                    verdicts(&db, run_id),
                    expected,
                    "{python:?} {sandbox} {suggester}"
                );
            }
        }
    }
    let why = truth_output(&db, run_id, "count")
        .replace(site(&f.dir.join("shadow")).to_str().unwrap(), "[SITE]");
    assert!(
        why.starts_with("the tests would import module stock.count from [SITE]/stock-1.0.egg/stock/count.py, not the checkout's src/stock/count.py"),
        "{why}"
    );
    // Oracle 1.0 and do-nothing 0.0 on the valid tasks, in both modes.
    let report = crate::tasks_run::report_json(
        &(1..=run_id)
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        &db,
    );
    let pass: Vec<f64> = (0..run_id as usize)
        .map(|i| report["runs"][i]["all"]["pass_at_1"].as_f64().unwrap())
        .collect();
    assert_eq!(pass, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
}

#[test]
fn setup_runs_once_per_checkout_and_a_failing_one_makes_the_task_invalid() {
    let Some((_dir, f)) =
        python_fixture("setup_runs_once_per_checkout_and_a_failing_one_makes_the_task_invalid")
    else {
        return;
    };
    let python = venv(&f.dir, "plain", plain);
    let db = f.db.clone();
    let with = |setup: &str, sandbox: &str| {
        run(
            &f,
            &f.tasks,
            &[
                "--suggester",
                "builtin:oracle",
                "--python",
                python.to_str().unwrap(),
                "--sandbox",
                sandbox,
                "--setup",
                setup,
            ],
            &db,
        )
    };
    // Unsandboxed, the setup can count its runs outside: one per task's checkout.
    let count = f.dir.join("setups");
    let counting = format!("echo \"$PWD\" >> {}", count.display());
    stdout(&with(&counting, "off"));
    let lines = std::fs::read_to_string(&count).unwrap();
    let checkouts: Vec<&str> = lines.lines().collect();
    assert_eq!(checkouts.len(), 2, "{lines}");
    assert_ne!(checkouts[0], checkouts[1]);
    assert_eq!(verdicts(&db, 1), [valid("price"), valid("count")]);
    // Sandboxed, it fails if it finds itself run before in its checkout; it does
    // not, and a setup is part of the cache's key: nothing is served.
    let once = "echo ran >> .setup-ran && test \"$(wc -l < .setup-ran)\" -eq 1";
    assert_eq!(
        stdout(&with(once, "bwrap")),
        "task run 2: 2 tasks done, 4 test runs, 2 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    assert_eq!(verdicts(&db, 2), [valid("price"), valid("count")]);
    // A failing setup: every task invalid with its reason and output, the run exit 1.
    let out = with("echo cannot build >&2; exit 3", "bwrap");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let invalid = |task: &str| {
        (
            task.to_string(),
            false,
            Some("setup failed".to_string()),
            None,
        )
    };
    assert_eq!(verdicts(&db, 3), [invalid("price"), invalid("count")]);
    assert_eq!(truth_output(&db, 3, "price"), "cannot build");
}

const GO_DOUBLE: &str = "\
package calc

import \"example.com/dep\"

func Double(a int) int {
\treturn a * dep.Two()
}
";

const DEP_GO: &str = "package dep\n\nfunc Two() int { return 2 }\n";

/// A Go module `app` needing `example.com/dep`, which no proxy can give (GOPROXY=off)
/// and the run's empty module cache does not hold, with `files` besides; its task
/// file (the body of `Double`).
fn go_app(dir: &Path, files: &[(&str, &str)]) -> (PathBuf, PathBuf) {
    let repo = dir.join("app");
    let mut all = vec![
        (
            "go.mod",
            "module example.com/app\n\ngo 1.19\n\nrequire example.com/dep v1.0.0\n",
        ),
        ("calc/calc.go", GO_DOUBLE),
        (
            "calc/calc_test.go",
            "package calc\n\nimport \"testing\"\n\nfunc TestDouble(t *testing.T) {\n\tif Double(3) != 6 {\n\t\tt.Fatal(\"double\")\n\t}\n}\n",
        ),
    ];
    all.extend_from_slice(files);
    let c = commit(&repo, &all, "app");
    let tasks = dir.join("tasks.jsonl");
    write_tasks(
        &tasks,
        &[task(
            "double",
            "app",
            &c,
            "go",
            "calc/calc.go",
            GO_DOUBLE,
            "\treturn a * dep.Two()\n",
            &[("calc/calc_test.go", "TestDouble")],
        )],
    );
    (repo, tasks)
}

#[test]
fn a_vendored_go_module_builds_offline() {
    if !available("a_vendored_go_module_builds_offline", &[Server::Go]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (repo, tasks) = go_app(
        dir.path(),
        &[
            (
                "vendor/modules.txt",
                "# example.com/dep v1.0.0\n## explicit\nexample.com/dep\n",
            ),
            ("vendor/example.com/dep/dep.go", DEP_GO),
        ],
    );
    let db = dir.path().join("t.db");
    let out = crate::tasks_run::tasks_run(&tasks, &repo, "builtin:oracle", &[], &db);
    assert_eq!(
        stdout(&out),
        "task run 1: 1 tasks done, 2 test runs, 1 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    assert_eq!(verdicts(&db, 1), [valid("double")]);
}

#[test]
fn a_go_module_cache_passed_with_env_is_read_offline() {
    if !available(
        "a_go_module_cache_passed_with_env_is_read_offline",
        &[Server::Go],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (repo, tasks) = go_app(
        dir,
        &[(
            "go.sum",
            "example.com/dep v1.0.0 h1:jVd2LLKPr4jLjHtDMZnFObLPo9223cB62QEcTMfuQsw=\n\
             example.com/dep v1.0.0/go.mod h1:fGPp69Hit/toBUWE+Ldh2b+Bo3ABzILGe56XIcOE/Is=\n",
        )],
    );
    // A module proxy in a directory (no network), from which `go mod download`
    // fills the module cache the user then passes.
    let proxy = dir.join("proxy/example.com/dep/@v");
    std::fs::create_dir_all(&proxy).unwrap();
    let gomod = "module example.com/dep\n\ngo 1.19\n";
    std::fs::write(proxy.join("v1.0.0.mod"), gomod).unwrap();
    std::fs::write(proxy.join("list"), "v1.0.0\n").unwrap();
    std::fs::write(
        proxy.join("v1.0.0.info"),
        r#"{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let zipped = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile\nz = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('example.com/dep@v1.0.0/go.mod', sys.argv[2])\n\
             z.writestr('example.com/dep@v1.0.0/dep.go', sys.argv[3])\nz.close()",
        ])
        .arg(proxy.join("v1.0.0.zip"))
        .args([gomod, DEP_GO])
        .output()
        .unwrap();
    assert!(zipped.status.success(), "{zipped:?}");
    let modcache = dir.join("modcache");
    let downloaded = Command::new(Server::Go.path())
        .args(["mod", "download"])
        .current_dir(&repo)
        .env("GOPROXY", format!("file://{}", dir.join("proxy").display()))
        .env("GOSUMDB", "off")
        .env("GOPATH", dir.join("gopath"))
        .env("GOMODCACHE", &modcache)
        // Removable with the test's directory.
        .env("GOFLAGS", "-modcacherw")
        .output()
        .unwrap();
    assert!(downloaded.status.success(), "{downloaded:?}");
    let db = dir.join("t.db");
    let run = |extra: &[&str]| {
        let envs = [("GOMODCACHE", modcache.as_path())];
        crate::tasks_run::tasks_run_with(&tasks, &repo, "builtin:oracle", extra, &db, &envs)
    };
    // Without it the dependency cannot be had: the task is invalid.
    assert_eq!(run(&[]).status.code(), Some(1));
    assert!(truth_output(&db, 1, "double").contains("module lookup disabled by GOPROXY=off"));
    // Passed, it is read (read-only in the sandbox), sandboxed or not.
    stdout(&run(&["--env", "GOMODCACHE"]));
    stdout(&run(&["--env", "GOMODCACHE", "--sandbox", "off"]));
    assert_eq!(verdicts(&db, 2), [valid("double")]);
    assert_eq!(verdicts(&db, 3), [valid("double")]);
}
