//! The environment an untrusted process gets: an allow-list, never nextedit's own.
//!
//! `PATH`, the locale (`LANG`, `LC_ALL`, `LC_CTYPE`) and `TERM` when they are set;
//! `HOME`, a directory of the process's own scratch; `TMPDIR=/tmp`; what its caller
//! sets (`NEXTEDIT_REPLAY_DB`, a test command's Go settings); and the variables named
//! with `--env`. Nothing else passes, sandboxed or not: no API key or token, no
//! `NEXTEDIT_DB`, no `PYTHONPATH` or `VIRTUAL_ENV`, no `PWD`.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// Variables passed through from nextedit's environment when set.
const INHERITED: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM"];
/// `PATH` when nextedit's own has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What an untrusted process's environment holds beyond the allow-list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    /// Names passed from nextedit's environment (`--env NAME`), when set there.
    pub pass: Vec<String>,
    /// Variables the caller sets, applied last.
    pub set: Vec<(String, String)>,
}

impl Environment {
    /// An environment passing `names` (`--env`) besides the allow-list.
    pub fn passing(names: &[String]) -> Environment {
        Environment {
            pass: names.to_vec(),
            set: Vec::new(),
        }
    }

    /// Adds a variable the caller sets.
    pub fn with(mut self, name: &str, value: &str) -> Environment {
        self.set.push((name.to_string(), value.to_string()));
        self
    }

    /// The variables, in the order they are set (a later one wins): the allow-list,
    /// `HOME=home`, `TMPDIR=/tmp`, the `--env` names, the caller's.
    pub fn vars(&self, home: &Path) -> Vec<(OsString, OsString)> {
        let mut vars: Vec<(OsString, OsString)> = INHERITED
            .iter()
            .filter_map(|name| Some((OsString::from(name), std::env::var_os(name)?)))
            .collect();
        if !vars.iter().any(|(name, _)| name == "PATH") {
            vars.push(("PATH".into(), inherited_path().into()));
        }
        vars.push(("HOME".into(), home.as_os_str().to_owned()));
        vars.push(("TMPDIR".into(), "/tmp".into()));
        for name in &self.pass {
            if let Some(value) = std::env::var_os(name) {
                vars.push((name.into(), value));
            }
        }
        vars.extend(
            self.set
                .iter()
                .map(|(name, value)| (name.into(), value.into())),
        );
        vars
    }

    /// Gives `command` this environment and nothing of nextedit's.
    pub fn apply(&self, command: &mut Command, home: &Path) {
        command.env_clear().envs(self.vars(home));
    }
}

/// The `PATH` an untrusted process gets: nextedit's own, else a default.
pub fn inherited_path() -> String {
    std::env::var_os("PATH")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| DEFAULT_PATH.to_string())
}

/// An `--env` name that cannot be passed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvNameError {
    /// Not a variable's name.
    #[error("--env {0:?}: give a variable's name (letters, digits and _), not NAME=VALUE")]
    NotAName(String),
    /// Not set here.
    #[error("--env {0}: {0} is not set in nextedit's environment")]
    NotSet(String),
}

/// Checks `--env` names: each a variable name (letters, digits, `_`, not starting
/// with a digit) that is set in nextedit's environment.
pub fn check_names(names: &[String]) -> Result<(), EnvNameError> {
    for name in names {
        let valid = !name.is_empty()
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(EnvNameError::NotAName(name.clone()));
        }
        if std::env::var_os(name).is_none() {
            return Err(EnvNameError::NotSet(name.clone()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_allow_list_home_tmpdir_and_named_variables_pass() {
        let env = Environment::passing(&["CARGO_PKG_NAME".to_string()]).with("EXTRA", "1");
        let vars = env.vars(Path::new("/scratch/home"));
        let names: Vec<&str> = vars.iter().map(|(n, _)| n.to_str().unwrap()).collect();
        assert!(names.contains(&"PATH"));
        assert!(names.ends_with(&["HOME", "TMPDIR", "CARGO_PKG_NAME", "EXTRA"]));
        // Cargo sets CARGO_MANIFEST_DIR for tests: not asked for, not passed.
        assert!(!names.contains(&"CARGO_MANIFEST_DIR"));
        let home = vars.iter().find(|(n, _)| n == "HOME").unwrap();
        assert_eq!(home.1, "/scratch/home");
    }

    #[test]
    fn env_names_are_checked() {
        assert_eq!(check_names(&["PATH".to_string()]), Ok(()));
        assert!(
            check_names(&["A=B".to_string()])
                .unwrap_err()
                .to_string()
                .contains("not NAME=VALUE")
        );
        assert!(
            check_names(&["NEXTEDIT_SURELY_UNSET_1".to_string()])
                .unwrap_err()
                .to_string()
                .contains("is not set")
        );
    }
}
