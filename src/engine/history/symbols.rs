//! What each edit defines, imports and uses, in the parent and the child.
//!
//! Occurrences come from [`crate::core::syntax::structure`]: the parent's on the edit's
//! before-lines, the child's on its after-lines. A definition is *changed* by an
//! edit when it appears on one side only (added, removed, renamed) or when its
//! signature changed (a parameter added or removed, the header text differs).
//!
//! Given what the whole file binds on each side ([`FileNames`]), each use also says
//! what its name is bound to there and what the object of `q.name` is, which
//! [`super::visibility`] turns into "can this file see that definition".

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::{DefinitionKind, FileStructure, Occurrence, Role, ScopeKind};

use super::visibility::{Binding, FileNames, Qualifier};

/// Names that carry no dependency: receivers and placeholders.
const IGNORED_NAMES: [&str; 6] = ["self", "cls", "this", "super", "_", "it"];

/// Where a name sits: file and chain of enclosing scope names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeKey {
    /// Index of the file in the commit's file list.
    pub file: usize,
    /// Enclosing scope names, outermost first.
    pub chain: Vec<String>,
    /// Length of the chain prefix that ends at the innermost callable (0 = none).
    pub callable_depth: usize,
    /// Innermost enclosing class-like scope name and header, if any.
    pub class: Option<(String, String)>,
}

/// A definition an edit changes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChangedDefinition {
    /// Defined name.
    pub name: String,
    /// What it defines.
    pub kind: DefinitionKind,
    /// Where.
    pub scope: ScopeKey,
    /// True when a callable's parameters or header changed (it exists on both sides,
    /// or it is the constructor of the class named `name`).
    pub signature: bool,
}

/// A reference inside an edit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NameUse {
    /// Referenced name.
    pub name: String,
    /// `obj.name`.
    pub attribute: bool,
    /// Callee of a call or `new`.
    pub call: bool,
    /// The function whose call arguments hold this name, if any.
    pub callee: Option<String>,
    /// The name of a keyword argument (`f(key=value)`: `key`).
    pub keyword: bool,
    /// Where.
    pub scope: ScopeKey,
    /// What a bare name is bound to in its file (`None`: not known, e.g. a recorded
    /// session's window, or a language whose bindings are not modelled).
    pub binding: Option<Binding>,
    /// What the object of `q.name` is (`None`: not known or not an attribute).
    pub qualifier: Option<Qualifier>,
}

/// The identifiers of one edit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EditSymbols {
    /// Definitions on the before-lines (parent).
    pub defined_before: BTreeSet<String>,
    /// Definitions on the after-lines (child).
    pub defined_after: BTreeSet<String>,
    /// Uses on the before-lines.
    pub used_before: BTreeSet<String>,
    /// Uses on the after-lines.
    pub used_after: BTreeSet<String>,
    /// Imported names on the before-lines.
    pub imported_before: BTreeSet<String>,
    /// Imported names on the after-lines.
    pub imported_after: BTreeSet<String>,
    /// Definitions added, removed or with a changed signature.
    pub changed: Vec<ChangedDefinition>,
    /// Renames: one definition removed and one added of the same kind and scope.
    pub renamed: Vec<(String, String)>,
    /// Every reference on either side.
    pub uses: Vec<NameUse>,
    /// Imports added or removed.
    pub changed_imports: BTreeSet<String>,
    /// Modules each name imported on the edit's lines comes from (Python, Go, Java).
    pub import_modules: BTreeMap<String, BTreeSet<String>>,
    /// Callees whose calls on the after-lines pass more arguments than on the
    /// before-lines (a call site given a new argument).
    pub widened_calls: BTreeSet<String>,
    /// Changed functions that are pytest fixtures.
    pub fixtures: BTreeSet<String>,
    /// Fields added to record classes, `(class, field)`: new constructor parameters.
    pub record_fields: BTreeSet<(String, String)>,
}

