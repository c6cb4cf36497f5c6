//! Source structure through tree-sitter: languages, parsing, tokens, definitions,
//! structural paths and identifiers.
//!
//! Architecture invariant: takes text and a language in, gives spans and node kinds
//! out; knows nothing about git, LSP, SQLite or files. Parsing never fails: broken
//! code gives a tree with error nodes.

mod language;
pub mod structure;

pub use language::{Language, parse};
