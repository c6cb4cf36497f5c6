//! The language servers `--lsp` runs: which exist on this machine
//! ([`discover_servers`]) and [`SideServers`], the ones running on one tree directory.
//!
//! A server is started on first use for its language and, when kept (a `--range`),
//! stays up from one commit to the next: starting pyright and letting it analyse a
//! tree costs seconds, asking it costs milliseconds. A kept server that died or stopped
//! answering is stopped and started again on its next use.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::core::record::uri::path_to_uri;
use crate::core::syntax::Language;
use crate::engine::lsp_client::{ClientError, LspClient};

use super::source::{TreeChange, TreeChangeKind};

/// How to start one language server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCommand {
    /// Executable.
    pub program: PathBuf,
    /// Arguments (`--stdio` for pyright).
    pub args: Vec<String>,
    /// Extra environment (Go's PATH, GOPATH, GOFLAGS…).
    pub env: Vec<(String, String)>,
}

/// The servers `--lsp` may use, per language.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerSet {
    /// pyright-langserver for Python.
    pub python: Option<ServerCommand>,
    /// gopls for Go.
    pub go: Option<ServerCommand>,
    /// jdtls for Java.
    pub java: Option<ServerCommand>,
}

impl ServerSet {
    /// The server for `language`, if configured.
    pub fn for_language(&self, language: Language) -> Option<&ServerCommand> {
        match language {
            Language::Python => self.python.as_ref(),
            Language::Go => self.go.as_ref(),
            Language::Java => self.java.as_ref(),
            _ => None,
        }
    }
}

/// How a server came to be running for a use of [`SideServers::client`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// It was already running (kept from an earlier commit).
    Kept,
    /// It was started now, for the first time on this tree.
    Fresh,
    /// It was started now because the one before died or was stopped after a failure.
    Restarted,
}

/// The servers running on one tree directory (one side of a commit), per language.
pub struct SideServers {
    root: PathBuf,
    /// Whether servers outlive one commit's questions (else each is shut down after).
    keep: bool,
    running: Vec<(Language, LspClient)>,
    /// Languages whose server has been started on this tree at least once.
    started: Vec<Language>,
    /// The last document version handed out: each commit opens its files at a new one,
    /// so diagnostics of an earlier commit are told apart.
    version: i64,
    /// Languages whose server puts versions on its diagnostics.
    versioned: Vec<Language>,
}

impl SideServers {
    /// No server yet on the tree at `root`; `keep` keeps them across commits.
    pub fn new(root: PathBuf, keep: bool) -> SideServers {
        SideServers {
            root,
            keep,
            running: Vec::new(),
            started: Vec::new(),
            version: 0,
            versioned: Vec::new(),
        }
    }

    /// Whether the server of `language` was seen to put versions on its diagnostics.
    pub fn versioned(&self, language: Language) -> bool {
        self.versioned.contains(&language)
    }

    /// Records that the server of `language` puts versions on its diagnostics.
    pub fn set_versioned(&mut self, language: Language) {
        if !self.versioned.contains(&language) {
            self.versioned.push(language);
        }
    }

    /// A document version no earlier `didOpen` on this tree used.
    pub fn next_version(&mut self) -> i64 {
        self.version += 1;
        self.version
    }

    /// The tree directory the servers read.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The running server of `language`, started (and initialized) if none runs or
    /// the one kept has died.
    pub fn client(
        &mut self,
        language: Language,
        command: &ServerCommand,
        timeout: Duration,
    ) -> Result<(&mut LspClient, Started), ClientError> {
        let index = self.running.iter().position(|(l, _)| *l == language);
        let alive = match index {
            Some(index) => self.running[index].1.is_alive(),
            None => false,
        };
        if let (Some(index), false) = (index, alive) {
            // Died between commits (or mid-way through the last one): start anew.
            self.running.remove(index);
        }
        let started = match (alive, self.started.contains(&language)) {
            (true, _) => Started::Kept,
            (false, true) => Started::Restarted,
            (false, false) => Started::Fresh,
        };
        if started != Started::Kept {
            let client = start(command, &self.root, timeout)?;
            self.started.push(language);
            self.running.push((language, client));
        }
        let (_, client) = self
            .running
            .iter_mut()
            .find(|(l, _)| *l == language)
            .expect("started above");
        Ok((client, started))
    }

