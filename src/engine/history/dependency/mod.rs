//! Dependency edges between the edits of one commit.
//!
//! Each rule looks for one reason a developer would make two edits together:
//!
//! | kind | rule |
//! |---|---|
//! | `def_use` | a definition changed in one edit, referenced in another (scope-aware: a local only inside its function, a field in its class or a subclass, a module-level name only where the use's file can see it: [`super::visibility`]) |
//! | `signature_call` | a callable whose parameters or header changed, called in another edit |
//! | `import_use` | an import added or removed in one edit, the name used in another edit of the same file |
//! | `def_import` | a definition changed in one file, its import changed in another |
//! | `def_use` (string key) | a new identifier-shaped string (`"show_progress"`, `'--vcs-rev'`) introduced in one edit, read as an attribute or introduced again in another |
//! | `def_use` (reassignment) | the same local variable assigned in several edits of one function |
//! | `shared_name` | two edits of the same function introduce the same new compound name (`sample_weight`), in code, a docstring or a comment |
//! | `def_use` (class member) | a class attribute, constructor parameter or `self.x` changed by several edits of one class, or passed by name to that class's constructor (`Env(vcs_rev=…)`) |
//! | `argument_parameter` | a call passes `key=…` to a callable whose parameter `key` another edit changed, or uses in that callable's body; a call given more arguments, to the body reading the parameters its callee gained, or to a new field of the record class it calls |
//! | `fixture` | a pytest fixture (or a `parametrize` name) changed, a test or fixture starting or stopping to take it as a parameter |
//! | `doc_impl` | a docstring or comment of a function starts naming what another edit of that function defines or changes (or reads, for a new parameter); a module or class docstring names a public function or class added there |
//! | `clone` | the same token change applied in several places, or before- and after-texts that are alike (token Dice ≥ 0.8) |
//! | `test_impl` | a test file starts using (or importing) a name that an edit of the file it tests defines or changes |
//! | `test_name` | a test function or class named after what an implementation edit changes (`test_<name>…`, `Test<Class>`, Go `Test<Name>`): its definitions, the function whose body it changes, or a compound name on its lines |
//! | `test_id` | a fixture of a test, or a new string a test writes (a parametrized id), naming a definition an implementation edit changes |
//! | `test_assert` | a test's new assertion holds a literal (string, number) an implementation edit introduces |
//! | `move` | lines deleted by a pure deletion and inserted (maybe touched up) by a pure insertion |
//!
//! A use resolves only to the definitions of the closest scope rank, so a name
//! changed in many places links each use to its own definition, not to all of them.
//! Edits sharing one fact are linked as a chain, and a use to its nearest definition,
//! beyond `CLIQUE_MAX` (8) holders, so cost and edges stay near-linear.
//!
//! This file has the types and runs every rule; each rule family is a file of its own:
//! `definitions`, `names`, `imports`, `testing`, `clones`, `moves`, `documentation`,
//! and `tokens`, the words the rules compare.

use std::collections::BTreeSet;

use super::symbols::EditSymbols;
pub use crate::core::trajectory::DependencyKind;

mod clones;
mod definitions;
mod documentation;
mod imports;
mod moves;
mod names;
mod subjects;
mod testing;
mod tokens;

use clones::clones;
use definitions::{definition_uses, new_arguments, record_constructors};
use documentation::documentation;
use imports::imports;
use moves::moves;
use names::{class_members, local_reassignments, shared_names_in_function, string_keys};
use subjects::{asserted_values, named_subjects};
use testing::{fixtures, tests_and_implementations};

/// Edits sharing one fact (a clone, a variable, a member, a key) are linked as a
/// clique up to this many, beyond it as a chain in edit order; a use with more
/// definitions than this at its closest scope links to the nearest one before and
/// after it. One commit replacing `assert` by `require` 300 times, or a session
/// reassigning one variable 1,000 times, would otherwise carry edges quadratic in
/// the edit count that say nothing more than the chain.
const CLIQUE_MAX: usize = 8;

/// Look-alike candidates (clones, moved lines) confirmed per edit, nearest first:
/// bounds the work on thousands of look-alike edits; a commit has far fewer.
const MAX_CANDIDATES: usize = 256;

/// Links edits that share one fact: every pair when few, else each to the next.
fn link_holders(holders: &[usize], mut link: impl FnMut(usize, usize)) {
    if holders.len() <= CLIQUE_MAX {
        for (i, &a) in holders.iter().enumerate() {
            for &b in &holders[i + 1..] {
                link(a, b);
            }
        }
    } else {
        for pair in holders.windows(2) {
            link(pair[0], pair[1]);
        }
    }
}

