//! Agreement of a derived partial order with a human-annotated one.
//!
//! Every unordered pair of a commit's edits is one sample; an unlabelled pair is
//! "no relation". Reported per label (precision, recall), for related-vs-not
//! (precision, recall, F1) and as 4-way accuracy; per commit and over all pairs of
//! all commits (micro). Accuracy on the annotated pairs only is reported too,
//! because EditFlow's prompt tuning scored only the pairs its annotators listed.

use std::collections::BTreeMap;

use serde::Serialize;

use super::order::PairLabel;

fn slot(label: PairLabel) -> usize {
    match label {
        PairLabel::Bi => 0,
        PairLabel::LowFirst => 1,
        PairLabel::HighFirst => 2,
        PairLabel::None => 3,
    }
}

/// Counts of (gold, predicted) labels.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Confusion {
    /// `counts[gold][predicted]` in [`PairLabel::ALL`] order.
    pub counts: [[u64; 4]; 4],
}

/// A ratio that is `None` when its denominator is zero.
pub fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

impl Confusion {
    /// Adds one pair.
    pub fn add(&mut self, gold: PairLabel, predicted: PairLabel) {
        self.counts[slot(gold)][slot(predicted)] += 1;
    }

    /// Adds all counts of `other`.
    pub fn merge(&mut self, other: &Confusion) {
        for g in 0..4 {
            for p in 0..4 {
                self.counts[g][p] += other.counts[g][p];
            }
        }
    }

    /// Number of pairs.
    pub fn total(&self) -> u64 {
        self.counts.iter().flatten().sum()
    }

    /// Pairs whose predicted label equals the gold label.
    pub fn correct(&self) -> u64 {
        (0..4).map(|i| self.counts[i][i]).sum()
    }

    /// Pairs whose predicted label equals the gold label, over all pairs.
    pub fn accuracy(&self) -> Option<f64> {
        ratio(self.correct(), self.total())
    }

    /// Of the pairs predicted `label`, the share that are `label`.
    pub fn precision(&self, label: PairLabel) -> Option<f64> {
        let p = slot(label);
        ratio(self.counts[p][p], (0..4).map(|g| self.counts[g][p]).sum())
    }

    /// Of the pairs that are `label`, the share predicted `label`.
    pub fn recall(&self, label: PairLabel) -> Option<f64> {
        let g = slot(label);
        ratio(self.counts[g][g], self.counts[g].iter().sum())
    }

    /// (true positives, false positives, false negatives) of "related".
    pub fn related_counts(&self) -> (u64, u64, u64) {
        let none = slot(PairLabel::None);
        let mut tp = 0;
        let mut fp = 0;
        let mut fn_ = 0;
        for g in 0..4 {
            for p in 0..4 {
                let c = self.counts[g][p];
                match (g != none, p != none) {
                    (true, true) => tp += c,
                    (false, true) => fp += c,
                    (true, false) => fn_ += c,
                    (false, false) => {}
                }
            }
        }
        (tp, fp, fn_)
    }

    /// Precision of "related" (any label but no relation).
    pub fn related_precision(&self) -> Option<f64> {
        let (tp, fp, _) = self.related_counts();
        ratio(tp, tp + fp)
    }

    /// Recall of "related".
    pub fn related_recall(&self) -> Option<f64> {
        let (tp, _, fn_) = self.related_counts();
        ratio(tp, tp + fn_)
    }

    /// F1 of "related": 2TP / (2TP + FP + FN).
    pub fn related_f1(&self) -> Option<f64> {
        let (tp, fp, fn_) = self.related_counts();
        ratio(2 * tp, 2 * tp + fp + fn_)
    }
}

