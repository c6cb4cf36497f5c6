//! A source file cut into the code chunks `builtin:retrieve` ranks: its functions,
//! methods and other leaf definitions (from tree-sitter, [`crate::core::syntax::definitions`]),
//! and the runs of lines between them (imports, class headers and fields, module code).
//!
//! Every non-blank line of a parsed file is in exactly one chunk, so every edit has a
//! chunk to start the query from. Pure: text and a language in, line ranges out.

use crate::core::syntax::{DefinitionSet, Language, definitions};

/// Definition kinds that hold other definitions: their own lines (header, fields) are
/// left to the runs between chunks, their members become chunks.
const CONTAINER_KINDS: &[&str] = &[
    "class_definition",
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "impl_item",
    "trait_item",
    "mod_item",
];

/// Longest run of in-between lines kept as one chunk: a long script body is cut into
/// windows of this many lines so that one chunk does not match every query.
pub const MAX_RUN_LINES: usize = 50;

/// One chunk: a half-open range of 0-based lines.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Chunk {
    /// First line.
    pub start_line: usize,
    /// Line after the last one.
    pub end_line: usize,
    /// The definition's name; `None` for a run of lines between definitions.
    pub name: Option<String>,
}

/// The chunks of `text`, in line order, not overlapping.
pub fn chunks(language: Language, text: &str) -> Vec<Chunk> {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&s| s < text.len())
        .collect();
    let line_of = |byte: usize| {
        line_starts
            .partition_point(|&s| s <= byte)
            .saturating_sub(1)
    };
    // Outermost leaf definitions: a nested function or closure stays in its function.
    let mut units: Vec<Chunk> = Vec::new();
    let mut covered_to = 0usize;
    for d in definitions(language, text, DefinitionSet::Extended) {
        if CONTAINER_KINDS.contains(&d.kind) || d.start_byte < covered_to || d.end_byte == 0 {
            continue;
        }
        covered_to = d.end_byte;
        // Two definitions may share a line (`}; function g() {`): the line stays with
        // the first.
        let start = line_of(d.start_byte).max(units.last().map_or(0, |u| u.end_line));
        let end = line_of(d.end_byte - 1) + 1;
        if start < end {
            units.push(Chunk {
                start_line: start,
                end_line: end,
                name: d.name,
            });
        }
    }
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = Vec::new();
    let mut next = 0;
    for unit in units {
        out.extend(runs(&lines, next, unit.start_line));
        next = unit.end_line;
        out.push(unit);
    }
    out.extend(runs(&lines, next, lines.len()));
    out
}

/// The lines `from..to` that are not blank, trimmed of blank lines at both ends and
/// cut into windows of at most [`MAX_RUN_LINES`].
fn runs(lines: &[&str], from: usize, to: usize) -> Vec<Chunk> {
    let blank = |i: usize| lines[i].trim().is_empty();
    let Some(first) = (from..to).find(|&i| !blank(i)) else {
        return Vec::new();
    };
    let last = (from..to).rev().find(|&i| !blank(i)).unwrap_or(first);
    (first..=last)
        .step_by(MAX_RUN_LINES)
        .map(|start| Chunk {
            start_line: start,
            end_line: (start + MAX_RUN_LINES).min(last + 1),
            name: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (start_line, end_line, name) of each chunk.
    fn check(language: Language, text: &str, expected: &[(usize, usize, Option<&str>)]) {
        let got: Vec<(usize, usize, Option<String>)> = chunks(language, text)
            .into_iter()
            .map(|c| (c.start_line, c.end_line, c.name))
            .collect();
        let expected: Vec<(usize, usize, Option<String>)> = expected
            .iter()
            .map(|(s, e, n)| (*s, *e, n.map(str::to_string)))
            .collect();
        assert_eq!(got, expected, "{language:?}:\n{text}");
    }

    #[test]
    fn python_functions_methods_and_the_lines_between() {
        check(
            Language::Python,
            "import json\n\n\ndef load(path):\n    def inner():\n        pass\n    return 1\n\n\nclass Store:\n    limit = 3\n\n    def get(self):\n        return self.limit\n\nprint(load('x'))\n",
            &[
                (0, 1, None),
                (3, 7, Some("load")),
                (9, 11, None),
                (12, 14, Some("get")),
                (15, 16, None),
            ],
        );
    }

    #[test]
    fn go_rust_and_javascript_definitions() {
        check(
            Language::Go,
            "package m\n\ntype T struct{ a int }\n\nfunc (t T) A() int {\n\treturn t.a\n}\n",
            &[(0, 1, None), (2, 3, Some("T")), (4, 7, Some("A"))],
        );
        check(
            Language::Rust,
            "use std::fmt;\n\nimpl S {\n    fn a(&self) {}\n    fn b(&self) {}\n}\n",
            // Blank lines inside a run stay in it: `use` and the `impl` header are one.
            &[
                (0, 3, None),
                (3, 4, Some("a")),
                (4, 5, Some("b")),
                (5, 6, None),
            ],
        );
        // Definitions sharing a line: the line stays with the first one.
        check(
            Language::JavaScript,
            "function f() {\n  return 1;\n}; function g() {\n  return 2;\n}\n",
            &[(0, 3, Some("f")), (3, 5, Some("g"))],
        );
    }

    #[test]
    fn long_runs_are_cut_into_windows_and_blank_text_has_none() {
        let script = "x = 1\n".repeat(MAX_RUN_LINES + 2);
        check(
            Language::Python,
            &script,
            &[
                (0, MAX_RUN_LINES, None),
                (MAX_RUN_LINES, MAX_RUN_LINES + 2, None),
            ],
        );
        check(Language::Python, "\n\n  \n", &[]);
        check(Language::Python, "", &[]);
    }
}
