//! Historian's testset (`{language: [{commit_url, …}]}`) → the repositories to fetch and
//! the commits of each.
//!
//! A commit URL is `<repository URL>/commit/<sha>` (GitHub's form). The repository URL
//! must be `https://`, `http://`, `git://`, `ssh://`, `file://` or an absolute path: other
//! git transports (`ext::`, which runs a command) and anything starting with `-` (an
//! option to git) are refused. The sha must be a full hex object id, since git fetches
//! commits by full id only. Each repository gets the local name `OWNER/NAME` from the
//! last two segments of its URL (a trailing `.git` dropped), which must be plain names.
//!
//! Pure: parsed JSON in, typed entries and per-entry problems out.

use serde_json::Value;

/// One commit of the testset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestsetCommit {
    /// The testset's language key (`python`, `go`, …).
    pub language: String,
    /// Full hex object id.
    pub sha: String,
}

/// A repository of the testset with the commits it must provide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestsetRepository {
    /// Where git fetches from, as written before `/commit/`.
    pub url: String,
    /// The local name, `OWNER/NAME` (two plain path segments).
    pub name: String,
    /// Its commits, in testset order, each once.
    pub commits: Vec<TestsetCommit>,
}

/// An entry of the testset that names no usable commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{language}[{index}]: {reason}")]
pub struct EntryProblem {
    /// The language key the entry is under.
    pub language: String,
    /// Its 0-based position in that language's list.
    pub index: usize,
    /// What is wrong with it.
    pub reason: String,
}

/// The testset as repositories to fetch, and the entries that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Testset {
    /// Repositories in order of first appearance.
    pub repositories: Vec<TestsetRepository>,
    /// Entries left out, with why.
    pub problems: Vec<EntryProblem>,
    /// Commits listed more than once (kept once).
    pub duplicates: usize,
}

impl Testset {
    /// How many distinct commits the repositories hold.
    pub fn commit_count(&self) -> usize {
        self.repositories.iter().map(|r| r.commits.len()).sum()
    }
}

/// Why one testset entry is left out (its commit URL, or where it would be cloned).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// No `/commit/` in the URL.
    #[error("expected <repository URL>/commit/<sha>")]
    NoCommit,
    /// The commit is not named by a full id.
    #[error("`{0}` is not a full commit id (40 or 64 hex digits)")]
    NotAnId(String),
    /// The repository URL has no `OWNER/NAME` path.
    #[error("`{0}` has no OWNER/NAME path to name its clone")]
    NoName(String),
    /// A path segment that is not a plain directory name.
    #[error("`{segment}` in `{url}` is not a plain name for a directory")]
    NotPlain {
        /// The segment.
        segment: String,
        /// The repository URL.
        url: String,
    },
    /// A URL git is not allowed to fetch from.
    #[error(
        "`{0}`: only https://, http://, git://, ssh://, file:// URLs and absolute paths are fetched"
    )]
    Scheme(String),
    /// Two repositories with one local name.
    #[error("`{url}` and `{other}` would both be cloned into {name}")]
    SameName {
        /// The URL of this entry.
        url: String,
        /// The URL of the repository already there.
        other: String,
        /// The local name.
        name: String,
    },
}

/// The document is not a testset at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Historian testset: {0}")]
pub struct NotATestset(String);

/// Reads a parsed testset document: `{language: [{"commit_url": …}, …], …}`, the
/// languages in name order.
pub fn parse_testset(document: &Value) -> Result<Testset, NotATestset> {
    let languages = document.as_object().ok_or_else(|| {
        NotATestset("expected an object of language → list of {\"commit_url\": …}".into())
    })?;
    let mut testset = Testset::default();
    // Languages in name order, whatever order the JSON map keeps.
    let mut languages: Vec<(&String, &Value)> = languages.iter().collect();
    languages.sort_by_key(|(name, _)| *name);
    for (language, entries) in languages {
        let entries = entries
            .as_array()
            .ok_or_else(|| NotATestset(format!("`{language}` is not a list of entries")))?;
        for (index, entry) in entries.iter().enumerate() {
            let problem = |reason: String| EntryProblem {
                language: language.clone(),
                index,
                reason,
            };
            let Some(url) = entry.get("commit_url").and_then(Value::as_str) else {
                testset
                    .problems
                    .push(problem("no `commit_url` string".into()));
                continue;
            };
            match parse_commit_url(url) {
                Ok((repo_url, name, sha)) => {
                    if let Err(reason) = testset.add(repo_url, name, language, sha) {
                        testset.problems.push(problem(reason.to_string()));
                    }
                }
                Err(reason) => testset.problems.push(problem(format!("`{url}`: {reason}"))),
            }
        }
    }
    Ok(testset)
}

impl Testset {
    fn add(
        &mut self,
        url: &str,
        name: String,
        language: &str,
        sha: &str,
    ) -> Result<(), EntryError> {
        let key = same_repository_key(url);
        let index = match self
            .repositories
            .iter()
            .position(|r| same_repository_key(&r.url) == key)
        {
            Some(i) => i,
            None => {
                if let Some(other) = self.repositories.iter().find(|r| r.name == name) {
                    return Err(EntryError::SameName {
                        url: url.to_owned(),
                        other: other.url.clone(),
                        name,
                    });
                }
                self.repositories.push(TestsetRepository {
                    url: url.to_owned(),
                    name,
                    commits: Vec::new(),
                });
                self.repositories.len() - 1
            }
        };
        let commits = &mut self.repositories[index].commits;
        if commits.iter().any(|c| c.sha == sha) {
            self.duplicates += 1;
        } else {
            commits.push(TestsetCommit {
                language: language.to_owned(),
                sha: sha.to_ascii_lowercase(),
            });
        }
        Ok(())
    }
}

