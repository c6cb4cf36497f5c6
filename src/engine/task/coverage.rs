//! The tests that cover a task: test functions of the state's test files that call the
//! task's enclosing function or method by name (from the syntax, no run needed).
//!
//! Test files: Python `test_*.py`, `*_test.py` and any `.py` under a `tests/` directory
//! (test functions `test*`, methods `test*` of `Test*` classes, named
//! `Class::method`, as pytest selects them; never a `conftest.py`, which pytest
//! collects no test from, nor a function decorated as a fixture, which pytest refuses
//! to run as a test); Go `*_test.go` (functions `TestXxx`).
//! Pure: texts in, test references out.

use std::collections::BTreeMap;

use super::TestRef;
use crate::core::syntax::Language;
use crate::core::syntax::structure::{FileStructure, ScopeKind, analyze};

/// Whether `path` is a test file of a language nextedit cuts tasks from.
pub fn is_test_file(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if name.ends_with(".py") {
        name.starts_with("test_")
            || name.ends_with("_test.py")
            || path
                .split('/')
                .any(|part| part == "tests" || part == "test")
    } else {
        name.ends_with("_test.go")
    }
}

/// One test function and the functions it calls.
#[derive(Debug, Clone)]
struct TestFunction {
    test: TestRef,
    calls: Vec<String>,
}

/// The test functions of a state, parsed once and asked per task.
#[derive(Debug, Default)]
pub struct TestIndex {
    tests: Vec<TestFunction>,
}

impl TestIndex {
    /// Finds the test functions of every test file of `files` (path → text).
    pub fn build(files: &BTreeMap<String, String>) -> TestIndex {
        let mut tests = Vec::new();
        for (path, text) in files {
            if !is_test_file(path) {
                continue;
            }
            let Some(language) = Language::from_path(std::path::Path::new(path)) else {
                continue;
            };
            if !matches!(language, Language::Python | Language::Go) {
                continue;
            }
            if path.rsplit('/').next() == Some("conftest.py") {
                continue;
            }
            let lines: Vec<&str> = text.lines().collect();
            let structure = analyze(language, text);
            for (index, scope) in structure.scopes.iter().enumerate() {
                if language == Language::Python && is_fixture(&lines, scope.start_line) {
                    continue;
                }
                if let Some(name) = test_name(language, &structure, index) {
                    let calls = structure
                        .occurrences_in(scope.start_line, scope.end_line + 1)
                        .iter()
                        .filter(|o| o.call)
                        .map(|o| o.name.clone())
                        .collect();
                    tests.push(TestFunction {
                        test: TestRef {
                            file: path.clone(),
                            name,
                        },
                        calls,
                    });
                }
            }
        }
        TestIndex { tests }
    }

    /// The tests that call `function` (a bare function or method name), in file and
    /// line order.
    pub fn covering(&self, function: &str) -> Vec<TestRef> {
        self.tests
            .iter()
            .filter(|t| t.calls.iter().any(|c| c == function))
            .map(|t| t.test.clone())
            .collect()
    }
}

/// Whether the definition at 0-based line `line` is decorated as a pytest fixture
/// (`@pytest.fixture`, `@fixture(...)`): its decorator lines, above it or starting it.
fn is_fixture(lines: &[&str], line: usize) -> bool {
    fn decorator(l: &&&str) -> bool {
        l.trim_start().starts_with('@')
    }
    let above = lines[..line.min(lines.len())]
        .iter()
        .rev()
        .take_while(decorator);
    let from = lines.iter().skip(line).take_while(decorator);
    above.chain(from).any(|l| l.contains("fixture"))
}

/// The runner's name for scope `index` when it is a test function.
fn test_name(language: Language, structure: &FileStructure, index: usize) -> Option<String> {
    let scope = &structure.scopes[index];
    if !scope.kind.is_callable() {
        return None;
    }
    match language {
        Language::Go => {
            let rest = scope.name.strip_prefix("Test")?;
            let ok = scope.kind == ScopeKind::Function
                && scope.parent.is_none()
                && rest.chars().next().is_none_or(|c| !c.is_lowercase());
            ok.then(|| scope.name.clone())
        }
        _ => {
            if !scope.name.starts_with("test") {
                return None;
            }
            match scope.parent {
                None => Some(scope.name.clone()),
                Some(parent) => {
                    let class = &structure.scopes[parent];
                    (class.kind == ScopeKind::Class
                        && class.parent.is_none()
                        && class.name.starts_with("Test"))
                    .then(|| format!("{}::{}", class.name, scope.name))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_and_go_tests_that_call_a_function() {
        let files: BTreeMap<String, String> = [
            ("lib.py", "def total(x):\n    return x\n"),
            (
                "tests/test_lib.py",
                "from lib import total\n\ndef test_total():\n    assert total(1) == 1\n\ndef helper():\n    total(2)\n\nclass TestMore:\n    def test_again(self):\n        assert total(3) == 3\n",
            ),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal()\n\t}\n}\n\nfunc Testhelper(t *testing.T) { Add(0, 0) }\n",
            ),
        ]
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let index = TestIndex::build(&files);
        let names = |f: &str| -> Vec<String> {
            index
                .covering(f)
                .into_iter()
                .map(|t| format!("{}::{}", t.file, t.name))
                .collect()
        };
        assert_eq!(
            names("total"),
            [
                "tests/test_lib.py::test_total",
                "tests/test_lib.py::TestMore::test_again"
            ]
        );
        assert_eq!(names("Add"), ["calc_test.go::TestAdd"]);
        assert!(names("missing").is_empty());
        assert!(is_test_file("pkg/x_test.go") && !is_test_file("pkg/x.go"));
    }

    #[test]
    fn conftest_and_fixtures_are_never_tests() {
        let files: BTreeMap<String, String> = [
            (
                "tests/conftest.py",
                "import pytest\n\n@pytest.fixture\ndef test_apps():\n    return total(1)\n",
            ),
            (
                "tests/test_lib.py",
                "import pytest\n\n@pytest.fixture(scope=\"module\")\ndef test_data():\n    return total(0)\n\n@pytest.mark.slow\ndef test_total(test_data):\n    assert total(1) == 1\n",
            ),
        ]
        .iter()
        .map(|(p, t)| (p.to_string(), t.to_string()))
        .collect();
        let index = TestIndex::build(&files);
        let names: Vec<String> = (index.covering("total").into_iter())
            .map(|t| format!("{}::{}", t.file, t.name))
            .collect();
        assert_eq!(names, ["tests/test_lib.py::test_total"]);
    }
}
