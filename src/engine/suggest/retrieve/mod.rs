//! `builtin:retrieve`: the retrieval baseline. After each applied edit it looks for
//! the code chunks most like the edited one with BM25 and proposes the edit's change
//! there.
//!
//! - **Chunks** ([`chunks`]): a file's functions, methods and other leaf definitions
//!   (tree-sitter, the languages of [`crate::core::syntax::Language`]) and the runs of
//!   lines between them. Files of other languages are not searched.
//! - **Index** ([`index`]): BM25 (the `bm25` crate) over identifier and subword
//!   tokens, built from the worktree at `initialize`; at each step only the files
//!   whose text changed (the files of the applied edits) are re-chunked and re-indexed.
//! - **Query**: the last applied edit's before- and after-text and the chunk it is in
//!   now (the edited chunk), each part cut to its 32 rarest tokens (highest IDF).
//! - **Proposals** ([`change`]): the change the edit teaches (a rename or one-line
//!   change as `builtin:propagate` learns it, a block of lines, an insertion after the
//!   same line) applied inside the edited chunk first (its other lines; the edit's
//!   own lines and every applied edit's are never proposed), then inside the other
//!   chunks in BM25 order (ties: path, then line), line order within a chunk; at most
//!   [`MAX_PREDICTIONS`]. A chunk where the change does not apply proposes nothing.
//! - **Reads**: the chunks it proposed in, reported for ContextBench scoring.
//!
//! `generate` writes the location with the last edit's change applied, then every
//! rename learned so far (most recent first). `complete` copies the most similar
//! function ([`complete`]). It reads the worktree at `initialize`, the changed files at
//! each step, and the worktree's functions at the first `complete` after an
//! `initialize`.

pub mod change;
pub mod chunks;
pub mod complete;
pub mod index;

use std::collections::HashMap;
use std::path::Path;

use change::Change;
use index::{ChunkIndex, chunk_text};

use super::propagate::{self, Propagation};
use super::protocol::{
    AppliedEdit, CompleteParams, CompleteResult, GenerateParams, GenerateResult, InitializeParams,
    InitializeResult, SuggestParams, SuggestResult, SuggestedEdit, SuggesterRead,
};
use super::{SuggestError, Suggester};
use crate::core::syntax::Language;

/// Most predictions returned per step.
pub const MAX_PREDICTIONS: usize = 20;
/// Most worktree files indexed.
const MAX_FILES: usize = 5000;
/// Files larger than this are not indexed.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The retrieval baseline.
#[derive(Debug, Default)]
pub struct RetrieveSuggester {
    /// The worktree's chunks (built at `initialize`).
    index: Option<ChunkIndex>,
    /// Renames learned from applied edits, most recent last.
    renames: Vec<(String, String)>,
    /// What the last applied edit taught.
    last_changes: Vec<Change>,
    /// The worktree `initialize` named, and its function chunks once a `complete`
    /// parsed them (the state does not change until the next `initialize`).
    completing: Option<(String, Option<complete::Functions>)>,
}

/// The files of `root` in a language nextedit parses (path relative to `root`, text),
/// in path order: no hidden entries, no symlinks, none over 1 MiB, at most 5000.
pub fn worktree_files(root: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(path);
            } else if kind.is_file()
                && Language::from_path(&path).is_some()
                && out.len() < MAX_FILES
                && entry.metadata().is_ok_and(|m| m.len() <= MAX_FILE_BYTES)
                && let Ok(rel) = path.strip_prefix(root)
                && let Ok(text) = std::fs::read_to_string(&path)
            {
                out.push((rel.to_string_lossy().into_owned(), text));
            }
        }
    }
    out.sort();
    out
}

/// The line `line` of a file is inside one of `applied` (never proposed again).
fn inside_applied(applied: &[AppliedEdit], file: &str, line: usize) -> bool {
    applied
        .iter()
        .any(|e| e.file == file && e.start_line <= line && line < e.end_line.max(e.start_line + 1))
}

