//! The test environment of `tasks run`: which Python runs the tests (`--python`,
//! checked once by running it, [`super::interpreter`]), how a checkout's own package is
//! made importable (the checkout first on the import path, and its `src/` for a src
//! layout), what the sandbox must show of the interpreter (its prefixes, its venv's
//! `.pth` directories and its import path outside the system directories; never one
//! holding a forbidden path or the home directory, nor an import path entry inside the
//! repository), `PATH` and `PYTHONPATH`, the setup command run once per checkout
//! (`--setup`), and the import canary's program: a task's file → its module, which the
//! tests' interpreter must find in the checkout, never in an installed copy of the
//! package shadowing it (the verdict: `execute::Canary`).
//!
//! Every command of a test run — the tests, the setup, the canary, the fingerprint
//! probe — gets the same interpreter, variables and sandbox from here through
//! `execute::ExecLimits::environment`, sandboxed or not (`--sandbox off` differs only
//! in what the file system and the network show).

use std::path::{Path, PathBuf};

/// The program a Python test command starts when no `--python` is given.
pub const DEFAULT_PYTHON: &str = "python3";

/// Why `--python` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// The path is missing, not executable, or not a Python.
    #[error("--python {path}: {reason}")]
    Python {
        /// The path given.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// A Python interpreter named with `--python`, checked by running it like a test run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Python {
    /// The interpreter as given, made absolute but not resolved: a venv's
    /// `bin/python` is a symlink, and the venv is found from the link's place.
    pub interpreter: PathBuf,
    /// Its `sys.version` (first line).
    pub version: String,
    /// What a sandboxed run must see read-only: the interpreter's prefixes and its
    /// import path's directories outside the system ones.
    pub read_only: Vec<PathBuf>,
}

/// The interpreter, variables and sandbox paths every command of a task's test runs
/// gets, and the setup run once per checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestEnvironment {
    /// `--python`: the interpreter of the tests (else `python3` of `PATH`).
    pub python: Option<Python>,
    /// `--setup`: a shell command run once per checkout before its first test run.
    pub setup: Option<String>,
}

impl TestEnvironment {
    /// The program that runs Python: `--python`'s interpreter, else `python3`.
    pub fn python_program(&self) -> String {
        match &self.python {
            Some(python) => python.interpreter.to_string_lossy().into_owned(),
            None => DEFAULT_PYTHON.to_string(),
        }
    }

    /// `argv` with a leading `python3` (a default test command's) replaced by
    /// [`TestEnvironment::python_program`].
    pub fn with_interpreter(&self, mut argv: Vec<String>) -> Vec<String> {
        if argv.first().map(String::as_str) == Some(DEFAULT_PYTHON) {
            argv[0] = self.python_program();
        }
        argv
    }

    /// The variables a command in `checkout` gets beyond the allow-list: `PATH` with
    /// the interpreter's directory first (a test command's `python` or `pytest` is
    /// the venv's) and `PYTHONPATH`, the checkout first ([`import_path`]), then
    /// nextedit's own when `passed` (`--env`) names it.
    pub fn vars(&self, checkout: &Path, passed: &[String]) -> Vec<(String, String)> {
        let mut vars = Vec::new();
        if let Some(dir) = (self.python.as_ref()).and_then(|p| p.interpreter.parent()) {
            vars.push((
                "PATH".to_string(),
                format!(
                    "{}:{}",
                    dir.display(),
                    crate::base::sys::env::inherited_path()
                ),
            ));
        }
        let mut path: Vec<String> = import_path(checkout)
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        if passed.iter().any(|name| name == "PYTHONPATH")
            && let Some(own) = std::env::var_os("PYTHONPATH")
        {
            path.push(own.to_string_lossy().into_owned());
        }
        vars.push(("PYTHONPATH".to_string(), path.join(":")));
        vars
    }

    /// Paths a sandboxed command must see read-only (the interpreter's).
    pub fn read_only(&self) -> &[PathBuf] {
        self.python.as_ref().map_or(&[], |p| p.read_only.as_slice())
    }

