//! Where commits come from: the [`CommitSource`] seam and its git2 implementation.
//!
//! The derive logic only sees [`CommitRecord`]s (metadata plus the changed files'
//! bytes), so it can be tested on in-memory commits; [`GitRepository`] is the one
//! place that talks to libgit2.

use std::path::Path;

use super::HistoryError;

/// How a file changed between parent and commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeStatus {
    /// The file is new.
    Added,
    /// The file was removed.
    Deleted,
    /// The file changed in place.
    Modified,
    /// The file moved (and maybe changed); `old_path` differs from `new_path`.
    Renamed,
    /// The entry changed type (file ↔ symlink ↔ submodule).
    TypeChanged,
}

impl ChangeStatus {
    /// Lowercase name used in trajectories (`files[].status`).
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeStatus::Added => "added",
            ChangeStatus::Deleted => "deleted",
            ChangeStatus::Modified => "modified",
            ChangeStatus::Renamed => "renamed",
            ChangeStatus::TypeChanged => "type_changed",
        }
    }
}

/// What kind of tree entry a side of a change is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular (possibly executable) file.
    File,
    /// A symbolic link: the bytes are the link target.
    Symlink,
    /// A submodule commit (gitlink): there are no bytes.
    Submodule,
}

/// One changed path with both versions' bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// Added, deleted, modified, renamed or type-changed.
    pub status: ChangeStatus,
    /// Path in the parent (`None` when added).
    pub old_path: Option<String>,
    /// Path in the commit (`None` when deleted).
    pub new_path: Option<String>,
    /// Bytes in the parent (`None` when added).
    pub old: Option<Vec<u8>>,
    /// Bytes in the commit (`None` when deleted).
    pub new: Option<Vec<u8>>,
    /// What the entry is on the side that exists (the new side when both exist).
    pub entry: EntryKind,
    /// A path is not valid UTF-8: its invalid bytes are shown as `%XX` (so two such
    /// names stay distinct) and the file is skipped.
    pub path_not_utf8: bool,
}

impl FileChange {
    /// The path a reader knows the file by: the new path, else the old one.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or("")
    }
}

/// A commit as derive needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRecord {
    /// Full hex id.
    pub sha: String,
    /// Full hex ids of the parents.
    pub parents: Vec<String>,
    /// Full message.
    pub message: String,
    /// Changed files against the only parent (or the empty tree for a root commit),
    /// in diff order (git's path order). Empty for merge commits, which derive refuses.
    pub changes: Vec<FileChange>,
}

/// What to do with merge commits in a range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Merges {
    /// Leave them out: a merge has no single change to derive.
    #[default]
    Skip,
    /// Take the merge's change against its first parent (the branch it was merged
    /// into), as `git log --first-parent -p` shows it.
    FirstParent,
}

/// The commits of a range to work on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Commits, oldest first.
    pub commits: Vec<String>,
    /// Merges left out ([`Merges::Skip`]).
    pub merges_skipped: usize,
}

/// The commits of `spec` (see [`CommitSource::range`]), merges left out unless
/// `merges` keeps them.
pub fn select(
    source: &dyn CommitSource,
    spec: &str,
    merges: Merges,
) -> Result<Selection, HistoryError> {
    let mut selection = Selection {
        commits: Vec::new(),
        merges_skipped: 0,
    };
    for sha in source.range(spec)? {
        if merges == Merges::Skip && source.is_merge(&sha)? {
            selection.merges_skipped += 1;
        } else {
            selection.commits.push(sha);
        }
    }
    Ok(selection)
}

/// Anything that can list and load commits.
pub trait CommitSource {
    /// Resolves a revision (`HEAD~3`, a short id, a branch) to a full commit id.
    fn resolve(&self, rev: &str) -> Result<String, HistoryError>;
    /// The commits of a revision range as git reads it (`A..B`: reachable from B, not
    /// from A; `A...B`: from either, not both; `R^!`: R alone; `R`: R and every
    /// ancestor), oldest first.
    fn range(&self, spec: &str) -> Result<Vec<String>, HistoryError>;
    /// Loads one commit and its changes against its parent (a merge: no changes, and
    /// derive refuses it).
    fn load(&self, sha: &str) -> Result<CommitRecord, HistoryError> {
        self.load_with(sha, Merges::Skip)
    }
    /// Loads one commit; a merge is skipped (no changes) or diffed against its first
    /// parent as if that were its only one, as `merges` says.
    fn load_with(&self, sha: &str, merges: Merges) -> Result<CommitRecord, HistoryError>;
    /// Whether a commit has more than one parent.
    fn is_merge(&self, sha: &str) -> Result<bool, HistoryError>;
    /// A name for the project (the repository directory name).
    fn project(&self) -> Option<String>;
    /// Writes the whole tree of commit `sha` into `dir` (for language servers).
    fn checkout(&self, sha: &str, dir: &Path) -> Result<(), HistoryError>;
}

