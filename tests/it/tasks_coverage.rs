//! Tests chosen by coverage, not by name: with real pytest under coverage.py and real
//! `go test` coverage profiles, a task runs the tests that execute its hole's lines. A
//! test that calls the function by name but never runs the hole is not chosen; one
//! that reaches it through a `with` block, a property or another package is. The map
//! is made once per state and served from the database on a later run; a hole no
//! test executes falls back to the tests found by name, marked `name`.

use serde_json::{Value, json};

use crate::common::{Server, available};
use crate::tasks_run::{commit, report_json, task, tasks_run, write_tasks};

const LIB: &str = "\
class Box:
    def __init__(self, v):
        self.v = v

    @property
    def double(self):
        return 2 * self.v

    def __enter__(self):
        self.open = True
        return self

    def __exit__(self, *exc):
        self.open = False


def clamp(x):
    if x < 0:
        x = 0
    return x


def check(x):
    if x > 100:
        raise ValueError(x)
    return x
";

/// A fixture named like a test (flask's `tests/conftest.py::test_apps`): pytest never
/// collects it, and neither does the map; the test that takes it is chosen.
const CONFTEST: &str = "\
import pytest

from lib import clamp


@pytest.fixture
def test_apps():
    return clamp(-7)
";

/// `test_clamp` calls `clamp` by name and never runs its clamping; `test_clamp_all`
/// runs it through a parameter; `test_with` and `test_double` never name the methods
/// they run; `test_broken` fails, so it is never chosen.
const TEST_LIB: &str = "\
import pytest

from lib import Box, check, clamp


@pytest.fixture
def box():
    return Box(3)


def test_double(box):
    assert box.double == 6


def test_with():
    with Box(1) as b:
        assert b.open


def test_clamp():
    assert clamp(2) == 2


