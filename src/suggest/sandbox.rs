//! The sandbox suggester processes run in: bubblewrap (`bwrap`) with every namespace
//! unshared, so a suggester sees only its scratch directory (read-write), its own
//! program and the system's read-only directories — no `.git`, no original
//! repository, no nextedit database, no home directory, no network (unless allowed),
//! no other process.
//!
//! Paths keep their real names inside: the scratch directory is bound at the same
//! path, so `initialize.worktree`, the files' paths and what a `nextedit proxy` in
//! front of a language server records are the same inside and outside.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The bubblewrap executable.
const BWRAP: &str = "bwrap";

/// System directories visible read-only in every sandbox (when they exist).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
];

/// Files of `/etc` replaced by an empty file in the sandbox (secrets of the machine).
const MASKED_FILES: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/ssh",
];

/// How a suggester process is isolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// The directory the process may write (the worker's scratch directory, holding
    /// the worktrees and the reads-only database); bound at its own path.
    pub scratch: PathBuf,
    /// Extra paths visible read-only at their own path (the program's install prefix,
    /// `--sandbox-ro`).
    pub read_only: Vec<PathBuf>,
    /// Extra paths the process may write (`--sandbox-rw`: a log, a cache).
    pub writable: Vec<PathBuf>,
    /// Whether the process keeps the network (`--allow-network`).
    pub network: bool,
}

impl Sandbox {
    /// The `bwrap` command line that runs `argv` in this sandbox with working
    /// directory `cwd` (which must be inside [`Sandbox::scratch`]).
    pub fn wrap(&self, argv: &[String], cwd: &Path) -> Vec<String> {
        let mut args: Vec<String> = vec![
            BWRAP.into(),
            "--unshare-all".into(),
            "--die-with-parent".into(),
            // No TIOCSTI into the terminal nextedit runs in.
            "--new-session".into(),
        ];
        if self.network {
            args.push("--share-net".into());
        }
        for dir in SYSTEM_DIRS {
            let path = Path::new(dir);
            match std::fs::read_link(path) {
                // Merged-/usr systems: /bin → usr/bin stays a symlink.
                Ok(target) => push_all(&mut args, &["--symlink", &lossy(&target), dir]),
                Err(_) if path.is_dir() => push_all(&mut args, &["--ro-bind", dir, dir]),
                Err(_) => {}
            }
        }
        for file in MASKED_FILES {
            let path = Path::new(file);
            if path.is_dir() {
                push_all(&mut args, &["--tmpfs", file]);
            } else if path.exists() {
                push_all(&mut args, &["--ro-bind", "/dev/null", file]);
            }
        }
        push_all(
            &mut args,
            &["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"],
        );
        for path in &self.read_only {
            let path = lossy(path);
            push_all(&mut args, &["--ro-bind-try", &path, &path]);
        }
        for path in &self.writable {
            let path = lossy(path);
            push_all(&mut args, &["--bind", &path, &path]);
        }
        let scratch = lossy(&self.scratch);
        push_all(&mut args, &["--bind", &scratch, &scratch]);
        push_all(&mut args, &["--chdir", &lossy(cwd), "--"]);
        args.extend(argv.iter().cloned());
        args
    }
}

fn push_all(args: &mut Vec<String>, items: &[&str]) {
    args.extend(items.iter().map(|s| s.to_string()));
}

fn lossy(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// Whether bubblewrap can start a sandbox here (installed, and user namespaces
/// allowed); the reason when not. Checked once per process.
pub fn availability() -> Result<(), String> {
    static CHECK: OnceLock<Result<(), String>> = OnceLock::new();
    CHECK
        .get_or_init(|| {
            let scratch = std::env::temp_dir();
            let sandbox = Sandbox {
                scratch: scratch.clone(),
                read_only: Vec::new(),
                writable: Vec::new(),
                network: false,
            };
            let argv = sandbox.wrap(&["true".to_string()], &scratch);
            let output = Command::new(&argv[0])
                .args(&argv[1..])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .map_err(|e| format!("cannot run {BWRAP}: {e}"))?;
            if output.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "{BWRAP} cannot create a sandbox here ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim()
                ))
            }
        })
        .clone()
}

