//! Where commits come from: the [`CommitSource`] seam and its git2 implementation.
//!
//! The derive logic only sees [`CommitRecord`]s (metadata plus the changed files'
//! bytes), so it can be tested on in-memory commits. This file is the one place that
//! talks to libgit2 (`tests/it/tidy.rs` checks it): [`GitRepository`] reads commits,
//! trees, blobs and history (walks from HEAD); [`diff_hunks`] is git's own line diff;
//! [`head_of`] resolves a workspace's HEAD without reading objects (for `proxy::tap`);
//! [`write_bare_repository`] builds the two-commit repositories EditFlow samples are
//! rebuilt into. Other modules see typed results and [`GitError`], never `git2` types.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::HistoryError;

/// A libgit2 failure, worded as libgit2 words it (the form `git2::Error` takes outside
/// this file; it prints and chains exactly like the error it wraps).
#[derive(thiserror::Error)]
#[error(transparent)]
pub struct GitError(#[from] git2::Error);

impl std::fmt::Debug for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

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

/// A `--merges` value that is neither `skip` nor `first-parent`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: use skip or first-parent")]
pub struct MergesError(String);

impl std::str::FromStr for Merges {
    type Err = MergesError;

    fn from_str(value: &str) -> Result<Merges, MergesError> {
        match value {
            "skip" => Ok(Merges::Skip),
            "first-parent" => Ok(Merges::FirstParent),
            other => Err(MergesError(other.to_owned())),
        }
    }
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
    /// Turns `dir`, which holds the tree of commit `from`, into the tree of `to`:
    /// writes the files that differ and removes the ones `to` lacks (kept language
    /// servers are told of exactly these). Returns each changed path, relative.
    fn update_checkout(
        &self,
        from: &str,
        to: &str,
        dir: &Path,
    ) -> Result<Vec<TreeChange>, HistoryError>;
}

/// One file of a written tree that [`CommitSource::update_checkout`] changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeChange {
    /// The path, relative to the tree's root.
    pub path: String,
    /// What happened to it.
    pub kind: TreeChangeKind,
}

/// What happened to a file of a written tree (LSP's `FileChangeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeChangeKind {
    /// It did not exist before.
    Created,
    /// Its content changed.
    Changed,
    /// It was removed.
    Deleted,
}

/// Checks the loose objects of `repo` before libgit2 reads any (see [`super::odb`]).
fn check_objects(repo: &git2::Repository, path: &Path) -> Result<(), HistoryError> {
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

/// A repository path as a trajectory names its workspace: absolute, so a stored
/// session still names it when read from another directory (`--repo .` is not `.`).
pub fn workspace_name(repo: &Path) -> String {
    std::path::absolute(repo)
        .unwrap_or_else(|_| repo.to_path_buf())
        .display()
        .to_string()
}

/// The header of a commit: what a linked session's `session.commit` carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitHeader {
    /// Full hex id of the first parent (`None` for a root commit).
    pub parent: Option<String>,
    /// Full message (`None` when it is not UTF-8).
    pub message: Option<String>,
}

/// One commit's tree, for comparing files against it.
pub struct CommitTree<'r> {
    repo: &'r git2::Repository,
    commit: git2::Commit<'r>,
    tree: git2::Tree<'r>,
}

impl CommitTree<'_> {
    /// The first line of the commit's message (empty when it is not UTF-8).
    pub fn summary(&self) -> String {
        self.commit.summary().unwrap_or_default().to_string()
    }

    /// The UTF-8 text of the blob at `path` (`None` when there is none, or it is not text).
    pub fn text(&self, path: &str) -> Option<String> {
        let entry = self.tree.get_path(Path::new(path)).ok()?;
        let blob = self.repo.find_blob(entry.id()).ok()?;
        String::from_utf8(blob.content().to_vec()).ok()
    }

    /// Whether the tree has a blob at `path` whose bytes are exactly `bytes`.
    pub fn holds(&self, path: &str, bytes: &[u8]) -> bool {
        self.tree
            .get_path(Path::new(path))
            .ok()
            .and_then(|entry| self.repo.find_blob(entry.id()).ok())
            .is_some_and(|blob| blob.content() == bytes)
    }
}