/// Checks the loose objects of `repo` before libgit2 reads any (see [`super::odb`]).
pub(crate) fn check_objects(repo: &git2::Repository, path: &Path) -> Result<(), HistoryError> {
    super::odb::check_loose_objects(&repo.commondir().join("objects"))
        .map(|_| ())
        .map_err(|object| HistoryError::Corrupt {
            path: path.display().to_string(),
            object,
        })
}

/// A git path as text: valid UTF-8 as it is, each byte of an invalid sequence as
/// `%XX` (`a\xe9.py` → `a%E9.py`), so distinct names stay distinct, unlike U+FFFD.
pub fn path_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A git repository on disk, read through libgit2.
pub struct GitRepository {
    repo: git2::Repository,
    project: Option<String>,
}

impl GitRepository {
    /// Opens the repository at (or above) `path`.
    pub fn open(path: &Path) -> Result<GitRepository, HistoryError> {
        let repo = git2::Repository::open(path).map_err(|source| HistoryError::Open {
            path: path.display().to_string(),
            source,
        })?;
        check_objects(&repo, path)?;
        let root = repo.workdir().unwrap_or_else(|| repo.path());
        let project = root
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .map(|name| name.trim_end_matches(".git").to_string());
        Ok(GitRepository { repo, project })
    }

    fn git(&self, sha: &str, what: &'static str) -> impl Fn(git2::Error) -> HistoryError + '_ {
        let sha = sha.to_string();
        move |source| HistoryError::Git {
            commit: sha.clone(),
            what,
            source,
        }
    }

    fn blob(
        &self,
        sha: &str,
        oid: git2::Oid,
        mode: git2::FileMode,
    ) -> Result<Option<Vec<u8>>, HistoryError> {
        if oid.is_zero() || mode == git2::FileMode::Commit {
            return Ok(None);
        }
        let blob = self
            .repo
            .find_blob(oid)
            .map_err(self.git(sha, "reading a blob"))?;
        Ok(Some(blob.content().to_vec()))
    }
}

fn entry_kind(mode: git2::FileMode) -> EntryKind {
    match mode {
        git2::FileMode::Link => EntryKind::Symlink,
        git2::FileMode::Commit => EntryKind::Submodule,
        _ => EntryKind::File,
    }
}

impl CommitSource for GitRepository {
    fn resolve(&self, rev: &str) -> Result<String, HistoryError> {
        let object = self
            .repo
            .revparse_single(rev)
            .map_err(|source| HistoryError::Revision {
                rev: rev.to_string(),
                source,
            })?;
        let commit = object
            .peel_to_commit()
            .map_err(|source| HistoryError::Revision {
                rev: rev.to_string(),
                source,
            })?;
        Ok(commit.id().to_string())
    }

    fn range(&self, spec: &str) -> Result<Vec<String>, HistoryError> {
        let revision = |source| HistoryError::Revision {
            rev: spec.to_string(),
            source,
        };
        let mut walk = self.repo.revwalk().map_err(revision)?;
        // As git reads revision ranges (gitrevisions(7)): `A..B`, `A...B` (either side,
        // not both), `R^!` (R alone), `R` (R and all its ancestors).
        if let Some(single) = spec.strip_suffix("^!") {
            return Ok(vec![self.resolve(single)?]);
        }
        let parsed = self.repo.revparse(spec).map_err(revision)?;
        let commit = |object: Option<&git2::Object>| -> Result<Option<git2::Oid>, HistoryError> {
            object
                .map(|o| o.peel_to_commit().map(|c| c.id()).map_err(revision))
                .transpose()
        };
        let (from, to) = (commit(parsed.from())?, commit(parsed.to())?);
        let mode = parsed.mode();
        if mode.contains(git2::RevparseMode::MERGE_BASE) {
            let (Some(a), Some(b)) = (from, to) else {
                return Ok(Vec::new());
            };
            walk.push(a).map_err(revision)?;
            walk.push(b).map_err(revision)?;
            if let Ok(base) = self.repo.merge_base(a, b) {
                walk.hide(base).map_err(revision)?;
            }
        } else if mode.contains(git2::RevparseMode::RANGE) {
            // An empty side means HEAD (`A..` = `A..HEAD`).
            let head = || self.resolve("HEAD")?.parse().map_err(revision);
            walk.push(match to {
                Some(to) => to,
                None => head()?,
            })
            .map_err(revision)?;
            walk.hide(match from {
                Some(from) => from,
                None => head()?,
            })
            .map_err(revision)?;
        } else if let Some(single) = from {
            walk.push(single).map_err(revision)?;
        }
        // Oldest first, parents before children, so a batch reads like history.
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)
            .map_err(revision)?;
        walk.map(|oid| oid.map(|o| o.to_string()).map_err(revision))
            .collect()
    }

