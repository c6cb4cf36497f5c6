//! Inclusive integer intervals per file: ContextBench's line and byte sets.

use std::collections::BTreeMap;

/// An inclusive interval `[start, end]`.
pub type Interval = (i64, i64);

/// Sorted, merged intervals per file.
pub type IntervalMap = BTreeMap<String, Vec<Interval>>;

/// Sorts and merges intervals; adjacent intervals merge (`next.start <= last.end + 1`).
pub fn merge(mut v: Vec<Interval>) -> Vec<Interval> {
    v.sort_unstable();
    let mut out: Vec<Interval> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 + 1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Σ (end − start + 1) of merged intervals.
pub fn size(v: &[Interval]) -> u64 {
    v.iter().map(|(s, e)| (e - s + 1).max(0) as u64).sum()
}

/// Overlap size of two merged interval lists.
pub fn overlap(a: &[Interval], b: &[Interval]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0u64);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo <= hi {
            total += (hi - lo + 1) as u64;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

/// Total size of a map.
pub fn map_size(m: &IntervalMap) -> u64 {
    m.values().map(|v| size(v)).sum()
}

/// Overlap of two maps, file by file.
pub fn map_overlap(a: &IntervalMap, b: &IntervalMap) -> u64 {
    a.iter()
        .filter_map(|(f, v)| b.get(f).map(|w| overlap(v, w)))
        .sum()
}

/// Union of two maps (merged).
pub fn map_union(a: &IntervalMap, b: &IntervalMap) -> IntervalMap {
    let mut out = a.clone();
    for (f, v) in b {
        let e = out.entry(f.clone()).or_default();
        e.extend_from_slice(v);
        *e = merge(std::mem::take(e));
    }
    out
}

/// Builds a merged map from `(file, interval)` pairs.
pub fn map_from(pairs: impl IntoIterator<Item = (String, Interval)>) -> IntervalMap {
    let mut m: IntervalMap = BTreeMap::new();
    for (f, iv) in pairs {
        m.entry(f).or_default().push(iv);
    }
    for v in m.values_mut() {
        *v = merge(std::mem::take(v));
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_and_overlap() {
        assert_eq!(merge(vec![(8, 12), (1, 6), (7, 7)]), vec![(1, 12)]);
        assert_eq!(merge(vec![(1, 3), (5, 6)]), vec![(1, 3), (5, 6)]);
        assert_eq!(overlap(&[(1, 6)], &[(4, 5), (9, 11)]), 2);
        assert_eq!(size(&[(1, 400)]), 400);
    }
}
