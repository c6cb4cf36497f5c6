//! The file and repository side of `nextedit import zed-examples`: example files found
//! under directories, each example's repository found at `REPOS/OWNER/NAME` (or
//! `OWNER/NAME.git`; with `--fetch`, a missing one fetched there by `git_fetch`, its
//! revision only), the revision checked and the files read at it. The conversion
//! itself is the pure [`crate::core::import::zed_session`].

use std::path::{Path, PathBuf};

use crate::core::import::historian::{TestsetCommit, TestsetRepository};
use crate::core::import::zed_example::{ZedExample, ZedExampleError, parse};
use crate::core::import::zed_session::{ZedSessionError, example_trajectory};
use crate::core::trajectory::Trajectory;
use crate::engine::history::source::GitRepository;
use crate::service::git_fetch::fetch_repository;
use crate::service::import_io::ImportReadError;

/// Why one example could not be imported (the batch goes on without it).
#[derive(Debug, thiserror::Error)]
pub enum ZedImportError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not an example.
    #[error(transparent)]
    Parse(#[from] ZedExampleError),
    /// `repository_url` names no `OWNER/NAME`.
    #[error("repository_url `{0}` does not end in OWNER/NAME")]
    Url(String),
    /// The repository is not under `--repos` (and `--fetch` was not given).
    #[error("repository {url} not found: looked in {} (and {}.git); give --fetch to clone it there", dir.display(), dir.display())]
    MissingRepository {
        /// `repository_url`.
        url: String,
        /// The directory looked in.
        dir: PathBuf,
    },
    /// Fetching the repository failed.
    #[error("fetching {url} into {}: {reason}", dir.display())]
    Fetch {
        /// `repository_url`.
        url: String,
        /// Where.
        dir: PathBuf,
        /// git's reason.
        reason: String,
    },
    /// The repository does not open.
    #[error("{}: {reason}", dir.display())]
    Repository {
        /// The repository.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// The revision is not in the repository.
    #[error("revision {revision} is not a commit of {}", dir.display())]
    Revision {
        /// The revision.
        revision: String,
        /// The repository.
        dir: PathBuf,
    },
    /// The example does not apply to its revision.
    #[error(transparent)]
    Session(#[from] ZedSessionError),
}

/// The example files: each path that is a file, and every `*.md` under each path that
/// is a directory (recursively, sorted).
pub fn example_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ImportReadError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            markdown_under(path, &mut files)?;
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ImportReadError> {
    let unreadable = |source| ImportReadError::Directory {
        path: dir.to_owned(),
        source,
    };
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(unreadable)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(unreadable)?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_under(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// An example's name: its file's name without `.md`.
pub fn example_name(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// `OWNER/NAME` of a repository URL (its last two path segments, `.git` dropped).
pub fn owner_name(url: &str) -> Option<String> {
    let mut segments = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .map(|s| s.trim_end_matches(".git"));
    let name = segments.next().filter(|s| !s.is_empty() && *s != "..")?;
    let owner = segments.next().filter(|s| !s.is_empty() && *s != "..")?;
    (name != "." && owner != ".").then(|| format!("{owner}/{name}"))
}

/// Reads the example at `path` and makes its trajectory against its repository under
/// `repos` (fetched there first when missing and `fetch`).
pub fn import_example(
    path: &Path,
    repos: &Path,
    fetch: bool,
) -> Result<Trajectory, ZedImportError> {
    let text = std::fs::read_to_string(path).map_err(|source| ZedImportError::Read {
        path: path.to_owned(),
        source,
    })?;
    let example = parse(&text)?;
    let dir = repository_dir(&example, repos, fetch)?;
    let repository = GitRepository::open(&dir).map_err(|e| ZedImportError::Repository {
        dir: dir.clone(),
        reason: e.to_string(),
    })?;
    if !repository.has_commit(&example.revision) {
        return Err(ZedImportError::Revision {
            revision: example.revision.clone(),
            dir,
        });
    }
    let tree =
        repository
            .commit_tree(&example.revision)
            .map_err(|e| ZedImportError::Repository {
                dir: dir.clone(),
                reason: e.to_string(),
            })?;
    let mut trajectory = example_trajectory(&example, &example_name(path), &|p| tree.text(p))?;
    trajectory.session.workspace = Some(dir.display().to_string());
    Ok(trajectory)
}

/// Where `example`'s repository is: `REPOS/OWNER/NAME`, else `REPOS/OWNER/NAME.git`,
/// else (with `fetch`) the latter fetched now.
fn repository_dir(
    example: &ZedExample,
    repos: &Path,
    fetch: bool,
) -> Result<PathBuf, ZedImportError> {
    let url = &example.repository_url;
    let name = owner_name(url).ok_or_else(|| ZedImportError::Url(url.clone()))?;
    let dir = repos.join(&name);
    let bare = repos.join(format!("{name}.git"));
    if let Some(found) = [&dir, &bare].into_iter().find(|d| d.is_dir()) {
        return Ok(found.clone());
    }
    if !fetch {
        return Err(ZedImportError::MissingRepository {
            url: url.clone(),
            dir,
        });
    }
    let outcome = fetch_repository(
        repos,
        &TestsetRepository {
            url: url.clone(),
            name,
            commits: vec![TestsetCommit {
                language: String::new(),
                sha: example.revision.clone(),
            }],
        },
    );
    let failed = outcome
        .error
        .or_else(|| outcome.failed.first().map(|(_, reason)| reason.clone()));
    match failed {
        Some(reason) => Err(ZedImportError::Fetch {
            url: url.clone(),
            dir: outcome.dir,
            reason,
        }),
        None => Ok(outcome.dir),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_urls_name_their_owner_and_repository() {
        let cases = [
            ("https://github.com/pallets/flask", Some("pallets/flask")),
            (
                "https://github.com/pallets/flask.git/",
                Some("pallets/flask"),
            ),
            ("git@github.com:pallets/flask.git", Some("pallets/flask")),
            ("file:///tmp/x/o/r", Some("o/r")),
            ("flask", None),
            ("https://h/../x", None),
        ];
        for (url, expected) in cases {
            assert_eq!(owner_name(url).as_deref(), expected, "{url}");
        }
    }
}
