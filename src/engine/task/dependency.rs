//! HumanEvo's dependency level of a task, from the syntax of its state: which
//! identifiers the ground truth uses and where the state defines them.
//!
//! A use counts when it names a member of the enclosing class (`self.x`, a Go
//! receiver's field or method: intra-class), a definition at the top of its own file
//! (intra-file), or something another file of the state defines (imported from a
//! repository module in Python, a repository package or the same package in Go:
//! cross-file). Locals, parameters, builtins and libraries outside the repository do not
//! count; the highest level found wins, none is standalone. Shallow by design: names,
//! not types (an attribute of anything but the receiver is not followed).
//!
//! Pure: texts in, a level out.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::DependencyLevel;
use crate::core::syntax::Language;
use crate::core::syntax::structure::{DefinitionKind, FileStructure, Role, ScopeKind, analyze};

static PY_FROM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]+)")
        .expect("valid regex")
});
static PY_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t]*import[ \t]+([^\n#]+)").expect("valid regex"));
static GO_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)^[ \t]*(?:import[ \t]+)?([\w.]+[ \t]+)?"([^"]+)"[ \t]*$"#)
        .expect("valid regex")
});
static GO_MODULE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^module[ \t]+(\S+)").expect("valid regex"));
static GO_RECEIVER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^func\s*\(\s*\w*\s*\*?\s*(\w+)").expect("valid regex"));

/// The dependency level of the code at `hole` (bytes of `text`, the file `path` of the
/// state `files`: every file of the state by path, that one included; `structure` is
/// `text`'s, from `syntax::structure::analyze`).
pub fn dependency_level(
    language: Language,
    path: &str,
    text: &str,
    structure: &FileStructure,
    hole: &Range<usize>,
    files: &BTreeMap<String, String>,
) -> Option<DependencyLevel> {
    if !matches!(language, Language::Python | Language::Go) || hole.is_empty() {
        return None;
    }
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let byte_of =
        |line: usize, column: usize| line_starts.get(line).map_or(usize::MAX, |s| s + column);
    let hole_line = super::blocks::cursor_at(text, hole.start).line;
    let enclosing = innermost_callable(structure, hole_line);
    let members = enclosing
        .map(|e| class_members(language, structure, e))
        .unwrap_or_default();
    let locals: BTreeSet<&str> = structure
        .occurrences
        .iter()
        .filter(|o| matches!(o.role, Role::Definition(_)))
        .filter(|o| {
            let inside_hole = hole.contains(&byte_of(o.line, o.column));
            let inside_enclosing = enclosing.is_some_and(|e| structure.chain(o.scope).contains(&e));
            let own_callable = o
                .scope
                .is_some_and(|s| structure.scopes[s].kind.is_callable());
            inside_hole || (inside_enclosing && own_callable)
        })
        .map(|o| o.name.as_str())
        .collect();
    let file_level = top_level_names(structure);
    let cross = cross_file_names(language, path, text, files);
    let own_name = enclosing.map(|e| structure.scopes[e].name.as_str());
    let mut level = DependencyLevel::Standalone;
    for o in &structure.occurrences {
        if o.role != Role::Use || o.keyword || !hole.contains(&byte_of(o.line, o.column)) {
            continue;
        }
        let name = o.name.as_str();
        let found = if o.attribute {
            members
                .contains(name)
                .then_some(DependencyLevel::IntraClass)
        } else if locals.contains(name) {
            None
        } else if cross.contains(name) {
            Some(DependencyLevel::CrossFile)
        } else if file_level.contains(name) && Some(name) != own_name {
            Some(DependencyLevel::IntraFile)
        } else if language == Language::Go && members.contains(name) {
            Some(DependencyLevel::IntraClass)
        } else {
            None
        };
        if let Some(found) = found {
            level = level.max(found);
        }
    }
    Some(level)
}

/// The innermost function or method whose lines hold `line`.
fn innermost_callable(structure: &FileStructure, line: usize) -> Option<usize> {
    structure
        .path_at(line)
        .into_iter()
        .rev()
        .find(|&s| structure.scopes[s].kind.is_callable())
}

/// Members of the class of method `scope`: its sibling methods and the class's fields
/// (Python: the enclosing class scope; Go: the methods and struct fields of the
/// receiver's type).
fn class_members(language: Language, structure: &FileStructure, scope: usize) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let method = &structure.scopes[scope];
    if method.kind != ScopeKind::Method {
        return out;
    }
    match language {
        Language::Go => {
            let Some(receiver) = receiver_type(&method.signature) else {
                return out;
            };
            for s in &structure.scopes {
                if s.kind == ScopeKind::Method && receiver_type(&s.signature) == Some(receiver) {
                    out.insert(s.name.clone());
                }
            }
            for (index, s) in structure.scopes.iter().enumerate() {
                if s.kind == ScopeKind::Class && s.name == receiver {
                    out.extend(fields_in(structure, index, s.start_line..s.end_line + 1));
                }
            }
        }
        _ => {
            let Some(class) = method
                .parent
                .filter(|&p| structure.scopes[p].kind == ScopeKind::Class)
            else {
                return out;
            };
            for s in &structure.scopes {
                if s.parent == Some(class) {
                    out.insert(s.name.clone());
                }
            }
            let c = &structure.scopes[class];
            out.extend(fields_in(structure, class, c.start_line..c.end_line + 1));
        }
    }
    out
}

