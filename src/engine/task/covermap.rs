//! The tests a task runs, chosen by what they execute: the repository's whole suite is
//! run once per state (the task's checkout with the ground truth in place) under
//! coverage, one coverage record per test, giving a map {file → line → tests}; a task's
//! tests are those that execute a line of its hole, passed in that run, those that
//! execute the fewest lines first (a test's reach, the same on every run and in every
//! sandbox, where measured times are not), at most `--max-tests`. Where the map names none (or the language has no coverage
//! support), the tests found by name at cut time ([`super::coverage`]) are the
//! fallback, marked `name`.
//!
//! Python: `covermap.py` (coverage.py's API around `pytest.main`, a context per test
//! node id, no data file, none of the checkout's coverage settings). Go: `covermap.sh`
//! (each package's test binary built once with `-cover -coverpkg=./...`, so a test
//! counts for the lines it runs in every package of the module; then each `Test`
//! function run alone with its own profile: per test, not per package, because a
//! package's profile cannot tell which of its tests ran a line). Both run like a test
//! run through `execute::Checkout::run` (same checkout, sandbox, environment and
//! limits; their own time limit) and write into a directory outside the checkout. Pure
//! but for that run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::environment::TestEnvironment;
use super::execute::{
    Checkout, ExecError, ExecLimits, commit_and_files, digest, python_command, real_suffix,
};
use super::{Task, TestRef};

/// The Python driver (run by the checkout's interpreter).
const PYTHON_DRIVER: &str = include_str!("covermap.py");
/// The Go driver (run by `sh`, `go` from `PATH`).
const GO_DRIVER: &str = include_str!("covermap.sh");

/// Tests a task runs at most, by default (`--max-tests`).
pub const DEFAULT_MAX_TESTS: usize = 20;

/// How a run chooses each task's tests (`--tests-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestsBy {
    /// The per-state coverage map, falling back to the task's tests found by name.
    Coverage,
    /// Only the task's tests found by name at cut time.
    Name,
}

/// One test of a coverage map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappedTest {
    /// How the task's test command names it: file and runner name.
    pub test: TestRef,
    /// Its duration in the map's run, ms.
    pub ms: f64,
    /// It passed in the map's run (a failing test is never chosen).
    pub passed: bool,
}

/// Which tests of a state execute which lines.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct CoverageMap {
    /// The tests that ran.
    pub tests: Vec<MappedTest>,
    /// File (relative to the root) → 1-based line → indices into `tests`.
    pub lines: BTreeMap<String, BTreeMap<u32, Vec<usize>>>,
}

impl CoverageMap {
    /// How many lines of the state each test executes (its reach).
    pub fn lines_run(&self) -> Vec<usize> {
        let mut counts = vec![0; self.tests.len()];
        for tests in self.lines.values().flat_map(BTreeMap::values) {
            for &i in tests {
                counts[i] += 1;
            }
        }
        counts
    }
}

/// Where a task's tests came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestSource {
    /// The tests that execute the hole's lines (the coverage map).
    Coverage,
    /// The tests that call the enclosing function by name (cut time).
    Name,
    /// Neither gave one: the task is invalid.
    None,
}

impl TestSource {
    /// Its key in reports.
    pub fn key(self) -> &'static str {
        match self {
            TestSource::Coverage => "coverage",
            TestSource::Name => "name",
            TestSource::None => "none",
        }
    }
}

/// How a task's tests were chosen: stored with the task of the run, shown by reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestSelection {
    /// Where they came from.
    pub source: TestSource,
    /// The hole's lines asked of the map, 1-based, inclusive (for an empty ground
    /// truth, the cursor's line and the lines above and below it).
    pub lines: (u32, u32),
    /// Tests that qualified before the cap (coverage: executed a hole line and passed).
    pub found: usize,
    /// The cap (`--max-tests`).
    pub cap: usize,
    /// Their order: `fewest_lines_first` (coverage) or `task_file` (name).
    pub order: String,
    /// Why coverage gave none, when the source is not coverage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The tests chosen, as the runner names them (`FILE::NAME`).
    pub tests: Vec<String>,
}

/// The hole's lines (1-based, inclusive) in the task's file with the ground truth in
/// place; for an empty ground truth (an already complete block), the cursor's line
/// and the lines directly above and below it.
pub fn hole_lines(task: &Task) -> (u32, u32) {
    let first = task.cursor.line as u32 + 1;
    let truth = task.ground_truth.trim_end_matches('\n');
    if truth.trim().is_empty() {
        return (first.saturating_sub(1).max(1), first + 1);
    }
    (first, first + truth.matches('\n').count() as u32)
}

