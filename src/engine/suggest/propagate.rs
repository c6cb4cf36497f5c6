//! `builtin:propagate`: a real non-ML baseline. After each applied edit it predicts
//! the same change at the other places it plausibly applies:
//!
//! - **renames**: when an edit replaced one identifier by another (`total_price` →
//!   `subtotal`), every other line using the old identifier gets it replaced;
//! - **clones**: when an edit changed one line, every other identical line (up to
//!   indentation) gets the same new line.
//!
//! Candidates are ranked by distance: the edited file first (nearest lines first),
//! then the other files in path order. It reads the files the step names and the
//! worktree's other files of the same extension (the current state, nothing else).

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::protocol::{
    AppliedEdit, FileContent, GenerateParams, GenerateResult, InitializeParams, InitializeResult,
    SuggestParams, SuggestResult, SuggestedEdit,
};
use super::{SuggestError, Suggester};

/// Most predictions returned per step.
const MAX_PREDICTIONS: usize = 20;
/// Most worktree files scanned per step.
const MAX_FILES: usize = 2000;
/// Files larger than this are not scanned.
const MAX_FILE_BYTES: u64 = 1 << 20;

static IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").expect("valid regex"));

/// The propagate baseline.
#[derive(Debug, Default)]
pub struct PropagateSuggester {
    /// Substitutions learned from applied edits, most recent last.
    renames: Vec<(String, String)>,
}

/// A change that can be repeated elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propagation {
    /// Replace identifier `from` by `to`.
    Rename {
        /// Old identifier.
        from: String,
        /// New identifier.
        to: String,
    },
    /// Replace lines equal (up to indentation) to `from` by `to` (re-indented).
    Clone {
        /// Old line, trimmed.
        from: String,
        /// New line, trimmed.
        to: String,
    },
}

/// What an applied edit teaches: a single-identifier substitution, or a one-line clone change.
pub fn learn(before: &str, after: &str) -> Vec<Propagation> {
    let mut out = Vec::new();
    let tb: Vec<&str> = tokens(before);
    let ta: Vec<&str> = tokens(after);
    let prefix = tb.iter().zip(&ta).take_while(|(a, b)| a == b).count();
    let suffix = tb[prefix..]
        .iter()
        .rev()
        .zip(ta[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (mb, ma) = (
        &tb[prefix..tb.len() - suffix],
        &ta[prefix..ta.len() - suffix],
    );
    if let ([from], [to]) = (mb, ma)
        && is_identifier(from)
        && is_identifier(to)
    {
        out.push(Propagation::Rename {
            from: from.to_string(),
            to: to.to_string(),
        });
    }
    let (lb, la): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    if let ([from], [to]) = (lb.as_slice(), la.as_slice())
        && from.trim() != to.trim()
        && !from.trim().is_empty()
    {
        out.push(Propagation::Clone {
            from: from.trim().to_string(),
            to: to.trim().to_string(),
        });
    }
    out
}

/// Identifier and punctuation tokens (whitespace dropped).
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut last = 0;
    for m in IDENTIFIER.find_iter(text) {
        out.extend(
            text[last..m.start()]
                .split_whitespace()
                .flat_map(split_punctuation),
        );
        out.push(m.as_str());
        last = m.end();
    }
    out.extend(text[last..].split_whitespace().flat_map(split_punctuation));
    out
}

fn split_punctuation(chunk: &str) -> Vec<&str> {
    chunk
        .char_indices()
        .map(|(i, c)| &chunk[i..i + c.len_utf8()])
        .collect()
}

fn is_identifier(token: &str) -> bool {
    IDENTIFIER
        .find(token)
        .is_some_and(|m| m.start() == 0 && m.end() == token.len())
}

/// Applies a propagation to one line (with its line break); `None` if it does not apply.
pub fn apply_to_line(propagation: &Propagation, line: &str) -> Option<String> {
    match propagation {
        Propagation::Rename { from, to } => {
            // Most lines do not mention the identifier: skip the regex for them.
            if !line.contains(from.as_str()) {
                return None;
            }
            let mut changed = false;
            let replaced = IDENTIFIER.replace_all(line, |c: &regex::Captures<'_>| {
                if &c[0] == from {
                    changed = true;
                    to.clone()
                } else {
                    c[0].to_string()
                }
            });
            changed.then(|| replaced.into_owned())
        }
        Propagation::Clone { from, to } => {
            let body = line.trim_end_matches(['\n', '\r']);
            if body.trim() != from {
                return None;
            }
            let indent = &body[..body.len() - body.trim_start().len()];
            Some(format!("{indent}{to}{}", &line[body.len()..]))
        }
    }
}

