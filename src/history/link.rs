//! Linking a recorded session to the commit that contains its edits.
//!
//! A session ends with some text in every file it edited. The commit that holds the
//! session's work is the first one (oldest first) after the session's starting HEAD
//! whose tree has exactly that text in every one of those files. Only commits
//! reachable from HEAD that descend from the starting commit are candidates (or, when
//! the start is unknown, the most recent ones), at most a bounded number of them.
//! Reads the repository through git2; never writes to it.

use std::path::{Path, PathBuf};

use super::HistoryError;
use crate::trajectory::CommitInfo;

/// Commits examined when nothing else bounds the walk.
pub const DEFAULT_LIMIT: usize = 500;

/// A file the session edited: its path in the repository and its final text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditedFile {
    /// Path relative to the repository's work tree, `/`-separated.
    pub path: String,
    /// The session's final text of the file.
    pub text: String,
}

/// A commit and which edited files it has the session's final text for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkCandidate {
    /// Full hex id.
    pub sha: String,
    /// First line of its message.
    pub summary: String,
    /// Files whose text in the commit equals the session's final text.
    pub matching: Vec<String>,
    /// Files whose text differs (or that the commit lacks).
    pub differing: Vec<String>,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkOutcome {
    /// The first commit that has every file's final text.
    Linked(LinkCandidate),
    /// None has; the one with the most matching files (newest on ties), if any commit was examined.
    NotFound {
        /// Commits examined.
        examined: usize,
        /// The closest commit.
        closest: Option<LinkCandidate>,
    },
}

fn open(dir: &Path) -> Result<git2::Repository, HistoryError> {
    let repo = git2::Repository::discover(dir).map_err(|source| HistoryError::Open {
        path: dir.display().to_string(),
        source,
    })?;
    super::source::check_objects(&repo, dir)?;
    Ok(repo)
}

/// The work tree root of the repository at or above `dir` (canonical).
pub fn repository_root(dir: &Path) -> Result<PathBuf, HistoryError> {
    let repo = open(dir)?;
    let root = repo.workdir().unwrap_or_else(|| repo.path());
    Ok(root.canonicalize().unwrap_or_else(|_| root.to_path_buf()))
}

/// Finds the commit that contains `files` as they are, among the descendants of
/// `since` reachable from HEAD (or the `limit` newest commits when `since` is unknown).
pub fn find_link(
    dir: &Path,
    since: Option<&str>,
    files: &[EditedFile],
    limit: usize,
) -> Result<LinkOutcome, HistoryError> {
    let repo = open(dir)?;
    let git = |what: &'static str| {
        move |source| HistoryError::Git {
            commit: "HEAD".to_string(),
            what,
            source,
        }
    };
    let head = repo
        .head()
        .and_then(|h| h.peel_to_commit())
        .map_err(|source| HistoryError::Revision {
            rev: "HEAD".to_string(),
            source,
        })?;
    // A start the repository does not know (another clone, rewritten history) is no bound.
    let base = since
        .and_then(|sha| git2::Oid::from_str(sha).ok())
        .filter(|oid| repo.find_commit(*oid).is_ok());
    let mut walk = repo.revwalk().map_err(git("walking history"))?;
    walk.push(head.id()).map_err(git("walking history"))?;
    if let Some(base) = base {
        walk.hide(base).map_err(git("walking history"))?;
    }
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
        .map_err(git("walking history"))?;
    let mut commits = Vec::new();
    for oid in walk {
        let oid = oid.map_err(git("walking history"))?;
        // Reachable from HEAD but not from the start may still be a side branch merged in.
        if let Some(base) = base
            && !repo
                .graph_descendant_of(oid, base)
                .map_err(git("walking history"))?
        {
            continue;
        }
        commits.push(oid);
        if commits.len() == limit {
            break;
        }
    }
    // Oldest first: the commit that introduced the text, not a later one that kept it.
    commits.reverse();
    let mut closest: Option<LinkCandidate> = None;
    for oid in &commits {
        let sha = oid.to_string();
        let commit = repo.find_commit(*oid).map_err(|source| HistoryError::Git {
            commit: sha.clone(),
            what: "reading the commit",
            source,
        })?;
        let tree = commit.tree().map_err(|source| HistoryError::Git {
            commit: sha.clone(),
            what: "reading the tree",
            source,
        })?;
        let (mut matching, mut differing) = (Vec::new(), Vec::new());
        for file in files {
            let same = tree
                .get_path(Path::new(&file.path))
                .ok()
                .and_then(|entry| repo.find_blob(entry.id()).ok())
                .is_some_and(|blob| blob.content() == file.text.as_bytes());
            if same {
                matching.push(file.path.clone());
            } else {
                differing.push(file.path.clone());
            }
        }
        let candidate = LinkCandidate {
            sha,
            summary: commit.summary().unwrap_or_default().to_string(),
            matching,
            differing,
        };
        if candidate.differing.is_empty() {
            return Ok(LinkOutcome::Linked(candidate));
        }
        if closest
            .as_ref()
            .is_none_or(|c| candidate.matching.len() >= c.matching.len())
        {
            closest = Some(candidate);
        }
    }
    Ok(LinkOutcome::NotFound {
        examined: commits.len(),
        closest,
    })
}

