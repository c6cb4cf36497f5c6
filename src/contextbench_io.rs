//! File-system side of ContextBench scoring: a repository checkout as a
//! [`RepoView`], and loading gold / prediction / Benchkit trace files.
//!
//! Kept out of [`crate::metrics`], which stays pure.

use std::path::{Component, Path, PathBuf};

use crate::metrics::contextbench::{
    Conversion, Gold, InputError, Prediction, RepoView, parse_gold_jsonl, parse_gold_row,
    parse_prediction_row, trace_to_steps,
};

/// Errors while loading ContextBench inputs from disk.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file's content is malformed.
    #[error("{path}: {source}")]
    Input {
        /// The file.
        path: PathBuf,
        /// What is wrong, with its line.
        source: InputError,
    },
}

/// A repository checkout on disk, read lazily. Paths must stay inside the root.
#[derive(Debug, Clone)]
pub struct DirRepo {
    root: PathBuf,
}

impl DirRepo {
    /// The checkout at `root`.
    pub fn new(root: impl Into<PathBuf>) -> DirRepo {
        DirRepo { root: root.into() }
    }

    fn inside(&self, path: &str) -> Option<PathBuf> {
        let rel = Path::new(path);
        if path.is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
            return None;
        }
        Some(self.root.join(rel))
    }

    /// Number of lines of `path` (a final newline does not add a line).
    pub fn line_count(&self, path: &str) -> Option<i64> {
        let text = self.read(path)?;
        let n = memchr::memchr_iter(b'\n', text.as_bytes()).count() as i64;
        Some(if text.is_empty() || text.ends_with('\n') {
            n
        } else {
            n + 1
        })
    }
}

impl RepoView for DirRepo {
    fn read(&self, path: &str) -> Option<String> {
        let full = self.inside(path)?;
        if !full.is_file() {
            return None;
        }
        let bytes = std::fs::read(full).ok()?;
        // Invalid UTF-8 is replaced (U+FFFD); such files are rare in the datasets and
        // their byte offsets shift — documented in docs/metrics.md.
        Some(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }
}

fn read(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Loads gold rows: the evaluator's JSONL, Hugging Face rows as JSONL, or a JSON array
/// of rows.
pub fn load_gold(path: &Path) -> Result<Vec<Gold>, LoadError> {
    let text = read(path)?;
    let wrap = |source| LoadError::Input {
        path: path.to_owned(),
        source,
    };
    if text.trim_start().starts_with('[') {
        let rows: Vec<serde_json::Value> = serde_json::from_str(&text)
            .map_err(|source| wrap(InputError::Json { line: 1, source }))?;
        return rows
            .iter()
            .enumerate()
            .map(|(i, r)| parse_gold_row(r, i + 1).map_err(wrap))
            .collect();
    }
    parse_gold_jsonl(&text).map_err(wrap)
}

/// One loaded prediction row and, for Benchkit traces, the ids it may go by.
#[derive(Debug, Clone)]
pub struct LoadedPrediction {
    /// The prediction (steps converted from tool calls for traces).
    pub prediction: Prediction,
    /// Other ids to match gold rows by (`metadata.original_inst_id`, `metadata.inst_id`).
    pub aliases: Vec<String>,
    /// Whether the row was a Benchkit trace.
    pub from_trace: bool,
}

/// Loads predictions: evaluator JSONL rows (`traj_data`) or Benchkit `trace.jsonl` rows
/// (`metadata.tool_invocations_*`), detected per row. `repo` supplies line counts for the
/// fixed trace conversion.
pub fn load_predictions(
    path: &Path,
    conversion: Conversion,
    repo: &DirRepo,
) -> Result<Vec<LoadedPrediction>, LoadError> {
    let text = read(path)?;
    let wrap = |source| LoadError::Input {
        path: path.to_owned(),
        source,
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(line).map_err(|source| {
            wrap(InputError::Json {
                line: i + 1,
                source,
            })
        })?;
        let meta = &v["metadata"];
        let is_trace = v.get("traj_data").is_none()
            && (meta.get("tool_invocations_curated").is_some()
                || meta.get("tool_invocations_raw").is_some());
        if is_trace {
            let counts = |p: &str| repo.line_count(p);
            let (steps, final_context) = trace_to_steps(&v, conversion, &counts);
            let id = v["instance_id"].as_str().unwrap_or_default().to_owned();
            let aliases = ["original_inst_id", "inst_id"]
                .iter()
                .filter_map(|k| meta[*k].as_str().map(str::to_owned))
                .collect();
            out.push(LoadedPrediction {
                prediction: Prediction {
                    instance_id: id,
                    model_patch: v["model_patch"].as_str().unwrap_or_default().to_owned(),
                    steps,
                    final_context,
                },
                aliases,
                from_trace: true,
            });
        } else {
            out.push(LoadedPrediction {
                prediction: parse_prediction_row(&v, i + 1).map_err(wrap)?,
                aliases: Vec::new(),
                from_trace: false,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cannot_escape_the_root() {
        let repo = DirRepo::new("/tmp");
        assert_eq!(repo.inside("../etc/passwd"), None);
        assert_eq!(repo.inside("/etc/passwd"), None);
        assert_eq!(repo.inside("a/b.py"), Some(PathBuf::from("/tmp/a/b.py")));
    }
}
