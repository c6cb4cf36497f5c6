//! Checking `--python` ([`Python::probe`]): the interpreter runs once like a test run,
//! and what it says of itself (its version, prefixes and import path) decides what a
//! sandbox must show of it, beside the directories its venv's `.pth` files name.
//! Apart from [`super::environment`], which holds what is probed, because the probe
//! runs through [`super::execute`], whose runs get their interpreter from there.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::environment::{EnvError, Python, TestEnvironment};
use super::execute::{ExecError, ExecLimits, run_limited};

/// What the probe of an interpreter prints (one JSON line).
#[derive(Debug, Deserialize)]
struct Probed {
    version: String,
    prefixes: Vec<String>,
    path: Vec<String>,
}

/// Prints the interpreter's version, its prefixes and its import path as one JSON line.
const PYTHON_PROBE: &str = "import json, sys; print(json.dumps({'version': sys.version.splitlines()[0], \
'prefixes': [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix], 'path': sys.path}))";

impl Python {
    /// Checks that `path` is an executable Python by running it once like a test run
    /// (in `dir`, under `limits`: in the sandbox when they say so, which shows the
    /// interpreter's install prefix and the directories its venv's `.pth` files
    /// name), and finds what a sandbox must show of it: never a path holding one of
    /// `forbidden` (the repositories, the database), the home directory or a system
    /// directory (those are shown anyway), nor an import path entry inside a
    /// forbidden path.
    pub fn probe(
        path: &Path,
        forbidden: &[PathBuf],
        limits: &ExecLimits,
        dir: &Path,
        cache: &Path,
    ) -> Result<Python, EnvError> {
        use std::os::unix::fs::PermissionsExt;
        let bad = |reason: String| EnvError::Python {
            path: path.display().to_string(),
            reason,
        };
        let interpreter = std::path::absolute(path).map_err(|e| bad(e.to_string()))?;
        let meta = std::fs::metadata(&interpreter).map_err(|e| bad(e.to_string()))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(bad("not an executable file".to_string()));
        }
        let mut forbidden: Vec<PathBuf> = (forbidden.iter())
            .flat_map(|f| [f.clone(), f.canonicalize().unwrap_or_else(|_| f.clone())])
            .collect();
        forbidden.push(dir.to_path_buf());
        let shown = Shown::new(&forbidden);
        let mut read_only: Vec<PathBuf> = Vec::new();
        for entry in pth_dirs(&interpreter) {
            shown.keep(&mut read_only, entry, false);
        }
        let first = Python {
            interpreter: interpreter.clone(),
            version: String::new(),
            read_only: read_only.clone(),
        };
        let limits = ExecLimits {
            environment: TestEnvironment {
                python: Some(first),
                setup: None,
            },
            ..limits.clone()
        };
        let argv = [
            interpreter.to_string_lossy().into_owned(),
            "-c".to_string(),
            PYTHON_PROBE.to_string(),
        ];
        let ran = std::fs::create_dir_all(dir)
            .map_err(|source| ExecError::Io {
                what: format!("creating {}", dir.display()),
                source,
            })
            .and_then(|()| run_limited(&argv, dir, &limits, cache));
        let _ = std::fs::remove_dir_all(dir);
        let ran = ran.map_err(|e| bad(format!("cannot run it: {e}")))?;
        let probed: Probed = (ran.output_tail.lines().rev())
            .find_map(|line| serde_json::from_str(line).ok())
            .ok_or_else(|| {
                bad(format!(
                    "not a Python interpreter: `{} -c 'import sys; …'` exit {}{}",
                    interpreter.display(),
                    ran.exit_code
                        .map_or_else(|| "by signal".to_string(), |c| c.to_string()),
                    if ran.output_tail.trim().is_empty() {
                        String::new()
                    } else {
                        format!(": {}", crate::base::secrets::scrub(ran.output_tail.trim()))
                    }
                ))
            })?;
        let prefixes = probed.prefixes.iter().map(|p| (p, true));
        for (entry, prefix) in prefixes.chain(probed.path.iter().map(|p| (p, false))) {
            shown.keep(&mut read_only, PathBuf::from(entry), prefix);
        }
        Ok(Python {
            interpreter,
            version: probed.version,
            read_only,
        })
    }
}

/// Which of an interpreter's paths a sandbox may show.
struct Shown {
    forbidden: Vec<PathBuf>,
    home: Option<PathBuf>,
}

impl Shown {
    fn new(forbidden: &[PathBuf]) -> Shown {
        Shown {
            forbidden: forbidden.to_vec(),
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// Adds `entry` to `kept` when it may be shown and is not shown already. An
    /// ancestor of a forbidden path would show it. A `prefix` inside one shows only
    /// itself (a venv kept in the repository); an import path entry inside one is
    /// the repository's own code (a development install of its HEAD), never shown.
    fn keep(&self, kept: &mut Vec<PathBuf>, entry: PathBuf, prefix: bool) {
        let shows_forbidden = (self.forbidden.iter())
            .any(|f| f.starts_with(&entry) || (!prefix && entry.starts_with(f)));
        let shows_home = (self.home.as_deref()).is_some_and(|h| h.starts_with(&entry));
        if entry.is_absolute()
            && entry.exists()
            && !shows_forbidden
            && !shows_home
            && !crate::base::sys::sandbox::is_system(&entry)
            && !kept.iter().any(|k| entry.starts_with(k))
        {
            kept.retain(|k| !k.starts_with(&entry));
            kept.push(entry);
        }
    }
}

/// The directories named by the `.pth` files of the site-packages beside
/// `interpreter` (its venv's, its install's), as `site` would add them: a line that
/// is not a comment nor code (`import …`), relative to its site directory, when it
/// exists. (Directories a `.pth`'s code adds are not known before it runs.)
fn pth_dirs(interpreter: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let programs = [
        Some(interpreter.to_path_buf()),
        interpreter.canonicalize().ok(),
    ];
    for program in programs.into_iter().flatten() {
        let Some(prefix) = program.parent().and_then(Path::parent) else {
            continue;
        };
        let Ok(libs) = std::fs::read_dir(prefix.join("lib")) else {
            continue;
        };
        for lib in libs.flatten() {
            let site = lib.path().join("site-packages");
            let Ok(entries) = std::fs::read_dir(&site) else {
                continue;
            };
            for pth in entries.flatten() {
                if pth.path().extension().is_none_or(|e| e != "pth") {
                    continue;
                }
                let text = std::fs::read_to_string(pth.path()).unwrap_or_default();
                for line in text.lines().map(str::trim_end) {
                    let code = line.starts_with("import ") || line.starts_with("import\t");
                    if line.is_empty() || line.starts_with('#') || code {
                        continue;
                    }
                    let dir = site.join(line);
                    if dir.is_dir() {
                        dirs.push(dir);
                    }
                }
            }
        }
    }
    dirs
}
