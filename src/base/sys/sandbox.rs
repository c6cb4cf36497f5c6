//! The sandbox every untrusted process runs in (suggester processes, `lsp:` servers
//! with their proxy, `complete`, the tests of `tasks run`): bubblewrap (`bwrap`) with
//! every namespace unshared, so the process sees only its scratch directory
//! (read-write), its own program (its install prefix) and the system's read-only
//! directories, nothing mounted that overlaps a replayed repository, a trajectory file
//! or the database — no `.git`, no original repository, no nextedit database, no home
//! directory, no network (unless allowed), no other process.
//!
//! The profile, also for root (as CI containers run): `--unshare-all --unshare-user
//! --disable-userns` (no namespace inside; a nested user namespace would give back
//! capabilities), `--cap-drop ALL` (root inside keeps none: a read-only bind cannot be
//! remounted read-write, nothing unmounted), the seccomp filters of
//! [`super::seccomp`] (`mount`, `umount2`, `pivot_root`, `unshare`, `setns`, `keyctl`,
//! `ptrace`, … fail with `EPERM`), `--new-session` (no `TIOCSTI` into nextedit's
//! terminal), `--die-with-parent`, a private `/tmp` of `--disk` bytes, `/proc` and
//! `/dev` of its own, and the machine's secrets hidden: `/etc/shadow`, `/etc/ssh`,
//! `/etc/sudoers` and every entry of `/etc` that others may not read (a private
//! key in `/etc/ssl/private`), which uid 0 inside could otherwise read as their owner.
//!
//! Paths keep their real names inside: the scratch directory is bound at the same
//! path, so `initialize.worktree`, the files' paths and what a `nextedit proxy` in
//! front of a language server records are the same inside and outside.
//!
//! No sandbox, no run: [`super::probe::availability`] starts the whole profile once per process,
//! and a command that would run untrusted code refuses (exit 2) with the cause and
//! the fix when it fails, unless `--sandbox off` was given. `NEXTEDIT_BWRAP` names
//! another bubblewrap program (a test or packaging hook).

use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The bubblewrap executable, unless `NEXTEDIT_BWRAP` names another.
const BWRAP: &str = "bwrap";

/// The bubblewrap program this process runs (`NEXTEDIT_BWRAP`, else `bwrap`).
pub fn bwrap_program() -> String {
    std::env::var("NEXTEDIT_BWRAP")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| BWRAP.to_string())
}

/// System directories visible read-only in every sandbox (when they exist).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
];

/// Files of `/etc` replaced by an empty file (or directory) in the sandbox, whatever
/// their mode: the machine's secrets.
const MASKED_FILES: &[&str] = &[
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/shadow-",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/ssh",
    "/etc/ssl/private",
];

/// Every entry of `/etc` to hide: [`MASKED_FILES`] and whatever others may not read
/// (a directory's content is hidden whole), found once per process.
fn masked() -> &'static [PathBuf] {
    static MASKED: OnceLock<Vec<PathBuf>> = OnceLock::new();
    MASKED.get_or_init(|| {
        let mut found: Vec<PathBuf> = MASKED_FILES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.symlink_metadata().is_ok())
            .collect();
        private_entries(Path::new("/etc"), &mut found, 0);
        found.sort();
        found.dedup();
        // A hidden directory hides what is inside it.
        let all = found.clone();
        found.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
        found
    })
}

/// The entries under `dir` that others may not read (not followed through symlinks,
/// at most 8 levels deep).
fn private_entries(dir: &Path, found: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(meta) = entry.path().symlink_metadata() else {
            continue;
        };
        let others = meta.permissions().mode() & 0o007;
        if meta.is_dir() {
            if others & 0o5 != 0o5 {
                found.push(entry.path());
            } else if depth < 8 {
                private_entries(&entry.path(), found, depth + 1);
            }
        } else if meta.is_file() && others & 0o4 == 0 {
            found.push(entry.path());
        }
    }
}

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
    /// directory `cwd` (which must be inside [`Sandbox::scratch`]), loading the
    /// seccomp filters from `seccomp` (descriptors the child inherits) and with a
    /// `/tmp` of `tmp_bytes`.
    pub fn wrap(
        &self,
        argv: &[String],
        cwd: &Path,
        seccomp: &[RawFd],
        tmp_bytes: u64,
    ) -> Vec<String> {
        let mut args: Vec<String> = vec![
            bwrap_program(),
            "--unshare-all".into(),
            // Explicit, so that --disable-userns holds for root too.
            "--unshare-user".into(),
            "--disable-userns".into(),
            "--cap-drop".into(),
            "ALL".into(),
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
        for path in masked() {
            let file = lossy(path);
            if path.is_dir() {
                push_all(&mut args, &["--tmpfs", &file]);
            } else {
                push_all(&mut args, &["--ro-bind", "/dev/null", &file]);
            }
        }
        let size = tmp_bytes.max(1 << 20).to_string();
        push_all(
            &mut args,
            &[
                "--proc", "/proc", "--dev", "/dev", "--size", &size, "--tmpfs", "/tmp",
            ],
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
        for fd in seccomp {
            push_all(&mut args, &["--add-seccomp-fd", &fd.to_string()]);
        }
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

/// Why no sandbox can be made here: the cause, and the fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{cause}; {fix}")]
pub struct Unavailable {
    /// What failed.
    pub cause: String,
    /// What makes it work.
    pub fix: String,
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

/// Directories the sandbox has its own of: a command's `/dev/zero` or
/// `/proc/self/status` is the sandbox's (the host's device, bound into the sandbox's
/// user namespace, could not even be opened).
const OWN_DIRS: &[&str] = &["/dev", "/proc", "/sys"];

/// Whether `path` is already visible through `SYSTEM_DIRS`, or the sandbox's own.
pub fn is_system(path: &Path) -> bool {
    SYSTEM_DIRS
        .iter()
        .chain(OWN_DIRS)
        .any(|dir| path.starts_with(dir))
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
        // The sandbox's own /dev and /proc, never the host's.
        assert!(command_paths("head -c 1 /dev/zero /proc/self/status", &[]).is_empty());
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
            &[7, 8],
            64 << 20,
        );
        let joined = args.join(" ");
        assert!(joined.starts_with(&format!(
            "{} --unshare-all --unshare-user --disable-userns --cap-drop ALL --die-with-parent --new-session ",
            bwrap_program()
        )));
        assert!(!joined.contains("--share-net"));
        assert!(joined.contains("--ro-bind-try /models/m /models/m"));
        assert!(joined.contains("--ro-bind /dev/null /etc/shadow"));
        assert!(joined.ends_with("--proc /proc --dev /dev --size 67108864 --tmpfs /tmp --ro-bind-try /models/m /models/m --bind /tmp/s /tmp/s --add-seccomp-fd 7 --add-seccomp-fd 8 --chdir /tmp/s/1 -- sh -c x"));
        let with_net = Sandbox {
            network: true,
            ..sandbox
        };
        assert!(
            with_net
                .wrap(&[], Path::new("/"), &[], 1 << 20)
                .contains(&"--share-net".to_string())
        );
    }

    #[test]
    fn entries_of_etc_others_cannot_read_are_hidden() {
        let hidden = masked();
        // Debian's snake-oil key directory and shadow file are 0700 / 0640.
        for path in ["/etc/ssl/private", "/etc/shadow"] {
            if Path::new(path).exists() {
                assert!(hidden.contains(&PathBuf::from(path)), "{path}: {hidden:?}");
            }
        }
        assert!(!hidden.iter().any(|p| p == Path::new("/etc/passwd")));
    }
}