/// The paths a `cmd:` command line needs read-only besides the system directories:
/// the install prefix of its program (resolved through `PATH`, symlinks followed) and
/// every absolute path among its words (`VAR=/path` assignments too). A path that
/// overlaps one of `forbidden` (the replayed repositories, the database) is left out,
/// so naming a script inside the repository never exposes the repository.
pub fn command_paths(command_line: &str, forbidden: &[PathBuf]) -> Vec<PathBuf> {
    let words = shlex::split(command_line).unwrap_or_default();
    let mut paths = Vec::new();
    let mut program_seen = false;
    for word in &words {
        let (assignment, value) = match word.split_once('=') {
            Some((name, value))
                if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                (true, value)
            }
            _ => (false, word.as_str()),
        };
        if !assignment && !program_seen {
            program_seen = true;
            if let Some(program) = resolve_program(value) {
                for path in [Some(program.clone()), program.canonicalize().ok()]
                    .into_iter()
                    .flatten()
                {
                    paths.push(install_prefix(&path, forbidden));
                }
                continue;
            }
        }
        let path = Path::new(value);
        if path.is_absolute() && path.exists() {
            paths.push(path.to_path_buf());
            if let Ok(real) = path.canonicalize() {
                paths.push(real);
            }
        }
    }
    let mut kept: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !overlaps_any(&path, forbidden) && !is_system(&path) && !kept.contains(&path) {
            kept.push(path);
        }
    }
    kept
}

/// Whether `path` is already visible through [`SYSTEM_DIRS`].
fn is_system(path: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|dir| path.starts_with(dir))
}

/// Whether one of `a`, `b` contains the other.
fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn overlaps_any(path: &Path, forbidden: &[PathBuf]) -> bool {
    forbidden.iter().any(|f| overlaps(path, f))
}

/// `program` as the shell would find it (a path, or a name looked up in `PATH`).
pub fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return (path.is_absolute() && path.exists()).then_some(path);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The directory a program is installed in, as wide as is safe: a tool manager's
/// directory directly under `$HOME` (`~/.pyenv`, `~/.nvm`, `~/.cargo`: shims need
/// the whole of it), else the parent of its `bin/` (a venv, `/usr/local`, a
/// toolchain), else its own directory. Narrowed to the program itself when the
/// wider directory would expose a forbidden path or the home directory.
fn install_prefix(program: &Path, forbidden: &[PathBuf]) -> PathBuf {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut candidates = Vec::new();
    if let Some(home) = &home
        && let Ok(rest) = program.strip_prefix(home)
        && let Some(first) = rest.components().next()
        && first.as_os_str().to_string_lossy().starts_with('.')
    {
        candidates.push(home.join(first));
    }
    if let Some(dir) = program.parent() {
        if matches!(
            dir.file_name().and_then(|n| n.to_str()),
            Some("bin" | "sbin" | "shims")
        ) && let Some(prefix) = dir.parent()
        {
            candidates.push(prefix.to_path_buf());
        }
        candidates.push(dir.to_path_buf());
    }
    candidates
        .into_iter()
        .find(|c| {
            !overlaps_any(c, forbidden)
                && c.components().count() > 2
                && home.as_deref().is_none_or(|h| !h.starts_with(c))
        })
        .unwrap_or_else(|| program.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_venv_program_binds_the_venv_and_a_script_only_itself() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("bin/python"), "").unwrap();
        let script = dir.path().join("repo/sut.py");
        std::fs::create_dir_all(script.parent().unwrap()).unwrap();
        std::fs::write(&script, "").unwrap();
        let line = format!(
            "MODEL={} {}/bin/python {} --flag",
            script.display(),
            venv.display(),
            script.display()
        );
        let real = |p: &Path| p.canonicalize().unwrap();
        let paths = command_paths(&line, &[]);
        assert!(paths.contains(&venv));
        assert!(paths.contains(&script));
        assert!(paths.contains(&real(&script)));
        // The script lives in the replayed repository: it is never bound.
        let repo = vec![dir.path().join("repo"), real(&dir.path().join("repo"))];
        let paths = command_paths(&line, &repo);
        assert!(paths.contains(&venv));
        assert!(
            !paths
                .iter()
                .any(|p| p.starts_with(&repo[0]) || p.starts_with(&repo[1]))
        );
    }

    #[test]
    fn the_sandbox_binds_the_scratch_at_its_own_path_and_no_network_by_default() {
        let sandbox = Sandbox {
            scratch: PathBuf::from("/tmp/s"),
            read_only: vec![PathBuf::from("/models/m")],
            writable: Vec::new(),
            network: false,
        };
        let args = sandbox.wrap(
            &["sh".into(), "-c".into(), "x".into()],
            Path::new("/tmp/s/1"),
        );
        let joined = args.join(" ");
        assert!(joined.starts_with("bwrap --unshare-all --die-with-parent --new-session "));
        assert!(!joined.contains("--share-net"));
        assert!(joined.contains("--ro-bind-try /models/m /models/m"));
        assert!(joined.ends_with("--tmpfs /tmp --ro-bind-try /models/m /models/m --bind /tmp/s /tmp/s --chdir /tmp/s/1 -- sh -c x"));
        let with_net = Sandbox {
            network: true,
            ..sandbox
        };
        assert!(
            with_net
                .wrap(&[], Path::new("/"))
                .contains(&"--share-net".to_string())
        );
    }
}
