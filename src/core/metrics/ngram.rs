//! N-gram multisets over token slices, optionally confined to regions.
//!
//! N-grams are slices of the token sequence (never space-joined strings), so tokens that
//! contain spaces — ES-Line tokens do — cannot collide.

use std::collections::HashMap;
use std::hash::Hash;

/// A multiset of n-grams: each distinct n-gram with its count, plus the distinct n-grams
/// in order of first occurrence.
///
/// Sums over n-grams follow `order`, never hash order, so floating-point results are
/// reproducible bit for bit and independent of token ids (Python's `Counter` iterates in
/// the same first-occurrence order).
#[derive(Debug, Clone)]
pub struct NgramCounts<'a, T> {
    /// Count of every distinct n-gram.
    pub counts: HashMap<&'a [T], u64>,
    /// Distinct n-grams, first occurrence first.
    pub order: Vec<&'a [T]>,
}

impl<'a, T: Eq + Hash> NgramCounts<'a, T> {
    /// Count of `g` (0 when absent).
    pub fn get(&self, g: &[T]) -> u64 {
        self.counts.get(g).copied().unwrap_or(0)
    }

    /// Whether `g` occurs.
    pub fn contains(&self, g: &[T]) -> bool {
        self.counts.contains_key(g)
    }

    /// Distinct n-grams with their counts, in first-occurrence order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [T], u64)> + '_ {
        self.order.iter().map(|g| (*g, self.counts[g]))
    }

    /// Number of distinct n-grams.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether there is no n-gram.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Adds `count` occurrences of `g`.
    pub fn add(&mut self, g: &'a [T], count: u64) {
        match self.counts.get_mut(g) {
            Some(c) => *c += count,
            None => {
                self.counts.insert(g, count);
                self.order.push(g);
            }
        }
    }

    /// An empty multiset.
    pub fn new() -> Self {
        NgramCounts {
            counts: HashMap::new(),
            order: Vec::new(),
        }
    }
}

impl<'a, T: Eq + Hash> Default for NgramCounts<'a, T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Counts the n-grams of order `n` in `tokens`.
pub fn count_ngrams<T: Eq + Hash>(tokens: &[T], n: usize) -> NgramCounts<'_, T> {
    count_region_ngrams(std::slice::from_ref(&tokens), n)
}

/// Counts the n-grams of order `n` inside each region; no n-gram spans two regions.
pub fn count_region_ngrams<'a, T: Eq + Hash>(regions: &[&'a [T]], n: usize) -> NgramCounts<'a, T> {
    let mut counts = NgramCounts::new();
    if n == 0 {
        return counts;
    }
    for region in regions {
        if region.len() < n {
            continue;
        }
        for window in region.windows(n) {
            counts.add(window, 1);
        }
    }
    counts
}

/// Number of n-grams of order `n` in `len` tokens (`max(len − n + 1, 0)`).
pub fn ngram_total(len: usize, n: usize) -> u64 {
    (len + 1).saturating_sub(n) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_do_not_share_ngrams() {
        let a = ["x", "y"];
        let b = ["z"];
        let counts = count_region_ngrams(&[&a[..], &b[..]], 2);
        assert_eq!(counts.len(), 1);
        assert_eq!(counts.get(&["x", "y"][..]), 1);
        assert_eq!(ngram_total(3, 4), 0);
        assert_eq!(ngram_total(5, 2), 4);
    }
}
