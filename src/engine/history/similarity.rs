//! Finding look-alike token multisets without comparing every pair (for the `clone` and
//! `move` rules).
//!
//! Two multisets can reach a Sørensen–Dice similarity of `t` only if they share at
//! least `t·|a|/(2−t)` tokens, so each must share one of its rarest
//! `|a| − that + 1` tokens with the other (prefix filtering, as in set-similarity
//! joins). [`PrefixIndex`] keeps a posting list per such token; a query returns only
//! the multisets that share one, nearest first, and the caller confirms each with
//! [`dice`]. Exact: a pair that reaches the threshold is always a candidate.

use std::collections::HashMap;

/// Sørensen–Dice similarity of two token multisets given as **sorted** slices
/// (1 when both are empty).
pub fn dice<T: Ord>(a: &[T], b: &[T]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * common as f64 / (a.len() + b.len()) as f64
}

/// Whether two multisets of these sizes can reach a Dice of `threshold` at all
/// (`2·min / (a + b)` bounds it), so most pairs skip the comparison.
pub fn may_reach(a: usize, b: usize, threshold: f64) -> bool {
    a + b == 0 || 2.0 * a.min(b) as f64 / (a + b) as f64 >= threshold
}

/// How many leading (rarest) tokens of an `n`-token multiset must hold a shared
/// token when the pair reaches `threshold`.
fn prefix_length(n: usize, threshold: f64) -> usize {
    // Fewest common tokens any partner reaching the threshold has (minus a hair,
    // so floating-point rounding can only lengthen the prefix).
    let overlap = ((threshold * n as f64 / (2.0 - threshold)) - 1e-9)
        .ceil()
        .max(1.0) as usize;
    (n + 1).saturating_sub(overlap).min(n)
}

/// An inverted index over the rarest tokens of many multisets, for Dice ≥ a threshold.
pub struct PrefixIndex<'a> {
    threshold: f64,
    /// How many indexed multisets hold each token (the rarity order).
    frequency: HashMap<&'a str, usize>,
    /// (token, its k-th copy in the multiset) → ids, ascending.
    postings: HashMap<(&'a str, usize), Vec<usize>>,
}

impl<'a> PrefixIndex<'a> {
    /// An index for `threshold`, with token rarity counted over `corpus` (any
    /// multisets; the order only affects speed, never which pairs are found).
    pub fn new<'c, I>(threshold: f64, corpus: I) -> Self
    where
        I: IntoIterator<Item = &'c [&'a str]>,
        'a: 'c,
    {
        let mut frequency: HashMap<&'a str, usize> = HashMap::new();
        for set in corpus {
            for token in set {
                *frequency.entry(*token).or_default() += 1;
            }
        }
        PrefixIndex {
            threshold,
            frequency,
            postings: HashMap::new(),
        }
    }

    /// The rarest tokens of `set` (sorted multiset) that a look-alike must share.
    fn prefix(&self, set: &[&'a str]) -> Vec<(&'a str, usize)> {
        let mut elements: Vec<(usize, &'a str, usize)> = Vec::with_capacity(set.len());
        for (i, token) in set.iter().enumerate() {
            let copy = set[..i].iter().rev().take_while(|t| *t == token).count();
            let rarity = self.frequency.get(token).copied().unwrap_or(0);
            elements.push((rarity, token, copy));
        }
        elements.sort_unstable();
        elements.truncate(prefix_length(set.len(), self.threshold));
        elements.into_iter().map(|(_, t, k)| (t, k)).collect()
    }

    /// Adds multiset `id` (sorted tokens). Ids must be added in ascending order.
    pub fn insert(&mut self, id: usize, set: &[&'a str]) {
        for element in self.prefix(set) {
            self.postings.entry(element).or_default().push(id);
        }
    }

    /// The `limit` indexed ids nearest to `near` (an earlier id first on a tie) that
    /// may reach the threshold with `set`, each once, closest first. Each posting
    /// list is read only around `near`, so a token every multiset holds costs
    /// `limit`, not the size of the index.
    pub fn candidates(&self, set: &[&'a str], near: usize, limit: usize) -> Vec<usize> {
        let mut found: Vec<usize> = Vec::new();
        for list in self
            .prefix(set)
            .iter()
            .filter_map(|element| self.postings.get(element))
        {
            let at = list.partition_point(|&id| id < near);
            found.extend_from_slice(
                &list[at.saturating_sub(limit)..at.saturating_add(limit).min(list.len())],
            );
        }
        found.sort_unstable_by_key(|&id| (id.abs_diff(near), id));
        found.dedup();
        found.truncate(limit);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dice_on_sorted_multisets() {
        assert_eq!(dice(&["a", "a", "b"], &["a", "b", "c"]), 2.0 * 2.0 / 6.0);
        assert_eq!(dice::<&str>(&[], &[]), 1.0);
        assert!(!may_reach(1, 10, 0.8));
        assert!(may_reach(8, 10, 0.8));
    }

    #[test]
    fn prefix_lengths() {
        // Dice ≥ 0.8 with 10 tokens needs ≥ 7 shared: any 4 of the 10 hold one.
        assert_eq!(prefix_length(10, 0.8), 4);
        assert_eq!(prefix_length(1, 0.8), 1);
        assert_eq!(prefix_length(0, 0.8), 0);
    }

    /// Every pair that reaches the threshold is a candidate, on small random multisets.
    #[test]
    fn candidates_are_a_superset_of_the_alike_pairs() {
        let words = ["a", "b", "c", "d", "e", "f", "(", ")", "x"];
        let mut seed = 11u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let sets: Vec<Vec<&str>> = (0..300)
            .map(|_| {
                let mut set: Vec<&str> =
                    (0..1 + next(9)).map(|_| words[next(words.len())]).collect();
                set.sort_unstable();
                set
            })
            .collect();
        for threshold in [0.75, 0.8] {
            let mut index = PrefixIndex::new(threshold, sets.iter().map(Vec::as_slice));
            for (b, set) in sets.iter().enumerate() {
                let candidates = index.candidates(set, b, usize::MAX);
                for (a, earlier) in sets[..b].iter().enumerate() {
                    if dice(earlier, set) >= threshold
                        && may_reach(earlier.len(), set.len(), threshold)
                    {
                        assert!(candidates.contains(&a), "{a} {b} at {threshold}");
                    }
                }
                index.insert(b, set);
            }
        }
    }
}
