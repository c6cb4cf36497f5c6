//! Dependency edges between the edits of one commit.
//!
//! Each rule looks for one reason a developer would make two edits together:
//!
//! | kind | rule |
//! |---|---|
//! | `def_use` | a definition changed in one edit, referenced in another (scope-aware: a local only inside its function, a field in its class or a subclass, a function or type anywhere, across files) |
//! | `signature_call` | a callable whose parameters or header changed, called in another edit |
//! | `import_use` | an import added or removed in one edit, the name used in another edit of the same file |
//! | `def_import` | a definition changed in one file, its import changed in another |
//! | `def_use` (string key) | a new identifier-shaped string (`"show_progress"`, `'--vcs-rev'`) introduced in one edit, read as an attribute or introduced again in another |
//! | `def_use` (reassignment) | the same local variable assigned in several edits of one function |
//! | `shared_name` | two edits of the same function introduce the same new compound name (`sample_weight`), in code, a docstring or a comment |
//! | `def_use` (class member) | a class attribute, constructor parameter or `self.x` changed by several edits of one class, or passed by name to that class's constructor (`Env(vcs_rev=…)`) |
//! | `clone` | the same token change applied in several places, or before- and after-texts that are alike (token Dice ≥ 0.8) |
//! | `test_impl` | a test file starts using (or importing) a name that an edit of the file it tests defines or changes |
//! | `move` | lines deleted by a pure deletion and inserted (maybe touched up) by a pure insertion |
//!
//! A use resolves only to the definitions of the closest scope rank, so a name
//! changed in many places links each use to its own definition, not to all of them.

use std::collections::{BTreeMap, BTreeSet};

use crate::syntax::structure::DefinitionKind;

use super::symbols::{ChangedDefinition, EditSymbols, NameUse};

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
    /// Two edits of one function introduce the same new compound name.
    SharedName,
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
            DependencyKind::SharedName => "shared_name",
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
    imports(edits, &mut found);
    clones(edits, &mut found);
    string_keys(edits, &mut found);
    local_reassignments(edits, &mut found);
    class_members(edits, &mut found);
    shared_names_in_function(edits, &mut found);
    tests_and_implementations(edits, &mut found);
    moves(edits, &mut found);
    found.into_iter().collect()
}