    /// After a commit's questions: a server that failed (timed out, closed) is stopped
    /// so the next use starts a fresh one; a healthy one is kept when servers are
    /// kept, else shut down.
    pub fn finish(&mut self, language: Language, healthy: bool) {
        if healthy && self.keep {
            return;
        }
        if let Some(index) = self.running.iter().position(|(l, _)| *l == language) {
            let (_, mut client) = self.running.remove(index);
            let wait = if healthy {
                Duration::from_secs(5)
            } else {
                Duration::ZERO
            };
            let _ = client.shutdown(wait);
        }
    }

    /// Tells every running server that these files of its tree changed on disk
    /// (`workspace/didChangeWatchedFiles`): the tree was rewritten for another commit.
    pub fn files_changed(&mut self, changes: &[TreeChange]) {
        if changes.is_empty() {
            return;
        }
        let events: Vec<_> = changes
            .iter()
            .map(|change| {
                let kind = match change.kind {
                    TreeChangeKind::Created => 1,
                    TreeChangeKind::Changed => 2,
                    TreeChangeKind::Deleted => 3,
                };
                json!({"uri": path_to_uri(&self.root.join(&change.path)), "type": kind})
            })
            .collect();
        for (_, client) in &mut self.running {
            let _ = client.notify(
                "workspace/didChangeWatchedFiles",
                json!({ "changes": events }),
            );
        }
    }

    /// Stops every server (the tree is about to be rewritten from scratch, or the
    /// range is done).
    pub fn stop_all(&mut self) {
        for (_, mut client) in self.running.drain(..) {
            let _ = client.shutdown(Duration::from_secs(5));
        }
    }
}

impl Drop for SideServers {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Starts `command` on `root` and initializes it.
fn start(
    command: &ServerCommand,
    root: &Path,
    timeout: Duration,
) -> Result<LspClient, ClientError> {
    let mut process = Command::new(&command.program);
    process
        .args(&command.args)
        .current_dir(root)
        .stderr(Stdio::null());
    for (key, value) in &command.env {
        process.env(key, value);
    }
    let mut client = LspClient::spawn(process)?;
    client.initialize(root, timeout)?;
    Ok(client)
}

/// Where a Go toolchain for gopls lives when `go` is not on `PATH`: the newest Debian
/// `golang-1.N-go` (`/usr/lib/go-1.N/bin`); `None` when `go` is on `PATH` or none is
/// installed. Debian's gopls finds no toolchain of its own.
pub fn go_toolchain_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("go").is_file()));
    if on_path {
        return None;
    }
    let minor = |name: &str| -> Option<u32> { name.strip_prefix("go-1.")?.parse().ok() };
    std::fs::read_dir("/usr/lib")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("go").is_file()).then_some((minor(&name)?, bin))
        })
        .max_by_key(|(minor, _)| *minor)
        .map(|(_, bin)| bin)
}

/// The language servers `--lsp` can use on this machine: `NEXTEDIT_PYRIGHT`,
/// `NEXTEDIT_GOPLS` and `NEXTEDIT_JDTLS` when set, else `pyright-langserver`, `gopls`
/// and `jdtls` found on `PATH`. gopls gets a Go toolchain ([`go_toolchain_dir`]) and
/// no network (`GOPROXY=off`).
pub fn discover_servers() -> ServerSet {
    let python = server("NEXTEDIT_PYRIGHT", "pyright-langserver").map(|program| ServerCommand {
        program,
        args: vec!["--stdio".into()],
        env: Vec::new(),
    });
    let go = server("NEXTEDIT_GOPLS", "gopls").map(|program| {
        // Debian's gopls needs a Go toolchain on PATH; never reach for the network.
        let mut path = std::env::var("PATH").unwrap_or_default();
        if let Some(go) = go_toolchain_dir() {
            path = format!("{}:{path}", go.display());
        }
        let env = vec![
            ("PATH".into(), path),
            ("GOPROXY".into(), "off".into()),
            ("GOFLAGS".into(), "-mod=mod".into()),
        ];
        ServerCommand {
            program,
            args: Vec::new(),
            env,
        }
    });
    let java = server("NEXTEDIT_JDTLS", "jdtls").map(|program| ServerCommand {
        program,
        args: Vec::new(),
        env: Vec::new(),
    });
    ServerSet { python, go, java }
}

/// The program named by `variable`, else `program` found on `PATH`.
fn server(variable: &str, program: &str) -> Option<PathBuf> {
    std::env::var_os(variable).map(PathBuf::from).or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(program))
                .find(|path| path.is_file())
        })
    })
}
