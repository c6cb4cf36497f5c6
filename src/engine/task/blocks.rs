//! The code blocks a completion task can remove, from tree-sitter: functions,
//! `if`/`for`/`while`/`try` statements and single statements inside functions
//! (Codev-Bench's block types), each with the byte range of its inner block (the body
//! after the header) and, for functions, the body to write once the signature and
//! docstring are given (HumanEvo).
//!
//! Pure: a language and a text in, byte ranges out.

use std::ops::Range;

use super::{BlockKind, Cursor};
use crate::core::syntax::{Language, parse};

/// One block of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What kind of block it is.
    pub kind: BlockKind,
    /// The whole block: from its first byte (after the indentation) to its end.
    pub range: Range<usize>,
    /// The inner block (the lines after the header, up to the closing brace
    /// excluded), when the block has a non-empty one.
    pub inner: Option<Range<usize>>,
    /// For functions: the body after the signature and docstring (what HumanEvo asks
    /// for), when there is code left to write.
    pub body_after_doc: Option<Range<usize>>,
}

/// Node kinds of compound blocks per language, with their block kind.
fn compound_kind(language: Language, kind: &str) -> Option<BlockKind> {
    use BlockKind::*;
    Some(match (language, kind) {
        (Language::Python, "function_definition" | "async_function_definition")
        | (Language::Go, "function_declaration" | "method_declaration")
        | (Language::Java, "method_declaration" | "constructor_declaration")
        | (
            Language::JavaScript | Language::TypeScript | Language::Tsx,
            "function_declaration" | "method_definition",
        ) => Function,
        (_, "if_statement") => If,
        (_, "for_statement" | "for_in_statement" | "enhanced_for_statement") => For,
        (_, "while_statement" | "do_statement") => While,
        (_, "try_statement") => Try,
        _ => return None,
    })
}

/// Node kinds of simple statements per language (blocks only inside a function).
fn is_statement(language: Language, kind: &str) -> bool {
    match language {
        Language::Python => matches!(
            kind,
            "expression_statement"
                | "return_statement"
                | "raise_statement"
                | "assert_statement"
                | "delete_statement"
        ),
        Language::Go => matches!(
            kind,
            "short_var_declaration"
                | "assignment_statement"
                | "return_statement"
                | "expression_statement"
                | "inc_statement"
                | "dec_statement"
                | "var_declaration"
                | "defer_statement"
                | "go_statement"
        ),
        Language::Java => matches!(
            kind,
            "expression_statement"
                | "return_statement"
                | "local_variable_declaration"
                | "throw_statement"
        ),
        Language::JavaScript | Language::TypeScript | Language::Tsx => matches!(
            kind,
            "expression_statement"
                | "return_statement"
                | "lexical_declaration"
                | "variable_declaration"
                | "throw_statement"
        ),
        Language::Rust => false,
    }
}

/// Whether blocks of `language` are delimited by indentation (Python) or braces.
fn indented(language: Language) -> bool {
    language == Language::Python
}

/// Every block of `text`, in document order (outer before inner).
pub fn blocks(language: Language, text: &str) -> Vec<Block> {
    if language == Language::Rust {
        return Vec::new();
    }
    let tree = parse(language, text);
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    // How many function nodes enclose the current one (statements count only inside).
    let mut function_depth: Vec<bool> = Vec::new();
    'walk: loop {
        let node = cursor.node();
        let compound = compound_kind(language, node.kind());
        let in_function = function_depth.iter().any(|f| *f);
        if node.is_named() && !node.has_error() {
            if let Some(kind) = compound {
                out.push(Block {
                    kind,
                    range: node.start_byte()..node.end_byte(),
                    inner: inner_block(language, node, text),
                    body_after_doc: (kind == BlockKind::Function)
                        .then(|| body_after_doc(language, node, text))
                        .flatten(),
                });
            } else if in_function && is_statement(language, node.kind()) && in_body(node) {
                out.push(Block {
                    kind: BlockKind::Statement,
                    range: node.start_byte()..node.end_byte(),
                    inner: None,
                    body_after_doc: None,
                });
            }
        }
        // A statement's own sub-nodes are no further blocks; descend everything else.
        let descend = !(in_function && is_statement(language, node.kind()));
        if descend && cursor.goto_first_child() {
            function_depth.push(compound == Some(BlockKind::Function));
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
            function_depth.pop();
        }
    }
    out
}