fn definition_uses(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // name → (edit, definition)
    let mut by_name: BTreeMap<&str, Vec<(usize, &ChangedDefinition)>> = BTreeMap::new();
    for (index, edit) in edits.iter().enumerate() {
        for def in &edit.symbols.changed {
            by_name
                .entry(def.name.as_str())
                .or_default()
                .push((index, def));
        }
    }
    for (user, edit) in edits.iter().enumerate() {
        for use_ in &edit.symbols.uses {
            let Some(candidates) = by_name.get(use_.name.as_str()) else {
                continue;
            };
            let ranked: Vec<(u8, usize, &ChangedDefinition)> = candidates
                .iter()
                .filter(|(definer, _)| *definer != user)
                .filter_map(|&(definer, def)| {
                    resolution_rank(def, edits[definer].path, use_, edit.path)
                        .map(|rank| (rank, definer, def))
                })
                .collect();
            let Some(best) = ranked.iter().map(|r| r.0).min() else {
                continue;
            };
            for (_, definer, def) in ranked.into_iter().filter(|r| r.0 == best) {
                let kind = if def.signature && use_.call {
                    DependencyKind::SignatureCall
                } else {
                    DependencyKind::DefUse
                };
                found.insert(Dependency {
                    from: definer,
                    to: user,
                    kind,
                    detail: use_.name.clone(),
                });
            }
        }
        // Arguments of a call to a callable whose signature changed (`f(x, key=y)`
        // spread over lines that do not name `f`).
        for use_ in &edit.symbols.uses {
            let Some(callee) = use_.callee.as_deref() else {
                continue;
            };
            let Some(candidates) = by_name.get(callee) else {
                continue;
            };
            for &(definer, def) in candidates {
                let callable = matches!(def.kind, DefinitionKind::Function | DefinitionKind::Type);
                if definer != user && def.signature && callable {
                    found.insert(Dependency {
                        from: definer,
                        to: user,
                        kind: DependencyKind::SignatureCall,
                        detail: callee.to_string(),
                    });
                }
            }
            // `Env(..., vcs_rev=vcs_rev)`: a keyword argument named like a field or
            // constructor parameter that an edit of class `Env` changed.
            if !use_.keyword {
                continue;
            }
            let Some(candidates) = by_name.get(use_.name.as_str()) else {
                continue;
            };
            for &(definer, def) in candidates {
                let member = matches!(def.kind, DefinitionKind::Field | DefinitionKind::Parameter);
                let of_callee = def
                    .scope
                    .class
                    .as_ref()
                    .is_some_and(|(class, _)| class == callee);
                if definer != user && member && of_callee {
                    found.insert(Dependency {
                        from: definer,
                        to: user,
                        kind: DependencyKind::DefUse,
                        detail: format!("{callee}({})", use_.name),
                    });
                }
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
        for (i, &a) in holders.iter().enumerate() {
            for &b in &holders[i + 1..] {
                found.insert(Dependency {
                    from: a,
                    to: b,
                    kind: DependencyKind::DefUse,
                    detail: format!("{class}.{name}"),
                });
            }
        }
    }
}

fn imports(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    for (importer, edit) in edits.iter().enumerate() {
        for name in &edit.symbols.changed_imports {
            for (user, other) in edits.iter().enumerate() {
                if user == importer || other.path != edit.path {
                    continue;
                }
                if other
                    .symbols
                    .uses
                    .iter()
                    .any(|u| &u.name == name && !u.attribute)
                {
                    found.insert(Dependency {
                        from: importer,
                        to: user,
                        kind: DependencyKind::ImportUse,
                        detail: name.clone(),
                    });
                }
            }
            for (definer, other) in edits.iter().enumerate() {
                if definer == importer || other.path == edit.path {
                    continue;
                }
                let defines = other.symbols.changed.iter().any(|d| {
                    &d.name == name
                        && d.scope.callable_depth == 0
                        && d.scope.class.is_none()
                        && !matches!(d.kind, DefinitionKind::Parameter | DefinitionKind::Field)
                });
                if defines {
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

/// Sørensen–Dice similarity of two token multisets given as **sorted** slices
/// (1 when both are empty).
fn dice<T: Ord>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// Whether two multisets of these sizes can reach a Dice of `threshold` at all
/// (`2·min / (a + b)` bounds it), so most pairs skip the comparison.
fn may_reach(a: usize, b: usize, threshold: f64) -> bool {
    a + b == 0 || 2.0 * a.min(b) as f64 / (a + b) as f64 >= threshold
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
    // A bulk substitution over more edits than this is linked as a chain in edit
    // order, not as a clique: one commit replacing `assert` by `require` 300 times
    // would otherwise carry 45,000 edges that say nothing more.
    const CLIQUE_MAX: usize = 8;
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
        if members.len() <= CLIQUE_MAX {
            for (i, &a) in members.iter().enumerate() {
                for &b in &members[i + 1..] {
                    found.insert(Dependency {
                        from: a,
                        to: b,
                        kind: DependencyKind::Clone,
                        detail: detail(a),
                    });
                }
            }
        } else {
            for pair in members.windows(2) {
                found.insert(Dependency {
                    from: pair[0],
                    to: pair[1],
                    kind: DependencyKind::Clone,
                    detail: detail(pair[0]),
                });
            }
        }
    }

    // Alike changes: before- and after-texts similar as token multisets.
    for a in 0..edits.len() {
        let (removed_a, added_a) = &changes[a];
        let (before_a, after_a) = &token_lists[a];
        if !(has_word(removed_a) || has_word(added_a))
            || imports[a]
            || before_a.len() + after_a.len() < MIN_TOKENS
        {
            continue;
        }
        for b in a + 1..edits.len() {
            if group_of[a] != usize::MAX && group_of[a] == group_of[b] {
                continue;
            }
            let (before_b, after_b) = &token_lists[b];
            let alike = before_a.is_empty() == before_b.is_empty()
                && after_a.is_empty() == after_b.is_empty()
                && before_b.len() + after_b.len() >= MIN_TOKENS
                && may_reach(before_a.len(), before_b.len(), SIMILAR)
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
            }
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
    for (key, edits_with_key) in &holders {
        // A key spread over many edits still ties the edits of one file together
        // (written in one method, read in the next).
        let widespread = edits_with_key.len() > MAX_HOLDERS;
        for (i, &a) in edits_with_key.iter().enumerate() {
            for &b in &edits_with_key[i + 1..] {
                if widespread && edits[a].path != edits[b].path {
                    continue;
                }
                found.insert(Dependency {
                    from: a,
                    to: b,
                    kind: DependencyKind::DefUse,
                    detail: format!("\"{key}\""),
                });
            }
        }
        if widespread {
            continue;
        }
        for (user, edit) in edits.iter().enumerate() {
            if edits_with_key.contains(&user) {
                continue;
            }
            if edit
                .symbols
                .uses
                .iter()
                .any(|u| u.attribute && u.name == *key)
            {
                for &definer in edits_with_key {
                    found.insert(Dependency {
                        from: definer,
                        to: user,
                        kind: DependencyKind::DefUse,
                        detail: format!("\"{key}\""),
                    });
                }
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
    for a in 0..edits.len() {
        if edits[a].scope.is_empty() {
            continue;
        }
        for b in a + 1..edits.len() {
            if edits[b].path != edits[a].path || edits[b].scope != edits[a].scope {
                continue;
            }
            if let Some(word) = introduced[a].intersection(&introduced[b]).next() {
                found.insert(Dependency {
                    from: a,
                    to: b,
                    kind: DependencyKind::SharedName,
                    detail: word.to_string(),
                });
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
        for (i, &a) in holders.iter().enumerate() {
            for &b in &holders[i + 1..] {
                found.insert(Dependency {
                    from: a,
                    to: b,
                    kind: DependencyKind::DefUse,
                    detail: name.to_string(),
                });
            }
        }
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
    for (test, t) in edits.iter().enumerate() {
        if !is_test_path(t.path) {
            continue;
        }
        let stem = tested_stem(t.path);
        let (_, added_t) = token_change(t.before_text, t.after_text);
        for (implementation, i) in edits.iter().enumerate() {
            if is_test_path(i.path) || implementation_stem(i.path) != stem {
                continue;
            }
            // The test starts using a name the implementation edit defines or changes:
            // it exercises what was just written. (Sharing any new word, a string key
            // or an import alias linked unrelated edits on unseen commits.)
            let (_, added_i) = token_change(i.before_text, i.after_text);
            let written: BTreeSet<&str> = i
                .symbols
                .changed
                .iter()
                .map(|c| c.name.as_str())
                .chain(i.symbols.renamed.iter().map(|(_, new)| new.as_str()))
                .chain(
                    i.symbols
                        .defined_after
                        .iter()
                        .filter(|d| added_i.contains(d))
                        .map(String::as_str),
                )
                .collect();
            let shared = written
                .iter()
                .find(|w| {
                    is_identifier_like(w)
                        && added_t.iter().any(|a| a == *w)
                        && (t.symbols.used_after.contains(**w)
                            || t.symbols.imported_after.contains(**w))
                })
                .map(|w| w.to_string());
            if let Some(word) = shared {
                found.insert(Dependency {
                    from: implementation,
                    to: test,
                    kind: DependencyKind::TestImpl,
                    detail: word.clone(),
                });
            }
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
        for (target, lines) in inserted_sets.iter().enumerate() {
            if target == source || lines.is_empty() || !edits[target].before_text.is_empty() {
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

    #[test]
    fn dice_on_sorted_multisets() {
        assert_eq!(dice(&["a", "a", "b"], &["a", "b", "c"]), 2.0 * 2.0 / 6.0);
        assert_eq!(dice::<&str>(&[], &[]), 1.0);
        assert!(!may_reach(1, 10, 0.8));
        assert!(may_reach(8, 10, 0.8));
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
