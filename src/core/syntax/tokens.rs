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
    leaves_of(&parse(language, text), text)
}

/// Token ranges of `base` and of each of `revisions`, where the revisions are parsed
/// incrementally from `base`'s tree (tree-sitter reuses the unchanged subtrees, so a
/// small edit to a large file costs a fraction of a parse). Same tokens as
/// [`leaf_ranges`] on each text.
pub fn revision_leaf_ranges(
    language: Language,
    base: &str,
    revisions: &[&str],
) -> (Vec<Range<usize>>, Vec<Vec<Range<usize>>>) {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .expect("grammar ABI is compatible with the linked tree-sitter (checked by tests)");
    let base_tree = parser
        .parse(base, None)
        .expect("parsing without a timeout or cancellation flag always yields a tree");
    let others = revisions
        .iter()
        .map(|text| {
            let mut tree = base_tree.clone();
            tree.edit(&input_edit(base, text));
            let tree = parser
                .parse(text, Some(&tree))
                .expect("parsing without a timeout or cancellation flag always yields a tree");
            leaves_of(&tree, text)
        })
        .collect();
    (leaves_of(&base_tree, base), others)
}

/// The single edit turning `old` into `new`: everything between their common prefix and
/// common suffix (on char boundaries).
fn input_edit(old: &str, new: &str) -> tree_sitter::InputEdit {
    let (ob, nb) = (old.as_bytes(), new.as_bytes());
    let mut prefix = ob.iter().zip(nb).take_while(|(a, b)| a == b).count();
    while !old.is_char_boundary(prefix) {
        prefix -= 1;
    }
    let max_suffix = ob.len().min(nb.len()) - prefix;
    let mut suffix = ob
        .iter()
        .rev()
        .zip(nb.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    while !old.is_char_boundary(ob.len() - suffix) || !new.is_char_boundary(nb.len() - suffix) {
        suffix -= 1;
    }
    let point = |text: &str, byte: usize| {
        let before = &text.as_bytes()[..byte];
        let row = memchr::memchr_iter(b'\n', before).count();
        let col = byte - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        tree_sitter::Point::new(row, col)
    };
    tree_sitter::InputEdit {
        start_byte: prefix,
        old_end_byte: ob.len() - suffix,
        new_end_byte: nb.len() - suffix,
        start_position: point(old, prefix),
        old_end_position: point(old, ob.len() - suffix),
        new_end_position: point(new, nb.len() - suffix),
    }
}

fn leaves_of(tree: &tree_sitter::Tree, text: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut covered = 0usize;
    let mut cursor = tree.walk();
    // Iterative pre-order walk: deep trees cannot overflow the stack.
    'walk: loop {
        let node = cursor.node();
        if node.child_count() == 0 {
            let (start, end) = (node.start_byte(), node.end_byte());
            if end > start && start >= covered {
                // Gaps between leaves are almost always whitespace: skip the lexer then.
                if !text[covered..start]
                    .bytes()
                    .all(|b| b.is_ascii_whitespace())
                {
                    out.extend(lexical_ranges(text, covered..start));
                }
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
    fn incremental_revisions_tokenise_like_fresh_parses() {
        let base = "def f(x):\n    s = \"a\"\n    return x + 1  # one\n\nclass A:\n    pass\n";
        let revisions = [
            base.replace("x + 1", "x - 1"),
            base.replace("\"a\"", "\"a\\nb\" + 'é'"),
            base.replace("class A:\n    pass\n", ""),
            format!("import os\n{base}"),
            base.replace("return", "retur n("),
            String::new(),
        ];
        let refs: Vec<&str> = revisions.iter().map(String::as_str).collect();
        let (b, others) = revision_leaf_ranges(Language::Python, base, &refs);
        assert_eq!(b, leaf_ranges(Language::Python, base));
        for (text, got) in refs.iter().zip(others) {
            assert_eq!(got, leaf_ranges(Language::Python, text), "{text:?}");
        }
    }

    #[test]
    fn lexical_fallback() {
        assert_eq!(
            tokens(None, "foo(bar_1, 2)->x"),
            ["foo", "(", "bar_1", ",", "2", ")", "-", ">", "x"]
        );
    }
}
