//! `move`: lines a pure deletion removed and a pure insertion put back elsewhere
//! (maybe touched up).

use std::collections::{BTreeMap, BTreeSet};

use crate::history::similarity::{PrefixIndex, dice, may_reach};

use super::tokens::tokens;
use super::{CLIQUE_MAX, Dependency, DependencyKind, EditFacts, MAX_CANDIDATES};

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

pub(super) fn moves(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
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