/// Compares predicted with gold labels over all pairs of `count` edits.
/// Returns (all pairs, annotated pairs only).
pub fn compare(
    count: usize,
    gold: &BTreeMap<(usize, usize), PairLabel>,
    predicted: &BTreeMap<(usize, usize), PairLabel>,
) -> (Confusion, Confusion) {
    let mut all = Confusion::default();
    let mut annotated = Confusion::default();
    for low in 0..count {
        for high in low + 1..count {
            let g = gold.get(&(low, high)).copied();
            let p = predicted
                .get(&(low, high))
                .copied()
                .unwrap_or(PairLabel::None);
            all.add(g.unwrap_or(PairLabel::None), p);
            if let Some(g) = g {
                annotated.add(g, p);
            }
        }
    }
    (all, annotated)
}

/// Results for one commit.
#[derive(Debug, Clone, Serialize)]
pub struct CommitEvaluation {
    /// Commit name (`project-sha`).
    pub name: String,
    /// Number of edits (hunks).
    pub edits: usize,
    /// True when every derived edit has EditFlow's index and ranges (rebuilt samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hunks_aligned: Option<bool>,
    /// Over all pairs.
    pub all_pairs: Confusion,
    /// Over the annotated pairs only.
    pub annotated_pairs: Confusion,
}

/// Figures of one confusion matrix, for reports.
#[derive(Debug, Clone, Serialize)]
pub struct Figures {
    /// Pairs compared.
    pub pairs: u64,
    /// 4-way accuracy.
    pub accuracy: Option<f64>,
    /// Related-vs-not precision.
    pub related_precision: Option<f64>,
    /// Related-vs-not recall.
    pub related_recall: Option<f64>,
    /// Related-vs-not F1.
    pub related_f1: Option<f64>,
    /// Label → (precision, recall).
    pub per_label: BTreeMap<&'static str, (Option<f64>, Option<f64>)>,
}

impl From<&Confusion> for Figures {
    fn from(c: &Confusion) -> Figures {
        Figures {
            pairs: c.total(),
            accuracy: c.accuracy(),
            related_precision: c.related_precision(),
            related_recall: c.related_recall(),
            related_f1: c.related_f1(),
            per_label: PairLabel::ALL
                .iter()
                .map(|&l| (l.as_str(), (c.precision(l), c.recall(l))))
                .collect(),
        }
    }
}

/// Scores the derived order of `trajectory` against EditFlow labelled `pairs`.
pub fn evaluate_commit(
    name: String,
    trajectory: &crate::core::trajectory::Trajectory,
    pairs: &[super::order::AnnotatedPair],
    hunks_aligned: Option<bool>,
) -> Result<CommitEvaluation, super::HistoryError> {
    let count = trajectory.edits.len();
    if let Some(pair) = pairs
        .iter()
        .find(|p| p.edit_hunk_pair.iter().any(|&i| i >= count))
    {
        return Err(super::HistoryError::Annotation(format!(
            "{name}: pair {:?} names a hunk the commit does not have ({count} hunks)",
            pair.edit_hunk_pair
        )));
    }
    let gold = super::order::editflow_labels(pairs)?;
    let predicted = super::order::pair_labels(&trajectory.order);
    let (all_pairs, annotated_pairs) = compare(count, &gold, &predicted);
    Ok(CommitEvaluation {
        name,
        edits: count,
        hunks_aligned,
        all_pairs,
        annotated_pairs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_unlisted_pairs_as_no_relation() {
        let gold = BTreeMap::from([((0, 1), PairLabel::Bi), ((1, 2), PairLabel::LowFirst)]);
        let predicted = BTreeMap::from([
            ((0, 1), PairLabel::Bi),
            ((0, 2), PairLabel::Bi),
            ((1, 2), PairLabel::Bi),
        ]);
        let (all, annotated) = compare(3, &gold, &predicted);
        assert_eq!(all.total(), 3);
        assert_eq!(all.accuracy(), Some(1.0 / 3.0));
        assert_eq!(all.related_counts(), (2, 1, 0));
        assert_eq!(all.related_f1(), Some(0.8));
        assert_eq!(all.precision(PairLabel::Bi), Some(1.0 / 3.0));
        assert_eq!(all.recall(PairLabel::LowFirst), Some(0.0));
        assert_eq!(annotated.total(), 2);
        assert_eq!(annotated.accuracy(), Some(0.5));
    }
}