/// The header of commit `sha` in the repository at or above `dir`: parent, message
/// and the repository directory's name as the project.
pub fn commit_info(dir: &Path, sha: &str) -> Result<CommitInfo, HistoryError> {
    let repo = open(dir)?;
    let git = |what: &'static str| {
        move |source| HistoryError::Git {
            commit: sha.to_string(),
            what,
            source,
        }
    };
    let oid = git2::Oid::from_str(sha).map_err(git("parsing the commit id"))?;
    let commit = repo.find_commit(oid).map_err(git("reading the commit"))?;
    let root = repo.workdir().unwrap_or_else(|| repo.path());
    let project = root
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|name| name.trim_end_matches(".git").to_string());
    Ok(CommitInfo {
        sha: sha.to_string(),
        parent: commit.parent_id(0).ok().map(|p| p.to_string()),
        message: commit.message().map(str::to_string),
        project,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits `text` as f.txt; returns the id.
    fn commit(repo: &git2::Repository, text: &str, at: i64) -> String {
        std::fs::write(repo.workdir().unwrap().join("f.txt"), text).unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("f.txt")).unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let who = git2::Signature::new("T", "t@example.com", &git2::Time::new(at, 0)).unwrap();
        let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
        let parents: Vec<&git2::Commit> = parent.iter().collect();
        repo.commit(Some("HEAD"), &who, &who, text.trim(), &tree, &parents)
            .unwrap()
            .to_string()
    }

    fn linked(outcome: LinkOutcome) -> Option<String> {
        match outcome {
            LinkOutcome::Linked(c) => Some(c.sha),
            LinkOutcome::NotFound { .. } => None,
        }
    }

    #[test]
    fn unknown_starts_search_the_newest_commits_oldest_first() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init(tmp.path()).unwrap();
        let c0 = commit(&repo, "zero\n", 1_000);
        let c1 = commit(&repo, "one\n", 2_000);
        commit(&repo, "other\n", 3_000);
        let c3 = commit(&repo, "one\n", 4_000);
        let files = [EditedFile {
            path: "f.txt".into(),
            text: "one\n".into(),
        }];
        // No start: the oldest commit with the text wins.
        assert_eq!(
            linked(find_link(tmp.path(), None, &files, 500).unwrap()),
            Some(c1.clone())
        );
        // A start this repository does not know is no start.
        let unknown = "0123456789012345678901234567890123456789";
        assert_eq!(
            linked(find_link(tmp.path(), Some(unknown), &files, 500).unwrap()),
            Some(c1)
        );
        // The bound keeps only the newest commits.
        assert_eq!(
            linked(find_link(tmp.path(), None, &files, 2).unwrap()),
            Some(c3.clone())
        );
        // After c1 only c3 has it again; after c3 nothing is left to examine.
        assert_eq!(
            linked(
                find_link(
                    tmp.path(),
                    Some(&commit_info(tmp.path(), &c3).unwrap().parent.unwrap()),
                    &files,
                    500
                )
                .unwrap()
            ),
            Some(c3.clone())
        );
        assert_eq!(
            find_link(tmp.path(), Some(&c3), &files, 500).unwrap(),
            LinkOutcome::NotFound {
                examined: 0,
                closest: None
            }
        );
        let info = commit_info(tmp.path(), &c0).unwrap();
        assert_eq!((info.parent, info.message.as_deref()), (None, Some("zero")));
    }
}
