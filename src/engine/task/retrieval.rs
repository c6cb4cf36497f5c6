//! Context for a task: function chunks of a version of the repository ranked against
//! the code around the hole, and whether each existed in the task's state.
//!
//! Chunks are `suggest::retrieve::chunks`' (outermost leaf definitions; only named
//! ones, functions and methods, are candidates); BM25 is `suggest::retrieve::index`.
//! A [`Retriever`] ranks candidates for a query: [`Bm25`] in-process, or a command
//! ([`super::retriever_command`]). In the evolution-aware setting the index holds the
//! state with the hole's ground truth removed, so it can never be retrieved; in the
//! evolution-ignored one it holds the latest version, where the task's own function
//! (same file, same name) is left out and anything else may leak from the future.
//! Pure (but for a command retriever's process): top-k with the existed-at-state check.

use crate::engine::suggest::retrieve::chunks::Chunk;
use crate::engine::suggest::retrieve::index::{ChunkIndex, chunk_texts};

use super::ContextChunk;

/// Why a retriever failed.
#[derive(Debug, thiserror::Error)]
pub enum RetrieveError {
    /// The retriever command failed or answered something unusable.
    #[error("retriever `{command}`: {message}")]
    Command {
        /// The command as given.
        command: String,
        /// What went wrong.
        message: String,
    },
}

/// A candidate chunk: its file and lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate<'a> {
    /// Path relative to the repository root.
    pub file: &'a str,
    /// The chunk's lines.
    pub chunk: &'a Chunk,
    /// Its text.
    pub text: &'a str,
}

/// Ranks function chunks of an index against a query.
pub trait Retriever {
    /// The name recorded with the context (`bm25`, `cmd:…`).
    fn name(&self) -> String;
    /// Scores of `candidates` against `query`, one per candidate, higher is better.
    fn score(
        &mut self,
        index: &ChunkIndex,
        query: &str,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<f64>, RetrieveError>;
}

/// BM25 over the index's own chunks (the index's scores; a candidate it does not
/// match scores 0).
#[derive(Debug, Default)]
pub struct Bm25;

impl Retriever for Bm25 {
    fn name(&self) -> String {
        "bm25".to_string()
    }

    fn score(
        &mut self,
        index: &ChunkIndex,
        query: &str,
        candidates: &[Candidate<'_>],
    ) -> Result<Vec<f64>, RetrieveError> {
        let hits = index.search(&[query]);
        Ok(candidates
            .iter()
            .map(|c| {
                hits.iter()
                    .find(|h| h.path == c.file && &h.chunk == c.chunk)
                    .map_or(0.0, |h| f64::from(h.score))
            })
            .collect())
    }
}

/// The `k` best function chunks of `index` for `query` among those `keep` accepts
/// (best first; ties by path, then line; chunks scoring 0 are not retrieved).
pub fn top_chunks(
    retriever: &mut dyn Retriever,
    index: &ChunkIndex,
    query: &str,
    keep: &dyn Fn(&str, &Chunk) -> bool,
    k: usize,
) -> Result<Vec<ContextChunk>, RetrieveError> {
    // Chunks come file by file: each file's line offsets are computed once.
    let mut by_file: Vec<(&str, Vec<&Chunk>)> = Vec::new();
    for (file, chunk) in index.chunks() {
        if chunk.name.is_none() || !keep(file, chunk) {
            continue;
        }
        match by_file.last_mut() {
            Some((last, chunks)) if *last == file => chunks.push(chunk),
            _ => by_file.push((file, vec![chunk])),
        }
    }
    let mut candidates: Vec<Candidate<'_>> = Vec::new();
    for (file, chunks) in by_file {
        let Some(text) = index.text(file) else {
            continue;
        };
        let owned: Vec<Chunk> = chunks.iter().map(|c| (*c).clone()).collect();
        for (chunk, text) in chunks.into_iter().zip(chunk_texts(text, &owned)) {
            candidates.push(Candidate { file, chunk, text });
        }
    }
    if candidates.is_empty() || k == 0 {
        return Ok(Vec::new());
    }
    let scores = retriever.score(index, query, &candidates)?;
    let mut ranked: Vec<(f64, &Candidate<'_>)> = scores
        .into_iter()
        .zip(&candidates)
        .filter(|(s, _)| *s > 0.0 && s.is_finite())
        .collect();
    ranked.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then_with(|| a.1.file.cmp(b.1.file))
            .then_with(|| a.1.chunk.start_line.cmp(&b.1.chunk.start_line))
    });
    Ok(ranked
        .into_iter()
        .take(k)
        .map(|(score, c)| ContextChunk {
            file: c.file.to_string(),
            start_line: c.chunk.start_line,
            end_line: c.chunk.end_line,
            text: c.text.to_string(),
            // Rounded so that task files are stable across float formatting.
            score: Some((score * 1e4).round() / 1e4),
            existed_at_state: true,
        })
        .collect())
}

/// Whether `chunk`'s text is somewhere in the state's files (trailing whitespace
/// ignored): `false` means it came from the future.
pub fn existed_in<'a>(chunk: &str, mut state_texts: impl Iterator<Item = &'a str>) -> bool {
    let needle = chunk.trim_end();
    needle.is_empty() || state_texts.any(|t| t.contains(needle))
}

/// The code around a hole that a context query is made of: the last
/// [`QUERY_LINES_BEFORE`] lines before it and the first [`QUERY_LINES_AFTER`] after it.
pub fn context_query(prefix: &str, suffix: &str) -> String {
    let before: Vec<&str> = prefix.lines().collect();
    let from = before.len().saturating_sub(QUERY_LINES_BEFORE);
    let after: Vec<&str> = suffix.lines().take(QUERY_LINES_AFTER).collect();
    format!("{}\n{}", before[from..].join("\n"), after.join("\n"))
}

/// Lines before the hole in a context query.
pub const QUERY_LINES_BEFORE: usize = 20;
/// Lines after the hole in a context query.
pub const QUERY_LINES_AFTER: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bm25_ranks_function_chunks_and_keep_filters() {
        let index = ChunkIndex::build([
            ("a.py".to_string(), "import os\n\ndef parse_price(text):\n    return float(text)\n\ndef load(path):\n    return open(path).read()\n".to_string()),
            ("b.py".to_string(), "def price_total(prices):\n    return sum(parse_price(p) for p in prices)\n".to_string()),
        ]);
        let got = top_chunks(&mut Bm25, &index, "parse_price", &|_, _| true, 5).unwrap();
        let names: Vec<_> = got
            .iter()
            .map(|c| (c.file.as_str(), c.start_line))
            .collect();
        assert_eq!(names, [("a.py", 2), ("b.py", 0)]);
        let got = top_chunks(&mut Bm25, &index, "parse_price", &|f, _| f != "a.py", 5).unwrap();
        assert_eq!(got.len(), 1);
        assert!(existed_in(
            "def f():\n  x  \n",
            ["a\ndef f():\n  x\n"].into_iter()
        ));
        assert!(!existed_in("def g():", ["def f():"].into_iter()));
    }
}
