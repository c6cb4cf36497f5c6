//! Resuming a stored run (`replay --resume`, `tasks run --resume`): whatever the run
//! executes or exposes — the suggester, a test command, the sandbox and what it shows,
//! the repositories whose tests run, where files are written — comes from the command
//! line again, and what the database says is only compared with it. A database is data
//! someone may have handed over (a published run, a shard from another machine): a
//! command it names is never run on its word.
//!
//! [`confirm`] compares one setting: a missing or different one is a [`ResumeError`]
//! naming the stored value and the flag. `run::plan::Reasserted` (replay) and
//! `tasks::runner::TaskRunGiven` (tasks run) are what each command line gives again.

/// A setting of a resumed run that the command line did not repeat, or repeated
/// otherwise than the run was made with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResumeError {
    /// The command line does not give it.
    #[error(
        "{run} was made with {stored}: resume it with the same {flag} (nextedit never runs what a database names)"
    )]
    Missing {
        /// The run (`run 7`, `task run 3`).
        run: String,
        /// The flag.
        flag: &'static str,
        /// The stored value, as a flag would give it.
        stored: String,
    },
    /// The command line gives another value.
    #[error("{run} was made with {stored}, not {given}: resume it with the same {flag}")]
    Differs {
        /// The run (`run 7`, `task run 3`).
        run: String,
        /// The flag.
        flag: &'static str,
        /// The stored value, as a flag would give it.
        stored: String,
        /// The value given, as a flag would give it.
        given: String,
    },
}

/// Checks one setting of `run`: `given` (`None`: the command line does not name it)
/// must equal `stored`; `show` renders a value as the flag would give it
/// (`--suggester `cmd:x``), masked and cut, as it is printed.
pub fn confirm<T: PartialEq>(
    run: &str,
    flag: &'static str,
    stored: &T,
    given: Option<&T>,
    show: impl Fn(&T) -> String,
) -> Result<(), ResumeError> {
    let shown = |value: &T| crate::base::secrets::scrub(&show(value)).into_owned();
    match given {
        Some(given) if given == stored => Ok(()),
        Some(given) => Err(ResumeError::Differs {
            run: run.to_string(),
            flag,
            stored: shown(stored),
            given: shown(given),
        }),
        None => Err(ResumeError::Missing {
            run: run.to_string(),
            flag,
            stored: shown(stored),
        }),
    }
}

/// Confirms run `run`'s stored `--suggester` by the command line's: specs are stored
/// masked ([`crate::base::secrets::stored_spec`]), so the given one is compared masked.
pub fn confirm_suggester(run: &str, stored: &str, given: Option<&str>) -> Result<(), ResumeError> {
    confirm(
        run,
        "--suggester",
        &stored.to_string(),
        given.map(crate::base::secrets::stored_spec).as_ref(),
        |s| quoted("--suggester", s),
    )
}

/// `--env A --env B`, or `no --env` (the variables a run passes to untrusted code).
pub fn env_flags(names: &[String]) -> String {
    if names.is_empty() {
        return "no --env".to_string();
    }
    let flags: Vec<String> = names.iter().map(|n| format!("--env {n}")).collect();
    flags.join(" ")
}

/// `flag `value`` (a spec or command as the message shows it).
pub fn quoted(flag: &str, value: &str) -> String {
    format!("{flag} `{value}`")
}

/// `flag PATH…` for each path, or `no flag` when there is none.
pub fn paths(flag: &str, paths: &[std::path::PathBuf]) -> String {
    if paths.is_empty() {
        return format!("no {flag}");
    }
    paths
        .iter()
        .map(|p| format!("{flag} {}", p.display()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `paths` made absolute where they resolve, so `./repo` and `/abs/repo` compare equal.
pub fn resolved(paths: &[std::path::PathBuf]) -> Vec<std::path::PathBuf> {
    paths
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_must_be_repeated_as_stored() {
        let show = |s: &String| quoted("--suggester", s);
        let stored = "cmd:touch /tmp/x".to_string();
        assert_eq!(
            confirm("run 7", "--suggester", &stored, Some(&stored), show),
            Ok(())
        );
        assert_eq!(
            confirm("run 7", "--suggester", &stored, None, show)
                .unwrap_err()
                .to_string(),
            "run 7 was made with --suggester `cmd:touch /tmp/x`: resume it with the same --suggester (nextedit never runs what a database names)"
        );
        assert_eq!(
            confirm(
                "run 7",
                "--suggester",
                &stored,
                Some(&"builtin:noop".to_string()),
                show
            )
            .unwrap_err()
            .to_string(),
            "run 7 was made with --suggester `cmd:touch /tmp/x`, not --suggester `builtin:noop`: resume it with the same --suggester"
        );
        assert_eq!(paths("--sandbox-ro", &[]), "no --sandbox-ro");
    }
}
