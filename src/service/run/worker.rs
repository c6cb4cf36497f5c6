//! Where a run's workers replay: each worker's scratch directory and sandbox (what a
//! sandboxed suggester may read and write, and what it must never see), and the
//! suggester each worker builds from the run's settings.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{RunError, RunSettings};
use crate::base::sys::env::Environment;
use crate::base::sys::jail::Jail;
use crate::base::sys::sandbox::Sandbox;
use crate::core::trajectory::Trajectory;
use crate::engine::judge::Judge;
use crate::engine::replay::FedSuggester;
use crate::engine::suggest::build::BuildOptions;
use crate::engine::suggest::{RecordedSuggester, Suggester};

/// Where a worker's suggester process lives: a private scratch directory holding the
/// worktrees it replays in and its reads-only database, and the sandbox around it.
pub(super) struct WorkerPlace {
    /// The worker's scratch directory (the only writable place in its sandbox).
    pub(super) dir: PathBuf,
    /// The sandbox, unless the run is unsandboxed.
    pub(super) sandbox: Option<Sandbox>,
}

impl WorkerPlace {
    /// The database a `nextedit proxy` in front of the suggester's language server
    /// records into (`$NEXTEDIT_REPLAY_DB`): nothing but those recordings, no gold.
    pub(super) fn reads_db(&self) -> PathBuf {
        self.dir.join("reads.db")
    }
}

/// The suggester of a run's settings ([`crate::engine::suggest::build`], plus the gold-fed
/// built-ins only replay's engine feeds); a process suggester runs in `place` (its
/// sandbox, `HOME` and disk limit in the worker's scratch directory, the run's limits
/// and `--env` names) and gets `NEXTEDIT_REPLAY_DB` (its reads-only database); an
/// `lsp:` server runs there behind `nextedit proxy` recording into that database.
pub(super) fn build_suggester(
    settings: &RunSettings,
    place: Option<&WorkerPlace>,
) -> Result<Box<dyn Suggester>, RunError> {
    Ok(match settings.suggester.as_str() {
        "builtin:oracle" => Box::new(FedSuggester::oracle()),
        "builtin:unchanged-at-gold" => Box::new(FedSuggester::unchanged_at_gold()),
        // A recorded session's own offers: they come from the trajectory the engine
        // replays (`Suggester::offers_feed`), so this one is built here, not by `suggest::build`.
        spec if spec.starts_with("recorded:") => Box::new(
            RecordedSuggester::from_spec(spec).map_err(|e| RunError::Other(e.to_string()))?,
        ),
        spec => {
            let options = BuildOptions {
                timeout: Duration::from_secs_f64(settings.timeout),
                init_timeout: Duration::from_secs_f64(settings.init_timeout),
                give_up_after: settings.give_up_after,
                allow_network: settings.allow_network,
                reads_db: place.map(WorkerPlace::reads_db),
                jail: match place {
                    Some(place) => Jail::in_scratch(
                        place.sandbox.clone(),
                        &place.dir,
                        settings.limits,
                        Environment::passing(&settings.env),
                    ),
                    None => Jail::default(),
                },
            };
            crate::engine::suggest::build::build(spec, &options)
                .map_err(|e| RunError::Other(e.to_string()))?
        }
    })
}

/// The judge of a run's settings (`--judge`), if it has one: its spec parsed, its key
/// read from the environment, each question within `--timeout`; an endpoint off this
/// machine needs `--allow-network`.
pub(super) fn build_judge(settings: &RunSettings) -> Result<Option<Judge>, RunError> {
    let Some(spec) = &settings.judge else {
        return Ok(None);
    };
    let judge = Judge::from_spec(
        spec,
        settings.judge_prompt,
        Duration::from_secs_f64(settings.timeout),
        settings.give_up_after,
    )
    .map_err(|e| RunError::Other(format!("--judge: {e}")))?
    .with_format(settings.judge_format);
    if !judge.is_local() && !settings.allow_network {
        return Err(RunError::Other(format!(
            "--judge {:?} is not on this machine: pass --allow-network to let the run reach it",
            crate::base::secrets::stored_spec(spec)
        )));
    }
    Ok(Some(judge))
}

/// The read-only paths of a worker's sandbox: the suggester's program and the paths
/// its command line names (never anything overlapping `forbidden`: the replayed
/// repositories, the database, the run's scratch directory), nextedit's own
/// executable (for `nextedit proxy`), and `--sandbox-ro`.
pub(super) fn sandbox_paths(
    settings: &RunSettings,
    forbidden: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), RunError> {
    let command = (settings.suggester.strip_prefix("cmd:"))
        .or_else(|| settings.suggester.strip_prefix("lsp:"))
        .unwrap_or("");
    let mut paths = crate::base::sys::sandbox::command_paths(command, forbidden);
    if let Ok(exe) = std::env::current_exe() {
        paths.push(exe);
    }
    let mut writable = Vec::new();
    for (flag, given, into) in [
        ("--sandbox-ro", &settings.sandbox_ro, &mut paths),
        ("--sandbox-rw", &settings.sandbox_rw, &mut writable),
    ] {
        for path in given {
            let real = path
                .canonicalize()
                .map_err(RunError::io(format!("{flag} {}", path.display())))?;
            if let Some(f) = forbidden
                .iter()
                .find(|f| real.starts_with(f) || f.starts_with(&real))
            {
                return Err(RunError::Other(format!(
                    "{flag} {} would show the suggester {} (a replayed repository or trajectory, the database or the scratch directory)",
                    path.display(),
                    f.display()
                )));
            }
            into.push(real);
        }
    }
    Ok((paths, writable))
}

/// What a sandboxed suggester must never see: every replayed repository and
/// trajectory file, the database (with its journal files) and the run's scratch
/// directory, as given and canonicalized.
pub(super) fn forbidden_paths(
    db_path: &Path,
    scratch: &Path,
    keys: &[&str],
    texts: &[&str],
) -> Vec<PathBuf> {
    let mut paths = vec![db_path.to_path_buf(), scratch.to_path_buf()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = db_path.as_os_str().to_owned();
        name.push(suffix);
        paths.push(PathBuf::from(name));
    }
    // A trajectory given as a file is keyed by its path.
    paths.extend(keys.iter().map(PathBuf::from).filter(|p| p.exists()));
    for text in texts {
        if let Ok(t) = serde_json::from_str::<Trajectory>(text)
            && let Some(workspace) = t.session.workspace
        {
            paths.push(PathBuf::from(workspace));
        }
    }
    let mut all = paths.clone();
    all.extend(paths.iter().filter_map(|p| p.canonicalize().ok()));
    if let Ok(cwd) = std::env::current_dir() {
        // With `--repo .` the current directory is the repository.
        if all.iter().any(|p| cwd.starts_with(p)) {
            all.push(cwd);
        }
    }
    all.sort();
    all.dedup();
    all
}