    fn load_with(&self, sha: &str, merges: Merges) -> Result<CommitRecord, HistoryError> {
        let oid = git2::Oid::from_str(sha).map_err(self.git(sha, "parsing the commit id"))?;
        let commit = self
            .repo
            .find_commit(oid)
            .map_err(self.git(sha, "finding the commit"))?;
        let parents: Vec<String> = commit.parent_ids().map(|p| p.to_string()).collect();
        let message = String::from_utf8_lossy(commit.message_bytes()).into_owned();
        let mut record = CommitRecord {
            sha: sha.to_string(),
            parents,
            message,
            changes: Vec::new(),
        };
        if record.parents.len() > 1 {
            match merges {
                Merges::Skip => return Ok(record),
                Merges::FirstParent => record.parents.truncate(1),
            }
        }
        let tree = commit.tree().map_err(self.git(sha, "reading the tree"))?;
        let parent_tree = match commit.parents().next() {
            Some(parent) => Some(
                parent
                    .tree()
                    .map_err(self.git(sha, "reading the parent tree"))?,
            ),
            None => None,
        };
        let mut options = git2::DiffOptions::new();
        options.include_typechange(true).ignore_submodules(false);
        let mut diff = self
            .repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut options))
            .map_err(self.git(sha, "diffing against the parent"))?;
        // git's defaults: exact and ≥50% similar renames, no copies.
        let mut find = git2::DiffFindOptions::new();
        find.renames(true).rename_threshold(50);
        diff.find_similar(Some(&mut find))
            .map_err(self.git(sha, "detecting renames"))?;
        for delta in diff.deltas() {
            let status = match delta.status() {
                git2::Delta::Added => ChangeStatus::Added,
                git2::Delta::Deleted => ChangeStatus::Deleted,
                git2::Delta::Renamed => ChangeStatus::Renamed,
                git2::Delta::Typechange => ChangeStatus::TypeChanged,
                _ => ChangeStatus::Modified,
            };
            let old_file = delta.old_file();
            let new_file = delta.new_file();
            let path_of = |file: &git2::DiffFile| file.path_bytes().map(path_text);
            let path_not_utf8 = [&old_file, &new_file].iter().any(|f| {
                f.path_bytes()
                    .is_some_and(|b| std::str::from_utf8(b).is_err())
            });
            let (old_path, new_path) = match status {
                ChangeStatus::Added => (None, path_of(&new_file)),
                ChangeStatus::Deleted => (path_of(&old_file), None),
                _ => (path_of(&old_file), path_of(&new_file)),
            };
            let old = if status == ChangeStatus::Added {
                None
            } else {
                self.blob(sha, old_file.id(), old_file.mode())?
            };
            let new = if status == ChangeStatus::Deleted {
                None
            } else {
                self.blob(sha, new_file.id(), new_file.mode())?
            };
            let entry = if status == ChangeStatus::Deleted {
                entry_kind(old_file.mode())
            } else if entry_kind(old_file.mode()) == EntryKind::Submodule {
                EntryKind::Submodule
            } else {
                entry_kind(new_file.mode())
            };
            record.changes.push(FileChange {
                status,
                old_path,
                new_path,
                old,
                new,
                entry,
                path_not_utf8,
            });
        }
        Ok(record)
    }

    fn is_merge(&self, sha: &str) -> Result<bool, HistoryError> {
        let oid = git2::Oid::from_str(sha).map_err(self.git(sha, "parsing the commit id"))?;
        let commit = self
            .repo
            .find_commit(oid)
            .map_err(self.git(sha, "finding the commit"))?;
        Ok(commit.parent_count() > 1)
    }

    fn project(&self) -> Option<String> {
        self.project.clone()
    }

    fn checkout(&self, sha: &str, dir: &Path) -> Result<(), HistoryError> {
        let oid = git2::Oid::from_str(sha).map_err(self.git(sha, "parsing the commit id"))?;
        let tree = self
            .repo
            .find_commit(oid)
            .and_then(|c| c.tree())
            .map_err(self.git(sha, "reading the tree"))?;
        std::fs::create_dir_all(dir).map_err(|source| HistoryError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let mut checkout = git2::build::CheckoutBuilder::new();
        // Into a scratch directory, leaving the repository's own index and work tree alone.
        checkout
            .target_dir(dir)
            .force()
            .recreate_missing(true)
            .update_index(false);
        self.repo
            .checkout_tree(tree.as_object(), Some(&mut checkout))
            .map_err(self.git(sha, "writing the tree to a scratch directory"))
    }
}