/// `https://github.com/a/b.git/` and `https://github.com/a/b` are one repository.
fn same_repository_key(url: &str) -> &str {
    let url = url.trim_end_matches('/');
    url.strip_suffix(".git").unwrap_or(url)
}

/// Splits `<repository URL>/commit/<sha>` into the URL, the local name and the sha.
pub fn parse_commit_url(url: &str) -> Result<(&str, String, &str), EntryError> {
    let (repo_url, sha) = url.rsplit_once("/commit/").ok_or(EntryError::NoCommit)?;
    let sha = sha.trim_end_matches('/');
    if !(sha.len() == 40 || sha.len() == 64) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(EntryError::NotAnId(sha.to_owned()));
    }
    let path = repository_path(repo_url)?;
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let [.., owner, name] = segments.as_slice() else {
        return Err(EntryError::NoName(repo_url.to_owned()));
    };
    let name: &str = name.strip_suffix(".git").unwrap_or(*name);
    for segment in [*owner, name] {
        let plain = segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if segment.is_empty() || segment.starts_with('.') || segment.starts_with('-') || !plain {
            return Err(EntryError::NotPlain {
                segment: segment.to_owned(),
                url: repo_url.to_owned(),
            });
        }
    }
    Ok((repo_url, format!("{owner}/{name}"), sha))
}

/// The path part of a repository URL git may fetch from, or why it may not.
fn repository_path(repo_url: &str) -> Result<&str, EntryError> {
    if repo_url.starts_with('/') {
        return Ok(repo_url);
    }
    for scheme in ["https://", "http://", "git://", "ssh://", "file://"] {
        if let Some(rest) = repo_url.strip_prefix(scheme) {
            // file:///path has an empty host; the others name one.
            let path = if scheme == "file://" {
                rest
            } else {
                rest.split_once('/').map(|(_, p)| p).unwrap_or_default()
            };
            return Ok(path);
        }
    }
    Err(EntryError::Scheme(repo_url.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SHA: &str = "0359c083d13289a4879ce25216beb689ec17a772";

    #[test]
    fn github_urls_group_by_repository() {
        let doc = json!({
            "python": [
                {"commit_url": format!("https://github.com/zulip/zulip/commit/{SHA}")},
                {"commit_url": format!("https://github.com/zulip/zulip.git/commit/{}", SHA.replace('0', "1"))},
                {"commit_url": format!("https://github.com/zulip/zulip/commit/{SHA}")},
            ],
            "go": [{"commit_url": format!("file:///tmp/r/hashicorp/nomad/commit/{SHA}")}],
        });
        let testset = parse_testset(&doc).unwrap();
        let mut names: Vec<(&str, &str, usize)> = testset
            .repositories
            .iter()
            .map(|r| (r.url.as_str(), r.name.as_str(), r.commits.len()))
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                ("file:///tmp/r/hashicorp/nomad", "hashicorp/nomad", 1),
                ("https://github.com/zulip/zulip", "zulip/zulip", 2)
            ]
        );
        assert_eq!(testset.duplicates, 1);
        assert_eq!(testset.commit_count(), 3);
        assert!(testset.problems.is_empty());
    }

    #[test]
    fn bad_entries_are_named_and_left_out() {
        let doc = json!({"java": [
            {"commit_url": "https://github.com/a/b/commit/abc123"},
            {"commit_url": format!("ext::sh -c touch% /tmp/x/a/b/commit/{SHA}")},
            {"commit_url": format!("https://github.com/../b/commit/{SHA}")},
            {"url": "x"},
            {"commit_url": format!("https://github.com/b/commit/{SHA}")},
        ]});
        let problems: Vec<String> = parse_testset(&doc)
            .unwrap()
            .problems
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            problems,
            [
                "java[0]: `https://github.com/a/b/commit/abc123`: `abc123` is not a full commit id (40 or 64 hex digits)".to_owned(),
                format!("java[1]: `ext::sh -c touch% /tmp/x/a/b/commit/{SHA}`: `ext::sh -c touch% /tmp/x/a/b`: only https://, http://, git://, ssh://, file:// URLs and absolute paths are fetched"),
                format!("java[2]: `https://github.com/../b/commit/{SHA}`: `..` in `https://github.com/../b` is not a plain name for a directory"),
                "java[3]: no `commit_url` string".to_owned(),
                format!("java[4]: `https://github.com/b/commit/{SHA}`: `https://github.com/b` has no OWNER/NAME path to name its clone"),
            ]
        );
    }

    #[test]
    fn two_urls_for_one_directory_are_refused() {
        let doc = json!({"go": [
            {"commit_url": format!("https://github.com/a/b/commit/{SHA}")},
            {"commit_url": format!("https://gitlab.com/a/b/commit/{SHA}")},
        ]});
        let testset = parse_testset(&doc).unwrap();
        assert_eq!(testset.repositories.len(), 1);
        assert_eq!(
            testset.problems[0].reason,
            "`https://gitlab.com/a/b` and `https://github.com/a/b` would both be cloned into a/b"
        );
    }

    #[test]
    fn a_list_is_not_a_testset() {
        assert!(parse_testset(&json!([1])).is_err());
        assert!(parse_testset(&json!({"go": 1})).is_err());
    }
}
