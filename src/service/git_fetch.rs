//! Fetching the commits of a testset into local repositories with the `git` command.
//!
//! `nextedit import historian-testset` (and `import zed-examples --fetch`, for an
//! example's repository, through [`fetch_repository`]) are the only commands that make
//! nextedit reach another machine, and only because the user asks them to: it runs the user's own `git`
//! on the repository URLs the testset names (public repositories), and sends nothing of
//! the user's (no recording, no database). The git CLI rather than libgit2 because
//! libgit2 is built here without https/ssh (nextedit itself never talks to a network)
//! and because the user's git brings their proxy and credential set-up.
//!
//! Each repository becomes a bare repository `ROOT/OWNER/NAME.git` with `origin` = its
//! URL. Only the testset's commits and their parents are fetched (`--depth=2`, by
//! commit id: GitHub serves any commit), which is all `derive` and `replay --commit`
//! read, instead of whole histories (gigabytes for some of the testset's
//! repositories). Each commit is kept by a ref `refs/testset/<sha>` so `git gc` keeps
//! it. A commit already there with its parents is not fetched again, so a second run
//! only fetches what the first could not. One `git fetch` per repository; when it
//! fails, the repository is probed (`ls-remote`) and each commit fetched on its own,
//! so one missing commit fails alone; an unreachable repository's directory is removed
//! again when this run made it. git never prompts (`GIT_TERMINAL_PROMPT=0`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::core::import::historian::{TestsetCommit, TestsetRepository};

/// Why git could not make a repository or fetch into it (kept as a commit's or a
/// repository's reason in the outcome).
#[derive(Debug, thiserror::Error)]
pub enum GitFetchError {
    /// The directory holds something that is not a clone made here.
    #[error("{} exists and is not a clone made by nextedit", .0.display())]
    NotAClone(PathBuf),
    /// The directory is a clone of another URL.
    #[error("{} is a clone of {origin}, not of {url}", dir.display())]
    OtherOrigin {
        /// The directory.
        dir: PathBuf,
        /// Its `origin`.
        origin: String,
        /// The URL asked for.
        url: String,
    },
    /// The directory cannot be made.
    #[error("cannot create {}: {source}", dir.display())]
    Create {
        /// The directory.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A URL or commit id git would read as an option (a leading `-`), or a commit id
    /// that is not one (input files name them: nothing in them may steer git).
    #[error("not a repository URL or commit id git may be given: `{0}`")]
    NotPlain(String),
    /// git does not start.
    #[error("cannot run git: {0}")]
    Spawn(std::io::Error),
    /// git failed: its first `fatal:` or `error:` line (else its last line).
    #[error("{0}")]
    Git(String),
    /// git failed without saying why.
    #[error("git {command} failed ({status})")]
    Failed {
        /// The git command (`fetch`).
        command: String,
        /// How it exited.
        status: std::process::ExitStatus,
    },
}

/// What fetching one repository gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryOutcome {
    /// The local bare repository.
    pub dir: PathBuf,
    /// Commits present with their parents, in testset order.
    pub ready: Vec<TestsetCommit>,
    /// How many of them this run fetched (the others were there already).
    pub fetched: usize,
    /// Commits that could not be had, each with git's reason.
    pub failed: Vec<(TestsetCommit, String)>,
    /// Why the repository as a whole failed (then every commit is in `failed`).
    pub error: Option<String>,
}

/// Fetches `repository`'s commits into `root`/OWNER/NAME.git (created when absent).
pub fn fetch_repository(root: &Path, repository: &TestsetRepository) -> RepositoryOutcome {
    // Absolute: git runs with the repository as its directory and `GIT_DIR`.
    let dir = root.join(format!("{}.git", repository.name));
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let mut outcome = RepositoryOutcome {
        dir: dir.clone(),
        ready: Vec::new(),
        fetched: 0,
        failed: Vec::new(),
        error: None,
    };
    let created = !dir.exists();
    let ids = repository.commits.iter().map(|c| c.sha.as_str());
    if let Some(bad) = std::iter::once(repository.url.as_str())
        .filter(|url| url.starts_with('-'))
        .chain(ids.filter(|sha| !is_commit_id(sha)))
        .next()
    {
        fail_all(
            &mut outcome,
            repository,
            GitFetchError::NotPlain(bad.to_owned()).to_string(),
        );
        return outcome;
    }
    if let Err(error) = prepare(&dir, &repository.url) {
        fail_all(&mut outcome, repository, error.to_string());
        return outcome;
    }
    let missing: Vec<&TestsetCommit> = repository
        .commits
        .iter()
        .filter(|c| !is_ready(&dir, &c.sha))
        .collect();
    let mut reasons: Vec<(String, String)> = Vec::new();
    if !missing.is_empty() && fetch(&dir, missing.iter().map(|c| c.sha.as_str())).is_err() {
        // One bad commit fails the whole fetch: find out whether the repository is
        // reachable at all, then which commits are the bad ones.
        if let Err(error) = git(&dir, &["ls-remote", "--quiet", "origin", "HEAD"]) {
            fail_all(&mut outcome, repository, error.to_string());
            if created {
                // The empty repository this run made for it would only be in the way.
                let _ = std::fs::remove_dir_all(&dir);
            }
            return outcome;
        }
        for commit in &missing {
            if let Err(reason) = fetch(&dir, [commit.sha.as_str()]) {
                reasons.push((commit.sha.clone(), reason.to_string()));
            }
        }
    }
    for commit in &repository.commits {
        if is_ready(&dir, &commit.sha) {
            if missing.iter().any(|m| m.sha == commit.sha) {
                outcome.fetched += 1;
            }
            outcome.ready.push(commit.clone());
        } else {
            let reason = reasons
                .iter()
                .find(|(sha, _)| *sha == commit.sha)
                .map(|(_, r)| r.clone())
                .unwrap_or_else(|| "not in the repository after fetching".to_owned());
            outcome.failed.push((commit.clone(), reason));
        }
    }
    outcome
}

