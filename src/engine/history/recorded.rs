//! Dependency edges for a recorded session's edits, from the same analysis as a
//! commit's ([`super::dependency`]).
//!
//! Recorded edits are sequential: edit `j` is in the text left by edits `0..j`. So
//! each edit is analysed between the two texts around it (the file just before and
//! just after it), which are rebuilt by applying the edits in order; each file is
//! parsed once and then kept parsed across the edits ([`ParsedText`]: incremental
//! reparses, and for Python windows around the edit's lines), and only the edit's
//! lines are walked. The partial order keeps the developer's real
//! order as its natural order and the first edit as the initial one.

use std::collections::BTreeMap;
use std::path::Path;

use super::dependency::{EditFacts, dependencies};
use super::order::order_edges;
use super::symbols::{EditSymbols, Side, edit_symbols};
use crate::core::syntax::Language;
use crate::core::syntax::incremental::{ParseCounts, ParsedText};
use crate::core::trajectory::{Edit, PartialOrder, Trajectory};

/// The partial order of a trajectory's sequential edits: dependency edges (def→use,
/// clone, import→use…), the recorded order as natural order, the first edit as initial.
/// Edits without `start_byte` (not sequential) or that do not apply give no edges.
pub fn recorded_order(trajectory: &Trajectory) -> PartialOrder {
    order_of(trajectory, true).0
}

/// [`recorded_order`] with what the parsing did (windows, full reparses), summed over
/// the files: the bench prints it beside the time.
#[doc(hidden)]
pub fn recorded_order_with_counts(trajectory: &Trajectory) -> (PartialOrder, ParseCounts) {
    order_of(trajectory, true)
}

/// [`recorded_order`] with a full reparse after every edit instead of windows
/// ([`ParsedText::with_windows`]): the reference the bench and tests compare with.
#[doc(hidden)]
pub fn recorded_order_by_full_parses(trajectory: &Trajectory) -> PartialOrder {
    order_of(trajectory, false).0
}

/// A file's text before the session's first edit of it, parsed when its language
/// is known.
fn initial_text(trajectory: &Trajectory, path: &str, windows: bool) -> FileText {
    let text = trajectory
        .files
        .iter()
        .find(|f| f.path == path)
        .and_then(|f| f.base_text.clone())
        .unwrap_or_default();
    match Language::from_path(Path::new(path)) {
        Some(language) => FileText::Parsed(ParsedText::with_windows(language, text, windows)),
        None => FileText::Plain(text),
    }
}

/// Applies `edit` (of file number `file`) to its file's text and reads its identifiers
/// and the names of the scopes around its first line; an edit that does not apply
/// where it says has no facts, so no edges.
fn apply_and_read(entry: &mut FileText, edit: &Edit, file: usize) -> (EditSymbols, Vec<String>) {
    let range = edit.start_byte.and_then(|start| {
        let end = start.saturating_add(edit.before_text.len());
        let text = entry.text();
        let applies = end <= text.len()
            && text.is_char_boundary(start)
            && text.is_char_boundary(end)
            && text[start..end] == *edit.before_text;
        applies.then_some(start..end)
    });
    let Some(range) = range else {
        // Not a sequential edit of this text: no facts, so no edges.
        return (EditSymbols::default(), Vec::new());
    };
    let (before, after) = match entry {
        FileText::Plain(text) => {
            text.replace_range(range, &edit.after_text);
            (None, None)
        }
        FileText::Parsed(parsed) => {
            // The before side needs the edit's lines and the scopes at its first line.
            let lines = &edit.before_lines;
            let before = parsed.structure_of_lines(lines.start..lines.end.max(lines.start + 1));
            parsed.replace(range, &edit.after_text);
            let after = parsed.structure_of_lines(edit.after_lines.start..edit.after_lines.end);
            (Some(before), Some(after))
        }
    };
    let symbols = edit_symbols(
        file,
        before.as_ref().map(|s| Side {
            structure: s,
            start: edit.before_lines.start,
            end: edit.before_lines.end,
        }),
        after.as_ref().map(|s| Side {
            structure: s,
            start: edit.after_lines.start,
            end: edit.after_lines.end,
        }),
    );
    let scope = before
        .as_ref()
        .map(|s| {
            s.path_at(edit.before_lines.start)
                .into_iter()
                .map(|i| s.scopes[i].name.clone())
                .collect()
        })
        .unwrap_or_default();
    (symbols, scope)
}

