//! `clone`: the same token change applied in several places, or before- and
//! after-texts that are alike (token Dice ≥ 0.8).

use std::collections::{BTreeMap, BTreeSet};

use crate::engine::history::similarity::{PrefixIndex, dice, may_reach};

use super::tokens::token_change;
use super::tokens::tokens;
use super::{CLIQUE_MAX, Dependency, DependencyKind, EditFacts, MAX_CANDIDATES, link_holders};

fn has_word(tokens: &[String]) -> bool {
    tokens.iter().any(|t| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '"' || c == '\'')
    })
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

/// How a clone edge names its change: the tokens removed and added.
fn change_detail((removed, added): &(Vec<String>, Vec<String>)) -> String {
    format!("-{} +{}", removed.join(" "), added.join(" "))
}

/// Identical changes: the same removed and added tokens (and, for a pure insertion or
/// deletion, the same lines) are linked; returns each edit's group (`usize::MAX`: none).
fn identical_changes(
    changes: &[(Vec<String>, Vec<String>)],
    normal: &[(String, String)],
    found: &mut BTreeSet<Dependency>,
) -> Vec<usize> {
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
    let mut group_of = vec![usize::MAX; changes.len()];
    for (number, members) in groups.values().enumerate() {
        for &member in members {
            group_of[member] = number;
        }
        link_holders(members, |a, b| {
            found.insert(Dependency {
                from: a,
                to: b,
                kind: DependencyKind::Clone,
                detail: change_detail(&changes[a]),
            });
        });
    }
    group_of
}

pub(super) fn clones(edits: &[EditFacts], found: &mut BTreeSet<Dependency>) {
    // Below this many tokens a change is too small to call two of them clones by
    // similarity alone (`)` → `),`), but an identical token change still counts.
    const MIN_TOKENS: usize = 4;
    const SIMILAR: f64 = 0.8;
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
    let detail = |index: usize| change_detail(&changes[index]);

    let group_of = identical_changes(&changes, &normal, found);

    // Alike changes: before- and after-texts similar as token multisets. Each edit
    // is compared only with earlier edits that share one of its rarest tokens
    // (the same one-sidedness, so the same side is indexed), nearest first.
    let side = |b: usize| {
        let (before, after) = &token_lists[b];
        if after.is_empty() { before } else { after }
    };
    let shape = |b: usize| {
        let (before, after) = &token_lists[b];
        (before.is_empty(), after.is_empty())
    };
    let mut indexes: BTreeMap<(bool, bool), PrefixIndex> = BTreeMap::new();
    for b in 0..edits.len() {
        let (before_b, after_b) = &token_lists[b];
        if before_b.len() + after_b.len() < MIN_TOKENS {
            continue;
        }
        let index = indexes.entry(shape(b)).or_insert_with(|| {
            let key = shape(b);
            PrefixIndex::new(
                SIMILAR,
                (0..edits.len())
                    .filter(|&e| shape(e) == key)
                    .map(|e| side(e).as_slice()),
            )
        });
        let mut linked = 0;
        for a in index.candidates(side(b), b, MAX_CANDIDATES) {
            if group_of[a] != usize::MAX && group_of[a] == group_of[b] {
                continue;
            }
            let (before_a, after_a) = &token_lists[a];
            let alike = may_reach(before_a.len(), before_b.len(), SIMILAR)
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
                linked += 1;
                if linked == CLIQUE_MAX {
                    break;
                }
            }
        }
        // Only edits that may start a clone pair are looked up by later edits.
        let (removed, added) = &changes[b];
        if (has_word(removed) || has_word(added)) && !imports[b] {
            index.insert(b, side(b));
        }
    }
}

fn is_import(tokens: &[&str]) -> bool {
    matches!(
        tokens.first(),
        Some(&"import" | &"from" | &"use" | &"package")
    )
}

fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
