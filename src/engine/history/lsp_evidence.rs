//! What the `--lsp` pass asks the servers, and what their answers say about the
//! commit's edges. Pure: the questions are positions, the answers [`Target`]s, the
//! verdicts dependencies added and reasons refuted; `history::lsp` does the asking.
//!
//! Three uses of the answers:
//! - **refute** (precision): a name-based reason (`def_use`, `signature_call`,
//!   `argument_parameter`, `import_use`, `def_import`, `test_impl`) whose use site the
//!   server resolves somewhere other than the linked edit (another file's definition,
//!   a local, a library) is dropped. An answer that is empty, failed, stopped at an
//!   import or was never asked refutes nothing; one use site that lands in the linked
//!   edit confirms the reason whatever the others say.
//! - **find** (recall): `textDocument/references` on each definition an edit adds or
//!   changes; a reference inside another edit (not one that assigns the name again)
//!   gives an `lsp_reference` reason: a receiver whose type only the server knows, an
//!   alias, a name in `__all__` or `__slots__`.
//! - **extend**: a use whose definition lands on a definition another edit changes
//!   gives an `lsp_def_use` reason.
//!
//! A `definition` answer naming several places (a star import and a later rebinding)
//! adds nothing, and keeps a reference on that line from adding anything either.

use std::collections::{BTreeSet, HashMap};

use crate::core::syntax::structure::{
    DefinitionKind, FileStructure, Occurrence, Role, Scope, ScopeKind,
};

use super::dependency::{Dependency, DependencyKind};
use super::extract::FileEdits;
use super::symbols::ChangedDefinition;

/// Structures of one file: parent and child.
pub type SideStructures = (Option<FileStructure>, Option<FileStructure>);

/// One of a commit's two trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TreeSide {
    /// The parent commit's tree (an edit's before-lines).
    Parent,
    /// The commit's tree (an edit's after-lines).
    Commit,
}

impl TreeSide {
    /// Both sides, parent first.
    pub const BOTH: [TreeSide; 2] = [TreeSide::Parent, TreeSide::Commit];

    /// `parent` or `commit`, for messages.
    pub fn name(self) -> &'static str {
        match self {
            TreeSide::Parent => "parent",
            TreeSide::Commit => "commit",
        }
    }

    fn index(self) -> usize {
        match self {
            TreeSide::Parent => 0,
            TreeSide::Commit => 1,
        }
    }
}

/// One edit as the LSP pass sees it: its file, its line ranges on both sides and the
/// definitions it adds, removes or changes.
#[derive(Debug, Clone, Copy)]
pub struct EditSpan<'a> {
    /// Index into the commit's files.
    pub file: usize,
    /// Parent lines.
    pub before: (usize, usize),
    /// Child lines.
    pub after: (usize, usize),
    /// Definitions the edit changes (from `history::symbols`).
    pub changed: &'a [ChangedDefinition],
}

/// The commit as the questions and verdicts read it.
#[derive(Clone, Copy)]
pub struct CommitView<'a> {
    /// The commit's files.
    pub files: &'a [FileEdits],
    /// Their structures on both sides.
    pub structures: &'a [SideStructures],
    /// The edits.
    pub edits: &'a [EditSpan<'a>],
}

impl CommitView<'_> {
    /// The structure of `file` on `side`.
    pub fn structure(&self, file: usize, side: TreeSide) -> Option<&FileStructure> {
        let (parent, child) = &self.structures[file];
        match side {
            TreeSide::Parent => parent.as_ref(),
            TreeSide::Commit => child.as_ref(),
        }
    }

    /// The text of `file` on `side`.
    pub fn text(&self, file: usize, side: TreeSide) -> Option<&str> {
        let file = &self.files[file];
        match side {
            TreeSide::Parent => file.old_text.as_deref(),
            TreeSide::Commit => file.new_text.as_deref(),
        }
    }

    /// The path of `file` in the tree of `side` (a renamed file has its old path in the parent).
    pub fn path(&self, file: usize, side: TreeSide) -> &str {
        let file = &self.files[file];
        match side {
            TreeSide::Parent => file.old_path.as_deref().unwrap_or(&file.path),
            TreeSide::Commit => &file.path,
        }
    }

    /// The lines `[start, end)` of edit `edit` on `side`.
    pub fn span(&self, edit: usize, side: TreeSide) -> (usize, usize) {
        let span = &self.edits[edit];
        match side {
            TreeSide::Parent => span.before,
            TreeSide::Commit => span.after,
        }
    }

    /// The occurrences on the lines of `edit` on `side`.
    fn occurrences(&self, edit: usize, side: TreeSide) -> &[Occurrence] {
        let (start, end) = self.span(edit, side);
        self.structure(self.edits[edit].file, side)
            .map_or(&[][..], |s| s.occurrences_in(start, end))
    }

    fn contains(&self, edit: usize, side: TreeSide, file: usize, line: usize) -> bool {
        let (start, end) = self.span(edit, side);
        self.edits[edit].file == file && start <= line && line < end
    }
}

