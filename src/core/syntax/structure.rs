//! Structural paths and identifier occurrences of one source text.
//!
//! [`analyze`] walks a tree-sitter tree once and returns every named scope
//! (class, function, method, interface…) with its line span and header, and every
//! identifier occurrence with its role (definition, import or use), whether it is
//! an attribute (`obj.name`, with its object when that is a dotted name) or the
//! callee of a call (with its argument count), and its innermost scope; also the
//! names a Python string stands for (`getattr(obj, "x")`, `__all__`, pytest's
//! `parametrize`) and what each import binds (Python, Go, Java).
//! Commit-derived sessions use this for the structural path of each edit and for
//! the identifiers an edit defines, imports and uses, in the parent and the child.
//!
//! The node tables are per language but deliberately shallow: they recognise the
//! declarations a developer would name in a review ("changed `compute`'s
//! signature", "imported `math`"), not a full name resolution.

use super::Language;

/// What kind of construct a scope is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScopeKind {
    /// A class, struct, enum, record or impl block.
    Class,
    /// An interface or trait.
    Interface,
    /// A free function.
    Function,
    /// A function declared inside a class (or a Go method with a receiver).
    Method,
}

impl ScopeKind {
    /// Lowercase name, as in Historian's `structural_path[].type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Class => "class",
            ScopeKind::Interface => "interface",
            ScopeKind::Function => "function",
            ScopeKind::Method => "method",
        }
    }

    /// True for functions and methods (scopes that own local variables).
    pub fn is_callable(self) -> bool {
        matches!(self, ScopeKind::Function | ScopeKind::Method)
    }
}

/// A named construct with its line span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Class, function, method or interface.
    pub kind: ScopeKind,
    /// Declared name.
    pub name: String,
    /// Header text up to the body, whitespace collapsed (`def compute(x):`).
    pub signature: String,
    /// First line (0-based).
    pub start_line: usize,
    /// Last line (0-based, inclusive).
    pub end_line: usize,
    /// Index of the enclosing scope in [`FileStructure::scopes`].
    pub parent: Option<usize>,
}

/// How an identifier occurrence relates to its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// The occurrence declares or assigns the name.
    Definition(DefinitionKind),
    /// The occurrence is inside an import statement.
    Import,
    /// Any other reference.
    Use,
}

/// What a definition declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DefinitionKind {
    /// A function, method or constructor.
    Function,
    /// A class, struct, interface, enum or type alias.
    Type,
    /// A parameter of a function.
    Parameter,
    /// A variable or constant (local, or module level when it has no callable scope).
    Variable,
    /// A field or attribute (`self.x = …`, `this.x = …`, a struct or class field).
    Field,
}

/// One identifier occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrence {
    /// The identifier text.
    pub name: String,
    /// Line (0-based).
    pub line: usize,
    /// Byte offset of the identifier within its line.
    pub column: usize,
    /// Definition, import or use.
    pub role: Role,
    /// True when the identifier is the member part of `obj.name`.
    pub attribute: bool,
    /// True when the identifier names the function of a call (or the type of a `new`).
    pub call: bool,
    /// Innermost enclosing scope.
    pub scope: Option<usize>,
    /// True for the name of a keyword argument (`f(key=value)`: `key`).
    pub keyword: bool,
    /// Name of the function called when the identifier sits in a call's arguments
    /// (`f(x, key=y)`: `x`, `key` and `y` have callee `f`).
    pub callee: Option<String>,
    /// For an attribute (`a.b.name`), the object when it is a plain dotted name
    /// (`a.b`); `None` for any other object (`f().name`) and for non-attributes.
    pub qualifier: Option<String>,
    /// For the callee of a call, how many arguments the call passes.
    pub arguments: Option<usize>,
}

impl Occurrence {
    /// `name` at `node`'s start, in `role`: not an attribute, a call or a keyword,
    /// with no callee, qualifier or argument count (the caller sets what differs).
    fn plain(
        name: String,
        node: tree_sitter::Node,
        role: Role,
        scope: Option<usize>,
    ) -> Occurrence {
        Occurrence {
            name,
            line: node.start_position().row,
            column: node.start_position().column,
            role,
            attribute: false,
            call: false,
            keyword: false,
            scope,
            callee: None,
            qualifier: None,
            arguments: None,
        }
    }
}

/// A name an import statement binds (Python, Go and Java; other languages list none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportBinding {
    /// The name bound in the file (`c` in `from m import x as c`, `a` in `import a.b`,
    /// `*` for `from m import *`, Go's package name or alias).
    pub name: String,
    /// The module as written (`pkg.m`, `.m`, `..`; Go: the import path).
    pub module: String,
    /// The member imported from the module (`x` in `from m import x as c`, `*`);
    /// `None` when the name binds the module itself.
    pub member: Option<String>,
    /// Line (0-based).
    pub line: usize,
}

/// Scopes and identifier occurrences of one text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileStructure {
    /// Every scope, in document order (a parent precedes its children).
    pub scopes: Vec<Scope>,
    /// Every identifier occurrence, in document order.
    pub occurrences: Vec<Occurrence>,
    /// Every name an import binds, in document order.
    pub imports: Vec<ImportBinding>,
}

impl FileStructure {
    /// Scopes enclosing `line`, outermost first.
    pub fn path_at(&self, line: usize) -> Vec<usize> {
        let mut path = Vec::new();
        let mut innermost = None;
        for (index, scope) in self.scopes.iter().enumerate() {
            if scope.start_line <= line && line <= scope.end_line {
                innermost = Some(index);
            }
        }
        let mut current = innermost;
        while let Some(index) = current {
            path.push(index);
            current = self.scopes[index].parent;
        }
        path.reverse();
        path
    }

    /// Occurrences on lines `start..end`.
    pub fn occurrences_in(&self, start: usize, end: usize) -> &[Occurrence] {
        let from = self.occurrences.partition_point(|o| o.line < start);
        let to = self.occurrences.partition_point(|o| o.line < end);
        &self.occurrences[from..to]
    }

