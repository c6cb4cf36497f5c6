//! Tests and the behaviour they are about, by what the test says rather than what it
//! reaches: `test_name` (a test named after a function, class or behaviour an
//! implementation edit changes: `test_provide_automatic_options_attr` →
//! `provide_automatic_options`, `class TestFlaskClient` → `FlaskClient`, Go
//! `TestContextReset` → `Context`), `test_id` (a fixture or a string a test introduces,
//! such as a parametrized id, naming a definition an implementation edit changes) and
//! `test_assert` (a test's new assertion holds the literal value an implementation edit
//! introduces: the edit and the test that checks its result).

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::DefinitionKind;

use super::testing::{is_test_path, reachable_changes};
use super::tokens::{is_identifier_like, tokens};
use super::{Dependency, DependencyKind, EditFacts, nearest_holders};

/// Shortest subject (normalized, letters and digits only) a test name may point to:
/// `get`, `run` or `app` would tie a test to any edit that touches them.
const MIN_SUBJECT: usize = 4;

/// The words of a name, lower case: `provide_automatic_options` and
/// `ProvideAutomaticOptions` both give `provide`, `automatic`, `options`.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in name.split('_').filter(|p| !p.is_empty()) {
        let mut word = String::new();
        let mut previous_lower = false;
        for c in part.chars() {
            if c.is_uppercase() && previous_lower && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            word.extend(c.to_lowercase());
        }
        if !word.is_empty() {
            out.push(word);
        }
    }
    out
}

/// The spelling-free form names are compared in: `FlaskClient` and `flask_client`
/// are one subject.
fn normalized(name: &str) -> String {
    words(name).concat()
}

/// True for a name made of several words (`sample_weight`, `isLegacy`): specific
/// enough to be a behaviour, unlike `config` or `name`.
fn is_compound(name: &str) -> bool {
    words(name).len() >= 2
}

/// What a test function or class name says it tests, as words: `test_x_y`, `TestXY`
/// (Go functions, Python and Java classes), `testXY` (JUnit 3), `XYTest`/`XYTests`
/// (Java classes). `None` for a name that is not a test's.
fn tested_words(name: &str) -> Option<Vec<String>> {
    let rest = name
        .strip_prefix("test_")
        .or_else(|| {
            name.strip_prefix("Test")
                .or_else(|| name.strip_prefix("test"))
                .filter(|r| r.starts_with(|c: char| c.is_uppercase()))
        })
        .or_else(|| {
            name.strip_suffix("Tests")
                .or_else(|| name.strip_suffix("Test"))
                .filter(|r| r.ends_with(|c: char| c.is_lowercase() || c.is_ascii_digit()))
        })?;
    let words = words(rest);
    (!words.is_empty()).then_some(words)
}

/// What an implementation edit is about, normalized: the definitions it changes (not
/// a function's parameters or locals), the function it changes the body of, and
/// (as behaviours, matched only by a test name of several words) the compound names on
/// its changed lines.
struct Subjects {
    /// Changed definitions and the enclosing function.
    defined: BTreeMap<usize, BTreeSet<String>>,
    /// Compound names used or defined on the changed lines.
    behaviours: BTreeMap<usize, BTreeSet<String>>,
}

impl Subjects {
    fn new(edits: &[EditFacts]) -> Subjects {
        let mut defined: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        let mut behaviours: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        for (index, edit) in edits.iter().enumerate() {
            if is_test_path(edit.path) {
                continue;
            }
            let symbols = edit.symbols;
            let mut names: BTreeSet<String> = reachable_changes(edit).map(normalized).collect();
            // The function whose body the edit changes (the innermost scope), except
            // for an insertion that adds whole definitions: it is placed by the line
            // before it, the end of the previous function, which it is not about. A
            // class changes when a member is added, removed or re-signed, not when a
            // method's body does.
            let adds_definitions = symbols
                .changed
                .iter()
                .any(|c| matches!(c.kind, DefinitionKind::Function | DefinitionKind::Type));
            if !(edit.before_text.is_empty() && adds_definitions)
                && let Some(innermost) = edit.scope.last()
            {
                names.insert(normalized(innermost));
            }
            names.extend(
                symbols
                    .changed
                    .iter()
                    .filter(|c| matches!(c.kind, DefinitionKind::Function | DefinitionKind::Field))
                    .filter_map(|c| c.scope.class.as_ref())
                    .map(|(class, _)| normalized(class)),
            );
            names.retain(|n| n.len() >= MIN_SUBJECT);
            let compound: BTreeSet<String> = symbols
                .used_before
                .iter()
                .chain(&symbols.used_after)
                .chain(&symbols.defined_before)
                .chain(&symbols.defined_after)
                .filter(|n| is_identifier_like(n) && is_compound(n))
                .map(|n| normalized(n))
                .collect();
            if !names.is_empty() {
                defined.insert(index, names);
            }
            if !compound.is_empty() {
                behaviours.insert(index, compound);
            }
        }
        Subjects {
            defined,
            behaviours,
        }
    }

