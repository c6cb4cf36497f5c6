//! A source text kept parsed while edits are applied to it, one after another.
//!
//! Each edit is told to the old tree (`Tree::edit`) and the new text is parsed with
//! the old tree as a guide, so tree-sitter reuses every subtree the edit did not
//! touch: a recorded session of thousands of edits costs what the edits change, not
//! thousands of full parses of its files.

use std::ops::Range;

use tree_sitter::{InputEdit, Node, Parser, Point, Tree};

use super::Language;
use super::structure::{FileStructure, analyze_tree};

/// A text, its language and its syntax tree.
///
/// Python's grammar marks the repetition nodes of a statement list fragile, so
/// tree-sitter relexes every statement of a block on each reparse: a function of
/// thousands of statements costs thousands of statements per edit. For Python the
/// full tree is therefore only told about edits (`Tree::edit`) and reparsed now and
/// then; a query in between parses a *window*: the headers of the enclosing
/// constructs (`class C:`, `def f(x):`) and the statements around the lines, as
/// tree-sitter included ranges of the real text (so rows and columns are the
/// file's). The window must be bounded by statements no edit touched since the
/// last full parse and must parse without errors; otherwise the whole text is
/// reparsed (incrementally) and queried as before.
pub struct ParsedText {
    language: Language,
    text: String,
    tree: Tree,
    parser: Parser,
    /// Byte ranges (current coordinates, ends inclusive) where edits since the
    /// last full parse make `tree` unreliable; empty when `tree` is current.
    dirty: Vec<Range<usize>>,
    /// How many queries a window answered and how many full reparses were done.
    counts: (usize, usize),
    /// False to reparse in full after every edit (the reference windows must match).
    windows: bool,
}

