//! Linking a recorded session to the commit that contains its edits.
//!
//! A session ends with some text in every file it edited. The commit that holds the
//! session's work is the first one (oldest first) after the session's starting HEAD
//! whose tree has exactly that text in every one of those files. Only commits
//! reachable from HEAD that descend from the starting commit are candidates (or, when
//! the start is unknown, the most recent ones), at most a bounded number of them.
//! Reads the repository through [`GitRepository`]; never writes to it. It also reads
//! the linked commit's header, which the CLI puts into the session's `session.commit`.

use std::path::{Path, PathBuf};

use super::HistoryError;
use super::source::{CommitSource, GitRepository};
use crate::core::trajectory::CommitInfo;

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

/// The work tree root of the repository at or above `dir` (canonical).
pub fn repository_root(dir: &Path) -> Result<PathBuf, HistoryError> {
    Ok(GitRepository::discover(dir)?.root())
}

/// Finds the commit that contains `files` as they are, among the descendants of
/// `since` reachable from HEAD (or the `limit` newest commits when `since` is unknown).
pub fn find_link(
    dir: &Path,
    since: Option<&str>,
    files: &[EditedFile],
    limit: usize,
) -> Result<LinkOutcome, HistoryError> {
    let repo = GitRepository::discover(dir)?;
    // A start the repository does not know (another clone, rewritten history) is no bound.
    let base = since.filter(|sha| repo.has_commit(sha));
    let mut commits = Vec::new();
    for sha in repo.walk_from_head(base)? {
        commits.push(sha?);
        if commits.len() == limit {
            break;
        }
    }
    // Oldest first: the commit that introduced the text, not a later one that kept it.
    commits.reverse();
    let mut closest: Option<LinkCandidate> = None;
    for sha in &commits {
        let tree = repo.commit_tree(sha)?;
        let (mut matching, mut differing) = (Vec::new(), Vec::new());
        for file in files {
            if tree.holds(&file.path, file.text.as_bytes()) {
                matching.push(file.path.clone());
            } else {
                differing.push(file.path.clone());
            }
        }
        let candidate = LinkCandidate {
            sha: sha.clone(),
            summary: tree.summary(),
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
    let repo = GitRepository::discover(dir)?;
    let header = repo.commit_header(sha)?;
    Ok(CommitInfo {
        sha: sha.to_string(),
        parent: header.parent,
        message: header.message,
        project: repo.project(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits `text` as f.txt at time `at` with the git command line; returns the id.
    fn commit(dir: &Path, text: &str, at: i64) -> String {
        std::fs::write(dir.join("f.txt"), text).unwrap();
        let date = format!("@{at} +0000");
        let git = |args: &[&str], stdin: &str| {
            use std::io::Write;
            let mut child = std::process::Command::new("git")
                .args(args)
                .current_dir(dir)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_AUTHOR_NAME", "T")
                .env("GIT_AUTHOR_EMAIL", "t@example.com")
                .env("GIT_COMMITTER_NAME", "T")
                .env("GIT_COMMITTER_EMAIL", "t@example.com")
                .env("GIT_AUTHOR_DATE", &date)
                .env("GIT_COMMITTER_DATE", &date)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(stdin.as_bytes())
                .unwrap();
            let output = child.wait_with_output().unwrap();
            assert!(output.status.success(), "git {args:?}: {output:?}");
            String::from_utf8(output.stdout).unwrap()
        };
        if !dir.join(".git").exists() {
            git(&["init", "--quiet"], "");
        }
        git(&["add", "f.txt"], "");
        // The message as given, without the newline `git commit -m` would add.
        git(
            &["commit", "--quiet", "--cleanup=verbatim", "-F", "-"],
            text.trim(),
        );
        git(&["rev-parse", "HEAD"], "").trim().to_string()
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
        let c0 = commit(tmp.path(), "zero\n", 1_000);
        let c1 = commit(tmp.path(), "one\n", 2_000);
        commit(tmp.path(), "other\n", 3_000);
        let c3 = commit(tmp.path(), "one\n", 4_000);
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