/// Where a server says a name is defined or referenced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The commit's file it lands in, when it is one of the changed files.
    pub file: Option<usize>,
    /// The path relative to the tree; `None` outside it (a library, a bundled stub),
    /// then `uri` says where.
    pub path: Option<String>,
    /// The URI the server answered.
    pub uri: String,
    /// Line (0-based).
    pub line: usize,
    /// The line is an import statement: the server stopped at an alias, which says
    /// nothing about where the name is defined.
    pub import: bool,
    /// The innermost class around the target line, when the file could be read.
    pub class: Option<String>,
}

impl Target {
    /// `path:line` (1-based line), or the URI's file name for a place outside the tree.
    pub fn describe(&self) -> String {
        match &self.path {
            Some(path) => format!("{path}:{}", self.line + 1),
            None => format!(
                "{} (outside the tree)",
                self.uri.rsplit('/').next().unwrap_or(&self.uri)
            ),
        }
    }
}

/// A place to ask a question at: a file of the commit, a line and a byte column.
pub type Position = (usize, usize, usize);

/// A definition to ask `references` for: the edit changing it, its name and position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReferenceQuestion {
    /// The edit that adds, removes or changes the definition.
    pub edit: usize,
    /// The defined name.
    pub name: String,
    /// Where its name is written.
    pub position: Position,
}

/// What the servers answered on one side.
#[derive(Debug, Default)]
pub struct SideAnswers {
    /// `definition` answers by the position asked.
    pub definitions: HashMap<Position, Vec<Target>>,
    /// `references` answers, with the question.
    pub references: Vec<(ReferenceQuestion, Vec<Target>)>,
}

/// A reason a server refuted: the dependency and where the server resolved its use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refutation {
    /// The refuted reason.
    pub dependency: Dependency,
    /// Where the server resolved the use instead (`path:line`, or a place outside the tree).
    pub resolved: String,
}

/// How a name-based reason is checked: which occurrences in its dependent edit are
/// its use sites.
struct Probe<'d> {
    name: &'d str,
    /// `argument_parameter`: the keyword argument of a call of this callable.
    callee: Option<&'d str>,
    roles: &'static [RoleKind],
}

#[derive(PartialEq)]
enum RoleKind {
    Use,
    Import,
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty()
        && !text.starts_with(|c: char| c.is_ascii_digit())
        && text.chars().all(|c| c.is_alphanumeric() || c == '_')
}

fn probe(dependency: &Dependency) -> Option<Probe<'_>> {
    let detail = dependency.detail.as_str();
    let plain = |roles| {
        is_identifier(detail).then_some(Probe {
            name: detail,
            callee: None,
            roles,
        })
    };
    match dependency.kind {
        DependencyKind::DefUse | DependencyKind::SignatureCall | DependencyKind::ImportUse => {
            plain(&[RoleKind::Use])
        }
        DependencyKind::DefImport => plain(&[RoleKind::Import]),
        DependencyKind::TestImpl => plain(&[RoleKind::Use, RoleKind::Import]),
        DependencyKind::ArgumentParameter => {
            let (callee, rest) = detail.split_once('(')?;
            let name = rest.strip_suffix(')')?;
            (is_identifier(callee) && is_identifier(name)).then_some(Probe {
                name,
                callee: Some(callee),
                roles: &[RoleKind::Use],
            })
        }
        _ => None,
    }
}

fn role_matches(occurrence: &Occurrence, roles: &[RoleKind]) -> bool {
    match occurrence.role {
        Role::Use => roles.contains(&RoleKind::Use),
        Role::Import => roles.contains(&RoleKind::Import),
        Role::Definition(_) => false,
    }
}

/// The use sites of `probe` in edit `edit` on `side`, each with whether it is a
/// member access (`obj.name`).
fn use_sites(
    view: &CommitView,
    probe: &Probe,
    edit: usize,
    side: TreeSide,
) -> Vec<(Position, bool)> {
    let file = view.edits[edit].file;
    view.occurrences(edit, side)
        .iter()
        .filter(|o| o.name == probe.name && role_matches(o, probe.roles))
        .filter(|o| match probe.callee {
            Some(callee) => o.keyword && o.callee.as_deref() == Some(callee),
            None => true,
        })
        .map(|o| ((file, o.line, o.column), o.attribute))
        .collect()
}