/// A full commit id (SHA-1 or SHA-256, hex).
fn is_commit_id(sha: &str) -> bool {
    (sha.len() == 40 || sha.len() == 64) && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

fn fail_all(outcome: &mut RepositoryOutcome, repository: &TestsetRepository, error: String) {
    outcome.failed = repository
        .commits
        .iter()
        .map(|c| (c.clone(), error.clone()))
        .collect();
    outcome.error = Some(error);
}

/// Creates the bare repository with its `origin`, or checks an existing one is a
/// clone of `url` (a directory holding something else is never touched).
fn prepare(dir: &Path, url: &str) -> Result<(), GitFetchError> {
    if dir.exists() {
        let origin = git(dir, &["config", "--get", "remote.origin.url"])
            .map_err(|_| GitFetchError::NotAClone(dir.to_owned()))?;
        if origin.trim() != url {
            return Err(GitFetchError::OtherOrigin {
                dir: dir.to_owned(),
                origin: origin.trim().to_owned(),
                url: url.to_owned(),
            });
        }
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|source| GitFetchError::Create {
        dir: dir.to_owned(),
        source,
    })?;
    git(dir, &["init", "--quiet", "--bare"])?;
    // `url` was checked not to start with `-` (`fetch_repository`).
    git(dir, &["remote", "add", "origin", url])?;
    Ok(())
}

/// Fetches commits (and their parents) by id, each under `refs/testset/<sha>`.
fn fetch<'a>(dir: &Path, shas: impl IntoIterator<Item = &'a str>) -> Result<(), GitFetchError> {
    let mut args: Vec<String> = ["fetch", "--quiet", "--no-tags", "--depth=2", "origin"]
        .map(String::from)
        .into();
    args.extend(
        shas.into_iter()
            .map(|sha| format!("+{sha}:refs/testset/{sha}")),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    git(dir, &args).map(drop)
}

/// The commit and every parent it names are in the repository.
fn is_ready(dir: &Path, sha: &str) -> bool {
    let Ok(body) = git(dir, &["cat-file", "commit", sha]) else {
        return false;
    };
    let parents: Vec<&str> = body
        .lines()
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.strip_prefix("parent "))
        .collect();
    let ready = parents
        .iter()
        .all(|p| git(dir, &["cat-file", "-e", &format!("{p}^{{commit}}")]).is_ok());
    // A commit fetched as another's parent has no ref yet.
    ready && git(dir, &["update-ref", &format!("refs/testset/{sha}"), sha]).is_ok()
}

/// Runs git on the repository `dir` (named by `GIT_DIR`: git never looks for one in
/// the directories above) without a prompt; stdout, or git's first `fatal:` or
/// `error:` line (else its last line).
fn git(dir: &Path, args: &[&str]) -> Result<String, GitFetchError> {
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_DIR", dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        // URLs come from input files: only transports that move data, never `ext::`
        // (which runs a command) whatever the user's git configuration allows.
        .env("GIT_ALLOW_PROTOCOL", "file:git:http:https:ssh")
        .env("GCM_INTERACTIVE", "never")
        .stdin(Stdio::null())
        .output()
        .map_err(GitFetchError::Spawn)?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("fatal: ") || l.starts_with("error: "))
        .or_else(|| stderr.lines().rev().find(|l| !l.trim().is_empty()));
    Err(match line {
        Some(line) => GitFetchError::Git(line.trim().to_owned()),
        None => GitFetchError::Failed {
            command: args[0].to_owned(),
            status: output.status,
        },
    })
}

/// What [`fetch_testset`] reports as it goes.
#[derive(Debug)]
pub enum FetchEvent<'a> {
    /// Repository `index` (0-based) is being fetched.
    Started {
        /// Its position.
        index: usize,
        /// The repository.
        repository: &'a TestsetRepository,
    },
    /// Repository `index` is done.
    Done {
        /// Its position.
        index: usize,
        /// The repository.
        repository: &'a TestsetRepository,
        /// What fetching it gave.
        outcome: &'a RepositoryOutcome,
    },
}

/// Fetches every repository in turn into `root`, a failing one skipped (its outcome
/// says why), reporting each through `on_event`.
pub fn fetch_testset(
    root: &Path,
    repositories: &[TestsetRepository],
    mut on_event: impl FnMut(FetchEvent<'_>),
) -> Vec<RepositoryOutcome> {
    let mut outcomes = Vec::with_capacity(repositories.len());
    for (index, repository) in repositories.iter().enumerate() {
        on_event(FetchEvent::Started { index, repository });
        let outcome = fetch_repository(root, repository);
        on_event(FetchEvent::Done {
            index,
            repository,
            outcome: &outcome,
        });
        outcomes.push(outcome);
    }
    outcomes
}
