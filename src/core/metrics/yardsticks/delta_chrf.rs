//! Zed's delta-chrF: how well the edit original→actual matches the edit original→expected,
//! measured on character n-grams (orders 1–6) of the changes, 0–100.
//!
//! Per order n, each edit becomes a signed bag: the n-grams its changed window gains, and
//! (marked as deletions) those it loses. The two bags give a precision and a recall; both
//! are averaged over the orders and combined as F-beta with β = 2. Whitespace runs are
//! collapsed first (spaces and newlines separately). Equal to `metrics.rs::delta_chr_f`
//! at the commit named in `docs/metrics.md`.

use std::collections::HashMap;

use super::bag::BagMatch;

/// The highest n-gram order.
const MAX_ORDER: usize = 6;
/// Recall weighs β² = 4 times as much as precision.
const BETA: f64 = 2.0;

/// delta-chrF of `actual` against `expected`, both edits of `original`, on 0–100.
pub fn delta_chrf(original: &str, expected: &str, actual: &str) -> f64 {
    if original == expected && expected == actual {
        return 100.0;
    }
    let (o, e, a) = (collapse(original), collapse(expected), collapse(actual));
    let (o_for_e, e_window) = changed_window(&o, &e);
    let (o_for_a, a_window) = changed_window(&o, &a);
    let (mut precision_sum, mut recall_sum) = (0.0, 0.0);
    for n in 1..=MAX_ORDER {
        let gramless = |x: &[char], y: &[char]| x.len() < n && y.len() < n;
        // An order at which neither edit has any n-gram at all agrees perfectly.
        if gramless(o_for_e, e_window) && gramless(o_for_a, a_window) {
            precision_sum += 1.0;
            recall_sum += 1.0;
            continue;
        }
        let m = BagMatch::of(
            &signed_delta(o_for_e, e_window, n),
            &signed_delta(o_for_a, a_window, n),
        );
        precision_sum += m.precision();
        recall_sum += m.recall();
    }
    let p = precision_sum / MAX_ORDER as f64;
    let r = recall_sum / MAX_ORDER as f64;
    let f = if p + r == 0.0 {
        0.0
    } else {
        (1.0 + BETA * BETA) * p * r / (BETA * BETA * p + r)
    };
    f * 100.0
}

/// The last whitespace kind written while collapsing.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Run {
    None,
    Space,
    Newline,
}

/// Each run of non-newline whitespace becomes one space and each run of newlines one
/// newline; a space after a newline (or the reverse) starts a new run and is kept.
fn collapse(text: &str) -> Vec<char> {
    let mut out = Vec::with_capacity(text.len());
    let mut run = Run::None;
    for c in text.chars() {
        let kind = match c {
            '\n' => Run::Newline,
            c if c.is_whitespace() => Run::Space,
            _ => Run::None,
        };
        match kind {
            Run::None => out.push(c),
            Run::Space if run != Run::Space => out.push(' '),
            Run::Newline if run != Run::Newline => out.push('\n'),
            _ => {}
        }
        run = kind;
    }
    out
}

/// The part of `before` and `after` that differs (after their common prefix and a common
/// suffix not overlapping it), widened by `MAX_ORDER - 1` characters on each side so that
/// every n-gram touching the change is inside; empty when the two are equal.
fn changed_window<'t>(before: &'t [char], after: &'t [char]) -> (&'t [char], &'t [char]) {
    let prefix = before.iter().zip(after).take_while(|(x, y)| x == y).count();
    let room = before.len().min(after.len()) - prefix;
    let suffix = before
        .iter()
        .rev()
        .zip(after.iter().rev())
        .take(room)
        .take_while(|(x, y)| x == y)
        .count();
    if before.len() == after.len() && prefix + suffix == before.len() {
        return (&[], &[]);
    }
    let widen = |s: &'t [char]| {
        let start = prefix.saturating_sub(MAX_ORDER - 1);
        let end = (s.len() - suffix + MAX_ORDER - 1).min(s.len());
        &s[start..end]
    };
    (widen(before), widen(after))
}

/// The n-grams `after` has more of than `before` (keyed `(false, gram)`) and those it has
/// fewer of (keyed `(true, gram)`: deletions), each with the size of the difference.
fn signed_delta<'t>(
    before: &'t [char],
    after: &'t [char],
    n: usize,
) -> HashMap<(bool, &'t [char]), usize> {
    let mut net: HashMap<&[char], isize> = HashMap::new();
    for g in after.windows(n) {
        *net.entry(g).or_default() += 1;
    }
    for g in before.windows(n) {
        *net.entry(g).or_default() -= 1;
    }
    net.into_iter()
        .filter(|&(_, d)| d != 0)
        .map(|(g, d)| ((d < 0, g), d.unsigned_abs()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_runs_collapse_by_kind() {
        let c: String = collapse("abc   \n\n\n   123\t\r\nx").into_iter().collect();
        assert_eq!(c, "abc \n 123 \nx");
    }

    #[test]
    fn equal_texts_score_100_and_a_missed_edit_0() {
        assert_eq!(delta_chrf("same", "same", "same"), 100.0);
        assert_eq!(delta_chrf("a old b", "a new b", "a new b"), 100.0);
        assert_eq!(
            delta_chrf(
                "prefix old suffix",
                "prefix new suffix",
                "prefix old suffix"
            ),
            0.0
        );
    }
}
