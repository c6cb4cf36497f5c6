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
//! | `move` | lines deleted by a pure deletion and inserted (maybe touched up) by a pure insertion |
//!
//! A use resolves only to the definitions of the closest scope rank, so a name
//! changed in many places links each use to its own definition, not to all of them.

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::structure::DefinitionKind;

use super::similarity::{PrefixIndex, dice, may_reach};
use super::symbols::{ChangedDefinition, EditSymbols, NameUse};
use super::visibility::{Binding, Qualifier, UseSite, module_holds, package_holds, visible_from};

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

/// A reason kind, as written in `reasons[].kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DependencyKind {
    /// Definition → use.
    DefUse,
    /// Signature change → call site.
    SignatureCall,
    /// Import → use in the same file.
    ImportUse,
    /// Definition → its import elsewhere.
    DefImport,
    /// The same change in several places.
    Clone,
    /// Test ↔ implementation.
    TestImpl,
    /// Deleted here, inserted there.
    Move,
    /// A language server resolved a use in one edit to a definition in another.
    LspDefUse,
    /// A language server found a reference, in one edit, to a definition another edit
    /// adds or changes (`textDocument/references`).
    LspReference,
    /// Two edits of one function introduce the same new compound name.
    SharedName,
    /// A call passes a keyword argument whose parameter another edit changed or uses.
    ArgumentParameter,
    /// A docstring or comment names what another edit of the function changed.
    DocImpl,
    /// A pytest fixture changed, a test or fixture taking it as a parameter.
    Fixture,
}

impl DependencyKind {
    /// The snake_case name used in trajectories.
    pub fn as_str(self) -> &'static str {
        match self {
            DependencyKind::DefUse => "def_use",
            DependencyKind::SignatureCall => "signature_call",
            DependencyKind::ImportUse => "import_use",
            DependencyKind::DefImport => "def_import",
            DependencyKind::Clone => "clone",
            DependencyKind::TestImpl => "test_impl",
            DependencyKind::Move => "move",
            DependencyKind::LspDefUse => "lsp_def_use",
            DependencyKind::LspReference => "lsp_reference",
            DependencyKind::SharedName => "shared_name",
            DependencyKind::ArgumentParameter => "argument_parameter",
            DependencyKind::DocImpl => "doc_impl",
            DependencyKind::Fixture => "fixture",
        }
    }

    /// True for kinds that fix a direction (a move's deletion comes first).
    pub fn is_directed(self) -> bool {
        self == DependencyKind::Move
    }
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
    moves(edits, &mut found);
    found.into_iter().collect()
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

