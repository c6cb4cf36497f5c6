//! Definition nodes (functions, classes, methods, types) of a source file, the
//! "symbols" of ContextBench's symbol granularity, each with its own name and the name
//! ContextBench's evaluator gives it.
//!
//! [`DefinitionSet::ContextBench`] is the reference evaluator's node-type table, needed for
//! comparable numbers; [`DefinitionSet::Extended`] adds the kinds the evaluator misses
//! (arrow functions in TypeScript, Rust enums, modules and traits' impls, Go type specs…).

use super::{Language, parse};

/// Which node kinds count as definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum DefinitionSet {
    /// The ContextBench evaluator's table (the default: keeps numbers comparable).
    #[default]
    ContextBench,
    /// The ContextBench table plus the kinds it misses (opt-in; breaks comparability).
    Extended,
}

/// One definition node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Definition {
    /// The tree-sitter node kind, e.g. `function_definition`.
    pub kind: &'static str,
    /// First byte of the node.
    pub start_byte: usize,
    /// Byte after the node (tree-sitter's exclusive end).
    pub end_byte: usize,
    /// The defined name (the `name` field, or the declarator's identifier), if any.
    pub name: Option<String>,
    /// The name ContextBench's evaluator gives the node, for its compat mode: the `name`
    /// field or declarator like [`Definition::name`], else the first identifier under the
    /// node. They differ for Go `type_declaration`s, whose name sits one level down: for
    /// `type Store struct{ mu sync.Mutex }` the evaluator's name is `mu`.
    pub evaluator_name: Option<String>,
}

/// The definition node kinds of `language` in `set`.
pub fn definition_kinds(language: Language, set: DefinitionSet) -> &'static [&'static str] {
    use DefinitionSet::*;
    use Language::*;
    match (language, set) {
        (Python, _) => &[
            "function_definition",
            "class_definition",
            "async_function_definition",
        ],
        (JavaScript, _) => &[
            "function_declaration",
            "class_declaration",
            "method_definition",
            "arrow_function",
        ],
        (TypeScript | Tsx, ContextBench) => &[
            "function_declaration",
            "class_declaration",
            "method_definition",
            "interface_declaration",
        ],
        (TypeScript | Tsx, Extended) => &[
            "function_declaration",
            "class_declaration",
            "method_definition",
            "interface_declaration",
            "arrow_function",
            "abstract_class_declaration",
            "type_alias_declaration",
            "enum_declaration",
        ],
        (Java, ContextBench) => &[
            "method_declaration",
            "class_declaration",
            "interface_declaration",
            "constructor_declaration",
        ],
        (Java, Extended) => &[
            "method_declaration",
            "class_declaration",
            "interface_declaration",
            "constructor_declaration",
            "enum_declaration",
            "record_declaration",
        ],
        (Go, _) => &[
            "function_declaration",
            "method_declaration",
            "type_declaration",
        ],
        (Rust, ContextBench) => &["function_item", "impl_item", "struct_item", "trait_item"],
        (Rust, Extended) => &[
            "function_item",
            "impl_item",
            "struct_item",
            "trait_item",
            "enum_item",
            "mod_item",
            "union_item",
            "macro_definition",
        ],
    }
}

/// Every definition of `text`, in pre-order (outer before inner, then by position).
pub fn definitions(language: Language, text: &str, set: DefinitionSet) -> Vec<Definition> {
    let kinds = definition_kinds(language, set);
    let tree = parse(language, text);
    let mut out = Vec::new();
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        if node.is_named() && kinds.contains(&node.kind()) {
            out.push(Definition {
                kind: kinds
                    .iter()
                    .find(|k| **k == node.kind())
                    .copied()
                    .unwrap_or("definition"),
                start_byte: node.start_byte(),
                end_byte: node.end_byte(),
                name: definition_name(node, text),
                evaluator_name: evaluator_name(node, text),
            });
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    out
}

fn definition_name(node: tree_sitter::Node<'_>, text: &str) -> Option<String> {
    let named = node
        .child_by_field_name("name")
        .or_else(|| {
            // Go `type_declaration` → `type_spec` → name; C-like declarators.
            let mut c = node.walk();
            node.named_children(&mut c)
                .find_map(|ch| ch.child_by_field_name("name"))
        })
        .or_else(|| node.child_by_field_name("declarator"))?;
    text.get(named.start_byte()..named.end_byte())
        .map(str::to_owned)
}

/// The evaluator's lookup: the node's own `name` field or declarator, else the first
/// `identifier` or `field_identifier` below it in pre-order (type identifiers are not
/// identifiers to it; observed on its output for Go structs, docs/metrics.md).
fn evaluator_name(node: tree_sitter::Node<'_>, text: &str) -> Option<String> {
    let own = node
        .child_by_field_name("name")
        .or_else(|| node.child_by_field_name("declarator"));
    let named = own.or_else(|| {
        let mut cursor = node.walk();
        'walk: loop {
            let n = cursor.node();
            if n.id() != node.id() && matches!(n.kind(), "identifier" | "field_identifier") {
                return Some(n);
            }
            if cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.node().id() == node.id() {
                    break 'walk None;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    break 'walk None;
                }
            }
        }
    })?;
    text.get(named.start_byte()..named.end_byte())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_nested_definitions() {
        let src = "def f():\n    pass\n\nclass A:\n    def m(self):\n        pass\n";
        let defs = definitions(Language::Python, src, DefinitionSet::ContextBench);
        let names: Vec<_> = defs.iter().map(|d| d.name.clone().unwrap()).collect();
        assert_eq!(names, ["f", "A", "m"]);
        assert_eq!(defs[0].start_byte, 0);
        assert_eq!(defs[0].end_byte, 17);
    }

    #[test]
    fn go_type_names() {
        let src = "package p\ntype T struct{}\nfunc (t T) M() {}\n";
        let defs = definitions(Language::Go, src, DefinitionSet::ContextBench);
        let names: Vec<_> = defs.iter().map(|d| d.name.clone()).collect();
        assert_eq!(names, [Some("T".to_owned()), Some("M".to_owned())]);
    }

    #[test]
    fn evaluator_names_per_language() {
        let check = |language, src: &str, want: &[Option<&str>]| {
            let defs = definitions(language, src, DefinitionSet::ContextBench);
            let got: Vec<_> = defs.iter().map(|d| d.evaluator_name.as_deref()).collect();
            assert_eq!(got, want, "{src}");
        };
        check(
            Language::Go,
            "package p\ntype Store struct {\n\tmu sync.Mutex\n\tn int\n}\ntype ID string\nfunc (s *Store) Get() {}\nfunc New() *Store { return nil }\n",
            &[Some("mu"), None, Some("Get"), Some("New")],
        );
        check(
            Language::Java,
            "class A {\n  @Override\n  public String toString() { return \"\"; }\n  A() {}\n  interface I {}\n}\n",
            &[Some("A"), Some("toString"), Some("A"), Some("I")],
        );
        check(
            Language::Python,
            "@dec\nclass A(B):\n    def m(self):\n        pass\n\nasync def f():\n    pass\n",
            &[Some("A"), Some("m"), Some("f")],
        );
    }
}