fn scope_key(file: usize, structure: &FileStructure, scope: Option<usize>) -> ScopeKey {
    let chain_indices = structure.chain(scope);
    let mut callable_depth = 0;
    let mut class = None;
    for (depth, &index) in chain_indices.iter().enumerate() {
        let s = &structure.scopes[index];
        if s.kind.is_callable() {
            callable_depth = depth + 1;
        }
        if matches!(s.kind, ScopeKind::Class | ScopeKind::Interface) {
            class = Some((s.name.clone(), s.signature.clone()));
        }
    }
    ScopeKey {
        file,
        chain: chain_indices
            .iter()
            .map(|&i| structure.scopes[i].name.clone())
            .collect(),
        callable_depth,
        class,
    }
}

type DefinitionId = (String, DefinitionKind, ScopeKey);

fn definitions(
    file: usize,
    structure: &FileStructure,
    occurrences: &[Occurrence],
) -> BTreeMap<DefinitionId, String> {
    let mut defs = BTreeMap::new();
    for occurrence in occurrences {
        if let Role::Definition(kind) = occurrence.role {
            if IGNORED_NAMES.contains(&occurrence.name.as_str()) {
                continue;
            }
            let key = scope_key(file, structure, occurrence.scope);
            let signature = if matches!(kind, DefinitionKind::Function | DefinitionKind::Type) {
                structure
                    .scopes
                    .iter()
                    .find(|s| {
                        s.name == occurrence.name
                            && s.start_line <= occurrence.line
                            && occurrence.line <= s.end_line
                    })
                    .map(|s| s.signature.clone())
                    .unwrap_or_default()
            } else {
                String::new()
            };
            defs.insert((occurrence.name.clone(), kind, key), signature);
        }
    }
    defs
}

/// One side of an edit: the file's structure and the edit's line range on that side.
pub struct Side<'a> {
    /// Structure of the whole file on this side.
    pub structure: &'a FileStructure,
    /// First line of the edit on this side.
    pub start: usize,
    /// One past the last line.
    pub end: usize,
}

/// Collects the identifiers of one edit of file `file`.
pub fn edit_symbols(file: usize, parent: Option<Side>, child: Option<Side>) -> EditSymbols {
    edit_symbols_seen(file, parent, child, [None, None])
}

/// [`edit_symbols`] with what the whole file binds on each side (parent, child), so
/// every use says what its name is bound to there.
pub fn edit_symbols_seen(
    file: usize,
    parent: Option<Side>,
    child: Option<Side>,
    names: [Option<&FileNames>; 2],
) -> EditSymbols {
    let empty = FileStructure::default();
    let (parent_structure, before, parent_lines) = side_seen(&parent, &empty);
    let (child_structure, after, child_lines) = side_seen(&child, &empty);
    let mut symbols = EditSymbols::default();
    let mut calls = CallsSeen::default();
    for (side, structure, occurrences, lines) in [
        (0, parent_structure, before, parent_lines),
        (1, child_structure, after, child_lines),
    ] {
        let file_names = names[side].filter(|n| n.modelled());
        let seen = SideSeen {
            file,
            structure,
            occurrences,
            lines,
            names: file_names,
        };
        seen.record(side, &mut symbols, &mut calls);
    }
    symbols.uses.sort();
    symbols.uses.dedup();
    symbols.widened_calls = calls.widened(&symbols.uses);
    symbols.changed_imports = symbols
        .imported_before
        .symmetric_difference(&symbols.imported_after)
        .cloned()
        .collect();

    let defs_before = definitions(file, parent_structure, before);
    let defs_after = definitions(file, child_structure, after);
    let (mut changed, removed, added) = changed_definitions(&defs_before, &defs_after);
    changed.extend(changed_signatures(&removed, &added));
    changed.extend(parameters_of_changed_callables(
        &changed,
        defs_before.keys().chain(defs_after.keys()),
    ));
    changed.extend(changed_constructors(&changed));
    symbols.renamed = renames(&removed, &added);
    symbols.fixtures = changed
        .iter()
        .filter(|d| d.kind == DefinitionKind::Function)
        .filter(|d| names.iter().flatten().any(|n| n.is_fixture(&d.name)))
        .map(|d| d.name.clone())
        .collect();
    // `@pytest.mark.parametrize("name", …)` provides `name` to the test like a fixture.
    let parametrized = |occurrences: &[Occurrence]| -> BTreeSet<String> {
        occurrences
            .iter()
            .filter(|o| o.callee.as_deref() == Some("parametrize"))
            .filter(|o| o.role == Role::Definition(DefinitionKind::Parameter))
            .map(|o| o.name.clone())
            .collect()
    };
    let (was, now) = (parametrized(before), parametrized(after));
    symbols
        .fixtures
        .extend(was.symmetric_difference(&now).cloned());
    symbols.record_fields = changed
        .iter()
        .filter(|d| d.kind == DefinitionKind::Field && d.scope.callable_depth == 0)
        .filter(|d| symbols.defined_after.contains(&d.name))
        .filter_map(|d| {
            let (class, _) = d.scope.class.as_ref()?;
            names[1]
                .is_some_and(|n| n.is_record(class))
                .then(|| (class.clone(), d.name.clone()))
        })
        .collect();
    symbols.changed = changed.into_iter().collect();
    symbols
}

