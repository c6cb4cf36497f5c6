//! The languages nextedit parses and how to recognise them; parsing, and [`reparse`]: a
//! changed text parsed from its old tree, told the span where the texts differ (derive's
//! commit side).

use std::path::Path;

/// A language with a tree-sitter grammar built into nextedit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    /// Python.
    Python,
    /// Go.
    Go,
    /// Java.
    Java,
    /// JavaScript (and JSX).
    JavaScript,
    /// TypeScript.
    TypeScript,
    /// TSX (TypeScript with JSX).
    Tsx,
    /// Rust.
    Rust,
}

impl Language {
    /// Every supported language.
    pub const ALL: [Language; 7] = [
        Language::Python,
        Language::Go,
        Language::Java,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Rust,
    ];

    /// The canonical lowercase name (also the LSP `languageId`, except `tsx`).
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Go => "go",
            Language::Java => "java",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Rust => "rust",
        }
    }

    /// Parses a name or LSP `languageId` (`py`, `golang`, `typescriptreact`… accepted).
    pub fn from_name(name: &str) -> Option<Language> {
        Some(match name.to_ascii_lowercase().as_str() {
            "python" | "py" => Language::Python,
            "go" | "golang" => Language::Go,
            "java" => Language::Java,
            "javascript" | "js" | "javascriptreact" | "jsx" => Language::JavaScript,
            "typescript" | "ts" => Language::TypeScript,
            "tsx" | "typescriptreact" => Language::Tsx,
            "rust" | "rs" => Language::Rust,
            _ => return None,
        })
    }

    /// Guesses the language from a file name's extension.
    pub fn from_path(path: &Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "py" | "pyi" => Language::Python,
            "go" => Language::Go,
            "java" => Language::Java,
            "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "rs" => Language::Rust,
            _ => return None,
        })
    }

    /// The tree-sitter grammar.
    pub fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
            Language::Java => tree_sitter_java::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }
}

/// Parses `text` as `language`. Never fails: syntax errors become error nodes.
pub fn parse(language: Language, text: &str) -> tree_sitter::Tree {
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .expect("grammar ABI is compatible with the linked tree-sitter (checked by tests)");
    parser
        .parse(text, None)
        .expect("parsing without a timeout or cancellation flag always yields a tree")
}

/// `new_text` parsed with `old` (the tree of `old_text`) told where the two texts
/// differ: one edit from the first byte that differs to the last, so tree-sitter
/// reuses what lies outside it instead of parsing the whole file again. The tree is
/// the one a fresh parse of `new_text` gives (tree-sitter's incremental contract).
pub fn reparse(
    language: Language,
    old: &tree_sitter::Tree,
    old_text: &str,
    new_text: &str,
) -> tree_sitter::Tree {
    let (a, b) = (old_text.as_bytes(), new_text.as_bytes());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let point = |text: &[u8], byte: usize| {
        let row = text[..byte].iter().filter(|&&c| c == b'\n').count();
        let line_start = text[..byte]
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |i| i + 1);
        tree_sitter::Point::new(row, byte - line_start)
    };
    let edit = tree_sitter::InputEdit {
        start_byte: prefix,
        old_end_byte: a.len() - suffix,
        new_end_byte: b.len() - suffix,
        start_position: point(a, prefix),
        old_end_position: point(a, a.len() - suffix),
        new_end_position: point(b, b.len() - suffix),
    };
    let mut tree = old.clone();
    tree.edit(&edit);
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&language.grammar())
        .expect("grammar ABI is compatible with the linked tree-sitter (checked by tests)");
    parser
        .parse(new_text, Some(&tree))
        .expect("parsing without a timeout or cancellation flag always yields a tree")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reparse_gives_the_tree_of_a_fresh_parse() {
        let old = "import os\n\ndef f(a):\n    return a\n\nclass C:\n    x = 1\n";
        for new in [
            "import os\n\ndef f(a, b):\n    return a + b\n\nclass C:\n    x = 1\n",
            "import os, sys\n\ndef f(a):\n    return a\n\nclass C:\n    x = 2\n    y = 3\n",
            "def g():\n    pass\n",
            "",
            old,
        ] {
            let tree = parse(Language::Python, old);
            let reparsed = reparse(Language::Python, &tree, old, new);
            assert_eq!(
                reparsed.root_node().to_sexp(),
                parse(Language::Python, new).root_node().to_sexp(),
                "{new:?}"
            );
        }
    }

    #[test]
    fn every_grammar_loads_and_parses() {
        let samples = [
            (Language::Python, "def f(x):\n    return x\n"),
            (Language::Go, "package main\nfunc f() {}\n"),
            (Language::Java, "class A { void f() {} }\n"),
            (Language::JavaScript, "function f() { return 1; }\n"),
            (
                Language::TypeScript,
                "function f(x: number): number { return x; }\n",
            ),
            (Language::Tsx, "const a = <div/>;\n"),
            (Language::Rust, "fn f() {}\n"),
        ];
        for (language, text) in samples {
            let tree = parse(language, text);
            assert!(
                !tree.root_node().has_error(),
                "{language:?} parse has errors"
            );
        }
    }

    #[test]
    fn recognises_paths_and_names() {
        assert_eq!(
            Language::from_path(Path::new("a/b.py")),
            Some(Language::Python)
        );
        assert_eq!(Language::from_path(Path::new("x.TSX")), Some(Language::Tsx));
        assert_eq!(Language::from_path(Path::new("Makefile")), None);
        assert_eq!(Language::from_name("typescriptreact"), Some(Language::Tsx));
        assert_eq!(Language::from_name("cobol"), None);
    }
}