    /// The chain of scopes from the outermost to `scope`.
    pub fn chain(&self, scope: Option<usize>) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut current = scope;
        while let Some(index) = current {
            chain.push(index);
            current = self.scopes[index].parent;
        }
        chain.reverse();
        chain
    }
}

/// Parses `text` and collects its scopes and identifier occurrences.
pub fn analyze(language: Language, text: &str) -> FileStructure {
    analyze_tree(language, &super::parse(language, text), text, None)
}

/// [`analyze`] of both sides of a change; the new side is parsed reusing the old
/// side's tree ([`super::reparse`]), which a commit's small changes make
/// much cheaper than a second whole parse.
pub fn analyze_pair(
    language: Language,
    old: Option<&str>,
    new: Option<&str>,
) -> (Option<FileStructure>, Option<FileStructure>) {
    match (old, new) {
        (Some(old), Some(new)) => {
            let old_tree = super::parse(language, old);
            let new_tree = super::reparse(language, &old_tree, old, new);
            (
                Some(analyze_tree(language, &old_tree, old, None)),
                Some(analyze_tree(language, &new_tree, new, None)),
            )
        }
        (old, new) => (
            old.map(|t| analyze(language, t)),
            new.map(|t| analyze(language, t)),
        ),
    }
}

/// Collects the scopes and occurrences of an already parsed `text`; with `lines`
/// (0-based, end exclusive), only what those lines need: their occurrences and the
/// scopes that enclose or start on them, skipping the rest of the tree, so
/// analysing one edit of a long file costs the edit's depth, not the file's size.
pub fn analyze_tree(
    language: Language,
    tree: &tree_sitter::Tree,
    text: &str,
    lines: Option<std::ops::Range<usize>>,
) -> FileStructure {
    let mut walker = Walker {
        language,
        source: text.as_bytes(),
        included: tree.included_ranges(),
        out: FileStructure::default(),
        ancestors: Vec::new(),
        lines,
        fields: HotFields::of(language),
    };
    let mut cursor = tree.walk();
    walker.visit(&mut cursor, None, false, None);
    walker.out.occurrences.sort_by_key(|o| o.line);
    if let Some(lines) = &walker.lines {
        walker.out.occurrences.retain(|o| lines.contains(&o.line));
        walker.out.imports.retain(|i| lines.contains(&i.line));
    }
    walker.out
}

struct Walker<'a, 'tree> {
    language: Language,
    source: &'a [u8],
    /// The parts of the text the tree was parsed from (a window's headers and
    /// statements; all of it for a full parse): a header is read from these only.
    included: Vec<tree_sitter::Range>,
    out: FileStructure,
    /// Nodes above the one being visited: asking tree-sitter for a node's parent
    /// walks down from the root, so the walk keeps them itself.
    ancestors: Vec<tree_sitter::Node<'tree>>,
    /// The only lines wanted, if not all.
    lines: Option<std::ops::Range<usize>>,
    /// Ids of the fields asked for at every identifier.
    fields: &'static HotFields,
}

/// Ids of the fields the walk asks for at every identifier, looked up once per walk:
/// tree-sitter finds a field by name with a scan of string comparisons each time.
struct HotFields {
    object: Option<std::num::NonZeroU16>,
    operand: Option<std::num::NonZeroU16>,
    value: Option<std::num::NonZeroU16>,
    function: Option<std::num::NonZeroU16>,
    arguments: Option<std::num::NonZeroU16>,
}

impl HotFields {
    /// The ids for `language`, looked up once per process (a recorded session's
    /// windows walk a small tree per query: a lookup per walk would cost as much).
    fn of(language: Language) -> &'static HotFields {
        static IDS: std::sync::OnceLock<Vec<HotFields>> = std::sync::OnceLock::new();
        let all = IDS.get_or_init(|| {
            Language::ALL
                .iter()
                .map(|l| HotFields::lookup(&l.grammar()))
                .collect()
        });
        let index = Language::ALL.iter().position(|l| *l == language);
        &all[index.expect("every language is in Language::ALL")]
    }

    fn lookup(language: &tree_sitter::Language) -> HotFields {
        HotFields {
            object: language.field_id_for_name("object"),
            operand: language.field_id_for_name("operand"),
            value: language.field_id_for_name("value"),
            function: language.field_id_for_name("function"),
            arguments: language.field_id_for_name("arguments"),
        }
    }
}

/// `node`'s child in the field with id `id` (none when the grammar has no such field).
fn field_child(
    node: tree_sitter::Node<'_>,
    id: Option<std::num::NonZeroU16>,
) -> Option<tree_sitter::Node<'_>> {
    node.child_by_field_id(id?.get())
}

