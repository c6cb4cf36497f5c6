//! `builtin:retrieve`'s answer to `complete`: the retrieval baseline of completion
//! tasks. It copies the function most like the hole's surroundings.
//!
//! - **Candidates**: the call's context chunks (hints and retrieved context, as sent)
//!   and the functions of the worktree's files (the task's state), except those of
//!   the task's own file the query is made of (the function with the hole, and
//!   neighbours that would only match themselves).
//! - **Query**: the last [`QUERY_PREFIX_LINES`] lines of the prefix and the first
//!   [`QUERY_SUFFIX_LINES`] lines of the suffix, ranked by [`ChunkIndex`] (BM25;
//!   ties by path, then line).
//! - **Answer**: when the line before the hole opens a block (ends with `:` or `{`),
//!   the best function's body (its lines after the header, without a closing `}`),
//!   else the whole function; dedented, then indented as the hole is (the block's
//!   indentation plus one level, a tab in Go or tab-indented files, else four
//!   spaces). Nothing found: empty text. Pure and deterministic.

use super::chunks::Chunk;
use super::index::{ChunkIndex, chunk_text};
use crate::core::syntax::Language;
use crate::engine::suggest::protocol::{CompleteParams, CompleteResult, SuggesterRead};

/// Lines of the prefix the query takes (the nearest ones).
pub const QUERY_PREFIX_LINES: usize = 15;
/// Lines of the suffix the query takes.
pub const QUERY_SUFFIX_LINES: usize = 5;

/// Where a candidate came from: a context chunk or a worktree file's function.
enum Origin {
    Context(usize),
    Worktree,
}

/// A worktree's files (path, text) with their function chunks: what every `complete`
/// of one state searches (parsed once per state).
pub type Functions = Vec<(String, String, Vec<Chunk>)>;

/// The function chunks of `files` (the worktree's files: path, text).
pub fn functions(files: Vec<(String, String)>) -> Functions {
    files
        .into_iter()
        .filter_map(|(path, text)| {
            let language = Language::from_path(std::path::Path::new(&path))?;
            let functions: Vec<Chunk> = super::chunks::chunks(language, &text)
                .into_iter()
                .filter(|c| c.name.is_some())
                .collect();
            Some((path, text, functions))
        })
        .collect()
}

/// The answer to `params` from `files` (the worktree's [`functions`]).
pub fn complete(params: &CompleteParams, files: &Functions) -> CompleteResult {
    let mut indexed: Vec<(String, String, Vec<Chunk>)> = Vec::new();
    for (i, context) in params.context.iter().enumerate() {
        let lines = context.text.split_inclusive('\n').count();
        let whole = Chunk {
            start_line: 0,
            end_line: lines,
            name: Some(context.file.clone()),
        };
        indexed.push((context_key(i), context.text.clone(), vec![whole]));
    }
    for (path, text, chunks) in files {
        let kept: Vec<Chunk> = chunks
            .iter()
            .filter(|c| !(*path == params.file && overlaps_query(c, params.line)))
            .cloned()
            .collect();
        indexed.push((path.clone(), text.clone(), kept));
    }
    let index = ChunkIndex::build_chunked(indexed);
    let prefix_lines: Vec<&str> = params.prefix.split_inclusive('\n').collect();
    let near_prefix =
        prefix_lines[prefix_lines.len().saturating_sub(QUERY_PREFIX_LINES)..].concat();
    let near_suffix: String = params
        .suffix
        .split_inclusive('\n')
        .take(QUERY_SUFFIX_LINES)
        .collect();
    let Some(best) = index
        .search(&[&near_prefix, &near_suffix])
        .into_iter()
        .next()
    else {
        return CompleteResult::default();
    };
    let origin = match best.path.strip_prefix(CONTEXT_KEY) {
        Some(i) => Origin::Context(i.parse().unwrap_or(0)),
        None => Origin::Worktree,
    };
    let text = index
        .text(&best.path)
        .map_or("", |t| chunk_text(t, &best.chunk));
    let read = match origin {
        Origin::Context(i) => {
            let c = &params.context[i.min(params.context.len() - 1)];
            SuggesterRead {
                file: c.file.clone(),
                start_line: c.start_line,
                end_line: Some(c.end_line),
            }
        }
        Origin::Worktree => SuggesterRead {
            file: best.path.clone(),
            start_line: best.chunk.start_line,
            end_line: Some(best.chunk.end_line),
        },
    };
    let hole = Hole::of(&params.prefix, params.language.as_deref());
    let source = if hole.opens_block {
        body(text)
    } else {
        text.to_string()
    };
    CompleteResult {
        text: reindent(&source, &hole),
        reads: vec![read],
    }
}

/// Whether a chunk of the task's own file overlaps the lines the query is made of
/// (the function with the hole, and neighbours that would only match themselves).
fn overlaps_query(chunk: &Chunk, line: usize) -> bool {
    let first = line.saturating_sub(QUERY_PREFIX_LINES);
    chunk.start_line <= line + QUERY_SUFFIX_LINES && first < chunk.end_line
}

/// Path prefix of the context chunks in the index (never a worktree path: it has a
/// colon and no extension).
const CONTEXT_KEY: &str = "context:";

fn context_key(i: usize) -> String {
    format!("{CONTEXT_KEY}{i}")
}

