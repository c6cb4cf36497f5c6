//! Names defined in one edit and used in another: `def_use` and `signature_call`
//! (a use resolved to the definitions of its closest scope rank), `argument_parameter`
//! (a keyword or a new argument meeting a changed parameter) and a record class's new
//! field meeting its constructor's call.

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::DefinitionKind;
use crate::engine::history::symbols::{ChangedDefinition, NameUse};
use crate::engine::history::visibility::{Binding, Qualifier, UseSite, visible_from};

use super::{Dependency, DependencyKind, EditFacts, nearest_holders};

/// How close a definition is to a use; lower is closer, `None` means unrelated.
fn resolution_rank(
    def: &ChangedDefinition,
    def_path: &str,
    use_: &NameUse,
    use_path: &str,
) -> Option<u8> {
    let same_file = def.scope.file == use_.scope.file;
    let module_level = def.scope.chain.is_empty()
        && def.scope.class.is_none()
        && matches!(
            def.kind,
            DefinitionKind::Function | DefinitionKind::Type | DefinitionKind::Variable
        );
    // `self.m` reaches `m` of the enclosing class, a base it names or a subclass that
    // names it; `super().m` only a base's.
    if let (Some((def_class, def_header)), Some(qualifier)) = (&def.scope.class, &use_.qualifier) {
        let use_class = use_.scope.class.as_ref();
        let own = use_class.is_some_and(|(name, _)| name == def_class);
        let base = use_class.is_some_and(|(_, header)| header_mentions(header, def_class));
        let derived = use_class.is_some_and(|(name, _)| header_mentions(def_header, name));
        let reachable = match qualifier {
            Qualifier::OwnObject => own || base || derived,
            Qualifier::Super => base,
            // `json.dumps`: an attribute of a module is no member of a class.
            Qualifier::Module(_) => false,
            _ => true,
        };
        if !reachable {
            return None;
        }
    }
    // `f(key=…)`: a keyword names a parameter of the callee (the keyword rules link
    // those), never a variable, field or function in scope.
    if use_.keyword {
        return None;
    }
    if module_level {
        let site = UseSite {
            path: use_path,
            attribute: use_.attribute,
            binding: use_.binding.as_ref(),
            qualifier: use_.qualifier.as_ref(),
        };
        match visible_from(&def.name, def_path, site) {
            Some(false) => return None,
            Some(true) if !same_file => return Some(3),
            _ => {}
        }
    }
    match def.kind {
        DefinitionKind::Parameter | DefinitionKind::Variable if def.scope.callable_depth > 0 => {
            // A local: visible only inside its callable.
            let prefix = &def.scope.chain[..def.scope.callable_depth];
            (same_file && use_.scope.chain.starts_with(prefix) && !use_.attribute).then_some(0)
        }
        DefinitionKind::Parameter | DefinitionKind::Variable => {
            if use_.attribute && !same_file {
                return None;
            }
            Some(if same_file { 1 } else { 3 })
        }
        DefinitionKind::Field => {
            let def_class = def.scope.class.as_ref().map(|(name, _)| name.as_str());
            let use_class = use_.scope.class.as_ref();
            // Outside its class a field is only reachable as `obj.field`.
            let in_own_class = same_file && use_class.map(|(n, _)| n.as_str()) == def_class;
            if !(use_.attribute || in_own_class) {
                return None;
            }
            match (def_class, use_class) {
                (Some(d), Some((u, _))) if same_file && d == u => Some(1),
                (Some(d), Some((_, header))) if header_mentions(header, d) => Some(2),
                _ => Some(if same_file || def_path == use_path {
                    3
                } else {
                    4
                }),
            }
        }
        DefinitionKind::Function if def.scope.class.is_some() && !use_.attribute => {
            // A method is reached as `obj.method`; a bare name reaches it only inside
            // its class or a subclass (Java's implicit `this`), never from elsewhere.
            let (class, _) = def.scope.class.as_ref()?;
            let subclass = use_
                .scope
                .class
                .as_ref()
                .is_some_and(|(_, header)| header_mentions(header, class));
            if same_file && use_.scope.chain.contains(class) {
                Some(2)
            } else {
                subclass.then_some(if same_file { 2 } else { 3 })
            }
        }
        DefinitionKind::Function | DefinitionKind::Type if def.scope.callable_depth > 0 => {
            // A function or class nested in a function is a local of that function.
            let prefix = &def.scope.chain[..def.scope.callable_depth];
            (same_file && use_.scope.chain.starts_with(prefix) && !use_.attribute).then_some(0)
        }
        DefinitionKind::Function | DefinitionKind::Type => Some(if same_file { 2 } else { 3 }),
    }
}