impl<'tree> Walker<'_, 'tree> {
    fn text(&self, node: tree_sitter::Node) -> &str {
        node.utf8_text(self.source).unwrap_or("")
    }

    /// Records the scope `node` opens, if any (a named function, class…), and
    /// returns its index.
    fn open_scope(&mut self, node: tree_sitter::Node, scope: Option<usize>) -> Option<usize> {
        let scope_kind = self.scope_kind(node, scope)?;
        let name = self.scope_name(node)?;
        let signature = self.signature(node);
        self.out.scopes.push(Scope {
            kind: scope_kind,
            name,
            signature,
            start_line: node.start_position().row,
            end_line: node.end_position().row,
            parent: scope,
        });
        Some(self.out.scopes.len() - 1)
    }

    /// `import "net/http"` binds `http`: the path's last segment, no identifier node.
    fn go_package_import(&mut self, node: tree_sitter::Node, scope: Option<usize>) {
        let Some(path) = node.child_by_field_name("path") else {
            return;
        };
        let package = self
            .text(path)
            .trim_matches('"')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string();
        if !package.is_empty() {
            self.out
                .occurrences
                .push(Occurrence::plain(package, path, Role::Import, scope));
        }
    }

    fn visit(
        &mut self,
        cursor: &mut tree_sitter::TreeCursor<'tree>,
        scope: Option<usize>,
        in_import: bool,
        callee: Option<&str>,
    ) {
        let node = cursor.node();
        let kind = node.kind();
        let inner_scope = self.open_scope(node, scope).or(scope);
        let in_import = in_import || is_import_node(self.language, kind);
        if self.language == Language::Go
            && kind == "import_spec"
            && node.child_by_field_name("name").is_none()
        {
            self.go_package_import(node, scope);
        }
        self.import_bindings(node, kind);
        if kind == "string" && self.language == Language::Python {
            self.dynamic_attribute(node, scope, callee);
            self.exported_name(node, scope);
            if callee == Some("parametrize") {
                self.parametrized_names(node, scope);
            }
        }
        if is_identifier_kind(kind) && node.child_count() == 0 {
            self.record_identifier(node, cursor.field_name(), scope, in_import, callee);
        }
        let own_callee = self.callee_name(node);
        // With wanted lines, tree-sitter skips the children that end before them
        // (whole hidden subtrees at a time), so a block of thousands of statements
        // is not stepped through one sibling at a time.
        let entered = match &self.lines {
            Some(lines) if lines.start > 0 => cursor
                .goto_first_child_for_point(tree_sitter::Point::new(lines.start - 1, usize::MAX))
                .is_some(),
            _ => cursor.goto_first_child(),
        };
        if entered {
            self.ancestors.push(node);
            loop {
                // A scope's own name belongs to the enclosing scope, its body to the scope.
                let child_scope = if cursor.field_name() == Some("name") {
                    scope
                } else {
                    inner_scope
                };
                let child_callee = match (&own_callee, cursor.field_name()) {
                    (Some(name), Some("arguments")) => Some(name.as_str()),
                    (Some(name), Some("body")) if kind == "composite_literal" => {
                        Some(name.as_str())
                    }
                    (Some(_), _) => None,
                    (None, _) => callee,
                };
                let child = cursor.node();
                if self
                    .lines
                    .as_ref()
                    .is_some_and(|lines| child.start_position().row >= lines.end)
                {
                    // Children come in text order: the rest start after the lines too.
                    break;
                }
                let wanted = self
                    .lines
                    .as_ref()
                    .is_none_or(|lines| child.end_position().row >= lines.start);
                if wanted {
                    self.visit(cursor, child_scope, in_import, child_callee);
                }
                if !cursor.goto_next_sibling() {
                    break;
                }
            }
            self.ancestors.pop();
            cursor.goto_parent();
        }
    }

    /// The names an import statement binds (Python `import`/`from … import`, Go's
    /// import specs, Java imports, JavaScript/TypeScript `import`, `export … from` and
    /// `require`).
    fn import_bindings(&mut self, node: tree_sitter::Node, kind: &str) {
        // Called for every node: nothing to do unless it is an import.
        if !IMPORT_KINDS.contains(&kind) {
            return;
        }
        if matches!(
            self.language,
            Language::JavaScript | Language::TypeScript | Language::Tsx
        ) {
            let found = self.js_import_bindings(node, kind);
            self.out.imports.extend(found);
            return;
        }
        let mut found = Vec::new();
        match (self.language, kind) {
            (Language::Python, "import_statement") => {
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    if name.kind() == "aliased_import" {
                        let (Some(module), Some(alias)) = (
                            name.child_by_field_name("name"),
                            name.child_by_field_name("alias"),
                        ) else {
                            continue;
                        };
                        found.push(bind(alias, self.text(alias), self.text(module), None));
                    } else {
                        // `import a.b` binds `a`, the top package.
                        let module = self.text(name);
                        let top = module.split('.').next().unwrap_or(module);
                        found.push(bind(name, top, top, None));
                    }
                }
            }
            (Language::Python, "import_from_statement") => {
                let Some(module) = node.child_by_field_name("module_name") else {
                    return;
                };
                let module = self.text(module);
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() == "wildcard_import" {
                        found.push(bind(child, "*", module, Some("*")));
                    }
                }
                let mut cursor = node.walk();
                for name in node.children_by_field_name("name", &mut cursor) {
                    let (member, alias) = if name.kind() == "aliased_import" {
                        match (
                            name.child_by_field_name("name"),
                            name.child_by_field_name("alias"),
                        ) {
                            (Some(member), Some(alias)) => (member, alias),
                            _ => continue,
                        }
                    } else {
                        (name, name)
                    };
                    found.push(bind(
                        alias,
                        self.text(alias),
                        module,
                        Some(self.text(member)),
                    ));
                }
            }
            (Language::Java, "import_declaration") => {
                // `import a.b.C;` binds `C`; `import a.b.*;` every type of `a.b`;
                // `import static a.b.C.m;` binds `m`.
                let text = self.text(node);
                let path: String = text
                    .trim_start_matches("import")
                    .trim()
                    .trim_start_matches("static ")
                    .trim_end_matches(';')
                    .split_whitespace()
                    .collect();
                match path.rsplit_once('.') {
                    Some((module, "*")) => found.push(bind(node, "*", module, Some("*"))),
                    Some((module, name)) => found.push(bind(node, name, module, Some(name))),
                    None => {}
                }
            }
            (Language::Go, "import_spec") => {
                let Some(path) = node.child_by_field_name("path") else {
                    return;
                };
                let at = path;
                let path = self.text(path).trim_matches(|c| c == '"' || c == '`');
                let name = match node.child_by_field_name("name") {
                    Some(alias) if alias.kind() == "dot" => "*",
                    Some(alias) => self.text(alias),
                    None => path.rsplit('/').next().unwrap_or(path),
                };
                let member = (name == "*").then_some("*");
                found.push(bind(at, name, path, member));
            }
            _ => {}
        }
        self.out.imports.extend(found);
    }

    /// JavaScript/TypeScript: `import d, {a as b} from './m'`, `import * as ns from
    /// './m'`, `export {a} from './m'` and `export * from './m'` (a re-export binds
    /// like an import: it depends on the definition it names), `const x =
    /// require('./m')` and `const {a, b: c} = require('./m')`. A default import binds
    /// the member `default`; a namespace or a whole `require` binds the module.
    fn js_import_bindings(&self, node: tree_sitter::Node, kind: &str) -> Vec<ImportBinding> {
        let mut found = Vec::new();
        match kind {
            "import_statement" | "export_statement" => {
                let Some(module) = node.child_by_field_name("source").map(|n| self.unquoted(n))
                else {
                    return found;
                };
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    match child.kind() {
                        "*" => found.push(bind(child, "*", &module, Some("*"))),
                        "import_clause" => {
                            let mut inner = child.walk();
                            for part in child.named_children(&mut inner) {
                                match part.kind() {
                                    "identifier" => found.push(bind(
                                        part,
                                        self.text(part),
                                        &module,
                                        Some("default"),
                                    )),
                                    "namespace_import" => {
                                        if let Some(name) = part.named_child(0) {
                                            found.push(bind(name, self.text(name), &module, None));
                                        }
                                    }
                                    "named_imports" => {
                                        found.extend(self.js_specifiers(part, &module))
                                    }
                                    _ => {}
                                }
                            }
                        }
                        "export_clause" => found.extend(self.js_specifiers(child, &module)),
                        "namespace_export" => {
                            if let Some(name) = child.named_child(0) {
                                found.push(bind(name, self.text(name), &module, None));
                            }
                        }
                        _ => {}
                    }
                }
            }
            "variable_declarator" => found.extend(self.js_require(node)),
            _ => {}
        }
        found
    }

    /// A string literal's text without its quotes (a module specifier).
    fn unquoted(&self, node: tree_sitter::Node) -> String {
        self.text(node)
            .trim_matches(|c| c == '\'' || c == '"' || c == '`')
            .to_string()
    }

    /// `const x = require('./m')` (the module) and `const {a, b: c} = require('./m')`.
    fn js_require(&self, node: tree_sitter::Node) -> Vec<ImportBinding> {
        let mut found = Vec::new();
        let (Some(name), Some(value)) = (
            node.child_by_field_name("name"),
            node.child_by_field_name("value"),
        ) else {
            return Vec::new();
        };
        let required = (value.kind() == "call_expression")
            .then(|| value.child_by_field_name("function"))
            .flatten()
            .is_some_and(|f| self.text(f) == "require");
        let module = value
            .child_by_field_name("arguments")
            .and_then(|a| a.named_child(0))
            .filter(|a| a.kind() == "string");
        let (true, Some(module)) = (required, module.map(|n| self.unquoted(n))) else {
            return Vec::new();
        };
        match name.kind() {
            "identifier" => found.push(bind(name, self.text(name), &module, None)),
            "object_pattern" => {
                let mut cursor = name.walk();
                for part in name.named_children(&mut cursor) {
                    match part.kind() {
                        "shorthand_property_identifier_pattern" => {
                            let n = self.text(part);
                            found.push(bind(part, n, &module, Some(n)));
                        }
                        "pair_pattern" => {
                            let (Some(key), Some(value)) = (
                                part.child_by_field_name("key"),
                                part.child_by_field_name("value"),
                            ) else {
                                continue;
                            };
                            found.push(bind(
                                value,
                                self.text(value),
                                &module,
                                Some(self.text(key)),
                            ));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        found
    }

    /// `{a, b as c}` of a JavaScript import or re-export: `a` binds `a`, `c` binds `b`.
    fn js_specifiers(&self, list: tree_sitter::Node, module: &str) -> Vec<ImportBinding> {
        let mut cursor = list.walk();
        list.named_children(&mut cursor)
            .filter(|s| matches!(s.kind(), "import_specifier" | "export_specifier"))
            .filter_map(|specifier| {
                let member = specifier.child_by_field_name("name")?;
                let bound = specifier.child_by_field_name("alias").unwrap_or(member);
                Some(bind(
                    bound,
                    self.text(bound),
                    module,
                    Some(self.text(member)),
                ))
            })
            .collect()
    }

    /// `getattr(obj, "name")`, `hasattr`, `delattr` read the attribute `name` and
    /// `setattr(obj, "name", v)` defines it: the string is the attribute's name.
    fn dynamic_attribute(
        &mut self,
        node: tree_sitter::Node,
        scope: Option<usize>,
        callee: Option<&str>,
    ) {
        let role = match callee {
            Some("getattr" | "hasattr" | "delattr") => Role::Use,
            Some("setattr") => Role::Definition(DefinitionKind::Field),
            _ => return,
        };
        let Some(arguments) = self
            .ancestors
            .last()
            .filter(|p| p.kind() == "argument_list")
        else {
            return;
        };
        let mut cursor = arguments.walk();
        if arguments.named_children(&mut cursor).nth(1) != Some(node) {
            return;
        }
        let text = self.text(node);
        let quoted = text.trim_start_matches(|c: char| c.is_ascii_alphabetic());
        let name = quoted.trim_matches(|c| c == '"' || c == '\'');
        let identifier = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        // An f-string or a prefix other than r/u is not a fixed name.
        if !identifier || text.len() - quoted.len() > 1 || text.starts_with(['f', 'F', 'b', 'B']) {
            return;
        }
        self.out.occurrences.push(Occurrence {
            attribute: true,
            callee: callee.map(str::to_string),
            ..Occurrence::plain(name.to_string(), node, role, scope)
        });
    }

    /// `__all__ = ["name", …]` (or `+=`) at module level exports `name`: a use of the
    /// module's own (or imported) `name`.
    fn exported_name(&mut self, node: tree_sitter::Node, scope: Option<usize>) {
        if scope.is_some() {
            return;
        }
        let mut up = self.ancestors.iter().rev();
        let in_sequence = up
            .next()
            .is_some_and(|p| matches!(p.kind(), "list" | "tuple"));
        let exported = up.next().is_some_and(|a| {
            matches!(a.kind(), "assignment" | "augmented_assignment")
                && a.child_by_field_name("left").map(|l| self.text(l)) == Some("__all__")
        });
        if !(in_sequence && exported) {
            return;
        }
        let name = self.text(node).trim_matches(|c| c == '"' || c == '\'');
        let identifier = name
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_alphanumeric() || c == '_');
        if !identifier {
            return;
        }
        self.out
            .occurrences
            .push(Occurrence::plain(name.to_string(), node, Role::Use, scope));
    }

    /// `@pytest.mark.parametrize("a, b", …)` or `(("a", "b"), …)`: the argument
    /// names are parameters pytest passes to the decorated test, defined here.
    fn parametrized_names(&mut self, node: tree_sitter::Node, scope: Option<usize>) {
        let Some(at) = self
            .ancestors
            .iter()
            .rposition(|a| a.kind() == "argument_list")
        else {
            return;
        };
        let arguments = self.ancestors[at];
        let argument = self.ancestors.get(at + 1).copied().unwrap_or(node);
        if arguments.named_child(0) != Some(argument) {
            return;
        }
        let text = self.text(node);
        let names: Vec<String> = text
            .trim_matches(|c| c == '"' || c == '\'')
            .split(',')
            .map(str::trim)
            .filter(|n| {
                n.chars()
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_')
                    && n.chars().all(|c| c.is_alphanumeric() || c == '_')
            })
            .map(str::to_string)
            .collect();
        for name in names {
            self.out.occurrences.push(Occurrence {
                callee: Some("parametrize".to_string()),
                ..Occurrence::plain(
                    name,
                    node,
                    Role::Definition(DefinitionKind::Parameter),
                    scope,
                )
            });
        }
    }

    /// For a call node, the name of what it calls (the last identifier of the callee).
    fn callee_name(&self, node: tree_sitter::Node) -> Option<String> {
        let function = match node.kind() {
            "call" | "call_expression" => node.child_by_field_name("function")?,
            "method_invocation" => node.child_by_field_name("name")?,
            "object_creation_expression" => node.child_by_field_name("type")?,
            "new_expression" => node.child_by_field_name("constructor")?,
            // Go's `T{Field: v}`: the keys name fields of `T`, like keyword arguments.
            "composite_literal" => node.child_by_field_name("type")?,
            _ => return None,
        };
        let text = self.text(function);
        let last = text
            .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
            .find(|part| !part.is_empty())?;
        Some(last.to_string())
    }

    fn scope_kind(&self, node: tree_sitter::Node, enclosing: Option<usize>) -> Option<ScopeKind> {
        let in_class = enclosing
            .map(|index| {
                matches!(
                    self.out.scopes[index].kind,
                    ScopeKind::Class | ScopeKind::Interface
                )
            })
            .unwrap_or(false);
        let function_or_method = if in_class {
            ScopeKind::Method
        } else {
            ScopeKind::Function
        };
        Some(match (self.language, node.kind()) {
            (Language::Python, "class_definition") => ScopeKind::Class,
            (Language::Python, "function_definition") => function_or_method,
            (Language::Go, "function_declaration") => ScopeKind::Function,
            (Language::Go, "method_declaration") => ScopeKind::Method,
            (Language::Go, "type_spec") => match node.child_by_field_name("type").map(|t| t.kind())
            {
                Some("interface_type") => ScopeKind::Interface,
                _ => ScopeKind::Class,
            },
            (
                Language::Java,
                "class_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "annotation_type_declaration",
            ) => ScopeKind::Class,
            (Language::Java, "interface_declaration") => ScopeKind::Interface,
            (Language::Java, "method_declaration" | "constructor_declaration") => ScopeKind::Method,
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "class_declaration" | "abstract_class_declaration",
            ) => ScopeKind::Class,
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "interface_declaration",
            ) => ScopeKind::Interface,
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "function_declaration" | "generator_function_declaration",
            ) => ScopeKind::Function,
            (Language::JavaScript | Language::TypeScript | Language::Tsx, "method_definition") => {
                ScopeKind::Method
            }
            (Language::Rust, "struct_item" | "enum_item" | "impl_item") => ScopeKind::Class,
            (Language::Rust, "trait_item") => ScopeKind::Interface,
            (Language::Rust, "function_item") => function_or_method,
            _ => return None,
        })
    }

    fn scope_name(&self, node: tree_sitter::Node) -> Option<String> {
        let name = node
            .child_by_field_name("name")
            .or_else(|| node.child_by_field_name("type"))?;
        Some(self.text(name).to_string())
    }

    /// The header: text from the construct's start to its body, whitespace collapsed.
    fn signature(&self, node: tree_sitter::Node) -> String {
        let end = node
            .child_by_field_name("body")
            .map(|body| body.start_byte())
            .unwrap_or_else(|| node.end_byte());
        let start = node.start_byte();
        let mut header = self
            .included
            .iter()
            .filter_map(|r| {
                let (from, to) = (r.start_byte.max(start), r.end_byte.min(end));
                (from < to).then(|| std::str::from_utf8(&self.source[from..to]).unwrap_or(""))
            })
            .flat_map(str::split_whitespace)
            .collect::<Vec<_>>()
            .join(" ");
        // Python headers end at the body; keep the colon a reader expects.
        if self.language == Language::Python && !header.ends_with(':') {
            header.push(':');
        }
        const MAX_SIGNATURE: usize = 240;
        if header.len() > MAX_SIGNATURE {
            let mut cut = MAX_SIGNATURE;
            while !header.is_char_boundary(cut) {
                cut -= 1;
            }
            header.truncate(cut);
        }
        header
    }

    fn record_identifier(
        &mut self,
        node: tree_sitter::Node,
        field: Option<&str>,
        scope: Option<usize>,
        in_import: bool,
        callee: Option<&str>,
    ) {
        let name = self.text(node).to_string();
        if name.is_empty() {
            return;
        }
        let parent = self.ancestors.last().copied();
        let grand = self.ancestors.iter().rev().nth(1).copied();
        let parent_kind = parent.map(|p| p.kind()).unwrap_or("");
        let attribute = is_attribute(self.language, parent_kind, field);
        let call = is_call(self.language, node, parent, grand, field);
        let role = if in_import {
            Role::Import
        } else if let Some(kind) = self.definition_kind(node, parent, grand, field, scope) {
            Role::Definition(kind)
        } else {
            Role::Use
        };
        self.out.occurrences.push(Occurrence {
            name,
            line: node.start_position().row,
            column: node.start_position().column,
            role,
            attribute,
            call,
            keyword: (parent_kind == "keyword_argument" && field == Some("name"))
                || (parent_kind == "literal_element"
                    && grand.is_some_and(|g| {
                        g.kind() == "keyed_element" && g.child_by_field_name("key") == parent
                    })),
            scope,
            callee: callee.map(str::to_string),
            qualifier: attribute.then(|| self.qualifier(parent?)).flatten(),
            arguments: call.then(|| self.argument_count(parent?, grand)).flatten(),
        });
    }

    /// The object of an attribute node when it is a plain dotted name (`a.b` in
    /// `a.b.name`).
    fn qualifier(&self, member: tree_sitter::Node) -> Option<String> {
        let object = field_child(member, self.fields.object)
            .or_else(|| field_child(member, self.fields.operand))
            .or_else(|| field_child(member, self.fields.value))?;
        let text = self.text(object);
        if object.kind() == "call"
            && field_child(object, self.fields.function).is_some_and(|f| self.text(f) == "super")
        {
            return Some("super()".to_string());
        }
        let plain = !text.is_empty()
            && text.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_alphanumeric() || c == '_')
            });
        plain.then(|| text.to_string())
    }

    /// How many arguments the call whose callee is `parent` (or `grand`, for
    /// `obj.name(...)`) passes.
    fn argument_count(
        &self,
        parent: tree_sitter::Node,
        grand: Option<tree_sitter::Node>,
    ) -> Option<usize> {
        let arguments = [Some(parent), grand]
            .into_iter()
            .flatten()
            .find_map(|n| field_child(n, self.fields.arguments))?;
        // Comments (extras in every grammar here) are not arguments; without a
        // comment marker in the list there is none to leave out, and no walk.
        let text = self.text(arguments).as_bytes();
        if !text.contains(&b'#') && !text.windows(2).any(|w| w == b"//" || w == b"/*") {
            return Some(arguments.named_child_count());
        }
        let mut cursor = arguments.walk();
        let count = arguments
            .named_children(&mut cursor)
            .filter(|a| !a.is_extra())
            .count();
        Some(count)
    }

    fn in_callable(&self, scope: Option<usize>) -> bool {
        scope
            .map(|index| self.out.scopes[index].kind.is_callable())
            .unwrap_or(false)
    }

    fn definition_kind(
        &self,
        node: tree_sitter::Node,
        parent: Option<tree_sitter::Node>,
        grand: Option<tree_sitter::Node>,
        field: Option<&str>,
        scope: Option<usize>,
    ) -> Option<DefinitionKind> {
        let parent = parent?;
        let parent_kind = parent.kind();
        let variable_or_field = if self.in_callable(scope) || scope.is_none() {
            DefinitionKind::Variable
        } else {
            DefinitionKind::Field
        };
        Self::declared(parent_kind, field)
            .or_else(|| self.parameter(node, parent, field))
            .or_else(|| self.assigned(parent, grand, field, variable_or_field))
    }

    /// A function or type named through its declaration's `name` field.
    fn declared(parent_kind: &str, field: Option<&str>) -> Option<DefinitionKind> {
        match (parent_kind, field) {
            (
                "function_definition"
                | "function_declaration"
                | "method_declaration"
                | "constructor_declaration"
                | "method_definition"
                | "function_item"
                | "generator_function_declaration",
                Some("name"),
            ) => Some(DefinitionKind::Function),
            (
                "class_definition"
                | "class_declaration"
                | "interface_declaration"
                | "enum_declaration"
                | "record_declaration"
                | "type_spec"
                | "type_alias_declaration"
                | "struct_item"
                | "enum_item"
                | "trait_item"
                | "abstract_class_declaration"
                | "type_item",
                Some("name"),
            ) => Some(DefinitionKind::Type),
            _ => None,
        }
    }

    /// A parameter of a function, method or lambda, in each language's grammar.
    fn parameter(
        &self,
        node: tree_sitter::Node,
        parent: tree_sitter::Node,
        field: Option<&str>,
    ) -> Option<DefinitionKind> {
        match (self.language, parent.kind(), field) {
            (Language::Python, "parameters" | "lambda_parameters", _) => {
                Some(DefinitionKind::Parameter)
            }
            (Language::Python, "default_parameter" | "typed_default_parameter", Some("name")) => {
                Some(DefinitionKind::Parameter)
            }
            (Language::Python, "typed_parameter", None) if parent.named_child(0) == Some(node) => {
                Some(DefinitionKind::Parameter)
            }
            (Language::Python, "list_splat_pattern" | "dictionary_splat_pattern", _) => {
                Some(DefinitionKind::Parameter)
            }
            (
                Language::Go,
                "parameter_declaration" | "variadic_parameter_declaration",
                Some("name"),
            ) => Some(DefinitionKind::Parameter),
            (
                Language::Java,
                "formal_parameter" | "spread_parameter" | "catch_formal_parameter",
                Some("name"),
            ) => Some(DefinitionKind::Parameter),
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "formal_parameters",
                _,
            ) => Some(DefinitionKind::Parameter),
            (
                Language::TypeScript | Language::Tsx,
                "required_parameter" | "optional_parameter",
                Some("pattern"),
            ) => Some(DefinitionKind::Parameter),
            (Language::Rust, "parameter", Some("pattern")) => Some(DefinitionKind::Parameter),
            _ => None,
        }
    }

    /// A variable or field defined by an assignment or a declaration (`self.x = …`
    /// defines a field, `other.x = …` does not).
    fn assigned(
        &self,
        parent: tree_sitter::Node,
        grand: Option<tree_sitter::Node>,
        field: Option<&str>,
        variable_or_field: DefinitionKind,
    ) -> Option<DefinitionKind> {
        match (self.language, parent.kind(), field) {
            (Language::Python, "assignment" | "augmented_assignment", Some("left")) => {
                Some(variable_or_field)
            }
            (Language::Python, "pattern_list" | "tuple_pattern", _) => {
                Some(DefinitionKind::Variable)
            }
            (Language::Python, "attribute", Some("attribute")) => {
                // `self.x = …` defines a field; `other.x = …` and reads are uses.
                let on_self = parent
                    .child_by_field_name("object")
                    .is_some_and(|o| matches!(self.text(o), "self" | "cls"));
                let assigned = grand
                    .filter(|gp| matches!(gp.kind(), "assignment" | "augmented_assignment"))
                    .and_then(|gp| gp.child_by_field_name("left"))
                    == Some(parent);
                (assigned && on_self).then_some(DefinitionKind::Field)
            }
            (Language::Python, "for_statement", Some("left"))
            | (Language::Python, "as_pattern_target", _) => Some(DefinitionKind::Variable),
            (Language::Go, "var_spec" | "const_spec", Some("name")) => Some(variable_or_field),
            (Language::Go, "field_declaration", Some("name")) => Some(DefinitionKind::Field),
            (Language::Go, "expression_list", _) => {
                let declares = grand
                    .filter(|gp| matches!(gp.kind(), "short_var_declaration" | "range_clause"))
                    .and_then(|gp| gp.child_by_field_name("left"))
                    == Some(parent);
                declares.then_some(DefinitionKind::Variable)
            }
            (Language::Java, "variable_declarator", Some("name")) => {
                let in_field = grand.map(|gp| gp.kind()) == Some("field_declaration");
                Some(if in_field {
                    DefinitionKind::Field
                } else {
                    DefinitionKind::Variable
                })
            }
            (Language::Java, "field_access", Some("field")) => {
                let on_this = parent
                    .child_by_field_name("object")
                    .is_some_and(|o| o.kind() == "this");
                let assigned = grand
                    .filter(|gp| gp.kind() == "assignment_expression")
                    .and_then(|gp| gp.child_by_field_name("left"))
                    == Some(parent);
                (assigned && on_this).then_some(DefinitionKind::Field)
            }
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "variable_declarator",
                Some("name"),
            ) => Some(variable_or_field),
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "public_field_definition" | "field_definition",
                _,
            ) => Some(DefinitionKind::Field),
            (Language::Rust, "let_declaration", Some("pattern")) => Some(DefinitionKind::Variable),
            (Language::Rust, "field_declaration", Some("name")) => Some(DefinitionKind::Field),
            _ => None,
        }
    }
}