    /// What of this environment decides a test run's outcome beyond the probe of its
    /// interpreter: the setup command (for the execution cache's key).
    pub fn describe(&self) -> String {
        match &self.setup {
            Some(setup) => format!("setup {setup:?}"),
            None => "no setup".to_string(),
        }
    }

    /// The command line of `--setup` (a shell command), if any.
    pub fn setup_argv(&self) -> Option<Vec<String>> {
        (self.setup.as_ref()).map(|s| vec!["sh".to_string(), "-c".to_string(), s.clone()])
    }

    /// The canary's command line for `module`: prints where the tests' interpreter
    /// finds it, without running any of the package's code.
    pub fn canary_argv(&self, module: &str) -> Vec<String> {
        vec![
            self.python_program(),
            "-c".to_string(),
            CANARY.to_string(),
            module.to_string(),
        ]
    }
}

/// The import path a checkout's tests get first: the checkout, then its `src/` for a
/// src layout ([`src_layout`]).
pub fn import_path(checkout: &Path) -> Vec<PathBuf> {
    let mut path = vec![checkout.to_path_buf()];
    if src_layout(checkout) {
        path.push(checkout.join("src"));
    }
    path
}

/// Whether the checkout keeps its packages under `src/`: a `src/<pkg>/__init__.py`,
/// or `src` named as the package directory in `pyproject.toml` (`where = ["src"]`,
/// `package-dir = {"" = "src"}`, Poetry's `from = "src"`), `setup.cfg`
/// (`package_dir = =src`, `where = src`) or `setup.py` (`package_dir={"": "src"}`).
pub fn src_layout(checkout: &Path) -> bool {
    let src = checkout.join("src");
    let package_inside = std::fs::read_dir(&src).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().join("__init__.py").is_file())
    });
    if package_inside {
        return true;
    }
    ["pyproject.toml", "setup.cfg", "setup.py"]
        .iter()
        .any(|name| {
            let text = std::fs::read_to_string(checkout.join(name)).unwrap_or_default();
            text.lines().any(|line| {
                let bare: String = line
                    .chars()
                    .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                    .collect();
                bare == "=src"
                    || bare == "where=src"
                    || bare.starts_with("where=[src]")
                    || bare.contains("package-dir={=src}")
                    || bare.contains("package_dir={=src}")
                    || bare.contains("package_dir={:src}")
                    || bare.contains("from=src")
            })
        })
}

