//! Tests and what they test: `fixture` (a pytest fixture or `parametrize` name
//! changed, a test taking it) and `test_impl` (a test file starting to use a name that
//! an edit of the file it tests defines or changes).

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::DefinitionKind;
use crate::engine::history::visibility::Binding;

use super::tokens::is_identifier_like;
use super::tokens::token_change;
use super::{Dependency, DependencyKind, EditFacts, nearest_holders};

/// True for files that pytest reads fixtures from for the tests under their directory.
fn is_conftest(path: &str) -> bool {
    path.rsplit('/').next() == Some("conftest.py")
}

/// A pytest fixture added, removed or re-signed (or a `@pytest.mark.parametrize` name
/// added or removed), and a test or fixture that starts or stops taking it as a
/// parameter: pytest binds the parameter to the fixture by name.
/// A fixture is visible in its own module and, from a `conftest.py`, under its
/// directory.
pub(super) fn fixtures(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let mut definers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        for name in &edit.symbols.fixtures {
            definers.entry(name.as_str()).or_default().push(index);
        }
    }
    if definers.is_empty() {
        return;
    }
    for (user, edit) in edits.iter().enumerate() {
        if !(is_test_path(edit.path) || is_conftest(edit.path)) {
            continue;
        }
        let symbols = edit.symbols;
        let taken: BTreeSet<&str> = symbols
            .changed
            .iter()
            .filter(|d| d.kind == DefinitionKind::Parameter && d.scope.callable_depth > 0)
            .map(|d| d.name.as_str())
            .filter(|n| symbols.defined_after.contains(*n) != symbols.defined_before.contains(*n))
            .collect();
        for name in taken {
            let Some(list) = definers.get(name) else {
                continue;
            };
            let visible: Vec<usize> = list
                .iter()
                .copied()
                .filter(|&d| d != user)
                .filter(|&d| {
                    let path = edits[d].path;
                    let dir = path.rsplit_once('/').map_or("", |(dir, _)| dir);
                    path == edit.path
                        || (is_conftest(path)
                            && (dir.is_empty() || edit.path.starts_with(&format!("{dir}/"))))
                })
                .collect();
            for (definer, ()) in nearest_holders(&[((), visible.as_slice())], user) {
                found.insert(Dependency {
                    from: definer,
                    to: user,
                    kind: DependencyKind::Fixture,
                    detail: name.to_string(),
                });
            }
        }
    }
}

/// True for test files (`test_x.py`, `x_test.go`, `XTest.java`, `x.test.ts`, `tests/…`).
pub fn is_test_path(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("Test")
        || stem.ends_with("Tests")
        || file.contains(".test.")
        || file.contains(".spec.")
        || path
            .split('/')
            .any(|c| c == "tests" || c == "test" || c == "__tests__")
}

/// The implementation stem a test file names (`test_foo.py` → `foo`).
fn tested_stem(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    let stem = stem.strip_prefix("test_").unwrap_or(stem);
    let stem = stem.strip_suffix("_test").unwrap_or(stem);
    let stem = stem
        .strip_suffix("Tests")
        .or_else(|| stem.strip_suffix("Test"))
        .unwrap_or(stem);
    stem.to_string()
}

fn implementation_stem(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.split('.').next().unwrap_or(file).to_string()
}

/// The names an edit defines or changes that code elsewhere (a test) can reach:
/// module-level names and class members, and the new names of renames, not a
/// function's parameters or locals.
pub(super) fn reachable_changes<'a>(edit: &'a EditFacts) -> impl Iterator<Item = &'a str> + 'a {
    edit.symbols
        .changed
        .iter()
        .filter(|c| match c.kind {
            DefinitionKind::Parameter => false,
            DefinitionKind::Variable => c.scope.callable_depth == 0,
            _ => true,
        })
        .map(|c| c.name.as_str())
        .chain(edit.symbols.renamed.iter().map(|(_, new)| new.as_str()))
}

pub(super) fn tests_and_implementations(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let added: Vec<Vec<String>> = edits
        .iter()
        .map(|e| token_change(e.before_text, e.after_text).1)
        .collect();
    // (implementation stem, name written) → implementation edits, ascending.
    let mut writers: BTreeMap<(String, &str), Vec<usize>> = BTreeMap::new();
    for (implementation, i) in edits.iter().enumerate() {
        if is_test_path(i.path) {
            continue;
        }
        // The test starts using a name the implementation edit defines or changes:
        // it exercises what was just written. (Sharing any new word, a string key
        // or an import alias linked unrelated edits on unseen commits.) Only what a
        // test can reach counts: module-level names and class members, not a
        // function's parameters or locals.
        let written: BTreeSet<&str> = reachable_changes(i)
            .filter(|w| is_identifier_like(w))
            .collect();
        for word in written {
            writers
                .entry((implementation_stem(i.path), word))
                .or_default()
                .push(implementation);
        }
    }
    for (test, t) in edits.iter().enumerate() {
        if !is_test_path(t.path) {
            continue;
        }
        let stem = tested_stem(t.path);
        // A name the test binds itself (its own local or function) is not the
        // implementation's.
        let reaches_out = |w: &str| {
            t.symbols.uses.iter().any(|u| {
                u.name == w && !matches!(u.binding, Some(Binding::Local | Binding::Module))
            })
        };
        let exercised: BTreeSet<&str> = added[test]
            .iter()
            .map(String::as_str)
            .filter(|w| {
                (t.symbols.used_after.contains(*w) && reaches_out(w))
                    || t.symbols.imported_after.contains(*w)
            })
            .collect();
        // Each implementation edit once, for the first name (in order) it shares.
        let mut linked: BTreeMap<usize, &str> = BTreeMap::new();
        for word in exercised {
            let Some(list) = writers.get(&(stem.clone(), word)) else {
                continue;
            };
            for (implementation, ()) in nearest_holders(&[((), list.as_slice())], test) {
                linked.entry(implementation).or_insert(word);
            }
        }
        for (implementation, word) in linked {
            found.insert(Dependency {
                from: implementation,
                to: test,
                kind: DependencyKind::TestImpl,
                detail: word.to_string(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_paths() {
        assert!(is_test_path("tests/test_app.py"));
        assert!(is_test_path("pkg/server_test.go"));
        assert!(is_test_path("src/test/java/CartTest.java"));
        assert!(!is_test_path("pkg/server.go"));
        assert_eq!(tested_stem("pkg/server_test.go"), "server");
        assert_eq!(tested_stem("CartTest.java"), "Cart");
    }
}
