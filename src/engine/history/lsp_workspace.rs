//! `--lsp` over a range: two tree directories kept in step with each commit, their
//! servers kept alive from one commit to the next.
//!
//! One directory holds the parent's tree, the other the commit's. For each commit of a
//! range only the files that differ from the tree written before are rewritten or
//! removed ([`CommitSource::update_checkout`]; along a linear history that is the
//! previous commit's change), and the running servers hear of exactly those files
//! (`workspace/didChangeWatchedFiles`) before they are asked anything. The servers
//! ([`SideServers`]) start on first use and are restarted when one died.

use std::path::Path;
use std::time::Duration;

use super::HistoryError;
use super::lsp::LspSetup;
use super::lsp_servers::{ServerSet, SideServers};
use super::source::{CommitRecord, CommitSource};

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
                Err(error) => {
                    // Half-written: start over with a whole tree and fresh servers.
                    servers.stop_all();
                    remove_tree(&dir)?;
                    source.checkout(sha, &dir).map_err(|_| error)?;
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
