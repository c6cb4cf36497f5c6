//! Flow aggregation over replay steps: Historian's per-step precision/recall/F1, micro
//! and macro averages, flow-pattern shares, Historian's raw `tp@k` and the normalised
//! hit@k and MRR that Historian lacks.
//!
//! Input model (what the replay engine feeds): one [`FlowStep`] per replay step, holding
//! the suggester's ranked predictions, each already matched (or not) against the gold
//! edits and classified into a [`FlowClass`], plus how many gold edits were allowed as
//! the next edit at that step. Matching and classification are the replay engine's job;
//! this module only counts.

use serde::Serialize;

/// Historian's flow pattern of one prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowClass {
    /// Matches a gold edit allowed as the next edit.
    Keeping,
    /// Matches a gold edit that is not (yet) allowed next.
    Jumping,
    /// Unmatched, and overlaps an edit applied earlier (undoes recent work).
    Reverting,
    /// Unmatched otherwise.
    Breaking,
}

impl FlowClass {
    /// The class with this Historian key; `None` for other strings.
    pub fn from_key(key: &str) -> Option<FlowClass> {
        [
            FlowClass::Keeping,
            FlowClass::Jumping,
            FlowClass::Reverting,
            FlowClass::Breaking,
        ]
        .into_iter()
        .find(|c| c.key() == key)
    }

    /// Historian's JSON key (`flow_keeping`, …).
    pub fn key(self) -> &'static str {
        match self {
            FlowClass::Keeping => "flow_keeping",
            FlowClass::Jumping => "flow_jumping",
            FlowClass::Reverting => "flow_reverting",
            FlowClass::Breaking => "flow_breaking",
        }
    }
}

/// One prediction of a step, with its rank and match outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankedPrediction {
    /// 0-based rank in the suggester's list (best first); ties share a rank.
    pub rank: usize,
    /// Index of the gold edit it matched, if any. Keeping predictions must match gold
    /// edits among the `allowed_gold` ones; several may match the same edit (counted once).
    pub matched_gold: Option<usize>,
    /// Its flow pattern; `Keeping`/`Jumping` iff `matched_gold` is set.
    pub class: FlowClass,
}

/// One replay step.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FlowStep {
    /// The suggester's predictions at this step.
    pub predictions: Vec<RankedPrediction>,
    /// Gold edits allowed as the next edit here (Historian's |A|).
    pub allowed_gold: usize,
}

/// Precision, recall and F1.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct Prf {
    /// Precision.
    pub precision: f64,
    /// Recall.
    pub recall: f64,
    /// F1.
    pub f1: f64,
}

/// Counts of one step, as Historian's `tp@all`, `fp@all`, `fn@all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StepCounts {
    /// Keeping predictions.
    pub tp: u64,
    /// Predictions that are not keeping.
    pub fp: u64,
    /// Allowed gold edits not hit by a keeping prediction (saturating at 0).
    pub fn_: u64,
}

impl FlowStep {
    /// Historian's per-step counts, with duplicate matches (several Keeping predictions
    /// on one gold edit) counted once in `tp` and otherwise as false positives — the fix
    /// for Historian's many-to-one matching, which let recall exceed 1.
    pub fn counts(&self) -> StepCounts {
        let tp = self.keeping_hits(usize::MAX);
        StepCounts {
            tp,
            fp: self.predictions.len() as u64 - tp,
            fn_: (self.allowed_gold as u64).saturating_sub(tp),
        }
    }

    /// Distinct gold edits hit by Keeping predictions ranked better than `k` (a Keeping
    /// prediction without a `matched_gold` counts on its own).
    fn keeping_hits(&self, k: usize) -> u64 {
        let mut seen = std::collections::BTreeSet::new();
        let mut unnamed = 0u64;
        for p in self
            .predictions
            .iter()
            .filter(|p| p.class == FlowClass::Keeping && p.rank < k)
        {
            match p.matched_gold {
                Some(g) => {
                    seen.insert(g);
                }
                None => unnamed += 1,
            }
        }
        seen.len() as u64 + unnamed
    }

    /// Historian's `precision@all`, `recall@all`, `f1_score@all` (0 for 0/0).
    pub fn prf(&self) -> Prf {
        let c = self.counts();
        let p = ratio(c.tp, self.predictions.len() as u64).unwrap_or(0.0);
        let r = ratio(c.tp, self.allowed_gold as u64).unwrap_or(0.0);
        Prf {
            precision: p,
            recall: r,
            f1: if p + r > 0.0 {
                2.0 * p * r / (p + r)
            } else {
                0.0
            },
        }
    }

    /// Historian's raw `tp@k`: keeping predictions ranked better than `k` (distinct gold edits).
    pub fn tp_at(&self, k: usize) -> u64 {
        self.keeping_hits(k)
    }