/// Chooses `task`'s tests: those of `map` that execute a hole line and passed, those
/// executing the fewest lines of the state first (then by name), at most `cap`; when none, the task's own (by name, in the task
/// file's order, at most `cap`), with `note` saying why coverage gave none.
pub fn select(
    task: &Task,
    map: Result<&CoverageMap, &dyn std::fmt::Display>,
    cap: usize,
) -> (Vec<TestRef>, TestSelection) {
    let lines = hole_lines(task);
    let note = match map {
        Ok(map) => {
            let mut found: BTreeSet<usize> = BTreeSet::new();
            if let Some(by_line) = map.lines.get(&task.file) {
                for (_, tests) in by_line.range(lines.0..=lines.1) {
                    found.extend(tests.iter().filter(|&&i| map.tests[i].passed));
                }
            }
            if !found.is_empty() {
                // Not by measured time: milliseconds on a loaded machine differ between
                // two runs and two sandboxes, and so would the tests chosen under the cap.
                let reach = map.lines_run();
                let mut chosen: Vec<usize> = found.iter().copied().collect();
                chosen.sort_by(|&a, &b| {
                    reach[a]
                        .cmp(&reach[b])
                        .then_with(|| id(&map.tests[a].test).cmp(&id(&map.tests[b].test)))
                });
                let tests: Vec<TestRef> = chosen
                    .iter()
                    .take(cap)
                    .map(|&i| map.tests[i].test.clone())
                    .collect();
                let selection = TestSelection {
                    source: TestSource::Coverage,
                    lines,
                    found: found.len(),
                    cap,
                    order: "fewest_lines_first".into(),
                    note: None,
                    tests: tests.iter().map(id).collect(),
                };
                return (tests, selection);
            }
            format!(
                "no passing test of the coverage map executes {}:{}-{}",
                task.file, lines.0, lines.1
            )
        }
        Err(why) => why.to_string(),
    };
    let tests: Vec<TestRef> = task.tests.iter().take(cap).cloned().collect();
    let selection = TestSelection {
        source: if tests.is_empty() {
            TestSource::None
        } else {
            TestSource::Name
        },
        lines,
        found: task.tests.len(),
        cap,
        order: "task_file".into(),
        note: Some(note),
        tests: tests.iter().map(id).collect(),
    };
    (tests, selection)
}

/// `FILE::NAME`, as pytest and reports name a test.
fn id(test: &TestRef) -> String {
    format!("{}::{}", test.file, test.name)
}

/// Whether nextedit makes coverage maps for `language`.
pub fn supported(language: &str) -> bool {
    matches!(language, "python" | "go")
}

/// The key of a state's map in the cache: the state, the language, how the map is made
/// (driver, interpreter) and `run` (the test command's settings: limits, sandbox,
/// setup, environment fingerprint).
pub fn map_key(
    state: &str,
    language: &str,
    custom: Option<&str>,
    environment: &TestEnvironment,
    run: &str,
) -> String {
    let python = python_command(custom, environment).join(" ");
    digest([state, language, &python, PYTHON_DRIVER, GO_DRIVER, run].map(str::as_bytes))
}

/// What a state's map depends on in `task`: its commit, its files, and the task's file
/// with the ground truth in place unless the commit's tree holds it as it is (`held`):
/// every task cut from one commit then shares one map.
pub fn map_state(task: &Task, held: bool) -> String {
    let text = truth_text(task);
    let mut parts = commit_and_files(task);
    if !held {
        parts.extend([task.file.as_bytes(), text.as_bytes()]);
    }
    digest(parts)
}

/// The task's file as the state holds it: the ground truth in the hole.
pub fn truth_text(task: &Task) -> String {
    format!("{}{}{}", task.prefix, task.ground_truth, real_suffix(task))
}

/// Why a map could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    /// The run could not start, or its files not be written or read.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The run ended without a map.
    #[error("the coverage run gave no map ({what}): {tail}")]
    NoMap {
        /// What is missing.
        what: MapReadError,
        /// The end of its output.
        tail: String,
    },
}

/// Why the map a coverage run wrote cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum MapReadError {
    /// A file is missing or unreadable.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `covermap.py`'s output is not the JSON it writes.
    #[error("{}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
}

