//! Dependency edges for a recorded session's edits, from the same analysis as a
//! commit's ([`super::dependency`]).
//!
//! Recorded edits are sequential: edit `j` is in the text left by edits `0..j`. So
//! each edit is analysed between the two texts around it (the file just before and
//! just after it), which are rebuilt by applying the edits in order; each
//! intermediate text is parsed once. The partial order keeps the developer's real
//! order as its natural order and the first edit as the initial one.

use std::collections::BTreeMap;
use std::path::Path;

use super::dependency::{EditFacts, dependencies};
use super::order::order_from_dependencies;
use super::symbols::{EditSymbols, Side, edit_symbols};
use crate::syntax::Language;
use crate::syntax::structure::{FileStructure, analyze};
use crate::trajectory::{PartialOrder, Trajectory, apply_byte_edit};

/// The partial order of a trajectory's sequential edits: dependency edges (def→use,
/// clone, import→use…), the recorded order as natural order, the first edit as initial.
/// Edits without `start_byte` (not sequential) or that do not apply give no edges.
pub fn recorded_order(trajectory: &Trajectory) -> PartialOrder {
    let edits = &trajectory.edits;
    let mut texts: BTreeMap<&str, (String, Option<FileStructure>)> = BTreeMap::new();
    let file_index: BTreeMap<&str, usize> = trajectory
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i))
        .collect();
    let mut symbols: Vec<EditSymbols> = Vec::with_capacity(edits.len());
    let mut scopes: Vec<Vec<String>> = Vec::with_capacity(edits.len());
    for edit in edits {
        let language = Language::from_path(Path::new(&edit.file));
        let entry = texts.entry(edit.file.as_str()).or_insert_with(|| {
            let text = trajectory
                .files
                .iter()
                .find(|f| f.path == edit.file)
                .and_then(|f| f.base_text.clone())
                .unwrap_or_default();
            let structure = language.map(|l| analyze(l, &text));
            (text, structure)
        });
        let mut after = entry.0.clone();
        let applies = edit.start_byte.is_some_and(|start| {
            let end = start.saturating_add(edit.before_text.len());
            apply_byte_edit(&mut after, start, end, &edit.before_text, &edit.after_text).is_ok()
        });
        if !applies {
            // Not a sequential edit of this text: no facts, so no edges.
            symbols.push(EditSymbols::default());
            scopes.push(Vec::new());
            continue;
        }
        let after_structure = language.map(|l| analyze(l, &after));
        let file = file_index
            .get(edit.file.as_str())
            .copied()
            .unwrap_or(trajectory.files.len());
        let before_structure = &entry.1;
        symbols.push(edit_symbols(
            file,
            before_structure.as_ref().map(|s| Side {
                structure: s,
                start: edit.before_lines.start,
                end: edit.before_lines.end,
            }),
            after_structure.as_ref().map(|s| Side {
                structure: s,
                start: edit.after_lines.start,
                end: edit.after_lines.end,
            }),
        ));
        scopes.push(
            before_structure
                .as_ref()
                .map(|s| {
                    s.path_at(edit.before_lines.start)
                        .into_iter()
                        .map(|i| s.scopes[i].name.clone())
                        .collect()
                })
                .unwrap_or_default(),
        );
        *entry = (after, after_structure);
    }
    let facts: Vec<EditFacts> = edits
        .iter()
        .zip(&symbols)
        .zip(&scopes)
        .map(|((edit, symbols), scope)| EditFacts {
            path: &edit.file,
            symbols,
            before_text: &edit.before_text,
            after_text: &edit.after_text,
            scope,
        })
        .collect();
    let mut order = order_from_dependencies(edits.len(), &dependencies(&facts));
    order.natural = edits.iter().map(|e| e.id.clone()).collect();
    order.initial = edits.first().map(|e| e.id.clone()).into_iter().collect();
    order.source = Some("recorded".to_string());
    order
}
