//! The figures of one answer to a completion task (exact match, edit similarity,
//! ES-Line/ES-Token, BLEU-4, SARI and Codev-Bench's "stopped at the right point"), and
//! the statistics over many: pass@k (the unbiased estimator), Pearson r with a Fisher-z
//! interval.
//!
//! Pure: texts in, numbers out. Every text figure compares whole files, as the
//! Excision Score paper does for revisions: the origin is the file with the hole
//! empty (`prefix` + the file's real rest), the reference the file with the ground truth, the
//! prediction the file with the answer. Exact match and edit similarity compare the
//! hole's texts alone (what Codev-Bench and HumanEvo report).

use crate::core::metrics::bleu::historian_bleu;
use crate::core::metrics::excision::{EsGranularity, ExcisionConfig, excision_score_text};
use crate::core::metrics::sari::{SariConfig, SariVariant, sari};
use crate::core::metrics::similarity::{exact_match, normalized_edit_similarity};
use crate::core::syntax::Language;

use super::{Scenario, Task};

/// The text figures of one answer (pass/fail comes from running the tests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerScores {
    /// The answer equals the ground truth (line endings and trailing spaces normalised).
    pub exact: bool,
    /// Normalised edit similarity of answer and ground truth, 0–1.
    pub edit_similarity: f64,
    /// ES-Line of the file with the answer, 0–1.
    pub es_line: f64,
    /// ES-Token of the file with the answer, 0–1.
    pub es_token: f64,
    /// BLEU-4 (Historian's smoothed), answer vs ground truth, 0–100.
    pub bleu: f64,
    /// SARI (cocoxu's `orig`, whitespace words) of the file with the answer, 0–1.
    pub sari: f64,
    /// Codev-Bench's "stopped at the right point" ([`stopped_at_right_point`]);
    /// `None` outside the block scenarios.
    pub stopped: Option<bool>,
}

/// The figures of `answer` to `task`.
pub fn score_answer(task: &Task, answer: &str) -> AnswerScores {
    let truth = task.ground_truth.as_str();
    let suffix = super::execute::real_suffix(task);
    let origin = format!("{}{suffix}", task.prefix);
    let reference = format!("{}{truth}{suffix}", task.prefix);
    let prediction = format!("{}{answer}{suffix}", task.prefix);
    let language = Language::from_name(&task.language);
    let config = ExcisionConfig::default();
    let es = |granularity| {
        excision_score_text(
            &origin,
            &reference,
            &prediction,
            granularity,
            language,
            &config,
        )
        .score
    };
    let words = |s: &str| -> Vec<String> { s.split_whitespace().map(str::to_owned).collect() };
    let sari_score = sari(
        &words(&origin),
        &words(&prediction),
        &[words(&reference)],
        &SariConfig::new(SariVariant::Orig),
    )
    .sari;
    AnswerScores {
        exact: exact_match(answer, truth),
        edit_similarity: normalized_edit_similarity(answer, truth),
        es_line: es(EsGranularity::Line),
        es_token: es(EsGranularity::Token),
        bleu: historian_bleu(answer, truth),
        sari: sari_score,
        stopped: is_block(task.scenario).then(|| stopped_at_right_point(answer, truth)),
    }
}

/// Whether Codev-Bench's block rule applies: full block, inner block and RAG tasks.
pub fn is_block(scenario: Scenario) -> bool {
    matches!(
        scenario,
        Scenario::FullBlock | Scenario::InnerBlock | Scenario::Rag
    )
}

/// Codev-Bench's "stopped at the right point", made exact (docs/tasks.md): with the
/// non-blank lines of each text compared without surrounding whitespace, an answer to
/// an empty ground truth stops right when it has no non-blank line (it saw that the
/// block was complete); otherwise when it has as many non-blank lines as the ground
/// truth and its last one equals the ground truth's last one (it ended where the block
/// ends: neither cut short nor running on into the suffix).
pub fn stopped_at_right_point(answer: &str, truth: &str) -> bool {
    let lines = |s: &str| -> Vec<String> {
        s.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let (a, t) = (lines(answer), lines(truth));
    match t.last() {
        None => a.is_empty(),
        Some(last) => a.len() == t.len() && a.last() == Some(last),
    }
}

/// The unbiased pass@k estimator of Chen et al. (2021) for `n` samples of which `c`
/// passed: `1 − C(n−c, k) / C(n, k)`, computed as a product to stay exact in floats.
/// `None` when `k` is 0 or exceeds `n`.
pub fn pass_at_k(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    let mut fail = 1.0;
    for i in (n - c + 1)..=n {
        fail *= 1.0 - k as f64 / i as f64;
    }
    Some(1.0 - fail)
}

/// Pearson's r of two equally long series, with its 95 % interval by Fisher's z.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correlation {
    /// Pairs.
    pub n: usize,
    /// Pearson's r; `None` when a series is constant or n < 2.
    pub r: Option<f64>,
    /// 95 % interval `tanh(atanh(r) ± 1.96 / √(n − 3))`; `None` when n ≤ 3 or r is ±1 or undefined.
    pub interval: Option<(f64, f64)>,
}

/// Pearson's r of `xs` and `ys` (paired by position) and its Fisher-z 95 % interval.
pub fn pearson(xs: &[f64], ys: &[f64]) -> Correlation {
    let n = xs.len().min(ys.len());
    let undefined = Correlation {
        n,
        r: None,
        interval: None,
    };
    if n < 2 {
        return undefined;
    }
    let mean = |v: &[f64]| v[..n].iter().sum::<f64>() / n as f64;
    let (mx, my) = (mean(xs), mean(ys));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in xs[..n].iter().zip(&ys[..n]) {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx == 0.0 || syy == 0.0 {
        return undefined;
    }
    let r = (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let interval = (n > 3 && r.abs() < 1.0).then(|| {
        let z = r.atanh();
        let half = 1.96 / ((n - 3) as f64).sqrt();
        ((z - half).tanh(), (z + half).tanh())
    });
    Correlation {
        n,
        r: Some(r),
        interval,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_matches_the_closed_form() {
        // n = 5, c = 2, k = 2: 1 - C(3,2)/C(5,2) = 1 - 3/10.
        assert!((pass_at_k(5, 2, 2).unwrap() - 0.7).abs() < 1e-12);
        assert_eq!(pass_at_k(5, 0, 1), Some(0.0));
        assert_eq!(pass_at_k(5, 5, 1), Some(1.0));
        // n = 3, c = 1, k = 1: c / n.
        assert!((pass_at_k(3, 1, 1).unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(pass_at_k(3, 1, 4), None);
    }

    #[test]
    fn stopping_rule() {
        assert!(stopped_at_right_point("", "  \n"));
        assert!(!stopped_at_right_point("x = 1\n", ""));
        assert!(stopped_at_right_point(
            "  y = 2\n  return y\n",
            "  y = 3\n  return y\n\n"
        ));
        assert!(!stopped_at_right_point(
            "  return y\n  z()\n",
            "  return y\n"
        ));
        assert!(!stopped_at_right_point(
            "  y = 2\n",
            "  y = 2\n  return y\n"
        ));
    }

    #[test]
    fn pearson_of_a_line_is_one() {
        let c = pearson(&[1.0, 2.0, 3.0, 4.0], &[2.0, 4.0, 6.0, 8.0]);
        assert_eq!(c.r, Some(1.0));
        assert_eq!(c.interval, None);
        let c = pearson(&[1.0, 1.0], &[0.0, 1.0]);
        assert_eq!(c.r, None);
    }
}
