//! Edits sharing a name rather than a definition: class members changed together or
//! passed to the class's constructor, identifier-shaped string keys, one local
//! reassigned in several edits (`def_use`), and a new compound name introduced twice in
//! one function (`shared_name`).

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::DefinitionKind;

use super::tokens::is_identifier_like;
use super::tokens::tokens;
use super::{Dependency, DependencyKind, EditFacts, link_holders};

/// Members of one class changed together: a class attribute, the constructor
/// parameter and the `self.x = x` that stores it are one addition.
pub(super) fn class_members(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let mut by_member: BTreeMap<(usize, &str, &str), BTreeSet<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        for def in &edit.symbols.changed {
            let Some((class, _)) = &def.scope.class else {
                continue;
            };
            // Parameters count only for the constructor; other methods' parameters
            // are locals that happen to share a name.
            let constructor_parameter = def.kind == DefinitionKind::Parameter
                && def
                    .scope
                    .chain
                    .last()
                    .is_some_and(|f| f == "__init__" || f == class || f == "constructor");
            if def.kind == DefinitionKind::Field || constructor_parameter {
                by_member
                    .entry((def.scope.file, class.as_str(), def.name.as_str()))
                    .or_default()
                    .insert(index);
            }
        }
    }
    for ((_, class, name), holders) in by_member {
        let holders: Vec<usize> = holders.into_iter().collect();
        link_holders(&holders, |a, b| {
            found.insert(Dependency {
                from: a,
                to: b,
                kind: DependencyKind::DefUse,
                detail: format!("{class}.{name}"),
            });
        });
    }
}

/// Identifier-shaped string literals of a text (`"show_progress"`, `'--vcs-rev'`
/// → `vcs_rev`): option names, settings keys and dictionary keys that code later
/// reads as attributes or keys.
pub fn string_keys_of(text: &str) -> BTreeSet<String> {
    tokens(text)
        .into_iter()
        .filter(|t| t.len() >= 2 && (t.starts_with('"') || t.starts_with('\'')))
        .filter_map(|t| {
            let inner = &t[1..t.len() - 1];
            // `--vcs-rev` is read back as `args.vcs_rev`; other dashed strings are prose.
            let name = match inner.strip_prefix("--") {
                Some(option) => option.replace('-', "_"),
                None => inner.to_string(),
            };
            // A compound name (`show_progress`, `--vcs-rev`) is a key; a plain word
            // (`"config"`) is too common to tie two edits together.
            let compound = name.contains('_');
            let valid = compound
                && is_identifier_like(&name)
                && name.chars().all(|c| c.is_alphanumeric() || c == '_');
            valid.then_some(name)
        })
        .collect()
}

/// A string key introduced by one edit, read as an attribute or introduced as the
/// same key by another edit: the settings/option/dictionary form of def → use.
pub(super) fn string_keys(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // Keys spread over more edits than this are vocabulary, not one new concept.
    const MAX_HOLDERS: usize = 6;
    let introduced: Vec<BTreeSet<String>> = edits
        .iter()
        .map(|e| {
            let before = string_keys_of(e.before_text);
            string_keys_of(e.after_text)
                .into_iter()
                .filter(|k| !before.contains(k))
                .collect()
        })
        .collect();
    let mut holders: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, keys) in introduced.iter().enumerate() {
        for key in keys {
            holders.entry(key.as_str()).or_default().push(index);
        }
    }
    // Attribute reads by name, so a key finds its readers without a pass over all edits.
    let mut readers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        let read: BTreeSet<&str> = edit
            .symbols
            .uses
            .iter()
            .filter(|u| u.attribute)
            .map(|u| u.name.as_str())
            .collect();
        for name in read {
            readers.entry(name).or_default().push(index);
        }
    }
    for (key, edits_with_key) in &holders {
        let link = |found: &mut BTreeSet<Dependency>, a: usize, b: usize| {
            found.insert(Dependency {
                from: a,
                to: b,
                kind: DependencyKind::DefUse,
                detail: format!("\"{key}\""),
            });
        };
        if edits_with_key.len() > MAX_HOLDERS {
            // A key spread over many edits still ties the edits of one file together
            // (written in one method, read in the next).
            let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
            for &e in edits_with_key {
                by_file.entry(edits[e].path).or_default().push(e);
            }
            for same_file in by_file.values() {
                link_holders(same_file, |a, b| link(found, a, b));
            }
            continue;
        }
        link_holders(edits_with_key, |a, b| link(found, a, b));
        for &user in readers.get(key).into_iter().flatten() {
            if edits_with_key.contains(&user) {
                continue;
            }
            for &definer in edits_with_key {
                link(found, definer, user);
            }
        }
    }
}

/// A compound name (`sample_weight`, `isLegacy`) that two edits of the same function
/// both introduce, in code, a docstring or a comment: one change spread over the
/// function (a new parameter documented, then used).
pub(super) fn shared_names_in_function(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let compound = |w: &str| w.contains('_') || w.chars().skip(1).any(|c| c.is_uppercase());
    let introduced: Vec<BTreeSet<&str>> = edits
        .iter()
        .map(|e| {
            let before: BTreeSet<&str> = e
                .before_text
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .collect();
            e.after_text
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|w| is_identifier_like(w) && compound(w) && !before.contains(w))
                .collect()
        })
        .collect();
    // (file, function, word) → edits introducing it; a pair's reason is its first
    // shared word.
    let mut holders: BTreeMap<(&str, &[String], &str), Vec<usize>> = BTreeMap::new();
    for (index, words) in introduced.iter().enumerate() {
        if edits[index].scope.is_empty() {
            continue;
        }
        for word in words {
            holders
                .entry((edits[index].path, edits[index].scope, word))
                .or_default()
                .push(index);
        }
    }
    let mut pairs: BTreeMap<(usize, usize), &str> = BTreeMap::new();
    for ((_, _, word), list) in &holders {
        link_holders(list, |a, b| {
            pairs.entry((a, b)).or_insert(word);
        });
    }
    for ((a, b), word) in pairs {
        found.insert(Dependency {
            from: a,
            to: b,
            kind: DependencyKind::SharedName,
            detail: word.to_string(),
        });
    }
}

/// The same local variable (re)assigned by several edits of one function: each
/// assignment feeds the same uses, so the edits change one data flow.
pub(super) fn local_reassignments(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let mut by_variable: BTreeMap<
        (&str, &crate::engine::history::symbols::ScopeKey),
        BTreeSet<usize>,
    > = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        for def in &edit.symbols.changed {
            if def.kind == DefinitionKind::Variable && def.scope.callable_depth > 0 {
                by_variable
                    .entry((def.name.as_str(), &def.scope))
                    .or_default()
                    .insert(index);
            }
        }
    }
    for ((name, _), holders) in by_variable {
        let holders: Vec<usize> = holders.into_iter().collect();
        link_holders(&holders, |a, b| {
            found.insert(Dependency {
                from: a,
                to: b,
                kind: DependencyKind::DefUse,
                detail: name.to_string(),
            });
        });
    }
}