fn order_of(trajectory: &Trajectory, windows: bool) -> (PartialOrder, ParseCounts) {
    let edits = &trajectory.edits;
    // Each file's current text, kept parsed (incrementally) when its language is known.
    let mut texts: BTreeMap<&str, FileText> = BTreeMap::new();
    let file_index: BTreeMap<&str, usize> = trajectory
        .files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.path.as_str(), i))
        .collect();
    let mut symbols: Vec<EditSymbols> = Vec::with_capacity(edits.len());
    let mut scopes: Vec<Vec<String>> = Vec::with_capacity(edits.len());
    for edit in edits {
        let entry = texts
            .entry(edit.file.as_str())
            .or_insert_with(|| initial_text(trajectory, &edit.file, windows));
        let file = file_index
            .get(edit.file.as_str())
            .copied()
            .unwrap_or(trajectory.files.len());
        let (edit_symbols, scope) = apply_and_read(entry, edit, file);
        symbols.push(edit_symbols);
        scopes.push(scope);
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
    let mut counts = ParseCounts::default();
    for text in texts.values() {
        if let FileText::Parsed(parsed) = text {
            counts += parsed.counts();
        }
    }
    // The recorded order is the natural order: no search for one over the graph.
    let order = PartialOrder {
        edges: order_edges(&dependencies(&facts)),
        initial: edits.first().map(|e| e.id.clone()).into_iter().collect(),
        natural: edits.iter().map(|e| e.id.clone()).collect(),
        source: Some("recorded".to_string()),
    };
    (order, counts)
}

/// A file's text as the edits leave it.
enum FileText {
    /// A source file, kept parsed.
    Parsed(ParsedText),
    /// A file no grammar reads.
    Plain(String),
}

impl FileText {
    fn text(&self) -> &str {
        match self {
            FileText::Parsed(parsed) => parsed.text(),
            FileText::Plain(text) => text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::Origin;
    use crate::core::trajectory::recorded_for_tests::recorded;

    /// 600 recorded edits of a Python file with long nested blocks — statements that
    /// use earlier ones, renames, deleted lines, comment markers left of the
    /// indentation, statements appended at a block's end, a header given a parameter
    /// — give the same edges with windows as with a full reparse after every edit.
    #[test]
    fn windows_give_the_edges_of_full_reparses() {
        let body = "        value = compute(value, 42)  # ordinary\n".repeat(40);
        let base = format!(
            "import os\n\n\nclass Totals(Base):\n    @staticmethod\n    def run(value, key=1):\n{body}        return value\n\n    def other(self):\n{body}        return self\n\n\ndef main(value):\n{}    return value\n\n\nLIMIT = main(3)\n",
            body.replace("        ", "    ")
        );
        let mut doc = base.clone();
        let mut changes: Vec<(f64, usize, usize, String, Origin)> = Vec::new();
        let mut state = 5u64;
        for step in 0..600usize {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let roll = (state >> 33) as usize;
            let starts: Vec<usize> = std::iter::once(0)
                .chain(doc.match_indices('\n').map(|(i, _)| i + 1))
                .filter(|&i| i < doc.len())
                .collect();
            let at = starts[roll % starts.len()];
            let end = doc[at..].find('\n').map_or(doc.len(), |i| at + i + 1);
            let line = &doc[at..end];
            let indent = &line[..line.len() - line.trim_start().len()];
            let (range, text) = match roll % 7 {
                // A statement that uses one typed earlier (a def→use edge).
                0 | 1 => (
                    at..at,
                    format!(
                        "{indent}total_{step} = compute(total_{}, key={step})\n",
                        step.saturating_sub(1 + roll % 9)
                    ),
                ),
                2 => match line.find("value") {
                    Some(i) => (at + i..at + i + 5, "amount".to_string()),
                    None => (at..at, format!("{indent}# note {step}\n")),
                },
                3 if !line.contains("def ")
                    && !line.contains("class ")
                    && !line.trim().is_empty() =>
                {
                    (at..end, String::new())
                }
                // A comment marker at the line's start, left of the indentation.
                4 => (at..at, "# ".to_string()),
                // A statement after the last one of the block the line is in.
                5 => {
                    let mut after = end;
                    while let Some(next) = doc[after..].find('\n').map(|i| after + i + 1) {
                        let next_line = &doc[after..next];
                        if !next_line.starts_with(indent) || next_line.trim().is_empty() {
                            break;
                        }
                        after = next;
                    }
                    (
                        after..after,
                        format!("{indent}print(total_{step}, value)\n"),
                    )
                }
                _ => match line.find("):") {
                    Some(i) if line.contains("def ") => {
                        (at + i..at + i, format!(", extra_{step}=None"))
                    }
                    _ => (at..at, format!("{indent}value = total_{}\n", step / 2)),
                },
            };
            doc.replace_range(range.clone(), &text);
            changes.push((
                step as f64 * 10_000.0,
                range.start,
                range.end,
                text,
                Origin::User,
            ));
        }
        let changes: Vec<(f64, usize, usize, &str, Origin)> = changes
            .iter()
            .map(|(t, s, e, text, o)| (*t, *s, *e, text.as_str(), *o))
            .collect();
        let (trajectory, last) = recorded(&base, &changes);
        assert_eq!(last, doc);
        assert_eq!(trajectory.edits.len(), 600);
        let windowed = recorded_order(&trajectory);
        let full = recorded_order_by_full_parses(&trajectory);
        let only = |a: &PartialOrder, b: &PartialOrder| {
            a.edges
                .iter()
                .filter(|e| !b.edges.contains(e))
                .map(|e| format!("{} {} {:?}", e.from, e.to, e.reasons))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            (only(&windowed, &full), only(&full, &windowed)),
            (vec![], vec![]),
            "edges only with windows, only with full reparses"
        );
        assert_eq!(windowed.edges, full.edges);
        assert_eq!(windowed.edges.len(), 2214);
    }
}