fn is_identifier_kind(kind: &str) -> bool {
    matches!(
        kind,
        "identifier"
            | "field_identifier"
            | "type_identifier"
            | "property_identifier"
            | "shorthand_property_identifier"
            | "package_identifier"
            | "private_property_identifier"
    )
}

/// Node kinds that may bind imported names (`import_bindings` looks no further).
const IMPORT_KINDS: [&str; 6] = [
    "import_statement",
    "import_from_statement",
    "import_declaration",
    "import_spec",
    "export_statement",
    "variable_declarator",
];

/// One imported name, on the line of the name it binds (so an edit of one line of a
/// parenthesized `from m import (a,\n b)` holds only its own names).
fn bind(at: tree_sitter::Node, name: &str, module: &str, member: Option<&str>) -> ImportBinding {
    ImportBinding {
        name: name.to_string(),
        module: module.to_string(),
        member: member.map(str::to_string),
        line: at.start_position().row,
    }
}

fn is_import_node(language: Language, kind: &str) -> bool {
    match language {
        Language::Python => matches!(
            kind,
            "import_statement" | "import_from_statement" | "future_import_statement"
        ),
        Language::Go => kind == "import_declaration",
        Language::Java => matches!(kind, "import_declaration" | "package_declaration"),
        Language::JavaScript | Language::TypeScript | Language::Tsx => kind == "import_statement",
        Language::Rust => kind == "use_declaration",
    }
}