/// The innermost class scope around `line`.
pub fn class_at(structure: &FileStructure, line: usize) -> Option<&Scope> {
    structure
        .path_at(line)
        .into_iter()
        .rev()
        .map(|index| &structure.scopes[index])
        .find(|scope| matches!(scope.kind, ScopeKind::Class | ScopeKind::Interface))
}

/// For a member access (`obj.name`): true when `target` may be the member the linked
/// edit changes although it is not on its lines. The server names the declaration of
/// the receiver's static type: a library's (the edit may override it), one of several
/// declarations of one field (`x = …` in the class, `self.x = …` in methods), or the
/// base class the edit's class derives from. Only a member of an unrelated class in
/// the tree refutes.
fn may_be_member(
    view: &CommitView,
    target: &Target,
    name: &str,
    edit: usize,
    side: TreeSide,
) -> bool {
    if target.path.is_none() {
        return true;
    }
    let file = view.edits[edit].file;
    let Some(structure) = view.structure(file, side) else {
        return false;
    };
    let (start, _) = view.span(edit, side);
    let field_here = |structure: &FileStructure, line: usize| {
        structure
            .occurrences_in(line, line + 1)
            .iter()
            .any(|o| o.name == name && o.role == Role::Definition(DefinitionKind::Field))
    };
    let same_field = target.file == Some(file)
        && field_here(structure, target.line)
        && view
            .occurrences(edit, side)
            .iter()
            .any(|o| o.name == name && o.role == Role::Definition(DefinitionKind::Field));
    let derives = match (&target.class, class_at(structure, start)) {
        (Some(base), Some(class)) => class
            .signature
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .skip(2)
            .any(|word| word == base),
        _ => false,
    };
    same_field || derives
}

/// The import sites of `name` in edit `edit` on `side` (an `import_use` reason's
/// provider).
fn import_sites(view: &CommitView, name: &str, edit: usize, side: TreeSide) -> Vec<Position> {
    let file = view.edits[edit].file;
    view.occurrences(edit, side)
        .iter()
        .filter(|o| o.name == name && o.role == Role::Import)
        .map(|o| (file, o.line, o.column))
        .collect()
}

/// True when the linked edit holds `name` on `side`: it writes the name there, or
/// it sits inside a scope of that name (a parameter list or body of the callable).
/// Only then can the server's answer on that side say whether the use reaches it.
fn linked_holds(view: &CommitView, name: &str, edit: usize, side: TreeSide) -> bool {
    let (start, end) = view.span(edit, side);
    if end <= start {
        return false;
    }
    if view.occurrences(edit, side).iter().any(|o| o.name == name) {
        return true;
    }
    view.structure(view.edits[edit].file, side)
        .is_some_and(|s| {
            s.scopes.iter().any(|scope| {
                scope.name == name && scope.start_line <= start && end <= scope.end_line + 1
            })
        })
}

/// True when `target` is the definition edit `edit` holds on `side`: on its lines,
/// or the innermost scope around the target (the function or class whose name the
/// server pointed at, the callable of a parameter) overlaps them.
fn reaches(view: &CommitView, target: &Target, edit: usize, side: TreeSide) -> bool {
    let file = view.edits[edit].file;
    if target.file != Some(file) {
        return false;
    }
    let (start, end) = view.span(edit, side);
    if start <= target.line && target.line < end {
        return true;
    }
    let Some(structure) = view.structure(file, side) else {
        return false;
    };
    structure
        .path_at(target.line)
        .last()
        .map(|&index| &structure.scopes[index])
        .is_some_and(|scope| start <= scope.end_line && scope.start_line < end)
}

/// The positions `definition` is asked at on `side`, most useful first: the use
/// sites of every refutable reason of `dependencies` (and the imports an
/// `import_use` reason starts from), then every other use in an edit.
pub fn definition_questions(
    view: &CommitView,
    dependencies: &[Dependency],
    side: TreeSide,
) -> Vec<Position> {
    let mut asked = BTreeSet::new();
    let mut out = Vec::new();
    let mut push = |position: Position, out: &mut Vec<Position>| {
        if asked.insert(position) {
            out.push(position);
        }
    };
    for dependency in dependencies {
        let Some(probe) = probe(dependency) else {
            continue;
        };
        if !linked_holds(view, probe.name, dependency.from, side) {
            continue;
        }
        for (position, _) in use_sites(view, &probe, dependency.to, side) {
            push(position, &mut out);
        }
        if dependency.kind == DependencyKind::ImportUse {
            for position in import_sites(view, probe.name, dependency.from, side) {
                push(position, &mut out);
            }
        }
    }
    for edit in 0..view.edits.len() {
        let file = view.edits[edit].file;
        for o in view.occurrences(edit, side) {
            if o.role == Role::Use {
                push((file, o.line, o.column), &mut out);
            }
        }
    }
    out
}

