//! The BM25 index of a worktree's code chunks, updated one file at a time.
//!
//! Tokens are identifiers and their subwords, lowercased: `parseHTTPHeader2` gives
//! `parsehttpheader2`, `parse`, `http`, `header`, `2`; `total_price` gives `total_price`,
//! `total`, `price`. Whole identifiers make exact name matches count most (they are
//! rarer, so their IDF is higher); subwords let `load_users` and `loadOrders` meet on
//! `load`. Keywords stay in (their IDF is near zero: every chunk has them); numbers,
//! operators and punctuation are dropped.
//!
//! Scoring is the `bm25` crate's (Okapi BM25, k1 = 1.2, b = 0.75). Its average chunk
//! length is fitted once, to the corpus the index is built from; re-indexed files keep
//! it (one edit per step barely moves it, and a fixed value keeps the scores of the
//! chunks that did not change comparable from step to step). Ranking is deterministic:
//! by score, then path, then first line.

use std::collections::{BTreeMap, HashMap};
use std::sync::LazyLock;

use bm25::{Embedder, EmbedderBuilder, Embedding, Scorer, TokenEmbedding, Tokenizer};
use regex::Regex;

use super::chunks::{Chunk, chunks};
use crate::core::syntax::Language;

static IDENTIFIER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[\p{L}_][\p{L}\p{N}_]*").expect("valid regex"));

/// The tokenizer of chunks and queries: identifiers and their subwords (module doc).
#[derive(Debug, Default, Clone, Copy)]
pub struct CodeTokenizer;

impl Tokenizer for CodeTokenizer {
    fn tokenize(&self, text: &str) -> Vec<String> {
        code_tokens(text)
    }
}

/// Every identifier of `text`, lowercased, each followed by its subwords when it has
/// more than one.
pub fn code_tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in IDENTIFIER.find_iter(text) {
        let word = m.as_str();
        out.push(word.to_lowercase());
        let parts = subwords(word);
        if parts.len() > 1 {
            out.extend(parts.into_iter().map(|p| p.to_lowercase()));
        }
    }
    out
}

/// `word` split at underscores, lower→upper case changes, the last capital of a run
/// of capitals followed by a lowercase letter (`HTTPHeader` → `HTTP`, `Header`), and
/// letter↔digit changes.
fn subwords(word: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for part in word.split('_').filter(|p| !p.is_empty()) {
        let chars: Vec<(usize, char)> = part.char_indices().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, (at, c)) = (chars[i - 1].1, chars[i]);
            let next = chars.get(i + 1).map(|&(_, c)| c);
            let cut = (prev.is_lowercase() && c.is_uppercase())
                || (prev.is_uppercase()
                    && c.is_uppercase()
                    && next.is_some_and(char::is_lowercase))
                || (prev.is_numeric() != c.is_numeric());
            if cut {
                out.push(&part[start..at]);
                start = at;
            }
        }
        out.push(&part[start..]);
    }
    out
}

/// A chunk the index found, with its BM25 score.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Path relative to the worktree.
    pub path: String,
    /// The chunk.
    pub chunk: Chunk,
    /// BM25 score against the query (higher is more similar).
    pub score: f32,
}

/// One indexed file: its current text and the ids of its chunks.
#[derive(Debug)]
struct IndexedFile {
    text: String,
    chunks: Vec<(u32, Chunk)>,
}

/// Most tokens a query part keeps: its rarest ones (highest IDF), as a "more like
/// this" query does. A large edited function would otherwise make a query of hundreds
/// of tokens that matches, and scores, every chunk of the worktree.
pub const MAX_QUERY_TOKENS: usize = 32;

/// From this many chunks on, a query leaves out the tokens more than half the chunks
/// have (smaller worktrees keep every token: there a common token still ranks).
pub const COMMON_AFTER_CHUNKS: usize = 20;

/// The chunks of a set of files, searchable with BM25.
pub struct ChunkIndex {
    embedder: Embedder<u64, CodeTokenizer>,
    scorer: Scorer<u32, u64>,
    files: BTreeMap<String, IndexedFile>,
    /// Chunk id → its file's path and its distinct tokens.
    owners: HashMap<u32, (String, Vec<u64>)>,
    /// Token → how many chunks have it (to pick a query's rarest tokens).
    document_frequency: HashMap<u64, u32>,
    next_id: u32,
}

impl std::fmt::Debug for ChunkIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkIndex")
            .field("files", &self.files.len())
            .field("chunks", &self.owners.len())
            .finish()
    }
}

/// The chunks of `text` if `path`'s language is one nextedit parses, else none.
fn file_chunks(path: &str, text: &str) -> Vec<Chunk> {
    Language::from_path(std::path::Path::new(path)).map_or_else(Vec::new, |l| chunks(l, text))
}

/// `embedding` with each token once. The crate gives a token one entry per occurrence
/// (each with the same weight): in a query that would count a repeated token again,
/// in a chunk it only slows down the scorer's lookups.
fn distinct(Embedding(tokens): Embedding<u64>) -> Embedding<u64> {
    let mut seen = std::collections::HashSet::new();
    Embedding(
        tokens
            .into_iter()
            .filter(|t: &TokenEmbedding<u64>| seen.insert(t.index))
            .collect(),
    )
}