/// Ranked predictions of `changes` (learned from `last`) over `index`, and the chunks
/// they come from.
pub fn retrieve(
    index: &ChunkIndex,
    changes: &[Change],
    last: &AppliedEdit,
    applied: &[AppliedEdit],
) -> (Vec<SuggestedEdit>, Vec<SuggesterRead>) {
    let edited = index.chunk_at(&last.file, last.start_line).cloned();
    let edit_text = format!("{}\n{}", last.before, last.after);
    let chunk = match (&edited, index.text(&last.file)) {
        (Some(chunk), Some(text)) => chunk_text(text, chunk),
        _ => "",
    };
    let others: Vec<(String, chunks::Chunk)> = index
        .search(&[&edit_text, chunk])
        .into_iter()
        .map(|hit| (hit.path, hit.chunk))
        .filter(|(path, chunk)| !(path == &last.file && Some(chunk) == edited.as_ref()))
        .collect();
    let ranked = edited
        .map(|c| (last.file.clone(), c))
        .into_iter()
        .chain(others);
    let (mut edits, mut reads) = (Vec::new(), Vec::new());
    // Each file's lines, split once however many of its chunks are tried.
    let mut lines: HashMap<String, Vec<&str>> = HashMap::new();
    for (path, chunk) in ranked {
        if edits.len() >= MAX_PREDICTIONS {
            break;
        }
        let Some(text) = index.text(&path) else {
            continue;
        };
        let file_lines = lines
            .entry(path.clone())
            .or_insert_with(|| text.split_inclusive('\n').collect());
        let blocked = |line: usize| inside_applied(applied, &path, line);
        let found = change::propose(changes, &path, file_lines, &chunk, &blocked);
        if !found.is_empty() {
            reads.push(SuggesterRead {
                file: path.clone(),
                start_line: chunk.start_line,
                end_line: Some(chunk.end_line),
            });
            edits.extend(found);
        }
    }
    edits.truncate(MAX_PREDICTIONS);
    (edits, reads)
}

impl RetrieveSuggester {
    /// Brings the index up to date with the worktree of `params`: the files of the
    /// applied edits, from the step's files or the worktree (a file that cannot be
    /// read is gone).
    fn refresh(&mut self, params: &SuggestParams) -> &ChunkIndex {
        let root = Path::new(&params.worktree);
        let index = self
            .index
            .get_or_insert_with(|| ChunkIndex::build(worktree_files(root)));
        let mut paths: Vec<&str> = params.prior_edits.iter().map(|e| e.file.as_str()).collect();
        paths.sort_unstable();
        paths.dedup();
        for path in paths {
            let text = match params.files.iter().find(|f| f.path == path) {
                Some(file) => Some(file.text.clone()),
                None if Language::from_path(Path::new(path)).is_some()
                    || index.text(path).is_some() =>
                {
                    std::fs::read_to_string(root.join(path)).ok()
                }
                None => None,
            };
            index.update(path, text);
        }
        index
    }
}

impl Suggester for RetrieveSuggester {
    fn name(&self) -> String {
        "builtin:retrieve".to_string()
    }

    fn initialize(&mut self, params: &InitializeParams) -> Result<InitializeResult, SuggestError> {
        self.renames.clear();
        self.last_changes.clear();
        self.completing = Some((params.worktree.clone(), None));
        self.index = Some(ChunkIndex::build(worktree_files(Path::new(
            &params.worktree,
        ))));
        Ok(InitializeResult {
            name: Some(self.name()),
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
        })
    }

    fn suggest(&mut self, params: &SuggestParams) -> Result<SuggestResult, SuggestError> {
        let Some(last) = params.prior_edits.last() else {
            return Ok(SuggestResult::default());
        };
        let index = self.refresh(params);
        let changes = change::learn(last, index.text(&last.file));
        let (edits, reads) = if changes.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            retrieve(index, &changes, last, &params.prior_edits)
        };
        for c in &changes {
            if let Change::Line(Propagation::Rename { from, to }) = c {
                self.renames.push((from.clone(), to.clone()));
            }
        }
        self.last_changes = changes;
        Ok(SuggestResult { edits, reads })
    }

    fn generate(&mut self, params: &GenerateParams) -> Result<GenerateResult, SuggestError> {
        let mut text = params.location_text();
        let whole = chunks::Chunk {
            start_line: 0,
            end_line: text.split_inclusive('\n').count(),
            name: None,
        };
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let edits = change::propose(&self.last_changes, &params.file, &lines, &whole, &|_| false);
        text = apply_line_edits(&text, &edits);
        for (from, to) in self.renames.iter().rev() {
            let rename = Propagation::Rename {
                from: from.clone(),
                to: to.clone(),
            };
            text = text
                .split_inclusive('\n')
                .map(|l| propagate::apply_to_line(&rename, l).unwrap_or_else(|| l.to_string()))
                .collect();
        }
        Ok(GenerateResult {
            text,
            reads: Vec::new(),
        })
    }

    fn complete(&mut self, params: &CompleteParams) -> Result<CompleteResult, SuggestError> {
        // Parsed once per `initialize` (a task's samples share it); a worktree that
        // `initialize` did not name is read afresh.
        let read = || complete::functions(worktree_files(Path::new(&params.worktree)));
        match &mut self.completing {
            Some((worktree, functions)) if *worktree == params.worktree => {
                let functions = functions.get_or_insert_with(read);
                Ok(complete::complete(params, functions))
            }
            _ => Ok(complete::complete(params, &read())),
        }
    }

    fn shutdown(&mut self) {
        self.index = None;
        self.completing = None;
    }
}