fn header_mentions(header: &str, name: &str) -> bool {
    header
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .skip(2)
        .any(|word| word == name)
}

/// Changed definitions by name, then by definition and file: each group's editors
/// in ascending order (the symbol index a use is resolved against).
type DefinitionIndex<'e> = BTreeMap<&'e str, Vec<((&'e ChangedDefinition, &'e str), Vec<usize>)>>;

fn definition_index<'e>(edits: &[EditFacts<'e>]) -> DefinitionIndex<'e> {
    let mut groups: BTreeMap<&str, BTreeMap<(&ChangedDefinition, &str), Vec<usize>>> =
        BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        for def in &edit.symbols.changed {
            groups
                .entry(def.name.as_str())
                .or_default()
                .entry((def, edit.path))
                .or_default()
                .push(index);
        }
    }
    groups
        .into_iter()
        .map(|(name, by_def)| (name, by_def.into_iter().collect()))
        .collect()
}

pub(super) fn definition_uses(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let by_name = definition_index(edits);
    let parameter_users = parameter_readers(edits);
    for (user, edit) in edits.iter().enumerate() {
        uses_of_changed_definitions(&by_name, user, edit, found);
        call_arguments(&by_name, &parameter_users, user, edit, found);
    }
}

/// (function, name) → the edits reading a bare `name` inside that function.
fn parameter_readers<'e>(edits: &[EditFacts<'e>]) -> BTreeMap<(&'e str, &'e str), Vec<usize>> {
    let mut parameter_users: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        let read: BTreeSet<(&str, &str)> = edit
            .symbols
            .uses
            .iter()
            .filter(|u| !u.attribute && u.scope.callable_depth > 0)
            .map(|u| {
                (
                    u.scope.chain[u.scope.callable_depth - 1].as_str(),
                    u.name.as_str(),
                )
            })
            .collect();
        for key in read {
            parameter_users.entry(key).or_default().push(index);
        }
    }
    parameter_users
}

/// `def_use` and `signature_call`: each use in edit `user` to the changed definitions
/// of its closest scope rank.
fn uses_of_changed_definitions(
    by_name: &DefinitionIndex,
    user: usize,
    edit: &EditFacts,
    found: &mut BTreeSet<Dependency>,
) {
    for use_ in &edit.symbols.uses {
        // `from m import f as g`: a use of `g` is a use of `m`'s `f`.
        let name = match &use_.binding {
            Some(Binding::Imported {
                member: Some(member),
                ..
            }) if member != "*" => member.as_str(),
            _ => use_.name.as_str(),
        };
        let Some(candidates) = by_name.get(name) else {
            continue;
        };
        // Ranked per definition (not per editing edit): cost follows the
        // distinct definitions of a name, not how many edits touched it.
        let ranked: Vec<(u8, &ChangedDefinition, &[usize])> = candidates
            .iter()
            .filter(|(_, holders)| holders.iter().any(|&h| h != user))
            .filter_map(|((def, path), holders)| {
                resolution_rank(def, path, use_, edit.path)
                    .map(|rank| (rank, *def, holders.as_slice()))
            })
            .collect();
        let Some(best) = ranked.iter().map(|r| r.0).min() else {
            continue;
        };
        let groups: Vec<(&ChangedDefinition, &[usize])> = ranked
            .into_iter()
            .filter(|r| r.0 == best)
            .map(|(_, def, holders)| (def, holders))
            .collect();
        for (definer, def) in nearest_holders(&groups, user) {
            let kind = if def.signature && use_.call {
                DependencyKind::SignatureCall
            } else {
                DependencyKind::DefUse
            };
            found.insert(Dependency {
                from: definer,
                to: user,
                kind,
                detail: name.to_string(),
            });
        }
    }
}