/// The module a task's file is imported as, when it is one the tests import: found
/// by walking up the `__init__.py`s from the file to a root that is the checkout
/// itself or its `src/`. `None` for what is not an importable module: not `.py`, a
/// test, `conftest.py`, `setup.py`, `__main__.py`, a file under a `tests`/`test`
/// directory, or a package outside those roots.
pub fn module_of(checkout: &Path, file: &str) -> Option<String> {
    let path = Path::new(file);
    let stem = path.file_stem()?.to_str()?;
    let name = path.file_name()?.to_str()?;
    let test_like = name.starts_with("test_")
        || stem.ends_with("_test")
        || matches!(name, "conftest.py" | "setup.py" | "__main__.py")
        || path
            .components()
            .any(|c| matches!(c.as_os_str().to_str(), Some("tests" | "test")));
    if path.extension()? != "py" || test_like {
        return None;
    }
    let mut parts: Vec<String> = Vec::new();
    if stem != "__init__" {
        parts.push(stem.to_string());
    }
    let mut dir = path.parent().unwrap_or(Path::new(""));
    while !dir.as_os_str().is_empty() && checkout.join(dir).join("__init__.py").is_file() {
        parts.insert(0, dir.file_name()?.to_str()?.to_string());
        dir = dir.parent().unwrap_or(Path::new(""));
    }
    let identifier = |p: &String| {
        p.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && p.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    let rooted = dir.as_os_str().is_empty() || dir == Path::new("src");
    (rooted && !parts.is_empty() && parts.iter().all(identifier)).then(|| parts.join("."))
}

/// Where the tests' interpreter finds module `sys.argv[1]`: the top-level package
/// through the whole import machinery (an editable install's finder, a `.pth`'s
/// entries), each submodule in its parent's search locations, so no package code
/// runs; prints `nextedit-canary: ` and the real path of its file.
const CANARY: &str = "import importlib.util as u, importlib.machinery as m, os, sys
p = sys.argv[1].split('.')
s = u.find_spec(p[0])
for i in range(1, len(p)):
    l = s.submodule_search_locations if s else None
    s = m.PathFinder.find_spec('.'.join(p[:i + 1]), list(l)) if l else None
print('nextedit-canary:', os.path.realpath(s.origin) if s and s.origin else '')";

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(root: &Path, files: &[&str]) {
        for file in files {
            let path = root.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        }
    }

    #[test]
    fn modules_are_found_from_the_init_files_and_the_src_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(
            root,
            &[
                "src/flask/__init__.py",
                "src/flask/json/__init__.py",
                "pkg/__init__.py",
                "scripts/tool.py",
            ],
        );
        assert_eq!(
            module_of(root, "src/flask/ctx.py").as_deref(),
            Some("flask.ctx")
        );
        assert_eq!(
            module_of(root, "src/flask/json/__init__.py").as_deref(),
            Some("flask.json")
        );
        assert_eq!(module_of(root, "pkg/core.py").as_deref(), Some("pkg.core"));
        assert_eq!(module_of(root, "lib.py").as_deref(), Some("lib"));
        for skipped in [
            "scripts/tool.py",
            "tests/test_x.py",
            "pkg/test_core.py",
            "conftest.py",
            "setup.py",
            "pkg/core.go",
            "pkg/my-mod.py",
        ] {
            assert_eq!(module_of(root, skipped), None, "{skipped}");
        }
        assert!(src_layout(root));
        assert_eq!(import_path(root), [root.to_path_buf(), root.join("src")]);
    }

    #[test]
    fn a_src_layout_is_read_from_the_packaging_files() {
        for (name, text) in [
            (
                "pyproject.toml",
                "[tool.setuptools.packages.find]\nwhere = [\"src\"]\n",
            ),
            (
                "pyproject.toml",
                "[tool.setuptools]\npackage-dir = {\"\" = \"src\"}\n",
            ),
            (
                "pyproject.toml",
                "packages = [{ include = \"x\", from = \"src\" }]\n",
            ),
            ("setup.cfg", "[options]\npackage_dir =\n    =src\n"),
            ("setup.py", "setup(package_dir={\"\": \"src\"})\n"),
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join(name), text).unwrap();
            assert!(src_layout(dir.path()), "{name}: {text}");
        }
        let flat = tempfile::tempdir().unwrap();
        std::fs::write(
            flat.path().join("pyproject.toml"),
            "[project]\nname = \"x\"\n",
        )
        .unwrap();
        assert!(!src_layout(flat.path()));
        assert_eq!(import_path(flat.path()), [flat.path().to_path_buf()]);
    }

    #[test]
    fn a_leading_python3_becomes_the_interpreter() {
        let env = TestEnvironment {
            python: Some(Python {
                interpreter: PathBuf::from("/v/bin/python"),
                version: "3.11.7".into(),
                read_only: vec![PathBuf::from("/v")],
            }),
            setup: None,
        };
        let argv = env.with_interpreter(vec!["python3".into(), "-m".into(), "pytest".into()]);
        assert_eq!(argv, ["/v/bin/python", "-m", "pytest"]);
        let vars = env.vars(Path::new("/c"), &[]);
        assert!(vars[0].1.starts_with("/v/bin:"), "{vars:?}");
        assert_eq!(vars[1], ("PYTHONPATH".to_string(), "/c".to_string()));
        assert_eq!(
            TestEnvironment::default().with_interpreter(vec!["go".into()]),
            ["go"]
        );
    }
}