/// The fields defined on `lines` (in a class's scope or its methods').
fn fields_in(structure: &FileStructure, class: usize, lines: Range<usize>) -> Vec<String> {
    structure
        .occurrences_in(lines.start, lines.end)
        .iter()
        .filter(|o| {
            matches!(
                o.role,
                Role::Definition(DefinitionKind::Field | DefinitionKind::Variable)
            ) && (o.scope.is_none() || structure.chain(o.scope).contains(&class))
        })
        .map(|o| o.name.clone())
        .collect()
}

/// The receiver type of a Go method signature (`func (s *Store) Get()` → `Store`).
fn receiver_type(signature: &str) -> Option<&str> {
    GO_RECEIVER
        .captures(signature)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str())
}

/// Names defined at the top of the file: functions, classes and types, and variables
/// outside any function.
fn top_level_names(structure: &FileStructure) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = structure
        .scopes
        .iter()
        .filter(|s| s.parent.is_none())
        .map(|s| s.name.clone())
        .collect();
    out.extend(
        structure
            .occurrences
            .iter()
            .filter(|o| {
                o.scope.is_none()
                    && matches!(
                        o.role,
                        Role::Definition(
                            DefinitionKind::Variable
                                | DefinitionKind::Function
                                | DefinitionKind::Type
                        )
                    )
            })
            .map(|o| o.name.clone()),
    );
    out
}

/// Local names that stand for code of other files of the state.
fn cross_file_names(
    language: Language,
    path: &str,
    text: &str,
    files: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    match language {
        Language::Python => python_repository_imports(path, text, files),
        Language::Go => go_cross_file(path, text, files),
        _ => BTreeSet::new(),
    }
}

/// The directory part of `path` (`a/b.py` → `a/`, `b.py` → ``).
fn dir_of(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// Whether Python module `module` (dotted, maybe relative to `path`) is a file or
/// package of the state.
fn python_module_in_state(path: &str, module: &str, files: &BTreeMap<String, String>) -> bool {
    let dots = module.len() - module.trim_start_matches('.').len();
    let rest = module.trim_start_matches('.').replace('.', "/");
    let bases: Vec<String> = if dots > 0 {
        let mut dir = dir_of(path).trim_end_matches('/').to_string();
        for _ in 1..dots {
            dir = dir
                .rfind('/')
                .map_or(String::new(), |i| dir[..i].to_string());
        }
        vec![if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        }]
    } else {
        vec![String::new(), "src/".to_string()]
    };
    bases.iter().any(|base| {
        let stem = format!("{base}{rest}");
        rest.is_empty() && dots > 0
            || files.contains_key(&format!("{stem}.py"))
            || files.contains_key(&format!("{stem}/__init__.py"))
            || files.keys().any(|k| k.starts_with(&format!("{stem}/")))
    })
}

/// Names a Python file imports from modules of the repository.
fn python_repository_imports(
    path: &str,
    text: &str,
    files: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for c in PY_FROM.captures_iter(text) {
        if !python_module_in_state(path, &c[1], files) {
            continue;
        }
        for item in c[2].trim_matches(|ch| ch == '(' || ch == ')').split(',') {
            let local = item.split_whitespace().last().unwrap_or_default();
            if !local.is_empty() && local != "*" {
                out.insert(local.to_string());
            }
        }
    }
    for c in PY_IMPORT.captures_iter(text) {
        for item in c[1].split(',') {
            let words: Vec<&str> = item.split_whitespace().collect();
            let Some(module) = words.first() else {
                continue;
            };
            if python_module_in_state(path, module, files) {
                let local = match words.as_slice() {
                    [_, "as", alias] => alias.to_string(),
                    _ => module.split('.').next().unwrap_or_default().to_string(),
                };
                out.insert(local);
            }
        }
    }
    out
}

