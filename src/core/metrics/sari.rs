//! SARI (Xu et al. 2016) over token slices, in every convention the shared vectors hold.
//!
//! The core works on *regions*: each sequence is a list of token runs and n-grams are
//! formed inside each run only. Plain SARI passes one region per sequence; the Excision
//! Score passes the divergent regions left after excising the anchor.
//!
//! Conventions (see `docs/metrics.md` §SARI for the table):
//! - [`SariVariant::Orig`]: cocoxu `SARI.py` — per-distinct-gram keep precision and recall,
//!   deletion good = `(S−C)−R`, 0/0 = 0 (the paper's footnote). The default.
//! - [`SariVariant::Hf`]: Hugging Face `evaluate` — keep recall Σgood/Σall, 0/0 = 1.
//! - [`SariVariant::Skip`]: HF counting, but an order whose denominators are all zero is
//!   left out of its operation's mean (nextedit's proposal; the ES default).
//! - [`SariVariant::Easse`]: EASSE sentence SARI — Σ/Σ everywhere, deletion good =
//!   `min(S−C, S−R)`, 0/0 = 0, F1 needs both p and r positive.
//! - [`SariVariant::T2t`]: tensor2tensor `get_sari_score` — binary counts, references
//!   weighted by the fraction of non-empty references containing the n-gram, 0/0 = 1.

use std::collections::{HashMap, HashSet};
use std::hash::Hash;

use super::ngram::{NgramCounts, count_region_ngrams};
use crate::core::metrics::statistics::mean;

/// Which released implementation's conventions SARI follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SariVariant {
    /// cocoxu `SARI.py` (the paper's code; 0/0 = 0).
    Orig,
    /// Hugging Face `evaluate` `sari` (0/0 = 1, micro keep recall).
    Hf,
    /// HF counting with undefined orders skipped instead of scored 0 or 1.
    Skip,
    /// EASSE `corpus_sari` on one sentence, deletion precision.
    Easse,
    /// tensor2tensor `sari_hook.get_sari_score`.
    T2t,
}

impl SariVariant {
    /// Every variant, in documentation order.
    pub const ALL: [SariVariant; 5] = [
        SariVariant::Orig,
        SariVariant::Hf,
        SariVariant::Skip,
        SariVariant::Easse,
        SariVariant::T2t,
    ];

    /// The variant's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            SariVariant::Orig => "orig",
            SariVariant::Hf => "hf",
            SariVariant::Skip => "skip",
            SariVariant::Easse => "easse",
            SariVariant::T2t => "t2t",
        }
    }

    /// Parses [`SariVariant::name`].
    pub fn from_name(name: &str) -> Option<SariVariant> {
        SariVariant::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// How the "good deletions" of an n-gram are counted (Orig, Hf and Skip only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeletionGood {
    /// `(S·r − C·r) − Rsum`, positive part (cocoxu, HF).
    Difference,
    /// `min(S·r − C·r, S·r − Rsum)`, positive part (paper, EASSE): identical outputs score 1.
    Minimum,
}

/// SARI settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SariConfig {
    /// The convention.
    pub variant: SariVariant,
    /// Deletion counting for Orig/Hf/Skip; EASSE and t2t always use their own minimum.
    pub deletion_good: DeletionGood,
    /// Highest n-gram order (4 everywhere in the literature).
    pub max_n: usize,
}

impl SariConfig {
    /// The variant with its own deletion rule and n = 1..4.
    pub fn new(variant: SariVariant) -> SariConfig {
        SariConfig {
            variant,
            deletion_good: DeletionGood::Difference,
            max_n: 4,
        }
    }
}

impl Default for SariConfig {
    /// The original implementation's conventions (0/0 = 0).
    fn default() -> Self {
        SariConfig::new(SariVariant::Orig)
    }
}