    /// Rank of the best keeping prediction.
    pub fn first_hit(&self) -> Option<usize> {
        self.predictions
            .iter()
            .filter(|p| p.class == FlowClass::Keeping)
            .map(|p| p.rank)
            .min()
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Share of each flow pattern among all predictions, under Historian's keys.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct FlowShares {
    /// Share of [`FlowClass::Keeping`].
    pub flow_keeping: f64,
    /// Share of [`FlowClass::Jumping`].
    pub flow_jumping: f64,
    /// Share of [`FlowClass::Reverting`].
    pub flow_reverting: f64,
    /// Share of [`FlowClass::Breaking`].
    pub flow_breaking: f64,
}

/// Aggregates over every step of one or more runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowSummary {
    /// Number of steps.
    pub steps: usize,
    /// Σtp / (Σtp + Σfp), Σtp / (Σtp + Σfn), 2Σtp / (2Σtp + Σfp + Σfn); 0 for 0/0.
    pub micro: Prf,
    /// Means of the per-step P, R and F1 over the scorable steps (an allowed gold edit);
    /// a step without predictions counts 0, so abstaining on hard steps gains nothing
    /// and macro F1 never exceeds both macro P and macro R.
    #[serde(rename = "macro")]
    pub macro_: Prf,
    /// Share of each flow class over all predictions.
    pub shares: FlowShares,
    /// `(k, Σ tp@k)`: Historian's raw counts, summed over steps.
    pub raw_tp_at: Vec<(usize, u64)>,
    /// `(k, hit@k)`: share of scorable steps with a keeping prediction ranked < k.
    pub hit_at: Vec<(usize, f64)>,
    /// Mean reciprocal rank of the first keeping prediction over scorable steps.
    pub mrr: f64,
    /// Steps with at least one allowed gold edit (the hit@k / MRR denominator).
    pub scorable_steps: usize,
}

/// Historian's cut-offs for `tp@k`.
pub const HISTORIAN_KS: [usize; 4] = [1, 3, 5, 10];