    /// What a test name points to, with those implementation edits (ascending): the
    /// longest word prefix of `words` some edit is about (`get_json_bad` → `get_json`;
    /// one word matches only a definition or a changed function). Only a prefix: a
    /// test is named `test_<subject>_<case>`, and a run of words further in
    /// (`add_muted_user` → `muted_user`) is the case, not the subject.
    fn longest_match(&self, words: &[String]) -> Option<(String, Vec<usize>)> {
        (1..=words.len()).rev().find_map(|n| {
            let run = words[..n].concat();
            if run.len() < MIN_SUBJECT {
                return None;
            }
            let holders: BTreeSet<usize> = self
                .defined
                .iter()
                .filter(|(_, names)| names.contains(&run))
                .map(|(&i, _)| i)
                .chain(
                    self.behaviours
                        .iter()
                        .filter(|(_, names)| n >= 2 && names.contains(&run))
                        .map(|(&i, _)| i),
                )
                .collect();
            (!holders.is_empty()).then(|| (run, holders.into_iter().collect()))
        })
    }
}

/// The test functions and classes an edit of a test file is part of: the ones it
/// adds, removes or re-signs, else the test scopes its lines sit in.
fn test_names<'a>(edit: &'a EditFacts) -> Vec<&'a str> {
    let changed: Vec<&str> = edit
        .symbols
        .changed
        .iter()
        .filter(|c| matches!(c.kind, DefinitionKind::Function | DefinitionKind::Type))
        .map(|c| c.name.as_str())
        .filter(|n| tested_words(n).is_some())
        .collect();
    let scopes = edit
        .scope
        .iter()
        .map(String::as_str)
        .filter(|n| tested_words(n).is_some());
    if changed.is_empty() {
        scopes.collect()
    } else {
        // The enclosing test class still says what the new methods test.
        changed
            .into_iter()
            .chain(scopes.filter(|n| n.starts_with("Test") || n.ends_with("Test")))
            .collect()
    }
}

/// Links `test` to the implementation edits `holders` with `kind`, nearest first
/// when there are many.
fn link(
    found: &mut BTreeSet<Dependency>,
    holders: &[usize],
    test: usize,
    kind: DependencyKind,
    detail: &str,
) {
    for (implementation, ()) in nearest_holders(&[((), holders)], test) {
        found.insert(Dependency {
            from: implementation,
            to: test,
            kind,
            detail: detail.to_string(),
        });
    }
}

/// `test_name` and `test_id`: a test named after what an implementation edit is about,
/// and a fixture or a new string of a test naming a definition an implementation edit
/// changes.
pub(super) fn named_subjects(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    if !edits.iter().any(|e| is_test_path(e.path)) {
        return;
    }
    let subjects = Subjects::new(edits);
    if subjects.defined.is_empty() && subjects.behaviours.is_empty() {
        return;
    }
    // Changed definitions only (not the enclosing function), for the names a test
    // writes as strings: a string names a definition, not a body.
    let mut definers: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        if is_test_path(edit.path) {
            continue;
        }
        let names: BTreeSet<&str> = reachable_changes(edit)
            .filter(|n| is_identifier_like(n) && n.len() >= MIN_SUBJECT)
            .collect();
        for name in names {
            definers.entry(name.to_string()).or_default().push(index);
        }
    }
    for (test, edit) in edits.iter().enumerate() {
        if !is_test_path(edit.path) {
            continue;
        }
        let mut linked: BTreeMap<usize, String> = BTreeMap::new();
        for name in test_names(edit) {
            let Some(words) = tested_words(name) else {
                continue;
            };
            if let Some((_, holders)) = subjects.longest_match(&words) {
                for &h in &holders {
                    linked.entry(h).or_insert_with(|| name.to_string());
                }
            }
        }
        let holders: Vec<usize> = linked.keys().copied().collect();
        for (implementation, ()) in nearest_holders(&[((), holders.as_slice())], test) {
            found.insert(Dependency {
                from: implementation,
                to: test,
                kind: DependencyKind::TestName,
                detail: linked[&implementation].clone(),
            });
        }
        // A fixture named after a subject (`def flask_client(app)` for `FlaskClient`).
        for fixture in &edit.symbols.fixtures {
            if let Some((_, holders)) = subjects.longest_match(&words(fixture)) {
                link(found, &holders, test, DependencyKind::TestId, fixture);
            }
        }
        // A new string naming a changed definition: a parametrized id, `pytest.param(…,
        // id="…")`, `monkeypatch.setattr("pkg.mod.name", …)`.
        let before: BTreeSet<&str> = tokens(edit.before_text).into_iter().collect();
        let named: BTreeSet<&str> = tokens(edit.after_text)
            .into_iter()
            .filter(|t| t.len() >= 2 && (t.starts_with('"') || t.starts_with('\'')))
            .filter(|t| !before.contains(t))
            .filter_map(|t| t[1..t.len() - 1].rsplit('.').next())
            .collect();
        for name in named {
            if let Some(holders) = definers.get(name) {
                link(found, holders, test, DependencyKind::TestId, name);
            }
        }
    }
}