/// The arguments of the calls in edit `user`: to a callable whose signature changed
/// (`signature_call`), to a changed member of the class called (`def_use`), and to a
/// changed parameter of the callee and the body reading it (`argument_parameter`).
fn call_arguments(
    by_name: &DefinitionIndex,
    parameter_users: &BTreeMap<(&str, &str), Vec<usize>>,
    user: usize,
    edit: &EditFacts,
    found: &mut BTreeSet<Dependency>,
) {
    // Arguments of a call to a callable whose signature changed (`f(x, key=y)`
    // spread over lines that do not name `f`).
    for use_ in &edit.symbols.uses {
        let Some(callee) = use_.callee.as_deref() else {
            continue;
        };
        // The callee need not have changed: `T{Field: v}` or `T(field=v)` still
        // names a member of `T` that another edit changed.
        let candidates = by_name.get(callee).map_or(&[][..], Vec::as_slice);
        // When the callee's name is in this edit, it must resolve to the definition
        // (a bare `describe(x)` is not a call of some class's method `describe`).
        let callee_uses: Vec<&NameUse> = edit
            .symbols
            .uses
            .iter()
            .filter(|u| u.name == callee)
            .collect();
        let changed_callables: Vec<((), &[usize])> = candidates
            .iter()
            .filter(|((def, path), _)| {
                def.signature
                    && matches!(def.kind, DefinitionKind::Function | DefinitionKind::Type)
                    && (callee_uses.is_empty()
                        || callee_uses
                            .iter()
                            .any(|u| resolution_rank(def, path, u, edit.path).is_some()))
            })
            .map(|(_, holders)| ((), holders.as_slice()))
            .collect();
        // The call named here reaches a changed `callee` (not `session.get` for a
        // module's `get`).
        let reached = callee_uses.is_empty()
            || candidates.iter().any(|((def, path), _)| {
                matches!(def.kind, DefinitionKind::Function | DefinitionKind::Type)
                    && callee_uses
                        .iter()
                        .any(|u| resolution_rank(def, path, u, edit.path).is_some())
            });
        for (definer, ()) in nearest_holders(&changed_callables, user) {
            found.insert(Dependency {
                from: definer,
                to: user,
                kind: DependencyKind::SignatureCall,
                detail: callee.to_string(),
            });
        }
        // `Env(..., vcs_rev=vcs_rev)`: a keyword argument named like a field or
        // constructor parameter that an edit of class `Env` changed.
        if !use_.keyword {
            continue;
        }
        let Some(candidates) = by_name.get(use_.name.as_str()) else {
            continue;
        };
        let members: Vec<((), &[usize])> = candidates
            .iter()
            .filter(|((def, _), _)| {
                matches!(def.kind, DefinitionKind::Field | DefinitionKind::Parameter)
                    && def
                        .scope
                        .class
                        .as_ref()
                        .is_some_and(|(class, _)| class == callee)
            })
            .map(|(_, holders)| ((), holders.as_slice()))
            .collect();
        for (definer, ()) in nearest_holders(&members, user) {
            found.insert(Dependency {
                from: definer,
                to: user,
                kind: DependencyKind::DefUse,
                detail: format!("{callee}({})", use_.name),
            });
        }
        // `f(..., key=…)` where `f`'s own parameter `key` changed: the call site,
        // the signature and the body that reads `key` are one change — when the
        // call named here reaches that `f` (not `session.get` for a module's `get`).
        if !reached {
            continue;
        }
        let parameter: Vec<((), &[usize])> = candidates
            .iter()
            .filter(|((def, _), _)| {
                def.kind == DefinitionKind::Parameter
                    && def.scope.chain.last().map(String::as_str) == Some(callee)
            })
            .map(|(_, holders)| ((), holders.as_slice()))
            .collect();
        if parameter.is_empty() {
            continue;
        }
        let body = parameter_users
            .get(&(callee, use_.name.as_str()))
            .map_or(&[][..], Vec::as_slice);
        let groups = [parameter, vec![((), body)]].concat();
        for (other, ()) in nearest_holders(&groups, user) {
            found.insert(Dependency {
                from: other,
                to: user,
                kind: DependencyKind::ArgumentParameter,
                detail: format!("{callee}({})", use_.name),
            });
        }
    }
}

/// The names a callable is called by: its own and, for a constructor, its class's.
fn called_as(def: &ChangedDefinition, function: &str) -> Vec<String> {
    let mut names = vec![function.to_string()];
    if let Some((class, _)) = &def.scope.class
        && (function == "__init__" || function == class || function == "constructor")
    {
        names.push(class.clone());
    }
    names
}

