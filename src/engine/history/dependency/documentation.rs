//! `doc_impl`: a docstring or comment starting to name what another edit of its
//! function defines or changes; a module or class docstring naming a public function
//! or class added there.

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::DefinitionKind;

use super::tokens::is_identifier_like;
use super::{Dependency, DependencyKind, EditFacts, nearest_holders};

/// A docstring or comment of a function that starts naming what another edit of
/// the same function defines or changes (a parameter documented as it is added, a
/// variable renamed and the comment that explains it): the prose follows the code.
pub(super) fn documentation(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    fn words(text: &str) -> BTreeSet<&str> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| is_identifier_like(w))
            .collect()
    }
    // (file, function, name) → edits of that function changing a definition `name`.
    let mut changers: BTreeMap<(&str, &[String], &str), Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        if edit.scope.is_empty() {
            continue;
        }
        let names: BTreeSet<&str> = edit
            .symbols
            .changed
            .iter()
            .map(|d| d.name.as_str())
            .collect();
        for name in names {
            changers
                .entry((edit.path, edit.scope, name))
                .or_default()
                .push(index);
        }
    }
    // Parameters an edit adds or removes, (file, function chain, name); the edits
    // reading those names inside the function; and public functions and classes an
    // edit adds, by the scope they are defined in (a module or class docstring names
    // them).
    let mut new_parameters: BTreeSet<(&str, &[String], &str)> = BTreeSet::new();
    let mut added: BTreeMap<(&str, &[String], &str), Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        let symbols = edit.symbols;
        for def in &symbols.changed {
            let new = symbols.defined_after.contains(&def.name)
                && !symbols.defined_before.contains(&def.name);
            let depth = def.scope.callable_depth;
            if def.kind == DefinitionKind::Parameter && depth > 0 {
                let gone = symbols.defined_before.contains(&def.name)
                    && !symbols.defined_after.contains(&def.name);
                if new || gone {
                    new_parameters.insert((edit.path, &def.scope.chain[..depth], &def.name));
                }
            }
            if new
                && matches!(def.kind, DefinitionKind::Function | DefinitionKind::Type)
                && !def.name.starts_with('_')
            {
                added
                    .entry((edit.path, def.scope.chain.as_slice(), def.name.as_str()))
                    .or_default()
                    .push(index);
            }
        }
    }
    let mut readers: BTreeMap<(&str, &[String], &str), Vec<usize>> = BTreeMap::new();
    if !new_parameters.is_empty() {
        for (index, edit) in edits.iter().enumerate() {
            let read: BTreeSet<(&[String], &str)> = edit
                .symbols
                .uses
                .iter()
                .filter(|u| !u.attribute && u.scope.callable_depth > 0)
                .map(|u| (&u.scope.chain[..u.scope.callable_depth], u.name.as_str()))
                .filter(|&(chain, name)| new_parameters.contains(&(edit.path, chain, name)))
                .collect();
            for (chain, name) in read {
                readers
                    .entry((edit.path, chain, name))
                    .or_default()
                    .push(index);
            }
        }
    }
    for (doc, edit) in edits.iter().enumerate() {
        let before = words(edit.before_text);
        let symbols = edit.symbols;
        // New words that are not code on the edit's lines: prose in a string or comment.
        let prose = words(edit.after_text).into_iter().filter(|w| {
            !before.contains(w)
                && !symbols.used_after.contains(*w)
                && !symbols.defined_after.contains(*w)
                && !symbols.imported_after.contains(*w)
        });
        for word in prose {
            let key = (edit.path, edit.scope, word);
            // A function's docstring or comment: what the function's edits define and,
            // for a parameter added or removed, the body edits that read it. Any
            // docstring: a public function or class added in its scope.
            let lists = [
                changers.get(&key).filter(|_| !edit.scope.is_empty()),
                readers.get(&key),
                added.get(&key),
            ];
            for list in lists.into_iter().flatten() {
                for (other, ()) in nearest_holders(&[((), list.as_slice())], doc) {
                    found.insert(Dependency {
                        from: other,
                        to: doc,
                        kind: DependencyKind::DocImpl,
                        detail: word.to_string(),
                    });
                }
            }
        }
    }
}