/// A SARI score and its three components, each on the 0–1 scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SariScore {
    /// `(keep + deletion + addition) / 3` over the defined components.
    pub sari: f64,
    /// Mean keep F1 over orders; `None` when undefined at every order (Skip only).
    pub keep: Option<f64>,
    /// Mean deletion precision over orders; `None` when undefined (Skip only).
    pub deletion: Option<f64>,
    /// Mean addition F1 over orders; `None` when undefined (Skip only).
    pub addition: Option<f64>,
}

/// SARI of `prediction` for `source` against `references` (one region each).
pub fn sari<T: Eq + Hash, R: AsRef<[T]>>(
    source: &[T],
    prediction: &[T],
    references: &[R],
    config: &SariConfig,
) -> SariScore {
    let refs: Vec<Vec<&[T]>> = references.iter().map(|r| vec![r.as_ref()]).collect();
    sari_regions(&[source], &[prediction], &refs, config)
}

/// SARI where each sequence is a list of regions and no n-gram spans two regions.
///
/// With no references every component is 0 (1 for Skip with nothing to score).
pub fn sari_regions<T: Eq + Hash>(
    source: &[&[T]],
    prediction: &[&[T]],
    references: &[Vec<&[T]>],
    config: &SariConfig,
) -> SariScore {
    let mut keep = Vec::new();
    let mut del = Vec::new();
    let mut add = Vec::new();
    for n in 1..=config.max_n {
        let s = count_region_ngrams(source, n);
        let c = count_region_ngrams(prediction, n);
        let refs: Vec<NgramCounts<'_, T>> = references
            .iter()
            .map(|r| count_region_ngrams(r, n))
            .collect();
        let (k, d, a) = match config.variant {
            SariVariant::Easse => easse_order(&s, &c, &refs),
            SariVariant::T2t => t2t_order(&s, &c, &refs),
            _ => counted_order(&s, &c, &refs, config),
        };
        keep.push(k);
        del.push(d);
        add.push(a);
    }
    combine(&keep, &del, &add)
}

fn combine(keep: &[Option<f64>], del: &[Option<f64>], add: &[Option<f64>]) -> SariScore {
    // Orders are averaged with a fixed divisor when every order is defined (all variants
    // except Skip); summing first then dividing matches the Python reference bit for bit.
    let keep = mean(keep.iter().flatten());
    let deletion = mean(del.iter().flatten());
    let addition = mean(add.iter().flatten());
    let parts: Vec<f64> = [keep, deletion, addition].into_iter().flatten().collect();
    let sari = if parts.is_empty() {
        1.0
    } else {
        parts.iter().sum::<f64>() / parts.len() as f64
    };
    SariScore {
        sari,
        keep,
        deletion,
        addition,
    }
}

/// F1 of two optional rates: undefined only when both are; a missing one counts as 0.
fn f1(p: Option<f64>, r: Option<f64>) -> Option<f64> {
    if p.is_none() && r.is_none() {
        return None;
    }
    let p = p.unwrap_or(0.0);
    let r = r.unwrap_or(0.0);
    Some(if p > 0.0 || r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    })
}

