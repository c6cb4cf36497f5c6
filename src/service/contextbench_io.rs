//! File-system side of ContextBench scoring: a repository checkout as a
//! [`RepoView`], loading gold / prediction / Benchkit trace / patch files, and
//! scoring a file's predictions against their gold rows in that checkout
//! ([`score_predictions`]).
//!
//! Kept out of [`crate::core::metrics`], which stays pure.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::core::metrics::contextbench::{
    ContextBenchConfig, Conversion, Gold, InputError, InstanceResult, Mode, Prediction, RepoView,
    evaluate, parse_gold_jsonl, parse_gold_row, parse_prediction_row, trace_to_steps,
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

/// Why a patches file (`--patches`) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PatchesError {
    /// The file could not be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// A line is not JSON.
    #[error("line {line}: invalid JSON")]
    Json {
        /// 1-based line number.
        line: usize,
        /// Why parsing failed.
        source: serde_json::Error,
    },
}

/// `instance_id` (and `benchkit_instance_id`) → `model_patch` from a predictions JSONL
/// (Benchkit's predictions.jsonl).
pub fn load_patches(path: &Path) -> Result<HashMap<String, String>, PatchesError> {
    let text = std::fs::read_to_string(path)?;
    let mut out = HashMap::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|source| PatchesError::Json {
                line: i + 1,
                source,
            })?;
        let patch = v["model_patch"].as_str().unwrap_or_default().to_owned();
        for key in ["instance_id", "benchkit_instance_id"] {
            if let Some(id) = v[key].as_str() {
                out.insert(id.to_owned(), patch.clone());
            }
        }
    }
    Ok(out)
}

/// Gives every prediction without a patch the one `patches` has for its instance.
pub fn add_patches(predictions: &mut [LoadedPrediction], patches: &HashMap<String, String>) {
    for lp in predictions
        .iter_mut()
        .filter(|lp| lp.prediction.model_patch.is_empty())
    {
        if let Some(patch) = patches.get(&lp.prediction.instance_id) {
            lp.prediction.model_patch = patch.clone();
        }
    }
}

/// A prediction that could not be scored, and why (`missing_gold`, or the
/// evaluator's error).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnscoredInstance {
    /// The prediction's instance id.
    pub instance_id: String,
    /// Why it was not scored.
    pub error: String,
}

/// The scores of a set of predictions against their gold rows.
#[derive(Debug, Clone)]
pub struct ScoredPredictions {
    /// One result per scored prediction, in prediction order.
    pub results: Vec<InstanceResult>,
    /// The predictions that could not be scored, in prediction order.
    pub errors: Vec<UnscoredInstance>,
}

/// Scores each prediction against its gold row (by instance id or one of its
/// aliases; a single trace against a single gold row pairs up whatever their ids).
/// In compat mode only gold rows keyed by `inst_id` are found, as in the reference
/// evaluator. `on_instance` is called with each prediction's instance id after it
/// (progress).
pub fn score_predictions(
    golds: &[Gold],
    predictions: &[LoadedPrediction],
    repo: &DirRepo,
    config: &ContextBenchConfig,
    mut on_instance: impl FnMut(&str),
) -> ScoredPredictions {
    // The evaluator indexes gold rows by `inst_id` only.
    let golds: Vec<&Gold> = golds
        .iter()
        .filter(|g| config.mode != Mode::Compat || g.keyed_inst_id)
        .collect();
    let mut scored = ScoredPredictions {
        results: Vec::new(),
        errors: Vec::new(),
    };
    for lp in predictions {
        let p = &lp.prediction;
        let gold = golds
            .iter()
            .find(|g| g.matches(&p.instance_id) || lp.aliases.iter().any(|al| g.matches(al)))
            // A single trace against a single gold row pairs up even when Benchkit's ids differ.
            .or_else(|| {
                (lp.from_trace && golds.len() == 1 && predictions.len() == 1).then(|| &golds[0])
            });
        let unscored = |error: String| UnscoredInstance {
            instance_id: p.instance_id.clone(),
            error,
        };
        match gold {
            None => scored.errors.push(unscored("missing_gold".to_owned())),
            Some(g) => match evaluate(g, p, repo, config) {
                Ok(r) => scored.results.push(r),
                Err(e) => scored.errors.push(unscored(e.to_string())),
            },
        }
        on_instance(&p.instance_id);
    }
    scored
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