/// Whether a statement sits directly in a block of statements (not in a `for`
/// clause), and is not a bare string (a docstring is no code to complete).
fn in_body(node: tree_sitter::Node<'_>) -> bool {
    let bare_string = node.kind() == "expression_statement"
        && node.named_child_count() == 1
        && node.named_child(0).is_some_and(|c| c.kind() == "string");
    !bare_string
        && node.parent().is_some_and(|p| {
            matches!(
                p.kind(),
                "block" | "statement_list" | "statement_block" | "constructor_body"
            )
        })
}

/// The node holding a compound block's statements.
fn body_node<'t>(node: tree_sitter::Node<'t>) -> Option<tree_sitter::Node<'t>> {
    node.child_by_field_name("body")
        .or_else(|| node.child_by_field_name("consequence"))
}

/// The lines after the header: for an indented body, from the start of its first line
/// (when it is below the header) to its end; for a braced one, from the line after
/// `{` to the start of the line holding `}`.
fn inner_block(
    language: Language,
    node: tree_sitter::Node<'_>,
    text: &str,
) -> Option<Range<usize>> {
    let body = body_node(node)?;
    inner_of(language, node, body, text)
}

fn inner_of(
    language: Language,
    node: tree_sitter::Node<'_>,
    body: tree_sitter::Node<'_>,
    text: &str,
) -> Option<Range<usize>> {
    let range = if indented(language) {
        let start = if body.start_position().row > node.start_position().row {
            line_start(text, body.start_byte())
        } else {
            body.start_byte()
        };
        start..body.end_byte()
    } else {
        let open = body.start_byte();
        let start = open + text.get(open..body.end_byte())?.find('\n')? + 1;
        let end = line_start(text, body.end_byte().saturating_sub(1));
        start..end
    };
    (range.start < range.end && !text[range.clone()].trim().is_empty()).then_some(range)
}

/// A function's body after its docstring (Python's first string statement; other
/// languages keep their doc comments above the signature, in the prefix anyway).
fn body_after_doc(
    language: Language,
    node: tree_sitter::Node<'_>,
    text: &str,
) -> Option<Range<usize>> {
    let body = body_node(node)?;
    let inner = inner_of(language, node, body, text)?;
    if !indented(language) {
        return Some(inner);
    }
    let mut walk = body.walk();
    let statements: Vec<_> = body.named_children(&mut walk).collect();
    let is_doc = statements.first().is_some_and(|s| {
        s.kind() == "expression_statement" && s.named_child(0).is_some_and(|c| c.kind() == "string")
    });
    if !is_doc {
        return Some(inner);
    }
    let next = statements.get(1)?;
    Some(line_start(text, next.start_byte())..inner.end)
}

/// Where each line of a text starts, for positions in O(log n) when a file has many
/// blocks to place.
#[derive(Debug, Clone)]
pub struct LineIndex(Vec<usize>);

impl LineIndex {
    /// The line starts of `text`.
    pub fn new(text: &str) -> LineIndex {
        LineIndex(
            std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        )
    }

    /// The 0-based line and byte column of `byte` (as [`cursor_at`]).
    pub fn cursor(&self, byte: usize) -> Cursor {
        let line = self.0.partition_point(|&s| s <= byte).saturating_sub(1);
        Cursor {
            line,
            column: byte - self.0[line],
        }
    }

    /// The 0-based lines `range` covers (as [`lines_of`]).
    pub fn lines(&self, range: &Range<usize>) -> Range<usize> {
        let first = self.cursor(range.start).line;
        let last = self
            .cursor(range.end.max(range.start + 1).saturating_sub(1))
            .line;
        first..last.max(first) + 1
    }
}

/// The byte where the line holding `byte` starts.
pub fn line_start(text: &str, byte: usize) -> usize {
    text[..byte.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1)
}

/// The 0-based line and byte column of `byte`.
pub fn cursor_at(text: &str, byte: usize) -> Cursor {
    let before = &text[..byte.min(text.len())];
    Cursor {
        line: before.matches('\n').count(),
        column: byte - line_start(text, byte),
    }
}

