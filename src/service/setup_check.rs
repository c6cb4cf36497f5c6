//! The recording-setup checks behind `nextedit doctor`: the binary and PATH, the
//! database file (private, and writable through `store::Database::check_writable`), the
//! language servers and the Neovim and VS Code plugins.
//!
//! Each check adds [`Finding`]s to a [`SetupReport`]; nothing is printed here. The
//! checks read the file system and the environment and run `nvim` for a few seconds
//! at most; they never change anything.

use crate::store::SessionRead;
use std::ffi::OsString;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::base::sys::process;
use crate::store::{Database, StoreError};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Works.
    Ok,
    /// Works, but look.
    Warn,
    /// Recording will not work.
    Error,
    /// Worth knowing, nothing to fix.
    Info,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Error => "error",
            Status::Info => "info",
        })
    }
}

/// One line of the report: a status and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How the check came out.
    pub status: Status,
    /// What was found, in a sentence.
    pub message: String,
}

/// The findings of the checks run so far, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetupReport {
    /// Every finding, in the order the checks made them.
    pub findings: Vec<Finding>,
}

impl SetupReport {
    fn add(&mut self, status: Status, message: impl Into<String>) {
        self.findings.push(Finding {
            status,
            message: message.into(),
        });
    }

    /// How many findings have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.findings.iter().filter(|f| f.status == status).count()
    }
}

/// `s` unless `n` is 1.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The running binary, and whether editors find the same one on PATH.
pub fn check_binary(report: &mut SetupReport) -> std::io::Result<()> {
    let exe = std::env::current_exe()?;
    report.add(
        Status::Ok,
        format!("nextedit {} ({})", env!("CARGO_PKG_VERSION"), exe.display()),
    );
    match which("nextedit") {
        Some(found) if same_file(&found, &exe) => {
            report.add(Status::Ok, format!("on PATH: {}", found.display()));
        }
        Some(found) => report.add(
            Status::Warn,
            format!(
                "PATH finds another nextedit: {} (editors start that one)",
                found.display()
            ),
        ),
        None => report.add(
            Status::Warn,
            format!(
                "nextedit is not on PATH: editors start it by name; add {} to PATH, or set the plugin's `bin` / VS Code's `nextedit.path`",
                exe.parent().unwrap_or(Path::new("/")).display()
            ),
        ),
    }
    Ok(())
}

/// The database at `db` (`source` says where that path came from): private and
/// writable, or creatable when it does not exist yet.
pub fn check_database(report: &mut SetupReport, db: &Path, source: &str) {
    if db.exists() {
        match std::fs::metadata(db) {
            Ok(meta) => {
                let mode = meta.permissions().mode() & 0o777;
                if mode & 0o077 == 0 {
                    report.add(
                        Status::Ok,
                        format!("database {} ({source}): private ({mode:04o})", db.display()),
                    );
                } else {
                    report.add(
                        Status::Error,
                        format!(
                            "database {} ({source}) is readable by others (mode {mode:04o}): chmod 600 {}",
                            db.display(),
                            db.display()
                        ),
                    );
                }
            }
            Err(e) => {
                report.add(Status::Error, format!("database {}: {e}", db.display()));
                return;
            }
        }
        match Database::open_existing(db).and_then(|database| {
            let sessions = database.sessions()?;
            Ok((database, sessions.len()))
        }) {
            Ok((database, n_sessions)) => match database.check_writable() {
                Ok(()) => report.add(
                    Status::Ok,
                    format!(
                        "database is writable ({n_sessions} session{})",
                        plural(n_sessions)
                    ),
                ),
                Err(StoreError::Sqlite { source, .. }) => {
                    report.add(Status::Error, format!("database is not writable: {source}"))
                }
                Err(e) => report.add(Status::Error, format!("database is not writable: {e}")),
            },
            Err(e) => report.add(Status::Error, format!("{e}")),
        }
        return;
    }
    // Not created yet: the first session creates it (0600 in a 0700 directory).
    let mut ancestor = db.parent().unwrap_or(Path::new("."));
    while !ancestor.as_os_str().is_empty() && !ancestor.exists() {
        ancestor = ancestor.parent().unwrap_or(Path::new("/"));
    }
    let ancestor = if ancestor.as_os_str().is_empty() {
        Path::new(".")
    } else {
        ancestor
    };
    if writable_dir(ancestor) {
        report.add(
            Status::Ok,
            format!(
                "database {} ({source}): not created yet; the first session creates it (mode 0600)",
                db.display()
            ),
        );
    } else {
        report.add(
            Status::Error,
            format!(
                "database {} ({source}) cannot be created: {} is not writable",
                db.display(),
                ancestor.display()
            ),
        );
    }
}

/// Whether this process may create files in `dir`.
fn writable_dir(dir: &Path) -> bool {
    crate::base::sys::files::may_create_in(dir)
}

/// The servers looked for when none is named, with their language.
const DEFAULT_SERVERS: [(&str, &str); 3] = [
    ("pyright-langserver", "Python"),
    ("gopls", "Go"),
    ("jdtls", "Java"),
];