/// A call site that passes more arguments than before, of a callable whose signature
/// gained parameters (the call already depends on the signature): it also goes with
/// the body edits that read the new parameters — the call site, the signature and
/// the body that uses the new argument are one change.
pub(super) fn new_arguments(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // Callee name → (signature edit, parameter added there).
    let mut added: BTreeMap<String, Vec<(usize, &str)>> = BTreeMap::new();
    // (file, callee name, parameter) → edits reading the bare parameter in the callable.
    let mut readers: BTreeMap<(&str, String, &str), BTreeSet<usize>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        let symbols = edit.symbols;
        for def in &symbols.changed {
            let depth = def.scope.callable_depth;
            if def.kind != DefinitionKind::Parameter
                || depth == 0
                || !symbols.defined_after.contains(&def.name)
                || symbols.defined_before.contains(&def.name)
            {
                continue;
            }
            for callee in called_as(def, &def.scope.chain[depth - 1]) {
                added.entry(callee).or_default().push((index, &def.name));
            }
        }
    }
    if added.is_empty() {
        return;
    }
    let wanted: BTreeSet<&str> = added
        .values()
        .flatten()
        .map(|(_, parameter)| *parameter)
        .collect();
    for (index, edit) in edits.iter().enumerate() {
        for use_ in &edit.symbols.uses {
            let depth = use_.scope.callable_depth;
            if use_.attribute || depth == 0 || !wanted.contains(use_.name.as_str()) {
                continue;
            }
            let function = &use_.scope.chain[depth - 1];
            let mut names = vec![function.clone()];
            if let Some((class, _)) = &use_.scope.class
                && (function == "__init__" || function == class || function == "constructor")
            {
                names.push(class.clone());
            }
            for name in names {
                readers
                    .entry((edit.path, name, use_.name.as_str()))
                    .or_default()
                    .insert(index);
            }
        }
    }
    let calls: Vec<(usize, usize, String)> = found
        .iter()
        .filter(|d| d.kind == DependencyKind::SignatureCall)
        .filter(|d| edits[d.to].symbols.widened_calls.contains(&d.detail))
        .map(|d| (d.from, d.to, d.detail.clone()))
        .collect();
    for (signature, call, callee) in calls {
        let Some(parameters) = added.get(&callee) else {
            continue;
        };
        for &(_, parameter) in parameters.iter().filter(|(s, _)| *s == signature) {
            let Some(body) = readers.get(&(edits[signature].path, callee.clone(), parameter))
            else {
                continue;
            };
            let body: Vec<usize> = body.iter().copied().filter(|&b| b != signature).collect();
            for (reader, ()) in nearest_holders(&[((), body.as_slice())], call) {
                found.insert(Dependency {
                    from: reader,
                    to: call,
                    kind: DependencyKind::ArgumentParameter,
                    detail: format!("{callee}(+{parameter})"),
                });
            }
        }
    }
}

/// A record class (`@dataclass`, attrs, `NamedTuple`…) gains a field, and a call of
/// the class passes more arguments than before where the class is visible: the new
/// field is the new constructor parameter the call passes (by name, the class-member
/// rule links it).
pub(super) fn record_constructors(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let mut fields: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        for (class, field) in &edit.symbols.record_fields {
            fields.entry(class).or_default().push((index, field));
        }
    }
    if fields.is_empty() {
        return;
    }
    for (call, edit) in edits.iter().enumerate() {
        for use_ in edit.symbols.uses.iter().filter(|u| u.call && !u.attribute) {
            let Some(list) = fields.get(use_.name.as_str()) else {
                continue;
            };
            if !edit.symbols.widened_calls.contains(&use_.name) {
                continue;
            }
            for &(definer, field) in list.iter().filter(|(d, _)| *d != call) {
                let path = edits[definer].path;
                let site = UseSite {
                    path: edit.path,
                    attribute: false,
                    binding: use_.binding.as_ref(),
                    qualifier: None,
                };
                if path != edit.path && visible_from(&use_.name, path, site) == Some(false) {
                    continue;
                }
                found.insert(Dependency {
                    from: definer,
                    to: call,
                    kind: DependencyKind::ArgumentParameter,
                    detail: format!("{}(+{field})", use_.name),
                });
            }
        }
    }
}
