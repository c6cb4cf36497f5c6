//! Multiset agreement: true/false positives and false negatives between an expected and
//! an actual bag, and the precision, recall and F1 Zed's metrics derive from them (0 for
//! an empty denominator).

use std::collections::HashMap;
use std::hash::Hash;

/// Counts of agreement between two bags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BagMatch {
    /// Items in both bags (per item, the smaller count).
    pub tp: usize,
    /// Items the actual bag has beyond the expected one.
    pub fp: usize,
    /// Items the expected bag has beyond the actual one.
    pub fn_: usize,
}

impl BagMatch {
    /// Compares two bags given as item → count.
    pub fn of<K: Eq + Hash>(expected: &HashMap<K, usize>, actual: &HashMap<K, usize>) -> BagMatch {
        let mut m = BagMatch::default();
        for (item, &e) in expected {
            let a = actual.get(item).copied().unwrap_or(0);
            m.tp += e.min(a);
            m.fp += a.saturating_sub(e);
            m.fn_ += e.saturating_sub(a);
        }
        m.fp += actual
            .iter()
            .filter(|(item, _)| !expected.contains_key(*item))
            .map(|(_, &a)| a)
            .sum::<usize>();
        m
    }

    /// TP / (TP + FP), 0 when both are 0.
    pub fn precision(&self) -> f64 {
        ratio(self.tp, self.tp + self.fp)
    }

    /// TP / (TP + FN), 0 when both are 0.
    pub fn recall(&self) -> f64 {
        ratio(self.tp, self.tp + self.fn_)
    }

    /// The harmonic mean of precision and recall, 0 when both are 0.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 {
            0.0
        } else {
            2.0 * p * r / (p + r)
        }
    }
}

fn ratio(num: usize, den: usize) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_per_item_minima_and_excesses() {
        let e = HashMap::from([("a", 3), ("b", 1)]);
        let a = HashMap::from([("a", 2), ("c", 2)]);
        let m = BagMatch::of(&e, &a);
        assert_eq!((m.tp, m.fp, m.fn_), (2, 2, 2));
        assert_eq!(m.precision(), 0.5);
        assert_eq!(BagMatch::default().f1(), 0.0);
    }
}
