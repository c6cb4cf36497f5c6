//! The Next Edit Prediction benchmark's matches (Lu et al. 2025, `evaluate/evaluate.py`):
//! exact match, partial match and position match of an output against the ground truth,
//! both edits of one original.
//!
//! Each edit is diffed from the original with Python's `difflib.unified_diff` (3 lines of
//! context, lines from `str.splitlines`) and cut into chunks at its `@@` lines; chunks whose
//! `+`/`-` lines are all blank are dropped. Partial match: the ground truth's first chunk,
//! `@@` line included, is one of the output's chunks. Position match: the context lines of
//! the ground truth's first chunk are those of one of the output's chunks. When the ground
//! truth has no chunk the reference fails (an `IndexError`); here both are `None`.

use super::pydifflib::{py_isspace, splitlines, unified_diff};

/// The three matches of one output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NepMatch {
    /// The output equals the ground truth, character for character.
    pub exact: bool,
    /// The ground truth's first chunk is among the output's; `None` when the ground truth
    /// changes nothing but blank lines.
    pub partial: Option<bool>,
    /// The context lines of that chunk are those of one of the output's chunks.
    pub position: Option<bool>,
}

/// The matches of `output` against `ground_truth`, both edits of `original`.
pub fn nep_match(original: &str, ground_truth: &str, output: &str) -> NepMatch {
    let truth = chunks(original, ground_truth);
    let predicted = chunks(original, output);
    let first = truth.first();
    NepMatch {
        exact: ground_truth == output,
        partial: first.map(|f| predicted.contains(f)),
        position: first.map(|f| {
            let want = context(f);
            predicted.iter().any(|c| context(c) == want)
        }),
    }
}

/// The diff chunks of `original` → `edited`, each from its `@@` line to the next, with
/// the chunks that only add or remove blank lines left out.
pub fn chunks(original: &str, edited: &str) -> Vec<Vec<String>> {
    let diff = unified_diff(&splitlines(original), &splitlines(edited), 3);
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in diff {
        if line.starts_with("@@") {
            out.push(vec![line]);
        } else if let Some(chunk) = out.last_mut() {
            chunk.push(line);
        }
    }
    out.retain(|chunk| !only_blank_changes(chunk));
    out
}

/// Every `+`/`-` line of the chunk is empty or white space (Python's `strip`).
fn only_blank_changes(chunk: &[String]) -> bool {
    chunk
        .iter()
        .filter(|l| l.starts_with('+') || l.starts_with('-'))
        .all(|l| l[1..].chars().all(py_isspace))
}

fn context(chunk: &[String]) -> Vec<&str> {
    chunk
        .iter()
        .filter(|l| l.starts_with(' '))
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_right_edit_matches_all_three_ways() {
        let m = nep_match("a\nb\nc\n", "a\nB\nc\n", "a\nB\nc\n");
        assert_eq!(
            m,
            NepMatch {
                exact: true,
                partial: Some(true),
                position: Some(true)
            }
        );
        let m = nep_match("a\nb\nc\n", "a\nB\nc\n", "a\nX\nc\n");
        assert_eq!(
            m,
            NepMatch {
                exact: false,
                partial: Some(false),
                position: Some(true)
            }
        );
        let m = nep_match("a\nb\n", "a\n\nb\n", "a\nB\n");
        assert_eq!((m.partial, m.position), (None, None));
    }
}