/// Aggregates `steps` with cut-offs `ks` for tp@k and hit@k.
pub fn aggregate(steps: &[FlowStep], ks: &[usize]) -> FlowSummary {
    let (mut tp, mut fp, mut fn_) = (0u64, 0u64, 0u64);
    let mut class_counts = [0u64; 4];
    let (mut p_sum, mut p_n, mut r_sum, mut r_n, mut f_sum, mut f_n) = (0.0, 0, 0.0, 0, 0.0, 0);
    let mut rr_sum = 0.0;
    let mut scorable = 0usize;
    let mut hits = vec![0u64; ks.len()];
    let mut raw = vec![0u64; ks.len()];
    for step in steps {
        let c = step.counts();
        tp += c.tp;
        fp += c.fp;
        fn_ += c.fn_;
        for p in &step.predictions {
            class_counts[p.class as usize] += 1;
        }
        let has_a = step.allowed_gold > 0;
        // One set of steps for all three means (abstentions count 0 precision).
        if has_a {
            let prf = step.prf();
            p_sum += prf.precision;
            p_n += 1;
            r_sum += prf.recall;
            r_n += 1;
            f_sum += prf.f1;
            f_n += 1;
        }
        for (i, &k) in ks.iter().enumerate() {
            raw[i] += step.tp_at(k);
        }
        if has_a {
            scorable += 1;
            if let Some(rank) = step.first_hit() {
                rr_sum += 1.0 / (rank as f64 + 1.0);
                for (i, &k) in ks.iter().enumerate() {
                    if rank < k {
                        hits[i] += 1;
                    }
                }
            }
        }
    }
    let mean = |s: f64, n: usize| if n > 0 { s / n as f64 } else { 0.0 };
    let total: u64 = class_counts.iter().sum();
    let share = |i: usize| ratio(class_counts[i], total).unwrap_or(0.0);
    FlowSummary {
        steps: steps.len(),
        micro: Prf {
            precision: ratio(tp, tp + fp).unwrap_or(0.0),
            recall: ratio(tp, tp + fn_).unwrap_or(0.0),
            f1: ratio(2 * tp, 2 * tp + fp + fn_).unwrap_or(0.0),
        },
        macro_: Prf {
            precision: mean(p_sum, p_n),
            recall: mean(r_sum, r_n),
            f1: mean(f_sum, f_n),
        },
        shares: FlowShares {
            flow_keeping: share(0),
            flow_jumping: share(1),
            flow_reverting: share(2),
            flow_breaking: share(3),
        },
        raw_tp_at: ks.iter().copied().zip(raw).collect(),
        hit_at: ks
            .iter()
            .zip(hits)
            .map(|(&k, h)| (k, mean(h as f64, scorable)))
            .collect(),
        mrr: mean(rr_sum, scorable),
        scorable_steps: scorable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pred(rank: usize, class: FlowClass) -> RankedPrediction {
        let matched_gold = matches!(class, FlowClass::Keeping | FlowClass::Jumping).then_some(rank);
        RankedPrediction {
            rank,
            matched_gold,
            class,
        }
    }

    #[test]
    fn historian_worked_step() {
        // historian.md §9 example: keeping [1,2,3], breaking [0], 4 allowed edits.
        let step = FlowStep {
            predictions: vec![
                pred(0, FlowClass::Breaking),
                pred(1, FlowClass::Keeping),
                pred(2, FlowClass::Keeping),
                pred(3, FlowClass::Keeping),
            ],
            allowed_gold: 4,
        };
        assert_eq!(step.prf().precision, 0.75);
        assert_eq!(step.prf().recall, 0.75);
        assert_eq!([step.tp_at(1), step.tp_at(3), step.tp_at(5)], [0, 2, 3]);
        let s = aggregate(
            &[
                step.clone(),
                FlowStep {
                    predictions: vec![],
                    allowed_gold: 2,
                },
            ],
            &HISTORIAN_KS,
        );
        assert_eq!(s.micro.precision, 0.75);
        assert_eq!(s.micro.recall, 0.5);
        assert_eq!(s.micro.f1, 0.6);
        // The step without predictions counts 0 precision: abstaining gains nothing.
        assert_eq!(s.macro_.precision, 0.375);
        assert_eq!(s.macro_.recall, 0.375);
        assert_eq!(s.mrr, 0.25);
        assert_eq!(s.hit_at, vec![(1, 0.0), (3, 0.5), (5, 0.5), (10, 0.5)]);
        assert_eq!(s.shares.flow_keeping, 0.75);
        assert_eq!(s.shares.flow_breaking, 0.25);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["macro"]["recall"], 0.375);
        assert_eq!(json["shares"]["flow_keeping"], 0.75);
        assert_eq!(s.raw_tp_at[1], (3, 2));
        // Two predictions on one gold edit: one true positive, one false positive.
        let dup = FlowStep {
            predictions: vec![
                pred(0, FlowClass::Keeping),
                RankedPrediction {
                    rank: 1,
                    matched_gold: Some(0),
                    class: FlowClass::Keeping,
                },
            ],
            allowed_gold: 1,
        };
        assert_eq!(
            dup.counts(),
            StepCounts {
                tp: 1,
                fp: 1,
                fn_: 0
            }
        );
        assert_eq!(dup.prf().recall, 1.0);
    }

    fn class_of(i: u8) -> FlowClass {
        [
            FlowClass::Keeping,
            FlowClass::Jumping,
            FlowClass::Reverting,
            FlowClass::Breaking,
        ][i as usize % 4]
    }

    proptest::proptest! {
        #[test]
        fn aggregate_invariants(
            steps in proptest::collection::vec(
                (proptest::collection::vec((0usize..12, 0u8..4), 0..6), 0usize..5), 0..8)
        ) {
            // Keeping predictions hit one of the allowed gold edits (possibly the same one).
            let steps: Vec<FlowStep> = steps
                .into_iter()
                .map(|(preds, allowed)| FlowStep {
                    predictions: preds
                        .into_iter()
                        .map(|(rank, c)| {
                            let class = match class_of(c) {
                                FlowClass::Keeping if allowed == 0 => FlowClass::Jumping,
                                other => other,
                            };
                            let matched_gold = match class {
                                FlowClass::Keeping => Some(rank % allowed),
                                FlowClass::Jumping => Some(100 + rank),
                                _ => None,
                            };
                            RankedPrediction { rank, matched_gold, class }
                        })
                        .collect(),
                    allowed_gold: allowed,
                })
                .collect();
            let s = aggregate(&steps, &HISTORIAN_KS);
            let total: usize = steps.iter().map(|st| st.predictions.len()).sum();
            let shares = s.shares.flow_keeping + s.shares.flow_jumping + s.shares.flow_reverting + s.shares.flow_breaking;
            if total > 0 {
                proptest::prop_assert!((shares - 1.0).abs() < 1e-12);
            } else {
                proptest::prop_assert_eq!(shares, 0.0);
            }
            for prf in [s.micro, s.macro_] {
                for v in [prf.precision, prf.recall, prf.f1] {
                    proptest::prop_assert!((0.0..=1.0).contains(&v));
                }
            }
            // hit@k grows with k; MRR never exceeds hit@10 nor falls below hit@1.
            for w in s.hit_at.windows(2) {
                proptest::prop_assert!(w[0].1 <= w[1].1);
            }
            proptest::prop_assert!(s.mrr >= s.hit_at[0].1 - 1e-12);
            proptest::prop_assert!(s.mrr <= 1.0);
            // Macro F1 cannot exceed both its parts.
            proptest::prop_assert!(s.macro_.f1 <= s.macro_.precision.max(s.macro_.recall) + 1e-12);
        }
    }
}