/// The 0-based lines `range` covers (end exclusive; an empty range covers its line).
pub fn lines_of(text: &str, range: &Range<usize>) -> Range<usize> {
    let first = cursor_at(text, range.start).line;
    let last = cursor_at(text, range.end.max(range.start + 1).saturating_sub(1)).line;
    first..last.max(first) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(
        language: Language,
        text: &str,
    ) -> Vec<(BlockKind, String, Option<String>, Option<String>)> {
        blocks(language, text)
            .into_iter()
            .map(|b| {
                (
                    b.kind,
                    text[b.range].to_string(),
                    b.inner.map(|r| text[r].to_string()),
                    b.body_after_doc.map(|r| text[r].to_string()),
                )
            })
            .collect()
    }

    #[test]
    fn python_blocks_inner_blocks_and_bodies() {
        let text = "import os\n\ndef f(x):\n    \"\"\"Doc.\"\"\"\n    if x:\n        return 1\n    return 2\n";
        let got = show(Language::Python, text);
        assert_eq!(
            got,
            [
                (
                    BlockKind::Function,
                    "def f(x):\n    \"\"\"Doc.\"\"\"\n    if x:\n        return 1\n    return 2"
                        .to_string(),
                    Some(
                        "    \"\"\"Doc.\"\"\"\n    if x:\n        return 1\n    return 2"
                            .to_string()
                    ),
                    Some("    if x:\n        return 1\n    return 2".to_string()),
                ),
                (
                    BlockKind::If,
                    "if x:\n        return 1".to_string(),
                    Some("        return 1".to_string()),
                    None
                ),
                (BlockKind::Statement, "return 1".to_string(), None, None),
                (BlockKind::Statement, "return 2".to_string(), None, None),
            ]
        );
    }

    #[test]
    fn go_braced_blocks() {
        let text = "package p\n\nfunc f(x int) int {\n\tfor i := 0; i < x; i++ {\n\t\tx++\n\t}\n\treturn x\n}\n";
        let got = show(Language::Go, text);
        assert_eq!(got[0].0, BlockKind::Function);
        assert_eq!(
            got[0].2.as_deref(),
            Some("\tfor i := 0; i < x; i++ {\n\t\tx++\n\t}\n\treturn x\n")
        );
        assert_eq!(got[1].0, BlockKind::For);
        assert_eq!(got[1].2.as_deref(), Some("\t\tx++\n"));
        let kinds: Vec<_> = got.iter().map(|g| g.0).collect();
        assert_eq!(
            kinds,
            [
                BlockKind::Function,
                BlockKind::For,
                BlockKind::Statement,
                BlockKind::Statement
            ]
        );
    }

    #[test]
    fn javascript_and_java_blocks() {
        let js =
            "function f(x) {\n  if (x) {\n    return 1;\n  }\n  const y = x * 2;\n  return y;\n}\n";
        let kinds: Vec<_> = show(Language::JavaScript, js)
            .into_iter()
            .map(|b| (b.0, b.1))
            .collect();
        assert_eq!(
            kinds,
            [
                (BlockKind::Function, js.trim_end().to_string()),
                (BlockKind::If, "if (x) {\n    return 1;\n  }".to_string()),
                (BlockKind::Statement, "return 1;".to_string()),
                (BlockKind::Statement, "const y = x * 2;".to_string()),
                (BlockKind::Statement, "return y;".to_string()),
            ]
        );
        let java = "class A {\n  int f(int x) {\n    for (int i = 0; i < 3; i++) {\n      x += i;\n    }\n    return x;\n  }\n}\n";
        let got = show(Language::Java, java);
        let kinds: Vec<_> = got.iter().map(|b| b.0).collect();
        assert_eq!(
            kinds,
            [
                BlockKind::Function,
                BlockKind::For,
                BlockKind::Statement,
                BlockKind::Statement
            ]
        );
        assert_eq!(got[1].2.as_deref(), Some("      x += i;\n"));
    }

    #[test]
    fn positions() {
        let text = "ab\ncd\n";
        assert_eq!(cursor_at(text, 4), Cursor { line: 1, column: 1 });
        assert_eq!(lines_of(text, &(0..5)), 0..2);
        assert_eq!(lines_of(text, &(3..3)), 1..2);
        let index = LineIndex::new(text);
        for byte in 0..=text.len() {
            assert_eq!(index.cursor(byte), cursor_at(text, byte), "{byte}");
            for end in byte..=text.len() {
                assert_eq!(index.lines(&(byte..end)), lines_of(text, &(byte..end)));
            }
        }
    }
}