/// The commits reachable from HEAD, newest first (topological, then by time), that
/// descend from a base when there is one (`git rev-list --ancestry-path base..HEAD`).
pub struct HeadWalk<'r> {
    repo: &'r git2::Repository,
    walk: git2::Revwalk<'r>,
    base: Option<git2::Oid>,
}

/// A failure while walking history from HEAD.
fn walking(source: git2::Error) -> HistoryError {
    HistoryError::Git {
        commit: "HEAD".to_string(),
        what: "walking history",
        source: source.into(),
    }
}

impl Iterator for HeadWalk<'_> {
    type Item = Result<String, HistoryError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let oid = match self.walk.next()? {
                Ok(oid) => oid,
                Err(source) => return Some(Err(walking(source))),
            };
            // Reachable from HEAD but not from the base may still be a side branch merged in.
            if let Some(base) = self.base {
                match self.repo.graph_descendant_of(oid, base) {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(source) => return Some(Err(walking(source))),
                }
            }
            return Some(Ok(oid.to_string()));
        }
    }
}

/// The name a repository's directory gives its project (`foo.git` → `foo`).
fn project_of(repo: &git2::Repository) -> Option<String> {
    repo.workdir()
        .unwrap_or_else(|| repo.path())
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .map(|name| name.trim_end_matches(".git").to_string())
}

/// An error of a libgit2 operation on commit `commit`.
fn git(commit: &str, what: &'static str) -> impl Fn(git2::Error) -> HistoryError {
    let commit = commit.to_string();
    move |source| HistoryError::Git {
        commit: commit.clone(),
        what,
        source: source.into(),
    }
}

impl GitRepository {
    /// Opens the repository at `path`.
    pub fn open(path: &Path) -> Result<GitRepository, HistoryError> {
        let repo = git2::Repository::open(path).map_err(|source| HistoryError::Open {
            path: path.display().to_string(),
            source: source.into(),
        })?;
        check_objects(&repo, path)?;
        let project = project_of(&repo);
        Ok(GitRepository { repo, project })
    }

    /// Opens the repository at or above `dir`.
    pub fn discover(dir: &Path) -> Result<GitRepository, HistoryError> {
        let repo = git2::Repository::discover(dir).map_err(|source| HistoryError::Open {
            path: dir.display().to_string(),
            source: source.into(),
        })?;
        check_objects(&repo, dir)?;
        let project = project_of(&repo);
        Ok(GitRepository { repo, project })
    }

    /// The work tree root (the repository directory itself when bare), canonical when
    /// it can be.
    pub fn root(&self) -> PathBuf {
        let root = self.repo.workdir().unwrap_or_else(|| self.repo.path());
        root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
    }

    /// The full id of the commit HEAD points to.
    pub fn head(&self) -> Result<String, HistoryError> {
        self.repo
            .head()
            .and_then(|h| h.peel_to_commit())
            .map(|c| c.id().to_string())
            .map_err(|source| HistoryError::Revision {
                rev: "HEAD".to_string(),
                source: source.into(),
            })
    }

    /// Whether `sha` is a full commit id this repository has.
    pub fn has_commit(&self, sha: &str) -> bool {
        git2::Oid::from_str(sha).is_ok_and(|oid| self.repo.find_commit(oid).is_ok())
    }