@pytest.mark.parametrize(\"x\", [1, -1])
def test_clamp_all(x):
    assert clamp(x) >= 0


def test_check():
    assert check(1) == 1


def test_broken():
    assert clamp(-5) == 1


def test_takes_apps(test_apps):
    assert test_apps == 0
";

/// (task id, source, tests chosen) of each task of the report's first run.
fn chosen(report: &Value) -> Vec<(String, String, Vec<String>)> {
    (report["runs"][0]["tests"].as_array().unwrap().iter())
        .map(|t| {
            let tests = (t["tests"].as_array().unwrap().iter())
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            (
                t["task"].as_str().unwrap().to_string(),
                t["source"].as_str().unwrap().to_string(),
                tests,
            )
        })
        .collect()
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn python_tests_are_chosen_by_the_lines_they_execute() {
    if !available(
        "python_tests_are_chosen_by_the_lines_they_execute",
        &[Server::Pytest],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("lib");
    let c = commit(
        &repo,
        &[
            ("lib.py", LIB),
            ("tests/conftest.py", CONFTEST),
            ("tests/test_lib.py", TEST_LIB),
        ],
        "lib",
    );
    // Each task carries the tests found by name at cut time, as `tasks cut` writes them.
    let py = |id, truth, named: &[&str]| {
        let tests: Vec<(&str, &str)> = named.iter().map(|n| ("tests/test_lib.py", *n)).collect();
        task(id, "lib", &c, "python", "lib.py", LIB, truth, &tests)
    };
    let tasks = dir.path().join("tasks.jsonl");
    write_tasks(
        &tasks,
        &[
            py(
                "clamping",
                "        x = 0\n",
                &["test_clamp", "test_clamp_all"],
            ),
            py("enter", "        self.open = True\n", &[]),
            py("double", "        return 2 * self.v\n", &[]),
            // No test raises: coverage gives none, the name-based test is the fallback.
            py("raise", "        raise ValueError(x)\n", &["test_check"]),
        ],
    );
    let db = dir.path().join("t.db");
    let run = |extra: &[&str]| {
        let out = tasks_run(&tasks, &repo, "builtin:oracle", extra, &db);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    // One state, one coverage run for its four tasks; 4 ground truths and 4 empty
    // answers run, the oracle's answers are the ground truths' runs.
    assert_eq!(
        run(&[]),
        "task run 1: 4 tasks done, 8 test runs, 4 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    let report = report_json(&["1"], &db);
    assert_eq!(
        chosen(&report),
        [
            (
                "clamping".to_string(),
                "coverage".to_string(),
                // The fixture `test_apps` runs the hole too: the test taking it is
                // chosen, the fixture never.
                strings(&[
                    "tests/test_lib.py::test_clamp_all[-1]",
                    "tests/test_lib.py::test_takes_apps"
                ])
            ),
            (
                "enter".to_string(),
                "coverage".to_string(),
                strings(&["tests/test_lib.py::test_with"])
            ),
            (
                "double".to_string(),
                "coverage".to_string(),
                strings(&["tests/test_lib.py::test_double"])
            ),
            (
                "raise".to_string(),
                "name".to_string(),
                strings(&["tests/test_lib.py::test_check"])
            ),
        ]
    );
    let tests = &report["runs"][0]["tests"];
    assert_eq!(tests[0]["lines"], json!([19, 19]));
    assert_eq!(tests[0]["found"], json!(2));
    assert_eq!(tests[0]["cap"], json!(20));
    assert_eq!(tests[0]["order"], json!("fewest_lines_first"));
    assert_eq!(tests[3]["order"], json!("task_file"));
    assert_eq!(
        tests[3]["note"],
        json!("no passing test of the coverage map executes lib.py:25-25")
    );
    assert_eq!(
        report["runs"][0]["tests_by"],
        json!({"coverage": {"tasks": 3, "valid": 3}, "name": {"tasks": 1, "valid": 1}})
    );
    assert_eq!(report["runs"][0]["all"]["valid"], json!(4));
    // A later run of the same state: the map comes from the database.
    assert_eq!(
        run(&[]),
        "task run 2: 4 tasks done, 0 test runs, 12 from the cache\ncoverage maps: 0 made, 1 from the cache\n"
    );
    // Without the cache it is made again, once.
    assert_eq!(
        run(&["--exec-cache", "off"]),
        "task run 3: 4 tasks done, 12 test runs, 0 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    // --tests-by name: the cut-time tests, marked `name`; two tasks name none.
    assert_eq!(
        run(&["--tests-by", "name"]),
        "task run 4: 4 tasks done, 2 test runs, 4 from the cache\n"
    );
    let report = report_json(&["4"], &db);
    assert_eq!(
        report["runs"][0]["tests_by"],
        json!({"name": {"tasks": 2, "valid": 2}, "none": {"tasks": 2, "valid": 0}})
    );
}

const CALC: &str = "\
package calc

func Clamp(x int) int {
\tif x < 0 {
\t\tx = 0
\t}
\treturn x
}

func Add(a, b int) int {
\treturn a + b
}
";

const CALC_TEST: &str = "\
package calc

import \"testing\"

func TestClampPositive(t *testing.T) {
\tif Clamp(3) != 3 {
\t\tt.Fatal()
\t}
}

func TestClampNegative(t *testing.T) {
\tif Clamp(-3) != 0 {
\t\tt.Fatal()
\t}
}

func TestAdd(t *testing.T) {
\tif Add(1, 2) != 3 {
\t\tt.Fatal()
\t}
}
";

const USE: &str = "\
package use

import \"example.com/toy/calc\"

func Sum(xs []int) int {
\ts := 0
\tfor _, x := range xs {
\t\ts = calc.Add(s, x)
\t}
\treturn s
}
";

const USE_TEST: &str = "\
package use

import \"testing\"

func TestSum(t *testing.T) {
\tif Sum([]int{1, 2}) != 3 {
\t\tt.Fatal()
\t}
}
";

#[test]
fn go_tests_are_chosen_by_their_coverage_profiles() {
    if !available(
        "go_tests_are_chosen_by_their_coverage_profiles",
        &[Server::Go],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("toy");
    let c = commit(
        &repo,
        &[
            ("go.mod", "module example.com/toy\n\ngo 1.19\n"),
            ("calc/calc.go", CALC),
            ("calc/calc_test.go", CALC_TEST),
            ("use/use.go", USE),
            ("use/use_test.go", USE_TEST),
        ],
        "toy",
    );
    let go = |id, truth, named: &[&str]| {
        let tests: Vec<(&str, &str)> = named.iter().map(|n| ("calc/calc_test.go", *n)).collect();
        task(id, "toy", &c, "go", "calc/calc.go", CALC, truth, &tests)
    };
    let tasks = dir.path().join("tasks.jsonl");
    write_tasks(
        &tasks,
        &[
            go(
                "clamping",
                "\t\tx = 0\n",
                &["TestClampPositive", "TestClampNegative"],
            ),
            go("add", "\treturn a + b\n", &["TestAdd"]),
        ],
    );
    let db = dir.path().join("t.db");
    let out = tasks_run(&tasks, &repo, "builtin:oracle", &[], &db);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "task run 1: 2 tasks done, 4 test runs, 2 from the cache\ncoverage maps: 1 made, 0 from the cache\n"
    );
    let report = report_json(&["1"], &db);
    let mut chosen = chosen(&report);
    // Fastest first: the order of two equally quick tests is the clock's.
    chosen[1].2.sort();
    assert_eq!(
        chosen,
        [
            (
                "clamping".to_string(),
                "coverage".to_string(),
                strings(&["calc/calc_test.go::TestClampNegative"])
            ),
            // TestSum reaches Add from another package, never naming it.
            (
                "add".to_string(),
                "coverage".to_string(),
                strings(&["calc/calc_test.go::TestAdd", "use/use_test.go::TestSum"])
            ),
        ]
    );
    assert_eq!(report["runs"][0]["all"]["valid"], json!(2));
}