/// The byte offset where each line of `text` starts, and the text's length last.
fn line_offsets(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&o| o < text.len())
        .chain(std::iter::once(text.len()))
        .collect()
}

/// The text of each of `chunks` (lines of `text`), in one pass over `text`.
pub fn chunk_texts<'a>(text: &'a str, chunks: &[Chunk]) -> Vec<&'a str> {
    let offsets = line_offsets(text);
    let at = |line: usize| offsets[line.min(offsets.len() - 1)];
    chunks
        .iter()
        .map(|c| &text[at(c.start_line)..at(c.end_line).max(at(c.start_line))])
        .collect()
}

/// The text of lines `chunk` of `text`.
pub fn chunk_text<'a>(text: &'a str, chunk: &Chunk) -> &'a str {
    chunk_texts(text, std::slice::from_ref(chunk))[0]
}

impl ChunkIndex {
    /// Indexes `files` (path, text); files of languages nextedit does not parse are kept
    /// for their text but have no chunks.
    pub fn build(files: impl IntoIterator<Item = (String, String)>) -> ChunkIndex {
        ChunkIndex::build_chunked(files.into_iter().map(|(path, text)| {
            let chunks = file_chunks(&path, &text);
            (path, text, chunks)
        }))
    }

    /// Indexes `files` (path, text, the chunks to index in it) as given: a caller that
    /// keeps only some chunks, or indexes texts that are not whole files.
    pub fn build_chunked(
        files: impl IntoIterator<Item = (String, String, Vec<Chunk>)>,
    ) -> ChunkIndex {
        let files: Vec<(String, String, Vec<Chunk>)> = files.into_iter().collect();
        let corpus: Vec<&str> = files
            .iter()
            .flat_map(|(_, text, chunks)| chunk_texts(text, chunks))
            .collect();
        let embedder = EmbedderBuilder::<u64, CodeTokenizer>::with_tokenizer_and_fit_to_corpus(
            CodeTokenizer,
            &corpus,
        )
        .build();
        let mut index = ChunkIndex {
            embedder,
            scorer: Scorer::new(),
            files: BTreeMap::new(),
            owners: HashMap::new(),
            document_frequency: HashMap::new(),
            next_id: 0,
        };
        for (path, text, chunks) in files {
            index.insert(path, text, chunks);
        }
        index
    }

    fn insert(&mut self, path: String, text: String, chunks: Vec<Chunk>) {
        let mut ids = Vec::with_capacity(chunks.len());
        let embeddings: Vec<Embedding<u64>> = chunk_texts(&text, &chunks)
            .into_iter()
            .map(|t| distinct(self.embedder.embed(t)))
            .collect();
        for (chunk, embedding) in chunks.into_iter().zip(embeddings) {
            let id = self.next_id;
            self.next_id += 1;
            let tokens: Vec<u64> = embedding.indices().copied().collect();
            for token in &tokens {
                *self.document_frequency.entry(*token).or_default() += 1;
            }
            self.scorer.upsert(&id, embedding);
            self.owners.insert(id, (path.clone(), tokens));
            ids.push((id, chunk));
        }
        self.files.insert(path, IndexedFile { text, chunks: ids });
    }

    /// Brings `path` up to date with its current `text` (`None`: the file is gone):
    /// re-chunks and re-indexes that file only, and only when its text changed.
    /// Returns whether anything changed.
    pub fn update(&mut self, path: &str, text: Option<String>) -> bool {
        if self.files.get(path).map(|f| &f.text) == text.as_ref() {
            return false;
        }
        if let Some(old) = self.files.remove(path) {
            for (id, _) in old.chunks {
                self.scorer.remove(&id);
                for token in self.owners.remove(&id).map(|(_, t)| t).unwrap_or_default() {
                    if let Some(n) = self.document_frequency.get_mut(&token) {
                        *n -= 1;
                        if *n == 0 {
                            self.document_frequency.remove(&token);
                        }
                    }
                }
            }
        }
        if let Some(text) = text {
            let chunks = file_chunks(path, &text);
            self.insert(path.to_string(), text, chunks);
        }
        true
    }

    /// The indexed text of `path`.
    pub fn text(&self, path: &str) -> Option<&str> {
        self.files.get(path).map(|f| f.text.as_str())
    }

    /// Every indexed chunk with its file's path, by path, then line.
    pub fn chunks(&self) -> impl Iterator<Item = (&str, &Chunk)> {
        self.files
            .iter()
            .flat_map(|(path, file)| file.chunks.iter().map(move |(_, c)| (path.as_str(), c)))
    }

    /// How many chunks are indexed.
    pub fn chunk_count(&self) -> usize {
        self.owners.len()
    }

    /// The chunk of `path` holding `line`, or else the one holding the line before it
    /// (an edit that deleted a chunk's last lines sits just after it).
    pub fn chunk_at(&self, path: &str, line: usize) -> Option<&Chunk> {
        let file = self.files.get(path)?;
        let holding = |l: usize| {
            file.chunks
                .iter()
                .map(|(_, c)| c)
                .find(|c| c.start_line <= l && l < c.end_line)
        };
        holding(line).or_else(|| line.checked_sub(1).and_then(holding))
    }