/// Which holders (ascending edit lists, each with its tag) `user` links to: all of
/// them when at most [`CLIQUE_MAX`], else only the nearest before and after `user`.
fn nearest_holders<T: Copy>(groups: &[(T, &[usize])], user: usize) -> Vec<(usize, T)> {
    let count: usize = groups
        .iter()
        .map(|(_, list)| list.len() - usize::from(list.binary_search(&user).is_ok()))
        .sum();
    if count <= CLIQUE_MAX {
        return groups
            .iter()
            .flat_map(|&(tag, list)| list.iter().map(move |&h| (h, tag)))
            .filter(|&(h, _)| h != user)
            .collect();
    }
    let before = groups
        .iter()
        .filter_map(|(_, list)| {
            let p = list.partition_point(|&h| h < user);
            p.checked_sub(1).map(|i| list[i])
        })
        .max();
    let after = groups
        .iter()
        .filter_map(|(_, list)| list.get(list.partition_point(|&h| h <= user)).copied())
        .min();
    groups
        .iter()
        .flat_map(|&(tag, list)| {
            [before, after]
                .into_iter()
                .flatten()
                .filter(move |h| list.binary_search(h).is_ok())
                .map(move |h| (h, tag))
        })
        .collect()
}

/// The facts about one edit the rules need.
#[derive(Debug, Clone)]
pub struct EditFacts<'a> {
    /// File path.
    pub path: &'a str,
    /// Identifiers.
    pub symbols: &'a EditSymbols,
    /// Replaced text.
    pub before_text: &'a str,
    /// Inserted text.
    pub after_text: &'a str,
    /// Names of the enclosing scopes (the structural path), outermost first.
    pub scope: &'a [String],
}

/// One dependency found between two edits (indices into the commit's edits).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dependency {
    /// The edit that provides (the definition, the import, the deletion…).
    pub from: usize,
    /// The edit that depends on it.
    pub to: usize,
    /// Why.
    pub kind: DependencyKind,
    /// The symbol or a short description.
    pub detail: String,
}

/// Finds every dependency between `edits` (deterministic: sorted, no duplicates).
pub fn dependencies(edits: &[EditFacts]) -> Vec<Dependency> {
    let mut found = BTreeSet::new();
    definition_uses(edits, &mut found);
    new_arguments(edits, &mut found);
    record_constructors(edits, &mut found);
    fixtures(edits, &mut found);
    imports(edits, &mut found);
    clones(edits, &mut found);
    string_keys(edits, &mut found);
    local_reassignments(edits, &mut found);
    class_members(edits, &mut found);
    shared_names_in_function(edits, &mut found);
    documentation(edits, &mut found);
    tests_and_implementations(edits, &mut found);
    named_subjects(edits, &mut found);
    asserted_values(edits, &mut found);
    moves(edits, &mut found);
    found.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::syntax::structure::DefinitionKind;
    use crate::engine::history::symbols::{ChangedDefinition, NameUse, ScopeKey};

    #[test]
    fn a_large_bulk_substitution_is_a_chain() {
        let symbols = EditSymbols::default();
        let facts: Vec<EditFacts> = (0..10)
            .map(|_| EditFacts {
                path: "t.go",
                symbols: &symbols,
                before_text: "\tassert.Equal(t, a, b)\n",
                after_text: "\trequire.Equal(t, a, b)\n",
                scope: &[],
            })
            .collect();
        let found = dependencies(&facts);
        let pairs: Vec<(usize, usize)> = found.iter().map(|d| (d.from, d.to)).collect();
        assert_eq!(pairs, (0..9).map(|i| (i, i + 1)).collect::<Vec<_>>());
        assert!(
            found
                .iter()
                .all(|d| d.kind == DependencyKind::Clone && d.detail == "-assert +require")
        );
        // Three of them are still a clique.
        assert_eq!(dependencies(&facts[..3]).len(), 3);
    }

    /// A thousand edits of one function, each reassigning and reading one variable
    /// (an identical change each time): linked as a chain of neighbours, not the
    /// half a million pairs a clique would be.
    #[test]
    fn many_edits_of_one_variable_link_neighbours_only() {
        let scope = ScopeKey {
            file: 0,
            chain: vec!["f".to_string()],
            callable_depth: 1,
            class: None,
        };
        let symbols = EditSymbols {
            changed: vec![ChangedDefinition {
                name: "value".into(),
                kind: DefinitionKind::Variable,
                scope: scope.clone(),
                signature: false,
            }],
            uses: vec![NameUse {
                name: "value".into(),
                attribute: false,
                call: false,
                callee: None,
                keyword: false,
                scope,
                binding: None,
                qualifier: None,
            }],
            defined_after: BTreeSet::from(["value".to_string()]),
            used_after: BTreeSet::from(["value".to_string()]),
            ..EditSymbols::default()
        };
        let function = ["f".to_string()];
        let facts: Vec<EditFacts> = (0..1000)
            .map(|_| EditFacts {
                path: "m.py",
                symbols: &symbols,
                before_text: "",
                after_text: "    value = value + 1\n",
                scope: &function,
            })
            .collect();
        let found = dependencies(&facts);
        let pairs: BTreeSet<(usize, usize)> = found
            .iter()
            .map(|d| (d.from.min(d.to), d.from.max(d.to)))
            .collect();
        assert_eq!(pairs, (0..999).map(|i| (i, i + 1)).collect());
        let kinds: BTreeSet<&str> = found.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(kinds, BTreeSet::from(["clone", "def_use"]));
    }
}