/// `text` with `edits` (sorted, not overlapping, line coordinates of `text`) applied.
fn apply_line_edits(text: &str, edits: &[SuggestedEdit]) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut next = 0;
    for e in edits {
        out.extend(
            lines[next.min(lines.len())..e.start_line.min(lines.len())]
                .iter()
                .copied(),
        );
        out.push_str(&e.text);
        next = e.end_line;
    }
    out.extend(lines[next.min(lines.len())..].iter().copied());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(
        file: &str,
        start_line: usize,
        end_line: usize,
        before: &str,
        after: &str,
    ) -> AppliedEdit {
        AppliedEdit {
            file: file.into(),
            start_line,
            end_line,
            before: before.into(),
            after: after.into(),
            step: 0,
        }
    }

    /// Three loaders, one already changed (`load_users`, the applied edit), and an
    /// unrelated function with the same line: the loaders rank first, the edited
    /// chunk's own other line before everything.
    #[test]
    fn proposes_in_the_edited_chunk_then_by_similarity() {
        let io = "def load_users(path):\n    with open(path, encoding=\"utf-8\") as f:\n        return [User(r) for r in json.load(f)]\n    with open(path) as f:\n        pass\n\n\ndef load_orders(path):\n    with open(path) as f:\n        return [Order(r) for r in json.load(f)]\n";
        let other = "def banner(path):\n    with open(path) as f:\n        print(f.read())\n\n\ndef load_items(path):\n    with open(path) as f:\n        return [Item(r) for r in json.load(f)]\n";
        let index = ChunkIndex::build([
            ("io.py".to_string(), io.to_string()),
            ("other.py".to_string(), other.to_string()),
        ]);
        let last = applied(
            "io.py",
            1,
            2,
            "    with open(path) as f:\n",
            "    with open(path, encoding=\"utf-8\") as f:\n",
        );
        let changes = change::learn(&last, index.text("io.py"));
        let (edits, reads) = retrieve(&index, &changes, &last, std::slice::from_ref(&last));
        let got: Vec<(&str, usize)> = edits
            .iter()
            .map(|e| (e.file.as_str(), e.start_line))
            .collect();
        assert_eq!(
            got,
            vec![("io.py", 3), ("io.py", 8), ("other.py", 6), ("other.py", 1)]
        );
        assert!(edits.iter().all(|e| e.text.contains("encoding=\"utf-8\"")));
        let chunks: Vec<(&str, usize, Option<usize>)> = reads
            .iter()
            .map(|r| (r.file.as_str(), r.start_line, r.end_line))
            .collect();
        assert_eq!(
            chunks,
            vec![
                ("io.py", 0, Some(5)),
                ("io.py", 7, Some(10)),
                ("other.py", 5, Some(8)),
                ("other.py", 0, Some(3))
            ]
        );
    }

    #[test]
    fn applies_line_edits_in_order() {
        let edit = |s, e, t: &str| SuggestedEdit {
            file: "f".into(),
            start_line: s,
            end_line: e,
            text: t.into(),
            confidence: None,
        };
        assert_eq!(
            apply_line_edits("a\nb\nc\n", &[edit(0, 1, "A\n"), edit(2, 2, "x\n")]),
            "A\nb\nx\nc\n"
        );
        assert_eq!(apply_line_edits("a\n", &[]), "a\n");
    }
}