/// How the hole is indented.
#[derive(Debug, PartialEq)]
struct Hole {
    /// The indentation of the hole's lines.
    indent: String,
    /// Whether the first line's indentation is already in the prefix (the cursor is
    /// after it on its line).
    indented_already: bool,
    /// Whether the line before the hole opens a block (the hole is a body).
    opens_block: bool,
}

impl Hole {
    fn of(prefix: &str, language: Option<&str>) -> Hole {
        let (before, last) = match prefix.rfind('\n') {
            Some(i) => (&prefix[..i], &prefix[i + 1..]),
            None => ("", prefix),
        };
        let previous = before
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        let opens_block = {
            let t = previous.trim_end();
            t.ends_with(':') || t.ends_with('{')
        };
        let leading = |l: &str| l[..l.len() - l.trim_start().len()].to_string();
        if !last.is_empty() {
            return Hole {
                indent: leading(last),
                indented_already: true,
                opens_block,
            };
        }
        let mut indent = leading(previous);
        if opens_block {
            let tabs = indent.contains('\t') || language == Some("go");
            indent.push_str(if tabs { "\t" } else { "    " });
        }
        Hole {
            indent,
            indented_already: false,
            opens_block,
        }
    }
}

/// A function's lines after its header (up to the first line ending with `:` or `{`),
/// without the closing `}` line of a brace language.
fn body(function: &str) -> String {
    let lines: Vec<&str> = function.split_inclusive('\n').collect();
    let Some(header_end) = lines.iter().position(|l| {
        let t = l.trim_end();
        t.ends_with(':') || t.ends_with('{')
    }) else {
        return function.to_string();
    };
    let braces = lines[header_end].trim_end().ends_with('{');
    let mut rest = &lines[header_end + 1..];
    if braces
        && let Some(last) = rest.iter().rposition(|l| !l.trim().is_empty())
        && rest[last].trim() == "}"
    {
        rest = &rest[..last];
    }
    rest.concat()
}

/// `text` dedented, then each non-blank line indented as `hole` says.
fn reindent(text: &str, hole: &Hole) -> String {
    let common = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if line.trim().is_empty() {
            out.push_str(&line[line.len() - line.trim_start_matches([' ', '\t']).len()..]);
            continue;
        }
        if !(i == 0 && hole.indented_already) {
            out.push_str(&hole.indent);
        }
        out.push_str(&line[common.min(line.len() - line.trim_start().len())..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::suggest::protocol::CompleteContext;

    fn params(prefix: &str, suffix: &str, context: Vec<CompleteContext>) -> CompleteParams {
        CompleteParams {
            task: "t".into(),
            worktree: "/nowhere".into(),
            language: Some("python".into()),
            file: "shop.py".into(),
            line: prefix.matches('\n').count(),
            column: prefix.len() - prefix.rfind('\n').map_or(0, |i| i + 1),
            prefix: prefix.into(),
            suffix: suffix.into(),
            scenario: "full_block".into(),
            context,
        }
    }

    #[test]
    fn the_hole_is_indented_as_its_block() {
        let hole = |p| Hole::of(p, Some("python"));
        assert_eq!(
            hole("class A:\n    def f(self):\n"),
            Hole {
                indent: "        ".into(),
                indented_already: false,
                opens_block: true
            }
        );
        assert_eq!(
            hole("def f():\n    x = 1\n    "),
            Hole {
                indent: "    ".into(),
                indented_already: true,
                opens_block: false
            }
        );
        assert_eq!(Hole::of("func f() {\n", Some("go")).indent, "\t");
    }

    #[test]
    fn bodies_lose_their_header_and_closing_brace() {
        assert_eq!(
            body("def f(a,\n      b):\n    return a\n"),
            "    return a\n"
        );
        assert_eq!(body("func f() {\n\treturn 1\n}\n"), "\treturn 1\n");
        assert_eq!(body("x = 1\n"), "x = 1\n");
    }

    #[test]
    fn copies_the_most_similar_function_body_at_the_holes_indentation() {
        let shop = "def total_price(items):\n    return sum(i.price * i.count for i in items)\n\n\nclass Cart:\n    def total_weight(self, items):\n";
        let files = vec![
            (
                "shop.py".to_string(),
                format!("{shop}\n    def other(self):\n        return 0\n"),
            ),
            (
                "util.py".to_string(),
                "def total_weight(items):\n    return sum(i.weight * i.count for i in items)\n\n\ndef greet(name):\n    print(name)\n".to_string(),
            ),
        ];
        let got = complete(
            &params(shop, "\n    def other(self):\n", vec![]),
            &functions(files.clone()),
        );
        assert_eq!(
            got.text,
            "        return sum(i.weight * i.count for i in items)\n"
        );
        assert_eq!(
            got.reads,
            vec![SuggesterRead {
                file: "util.py".into(),
                start_line: 0,
                end_line: Some(2)
            }]
        );
        // A context chunk that matches better wins, and is reported where it came from.
        let hint = CompleteContext {
            file: "lib/weights.py".into(),
            start_line: 10,
            end_line: 12,
            text: "    def total_weight(self, items):\n        return sum(i.weight * i.count * self.unit for i in items)\n".into(),
        };
        let got = complete(&params(shop, "", vec![hint]), &functions(files));
        assert_eq!(
            got.text,
            "        return sum(i.weight * i.count * self.unit for i in items)\n"
        );
        assert_eq!(got.reads[0].file, "lib/weights.py");
        assert_eq!(
            complete(&params("", "", vec![]), &Vec::new()),
            CompleteResult::default()
        );
    }
}
