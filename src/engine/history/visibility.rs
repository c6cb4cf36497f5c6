//! Which definitions of other files a file can see: its imports, the names it binds
//! itself, and which file a module name means.
//!
//! A use of `N` in file B reaches a module-level `N` of file A only when B can see
//! it. Python: B binds `N` itself (a local, a parameter, its own module-level
//! definition) or imports it from A (`from a import N [as M]`, `import a` + `a.N`,
//! relative imports resolved against B's package, `from a import *`); a package that
//! contains A may re-export it (`from pkg import N`). Go: a bare name is visible in
//! its package (directory), `pkg.N` through an import whose path ends with A's
//! directory. Java: a top-level type in its package or through an import of it or
//! its package. JavaScript/TypeScript, as Python: B defines `N` itself or imports it
//! from A (`import {N} from './a'`, `import N from './a'` for a default export,
//! `import * as a from './a'` or `const a = require('./a')` + `a.N`, `const {N} =
//! require('./a')`), the module resolved against B's directory (extension optional;
//! a directory means its index, which may re-export anything beneath it). Other
//! languages are not modelled: their uses carry no binding and the rules resolve
//! them by scope alone.
//!
//! [`FileNames`] is built once per file and side from the whole text's structure (an
//! edit's lines rarely hold the imports it relies on); [`module_holds`] and
//! [`visible_from`] are pure.

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::Language;
use crate::core::syntax::structure::{FileStructure, ImportBinding, Role, ScopeKind};

/// What a name used in a file is bound to there.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binding {
    /// A parameter, local or nested definition of an enclosing function.
    Local,
    /// A module-level definition of the file itself.
    Module,
    /// An import: `module` as written, `member` the name imported from it (`None`
    /// when the import binds the module).
    Imported {
        /// Module as written (`pkg.m`, `.m`; Go: the import path).
        module: String,
        /// Name imported from the module.
        member: Option<String>,
    },
    /// Not bound in the file: a builtin, or a name from one of these star imports.
    Unbound {
        /// Modules of `from m import *` (Go: dot imports).
        star: Vec<String>,
    },
}

/// What the object of an attribute use (`q.N`) is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Qualifier {
    /// A module (`import a.b` + `a.b.N`, `from pkg import mod` + `mod.N`): as written,
    /// relative to the importing file when it starts with dots.
    Module(String),
    /// A name imported from a module (`from pkg import X` + `X.N`): a submodule
    /// `pkg.X` (as written here) or a class or object of `pkg`.
    ImportedName(String),
    /// `self.name` or `cls.name` (Python): the enclosing class's own member, or one
    /// it inherits or a subclass overrides.
    OwnObject,
    /// `super().name` (Python): a member of a base class.
    Super,
    /// Anything else (an object, a call's result).
    Other,
}

/// The names one side of one file binds, from its whole text.
#[derive(Debug, Clone, Default)]
pub struct FileNames {
    language: Option<Language>,
    /// Bound name → the last import binding it.
    imports: BTreeMap<String, ImportBinding>,
    /// Modules of star imports.
    stars: Vec<String>,
    /// Names defined at module level.
    module_level: BTreeSet<String>,
    /// Chain of scope names of a callable → names bound inside it.
    locals: BTreeMap<Vec<String>, BTreeSet<String>>,
    /// Functions decorated as pytest fixtures (`@pytest.fixture`, `@fixture(...)`).
    fixtures: BTreeSet<String>,
    /// Record classes, whose class-level fields are their constructor's parameters
    /// (`@dataclass`, attrs, `NamedTuple`, `TypedDict`, pydantic's `BaseModel`).
    records: BTreeSet<String>,
}