/// The language servers editors will start through the proxy: `servers`, each an
/// error when missing, or the usual three, each only info when missing.
pub fn check_servers(report: &mut SetupReport, servers: &[String]) {
    if servers.is_empty() {
        for (server, language) in DEFAULT_SERVERS {
            match which(server) {
                Some(path) => report.add(
                    Status::Ok,
                    format!("server {server} ({language}): {}", path.display()),
                ),
                None => report.add(
                    Status::Info,
                    format!(
                        "server {server} ({language}) not on PATH (needed only for {language})"
                    ),
                ),
            }
        }
        return;
    }
    for server in servers {
        match find_program(server) {
            Some(path) => report.add(Status::Ok, format!("server {server}: {}", path.display())),
            None => report.add(
                Status::Error,
                format!("server {server} not found on PATH (editors could not start it)"),
            ),
        }
    }
}

/// Neovim's version, and whether the plugin is on its runtimepath.
pub fn check_neovim(report: &mut SetupReport) {
    let Some(nvim) = which("nvim") else {
        report.add(Status::Info, "Neovim: nvim not on PATH");
        return;
    };
    let version = run_with_limit(Command::new(&nvim).arg("--version"))
        .and_then(|out| out.lines().next().map(str::to_string));
    let Some(version) = version else {
        report.add(
            Status::Warn,
            format!("Neovim: {} --version failed", nvim.display()),
        );
        return;
    };
    let minor = version
        .strip_prefix("NVIM v0.")
        .and_then(|rest| rest.split('.').next())
        .and_then(|n| n.parse::<u32>().ok());
    if minor.is_some_and(|m| m < 10) {
        report.add(
            Status::Warn,
            format!(
                "Neovim: {version} ({}) is older than 0.10, which the plugin needs",
                nvim.display()
            ),
        );
    } else {
        report.add(
            Status::Ok,
            format!("Neovim: {version} ({})", nvim.display()),
        );
    }
    // Ask Neovim itself, with the user's config, whether the plugin is on its runtimepath.
    let probe = "lua io.stdout:write(vim.api.nvim_get_runtime_file('lua/nextedit/init.lua', false)[1] or 'none')";
    match run_with_limit(
        Command::new(&nvim)
            .args(["--headless", "-c", probe, "-c", "qa!"])
            .stdin(Stdio::null()),
    ) {
        Some(out) if out.trim().ends_with("lua/nextedit/init.lua") => {
            let dir = out.trim().trim_end_matches("/lua/nextedit/init.lua");
            report.add(Status::Ok, format!("Neovim plugin: {dir}"));
        }
        Some(_) => report.add(
            Status::Warn,
            "Neovim plugin not on the runtimepath: add editors/nvim (README: Use with Neovim)",
        ),
        None => report.add(
            Status::Warn,
            "Neovim plugin: could not ask nvim (it did not finish within 10 s)",
        ),
    }
}

/// VS Code (or code-server, codium) on PATH and the extension in its extensions
/// directories, `extra_dirs` too.
pub fn check_vscode(report: &mut SetupReport, extra_dirs: &[PathBuf]) {
    let editors: Vec<(&str, PathBuf)> = ["code", "code-server", "codium"]
        .into_iter()
        .filter_map(|name| which(name).map(|path| (name, path)))
        .collect();
    for (name, path) in &editors {
        report.add(Status::Ok, format!("VS Code: {name} ({})", path.display()));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = extra_dirs.to_vec();
    if let Some(dir) = std::env::var_os("VSCODE_EXTENSIONS") {
        dirs.push(PathBuf::from(dir));
    }
    if let Some(home) = &home {
        for sub in [
            ".vscode/extensions",
            ".vscode-server/extensions",
            ".vscode-oss/extensions",
            ".local/share/code-server/extensions",
        ] {
            dirs.push(home.join(sub));
        }
    }
    let mut found = Vec::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with("nextedit.nextedit-") {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    for path in &found {
        report.add(Status::Ok, format!("VS Code extension: {}", path.display()));
    }
    if found.is_empty() {
        if editors.is_empty() && extra_dirs.is_empty() {
            report.add(Status::Info, "VS Code: code / code-server not on PATH");
        } else {
            report.add(
                Status::Warn,
                "VS Code extension not installed: code --install-extension nextedit.vsix (README: Use with VS Code)",
            );
        }
    }
}

/// Runs a short command, returning its stdout; `None` if it fails or takes over 10 s.
fn run_with_limit(command: &mut Command) -> Option<String> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    match process::wait_until(&mut child, Instant::now() + Duration::from_secs(10)) {
        Ok(Some(status)) => {
            let mut out = String::new();
            std::io::Read::read_to_string(child.stdout.as_mut()?, &mut out).ok()?;
            status.success().then_some(out)
        }
        _ => {
            process::end(&mut child);
            None
        }
    }
}

/// A program name looked up on PATH, or a path to an executable file.
fn find_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return is_executable(&path).then_some(path);
    }
    which(program)
}

/// `program` found on PATH.
fn which(program: &str) -> Option<PathBuf> {
    let paths: OsString = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|path| is_executable(path))
}

/// A regular file someone may execute.
fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Whether two paths name the same file once links are resolved.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}
