//! A replay workspace in a directory: the files of the current state, on disk.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::engine::Workspace;
use super::state::ReplayState;

/// Writes the current state of every trajectory file under a root directory.
/// Other files in the directory (the rest of a checkout) are left alone.
#[derive(Debug)]
pub struct DirWorkspace {
    root: PathBuf,
    /// File → the state version last written (files are rewritten only when it moves).
    written: HashMap<String, u64>,
}

impl DirWorkspace {
    /// A workspace rooted at `root` (which must exist).
    pub fn new(root: &Path) -> DirWorkspace {
        DirWorkspace {
            root: root.to_path_buf(),
            written: HashMap::new(),
        }
    }
}

impl Workspace for DirWorkspace {
    fn root(&self) -> String {
        self.root.to_string_lossy().into_owned()
    }

    fn sync(&mut self, state: &ReplayState) -> std::io::Result<()> {
        for file in state.files() {
            let version = state.version(file);
            if self.written.get(file) == Some(&version) {
                continue;
            }
            let want = state
                .exists(file)
                .then(|| state.text(file).unwrap_or_default());
            let path = self.root.join(file);
            match &want {
                Some(text) => {
                    if let Some(dir) = path.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    std::fs::write(&path, text)?;
                }
                None => match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                },
            }
            self.written.insert(file.to_string(), version);
        }
        Ok(())
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
