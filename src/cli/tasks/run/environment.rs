//! The test-environment flags of `nextedit tasks run`: the interpreter of the Python
//! tests (`--python`) and the setup run once per checkout (`--setup`).

use std::path::PathBuf;

use clap::Args;

/// What the tests run with.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The Python interpreter of a venv holding the tests' dependencies, but not the
    /// package under test (e.g. .venv/bin/python): it runs the tests (`python3` in
    /// the default command and PATH's python/pytest become its), it is what the
    /// environment fingerprint reads, and its prefixes are shown read-only in the
    /// sandbox. Checked once (exists, runs, is a Python). With or without it, each
    /// checkout comes first on the import path: PYTHONPATH=CHECKOUT, plus CHECKOUT/src
    /// for a src layout (src/PKG/__init__.py, or src named as the package directory in
    /// pyproject.toml, setup.cfg or setup.py), and the import canary checks per state
    /// that the module of the task's file is the checkout's file: a run whose first
    /// one finds an installed copy instead is refused (exit 2), a later state's task is
    /// invalid (`shadowed`)
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,

    /// A shell command run once per checkout, after its state is written (the hole
    /// empty) and before its first test run, in the checkout with the sandbox, limits,
    /// interpreter and variables of the tests: what makes a checkout testable, e.g.
    /// `python setup.py build_ext --inplace` or `go generate ./...`. Only the checkout,
    /// HOME and TMPDIR are writable (the venv is not) and there is no network: only
    /// offline setups work. A failing setup makes its task invalid (`setup failed`,
    /// its output in the report). Part of the execution cache's key
    #[arg(long, value_name = "CMD")]
    pub setup: Option<String>,
}

impl EnvArgs {
    /// `--python` made absolute (not resolved: a venv's python is a symlink), so a
    /// resumed run compares it from any directory.
    pub fn python(&self) -> anyhow::Result<Option<PathBuf>> {
        self.python
            .as_deref()
            .map(|p| {
                std::path::absolute(p).map_err(|e| anyhow::anyhow!("--python {}: {e}", p.display()))
            })
            .transpose()
    }
}