fn definition_uses(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let by_name = definition_index(edits);
    // (function, name) → edits reading a bare `name` inside that function.
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
    for (user, edit) in edits.iter().enumerate() {
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
fn new_arguments(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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
fn record_constructors(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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

/// True for files that pytest reads fixtures from for the tests under their directory.
fn is_conftest(path: &str) -> bool {
    path.rsplit('/').next() == Some("conftest.py")
}

/// A pytest fixture added, removed or re-signed (or a `@pytest.mark.parametrize` name
/// added or removed), and a test or fixture that starts or stops taking it as a
/// parameter: pytest binds the parameter to the fixture by name.
/// A fixture is visible in its own module and, from a `conftest.py`, under its
/// directory.
fn fixtures(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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

/// Members of one class changed together: a class attribute, the constructor
/// parameter and the `self.x = x` that stores it are one addition.
fn class_members(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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

fn imports(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // (file, name) → edits using the bare name; name → (edit, file) defining it at top level.
    let mut users: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    let mut definers: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        let bare: BTreeSet<&str> = edit
            .symbols
            .uses
            .iter()
            .filter(|u| !u.attribute)
            .map(|u| u.name.as_str())
            .collect();
        for name in bare {
            users.entry((edit.path, name)).or_default().push(index);
        }
        let top_level: BTreeSet<&str> = edit
            .symbols
            .changed
            .iter()
            .filter(|d| {
                d.scope.callable_depth == 0
                    && d.scope.class.is_none()
                    && !matches!(d.kind, DefinitionKind::Parameter | DefinitionKind::Field)
            })
            .map(|d| d.name.as_str())
            .collect();
        for name in top_level {
            definers.entry(name).or_default().push((index, edit.path));
        }
    }
    for (importer, edit) in edits.iter().enumerate() {
        for name in &edit.symbols.changed_imports {
            if let Some(list) = users.get(&(edit.path, name.as_str())) {
                for (user, ()) in nearest_holders(&[((), list.as_slice())], importer) {
                    found.insert(Dependency {
                        from: importer,
                        to: user,
                        kind: DependencyKind::ImportUse,
                        detail: name.clone(),
                    });
                }
            }
            let elsewhere: Vec<usize> = definers
                .get(name.as_str())
                .into_iter()
                .flatten()
                .filter(|(definer, path)| *definer != importer && *path != edit.path)
                .filter(|(_, path)| imports_from(edit, name, path))
                .map(|(definer, _)| *definer)
                .collect();
            for (definer, ()) in nearest_holders(&[((), elsewhere.as_slice())], importer) {
                found.insert(Dependency {
                    from: definer,
                    to: importer,
                    kind: DependencyKind::DefImport,
                    detail: name.clone(),
                });
            }
        }
    }
}

/// Whether the import of `name` on `edit`'s lines can bring in a definition of the
/// file `path`: its module is that file or a package holding it (Python), or that
/// file's package (Go). A name that is only part of a module path (`pkg` in
/// `from pkg.m import f`) imports nothing. Other languages: by name alone.
fn imports_from(edit: &EditFacts, name: &str, path: &str) -> bool {
    let python = edit.path.ends_with(".py");
    if !(python || edit.path.ends_with(".go")) {
        return true;
    }
    edit.symbols
        .import_modules
        .get(name)
        .is_some_and(|modules| {
            modules.iter().any(|m| {
                if python {
                    module_holds(m, edit.path, path)
                } else {
                    package_holds(m, path)
                }
            })
        })
}

/// Tokens of code: identifiers, numbers, string literals, single punctuation.
pub fn tokens(text: &str) -> Vec<&str> {
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
pub fn token_change(before: &str, after: &str) -> (Vec<String>, Vec<String>) {
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

fn has_word(tokens: &[String]) -> bool {
    tokens.iter().any(|t| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '"' || c == '\'')
    })
}

fn sorted_tokens(text: &str) -> Vec<&str> {
    let mut list = tokens(text);
    list.sort_unstable();
    list
}

/// Clones: two edits whose before-texts and after-texts are alike (the same edit
/// applied in two places, maybe to slightly different code), or whose token change
/// is identical (a bulk substitution).
/// Removed tokens, added tokens and, for one-sided changes, the normalized lines.
type CloneKey<'a> = (&'a [String], &'a [String], Option<&'a (String, String)>);

fn clones(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // Below this many tokens a change is too small to call two of them clones by
    // similarity alone (`)` → `),`), but an identical token change still counts.
    const MIN_TOKENS: usize = 4;
    const SIMILAR: f64 = 0.8;
    let changes: Vec<(Vec<String>, Vec<String>)> = edits
        .iter()
        .map(|e| token_change(e.before_text, e.after_text))
        .collect();
    let token_lists: Vec<(Vec<&str>, Vec<&str>)> = edits
        .iter()
        .map(|e| (sorted_tokens(e.before_text), sorted_tokens(e.after_text)))
        .collect();
    let imports: Vec<bool> = edits
        .iter()
        .map(|e| is_import(&tokens(e.before_text)) || is_import(&tokens(e.after_text)))
        .collect();
    let normal: Vec<(String, String)> = edits
        .iter()
        .map(|e| (normalized(e.before_text), normalized(e.after_text)))
        .collect();
    let detail = |index: usize| {
        let (removed, added) = &changes[index];
        format!("-{} +{}", removed.join(" "), added.join(" "))
    };

    // Identical changes: the same removed and added tokens (and, for a pure
    // insertion or deletion, the same lines).
    let mut groups: BTreeMap<CloneKey, Vec<usize>> = BTreeMap::new();
    for (index, (removed, added)) in changes.iter().enumerate() {
        if !(has_word(removed) || has_word(added)) {
            continue;
        }
        let both_sides = !removed.is_empty() && !added.is_empty();
        let lines = (!both_sides).then_some(&normal[index]);
        groups
            .entry((removed, added, lines))
            .or_default()
            .push(index);
    }
    let mut group_of = vec![usize::MAX; edits.len()];
    for (number, members) in groups.values().enumerate() {
        for &member in members {
            group_of[member] = number;
        }
        link_holders(members, |a, b| {
            found.insert(Dependency {
                from: a,
                to: b,
                kind: DependencyKind::Clone,
                detail: detail(a),
            });
        });
    }

    // Alike changes: before- and after-texts similar as token multisets. Each edit
    // is compared only with earlier edits that share one of its rarest tokens
    // (the same one-sidedness, so the same side is indexed), nearest first.
    let side = |b: usize| {
        let (before, after) = &token_lists[b];
        if after.is_empty() { before } else { after }
    };
    let shape = |b: usize| {
        let (before, after) = &token_lists[b];
        (before.is_empty(), after.is_empty())
    };
    let mut indexes: BTreeMap<(bool, bool), PrefixIndex> = BTreeMap::new();
    for b in 0..edits.len() {
        let (before_b, after_b) = &token_lists[b];
        if before_b.len() + after_b.len() < MIN_TOKENS {
            continue;
        }
        let index = indexes.entry(shape(b)).or_insert_with(|| {
            let key = shape(b);
            PrefixIndex::new(
                SIMILAR,
                (0..edits.len())
                    .filter(|&e| shape(e) == key)
                    .map(|e| side(e).as_slice()),
            )
        });
        let mut linked = 0;
        for a in index.candidates(side(b), b, MAX_CANDIDATES) {
            if group_of[a] != usize::MAX && group_of[a] == group_of[b] {
                continue;
            }
            let (before_a, after_a) = &token_lists[a];
            let alike = may_reach(before_a.len(), before_b.len(), SIMILAR)
                && may_reach(after_a.len(), after_b.len(), SIMILAR)
                && dice(before_a, before_b) >= SIMILAR
                && dice(after_a, after_b) >= SIMILAR;
            if alike {
                found.insert(Dependency {
                    from: a,
                    to: b,
                    kind: DependencyKind::Clone,
                    detail: detail(a),
                });
                linked += 1;
                if linked == CLIQUE_MAX {
                    break;
                }
            }
        }
        // Only edits that may start a clone pair are looked up by later edits.
        let (removed, added) = &changes[b];
        if (has_word(removed) || has_word(added)) && !imports[b] {
            index.insert(b, side(b));
        }
    }
}

fn is_import(tokens: &[&str]) -> bool {
    matches!(
        tokens.first(),
        Some(&"import" | &"from" | &"use" | &"package")
    )
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
fn string_keys(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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
fn shared_names_in_function(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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

/// A docstring or comment of a function that starts naming what another edit of
/// the same function defines or changes (a parameter documented as it is added, a
/// variable renamed and the comment that explains it): the prose follows the code.
fn documentation(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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

/// The same local variable (re)assigned by several edits of one function: each
/// assignment feeds the same uses, so the edits change one data flow.
fn local_reassignments(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    let mut by_variable: BTreeMap<(&str, &super::symbols::ScopeKey), BTreeSet<usize>> =
        BTreeMap::new();
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

fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
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

fn tests_and_implementations(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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
        let written: BTreeSet<&str> = i
            .symbols
            .changed
            .iter()
            .filter(|c| match c.kind {
                DefinitionKind::Parameter => false,
                DefinitionKind::Variable => c.scope.callable_depth == 0,
                _ => true,
            })
            .map(|c| c.name.as_str())
            .chain(i.symbols.renamed.iter().map(|(_, new)| new.as_str()))
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

fn is_identifier_like(word: &str) -> bool {
    word.len() >= 3
        && word
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
        && !KEYWORDS.contains(&word)
}

/// A line without its trailing comment, quotes unified, as tokens.
fn line_tokens(line: &str) -> Vec<String> {
    let code = [" #", " //"].iter().fold(line, |code, marker| {
        code.split(marker).next().unwrap_or(code)
    });
    let mut list: Vec<String> = tokens(code)
        .into_iter()
        .map(|t| t.replace('\'', "\""))
        .collect();
    // Sorted: compared as multisets by `dice`.
    list.sort_unstable();
    list
}

fn moves(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // A moved line must carry some code, not just a brace or a blank.
    const MIN_MOVED_CHARS: usize = 12;
    // Lines compared by token similarity, so a moved line may be touched up
    // (renamed variable, other quotes, comment dropped) on the way.
    const ALIKE: f64 = 0.75;
    // Fuzzy comparison is quadratic; beyond this many lines only exact lines count.
    const MAX_FUZZY_LINES: usize = 60;
    let significant = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.trim().to_string())
            .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 3)
            .collect()
    };
    let inserted: Vec<Vec<String>> = edits.iter().map(|e| significant(e.after_text)).collect();
    let inserted_sets: Vec<BTreeSet<&String>> = inserted
        .iter()
        .map(|lines| lines.iter().collect())
        .collect();
    let inserted_tokens: Vec<Vec<Vec<String>>> = inserted
        .iter()
        .map(|lines| {
            if lines.len() <= MAX_FUZZY_LINES {
                lines.iter().map(|l| line_tokens(l)).collect()
            } else {
                Vec::new()
            }
        })
        .collect();
    let deleted_tokens: Vec<Vec<Vec<String>>> = edits
        .iter()
        .map(|e| {
            let lines = significant(e.before_text);
            if lines.len() <= MAX_FUZZY_LINES {
                lines.iter().map(|l| line_tokens(l)).collect()
            } else {
                Vec::new()
            }
        })
        .collect();
    // Where each line is inserted, exactly and (for a short insertion) by its tokens:
    // a deletion is compared only with the insertions that hold a line like one of its.
    let pure_insertion =
        |target: usize| !inserted_sets[target].is_empty() && edits[target].before_text.is_empty();
    let mut exact_lines: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut line_owner: Vec<usize> = Vec::new();
    let views: Vec<Vec<Vec<&str>>> = inserted_tokens
        .iter()
        .map(|lines| {
            lines
                .iter()
                .map(|l| l.iter().map(String::as_str).collect())
                .collect()
        })
        .collect();
    let mut fuzzy_index = PrefixIndex::new(
        ALIKE,
        (0..edits.len())
            .filter(|&t| pure_insertion(t))
            .flat_map(|t| views[t].iter().map(Vec::as_slice)),
    );
    for target in (0..edits.len()).filter(|&t| pure_insertion(t)) {
        for line in &inserted_sets[target] {
            exact_lines.entry(line.as_str()).or_default().push(target);
        }
        for line in &views[target] {
            fuzzy_index.insert(line_owner.len(), line);
            line_owner.push(target);
        }
    }
    for (source, edit) in edits.iter().enumerate() {
        // Cut and paste: a pure deletion here, a pure insertion there. Lines that
        // reappear next to rewritten code are refactorings, which annotators treat
        // as mutual, not as moves.
        if !edit.after_text.is_empty() {
            continue;
        }
        let deleted = significant(edit.before_text);
        // Lines the edit keeps in place are not moved away.
        let gone: Vec<&String> = deleted
            .iter()
            .filter(|l| !inserted_sets[source].contains(l))
            .collect();
        if gone.is_empty() {
            continue;
        }
        let fuzzy = gone.len() <= MAX_FUZZY_LINES;
        let gone_tokens: Vec<Vec<String>> = if fuzzy {
            gone.iter().map(|l| line_tokens(l)).collect()
        } else {
            Vec::new()
        };
        // Only the insertions nearest the deletion are read from each list.
        let mut targets: Vec<usize> = Vec::new();
        for list in gone
            .iter()
            .filter_map(|line| exact_lines.get(line.as_str()))
        {
            let at = list.partition_point(|&t| t < source);
            targets.extend_from_slice(
                &list[at.saturating_sub(MAX_CANDIDATES)..(at + MAX_CANDIDATES).min(list.len())],
            );
        }
        let near = line_owner.partition_point(|&t| t < source);
        for tokens in &gone_tokens {
            let view: Vec<&str> = tokens.iter().map(String::as_str).collect();
            targets.extend(
                fuzzy_index
                    .candidates(&view, near, MAX_CANDIDATES)
                    .into_iter()
                    .map(|line| line_owner[line]),
            );
        }
        targets.sort_unstable_by_key(|&t| (t.abs_diff(source), t));
        targets.dedup();
        let mut linked = 0;
        for target in targets.into_iter().take(MAX_CANDIDATES) {
            let lines = &inserted_sets[target];
            if target == source || linked == CLIQUE_MAX {
                continue;
            }
            let mut moved = 0;
            let mut moved_chars = 0;
            for (k, line) in gone.iter().enumerate() {
                let exact = lines.contains(line);
                let alike_in = |candidates: &[Vec<String>]| {
                    let a = &gone_tokens[k];
                    candidates
                        .iter()
                        .any(|b| may_reach(a.len(), b.len(), ALIKE) && dice(a, b) >= ALIKE)
                };
                // A line rewritten in place (a look-alike stays in the source, or
                // the target rewrites a look-alike) is an edit, not a move.
                let rewritten = fuzzy
                    && (alike_in(&inserted_tokens[source]) || alike_in(&deleted_tokens[target]));
                let alike = !exact && fuzzy && alike_in(&inserted_tokens[target]);
                if (exact || alike) && !rewritten {
                    moved += 1;
                    moved_chars += line.len();
                }
            }
            if moved_chars >= MIN_MOVED_CHARS && moved * 2 >= gone.len() {
                linked += 1;
                found.insert(Dependency {
                    from: source,
                    to: target,
                    kind: DependencyKind::Move,
                    detail: format!("{moved} line(s)"),
                });
            }
        }
    }
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
        let scope = super::super::symbols::ScopeKey {
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
