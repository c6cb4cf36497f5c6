//! `move`: lines a pure deletion removed and a pure insertion put back elsewhere
//! (maybe touched up).

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::history::similarity::{PrefixIndex, dice, may_reach};

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

/// Lines compared by token similarity, so a moved line may be touched up (renamed
/// variable, other quotes, comment dropped) on the way.
const ALIKE: f64 = 0.75;
/// Fuzzy comparison is quadratic; beyond this many lines only exact lines count.
const MAX_FUZZY_LINES: usize = 60;

/// The lines of `text` that carry code (three letters or digits at least), trimmed.
fn significant(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim().to_string())
        .filter(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 3)
        .collect()
}

/// Each line's tokens, when there are few enough lines to compare them fuzzily.
fn fuzzy_tokens<S: AsRef<str>>(lines: &[S]) -> Vec<Vec<String>> {
    if lines.len() <= MAX_FUZZY_LINES {
        lines.iter().map(|l| line_tokens(l.as_ref())).collect()
    } else {
        Vec::new()
    }
}

/// How many of the `gone` lines (and their characters) reappear in a target: exactly
/// among its inserted `lines` or, when `gone_tokens` were taken, alike to one of them;
/// a line rewritten in place (a look-alike stays in the source's insertion or the
/// target rewrites a look-alike) is an edit, not a move. `inserted` holds the tokens
/// of the source's and the target's inserted lines, `deleted` the target's deleted ones.
fn moved_lines(
    gone: &[&String],
    gone_tokens: &[Vec<String>],
    lines: &BTreeSet<&String>,
    inserted: [&[Vec<String>]; 2],
    deleted: &[Vec<String>],
) -> (usize, usize) {
    let fuzzy = !gone_tokens.is_empty();
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
        let rewritten = fuzzy && (alike_in(inserted[0]) || alike_in(deleted));
        let alike = !exact && fuzzy && alike_in(inserted[1]);
        if (exact || alike) && !rewritten {
            moved += 1;
            moved_chars += line.len();
        }
    }
    (moved, moved_chars)
}

/// The pure insertions that may have received `gone` lines of edit `source`, nearest
/// first: from each exact line's list and the fuzzy index, only those nearest the
/// deletion are read.
fn nearest_targets(
    source: usize,
    gone: &[&String],
    gone_tokens: &[Vec<String>],
    exact_lines: &BTreeMap<&str, Vec<usize>>,
    line_owner: &[usize],
    fuzzy_index: &PrefixIndex,
) -> Vec<usize> {
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
    for tokens in gone_tokens {
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
    targets
}

pub(super) fn moves(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // A moved line must carry some code, not just a brace or a blank.
    const MIN_MOVED_CHARS: usize = 12;
    let inserted: Vec<Vec<String>> = edits.iter().map(|e| significant(e.after_text)).collect();
    let inserted_sets: Vec<BTreeSet<&String>> = inserted
        .iter()
        .map(|lines| lines.iter().collect())
        .collect();
    let inserted_tokens: Vec<Vec<Vec<String>>> =
        inserted.iter().map(|lines| fuzzy_tokens(lines)).collect();
    let deleted_tokens: Vec<Vec<Vec<String>>> = edits
        .iter()
        .map(|e| fuzzy_tokens(&significant(e.before_text)))
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
        let gone_tokens = fuzzy_tokens(&gone);
        let targets = nearest_targets(
            source,
            &gone,
            &gone_tokens,
            &exact_lines,
            &line_owner,
            &fuzzy_index,
        );
        let mut linked = 0;
        for target in targets.into_iter().take(MAX_CANDIDATES) {
            let lines = &inserted_sets[target];
            if target == source || linked == CLIQUE_MAX {
                continue;
            }
            let (moved, moved_chars) = moved_lines(
                &gone,
                &gone_tokens,
                lines,
                [&inserted_tokens[source], &inserted_tokens[target]],
                &deleted_tokens[target],
            );
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