    /// The commits reachable from HEAD, newest first, that descend from `base` (every
    /// one when `base` is `None`); `base` must be a commit of this repository.
    pub fn walk_from_head(&self, base: Option<&str>) -> Result<HeadWalk<'_>, HistoryError> {
        let head = self.head()?;
        let base = base
            .map(|sha| git2::Oid::from_str(sha).map_err(walking))
            .transpose()?;
        let mut walk = self.repo.revwalk().map_err(walking)?;
        walk.push(head.parse().map_err(walking)?).map_err(walking)?;
        if let Some(base) = base {
            walk.hide(base).map_err(walking)?;
        }
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)
            .map_err(walking)?;
        Ok(HeadWalk {
            repo: &self.repo,
            walk,
            base,
        })
    }

    /// The tree of commit `sha`.
    pub fn commit_tree(&self, sha: &str) -> Result<CommitTree<'_>, HistoryError> {
        let commit = git2::Oid::from_str(sha)
            .and_then(|oid| self.repo.find_commit(oid))
            .map_err(git(sha, "reading the commit"))?;
        let tree = commit.tree().map_err(git(sha, "reading the tree"))?;
        Ok(CommitTree {
            repo: &self.repo,
            commit,
            tree,
        })
    }

    /// The parent and message of commit `sha`.
    pub fn commit_header(&self, sha: &str) -> Result<CommitHeader, HistoryError> {
        let oid = git2::Oid::from_str(sha).map_err(git(sha, "parsing the commit id"))?;
        let commit = self
            .repo
            .find_commit(oid)
            .map_err(git(sha, "reading the commit"))?;
        Ok(CommitHeader {
            parent: commit.parent_id(0).ok().map(|p| p.to_string()),
            message: commit.message().map(str::to_string),
        })
    }

    /// Every regular file of commit `sha`'s tree that is UTF-8 text of at most
    /// `max_bytes`, as (path, text) in path order: the state a completion task is cut
    /// from (binary, huge, symlinked and submodule entries are no code to complete).
    pub fn tree_texts(
        &self,
        sha: &str,
        max_bytes: usize,
    ) -> Result<Vec<(String, String)>, HistoryError> {
        let tree = self.commit_tree(sha)?;
        let mut out = Vec::new();
        let mut failure = None;
        tree.tree
            .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() != Some(git2::ObjectType::Blob)
                    || entry.filemode() == i32::from(git2::FileMode::Link)
                {
                    return git2::TreeWalkResult::Ok;
                }
                match self.repo.find_blob(entry.id()) {
                    Ok(blob) if blob.size() <= max_bytes => {
                        if let Ok(text) = std::str::from_utf8(blob.content()) {
                            let name = path_text(entry.name_bytes());
                            out.push((format!("{dir}{name}"), text.to_string()));
                        }
                        git2::TreeWalkResult::Ok
                    }
                    Ok(_) => git2::TreeWalkResult::Ok,
                    Err(e) => {
                        failure = Some(e);
                        git2::TreeWalkResult::Abort
                    }
                }
            })
            .map_err(git(sha, "walking the tree"))?;
        if let Some(e) = failure {
            return Err(git(sha, "reading a blob")(e));
        }
        out.sort();
        Ok(out)
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
            .map_err(git(sha, "reading a blob"))?;
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
                source: source.into(),
            })?;
        let commit = object
            .peel_to_commit()
            .map_err(|source| HistoryError::Revision {
                rev: rev.to_string(),
                source: source.into(),
            })?;
        Ok(commit.id().to_string())
    }

    fn range(&self, spec: &str) -> Result<Vec<String>, HistoryError> {
        let revision = |source: git2::Error| HistoryError::Revision {
            rev: spec.to_string(),
            source: source.into(),
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
        let oid = git2::Oid::from_str(sha).map_err(git(sha, "parsing the commit id"))?;
        let commit = self
            .repo
            .find_commit(oid)
            .map_err(git(sha, "finding the commit"))?;
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
        let tree = commit.tree().map_err(git(sha, "reading the tree"))?;
        let parent_tree = match commit.parents().next() {
            Some(parent) => Some(parent.tree().map_err(git(sha, "reading the parent tree"))?),
            None => None,
        };
        let mut options = git2::DiffOptions::new();
        options.include_typechange(true).ignore_submodules(false);
        let mut diff = self
            .repo
            .diff_tree_to_tree(parent_tree.as_ref(), Some(&tree), Some(&mut options))
            .map_err(git(sha, "diffing against the parent"))?;
        // git's defaults: exact and ≥50% similar renames, no copies.
        let mut find = git2::DiffFindOptions::new();
        find.renames(true).rename_threshold(50);
        diff.find_similar(Some(&mut find))
            .map_err(git(sha, "detecting renames"))?;
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
        let oid = git2::Oid::from_str(sha).map_err(git(sha, "parsing the commit id"))?;
        let commit = self
            .repo
            .find_commit(oid)
            .map_err(git(sha, "finding the commit"))?;
        Ok(commit.parent_count() > 1)
    }

    fn project(&self) -> Option<String> {
        self.project.clone()
    }

    fn checkout(&self, sha: &str, dir: &Path) -> Result<(), HistoryError> {
        let oid = git2::Oid::from_str(sha).map_err(git(sha, "parsing the commit id"))?;
        let tree = self
            .repo
            .find_commit(oid)
            .and_then(|c| c.tree())
            .map_err(git(sha, "reading the tree"))?;
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
            .map_err(git(sha, "writing the tree to a scratch directory"))
    }

    fn update_checkout(
        &self,
        from: &str,
        to: &str,
        dir: &Path,
    ) -> Result<Vec<TreeChange>, HistoryError> {
        let tree_of = |sha: &str| {
            git2::Oid::from_str(sha)
                .and_then(|oid| self.repo.find_commit(oid))
                .and_then(|c| c.tree())
                .map_err(git(sha, "reading the tree"))
        };
        let (old, new) = (tree_of(from)?, tree_of(to)?);
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), None)
            .map_err(git(to, "diffing against the tree written before"))?;
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| HistoryError::Io { path, source }
        };
        let mut changes = Vec::new();
        // Without rename detection a rename is a deletion and an addition: the servers
        // see both.
        for delta in diff.deltas() {
            let (old_file, new_file) = (delta.old_file(), delta.new_file());
            let writes = is_file(new_file.mode());
            if is_file(old_file.mode()) && !writes {
                let Some(relative) = old_file.path() else {
                    continue;
                };
                let path = dir.join(relative);
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(io(&path)(e));
                    }
                    _ => {}
                }
                changes.push(TreeChange {
                    path: path_text(relative.as_os_str().as_encoded_bytes()),
                    kind: TreeChangeKind::Deleted,
                });
            }
            let (true, Some(relative)) = (writes, new_file.path()) else {
                continue;
            };
            let path = dir.join(relative);
            let blob = self
                .repo
                .find_blob(new_file.id())
                .map_err(git(to, "reading a changed file"))?;
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(io(parent))?;
            }
            // A symlink or a submodule the tree held becomes a file: replace it.
            if std::fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
                let _ = std::fs::remove_file(&path);
            }
            std::fs::write(&path, blob.content()).map_err(io(&path))?;
            changes.push(TreeChange {
                path: path_text(relative.as_os_str().as_encoded_bytes()),
                kind: if is_file(old_file.mode()) {
                    TreeChangeKind::Changed
                } else {
                    TreeChangeKind::Created
                },
            });
        }
        Ok(changes)
    }
}

