//! Where each line of a text starts, kept up to date across edits: the row and
//! column of a byte is a binary search, not a count of the newlines before it.
//!
//! Rows are tree-sitter's: a new row starts after each `\n` (a lone `\r` is not a
//! line break to tree-sitter, unlike the LSP line index of `record::document`).

use std::ops::Range;

use tree_sitter::Point;

/// The byte offset of every line's start, in order (the first is 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineStarts(Vec<usize>);

impl LineStarts {
    /// The line starts of `text`.
    pub fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineStarts(starts)
    }

    /// Row and byte column of `byte` (a byte of the text or its end).
    pub fn point(&self, byte: usize) -> Point {
        let row = self.0.partition_point(|&start| start <= byte) - 1;
        Point::new(row, byte - self.0[row])
    }

    /// The byte where `row` starts, `None` past the last row.
    pub fn start(&self, row: usize) -> Option<usize> {
        self.0.get(row).copied()
    }

    /// Follows the text's bytes `range` becoming `replacement`: the rows the range
    /// joined go, the replacement's rows come in, later starts move by the change in
    /// length (one pass over the later rows' offsets: a memory move, no text read).
    pub fn replace(&mut self, range: Range<usize>, replacement: &str) {
        // Rows starting inside (start, end] begin after a newline the range removes.
        let first = self.0.partition_point(|&start| start <= range.start);
        let last = self.0.partition_point(|&start| start <= range.end);
        let new_end = range.start + replacement.len();
        let added = memchr::memchr_iter(b'\n', replacement.as_bytes())
            .map(|i| range.start + i + 1)
            .collect::<Vec<_>>();
        let moved = first + added.len();
        self.0.splice(first..last, added);
        for start in &mut self.0[moved..] {
            // Every later start is past the range's end: it keeps its distance from it.
            *start = *start - range.end + new_end;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After every edit of a series (joining lines, splitting them, at the text's
    /// start and end), the table equals one built from the new text, and points are
    /// the rows and columns counted from the start.
    #[test]
    fn edits_keep_the_table_of_a_fresh_text() {
        let mut text = String::from("ab\ncd\n\nef");
        let mut starts = LineStarts::new(&text);
        assert_eq!(starts.0, vec![0, 3, 6, 7]);
        let edits: [(Range<usize>, &str); 7] = [
            (1..4, ""),
            (0..0, "x\ny\n"),
            (2..2, "\n\n"),
            (5..9, "q"),
            (0..0, ""),
            (7..7, "tail\n"),
            (0..5, "\r\n"),
        ];
        for (range, replacement) in edits {
            text.replace_range(range.clone(), replacement);
            starts.replace(range, replacement);
            assert_eq!(
                starts,
                LineStarts::new(&text),
                "after {replacement:?}: {text:?}"
            );
            for byte in 0..=text.len() {
                let before = &text[..byte];
                let row = before.matches('\n').count();
                let column = byte - before.rfind('\n').map_or(0, |i| i + 1);
                assert_eq!(
                    starts.point(byte),
                    Point::new(row, column),
                    "{byte} of {text:?}"
                );
            }
        }
        assert_eq!((starts.start(1), starts.start(9)), (Some(2), None));
    }
}