/// One side's structure, its occurrences in the edit's lines and those lines (an
/// empty structure when the side does not exist).
fn side_seen<'a>(
    side: &Option<Side<'a>>,
    empty: &'a FileStructure,
) -> (
    &'a FileStructure,
    &'a [Occurrence],
    Option<std::ops::Range<usize>>,
) {
    match side {
        Some(side) => (
            side.structure,
            side.structure.occurrences_in(side.start, side.end),
            Some(side.start..side.end),
        ),
        None => (empty, &[][..], None),
    }
}

/// What calls the occurrences of both sides make: the most arguments each name is
/// called with per side, and the classes `cls(...)` constructs.
#[derive(Default)]
struct CallsSeen<'a> {
    most_arguments: [BTreeMap<&'a str, usize>; 2],
    constructed: BTreeSet<String>,
}

impl CallsSeen<'_> {
    /// Names called with more arguments after the edit than before (through an
    /// import alias too, and the enclosing class for a widened `cls(...)`).
    fn widened(self, uses: &[NameUse]) -> BTreeSet<String> {
        let [before, after] = &self.most_arguments;
        let mut widened: BTreeSet<String> = after
            .iter()
            .filter(|(name, after)| before.get(*name).is_some_and(|before| before < *after))
            .map(|(name, _)| name.to_string())
            .collect();
        // `from m import f as g`: a widened call of `g` is a widened call of `f`.
        let imported_as: Vec<String> = uses
            .iter()
            .filter(|u| u.call && widened.contains(&u.name))
            .filter_map(|u| match &u.binding {
                Some(Binding::Imported {
                    member: Some(member),
                    ..
                }) => Some(member.clone()),
                _ => None,
            })
            .collect();
        widened.extend(imported_as);
        // A widened `cls(...)` is a widened call of the enclosing class.
        if widened.contains("cls") {
            widened.extend(self.constructed);
        }
        widened
    }
}

/// One side of an edit as its occurrences are recorded.
struct SideSeen<'a> {
    file: usize,
    structure: &'a FileStructure,
    occurrences: &'a [Occurrence],
    /// The edit's lines on this side (`None`: the side does not exist).
    lines: Option<std::ops::Range<usize>>,
    /// What the whole file binds on this side, when modelled.
    names: Option<&'a FileNames>,
}

