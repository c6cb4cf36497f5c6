//! Words and tokens of code text, as the rules compare them.

use std::collections::BTreeMap;

/// Tokens of code: identifiers, numbers, string literals, single punctuation.
pub(super) fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80)
            {
                i += 1;
            }
            out.push(&text[start..i]);
        } else if c == b'"' || c == b'\'' || c == b'`' {
            let start = i;
            i += 1;
            while i < bytes.len() && bytes[i] != c && bytes[i] != b'\n' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(bytes.len());
            out.push(&text[start..i]);
        } else {
            out.push(&text[i..i + 1]);
            i += 1;
        }
    }
    out
}

/// Removed and added tokens of an edit (multiset difference), sorted.
pub(super) fn token_change(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
    let mut counts: BTreeMap<&str, i64> = BTreeMap::new();
    for t in tokens(before) {
        *counts.entry(t).or_default() -= 1;
    }
    for t in tokens(after) {
        *counts.entry(t).or_default() += 1;
    }
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for (token, count) in counts {
        for _ in 0..count.unsigned_abs() {
            if count < 0 {
                removed.push(token.to_string());
            } else {
                added.push(token.to_string());
            }
        }
    }
    (removed, added)
}

/// Keywords and builtin type names of the supported languages: identifier-shaped
/// but shared by all code, so they never tie two edits together.
const KEYWORDS: [&str; 48] = [
    "and",
    "assert",
    "bool",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "defer",
    "elif",
    "else",
    "false",
    "final",
    "float",
    "for",
    "from",
    "func",
    "if",
    "import",
    "int",
    "interface",
    "lambda",
    "let",
    "new",
    "nil",
    "None",
    "not",
    "null",
    "package",
    "pass",
    "private",
    "protected",
    "public",
    "return",
    "self",
    "static",
    "str",
    "string",
    "struct",
    "this",
    "true",
    "True",
    "False",
    "var",
    "void",
];

pub(super) fn is_identifier_like(word: &str) -> bool {
    word.len() >= 3
        && word
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        && !KEYWORDS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_change_is_a_multiset_difference() {
        let (removed, added) = token_change("f(a, 'x')\n", "f(a, b, 'x')\n");
        assert_eq!(removed, Vec::<String>::new());
        assert_eq!(added, vec![",".to_string(), "b".to_string()]);
    }
}
