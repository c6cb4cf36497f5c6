//! `--lsp` over a range: two tree directories kept in step with each commit, their
//! servers kept alive from one commit to the next.
//!
//! One directory holds the parent's tree, the other the commit's. For each commit of a
//! range only the files that differ from the tree written before are rewritten or
//! removed ([`CommitSource::update_checkout`]; along a linear history that is the
//! previous commit's change), and the running servers hear of exactly those files
//! (`workspace/didChangeWatchedFiles`) before they are asked anything. Commits from
//! another source than the tree written before (`eval-order` rebuilds each commit
//! into a repository of its own) are written aside whole and the directory brought to
//! them file by file. The servers ([`SideServers`]) start on first use and are
//! restarted when one died.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::HistoryError;
use super::lsp::LspSetup;
use super::lsp_servers::{ServerSet, SideServers};
use super::source::{CommitRecord, CommitSource, TreeChange, TreeChangeKind};

/// The parent's and the commit's tree directories of a range and their servers.
pub struct KeptWorkspace {
    setup: LspSetup,
    /// Parent side, commit side (dropped before `scratch`: servers stop first).
    sides: [SideServers; 2],
    /// The commit whose tree each directory holds now.
    written: [Option<String>; 2],
    /// Removed with the trees when the workspace is dropped.
    scratch: tempfile::TempDir,
}

impl KeptWorkspace {
    /// Empty directories in a new scratch directory; no server started yet.
    pub fn new(
        servers: ServerSet,
        timeout: Duration,
        max_requests: usize,
    ) -> std::io::Result<KeptWorkspace> {
        let scratch = tempfile::tempdir()?;
        let (parent, commit) = (scratch.path().join("parent"), scratch.path().join("commit"));
        let setup = LspSetup {
            parent_root: Some(parent.clone()),
            child_root: commit.clone(),
            servers,
            timeout,
            max_requests,
        };
        Ok(KeptWorkspace {
            setup,
            sides: [
                SideServers::new(parent, true),
                SideServers::new(commit, true),
            ],
            written: [None, None],
            scratch,
        })
    }

    /// Writes `record`'s parent and commit trees into the two directories and tells the
    /// running servers which files changed; then the servers and limits of the pass
    /// and the servers of each side (none on the parent's for a root commit).
    pub fn sync(
        &mut self,
        source: &impl CommitSource,
        record: &CommitRecord,
    ) -> Result<(&LspSetup, [Option<&mut SideServers>; 2]), HistoryError> {
        if let Some(parent) = record.parents.first() {
            self.sync_side(0, source, parent)?;
        }
        self.sync_side(1, source, &record.sha)?;
        let [parent, commit] = &mut self.sides;
        let sides = [(!record.parents.is_empty()).then_some(parent), Some(commit)];
        Ok((&self.setup, sides))
    }

    fn sync_side(
        &mut self,
        index: usize,
        source: &impl CommitSource,
        sha: &str,
    ) -> Result<(), HistoryError> {
        let servers = &mut self.sides[index];
        let dir = servers.root().to_path_buf();
        match self.written[index].take() {
            Some(before) if before == sha => {}
            Some(before) => match source.update_checkout(&before, sha, &dir) {
                Ok(changes) => servers.files_changed(&changes),
                Err(_) => {
                    // `before` is not in this source (`eval-order` rebuilds each commit
                    // into a repository of its own) or the tree is half-written: write
                    // the whole tree aside and bring `dir` to it file by file.
                    let fresh = self.scratch.path().join("incoming");
                    remove_tree(&fresh)?;
                    source.checkout(sha, &fresh)?;
                    let changes = mirror(&fresh, &dir).map_err(|source| HistoryError::Io {
                        path: dir.display().to_string(),
                        source,
                    })?;
                    servers.files_changed(&changes);
                    remove_tree(&fresh)?;
                }
            },
            None => {
                servers.stop_all();
                remove_tree(&dir)?;
                source.checkout(sha, &dir)?;
            }
        }
        self.written[index] = Some(sha.to_string());
        Ok(())
    }

    /// The scratch directory holding both trees.
    pub fn path(&self) -> &Path {
        self.scratch.path()
    }
}

/// Makes `dir` hold exactly the files of the tree `fresh`: what is new or differs is
/// copied, what `fresh` lacks removed; the files that changed.
fn mirror(fresh: &Path, dir: &Path) -> std::io::Result<Vec<TreeChange>> {
    let (new, old) = (files_under(fresh)?, files_under(dir)?);
    let mut changes = Vec::new();
    for relative in &new {
        let bytes = std::fs::read(fresh.join(relative))?;
        let target = dir.join(relative);
        let kind = match std::fs::read(&target) {
            Ok(before) if before == bytes => continue,
            Ok(_) => TreeChangeKind::Changed,
            Err(_) => TreeChangeKind::Created,
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, bytes)?;
        changes.push(TreeChange {
            path: relative.to_string_lossy().into_owned(),
            kind,
        });
    }
    for relative in old.difference(&new) {
        std::fs::remove_file(dir.join(relative))?;
        changes.push(TreeChange {
            path: relative.to_string_lossy().into_owned(),
            kind: TreeChangeKind::Deleted,
        });
    }
    Ok(changes)
}

/// The regular files under `root`, relative to it (none when it does not exist).
fn files_under(root: &Path) -> std::io::Result<BTreeSet<PathBuf>> {
    let mut found = BTreeSet::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let entries = match std::fs::read_dir(root.join(&relative)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            entries => entries?,
        };
        for entry in entries {
            let entry = entry?;
            let kind = entry.file_type()?;
            let path = relative.join(entry.file_name());
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                found.insert(path);
            }
        }
    }
    Ok(found)
}

/// Removes a tree directory if it exists.
fn remove_tree(dir: &Path) -> Result<(), HistoryError> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(HistoryError::Io {
            path: dir.display().to_string(),
            source: e,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_copies_what_differs_and_removes_what_is_gone() {
        let (fresh, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let write = |root: &Path, path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(fresh.path(), "same.py", "x = 1\n");
        write(fresh.path(), "pkg/changed.py", "y = 2\n");
        write(fresh.path(), "pkg/new.py", "z = 3\n");
        write(dir.path(), "same.py", "x = 1\n");
        write(dir.path(), "pkg/changed.py", "y = 1\n");
        write(dir.path(), "gone.py", "w = 0\n");
        let changes: Vec<(String, TreeChangeKind)> = mirror(fresh.path(), dir.path())
            .unwrap()
            .into_iter()
            .map(|c| (c.path, c.kind))
            .collect();
        assert_eq!(
            changes,
            vec![
                ("pkg/changed.py".to_string(), TreeChangeKind::Changed),
                ("pkg/new.py".to_string(), TreeChangeKind::Created),
                ("gone.py".to_string(), TreeChangeKind::Deleted),
            ]
        );
        assert_eq!(
            files_under(dir.path()).unwrap(),
            files_under(fresh.path()).unwrap()
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("pkg/changed.py")).unwrap(),
            "y = 2\n"
        );
    }
}
