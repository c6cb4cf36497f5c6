//! The file side of `nextedit import`: Copilot recordings found under directories,
//! and the rows of a JSONL file or a JSON array (ContextBench gold, traces,
//! predictions).
//!
//! Kept out of [`crate::core::import`], which stays pure (text and parsed JSON in).

use std::path::{Path, PathBuf};

use crate::core::metrics::contextbench::InputError;

/// Why import inputs could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ImportReadError {
    /// A directory could not be listed.
    #[error("reading directory {}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file could not be read.
    #[error("cannot read {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A file starting with `[` is not a JSON array.
    #[error("{}: not a JSON array of rows", path.display())]
    NotAnArray {
        /// The file.
        path: PathBuf,
        /// Why parsing failed.
        source: serde_json::Error,
    },
}

/// Copilot recording files: each path that is a file, and every
/// `*recording.w.json` under each path that is a directory (recursively, sorted).
pub fn recording_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ImportReadError> {
    files_under(paths, &|name| name.ends_with("recording.w.json"))
}

/// Each path that is a file, and every file under each path that is a directory whose
/// name `keep` accepts (recursively, sorted).
pub fn files_under(
    paths: &[PathBuf],
    keep: &dyn Fn(&str) -> bool,
) -> Result<Vec<PathBuf>, ImportReadError> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            kept_under(path, keep, &mut files)?;
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

/// The files under `dir` that `keep` accepts, sorted, recursively.
fn kept_under(
    dir: &Path,
    keep: &dyn Fn(&str) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<(), ImportReadError> {
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
            kept_under(&path, keep, out)?;
        } else if path.file_name().and_then(|n| n.to_str()).is_some_and(keep) {
            out.push(path);
        }
    }
    Ok(())
}

/// `x.recording.w.json` → `x`; a bare `recording.w.json` is named after its directory.
pub fn recording_name(path: &Path) -> String {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    match name.strip_suffix("recording.w.json") {
        Some("") => path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("recording")
            .to_owned(),
        Some(stem) => stem.trim_end_matches('.').to_owned(),
        None => name.to_owned(),
    }
}

/// One row of a rows file: its 1-based line (or array position) and the row, or why
/// that line is not JSON.
pub type Row = (usize, Result<serde_json::Value, InputError>);

/// Non-empty lines of a JSONL file (or the rows of a JSON array) with 1-based numbers.
pub fn read_rows(path: &Path) -> Result<Vec<Row>, ImportReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| ImportReadError::File {
        path: path.to_owned(),
        source,
    })?;
    if text.trim_start().starts_with('[') {
        let rows: Vec<serde_json::Value> =
            serde_json::from_str(&text).map_err(|source| ImportReadError::NotAnArray {
                path: path.to_owned(),
                source,
            })?;
        return Ok(rows
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i + 1, Ok(v)))
            .collect());
    }
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let parsed = serde_json::from_str(l).map_err(|source| InputError::Json {
                line: i + 1,
                source,
            });
            (i + 1, parsed)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recordings_are_named_after_their_file_or_directory() {
        assert_eq!(recording_name(Path::new("a/b.recording.w.json")), "b");
        assert_eq!(recording_name(Path::new("a/b/recording.w.json")), "b");
        assert_eq!(recording_name(Path::new("x.json")), "x.json");
    }
}