/// One order under the cocoxu / HF / Skip counting.
fn counted_order<T: Eq + Hash>(
    s: &NgramCounts<'_, T>,
    c: &NgramCounts<'_, T>,
    refs: &[NgramCounts<'_, T>],
    config: &SariConfig,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let r = refs.len() as u64;
    let mut rsum: NgramCounts<'_, T> = NgramCounts::new();
    for rc in refs {
        for (g, v) in rc.iter() {
            rsum.add(g, v);
        }
    }
    let zero = match config.variant {
        SariVariant::Hf => Some(1.0),
        SariVariant::Skip => None,
        _ => Some(0.0),
    };

    // KEEP: kept = min(S·r, C·r); good = min(kept, Rsum); all = min(S·r, Rsum).
    let (mut kp_sum, mut kept_n) = (0.0, 0usize);
    let (mut kr_sum, mut all_n) = (0.0, 0usize);
    let (mut good_total, mut all_total) = (0u64, 0u64);
    // DELETION: dsys = S·r − C·r; good per DeletionGood.
    let (mut d_sum, mut dsys_n) = (0.0, 0usize);
    for (g, sv) in s.iter() {
        let sr = sv * r;
        let cr = c.get(g) * r;
        let rs = rsum.get(g);
        let kept = sr.min(cr);
        let all = sr.min(rs);
        let good = kept.min(rs);
        if kept > 0 {
            kept_n += 1;
            kp_sum += good as f64 / kept as f64;
        }
        if all > 0 {
            all_n += 1;
            kr_sum += good as f64 / all as f64;
            all_total += all;
            good_total += good;
        }
        let dsys = sr.saturating_sub(cr);
        if dsys > 0 {
            dsys_n += 1;
            let dgood = match config.deletion_good {
                DeletionGood::Difference => dsys.saturating_sub(rs),
                DeletionGood::Minimum => dsys.min(sr.saturating_sub(rs)),
            };
            d_sum += dgood as f64 / dsys as f64;
        }
    }
    let kp = if kept_n > 0 {
        Some(kp_sum / kept_n as f64)
    } else {
        zero
    };
    let kr = match config.variant {
        SariVariant::Orig => Some(if all_n > 0 {
            kr_sum / all_n as f64
        } else {
            0.0
        }),
        _ => {
            if all_total > 0 {
                Some(good_total as f64 / all_total as f64)
            } else {
                zero
            }
        }
    };
    let keep = f1(kp, kr);
    let del = if dsys_n > 0 {
        Some(d_sum / dsys_n as f64)
    } else {
        zero
    };

    // ADDITION (sets): sys = C − S, all = R − S, good = sys ∩ R.
    let add_sys = c.order.iter().filter(|g| !s.contains(g)).count();
    let add_good = c
        .order
        .iter()
        .filter(|g| !s.contains(g) && rsum.contains(g))
        .count();
    let add_all = rsum.order.iter().filter(|g| !s.contains(g)).count();
    let ap = if add_sys > 0 {
        Some(add_good as f64 / add_sys as f64)
    } else {
        zero
    };
    let ar = if add_all > 0 {
        Some(add_good as f64 / add_all as f64)
    } else {
        zero
    };
    (keep, del, f1(ap, ar))
}

/// Precision, recall and F1 with 0/0 = 0 and F1 only when both are positive (EASSE).
fn easse_prf(correct: f64, sys: f64, reference: f64) -> (f64, f64) {
    let p = if sys > 0.0 { correct / sys } else { 0.0 };
    let r = if reference > 0.0 {
        correct / reference
    } else {
        0.0
    };
    let f = if p > 0.0 && r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    };
    (p, f)
}