/// Makes the map of `checkout` (the state, ground truth in place) for `language`: one
/// run of its driver under `limits`, writing into `cache/coverage/NAME` (outside the
/// checkout; the run's cache directory `cache` is writable in the sandbox), removed
/// after.
pub fn make_map(
    language: &str,
    custom: Option<&str>,
    checkout: &Checkout,
    limits: &ExecLimits,
    cache: &Path,
    name: &str,
) -> Result<CoverageMap, MapError> {
    let io = |what: String| move |source| ExecError::Io { what, source };
    let work = &cache.join("coverage").join(name);
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work).map_err(io(format!("creating {}", work.display())))?;
    let (driver, text) = match language {
        "python" => ("covermap.py", PYTHON_DRIVER),
        _ => ("covermap.sh", GO_DRIVER),
    };
    let script = work.join(driver);
    std::fs::write(&script, text).map_err(io(format!("writing {}", script.display())))?;
    let out = work.join("out");
    let program = match language {
        "python" => python_command(custom, &limits.environment),
        _ => vec!["sh".to_string()],
    };
    let argv = [program, vec![lossy(&script), lossy(&out)]].concat();
    let execution = checkout.run(&argv, limits, cache)?;
    let map = match language {
        "python" => read_python(&out),
        _ => read_go(&out, checkout.root()),
    };
    let _ = std::fs::remove_dir_all(work);
    map.map_err(|what| MapError::NoMap {
        what,
        tail: execution.output_tail,
    })
}

fn lossy(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// What `covermap.py` wrote.
#[derive(Deserialize)]
struct PythonOut {
    tests: Vec<(String, f64, bool)>,
    lines: BTreeMap<String, BTreeMap<u32, Vec<usize>>>,
}

fn read_python(out: &Path) -> Result<CoverageMap, MapReadError> {
    let text = std::fs::read_to_string(out).map_err(|source| MapReadError::Read {
        path: out.to_owned(),
        source,
    })?;
    let parsed: PythonOut = serde_json::from_str(&text).map_err(|source| MapReadError::Parse {
        path: out.to_owned(),
        source,
    })?;
    let tests = (parsed.tests.into_iter())
        .map(|(node, seconds, passed)| {
            let (file, name) = node.split_once("::").unwrap_or((&node, ""));
            MappedTest {
                test: TestRef {
                    file: file.to_string(),
                    name: name.to_string(),
                },
                ms: seconds * 1000.0,
                passed,
            }
        })
        .collect::<Vec<_>>();
    let count = tests.len();
    let mut lines = parsed.lines;
    for by_line in lines.values_mut() {
        for tests in by_line.values_mut() {
            tests.retain(|&i| i < count);
        }
    }
    Ok(CoverageMap { tests, lines })
}

/// Reads `covermap.sh`'s directory: each test's profile's executed blocks → lines of
/// the files under `root` (a profile names files by import path).
fn read_go(out: &Path, root: &Path) -> Result<CoverageMap, MapReadError> {
    let read = |name: &str| {
        std::fs::read_to_string(out.join(name)).map_err(|source| MapReadError::Read {
            path: out.join(name),
            source,
        })
    };
    let packages = read("packages")?;
    let listed = read("tests.tsv")?;
    // Import path → directory relative to the root.
    let dirs: Vec<(String, String)> = (packages.lines())
        .filter_map(|l| {
            let (dir, path) = l.split_once(' ')?;
            let rel = Path::new(dir).strip_prefix(root).ok()?;
            Some((path.to_string(), lossy(rel)))
        })
        .collect();
    let mut map = CoverageMap::default();
    for line in listed.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        let [package, dir, name, micros, code] = fields[..] else {
            continue;
        };
        let index = map.tests.len();
        map.tests.push(MappedTest {
            test: TestRef {
                file: go_test_file(Path::new(dir), name, root),
                name: name.to_string(),
            },
            ms: micros.parse::<f64>().unwrap_or(f64::MAX) / 1000.0,
            passed: code == "0",
        });
        let Ok(profile) = std::fs::read_to_string(out.join(format!("p{package}.{name}.cov")))
        else {
            continue;
        };
        for (file, first, last) in profile.lines().filter_map(executed_block) {
            let Some(rel) = go_file(&dirs, file) else {
                continue;
            };
            let by_line = map.lines.entry(rel).or_default();
            for number in first..=last {
                let tests = by_line.entry(number).or_default();
                if tests.last() != Some(&index) {
                    tests.push(index);
                }
            }
        }
    }
    Ok(map)
}

/// A profile line's block when it ran: (file by import path, first line, last line).
fn executed_block(line: &str) -> Option<(&str, u32, u32)> {
    // `example.com/m/pkg/file.go:3.23,4.11 1 1`
    let (place, counts) = line.split_once(' ')?;
    let count: u64 = counts.rsplit(' ').next()?.parse().ok()?;
    if count == 0 {
        return None;
    }
    let (file, span) = place.rsplit_once(':')?;
    let (start, end) = span.split_once(',')?;
    let line_of = |pos: &str| pos.split('.').next()?.parse::<u32>().ok();
    Some((file, line_of(start)?, line_of(end)?))
}