/// True for a line of a test that checks a value (`assert`, `assertEqual`,
/// `expect(…)`, Go's `t.Errorf`/`require.Equal`, `pytest.raises(…, match=…)`).
fn is_assertion(line: &str) -> bool {
    let lower = line.to_lowercase();
    [
        "assert", "expect", "equal", "errorf", "fatalf", "tobe", "match=",
    ]
    .iter()
    .any(|marker| lower.contains(marker))
}

/// A literal specific enough to say two edits are about one value: a string with at
/// least three letters or digits, or a number that is not a usual small constant.
fn is_telling_literal(token: &str) -> bool {
    if token.starts_with('"') || token.starts_with('\'') || token.starts_with('`') {
        // An identifier-shaped string (`"is_legacy"`) is a key naming something, which
        // the string-key and `test_id` rules read; a value has other characters too.
        let inner = &token[1..token.len().saturating_sub(1).max(1)];
        let name_shaped = inner.chars().all(|c| c.is_alphanumeric() || c == '_');
        return !name_shaped && token.chars().filter(|c| c.is_alphanumeric()).count() >= 3;
    }
    token.starts_with(|c: char| c.is_ascii_digit())
        && token.len() >= 2
        && !matches!(token, "10" | "100" | "1000" | "0x0" | "00")
}

/// `test_assert`: an implementation edit introduces a literal (a message, a default,
/// a returned value) and a test edit introduces an assertion on the same literal: the
/// change and the test that checks its value.
pub(super) fn asserted_values(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    if !edits.iter().any(|e| is_test_path(e.path)) {
        return;
    }
    let mut introducers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        if is_test_path(edit.path) {
            continue;
        }
        let before: BTreeSet<&str> = tokens(edit.before_text).into_iter().collect();
        let new: BTreeSet<&str> = tokens(edit.after_text)
            .into_iter()
            .filter(|t| is_telling_literal(t) && !before.contains(t))
            .collect();
        for literal in new {
            introducers.entry(literal).or_default().push(index);
        }
    }
    if introducers.is_empty() {
        return;
    }
    for (test, edit) in edits.iter().enumerate() {
        if !is_test_path(edit.path) {
            continue;
        }
        let before: BTreeSet<&str> = tokens(edit.before_text).into_iter().collect();
        let asserted: BTreeSet<&str> = edit
            .after_text
            .lines()
            .filter(|l| is_assertion(l))
            .flat_map(tokens)
            .filter(|t| is_telling_literal(t) && !before.contains(t))
            .collect();
        for literal in asserted {
            if let Some(holders) = introducers.get(literal) {
                link(found, holders, test, DependencyKind::TestAssert, literal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_into_words_whatever_their_spelling() {
        assert_eq!(
            words("provide_automatic_options"),
            ["provide", "automatic", "options"]
        );
        assert_eq!(words("FlaskClient"), ["flask", "client"]);
        assert_eq!(words("HTTPServer_Handle"), ["httpserver", "handle"]);
        assert_eq!(normalized("flask_client"), normalized("FlaskClient"));
        assert_eq!(
            tested_words("test_provide_automatic_options_attr"),
            Some(vec![
                "provide".to_string(),
                "automatic".into(),
                "options".into(),
                "attr".into()
            ])
        );
        assert_eq!(
            tested_words("TestContextReset"),
            Some(vec!["context".to_string(), "reset".into()])
        );
        assert_eq!(tested_words("testParse"), Some(vec!["parse".to_string()]));
        assert_eq!(tested_words("CartTest"), Some(vec!["cart".to_string()]));
        assert_eq!(tested_words("testing"), None);
        assert_eq!(tested_words("Testament"), None);
        assert_eq!(tested_words("latest"), None);
    }

    #[test]
    fn telling_literals() {
        assert!(is_telling_literal("\"Hello World\""));
        assert!(!is_telling_literal("\"is_legacy\""));
        assert!(is_telling_literal("405"));
        assert!(!is_telling_literal("\"\""));
        assert!(!is_telling_literal("'a'"));
        assert!(!is_telling_literal("1"));
        assert!(!is_telling_literal("100"));
        assert!(!is_telling_literal("name"));
    }
}