    /// The chunks sharing a token with the query made of `parts`, most similar first
    /// (ties: path, then first line). Each part gives its [`MAX_QUERY_TOKENS`] rarest
    /// indexed tokens (ties by token hash); each distinct token counts once.
    pub fn search(&self, parts: &[&str]) -> Vec<Hit> {
        let mut query: Vec<TokenEmbedding<u64>> = Vec::new();
        let n = self.owners.len();
        // In a worktree of some size, a token most chunks have (`self`, `return`)
        // adds little (IDF below ln 2) and would make every chunk a candidate.
        let common = |df: u32| n >= COMMON_AFTER_CHUNKS && 2 * df as usize > n;
        for part in parts {
            let mut tokens: Vec<(u32, TokenEmbedding<u64>)> = distinct(self.embedder.embed(part))
                .0
                .into_iter()
                .filter_map(|t| Some((*self.document_frequency.get(&t.index)?, t)))
                .filter(|(df, _)| !common(*df))
                .collect();
            tokens.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.index.cmp(&b.1.index)));
            query.extend(tokens.into_iter().take(MAX_QUERY_TOKENS).map(|(_, t)| t));
        }
        let mut hits: Vec<Hit> = self
            .scorer
            .matches(&distinct(Embedding(query)))
            .into_iter()
            .filter_map(|scored| {
                let (path, _) = self.owners.get(&scored.id)?;
                let (_, chunk) = self.files[path]
                    .chunks
                    .iter()
                    .find(|(id, _)| *id == scored.id)?;
                Some(Hit {
                    path: path.clone(),
                    chunk: chunk.clone(),
                    score: scored.score,
                })
            })
            .collect();
        hits.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.path.cmp(&b.path))
                .then_with(|| a.chunk.start_line.cmp(&b.chunk.start_line))
        });
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_identifiers_and_their_subwords() {
        let cases: &[(&str, &[&str])] = &[
            ("total_price", &["total_price", "total", "price"]),
            (
                "parseHTTPHeader2(x)",
                &["parsehttpheader2", "parse", "http", "header", "2", "x"],
            ),
            ("a.b + 3 == 'ok'", &["a", "b", "ok"]),
            ("__init__", &["__init__"]),
            ("größe_neu", &["größe_neu", "größe", "neu"]),
        ];
        for (text, expected) in cases {
            assert_eq!(code_tokens(text), *expected, "{text}");
        }
    }

    #[test]
    fn chunk_text_is_the_chunks_lines() {
        let text = "a\nb\nc\n";
        let chunk = |s, e| Chunk {
            start_line: s,
            end_line: e,
            name: None,
        };
        assert_eq!(chunk_text(text, &chunk(1, 3)), "b\nc\n");
        assert_eq!(chunk_text(text, &chunk(0, 1)), "a\n");
        assert_eq!(chunk_text("a\nb", &chunk(1, 2)), "b");
        assert_eq!(chunk_text(text, &chunk(5, 6)), "");
    }

    fn ranking(index: &ChunkIndex, query: &str) -> Vec<(String, usize)> {
        index
            .search(&[query])
            .into_iter()
            .map(|h| (h.path, h.chunk.start_line))
            .collect()
    }

    #[test]
    fn ranks_by_similarity_then_path_and_line_and_updates_one_file() {
        let files = [
            (
                "b.py",
                "def load_users(path):\n    return read_json(path)\n\n\ndef load_orders(path):\n    return read_json(path)\n",
            ),
            (
                "a.py",
                "def load_users(path):\n    return read_json(path)\n",
            ),
            ("c.py", "def area(r):\n    return 3 * r * r\n"),
            ("notes.txt", "load_users everywhere\n"),
        ];
        let mut index =
            ChunkIndex::build(files.iter().map(|(p, t)| (p.to_string(), t.to_string())));
        assert_eq!(index.chunk_count(), 4);
        // Identical chunks tie: path, then line. `load_orders` shares fewer tokens.
        assert_eq!(
            ranking(&index, "load_users(path)"),
            vec![
                ("a.py".to_string(), 0),
                ("b.py".to_string(), 0),
                ("b.py".to_string(), 4)
            ]
        );
        assert_eq!(ranking(&index, "nothing matches"), vec![]);
        // Re-indexing a file replaces its chunks only; an unchanged text is a no-op.
        assert!(!index.update("c.py", Some(files[2].1.to_string())));
        assert!(index.update("a.py", Some("def load_users_v2(path):\n    pass\n".into())));
        assert!(index.update("b.py", None));
        assert_eq!(index.chunk_count(), 2);
        assert_eq!(
            ranking(&index, "load_users(path)"),
            vec![("a.py".to_string(), 0)]
        );
        assert_eq!(index.text("b.py"), None);
        assert_eq!(
            index.chunk_at("a.py", 1).map(|c| c.name.clone()),
            Some(Some("load_users_v2".into()))
        );
    }
}