impl FileNames {
    /// The names `structure` (the whole text `text` of a file) binds.
    pub fn new(language: Language, structure: &FileStructure, text: &str) -> Self {
        let mut names = FileNames {
            language: Some(language),
            ..FileNames::default()
        };
        if !modelled(language) {
            return names;
        }
        for import in &structure.imports {
            if import.member.as_deref() == Some("*") {
                names.stars.push(import.module.clone());
            } else {
                names.imports.insert(import.name.clone(), import.clone());
            }
        }
        // Each scope's key (the chain of names up to its innermost callable), built
        // once per scope rather than once per definition.
        let mut keys: Vec<Option<Option<Vec<String>>>> = vec![None; structure.scopes.len()];
        for occurrence in &structure.occurrences {
            let Role::Definition(_) = occurrence.role else {
                continue;
            };
            let Some(scope) = occurrence.scope else {
                names.module_level.insert(occurrence.name.clone());
                continue;
            };
            let key = keys[scope].get_or_insert_with(|| {
                let chain = structure.chain(Some(scope));
                let depth = chain
                    .iter()
                    .rposition(|&i| structure.scopes[i].kind.is_callable())?;
                Some(
                    chain[..=depth]
                        .iter()
                        .map(|&i| structure.scopes[i].name.clone())
                        .collect(),
                )
            });
            if let Some(key) = key {
                match names.locals.get_mut(key.as_slice()) {
                    Some(set) => {
                        set.insert(occurrence.name.clone());
                    }
                    None => {
                        names
                            .locals
                            .insert(key.clone(), BTreeSet::from([occurrence.name.clone()]));
                    }
                }
            }
        }
        // Decorators are read from the text above a definition (tree-sitter keeps them
        // outside the definition's node), only in files that can hold one.
        let records = ["dataclass", "attr.s", "attrs.define", "@define", "@frozen"];
        let may_decorate = text.contains("fixture") || records.iter().any(|r| text.contains(r));
        if language == Language::Python && may_decorate {
            let lines: Vec<&str> = text.lines().collect();
            for scope in &structure.scopes {
                let decorators = || {
                    lines[..scope.start_line.min(lines.len())]
                        .iter()
                        .rev()
                        .take_while(|l| l.trim_start().starts_with('@'))
                };
                if scope.kind.is_callable() && decorators().any(|l| l.contains("fixture")) {
                    names.fixtures.insert(scope.name.clone());
                }
                let record = decorators().any(|l| records.iter().any(|r| l.contains(r)));
                if scope.kind == ScopeKind::Class && record {
                    names.records.insert(scope.name.clone());
                }
            }
        }
        if language == Language::Python {
            // Classes whose class-level fields are constructor parameters by their base.
            let bases = ["NamedTuple", "TypedDict", "BaseModel"];
            for scope in &structure.scopes {
                if scope.kind == ScopeKind::Class
                    && bases.iter().any(|b| header_names(&scope.signature, b))
                {
                    names.records.insert(scope.name.clone());
                }
            }
        }
        names
    }

    /// True when the language's bindings are modelled (Python, Go, Java,
    /// JavaScript/TypeScript).
    pub fn modelled(&self) -> bool {
        self.language.is_some_and(modelled)
    }

    /// What `name`, used inside the scopes `chain` (outermost first; `callable_depth`
    /// the prefix that ends at the innermost callable), is bound to.
    pub fn binding(&self, name: &str, chain: &[String], callable_depth: usize) -> Binding {
        let local = (1..=callable_depth.min(chain.len())).any(|k| {
            self.locals
                .get(&chain[..k])
                .is_some_and(|n| n.contains(name))
        });
        if local {
            return Binding::Local;
        }
        if let Some(import) = self.imports.get(name) {
            // Imported and reassigned at module level (`N = wrap(N)`): still the import.
            return Binding::Imported {
                module: import.module.clone(),
                member: import.member.clone(),
            };
        }
        if self.module_level.contains(name) {
            return Binding::Module;
        }
        Binding::Unbound {
            star: self.stars.clone(),
        }
    }

    /// What the object `qualifier` of an attribute use is (`a.b` → the module `a.b`
    /// when `a` is `import a`).
    pub fn qualifier(&self, qualifier: &str, chain: &[String], callable_depth: usize) -> Qualifier {
        if self.language == Some(Language::Python) {
            match qualifier {
                "self" | "cls" => return Qualifier::OwnObject,
                "super()" => return Qualifier::Super,
                _ => {}
            }
        }
        let (head, rest) = match qualifier.split_once('.') {
            Some((head, rest)) => (head, Some(rest)),
            None => (qualifier, None),
        };
        match self.binding(head, chain, callable_depth) {
            Binding::Imported { module, member } => {
                let certain = member.is_none();
                let mut module = match member {
                    // `from pkg import mod`: `mod` may be the submodule `pkg.mod`.
                    Some(member) if self.language == Some(Language::Python) => {
                        if module.ends_with('.') {
                            format!("{module}{member}")
                        } else {
                            format!("{module}.{member}")
                        }
                    }
                    _ => module,
                };
                if let Some(rest) = rest
                    && self.language == Some(Language::Python)
                {
                    module = format!("{module}.{rest}");
                }
                if certain {
                    Qualifier::Module(module)
                } else {
                    Qualifier::ImportedName(module)
                }
            }
            _ => Qualifier::Other,
        }
    }

