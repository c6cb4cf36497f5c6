//! Whether the sandbox starts here: [`availability`] starts the whole profile once per
//! process (bubblewrap, user namespaces, the seccomp filters, through [`super::jail`]
//! like every confined tree), and [`Sandbox::for_command`] refuses the sandbox of an
//! untrusted command line when it does not. Apart from [`super::sandbox`], which holds
//! the profile the jail runs, so that neither needs the other's file.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use super::jail::Jail;
use super::sandbox::{Sandbox, Unavailable, bwrap_program, command_paths};

impl Sandbox {
    /// The sandbox of one untrusted command line (a `cmd:` or `lsp:` spec's command)
    /// writing only `scratch`: it sees the paths the command names read-only, never
    /// one overlapping `forbidden` ([`command_paths`]), and no network unless
    /// `network`. Fails, so the command never starts, when no sandbox can be made
    /// here ([`availability`]).
    pub fn for_command(
        command: &str,
        scratch: &Path,
        forbidden: &[PathBuf],
        network: bool,
    ) -> Result<Sandbox, Unavailable> {
        availability()?;
        Ok(Sandbox {
            scratch: scratch.to_path_buf(),
            read_only: command_paths(command, forbidden),
            writable: Vec::new(),
            network,
        })
    }
}

/// Whether the sandbox profile starts here (bubblewrap installed, user namespaces
/// allowed, the seccomp filters loaded): `true` is run inside it once per process.
pub fn availability() -> Result<(), Unavailable> {
    static CHECK: OnceLock<Result<(), Unavailable>> = OnceLock::new();
    CHECK.get_or_init(probe).clone()
}

fn probe() -> Result<(), Unavailable> {
    let program = bwrap_program();
    let unavailable = |cause: String, fix: &str| Unavailable {
        cause,
        fix: fix.to_string(),
    };
    // Nothing is written anywhere (no HOME, no scratch of its own): a run interrupted
    // while it probes leaves nothing behind.
    let scratch = std::env::temp_dir();
    let sandbox = Sandbox {
        scratch: scratch.clone(),
        read_only: Vec::new(),
        writable: Vec::new(),
        network: false,
    };
    let jail = Jail {
        sandbox: Some(sandbox),
        ..Jail::default()
    };
    let (mut command, pending) = jail
        .command(&["true".to_string()], &scratch)
        .map_err(|e| unavailable(e.to_string(), "report this as a nextedit bug"))?;
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let (child, _tree) = pending.spawn(&mut command).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            unavailable(
                format!("bubblewrap ({program}) is not installed"),
                "install it (Debian and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)",
            )
        } else {
            unavailable(format!("cannot run {program}: {e}"), "check that it is an executable bubblewrap")
        }
    })?;
    let output = child.wait_with_output().map_err(|e| {
        unavailable(
            format!("{program}: {e}"),
            "check that it is an executable bubblewrap",
        )
    })?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Err(unavailable(
        format!(
            "{program} cannot make a sandbox here ({}){}",
            output.status,
            if said.is_empty() {
                String::new()
            } else {
                format!(": {said}")
            }
        ),
        "allow user namespaces (sysctl kernel.unprivileged_userns_clone=1 and a non-zero user.max_user_namespaces; on Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0), and use bubblewrap 0.8 or newer",
    ))
}
