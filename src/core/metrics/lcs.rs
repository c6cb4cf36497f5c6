//! Longest common subsequence in O(n·m) time and O(n + m) memory (Hirschberg).
//!
//! The shared prefix and suffix are matched first (they belong to some LCS and cost
//! linear time), then Hirschberg's divide and conquer aligns the middle.
//!
//! Tie-breaking (pinned by tests, documented in `docs/metrics.md`): the split column of
//! each Hirschberg step is the *leftmost* column maximising forward + backward LCS
//! lengths, and a one-token side matches the *first* equal token of the other side. The
//! result is deterministic: equal inputs give equal alignments.

/// The index pairs `(i, j)` of one longest common subsequence, increasing in both.
pub fn lcs_pairs<T: Eq>(a: &[T], b: &[T]) -> Vec<(usize, usize)> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let a_rest = &a[prefix..];
    let b_rest = &b[prefix..];
    let suffix = a_rest
        .iter()
        .rev()
        .zip(b_rest.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let a_mid = &a_rest[..a_rest.len() - suffix];
    let b_mid = &b_rest[..b_rest.len() - suffix];
    let mut out: Vec<(usize, usize)> = (0..prefix).map(|i| (i, i)).collect();
    let mut fwd = vec![0u32; b_mid.len() + 1];
    let mut bwd = vec![0u32; b_mid.len() + 1];
    hirschberg(a_mid, b_mid, prefix, prefix, &mut out, &mut fwd, &mut bwd);
    let a_tail = a.len() - suffix;
    let b_tail = b.len() - suffix;
    out.extend((0..suffix).map(|k| (a_tail + k, b_tail + k)));
    out
}

/// The values of one LCS of `a` and `b` (see [`lcs_pairs`] for which one).
pub fn lcs<T: Eq + Clone>(a: &[T], b: &[T]) -> Vec<T> {
    lcs_pairs(a, b)
        .into_iter()
        .map(|(i, _)| a[i].clone())
        .collect()
}

/// Length of the LCS only, in O(min(n, m)) memory.
pub fn lcs_len<T: Eq>(a: &[T], b: &[T]) -> usize {
    let mut row = vec![0u32; b.len() + 1];
    forward_row(a, b, &mut row);
    row[b.len()] as usize
}

/// `row[j]` := LCS length of `a` and `b[..j]`.
fn forward_row<T: Eq>(a: &[T], b: &[T], row: &mut [u32]) {
    row.iter_mut().for_each(|x| *x = 0);
    for x in a {
        let mut diag = 0u32; // row_prev[j-1]
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y { diag + 1 } else { up.max(row[j]) };
            diag = up;
        }
    }
}

/// `row[j]` := LCS length of `a` and `b[j..]`.
fn backward_row<T: Eq>(a: &[T], b: &[T], row: &mut [u32]) {
    let m = b.len();
    row.iter_mut().for_each(|x| *x = 0);
    for x in a.iter().rev() {
        let mut diag = 0u32; // row_prev[j+1]
        for j in (0..m).rev() {
            let up = row[j];
            row[j] = if *x == b[j] {
                diag + 1
            } else {
                up.max(row[j + 1])
            };
            diag = up;
        }
    }
}

fn hirschberg<T: Eq>(
    a: &[T],
    b: &[T],
    a_off: usize,
    b_off: usize,
    out: &mut Vec<(usize, usize)>,
    fwd: &mut [u32],
    bwd: &mut [u32],
) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    if a.len() == 1 {
        if let Some(j) = b.iter().position(|y| *y == a[0]) {
            out.push((a_off, b_off + j));
        }
        return;
    }
    if b.len() == 1 {
        if let Some(i) = a.iter().position(|x| *x == b[0]) {
            out.push((a_off + i, b_off));
        }
        return;
    }
    let mid = a.len() / 2;
    let m = b.len();
    forward_row(&a[..mid], b, &mut fwd[..=m]);
    backward_row(&a[mid..], b, &mut bwd[..=m]);
    let mut best = 0usize;
    let mut best_val = 0u32;
    for k in 0..=m {
        let v = fwd[k] + bwd[k];
        // Strictly greater: the leftmost maximising column wins ties.
        if k == 0 || v > best_val {
            best_val = v;
            best = k;
        }
    }
    hirschberg(&a[..mid], &b[..best], a_off, b_off, out, fwd, bwd);
    hirschberg(
        &a[mid..],
        &b[best..],
        a_off + mid,
        b_off + best,
        out,
        fwd,
        bwd,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Quadratic-memory reference DP for the length.
    fn dp_len(a: &[u8], b: &[u8]) -> usize {
        let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
        for i in 0..a.len() {
            for j in 0..b.len() {
                t[i + 1][j + 1] = if a[i] == b[j] {
                    t[i][j] + 1
                } else {
                    t[i][j + 1].max(t[i + 1][j])
                };
            }
        }
        t[a.len()][b.len()]
    }

    #[test]
    fn pinned_tie_break() {
        // Two LCSs of length 1 ("a" or "b"); the leftmost split keeps the later one of a.
        let pairs = lcs_pairs(b"ab", b"ba");
        assert_eq!(pairs.len(), 1);
        assert_eq!(lcs(b"ab", b"ba"), b"b".to_vec());
        assert_eq!(lcs(b"abcbdab", b"bdcaba").len(), 4);
    }

    proptest! {
        #[test]
        fn pairs_form_a_longest_common_subsequence(
            a in proptest::collection::vec(0u8..4, 0..24),
            b in proptest::collection::vec(0u8..4, 0..24),
        ) {
            let pairs = lcs_pairs(&a, &b);
            prop_assert_eq!(pairs.len(), dp_len(&a, &b));
            prop_assert_eq!(lcs_len(&a, &b), pairs.len());
            for w in pairs.windows(2) {
                prop_assert!(w[0].0 < w[1].0 && w[0].1 < w[1].1);
            }
            for &(i, j) in &pairs {
                prop_assert_eq!(a[i], b[j]);
            }
        }
    }
}