    /// True when `name` is a record class (its fields are constructor parameters).
    pub fn is_record(&self, name: &str) -> bool {
        self.records.contains(name)
    }

    /// True when `name` is a function decorated as a pytest fixture.
    pub fn is_fixture(&self, name: &str) -> bool {
        self.fixtures.contains(name)
    }
}

/// Languages whose bindings [`FileNames`] models.
fn modelled(language: Language) -> bool {
    !matches!(language, Language::Rust)
}

/// True when a class header names `base` among its words after the class's own name.
fn header_names(header: &str, base: &str) -> bool {
    header
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .skip(2)
        .any(|w| w == base)
}

fn segments(path: &str) -> Vec<&str> {
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    let mut parts: Vec<&str> = stem.split('/').filter(|p| !p.is_empty()).collect();
    if parts.last() == Some(&"__init__") {
        parts.pop();
    }
    parts
}

fn directory(path: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    parts.pop();
    parts
}

/// True when the Python module `module`, imported by the file `importer`, is the
/// file `path` or a package that contains it (and may re-export its names).
/// Absolute modules match wherever the repository's root is (`pkg.m` is
/// `src/pkg/m.py`); relative ones (`.m`, `..`) resolve against the importer's package.
pub fn module_holds(module: &str, importer: &str, path: &str) -> bool {
    let target = segments(path);
    let dots = module.chars().take_while(|&c| c == '.').count();
    if dots > 0 {
        let mut full = directory(importer);
        for _ in 1..dots {
            if full.pop().is_none() {
                return false;
            }
        }
        full.extend(module[dots..].split('.').filter(|p| !p.is_empty()));
        return target.starts_with(&full);
    }
    let wanted: Vec<&str> = module.split('.').collect();
    !wanted.is_empty()
        && target
            .windows(wanted.len())
            .any(|run| run == wanted.as_slice())
}

/// Whether a path is a JavaScript or TypeScript file.
pub fn is_js(path: &str) -> bool {
    [".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"]
        .iter()
        .any(|ext| path.ends_with(ext))
}

/// True when the JavaScript/TypeScript module specifier `module`, imported by the
/// file `importer`, is the file `path` (extension optional), or a directory holding
/// it (its index may re-export it). Relative specifiers (`./m`, `../m`) resolve
/// against the importer's directory; bare ones (`pkg/m`, `@/m`) match wherever the
/// repository's root is, as Python's absolute modules do.
pub fn js_module_holds(module: &str, importer: &str, path: &str) -> bool {
    let mut target = segments(path);
    if target.last() == Some(&"index") {
        target.pop();
    }
    let stem = ["js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts"]
        .iter()
        .find_map(|ext| module.strip_suffix(&format!(".{ext}")))
        .unwrap_or(module);
    if module.starts_with('.') {
        let mut full = directory(importer);
        for part in stem.split('/') {
            match part {
                "" | "." => {}
                ".." => {
                    if full.pop().is_none() {
                        return false;
                    }
                }
                part => full.push(part),
            }
        }
        return target.starts_with(&full);
    }
    let wanted: Vec<&str> = stem
        .trim_start_matches("@/")
        .trim_start_matches("~/")
        .split('/')
        .filter(|p| !p.is_empty())
        .collect();
    !wanted.is_empty()
        && target
            .windows(wanted.len())
            .any(|run| run == wanted.as_slice())
}

/// True when the Go import path `import` names the package (directory) of `path`.
pub fn package_holds(import: &str, path: &str) -> bool {
    let dir = directory(path);
    let wanted: Vec<&str> = import.split('/').collect();
    // A file at the repository's root: its import path is the module's, unknown here.
    dir.is_empty() || wanted.ends_with(&dir)
}

/// True when the Java package `package` (dotted) is the directory of `path`, ending
/// its source root (`src/main/java/a/b/C.java` is in `a.b`).
fn java_package_holds(package: &str, path: &str) -> bool {
    let wanted: Vec<&str> = package.split('.').collect();
    directory(path).ends_with(&wanted)
}

/// How a use of a module-level definition `name` of file `def_path` is reached.
#[derive(Debug, Clone, Copy)]
pub struct UseSite<'a> {
    /// The file of the use.
    pub path: &'a str,
    /// `q.N` rather than a bare `N`.
    pub attribute: bool,
    /// What the bare name is bound to in the use's file, when known.
    pub binding: Option<&'a Binding>,
    /// What the attribute's object is, when known.
    pub qualifier: Option<&'a Qualifier>,
}