/// Go: packages of the module the file imports (by local name) and the top-level
/// names of the other files of its own package.
fn go_cross_file(path: &str, text: &str, files: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let module = files
        .get("go.mod")
        .and_then(|m| GO_MODULE.captures(m).map(|c| c[1].to_string()));
    if let Some(module) = module {
        let imports_end = text.find("\nfunc ").unwrap_or(text.len());
        for c in GO_IMPORT.captures_iter(&text[..imports_end]) {
            let import = &c[2];
            if import.starts_with(&format!("{module}/")) {
                let local = c
                    .get(1)
                    .map(|a| a.as_str().trim().to_string())
                    .unwrap_or_else(|| import.rsplit('/').next().unwrap_or_default().to_string());
                out.insert(local);
            }
        }
    }
    let dir = dir_of(path);
    for (other, other_text) in files {
        let same_package = dir_of(other) == dir
            && other != path
            && other.ends_with(".go")
            && !other.ends_with("_test.go");
        if same_package {
            out.extend(top_level_names(&analyze(Language::Go, other_text)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(
        language: Language,
        path: &str,
        files: &[(&str, &str)],
        hole: &str,
    ) -> Option<DependencyLevel> {
        let files: BTreeMap<String, String> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        let text = &files[path];
        let start = text.find(hole).expect("hole in text");
        let structure = analyze(language, text);
        dependency_level(
            language,
            path,
            text,
            &structure,
            &(start..start + hole.len()),
            &files,
        )
    }

    #[test]
    fn python_levels() {
        let lib = "def helper(x):\n    return x\n";
        let app = "from lib import helper\nimport os\n\nLIMIT = 3\n\ndef top(v):\n    return v\n\nclass C:\n    def m(self, y):\n        z = y\n        return self.n(z)\n\n    def n(self, y):\n        return top(y)\n\n    def o(self, y):\n        return helper(os.path.join(y))\n\n    def p(self, y):\n        return len(y) + LIMIT\n";
        let files = [("lib.py", lib), ("app.py", app)];
        use DependencyLevel::*;
        assert_eq!(
            level(Language::Python, "app.py", &files, "return v"),
            Some(Standalone)
        );
        assert_eq!(
            level(
                Language::Python,
                "app.py",
                &files,
                "z = y\n        return self.n(z)"
            ),
            Some(IntraClass)
        );
        assert_eq!(
            level(Language::Python, "app.py", &files, "return top(y)"),
            Some(IntraFile)
        );
        assert_eq!(
            level(
                Language::Python,
                "app.py",
                &files,
                "return helper(os.path.join(y))"
            ),
            Some(CrossFile)
        );
        assert_eq!(
            level(Language::Python, "app.py", &files, "return len(y) + LIMIT"),
            Some(IntraFile)
        );
    }

    #[test]
    fn go_levels() {
        let gomod = "module example.com/m\n";
        let util = "package m\n\nfunc Double(x int) int {\n\treturn 2 * x\n}\n";
        let store = "package m\n\nimport (\n\t\"fmt\"\n\t\"example.com/m/text\"\n)\n\ntype Store struct {\n\tn int\n}\n\nfunc (s *Store) Get() int {\n\treturn s.n\n}\n\nfunc (s *Store) Twice() int {\n\treturn Double(s.n)\n}\n\nfunc Show(x int) string {\n\treturn text.Upper(fmt.Sprint(x))\n}\n\nfunc Plain(x int) int {\n\treturn x + 1\n}\n";
        let files = [
            ("go.mod", gomod),
            ("util.go", util),
            ("store.go", store),
            ("text/upper.go", "package text\n"),
        ];
        use DependencyLevel::*;
        assert_eq!(
            level(Language::Go, "store.go", &files, "return s.n"),
            Some(IntraClass)
        );
        assert_eq!(
            level(Language::Go, "store.go", &files, "return Double(s.n)"),
            Some(CrossFile)
        );
        assert_eq!(
            level(
                Language::Go,
                "store.go",
                &files,
                "return text.Upper(fmt.Sprint(x))"
            ),
            Some(CrossFile)
        );
        assert_eq!(
            level(Language::Go, "store.go", &files, "return x + 1"),
            Some(Standalone)
        );
    }
}