/// Whether a tree entry is a file the servers read (not a symlink or submodule).
fn is_file(mode: git2::FileMode) -> bool {
    matches!(mode, git2::FileMode::Blob | git2::FileMode::BlobExecutable)
}

/// One hunk header of a zero-context diff, as `git diff -U0` prints it: 1-based starts;
/// an empty side's start names the line *before* the gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HunkHeader {
    /// First line in the old text.
    pub old_start: u32,
    /// Lines in the old text.
    pub old_lines: u32,
    /// First line in the new text.
    pub new_start: u32,
    /// Lines in the new text.
    pub new_lines: u32,
}

/// The hunks between two texts with git's own diff (xdiff: Myers with the indent
/// heuristic, no context, both sides taken as text).
pub fn diff_hunks(old: &[u8], new: &[u8]) -> Result<Vec<HunkHeader>, GitError> {
    let mut options = git2::DiffOptions::new();
    options
        .context_lines(0)
        .interhunk_lines(0)
        .indent_heuristic(true)
        .force_text(true);
    let patch = git2::Patch::from_buffers(old, None, new, None, Some(&mut options))?;
    let mut hunks = Vec::with_capacity(patch.num_hunks());
    for index in 0..patch.num_hunks() {
        let (hunk, _) = patch.hunk(index)?;
        hunks.push(HunkHeader {
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
        });
    }
    Ok(hunks)
}