/// More edits than this between full parses make windows wide: reparse in full.
const MAX_DIRTY: usize = 128;

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
    /// Parses `text` in full once; later queries use windows where they can.
    pub fn new(language: Language, text: String) -> Self {
        Self::with_windows(language, text, true)
    }

    /// Parses `text` in full once; with `windows` false every edit is followed by a
    /// full (incremental) reparse, the reference a window's answers must equal.
    pub fn with_windows(language: Language, text: String, windows: bool) -> Self {
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
            dirty: Vec::new(),
            counts: (0, 0),
            windows,
        }
    }

    /// The current text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The scopes and occurrences of `lines` (0-based, end exclusive) of the current
    /// text. Scopes that enclose a window end where the window ends (`end_line`);
    /// everything on `lines` is as a full parse has it.
    pub fn structure_of_lines(&mut self, lines: Range<usize>) -> FileStructure {
        if !self.dirty.is_empty() {
            if let Some(window) = self.window_tree(&lines) {
                self.counts.0 += 1;
                return analyze_tree(self.language, &window, &self.text, Some(lines));
            }
            self.reparse();
        }
        analyze_tree(self.language, &self.tree, &self.text, Some(lines))
    }

    /// Replaces bytes `range` by `replacement` (on char boundaries, inside the text);
    /// the tree follows (reparsed at once, or for Python when a window cannot do).
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
        self.mark_dirty(range, replacement.len());
        if !self.windows || self.language != Language::Python || self.dirty.len() > MAX_DIRTY {
            self.reparse();
        }
    }

    /// Records that bytes `range` became `new_len` bytes: later dirty ranges shift,
    /// overlapping ones merge with the new one.
    fn mark_dirty(&mut self, range: Range<usize>, new_len: usize) {
        let new_end = range.start + new_len;
        // Where a byte at or after the edit's end moves to.
        let moved = |b: usize| b - range.end + new_end;
        let mut merged = range.start..new_end;
        let mut kept = Vec::with_capacity(self.dirty.len() + 1);
        for d in self.dirty.drain(..) {
            if d.end < range.start {
                kept.push(d);
            } else if d.start > range.end {
                kept.push(moved(d.start)..moved(d.end));
            } else {
                // Overlaps (or touches) the edit: one dirty range with it.
                let end = if d.end > range.end {
                    moved(d.end)
                } else {
                    new_end
                };
                merged = merged.start.min(d.start)..merged.end.max(end);
            }
        }
        let at = kept.partition_point(|d| d.end < merged.start);
        kept.insert(at, merged);
        self.dirty = kept;
    }

    /// True when bytes `start..=end` meet a dirty range.
    fn touches_dirty(&self, start: usize, end: usize) -> bool {
        let at = self.dirty.partition_point(|d| d.end < start);
        self.dirty.get(at).is_some_and(|d| d.start <= end)
    }

    /// Queries answered by a window and full reparses so far.
    pub fn counts(&self) -> (usize, usize) {
        self.counts
    }

    /// Reparses the whole text with the edited tree as a guide.
    fn reparse(&mut self) {
        self.counts.1 += 1;
        self.parser
            .set_included_ranges(&[])
            .expect("an empty list of ranges is always valid");
        self.tree = self
            .parser
            .parse(&self.text, Some(&self.tree))
            .expect("parsing without a timeout or cancellation flag always yields a tree");
        self.dirty.clear();
    }

    /// A tree of the window around `lines` (Python), or `None` when no clean window
    /// exists or it does not parse without errors.
    fn window_tree(&mut self, lines: &Range<usize>) -> Option<Tree> {
        if self.language != Language::Python {
            return None;
        }
        // One line of margin on each side, so the window's edges are whole statements.
        let (low, high) = (
            lines.start.saturating_sub(1),
            lines.end.max(lines.start + 1),
        );
        let overlaps = |c: &Node| c.end_position().row >= low && c.start_position().row <= high;
        let is_list = |n: &Node| matches!(n.kind(), "module" | "block");
        let mut headers: Vec<tree_sitter::Range> = Vec::new();
        let mut node = self.tree.root_node();
        // Descend while one child holds all the lines.
        loop {
            let mut cursor = node.walk();
            let overlapping: Vec<Node> = node.children(&mut cursor).filter(overlaps).collect();
            let [child] = overlapping[..] else { break };
            if child.start_position().row > low
                || child.end_position().row < high
                || child.child_count() == 0
            {
                break;
            }
            if !is_list(&node) {
                // The construct's header: `def f(x):`, `class C:`, `if x:`, a decorator.
                headers.push(header(node, child));
            }
            node = child;
        }
        // The window is a run of statements of a block (or the module): climb to one.
        while !is_list(&node) {
            let parent = node.parent()?;
            if !is_list(&parent) {
                headers.pop();
            }
            node = parent;
        }
        if headers
            .iter()
            .any(|h| self.touches_dirty(h.start_byte, h.end_byte))
        {
            return None;
        }
        // Its edges: the nearest statements before and after the lines that no edit
        // touched (all text between them is parsed, edited or not); the module's
        // start and end when there are none.
        let query_end = lines.end.max(lines.start + 1);
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        // A comment cannot be an edge: at a window's start it would fall outside the block.
        let clean = |c: &Node| !c.is_extra() && !self.touches_dirty(c.start_byte(), c.end_byte());
        let ending_before = children.partition_point(|c| c.end_position().row < lines.start);
        let before = children[..ending_before].iter().rposition(clean);
        let after = children
            .iter()
            .position(|c| c.start_position().row >= query_end && clean(c));
        let module = node.kind() == "module";
        let (start_byte, start_point) = match before {
            Some(i) => (children[i].start_byte(), children[i].start_position()),
            None if module => (0, Point::new(0, 0)),
            None => return None,
        };
        let (end_byte, end_point) = match after {
            Some(i) => (children[i].end_byte(), children[i].end_position()),
            None if module => (self.text.len(), point(&self.text, self.text.len())),
            None => return None,
        };
        // A comment left of the block's indentation would end the block in a window
        // (in the whole text the scanner looks past it): the window leaves such
        // lines out, so the statements on both sides stay one block.
        let indent = start_point.column;
        let (mut piece_byte, mut piece_point) = (start_byte, start_point);
        let mut line_byte = start_byte - start_point.column;
        let mut row = start_point.row;
        while line_byte < end_byte {
            let line_end = self.text[line_byte..]
                .find('\n')
                .map_or(self.text.len(), |i| line_byte + i + 1);
            let line = &self.text[line_byte..line_end];
            let code = line.trim_start();
            if row > start_point.row && code.starts_with('#') && line.len() - code.len() < indent {
                if piece_byte < line_byte {
                    headers.push(tree_sitter::Range {
                        start_byte: piece_byte,
                        end_byte: line_byte,
                        start_point: piece_point,
                        end_point: Point::new(row, 0),
                    });
                }
                piece_byte = line_end;
                piece_point = Point::new(row + 1, 0);
            }
            line_byte = line_end;
            row += 1;
        }
        if piece_byte >= end_byte {
            return None;
        }
        headers.push(tree_sitter::Range {
            start_byte: piece_byte,
            end_byte,
            start_point: piece_point,
            end_point,
        });
        self.parser.set_included_ranges(&headers).ok()?;
        let window = self.parser.parse(&self.text, None);
        self.parser
            .set_included_ranges(&[])
            .expect("an empty list of ranges is always valid");
        window.filter(|w| !w.root_node().has_error())
    }
}