fn easse_order<T: Eq + Hash>(
    s: &NgramCounts<'_, T>,
    c: &NgramCounts<'_, T>,
    refs: &[NgramCounts<'_, T>],
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let r = refs.len() as u64;
    let mut rsum: NgramCounts<'_, T> = NgramCounts::new();
    for rc in refs {
        for (g, v) in rc.iter() {
            rsum.add(g, v);
        }
    }
    let (mut k_c, mut k_s, mut k_r) = (0u64, 0u64, 0u64);
    let (mut d_c, mut d_s, mut d_r) = (0u64, 0u64, 0u64);
    for (g, sv) in s.iter() {
        let sr = sv * r;
        let cr = c.get(g) * r;
        let rs = rsum.get(g);
        let ks = sr.min(cr);
        let kr = sr.min(rs);
        k_s += ks;
        k_r += kr;
        k_c += ks.min(kr);
        let ds = sr.saturating_sub(cr);
        let dr = sr.saturating_sub(rs);
        d_s += ds;
        d_r += dr;
        d_c += ds.min(dr);
    }
    let add_sys: HashSet<&[T]> = c.order.iter().filter(|g| !s.contains(g)).copied().collect();
    let add_ref: HashSet<&[T]> = rsum
        .order
        .iter()
        .filter(|g| !s.contains(g))
        .copied()
        .collect();
    let a_c = add_sys.intersection(&add_ref).count();
    let keep = easse_prf(k_c as f64, k_s as f64, k_r as f64).1;
    let del = easse_prf(d_c as f64, d_s as f64, d_r as f64).0;
    let add = easse_prf(a_c as f64, add_sys.len() as f64, add_ref.len() as f64).1;
    (Some(keep), Some(del), Some(add))
}

/// t2t `_get_fbeta_score`: 0/0 = 1 for precision and recall; beta 0 = precision.
fn t2t_fbeta(tp: f64, selected: f64, relevant: f64, precision_only: bool) -> f64 {
    let p = if selected > 0.0 { tp / selected } else { 1.0 };
    if precision_only {
        return p;
    }
    let r = if relevant > 0.0 { tp / relevant } else { 1.0 };
    if p > 0.0 && r > 0.0 {
        2.0 * p * r / (p + r)
    } else {
        0.0
    }
}

fn t2t_order<T: Eq + Hash>(
    s: &NgramCounts<'_, T>,
    c: &NgramCounts<'_, T>,
    refs: &[NgramCounts<'_, T>],
) -> (Option<f64>, Option<f64>, Option<f64>) {
    // Binary counts; weighted target = fraction of non-empty references containing g.
    let nonempty = refs.iter().filter(|r| !r.is_empty()).count();
    let mut weighted: HashMap<&[T], f64> = HashMap::new();
    for rc in refs.iter().filter(|r| !r.is_empty()) {
        for g in rc.order.iter() {
            *weighted.entry(*g).or_insert(0.0) += 1.0;
        }
    }
    for v in weighted.values_mut() {
        *v /= nonempty as f64;
    }
    let w = |g: &[T]| weighted.get(g).copied().unwrap_or(0.0);
    // keep: S&C vs S&W (Counter & = min, positive only)
    let (mut k_tp, mut k_sel, mut k_rel) = (0.0, 0.0, 0.0);
    let (mut d_tp, mut d_sel, mut d_rel) = (0.0, 0.0, 0.0);
    for g in s.order.iter().copied() {
        let in_c = if c.contains(g) { 1.0 } else { 0.0 };
        let wg = w(g);
        let sc = in_c; // min(1, in_c)
        let st = f64::min(1.0, wg);
        k_sel += sc;
        k_rel += st;
        k_tp += f64::min(sc, st);
        let snp = 1.0 - in_c;
        let snt = 1.0 - wg;
        d_sel += snp;
        d_rel += snt.max(0.0);
        d_tp += f64::min(snp, snt).max(0.0);
    }
    let added: Vec<&[T]> = c.order.iter().filter(|g| !s.contains(g)).copied().collect();
    let a_sel = added.len() as f64;
    let a_tp = added.iter().filter(|g| weighted.contains_key(*g)).count() as f64;
    let a_rel = weighted.keys().filter(|g| !s.contains(g)).count() as f64;
    (
        Some(t2t_fbeta(k_tp, k_sel, k_rel, false)),
        Some(t2t_fbeta(d_tp, d_sel, d_rel, true)),
        Some(t2t_fbeta(a_tp, a_sel, a_rel, false)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<&str> {
        s.split(' ').collect()
    }

    #[test]
    fn identity_conventions_differ_as_documented() {
        let a = toks("a b c d");
        let orig = sari(
            &a,
            &a,
            std::slice::from_ref(&a),
            &SariConfig::new(SariVariant::Orig),
        );
        assert_eq!(orig.sari, 1.0 / 3.0);
        let hf = sari(
            &a,
            &a,
            std::slice::from_ref(&a),
            &SariConfig::new(SariVariant::Hf),
        );
        assert_eq!(hf.sari, 1.0);
        let skip = sari(
            &a,
            &a,
            std::slice::from_ref(&a),
            &SariConfig::new(SariVariant::Skip),
        );
        assert_eq!(skip.sari, 1.0);
        assert_eq!(skip.deletion, None);
    }
}