/// The commit HEAD points to, if `dir` is inside a git repository.
///
/// Resolves references only (`.git/HEAD`, `refs/…`, `packed-refs`), never inflates
/// an object: the bundled libgit2 loops forever on a truncated loose object (see
/// [`super::odb`]), and the proxy's recorder thread must not burn a core for the
/// session. A HEAD that is not a commit is returned as it is; `sessions link` reads the
/// commit later, after checking the objects.
pub fn head_of(dir: &Path) -> Option<String> {
    let repo = git2::Repository::discover(dir).ok()?;
    let head = repo.head().ok()?;
    head.resolve().ok()?.target().map(|oid| oid.to_string())
}

/// Creates a bare repository at `dir` holding `parent` and, on top of it, `child`
/// (files by `/`-separated path; no work tree; a fixed author and time, so the ids are
/// reproducible), with `refs/heads/main` on the child; returns the child's id. Errors
/// name `dir` where a commit id would be.
pub fn write_bare_repository(
    dir: &Path,
    parent: &BTreeMap<String, Vec<u8>>,
    child: &BTreeMap<String, Vec<u8>>,
    message: &str,
) -> Result<String, HistoryError> {
    let at = dir.display().to_string();
    let repo = git2::Repository::init_bare(dir).map_err(git(&at, "creating the repository"))?;
    let parent_id =
        write_commit(&repo, None, parent, "parent").map_err(git(&at, "writing the parent"))?;
    let child_id = write_commit(&repo, Some(parent_id), child, message)
        .map_err(git(&at, "writing the commit"))?;
    repo.reference("refs/heads/main", child_id, true, "rebuilt")
        .map_err(git(&at, "naming the commit"))?;
    Ok(child_id.to_string())
}

/// Writes `files` as a commit on top of `parent` and returns its id.
fn write_commit(
    repo: &git2::Repository,
    parent: Option<git2::Oid>,
    files: &BTreeMap<String, Vec<u8>>,
    message: &str,
) -> Result<git2::Oid, git2::Error> {
    let tree = write_tree(repo, files, "")?;
    let tree = repo.find_tree(tree)?;
    let signature = git2::Signature::new(
        "nextedit",
        "nextedit@example.invalid",
        &git2::Time::new(0, 0),
    )?;
    let parents: Vec<git2::Commit> = parent
        .map(|p| repo.find_commit(p))
        .transpose()?
        .into_iter()
        .collect();
    let parent_refs: Vec<&git2::Commit> = parents.iter().collect();
    repo.commit(None, &signature, &signature, message, &tree, &parent_refs)
}

/// Writes the files under `prefix` as a tree (subdirectories first written as trees of
/// their own) and returns its id.
fn write_tree(
    repo: &git2::Repository,
    files: &BTreeMap<String, Vec<u8>>,
    prefix: &str,
) -> Result<git2::Oid, git2::Error> {
    let mut builder = repo.treebuilder(None)?;
    let mut directories: BTreeMap<&str, ()> = BTreeMap::new();
    for (path, bytes) in files.range(prefix.to_string()..) {
        let Some(rest) = path.strip_prefix(prefix) else {
            break;
        };
        match rest.split_once('/') {
            Some((directory, _)) => {
                directories.insert(directory, ());
            }
            None => {
                let blob = repo.blob(bytes)?;
                builder.insert(rest, blob, 0o100644)?;
            }
        }
    }
    for directory in directories.keys() {
        let sub = write_tree(repo, files, &format!("{prefix}{directory}/"))?;
        builder.insert(directory, sub, 0o040000)?;
    }
    builder.write()
}