impl<'a> SideSeen<'a> {
    /// Records this side's imports, definitions and uses into `symbols` (`side` 0 is
    /// before the edit, 1 after) and its calls into `calls`.
    fn record(&self, side: usize, symbols: &mut EditSymbols, calls: &mut CallsSeen<'a>) {
        for import in &self.structure.imports {
            if self
                .lines
                .as_ref()
                .is_some_and(|l| l.contains(&import.line))
            {
                let key = import.member.clone().unwrap_or_else(|| import.name.clone());
                for name in [key, import.name.clone()] {
                    symbols
                        .import_modules
                        .entry(name)
                        .or_default()
                        .insert(import.module.clone());
                }
            }
        }
        let (defined, used, imported) = if side == 0 {
            (
                &mut symbols.defined_before,
                &mut symbols.used_before,
                &mut symbols.imported_before,
            )
        } else {
            (
                &mut symbols.defined_after,
                &mut symbols.used_after,
                &mut symbols.imported_after,
            )
        };
        for occurrence in self.occurrences {
            if let (true, Some(count)) = (occurrence.call, occurrence.arguments) {
                let most = calls.most_arguments[side]
                    .entry(&occurrence.name)
                    .or_default();
                *most = (*most).max(count);
            }
            if occurrence.name == "cls" && occurrence.call && occurrence.role == Role::Use {
                // `cls(...)` in a classmethod constructs the enclosing class.
                let scope = scope_key(self.file, self.structure, occurrence.scope);
                if let Some((class, _)) = scope.class.clone() {
                    calls.constructed.insert(class.clone());
                    used.insert(class.clone());
                    symbols.uses.push(NameUse {
                        name: class,
                        attribute: false,
                        call: true,
                        callee: None,
                        keyword: false,
                        scope,
                        binding: None,
                        qualifier: None,
                    });
                }
                continue;
            }
            if IGNORED_NAMES.contains(&occurrence.name.as_str()) {
                continue;
            }
            match occurrence.role {
                Role::Definition(_) => {
                    defined.insert(occurrence.name.clone());
                }
                Role::Import => {
                    imported.insert(occurrence.name.clone());
                }
                Role::Use => {
                    used.insert(occurrence.name.clone());
                    symbols.uses.push(self.name_use(occurrence));
                }
            }
        }
    }

    /// The use `occurrence` makes, with what its name is bound to here.
    fn name_use(&self, occurrence: &Occurrence) -> NameUse {
        let scope = scope_key(self.file, self.structure, occurrence.scope);
        let binding = self
            .names
            .filter(|_| !occurrence.attribute && !occurrence.keyword)
            .map(|n| n.binding(&occurrence.name, &scope.chain, scope.callable_depth));
        let qualifier = self.names.filter(|_| occurrence.attribute).map(|n| {
            occurrence
                .qualifier
                .as_deref()
                .map_or(Qualifier::Other, |q| {
                    n.qualifier(q, &scope.chain, scope.callable_depth)
                })
        });
        NameUse {
            name: occurrence.name.clone(),
            attribute: occurrence.attribute,
            call: occurrence.call,
            // `cls(key=…)` in a classmethod calls the enclosing class.
            callee: match occurrence.callee.as_deref() {
                Some("cls") => scope.class.as_ref().map(|(class, _)| class.clone()),
                _ => occurrence.callee.clone(),
            },
            keyword: occurrence.keyword,
            scope,
            binding,
            qualifier,
        }
    }
}

/// The definition `id` as changed (`signature`: its header changed, it still exists).
fn changed_definition(id: &DefinitionId, signature: bool) -> ChangedDefinition {
    ChangedDefinition {
        name: id.0.clone(),
        kind: id.1,
        scope: id.2.clone(),
        signature,
    }
}

/// Definitions removed, added or whose signature changed between the two sides, and
/// the removed and added ones by themselves.
fn changed_definitions(
    before: &BTreeMap<DefinitionId, String>,
    after: &BTreeMap<DefinitionId, String>,
) -> (
    BTreeSet<ChangedDefinition>,
    Vec<DefinitionId>,
    Vec<DefinitionId>,
) {
    let mut changed = BTreeSet::new();
    let mut removed = Vec::new();
    let mut added = Vec::new();
    for (id, signature) in before {
        match after.get(id) {
            None => {
                removed.push(id.clone());
                changed.insert(changed_definition(id, false));
            }
            Some(after_signature) if after_signature != signature => {
                changed.insert(changed_definition(id, true));
            }
            Some(_) => {}
        }
    }
    for id in after.keys() {
        if !before.contains_key(id) {
            added.push(id.clone());
            changed.insert(changed_definition(id, false));
        }
    }
    (changed, removed, added)
}

