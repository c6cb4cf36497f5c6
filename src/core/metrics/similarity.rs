//! Pairwise similarity measures compared in the Excision Score paper: exact match,
//! normalised edit similarity and chrF.

use std::collections::HashMap;

/// Exact match after normalising line endings and trailing whitespace of every line.
///
/// Whitespace-normalised, as Historian's bug 7 fix suggests: `"x = 1 \n"` equals `"x = 1"`.
pub fn exact_match(prediction: &str, reference: &str) -> bool {
    let norm = |s: &str| -> Vec<String> {
        let mut lines: Vec<String> = s.lines().map(|l| l.trim_end().to_owned()).collect();
        while lines.last().is_some_and(|l| l.is_empty()) {
            lines.pop();
        }
        lines
    };
    norm(prediction) == norm(reference)
}

/// Levenshtein distance over Unicode scalar values, O(n·m) time, O(min) memory.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (a, b) = (&a[prefix..], &b[prefix..]);
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[..a.len() - suffix], &b[..b.len() - suffix]);
    let (a, b) = if a.len() < b.len() { (b, a) } else { (a, b) };
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, x) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = if x == y {
                diag
            } else {
                1 + diag.min(up).min(row[j])
            };
            diag = up;
        }
    }
    row[b.len()]
}

/// Normalised edit similarity `1 − ED(a, b) / max(|a|, |b|)` in characters; 1 for two empty strings.
pub fn normalized_edit_similarity(prediction: &str, reference: &str) -> f64 {
    let longest = prediction.chars().count().max(reference.chars().count());
    if longest == 0 {
        return 1.0;
    }
    1.0 - levenshtein(prediction, reference) as f64 / longest as f64
}

/// Sentence chrF as sacrebleu 2.x computes it by default, on the 0–100 scale.
///
/// Character n-grams of orders 1..=6 with whitespace removed, β = 2, precision and
/// recall averaged over the orders where both sides have n-grams, then F-β.
pub fn chrf(prediction: &str, reference: &str) -> f64 {
    const ORDER: usize = 6;
    const BETA: f64 = 2.0;
    let strip = |s: &str| -> Vec<char> { s.chars().filter(|c| !c.is_whitespace()).collect() };
    let hyp = strip(prediction);
    let refr = strip(reference);
    let factor = BETA * BETA;
    let (mut avg_p, mut avg_r, mut eff) = (0.0, 0.0, 0usize);
    for n in 1..=ORDER {
        let grams = |v: &[char]| -> HashMap<Vec<char>, usize> {
            let mut m = HashMap::new();
            if v.len() >= n {
                for w in v.windows(n) {
                    *m.entry(w.to_vec()).or_insert(0) += 1;
                }
            }
            m
        };
        let h = grams(&hyp);
        let r = grams(&refr);
        let n_hyp: usize = h.values().sum();
        let n_ref: usize = r.values().sum();
        let n_match: usize = h
            .iter()
            .map(|(g, c)| (*c).min(r.get(g).copied().unwrap_or(0)))
            .sum();
        if n_hyp > 0 && n_ref > 0 {
            avg_p += n_match as f64 / n_hyp as f64;
            avg_r += n_match as f64 / n_ref as f64;
            eff += 1;
        }
    }
    if eff == 0 {
        return 0.0;
    }
    avg_p /= eff as f64;
    avg_r /= eff as f64;
    if avg_p + avg_r == 0.0 {
        return 0.0;
    }
    100.0 * (1.0 + factor) * avg_p * avg_r / (factor * avg_p + avg_r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_similarity() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(normalized_edit_similarity("", ""), 1.0);
        assert_eq!(normalized_edit_similarity("abcd", "abce"), 0.75);
        assert!(exact_match("x = 1  \n\n", "x = 1"));
        assert!(!exact_match("x = 1", "x = 2"));
        assert_eq!(chrf("abc", "abc"), 100.0);
        assert_eq!(chrf("abc", "xyz"), 0.0);
    }

    /// Values printed by sacrebleu 2.6 `CHRF().sentence_score(h, [r]).score`.
    #[test]
    fn chrf_matches_sacrebleu() {
        let cases = [
            ("return a + b", "return a - b", 68.66402116402116),
            (
                "def f(x):\n    return x",
                "def f(y):\n  return y",
                61.37612387612387,
            ),
            (
                "The cat sat on the mat.",
                "The cat is on the mat.",
                67.17273492330233,
            ),
            ("a", "abcdefgh", 15.151515151515152),
            ("", "abc", 0.0),
        ];
        for (h, r, want) in cases {
            let got = chrf(h, r);
            assert!((got - want).abs() < 1e-9, "{h:?} vs {r:?}: {got} != {want}");
        }
    }
}