/// Whether a use can see the module-level definition `name` of `def_path`; `None`
/// when the language is not modelled (the caller falls back to scope alone).
pub fn visible_from(name: &str, def_path: &str, site: UseSite) -> Option<bool> {
    let python = def_path.ends_with(".py") && site.path.ends_with(".py");
    let go = def_path.ends_with(".go") && site.path.ends_with(".go");
    let same_file = def_path == site.path;
    if go {
        if site.attribute {
            return match site.qualifier? {
                Qualifier::Module(import) => Some(!same_file && package_holds(import, def_path)),
                // A method of a value: Go methods are module-level definitions here.
                _ => None,
            };
        }
        return match site.binding? {
            Binding::Local => Some(false),
            _ => Some(directory(def_path) == directory(site.path)),
        };
    }
    if def_path.ends_with(".java") && site.path.ends_with(".java") {
        // A top-level type: visible in its package (directory), through an import of
        // it or of its package (`a.b.C`, `a.b.*`); a qualified `a.b.C` is not modelled.
        if site.attribute {
            return None;
        }
        return match site.binding? {
            Binding::Local => Some(false),
            _ if directory(def_path) == directory(site.path) => Some(true),
            Binding::Imported { module, member } => {
                Some(member.as_deref() == Some(name) && java_package_holds(module, def_path))
            }
            Binding::Unbound { star } => Some(star.iter().any(|m| java_package_holds(m, def_path))),
            Binding::Module => Some(false),
        };
    }
    let js = is_js(def_path) && is_js(site.path);
    if !(python || js) {
        return None;
    }
    // The same rules for both; only how a module names a file differs.
    let holds = |module: &str| match python {
        true => module_holds(module, site.path, def_path),
        false => js_module_holds(module, site.path, def_path),
    };
    if site.attribute {
        return match site.qualifier? {
            Qualifier::Module(module) | Qualifier::ImportedName(module) => Some(holds(module)),
            _ => Some(false),
        };
    }
    Some(match site.binding? {
        Binding::Local => false,
        Binding::Module => same_file,
        Binding::Imported { module, member } => match member {
            // A default import binds whatever A exports as default, under a name of
            // B's choosing: the same name counts.
            Some(member) => (member == name || (js && member == "default")) && holds(module),
            None => false,
        },
        Binding::Unbound { star } => same_file || star.iter().any(|m| holds(m)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::syntax::structure::analyze;

    #[test]
    fn modules_resolve_absolute_relative_and_through_packages() {
        assert!(module_holds(
            "pkg.geometry",
            "app/x.py",
            "src/pkg/geometry.py"
        ));
        assert!(module_holds("pkg", "app/x.py", "pkg/geometry.py"));
        assert!(module_holds("pkg", "app/x.py", "pkg/__init__.py"));
        assert!(!module_holds(
            "other.geometry",
            "app/x.py",
            "pkg/geometry.py"
        ));
        assert!(module_holds(".geometry", "pkg/x.py", "pkg/geometry.py"));
        assert!(module_holds(
            "..geometry",
            "pkg/sub/x.py",
            "pkg/geometry.py"
        ));
        assert!(!module_holds(
            ".geometry",
            "pkg/sub/x.py",
            "pkg/geometry.py"
        ));
        assert!(module_holds(".", "pkg/x.py", "pkg/geometry.py"));
        assert!(package_holds("github.com/o/r/server", "server/listen.go"));
        assert!(java_package_holds("shop", "src/main/java/shop/Cart.java"));
        assert!(!java_package_holds("other", "src/main/java/shop/Cart.java"));
        assert!(!package_holds("github.com/o/r/client", "server/listen.go"));
        assert!(js_module_holds("./a", "lib/c.js", "lib/a.js"));
        assert!(js_module_holds("./a.js", "lib/c.js", "lib/a.js"));
        assert!(js_module_holds("../lib/a", "app/f.js", "lib/a.ts"));
        assert!(js_module_holds("../lib", "app/f.js", "lib/index.js"));
        assert!(js_module_holds("../lib", "app/f.js", "lib/a.js"));
        assert!(!js_module_holds("./b", "lib/c.js", "lib/a.js"));
        assert!(!js_module_holds("../../x", "lib/c.js", "x.js"));
        assert!(js_module_holds("@/lib/a", "app/f.ts", "src/lib/a.ts"));
        assert!(!js_module_holds("react", "app/f.ts", "src/lib/a.ts"));
    }

    #[test]
    fn uses_see_definitions_through_their_bindings() {
        let imported = |module: &str, member: Option<&str>| Binding::Imported {
            module: module.into(),
            member: member.map(str::to_string),
        };
        fn bare<'a>(path: &'a str, binding: &'a Binding) -> UseSite<'a> {
            UseSite {
                path,
                attribute: false,
                binding: Some(binding),
                qualifier: None,
            }
        }
        let from_a = imported("pkg.a", Some("load"));
        let from_b = imported("pkg.b", Some("load"));
        let unbound = Binding::Unbound { star: vec![] };
        let star_a = Binding::Unbound {
            star: vec![".a".into()],
        };
        let local = Binding::Local;
        let cases = [
            ("load", "pkg/a.py", bare("pkg/c.py", &from_a), Some(true)),
            ("load", "pkg/a.py", bare("pkg/c.py", &from_b), Some(false)),
            ("load", "pkg/a.py", bare("pkg/c.py", &unbound), Some(false)),
            ("load", "pkg/a.py", bare("pkg/c.py", &star_a), Some(true)),
            ("load", "pkg/a.py", bare("pkg/a.py", &local), Some(false)),
            ("load", "pkg/a.py", bare("pkg/a.py", &unbound), Some(true)),
            ("Run", "a/run.go", bare("a/use.go", &unbound), Some(true)),
            ("Run", "a/run.go", bare("b/use.go", &unbound), Some(false)),
            (
                "Cart",
                "src/shop/Cart.java",
                bare("src/app/Use.java", &unbound),
                Some(false),
            ),
            (
                "Cart",
                "src/shop/Cart.java",
                bare("src/shop/Use.java", &unbound),
                Some(true),
            ),
            ("load", "lib/a.js", bare("lib/b.js", &unbound), Some(false)),
            ("load", "lib/a.rs", bare("lib/b.rs", &unbound), None),
        ];
        for (name, def_path, site, expected) in cases {
            assert_eq!(
                visible_from(name, def_path, site),
                expected,
                "{name} of {def_path} from {}",
                site.path
            );
        }
        let module = Qualifier::Module("pkg.a".into());
        let attribute = UseSite {
            path: "pkg/c.py",
            attribute: true,
            binding: None,
            qualifier: Some(&module),
        };
        assert_eq!(visible_from("load", "pkg/a.py", attribute), Some(true));
        assert_eq!(visible_from("load", "pkg/b.py", attribute), Some(false));
    }

    #[test]
    fn bindings_come_from_the_whole_file() {
        let text = "import os\nimport a.b as ab\nfrom .m import f as g, h\nfrom x import *\n\nN = 1\n\n\ndef run(p):\n    q = 2\n    return p, q, g, N, os, z\n";
        let names = FileNames::new(Language::Python, &analyze(Language::Python, text), text);
        let chain = ["run".to_string()];
        let imported = |module: &str, member: Option<&str>| Binding::Imported {
            module: module.into(),
            member: member.map(str::to_string),
        };
        assert_eq!(names.binding("p", &chain, 1), Binding::Local);
        assert_eq!(names.binding("q", &chain, 1), Binding::Local);
        assert_eq!(names.binding("g", &chain, 1), imported(".m", Some("f")));
        assert_eq!(names.binding("N", &chain, 1), Binding::Module);
        assert_eq!(names.binding("os", &chain, 1), imported("os", None));
        assert_eq!(
            names.binding("z", &chain, 1),
            Binding::Unbound {
                star: vec!["x".into()]
            }
        );
        assert_eq!(
            names.binding("q", &[], 0),
            Binding::Unbound {
                star: vec!["x".into()]
            }
        );
        assert_eq!(
            names.qualifier("ab.c", &chain, 1),
            Qualifier::Module("a.b.c".into())
        );
        assert_eq!(
            names.qualifier("h", &chain, 1),
            Qualifier::ImportedName(".m.h".into())
        );
        assert_eq!(names.qualifier("p", &chain, 1), Qualifier::Other);
        assert_eq!(names.qualifier("self", &chain, 1), Qualifier::OwnObject);
        assert_eq!(names.qualifier("super()", &chain, 1), Qualifier::Super);
    }
}
