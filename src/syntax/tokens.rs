//! Lexical tokens of source text: tree-sitter leaves where a grammar exists, a simple
//! lexical tokenizer otherwise. Used by ES-Token.
//!
//! Rules (documented in `docs/metrics.md` §Excision Score):
//! - a token is a leaf of the syntax tree (any node without children, named or not),
//!   in document order, as the exact source text it covers;
//! - zero-width leaves (tree-sitter's MISSING nodes) are skipped;
//! - source text no leaf covers (string contents around escape sequences, gaps) is
//!   tokenised lexically, so no non-blank text is ever dropped;
//! - comments are one leaf each in every supported grammar; string literals split
//!   into their grammar's leaves (Python: `string_start`, content, `string_end`).

use std::ops::Range;

use super::{Language, parse};

/// Byte ranges of the tokens of `text`: tree-sitter leaves for `language`, else lexical.
pub fn token_ranges(language: Option<Language>, text: &str) -> Vec<Range<usize>> {
    match language {
        Some(language) => leaf_ranges(language, text),
        None => lexical_ranges(text, 0..text.len()),
    }
}

/// The tokens of `text` as string slices (see [`token_ranges`]).
pub fn tokens(language: Option<Language>, text: &str) -> Vec<&str> {
    token_ranges(language, text)
        .into_iter()
        .map(|r| &text[r])
        .collect()
}

/// Leaves of the tree-sitter tree in document order, gaps tokenised lexically.
pub fn leaf_ranges(language: Language, text: &str) -> Vec<Range<usize>> {
    let tree = parse(language, text);
    let mut out = Vec::new();
    let mut covered = 0usize;
    let mut cursor = tree.walk();
    // Iterative pre-order walk: deep trees cannot overflow the stack.
    'walk: loop {
        let node = cursor.node();
        if node.child_count() == 0 {
            let (start, end) = (node.start_byte(), node.end_byte());
            if end > start && start >= covered {
                out.extend(lexical_ranges(text, covered..start));
                out.push(start..end);
                covered = end;
            }
        } else if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out.extend(lexical_ranges(text, covered..text.len()));
    out
}

/// Lexical tokens of `text[range]`: runs of word characters, and every other
/// non-whitespace character on its own; whitespace separates and is dropped.
pub fn lexical_ranges(text: &str, range: Range<usize>) -> Vec<Range<usize>> {
    let base = range.start;
    let s = &text[range];
    let mut out = Vec::new();
    let mut word: Option<usize> = None;
    for (i, c) in s.char_indices() {
        if c == '_' || c.is_alphanumeric() {
            word.get_or_insert(i);
            continue;
        }
        if let Some(st) = word.take() {
            out.push(base + st..base + i);
        }
        if !c.is_whitespace() {
            out.push(base + i..base + i + c.len_utf8());
        }
    }
    if let Some(st) = word {
        out.push(base + st..base + s.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_leaves() {
        let t = tokens(Some(Language::Python), "x = a - b  # note\n");
        assert_eq!(t, ["x", "=", "a", "-", "b", "# note"]);
        let s = tokens(Some(Language::Python), "s = \"a\\nb\"\n");
        assert_eq!(s, ["s", "=", "\"", "a", "\\n", "b", "\""]);
    }

    #[test]
    fn lexical_fallback() {
        assert_eq!(
            tokens(None, "foo(bar_1, 2)->x"),
            ["foo", "(", "bar_1", ",", "2", ")", "-", ">", "x"]
        );
    }
}