/// Callables whose signature changed because a parameter was added or removed (a
/// callable added or removed as a whole has no "changed" signature).
fn changed_signatures(removed: &[DefinitionId], added: &[DefinitionId]) -> Vec<ChangedDefinition> {
    let whole: BTreeSet<(Vec<String>, String)> = removed
        .iter()
        .chain(added)
        .filter(|id| id.1 == DefinitionKind::Function)
        .map(|id| (id.2.chain.clone(), id.0.clone()))
        .collect();
    let signature_scopes: BTreeSet<ScopeKey> = removed
        .iter()
        .chain(added)
        .filter(|id| id.1 == DefinitionKind::Parameter && id.2.callable_depth > 0)
        .filter(|id| {
            let depth = id.2.callable_depth;
            !whole.contains(&(
                id.2.chain[..depth - 1].to_vec(),
                id.2.chain[depth - 1].clone(),
            ))
        })
        .map(|id| id.2.clone())
        .collect();
    signature_scopes
        .into_iter()
        .map(|scope| {
            let depth = scope.callable_depth;
            let name = scope.chain[depth - 1].clone();
            let outer = ScopeKey {
                file: scope.file,
                chain: scope.chain[..depth - 1].to_vec(),
                callable_depth: 0,
                class: scope.class.clone().filter(|_| depth >= 2),
            };
            ChangedDefinition {
                name,
                kind: DefinitionKind::Function,
                scope: outer,
                signature: true,
            }
        })
        .collect()
}

/// Every parameter (among `ids`) of a callable whose signature changed is part of the
/// change: the body's uses of it follow the new signature.
fn parameters_of_changed_callables<'i>(
    changed: &BTreeSet<ChangedDefinition>,
    ids: impl Iterator<Item = &'i DefinitionId>,
) -> Vec<ChangedDefinition> {
    let changed_callables: BTreeSet<(Vec<String>, String)> = changed
        .iter()
        .filter(|d| d.signature && d.kind == DefinitionKind::Function)
        .map(|d| (d.scope.chain.clone(), d.name.clone()))
        .collect();
    ids.filter(|id| {
        id.1 == DefinitionKind::Parameter
            && id.2.chain.split_last().is_some_and(|(function, outer)| {
                changed_callables.contains(&(outer.to_vec(), function.clone()))
            })
    })
    .map(|id| changed_definition(id, false))
    .collect()
}

/// Constructors: a changed `__init__`/constructor changes how `ClassName(...)` is called.
fn changed_constructors(changed: &BTreeSet<ChangedDefinition>) -> Vec<ChangedDefinition> {
    changed
        .iter()
        .filter(|d| d.signature && d.kind == DefinitionKind::Function)
        .filter_map(|d| {
            let (class, _) = d.scope.class.as_ref()?;
            let is_constructor =
                d.name == "__init__" || d.name == *class || d.name == "constructor";
            is_constructor.then(|| ChangedDefinition {
                name: class.clone(),
                kind: DefinitionKind::Type,
                scope: ScopeKey {
                    file: d.scope.file,
                    chain: Vec::new(),
                    callable_depth: 0,
                    class: None,
                },
                signature: true,
            })
        })
        .collect()
}

/// A definition removed and one of the same kind added in the same place, each the
/// only one there: a rename, `(old, new)`.
fn renames(removed: &[DefinitionId], added: &[DefinitionId]) -> Vec<(String, String)> {
    removed
        .iter()
        .filter_map(|old| {
            let same_place: Vec<_> = added
                .iter()
                .filter(|new| new.1 == old.1 && new.2 == old.2)
                .collect();
            let removed_here = removed
                .iter()
                .filter(|r| r.1 == old.1 && r.2 == old.2)
                .count();
            (same_place.len() == 1 && removed_here == 1)
                .then(|| (old.0.clone(), same_place[0].0.clone()))
        })
        .collect()
}