/// Definition kinds whose references other edits may hold: callables, types,
/// fields and module-level variables (locals and parameters stay in their function,
/// where the syntactic rules see them).
fn referable(definition: &ChangedDefinition) -> bool {
    match definition.kind {
        DefinitionKind::Function | DefinitionKind::Type | DefinitionKind::Field => true,
        DefinitionKind::Variable => definition.scope.callable_depth == 0,
        DefinitionKind::Parameter => false,
    }
}

/// The definitions to ask `references` for on `side`: each one an edit changes,
/// where its name is written on that side (a callable whose parameters changed: at
/// the name in the header of the scope around the edit).
pub fn reference_questions(view: &CommitView, side: TreeSide) -> Vec<ReferenceQuestion> {
    // A reference is the name written somewhere: only a name another edit's lines
    // hold on this side can give a link, so only those are asked (a references
    // request makes the server search the whole tree).
    let lines: Vec<Vec<&str>> = (0..view.files.len())
        .map(|f| {
            view.text(f, side)
                .map_or_else(Vec::new, |t| t.split('\n').collect())
        })
        .collect();
    let edit_texts: Vec<String> = (0..view.edits.len())
        .map(|e| {
            let (start, end) = view.span(e, side);
            let file = &lines[view.edits[e].file];
            file[start.min(file.len())..end.min(file.len())].join("\n")
        })
        .collect();
    let written_elsewhere = |edit: usize, name: &str| {
        edit_texts
            .iter()
            .enumerate()
            .any(|(other, text)| other != edit && text.contains(name))
    };
    let mut out = Vec::new();
    for (edit, span) in view.edits.iter().enumerate() {
        let Some(structure) = view.structure(span.file, side) else {
            continue;
        };
        let (start, end) = view.span(edit, side);
        let mut asked = BTreeSet::new();
        for definition in span.changed.iter().filter(|d| referable(d)) {
            if !written_elsewhere(edit, &definition.name) || !asked.insert(definition.name.as_str())
            {
                continue;
            }
            let written = view
                .occurrences(edit, side)
                .iter()
                .find(|o| o.name == definition.name && o.role == Role::Definition(definition.kind));
            let header = || {
                // Innermost scope of that name around the edit; its name in the header.
                let scope = structure.scopes.iter().rev().find(|s| {
                    s.name == definition.name && s.start_line <= start && end <= s.end_line + 1
                })?;
                structure
                    .occurrences_in(scope.start_line, scope.end_line + 1)
                    .iter()
                    .find(|o| o.name == definition.name && matches!(o.role, Role::Definition(_)))
            };
            let Some(occurrence) = written.or_else(|| definition.signature.then(header).flatten())
            else {
                continue;
            };
            out.push(ReferenceQuestion {
                edit,
                name: definition.name.clone(),
                position: (span.file, occurrence.line, occurrence.column),
            });
        }
    }
    out
}

/// The reasons of `dependencies` the answers refute (see the module doc).
pub fn refutations(
    view: &CommitView,
    dependencies: &[Dependency],
    answers: &[SideAnswers; 2],
) -> Vec<Refutation> {
    let mut out = Vec::new();
    'dependencies: for dependency in dependencies {
        let Some(probe) = probe(dependency) else {
            continue;
        };
        let mut elsewhere: Option<&Target> = None;
        for side in TreeSide::BOTH {
            if !linked_holds(view, probe.name, dependency.from, side) {
                continue;
            }
            let answered = &answers[side.index()].definitions;
            let imported: Vec<&Target> = if dependency.kind == DependencyKind::ImportUse {
                import_sites(view, probe.name, dependency.from, side)
                    .iter()
                    .filter_map(|p| answered.get(p))
                    .flatten()
                    .collect()
            } else {
                Vec::new()
            };
            for (site, member) in use_sites(view, &probe, dependency.to, side) {
                let Some(targets) = answered.get(&site) else {
                    continue;
                };
                for target in targets {
                    if reaches(view, target, dependency.from, side)
                        || imported.contains(&target)
                        || (member
                            && may_be_member(view, target, probe.name, dependency.from, side))
                        || defines_in_file(view, target, probe.name, dependency.from, side)
                    {
                        continue 'dependencies;
                    }
                }
                if elsewhere.is_none() {
                    elsewhere = targets.iter().find(|t| !t.import);
                }
            }
        }
        if let Some(target) = elsewhere {
            out.push(Refutation {
                dependency: dependency.clone(),
                resolved: target.describe(),
            });
        }
    }
    out
}