fn is_attribute(language: Language, parent_kind: &str, field: Option<&str>) -> bool {
    match language {
        Language::Python => parent_kind == "attribute" && field == Some("attribute"),
        Language::Go => parent_kind == "selector_expression" && field == Some("field"),
        Language::Java => {
            (parent_kind == "field_access" && field == Some("field"))
                || (parent_kind == "method_invocation" && field == Some("name"))
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            parent_kind == "member_expression" && field == Some("property")
        }
        Language::Rust => parent_kind == "field_expression" && field == Some("field"),
    }
}

fn is_call(
    language: Language,
    node: tree_sitter::Node,
    parent: Option<tree_sitter::Node>,
    grand: Option<tree_sitter::Node>,
    field: Option<&str>,
) -> bool {
    let parent_kind = parent.map(|p| p.kind()).unwrap_or("");
    match (language, parent_kind, field) {
        (Language::Java, "method_invocation", Some("name")) => true,
        (Language::Java, "object_creation_expression", Some("type")) => true,
        (_, "call" | "call_expression", Some("function")) => true,
        (_, "new_expression", Some("constructor")) => true,
        // `obj.name(...)`: the attribute node is the call's function.
        (_, "attribute" | "selector_expression" | "member_expression" | "field_expression", _) => {
            match (parent, grand) {
                (Some(member), Some(grand)) => {
                    matches!(grand.kind(), "call" | "call_expression")
                        && grand.child_by_field_name("function") == Some(member)
                        && member.child_by_field_name("object") != Some(node)
                        && member.child_by_field_name("operand") != Some(node)
                        && member.child_by_field_name("value") != Some(node)
                }
                _ => false,
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(structure: &FileStructure, role: Role) -> Vec<(String, usize)> {
        structure
            .occurrences
            .iter()
            .filter(|o| o.role == role)
            .map(|o| (o.name.clone(), o.line))
            .collect()
    }

    #[test]
    fn python_scopes_and_roles() {
        let text = "import os\nfrom pkg.a import compute\n\nclass Foo(Base):\n    def bar(self, x=1):\n        self.total = compute(x)\n        return os.path.join(self.total)\n";
        let s = analyze(Language::Python, text);
        let scopes: Vec<_> = s
            .scopes
            .iter()
            .map(|sc| (sc.kind, sc.signature.as_str(), sc.start_line))
            .collect();
        assert_eq!(
            scopes,
            vec![
                (ScopeKind::Class, "class Foo(Base):", 3),
                (ScopeKind::Method, "def bar(self, x=1):", 4)
            ]
        );
        assert_eq!(s.path_at(5), vec![0, 1]);
        assert_eq!(s.path_at(1), Vec::<usize>::new());
        assert_eq!(
            names(&s, Role::Import),
            vec![
                ("os".into(), 0),
                ("pkg".into(), 1),
                ("a".into(), 1),
                ("compute".into(), 1)
            ]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Type)),
            vec![("Foo".into(), 3)]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Function)),
            vec![("bar".into(), 4)]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Parameter)),
            vec![("self".into(), 4), ("x".into(), 4)]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Field)),
            vec![("total".into(), 5)]
        );
        let calls: Vec<_> = s
            .occurrences
            .iter()
            .filter(|o| o.call)
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(calls, vec!["compute", "join"]);
    }

    /// Analysing some lines gives what a whole-text analysis has on them: the
    /// scopes that overlap them (with their parents) and their occurrences.
    #[test]
    fn line_range_analysis_is_the_whole_analysis_restricted() {
        let body = "    x = compute(x, 1)  # note\n".repeat(40);
        let text = format!(
            "import os\n\nclass C(Base):\n    def m(self, x):\n{body}        return x\n\n\ndef f(x):\n{body}    return g(x, key=os.sep)\n"
        );
        let tree = crate::core::syntax::parse(Language::Python, &text);
        let whole = analyze_tree(Language::Python, &tree, &text, None);
        let described = |s: &FileStructure, index: usize| {
            let scope = &s.scopes[index];
            let parent = scope.parent.map(|p| s.scopes[p].name.clone());
            (scope.name.clone(), scope.start_line, scope.end_line, parent)
        };
        let lines = text.lines().count();
        for start in 0..lines {
            for end in [start, start + 1, start + 3] {
                let part = analyze_tree(Language::Python, &tree, &text, Some(start..end));
                let expected: Vec<_> = (0..whole.scopes.len())
                    .filter(|&i| {
                        let scope = &whole.scopes[i];
                        scope.start_line < end && scope.end_line >= start
                    })
                    .map(|i| described(&whole, i))
                    .collect();
                let got: Vec<_> = (0..part.scopes.len())
                    .map(|i| described(&part, i))
                    .collect();
                assert_eq!(got, expected, "scopes of lines {start}..{end}");
                let names = |s: &FileStructure, occurrences: &[Occurrence]| {
                    occurrences
                        .iter()
                        .map(|o| {
                            let scope = o.scope.map(|i| described(s, i));
                            (
                                o.name.clone(),
                                o.line,
                                o.column,
                                o.role,
                                o.callee.clone(),
                                scope,
                            )
                        })
                        .collect::<Vec<_>>()
                };
                assert_eq!(
                    names(&part, &part.occurrences),
                    names(&whole, whole.occurrences_in(start, end)),
                    "occurrences of lines {start}..{end}"
                );
            }
        }
    }

    #[test]
    fn go_and_java_definitions() {
        let go = "package p\n\nimport \"fmt\"\n\ntype Server struct {\n\tName string\n}\n\nfunc (s *Server) Run(port int) error {\n\taddr := fmt.Sprint(port)\n\treturn listen(addr)\n}\n";
        let s = analyze(Language::Go, go);
        let scopes: Vec<_> = s
            .scopes
            .iter()
            .map(|sc| (sc.kind, sc.name.as_str()))
            .collect();
        assert_eq!(
            scopes,
            vec![(ScopeKind::Class, "Server"), (ScopeKind::Method, "Run")]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Field)),
            vec![("Name".into(), 5)]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Parameter)),
            vec![("s".into(), 8), ("port".into(), 8)]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Variable)),
            vec![("addr".into(), 9)]
        );

        let java = "import java.util.List;\n\nclass Cart {\n    private int total;\n    Cart(int total) {\n        this.total = total;\n    }\n    int add(int x) { return helper(x); }\n}\n";
        let s = analyze(Language::Java, java);
        let scopes: Vec<_> = s
            .scopes
            .iter()
            .map(|sc| (sc.kind, sc.signature.as_str()))
            .collect();
        assert_eq!(
            scopes,
            vec![
                (ScopeKind::Class, "class Cart"),
                (ScopeKind::Method, "Cart(int total)"),
                (ScopeKind::Method, "int add(int x)")
            ]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Field)),
            vec![("total".into(), 3), ("total".into(), 5)]
        );
        let calls: Vec<_> = s
            .occurrences
            .iter()
            .filter(|o| o.call)
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(calls, vec!["helper"]);
    }

    #[test]
    fn typescript_and_rust_scopes() {
        let ts = "import { api } from './api';\n\nexport class Store {\n  count = 0;\n  add(n: number): void {\n    this.count = api.inc(n);\n  }\n}\n";
        let s = analyze(Language::TypeScript, ts);
        let scopes: Vec<_> = s
            .scopes
            .iter()
            .map(|sc| (sc.kind, sc.signature.as_str()))
            .collect();
        assert_eq!(
            scopes,
            vec![
                (ScopeKind::Class, "class Store"),
                (ScopeKind::Method, "add(n: number): void")
            ]
        );
        assert_eq!(names(&s, Role::Import), vec![("api".into(), 0)]);
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Parameter)),
            vec![("n".into(), 4)]
        );
        let calls: Vec<_> = s
            .occurrences
            .iter()
            .filter(|o| o.call)
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(calls, vec!["inc"]);

        let rust = "struct Cart { total: u32 }\n\nimpl Cart {\n    fn add(&mut self, price: u32) {\n        self.total += price;\n    }\n}\n";
        let s = analyze(Language::Rust, rust);
        let scopes: Vec<_> = s
            .scopes
            .iter()
            .map(|sc| (sc.kind, sc.name.as_str(), sc.start_line))
            .collect();
        assert_eq!(
            scopes,
            vec![
                (ScopeKind::Class, "Cart", 0),
                (ScopeKind::Class, "Cart", 2),
                (ScopeKind::Method, "add", 3)
            ]
        );
        assert_eq!(
            names(&s, Role::Definition(DefinitionKind::Field)),
            vec![("total".into(), 0)]
        );
    }
}
