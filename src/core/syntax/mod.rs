//! Source structure through tree-sitter: languages (Python, Go, Java, JavaScript,
//! TypeScript, TSX, Rust) and parsing, tokens (ES-Token), definitions (ContextBench's
//! symbols), structural paths and identifiers per line range ([`structure`], used by
//! history and matching; it can walk only the lines asked for), and a text kept parsed
//! across edits ([`incremental`], used by `history::recorded`).
//!
//! Architecture invariant: takes text and a language in, gives spans and node kinds
//! out; knows nothing about git, LSP, SQLite or files. Parsing never fails: broken
//! code gives a tree with error nodes.

mod definitions;
pub mod incremental;
mod language;
pub mod structure;
mod tokens;

pub use definitions::{Definition, DefinitionSet, definition_kinds, definitions};
pub use language::{Language, parse, reparse};
pub use tokens::{leaf_ranges, lexical_ranges, revision_leaf_ranges, token_ranges, tokens};
