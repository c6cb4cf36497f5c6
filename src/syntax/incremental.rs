//! A source text kept parsed while edits are applied to it, one after another.
//!
//! Each edit is told to the old tree (`Tree::edit`) and the new text is parsed with
//! the old tree as a guide, so tree-sitter reuses every subtree the edit did not
//! touch: a recorded session of thousands of edits costs what the edits change, not
//! thousands of full parses of its files.

use std::ops::Range;

use tree_sitter::{InputEdit, Parser, Point, Tree};

use super::Language;
use super::structure::{FileStructure, analyze_tree};

/// A text, its language and its current syntax tree.
pub struct ParsedText {
    language: Language,
    text: String,
    tree: Tree,
    parser: Parser,
}

/// Row and byte column of `byte` in `text`.
fn point(text: &str, byte: usize) -> Point {
    let before = &text.as_bytes()[..byte];
    let row = before.iter().filter(|&&b| b == b'\n').count();
    let column = byte
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
    Point::new(row, column)
}

impl ParsedText {
    /// Parses `text` in full once.
    pub fn new(language: Language, text: String) -> Self {
        let mut parser = Parser::new();
        parser
            .set_language(&language.grammar())
            .expect("grammar ABI is compatible with the linked tree-sitter (checked by tests)");
        let tree = parser
            .parse(&text, None)
            .expect("parsing without a timeout or cancellation flag always yields a tree");
        ParsedText {
            language,
            text,
            tree,
            parser,
        }
    }

    /// The current text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The scopes and occurrences of `lines` (0-based, end exclusive) of the current text.
    pub fn structure_of_lines(&self, lines: Range<usize>) -> FileStructure {
        analyze_tree(self.language, &self.tree, &self.text, Some(lines))
    }

    /// Replaces bytes `range` by `replacement` (on char boundaries, inside the text)
    /// and reparses incrementally.
    pub fn replace(&mut self, range: Range<usize>, replacement: &str) {
        let start_position = point(&self.text, range.start);
        let old_end_position = point(&self.text, range.end);
        self.text.replace_range(range.clone(), replacement);
        let new_end_byte = range.start + replacement.len();
        self.tree.edit(&InputEdit {
            start_byte: range.start,
            old_end_byte: range.end,
            new_end_byte,
            start_position,
            old_end_position,
            new_end_position: point(&self.text, new_end_byte),
        });
        self.tree = self
            .parser
            .parse(&self.text, Some(&self.tree))
            .expect("parsing without a timeout or cancellation flag always yields a tree");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::structure::analyze;

    /// After each of a series of edits, the incremental tree analyses like a full parse.
    #[test]
    fn incremental_reparse_matches_a_full_parse() {
        let mut parsed = ParsedText::new(
            Language::Python,
            "def f(x):\n    return x\n\n\nclass C:\n    def g(self):\n        pass\n".into(),
        );
        let edits: [(&str, &str); 4] = [
            ("return x", "return compute(x, y)"),
            ("def f(x)", "def f(x, y)"),
            ("        pass\n", "        self.total = f(1, 2)\n"),
            ("class C:", "class Totals(Base):"),
        ];
        for (old, new) in edits {
            let start = parsed.text().find(old).unwrap();
            parsed.replace(start..start + old.len(), new);
            let lines = parsed.text().lines().count();
            assert_eq!(
                parsed.structure_of_lines(0..lines),
                analyze(Language::Python, parsed.text()),
                "after {new:?}"
            );
        }
        assert_eq!(point("ab\ncd", 4), Point::new(1, 1));
    }
}
