//! A replay workspace in a directory: the files of the current state, on disk.
//!
//! Every write and removal stays inside the root: the path must be a
//! [`RelPath`] (checked again here, whatever checked it on entry), and no existing
//! component under the root may be a symlink or a non-directory, so a checkout (or a
//! suggester) that planted `dir -> /elsewhere` cannot redirect a write. The last
//! component is opened with `O_NOFOLLOW`, which also closes the gap between the
//! check and the open for it. An untracked file a suggester names is read only inside
//! the root, likewise.

use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::state::ReplayState;
use crate::core::trajectory::RelPath;

/// Where the current state lives on disk, for suggesters that read files.
pub trait Workspace {
    /// Absolute path sent to the suggester.
    fn root(&self) -> String;
    /// Brings the files on disk to `state` (called after every applied edit).
    fn sync(&mut self, state: &ReplayState) -> io::Result<()>;
    /// The text of a file the trajectory does not track, if it exists inside the root
    /// (a suggester may propose an edit there: an ordinary miss, not an invalid answer).
    fn read_untracked(&self, path: &str) -> Option<String> {
        read_in_root(Path::new(&self.root()), path)
    }
}

/// Writes the current state of every trajectory file under a root directory.
/// Other files in the directory (the rest of a checkout) are left alone.
#[derive(Debug)]
pub struct DirWorkspace {
    root: PathBuf,
    /// How many applied edits the files on disk hold (`None` before the first sync):
    /// later syncs write only the files of the edits applied since, not every file.
    synced: Option<usize>,
}

impl DirWorkspace {
    /// A workspace rooted at `root` (which must exist).
    pub fn new(root: &Path) -> DirWorkspace {
        DirWorkspace {
            root: root.to_path_buf(),
            synced: None,
        }
    }
}

impl Workspace for DirWorkspace {
    fn root(&self) -> String {
        self.root.to_string_lossy().into_owned()
    }

    fn sync(&mut self, state: &ReplayState) -> io::Result<()> {
        let applied = state.applied_order();
        let changed: Vec<&str> = match self.synced {
            None => state.files().collect(),
            Some(synced) => {
                let mut files: Vec<&str> = applied[synced..]
                    .iter()
                    .map(|&e| state.edits()[e].file.as_str())
                    .collect();
                files.sort_unstable();
                files.dedup();
                files
            }
        };
        for file in changed {
            let rel = RelPath::parse(file)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))?;
            match state.exists(file) {
                true => write_inside(&self.root, &rel, &state.text(file).unwrap_or_default())?,
                false => remove_inside(&self.root, &rel)?,
            }
        }
        self.synced = Some(applied.len());
        Ok(())
    }
}

/// An error naming a path under the root that a write must not go through.
fn refused(path: &Path, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!("refusing to write through {}: {what}", path.display()),
    )
}

/// The parent directory of `rel` under `root`, each component checked (not followed)
/// and created when missing; `None` when a component is missing and `create` is false.
fn parent_inside(root: &Path, rel: &RelPath, create: bool) -> io::Result<Option<PathBuf>> {
    let segments: Vec<&str> = rel.segments().collect();
    let mut dir = root.to_path_buf();
    for segment in &segments[..segments.len() - 1] {
        dir.push(segment);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(refused(&dir, "it is a symbolic link"));
            }
            Ok(meta) if !meta.is_dir() => return Err(refused(&dir, "it is not a directory")),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if !create {
                    return Ok(None);
                }
                std::fs::create_dir(&dir)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Some(dir))
}

/// Writes `text` to `root/rel`, never through a symlink.
pub fn write_inside(root: &Path, rel: &RelPath, text: &str) -> io::Result<()> {
    let dir = parent_inside(root, rel, true)?.expect("created");
    let path = dir.join(rel.segments().last().expect("a RelPath has a segment"));
    if let Ok(meta) = std::fs::symlink_metadata(&path)
        && meta.file_type().is_symlink()
    {
        return Err(refused(&path, "it is a symbolic link"));
    }
    // Overwritten, then cut to length, not truncated to zero first: ext4 flushes a file
    // truncated to zero and rewritten when it is closed, and replay rewrites a file at
    // every step.
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("writing {}: {e}", path.display())))?;
    file.write_all(text.as_bytes())?;
    file.set_len(text.len() as u64)
}

/// Removes `root/rel` if it exists; a symlink on the way is an error, a symlink as
/// the file itself is removed (the link, not its target).
pub fn remove_inside(root: &Path, rel: &RelPath) -> io::Result<()> {
    let Some(dir) = parent_inside(root, rel, false)? else {
        return Ok(());
    };
    let path = dir.join(rel.segments().last().expect("a RelPath has a segment"));
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The text of `relative` under `root`, if it names an existing file inside the root
/// (no absolute path, no `..`, no symlink leading out).
pub(crate) fn read_in_root(root: &Path, relative: &str) -> Option<String> {
    let relative = Path::new(relative);
    if !relative
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return None;
    }
    let root = root.canonicalize().ok()?;
    let path = root.join(relative).canonicalize().ok()?;
    if !path.starts_with(&root) || !path.is_file() {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_inside_and_refuses_symlinked_directories() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let rel = |p: &str| RelPath::parse(p).unwrap();
        write_inside(root.path(), &rel("a/b/c.txt"), "x").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.path().join("a/b/c.txt")).unwrap(),
            "x"
        );

        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        let err = write_inside(root.path(), &rel("link/important.txt"), "y").unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert!(!outside.path().join("important.txt").exists());

        std::fs::write(outside.path().join("keep.txt"), "keep").unwrap();
        let err = remove_inside(root.path(), &rel("link/keep.txt")).unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep.txt")).unwrap(),
            "keep"
        );

        std::os::unix::fs::symlink(outside.path().join("keep.txt"), root.path().join("f.txt"))
            .unwrap();
        let err = write_inside(root.path(), &rel("f.txt"), "z").unwrap_err();
        assert!(err.to_string().contains("is a symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep.txt")).unwrap(),
            "keep"
        );
        remove_inside(root.path(), &rel("missing/x.txt")).unwrap();
    }
}
