//! `import_use` (an import changed, the name used in another edit of the file) and
//! `def_import` (a definition changed, its import changed elsewhere).

use std::collections::{BTreeMap, BTreeSet};

use crate::core::syntax::structure::DefinitionKind;
use crate::engine::history::visibility::{is_js, js_module_holds, module_holds, package_holds};

use super::{Dependency, DependencyKind, EditFacts, nearest_holders};

pub(super) fn imports(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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
/// file `path`: its module is that file or a package holding it (Python), that file
/// or a directory holding it (JavaScript/TypeScript), or that file's package (Go). A
/// name that is only part of a module path (`pkg` in `from pkg.m import f`) imports
/// nothing. Other languages: by name alone.
fn imports_from(edit: &EditFacts, name: &str, path: &str) -> bool {
    let python = edit.path.ends_with(".py");
    let js = is_js(edit.path);
    if !(python || js || edit.path.ends_with(".go")) {
        return true;
    }
    edit.symbols
        .import_modules
        .get(name)
        .is_some_and(|modules| {
            modules.iter().any(|m| {
                if python {
                    module_holds(m, edit.path, path)
                } else if js {
                    js_module_holds(m, edit.path, path)
                } else {
                    package_holds(m, path)
                }
            })
        })
}
