//! N-gram multisets over token slices, optionally confined to regions.
//!
//! N-grams are slices of the token sequence (never space-joined strings), so tokens that
//! contain spaces — ES-Line tokens do — cannot collide.

use std::collections::HashMap;
use std::hash::Hash;

/// A multiset of n-grams: each distinct n-gram with its count.
pub type NgramCounts<'a, T> = HashMap<&'a [T], u64>;

/// Counts the n-grams of order `n` in `tokens`.
pub fn count_ngrams<T: Eq + Hash>(tokens: &[T], n: usize) -> NgramCounts<'_, T> {
    count_region_ngrams(std::slice::from_ref(&tokens), n)
}

/// Counts the n-grams of order `n` inside each region; no n-gram spans two regions.
pub fn count_region_ngrams<'a, T: Eq + Hash>(regions: &[&'a [T]], n: usize) -> NgramCounts<'a, T> {
    let mut counts = HashMap::new();
    if n == 0 {
        return counts;
    }
    for region in regions {
        if region.len() < n {
            continue;
        }
        for window in region.windows(n) {
            *counts.entry(window).or_insert(0) += 1;
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
        assert_eq!(counts[&["x", "y"][..]], 1);
        assert_eq!(ngram_total(3, 4), 0);
        assert_eq!(ngram_total(5, 2), 4);
    }
}