/// `lsp_def_use` reasons: a use whose definition lands on a definition another edit
/// changes (on the same side).
pub fn definition_edges(view: &CommitView, answers: &[SideAnswers; 2]) -> Vec<Dependency> {
    let mut out = Vec::new();
    for side in TreeSide::BOTH {
        let answered = &answers[side.index()].definitions;
        for user in 0..view.edits.len() {
            let file = view.edits[user].file;
            for o in view
                .occurrences(user, side)
                .iter()
                .filter(|o| o.role == Role::Use)
            {
                let Some(targets) = answered.get(&(file, o.line, o.column)) else {
                    continue;
                };
                // Several places (a star import and a later rebinding, branches
                // defining one name) are the server not knowing which: no new link.
                if targets.iter().filter(|t| !t.import).count() != 1 {
                    continue;
                }
                for target in targets.iter().filter(|t| !t.import) {
                    let Some(target_file) = target.file else {
                        continue;
                    };
                    for definer in (0..view.edits.len()).filter(|&d| d != user) {
                        if !view.contains(definer, side, target_file, target.line) {
                            continue;
                        }
                        let changed: BTreeSet<&str> = view.edits[definer]
                            .changed
                            .iter()
                            .map(|d| d.name.as_str())
                            .collect();
                        let defines_changed = view.occurrences(definer, side).iter().any(|d| {
                            d.line == target.line
                                && matches!(d.role, Role::Definition(_))
                                && changed.contains(d.name.as_str())
                        });
                        if defines_changed {
                            out.push(Dependency {
                                from: definer,
                                to: user,
                                kind: DependencyKind::LspDefUse,
                                detail: o.name.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// `lsp_reference` reasons: a reference, inside another edit, to a definition an
/// edit changes (on the same side).
pub fn reference_edges(view: &CommitView, answers: &[SideAnswers; 2]) -> Vec<Dependency> {
    let mut out = Vec::new();
    for side in TreeSide::BOTH {
        for (question, targets) in &answers[side.index()].references {
            for target in targets {
                let Some(file) = target.file else {
                    continue;
                };
                for user in (0..view.edits.len()).filter(|&u| u != question.edit) {
                    // A reference that assigns the name again (`self.x = …` in another
                    // method) is another definition, not a use of this one. A reference
                    // where syntax sees no name at all (`__all__`, `__slots__` strings)
                    // is the server's knowledge and counts.
                    let assigns = view.occurrences(user, side).iter().any(|o| {
                        o.line == target.line
                            && o.name == question.name
                            && matches!(o.role, Role::Definition(_))
                    });
                    // Where the server also answered `definition` for the name on that
                    // line, it must say this definition and nothing else.
                    let user_file = view.edits[user].file;
                    let ambiguous = view.occurrences(user, side).iter().any(|o| {
                        o.line == target.line
                            && o.name == question.name
                            && answered_definitions(answers, side, (user_file, o.line, o.column))
                                .is_some_and(|targets| {
                                    targets
                                        .iter()
                                        .filter(|t| !t.import)
                                        .any(|t| !reaches(view, t, question.edit, side))
                                })
                    });
                    if !assigns && !ambiguous && view.contains(user, side, file, target.line) {
                        out.push(Dependency {
                            from: question.edit,
                            to: user,
                            kind: DependencyKind::LspReference,
                            detail: question.name.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

fn answered_definitions(
    answers: &[SideAnswers; 2],
    side: TreeSide,
    position: Position,
) -> Option<&Vec<Target>> {
    answers[side.index()].definitions.get(&position)
}

/// True when `target` is another definition of `name` in the linked edit's file
/// (branches of an `if` defining one function, overloads): the server picked one
/// declaration of the same symbol, which says nothing against the linked one.
fn defines_in_file(
    view: &CommitView,
    target: &Target,
    name: &str,
    edit: usize,
    side: TreeSide,
) -> bool {
    let file = view.edits[edit].file;
    target.file == Some(file)
        && view.structure(file, side).is_some_and(|s| {
            s.occurrences_in(target.line, target.line + 1)
                .iter()
                .any(|o| o.name == name && matches!(o.role, Role::Definition(_)))
        })
}