/// A profile's file (by import path) relative to the root, through the packages'
/// directories.
fn go_file(dirs: &[(String, String)], file: &str) -> Option<String> {
    let (package, name) = file.rsplit_once('/')?;
    let (_, dir) = dirs.iter().find(|(path, _)| path == package)?;
    Some(if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    })
}

/// The `_test.go` file of `dir` that declares `func NAME(`, relative to the root (the
/// directory itself when none does: `go test` runs it by package).
fn go_test_file(dir: &Path, name: &str, root: &Path) -> String {
    let declares = format!("func {name}(");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with("_test.go"))
        .collect();
    files.sort();
    let found = (files.iter())
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains(&declares)))
        .cloned()
        .unwrap_or_else(|| dir.join("_test.go"));
    found
        .strip_prefix(root)
        .map(lossy)
        .unwrap_or_else(|_| lossy(&found))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(cursor_line: usize, truth: &str, tests: &[(&str, &str)]) -> Task {
        serde_json::from_value(serde_json::json!({
            "version": 1, "id": "t", "repository": "r",
            "source": {"kind": "commit", "commit": "c"},
            "language": "python", "scenario": "full_block",
            "state": {"commit": "c"}, "file": "lib.py",
            "cursor": {"line": cursor_line, "column": 0},
            "prefix": "", "suffix": "", "ground_truth": truth,
            "tests": tests.iter().map(|(f, n)| serde_json::json!({"file": f, "name": n})).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    fn mapped(name: &str, ms: f64, passed: bool) -> MappedTest {
        MappedTest {
            test: TestRef {
                file: "t.py".into(),
                name: name.into(),
            },
            ms,
            passed,
        }
    }

    #[test]
    fn hole_lines_of_a_truth_and_of_an_empty_one() {
        assert_eq!(hole_lines(&task(4, "    a\n    b\n", &[])), (5, 6));
        assert_eq!(hole_lines(&task(4, "x", &[])), (5, 5));
        assert_eq!(hole_lines(&task(4, "", &[])), (4, 6));
        assert_eq!(hole_lines(&task(0, "\n", &[])), (1, 2));
    }

    #[test]
    fn covering_passing_tests_fewest_lines_first_capped_else_by_name() {
        let map = CoverageMap {
            tests: vec![
                mapped("slow", 9.0, true),
                mapped("fast", 1.0, true),
                mapped("failing", 0.5, false),
                mapped("elsewhere", 0.1, true),
                mapped("mid", 5.0, true),
            ],
            lines: [(
                "lib.py".to_string(),
                // `fast` also runs lines 7 and 8: three lines, the others one.
                [
                    (5, vec![0, 2]),
                    (6, vec![1, 4]),
                    (7, vec![1]),
                    (8, vec![1]),
                    (9, vec![3]),
                ]
                .into_iter()
                .collect(),
            )]
            .into_iter()
            .collect(),
        };
        let t = task(4, "    a\n    b\n", &[("t.py", "by_name")]);
        let (tests, selection) = select(&t, Ok(&map), 2);
        let names: Vec<&str> = tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mid", "slow"]);
        assert_eq!(selection.source, TestSource::Coverage);
        assert_eq!(selection.found, 3);
        assert_eq!(selection.tests, ["t.py::mid", "t.py::slow"]);
        // A hole no passing test executes: the name-based tests, marked so.
        let (tests, selection) = select(&task(20, "x", &[("t.py", "by_name")]), Ok(&map), 2);
        assert_eq!(tests[0].name, "by_name");
        assert_eq!(selection.source, TestSource::Name);
        assert_eq!(
            selection.note.as_deref(),
            Some("no passing test of the coverage map executes lib.py:21-21")
        );
        let (tests, selection) = select(&task(20, "x", &[]), Err(&"no map"), 2);
        assert!(tests.is_empty());
        assert_eq!(selection.source, TestSource::None);
    }

    #[test]
    fn a_go_profile_line_and_its_file() {
        assert_eq!(
            executed_block("example.com/m/calc/calc.go:3.23,4.11 1 1"),
            Some(("example.com/m/calc/calc.go", 3, 4))
        );
        assert_eq!(
            executed_block("example.com/m/calc/calc.go:4.11,6.3 1 0"),
            None
        );
        assert_eq!(executed_block("mode: set"), None);
        let dirs = vec![
            ("example.com/m".to_string(), String::new()),
            ("example.com/m/calc".to_string(), "calc".to_string()),
        ];
        assert_eq!(
            go_file(&dirs, "example.com/m/calc/calc.go").as_deref(),
            Some("calc/calc.go")
        );
        assert_eq!(
            go_file(&dirs, "example.com/m/main.go").as_deref(),
            Some("main.go")
        );
    }
}
