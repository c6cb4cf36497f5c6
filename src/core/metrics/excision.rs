//! Excision Score (Gruzinov et al., arXiv 2510.21537, §3.4).
//!
//! `ES(A, B; O) = SARI(source = O∖L, output = B∖L, reference = A∖L)` with
//! `L = LCS(LCS(O, A), LCS(O, B))`, O the original, A the reference (ground truth) and
//! B the hypothesis (prediction) — the paper's letters. After excising L every sequence
//! is a list of divergent regions and no n-gram spans two regions.
//!
//! Choices the paper leaves open, each fixed here and in `docs/metrics.md`:
//! 1. **0/0**: [`SariVariant::Skip`] — undefined SARI components are left out, all-undefined
//!    (A = B = O) scores 1. The only convention giving both "do-nothing = 0" and
//!    "identical = 1".
//! 2. **Deletion good**: [`DeletionGood::Minimum`] (the paper's `min(S−C, S−R)`), so B = A
//!    always scores 1.
//! 3. **Trim**: the longest prefix, then the longest suffix, common to O, A and B is
//!    removed before the LCS (exact invariance to shared context at the ends).
//! 4. **Anchor**: value-based nested LCS as the paper writes it; each LCS from
//!    [`lcs_pairs`] (Hirschberg, leftmost split).
//! 5. **Embedding** of L into O, A and B: greedy leftmost.
//! 6. Tokens: see [`es_line_tokens`] and [`crate::core::syntax::tokens`].

use std::collections::HashMap;
use std::hash::Hash;
use std::ops::Range;

use super::lcs::lcs_pairs;
use super::sari::{DeletionGood, SariConfig, SariScore, SariVariant, sari_regions};

/// Excision Score settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ExcisionConfig {
    /// The SARI applied to the divergent regions (default: Skip with `Minimum`).
    pub sari: SariConfig,
    /// Remove the prefix and suffix common to all three first (default: on).
    pub trim: bool,
}

impl Default for ExcisionConfig {
    fn default() -> Self {
        ExcisionConfig {
            sari: SariConfig {
                variant: SariVariant::Skip,
                deletion_good: DeletionGood::Minimum,
                max_n: 4,
            },
            trim: true,
        }
    }
}

/// The divergent regions of each sequence as token index ranges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DivergentRegions {
    /// Regions of O (indices into O).
    pub origin: Vec<Range<usize>>,
    /// Regions of A, the reference.
    pub reference: Vec<Range<usize>>,
    /// Regions of B, the prediction.
    pub prediction: Vec<Range<usize>>,
}

/// An Excision Score with its SARI components and the excision it was computed on.
#[derive(Debug, Clone, PartialEq)]
pub struct ExcisionScore {
    /// The score, 0–1.
    pub score: f64,
    /// The SARI components on the divergent regions.
    pub sari: SariScore,
    /// Length of the anchor L, in tokens (trimmed context included).
    pub anchor_len: usize,
    /// The divergent regions.
    pub regions: DivergentRegions,
}

/// ES-Line tokens: lines without their `\n` / `\r\n`; a final newline adds no empty line;
/// indentation and inner whitespace are kept.
pub fn es_line_tokens(text: &str) -> Vec<&str> {
    text.lines().collect()
}

/// Maps tokens to dense ids so the LCS compares integers.
fn intern<'a, T: Eq + Hash>(seqs: [&'a [T]; 3]) -> [Vec<u32>; 3] {
    let mut ids: HashMap<&'a T, u32> = HashMap::new();
    seqs.map(|s| {
        s.iter()
            .map(|t| {
                let next = ids.len() as u32;
                *ids.entry(t).or_insert(next)
            })
            .collect()
    })
}

/// Greedy leftmost embedding of `anchor` into `x`; returns the unmasked runs.
fn excise(x: &[u32], anchor: &[u32], offset: usize) -> Vec<Range<usize>> {
    let mut regions = Vec::new();
    let mut p = 0;
    let mut run_start: Option<usize> = None;
    for (i, t) in x.iter().enumerate() {
        if p < anchor.len() && *t == anchor[p] {
            p += 1;
            if let Some(s) = run_start.take() {
                regions.push(offset + s..offset + i);
            }
        } else {
            run_start.get_or_insert(i);
        }
    }
    if let Some(s) = run_start {
        regions.push(offset + s..offset + x.len());
    }
    debug_assert_eq!(
        p,
        anchor.len(),
        "the anchor is a subsequence of every input"
    );
    regions
}