/// A construct's header: from its start to the start of its part that holds the
/// lines, with the nodes' own points (exact: no edit since the full parse meets it).
fn header(construct: Node, inner: Node) -> tree_sitter::Range {
    tree_sitter::Range {
        start_byte: construct.start_byte(),
        end_byte: inner.start_byte(),
        start_point: construct.start_position(),
        end_point: inner.start_position(),
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

    /// Scopes (without `end_line`, which a window clips) and occurrences, comparable.
    fn described(s: &FileStructure) -> (Vec<String>, Vec<String>) {
        let scope = |i: Option<usize>| {
            i.map(|i| {
                let sc = &s.scopes[i];
                format!(
                    "{:?} {} {} {}",
                    sc.kind,
                    sc.signature,
                    sc.start_line,
                    sc.parent
                        .map_or(String::new(), |p| s.scopes[p].name.clone())
                )
            })
        };
        (
            (0..s.scopes.len())
                .map(|i| scope(Some(i)).unwrap())
                .collect(),
            s.occurrences
                .iter()
                .map(|o| {
                    format!(
                        "{} {}:{} {:?} {} {} {} {:?} {:?}",
                        o.name,
                        o.line,
                        o.column,
                        o.role,
                        o.attribute,
                        o.call,
                        o.keyword,
                        o.callee,
                        scope(o.scope)
                    )
                })
                .collect(),
        )
    }

    /// 300 edits in long Python blocks (nested class, decorated method, new
    /// statements, renames, deletions, comments, statements over two lines): before
    /// and after each, the edit's lines analyse as in a full parse of the text, and
    /// most queries were answered by windows.
    #[test]
    fn windows_analyse_like_a_full_parse() {
        let body = "        value = compute(value, 42)  # ordinary\n".repeat(60);
        let text = format!(
            "import os\n\n\nclass Totals(Base):\n    @staticmethod\n    def run(value, key=1):\n{body}        return value\n\n    def other(self):\n{body}        return self\n\n\ndef main(value):\n{}    return value\n",
            body.replace("        ", "    ")
        );
        let mut parsed = ParsedText::new(Language::Python, text);
        let mut state = 17u64;
        for step in 0..300 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let roll = (state >> 33) as usize;
            let text = parsed.text().to_string();
            let starts: Vec<usize> = std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .filter(|&i| i < text.len())
                .collect();
            let line = roll % starts.len();
            let at = starts[line];
            let end = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
            let line_text = text[at..end].trim_end_matches('\n');
            let indent = &line_text[..line_text.len() - line_text.trim_start().len()];
            let (range, replacement) = match roll % 5 {
                0 | 1 => (
                    at..at,
                    format!("{indent}total_{step} = compute(value, key={step})\n"),
                ),
                2 => match text[at..end].find("value") {
                    Some(i) => (at + i..at + i + 5, "amount".to_string()),
                    None => (at..at, format!("{indent}# note {step}\n")),
                },
                3 if !text[at..end].contains("def ")
                    && !text[at..end].contains("class ")
                    && !text[at..end].trim().is_empty() =>
                {
                    (at..end, String::new())
                }
                _ => (
                    at..at,
                    format!("{indent}print(value\n{indent}      , {step})\n"),
                ),
            };
            let before_lines = line..line + text[range.clone()].matches('\n').count().max(1);
            let before = parsed.structure_of_lines(before_lines.clone());
            assert_eq!(
                described(&before),
                described(&{
                    let full = analyze(Language::Python, parsed.text());
                    let tree = crate::syntax::parse(Language::Python, parsed.text());
                    let _ = full;
                    crate::syntax::structure::analyze_tree(
                        Language::Python,
                        &tree,
                        parsed.text(),
                        Some(before_lines.clone()),
                    )
                }),
                "before step {step}"
            );
            parsed.replace(range.clone(), &replacement);
            let after_lines = line..line + replacement.matches('\n').count().max(1);
            let after = parsed.structure_of_lines(after_lines.clone());
            let tree = crate::syntax::parse(Language::Python, parsed.text());
            assert_eq!(
                described(&after),
                described(&crate::syntax::structure::analyze_tree(
                    Language::Python,
                    &tree,
                    parsed.text(),
                    Some(after_lines)
                )),
                "after step {step}: {replacement:?}"
            );
        }
        let (windows, full) = parsed.counts();
        // 600 queries: the rest needed a full parse (a header or a block's edge edited,
        // the lines at a block's end, a window with an error).
        assert_eq!((windows, full), (379, 132));
    }
}