impl PropagateSuggester {
    fn candidate_files(&self, params: &SuggestParams, edited: &str) -> Vec<FileContent> {
        let mut files: Vec<FileContent> = params.files.clone();
        let extension = Path::new(edited).extension().map(|e| e.to_owned());
        let root = Path::new(&params.worktree);
        let mut stack = vec![root.to_path_buf()];
        let mut scanned = 0;
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let path = entry.path();
                let name = entry.file_name();
                if name.to_string_lossy().starts_with('.') {
                    continue;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file()
                    && path.extension().map(|e| e.to_owned()) == extension
                    && scanned < MAX_FILES
                {
                    let Ok(rel) = path.strip_prefix(root) else {
                        continue;
                    };
                    let rel = rel.to_string_lossy().into_owned();
                    if files.iter().any(|f| f.path == rel)
                        || entry.metadata().map_or(true, |m| m.len() > MAX_FILE_BYTES)
                    {
                        continue;
                    }
                    scanned += 1;
                    if let Ok(text) = std::fs::read_to_string(&path) {
                        files.push(FileContent { path: rel, text });
                    }
                }
            }
        }
        files
    }
}

/// Ranked predictions for `propagations` learned from `last`, over `files`.
pub fn propagate(
    propagations: &[Propagation],
    last: &AppliedEdit,
    prior: &[AppliedEdit],
    files: &[FileContent],
) -> Vec<SuggestedEdit> {
    // Rank key: the edited file first, by distance to the edit; then other files by path and line.
    let mut found: Vec<((bool, String, usize), SuggestedEdit)> = Vec::new();
    for file in files {
        for (line_no, line) in file.text.split_inclusive('\n').enumerate() {
            let inside_applied = prior.iter().any(|e| {
                e.file == file.path
                    && e.start_line <= line_no
                    && line_no < e.end_line.max(e.start_line + 1)
            });
            if inside_applied {
                continue;
            }
            let Some(new) = propagations.iter().find_map(|p| apply_to_line(p, line)) else {
                continue;
            };
            let key = if file.path == last.file {
                (false, String::new(), line_no.abs_diff(last.start_line))
            } else {
                (true, file.path.clone(), line_no)
            };
            let edit = SuggestedEdit {
                file: file.path.clone(),
                start_line: line_no,
                end_line: line_no + 1,
                text: new,
                confidence: None,
            };
            found.push((key, edit));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
        .into_iter()
        .take(MAX_PREDICTIONS)
        .map(|(_, edit)| edit)
        .collect()
}

impl Suggester for PropagateSuggester {
    fn name(&self) -> String {
        "builtin:propagate".to_string()
    }

    fn initialize(&mut self, _: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        self.renames.clear();
        Ok(InitializeResult {
            name: Some(self.name()),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        })
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let Some(last) = params.prior_edits.last() else {
            return Ok(SuggestResult::default());
        };
        let propagations = learn(&last.before, &last.after);
        for p in &propagations {
            if let Propagation::Rename { from, to } = p {
                self.renames.push((from.clone(), to.clone()));
            }
        }
        if propagations.is_empty() {
            return Ok(SuggestResult::default());
        }
        let files = self.candidate_files(params, &last.file);
        Ok(SuggestResult {
            edits: propagate(&propagations, last, &params.prior_edits, &files),
            reads: Vec::new(),
        })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        // The location's current lines with every rename learned so far applied.
        let mut text = params.location_text();
        for (from, to) in self.renames.iter().rev() {
            let rename = Propagation::Rename {
                from: from.clone(),
                to: to.clone(),
            };
            text = text
                .split_inclusive('\n')
                .map(|l| apply_to_line(&rename, l).unwrap_or_else(|| l.to_string()))
                .collect();
        }
        Ok(GenerateResult {
            text,
            reads: Vec::new(),
        })
    }

    fn shutdown(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_renames_and_clones() {
        assert_eq!(
            learn("def total_price(items):\n", "def subtotal(items):\n"),
            vec![
                Propagation::Rename {
                    from: "total_price".into(),
                    to: "subtotal".into()
                },
                Propagation::Clone {
                    from: "def total_price(items):".into(),
                    to: "def subtotal(items):".into()
                }
            ]
        );
        assert_eq!(
            learn("    x = compute(y)\n", "    x = compute(y, 2)\n"),
            vec![Propagation::Clone {
                from: "x = compute(y)".into(),
                to: "x = compute(y, 2)".into()
            }]
        );
        assert_eq!(learn("a\nb\n", "c\n"), vec![]);
    }

    #[test]
    fn predicts_nearest_first_and_skips_applied_lines() {
        let last = AppliedEdit {
            file: "m.py".into(),
            start_line: 5,
            end_line: 6,
            before: "def old():\n".into(),
            after: "def new():\n".into(),
            step: 0,
        };
        let files = vec![
            FileContent {
                path: "m.py".into(),
                text: "old()\n\n\n\n\ndef new():\n\n\nx = old() + old_value\n".into(),
            },
            FileContent {
                path: "a.py".into(),
                text: "from m import old\n".into(),
            },
        ];
        let props = learn(&last.before, &last.after);
        let got = propagate(&props, &last, std::slice::from_ref(&last), &files);
        let summary: Vec<(&str, usize, &str)> = got
            .iter()
            .map(|e| (e.file.as_str(), e.start_line, e.text.as_str()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("m.py", 8, "x = new() + old_value\n"),
                ("m.py", 0, "new()\n"),
                ("a.py", 0, "from m import new\n")
            ]
        );
    }
}