/// Excision Score of prediction `b` against reference `a`, both revisions of origin `o`.
pub fn excision_score<T: Eq + Hash>(
    o: &[T],
    a: &[T],
    b: &[T],
    config: &ExcisionConfig,
) -> ExcisionScore {
    let [o_ids, a_ids, b_ids] = intern([o, a, b]);
    let (prefix, suffix) = if config.trim {
        common_ends(&o_ids, &a_ids, &b_ids)
    } else {
        (0, 0)
    };
    let om = &o_ids[prefix..o_ids.len() - suffix];
    let am = &a_ids[prefix..a_ids.len() - suffix];
    let bm = &b_ids[prefix..b_ids.len() - suffix];
    let loa: Vec<u32> = lcs_pairs(om, am).into_iter().map(|(i, _)| om[i]).collect();
    let lob: Vec<u32> = lcs_pairs(om, bm).into_iter().map(|(i, _)| om[i]).collect();
    let anchor: Vec<u32> = lcs_pairs(&loa, &lob)
        .into_iter()
        .map(|(i, _)| loa[i])
        .collect();
    let regions = DivergentRegions {
        origin: excise(om, &anchor, prefix),
        reference: excise(am, &anchor, prefix),
        prediction: excise(bm, &anchor, prefix),
    };
    let slices = |seq: &'_ [u32], rs: &[Range<usize>]| -> Vec<Vec<u32>> {
        rs.iter().map(|r| seq[r.clone()].to_vec()).collect()
    };
    let ro = slices(&o_ids, &regions.origin);
    let ra = slices(&a_ids, &regions.reference);
    let rb = slices(&b_ids, &regions.prediction);
    let ro_s: Vec<&[u32]> = ro.iter().map(Vec::as_slice).collect();
    let ra_s: Vec<&[u32]> = ra.iter().map(Vec::as_slice).collect();
    let rb_s: Vec<&[u32]> = rb.iter().map(Vec::as_slice).collect();
    let sari = sari_regions(&ro_s, &rb_s, &[ra_s], &config.sari);
    ExcisionScore {
        score: sari.sari,
        sari,
        anchor_len: prefix + suffix + anchor.len(),
        regions,
    }
}

/// Lengths of the longest prefix, then the longest suffix of the rest, common to all three.
fn common_ends(o: &[u32], a: &[u32], b: &[u32]) -> (usize, usize) {
    let prefix = o
        .iter()
        .zip(a)
        .zip(b)
        .take_while(|((x, y), z)| x == y && y == z)
        .count();
    let (o, a, b) = (&o[prefix..], &a[prefix..], &b[prefix..]);
    let suffix = o
        .iter()
        .rev()
        .zip(a.iter().rev())
        .zip(b.iter().rev())
        .take_while(|((x, y), z)| x == y && y == z)
        .count();
    (prefix, suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Vec<&str> {
        s.split_whitespace().collect()
    }

    fn es(o: &str, a: &str, b: &str) -> f64 {
        excision_score(&t(o), &t(a), &t(b), &ExcisionConfig::default()).score
    }

    #[test]
    fn reference_example_random_triple() {
        // metrics.md §5.5: A = B → 1 with skip.
        let o = "a e c e d e c d a e";
        let ab = "a e c x d e c a e";
        let r = excision_score(&t(o), &t(ab), &t(ab), &ExcisionConfig::default());
        assert_eq!(r.score, 1.0);
        assert_eq!(r.anchor_len, 8);
    }

    #[test]
    fn basic_properties() {
        assert_eq!(es("a b c", "a x c", "a x c"), 1.0);
        assert_eq!(es("a b c", "a x c", "a b c"), 0.0);
        assert_eq!(es("a b c", "a b c", "a b c"), 1.0);
        // Example 3: agree on deleting D, disagree on R's replacement.
        assert_eq!(es("d k r", "k ra", "k rb"), 0.5);
    }

    #[test]
    fn position_blindness_of_pure_moves() {
        // Documented limitation: when A only moves a token, the anchor excludes it from
        // O and A alike, so the do-nothing revision keeps "the same" n-gram and scores 1.
        assert_eq!(es("p m q", "p q m", "p m q"), 1.0);
        // Moving it elsewhere agrees on deleting it from its old place: partial credit.
        let moved = es("p m q", "p q m", "m p q");
        assert_eq!(moved, 2.0 / 3.0);
    }
}

fn slices<'t>(text: &'t str, ranges: &[Range<usize>]) -> Vec<&'t str> {
    ranges.iter().map(|r| &text[r.clone()]).collect()
}

/// What ES compares: lines or lexical tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EsGranularity {
    /// ES-Line: tokens are lines ([`es_line_tokens`]).
    Line,
    /// ES-Token: tree-sitter leaves, or lexical tokens without a grammar.
    Token,
}

/// Excision Score of three texts at `granularity`; `language` picks the ES-Token grammar.
pub fn excision_score_text(
    origin: &str,
    reference: &str,
    prediction: &str,
    granularity: EsGranularity,
    language: Option<crate::core::syntax::Language>,
    config: &ExcisionConfig,
) -> ExcisionScore {
    match granularity {
        EsGranularity::Line => excision_score(
            &es_line_tokens(origin),
            &es_line_tokens(reference),
            &es_line_tokens(prediction),
            config,
        ),
        EsGranularity::Token => match language {
            Some(language) => {
                // One full parse of O; A and B are parsed incrementally from it.
                let (o, ab) = crate::core::syntax::revision_leaf_ranges(
                    language,
                    origin,
                    &[reference, prediction],
                );
                excision_score(
                    &slices(origin, &o),
                    &slices(reference, &ab[0]),
                    &slices(prediction, &ab[1]),
                    config,
                )
            }
            None => {
                let tok = |s| crate::core::syntax::tokens(None, s);
                excision_score(&tok(origin), &tok(reference), &tok(prediction), config)
            }
        },
    }
}
