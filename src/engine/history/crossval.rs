//! Honest figures for the edit-order rules: leave-one-repository-out cross-validation
//! and confidence intervals that resample repositories.
//!
//! The rules are hand-written, so what can be fitted is which of them to trust: on the
//! commits of every repository but one, rule kinds are dropped greedily while that
//! raises all-pairs accuracy; the repository left out is then scored with the rules
//! that survived. Pooled over the held-out repositories, the figures say how the rule
//! selection does on repositories it never saw. Intervals come from a cluster
//! bootstrap: whole repositories are resampled, because commits of one repository are
//! not independent.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::evaluate::{Confusion, compare};
use super::order::{PairLabel, pair_labels};
use crate::core::trajectory::{OrderEdge, PartialOrder};

/// One evaluated commit: its repository, gold labels and derived edges.
#[derive(Debug, Clone)]
pub struct CommitSample {
    /// `owner/repo`, the unit of cross-validation.
    pub repository: String,
    /// Number of edits.
    pub edits: usize,
    /// Annotated labels, `(low, high)` → label (unlisted pairs: no relation).
    pub gold: BTreeMap<(usize, usize), PairLabel>,
    /// The derived edges with the rule kinds that gave them.
    pub edges: Vec<OrderEdge>,
}

impl CommitSample {
    /// The commit's confusions (all pairs, annotated pairs) using only the edges a
    /// rule of `kinds` gave.
    fn confusions(&self, kinds: &BTreeSet<String>) -> (Confusion, Confusion) {
        let edges = self
            .edges
            .iter()
            .filter(|e| e.reasons.iter().any(|r| kinds.contains(r.kind.as_str())))
            .cloned()
            .collect();
        let order = PartialOrder {
            edges,
            ..PartialOrder::default()
        };
        compare(self.edits, &self.gold, &pair_labels(&order))
    }
}

/// The repository of an EditFlow `commit_url` (`https://github.com/o/r/commit/sha`).
pub fn repository_of(commit_url: &str) -> String {
    let parts: Vec<&str> = commit_url.trim_end_matches('/').rsplit('/').collect();
    match parts.as_slice() {
        [_, "commit", repo, owner, ..] => format!("{owner}/{repo}"),
        _ => commit_url.to_owned(),
    }
}

/// Headline with 95 % intervals.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Estimate {
    /// The figure on all the data.
    pub value: Option<f64>,
    /// 2.5th percentile of the bootstrap.
    pub low: Option<f64>,
    /// 97.5th percentile of the bootstrap.
    pub high: Option<f64>,
}

/// The headline figures with their intervals.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Headline {
    /// 4-way accuracy over all pairs.
    pub accuracy_all_pairs: Estimate,
    /// 4-way accuracy over the annotated pairs.
    pub accuracy_annotated_pairs: Estimate,
    /// Related-vs-not F1.
    pub related_f1: Estimate,
    /// Related-vs-not precision.
    pub related_precision: Estimate,
    /// Related-vs-not recall.
    pub related_recall: Estimate,
}

/// The fold of one held-out repository.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fold {
    /// The repository scored.
    pub repository: String,
    /// Rule kinds dropped on the other repositories.
    pub dropped: Vec<String>,
    /// Its all-pairs accuracy with the surviving rules.
    pub accuracy_all_pairs: Option<f64>,
}

/// Leave-one-repository-out results.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CrossValidation {
    /// Repositories (folds).
    pub folds: Vec<Fold>,
    /// Held-out figures pooled over the folds, with repository-bootstrap intervals.
    pub held_out: Headline,
    /// The same rules without any selection, for comparison.
    pub all_rules: Headline,
    /// How often each rule kind's links are annotated as related, per repository.
    pub rules: Vec<RulePrecision>,
}

/// The links one rule kind gave and how many of them the annotators call related.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RulePrecision {
    /// Rule kind (`test_impl`, `clone`…).
    pub kind: String,
    /// Pairs linked by a reason of this kind (a pair with several reasons counts for each).
    pub links: usize,
    /// Of those, pairs the annotation labels related (any order).
    pub related: usize,
    /// `[links, related]` per repository: the precision each held-out fold sees.
    pub by_repository: BTreeMap<String, [usize; 2]>,
}

impl RulePrecision {
    /// `related / links`.
    pub fn precision(&self) -> Option<f64> {
        (self.links > 0).then(|| self.related as f64 / self.links as f64)
    }

    /// One line of `eval-order`'s table: kind, links, related, precision and the
    /// repositories where fewer than half of its links are related.
    pub fn row(&self) -> String {
        let weak: Vec<String> = self
            .by_repository
            .iter()
            .filter(|(_, [links, related])| related * 2 < *links)
            .map(|(repo, [links, related])| format!("{repo} {related}/{links}"))
            .collect();
        let precision = self
            .precision()
            .map_or("-".to_string(), |p| format!("{:.1}", p * 100.0));
        format!(
            "{:<20} {:>4} links {:>4} related {:>6}%  below half: {}",
            self.kind,
            self.links,
            self.related,
            precision,
            if weak.is_empty() {
                "-".to_string()
            } else {
                weak.join(", ")
            }
        )
    }
}

/// Precision of every rule kind on `samples`, as the annotations judge its links.
pub fn rule_precision(samples: &[CommitSample]) -> Vec<RulePrecision> {
    let mut out: BTreeMap<String, RulePrecision> = BTreeMap::new();
    let index = |id: &str| id.strip_prefix('e').and_then(|n| n.parse::<usize>().ok());
    for s in samples {
        for edge in &s.edges {
            let (Some(a), Some(b)) = (index(&edge.from), index(&edge.to)) else {
                continue;
            };
            let related = s
                .gold
                .get(&(a.min(b), a.max(b)))
                .is_some_and(|label| *label != PairLabel::None);
            let kinds: BTreeSet<&str> = edge.reasons.iter().map(|r| r.kind.as_str()).collect();
            for kind in kinds {
                let entry = out.entry(kind.to_owned()).or_insert_with(|| RulePrecision {
                    kind: kind.to_owned(),
                    links: 0,
                    related: 0,
                    by_repository: BTreeMap::new(),
                });
                entry.links += 1;
                entry.related += usize::from(related);
                let repo = entry.by_repository.entry(s.repository.clone()).or_default();
                repo[0] += 1;
                repo[1] += usize::from(related);
            }
        }
    }
    out.into_values().collect()
}

/// Rule kinds that appear in any sample's edges.
fn rule_kinds(samples: &[CommitSample]) -> BTreeSet<String> {
    samples
        .iter()
        .flat_map(|s| s.edges.iter().flat_map(|e| e.reasons.iter()))
        .map(|r| r.kind.to_string())
        .collect()
}

/// All-pairs accuracy of `samples` with `kinds`.
fn accuracy(samples: &[&CommitSample], kinds: &BTreeSet<String>) -> f64 {
    let mut all = Confusion::default();
    for s in samples {
        all.merge(&s.confusions(kinds).0);
    }
    all.accuracy().unwrap_or(0.0)
}

/// Greedy backward elimination: drop the kind whose removal raises accuracy most,
/// while any does.
fn select_rules(train: &[&CommitSample], mut kinds: BTreeSet<String>) -> BTreeSet<String> {
    let mut best = accuracy(train, &kinds);
    loop {
        let candidate = kinds
            .iter()
            .map(|k| {
                let mut fewer = kinds.clone();
                fewer.remove(k);
                (accuracy(train, &fewer), fewer)
            })
            .max_by(|a, b| a.0.total_cmp(&b.0));
        match candidate {
            Some((score, fewer)) if score > best + 1e-12 => {
                best = score;
                kinds = fewer;
            }
            _ => return kinds,
        }
    }
}

/// Per-repository confusions (all pairs, annotated pairs).
type ByRepository = BTreeMap<String, (Confusion, Confusion)>;

/// Pooled figures with intervals from `resamples` repository-bootstrap draws.
fn figures(by_repo: &ByRepository, resamples: usize, seed: u64) -> Headline {
    let repos: Vec<&(Confusion, Confusion)> = by_repo.values().collect();
    let pooled = |pick: &mut dyn FnMut() -> usize| {
        let (mut all, mut annotated) = (Confusion::default(), Confusion::default());
        for _ in 0..repos.len() {
            let (a, n) = repos[pick()];
            all.merge(a);
            annotated.merge(n);
        }
        (all, annotated)
    };
    let mut next = 0;
    let point = pooled(&mut || {
        next += 1;
        next - 1
    });
    let mut rng = seed;
    let draws: Vec<(Confusion, Confusion)> = (0..resamples)
        .map(|_| {
            pooled(&mut || {
                rng = splitmix(rng);
                (rng % repos.len().max(1) as u64) as usize
            })
        })
        .collect();
    let estimate = |f: &dyn Fn(&(Confusion, Confusion)) -> Option<f64>| {
        let mut values: Vec<f64> = draws.iter().filter_map(f).collect();
        values.sort_by(f64::total_cmp);
        let at = |q: f64| {
            (!values.is_empty()).then(|| values[((values.len() - 1) as f64 * q).round() as usize])
        };
        Estimate {
            value: f(&point),
            low: at(0.025),
            high: at(0.975),
        }
    };
    Headline {
        accuracy_all_pairs: estimate(&|c| c.0.accuracy()),
        accuracy_annotated_pairs: estimate(&|c| c.1.accuracy()),
        related_f1: estimate(&|c| c.0.related_f1()),
        related_precision: estimate(&|c| c.0.related_precision()),
        related_recall: estimate(&|c| c.0.related_recall()),
    }
}

/// SplitMix64: a small, fixed, well-mixed generator, so intervals are reproducible.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Resamples for the intervals.
pub const RESAMPLES: usize = 2000;

/// The figures of all `samples` with every rule, with repository-bootstrap intervals.
pub fn with_intervals(samples: &[CommitSample], seed: u64) -> Headline {
    let kinds = rule_kinds(samples);
    figures(&by_repository(samples, |_| &kinds), RESAMPLES, seed)
}

/// Confusions per repository, each commit scored with the kinds `kinds_for` gives its
/// repository.
fn by_repository<'k>(
    samples: &[CommitSample],
    kinds_for: impl Fn(&str) -> &'k BTreeSet<String>,
) -> ByRepository {
    let mut out = ByRepository::new();
    for s in samples {
        let (a, n) = s.confusions(kinds_for(&s.repository));
        let entry = out.entry(s.repository.clone()).or_default();
        entry.0.merge(&a);
        entry.1.merge(&n);
    }
    out
}

/// Leave-one-repository-out cross-validation of the rule selection.
pub fn leave_one_repository_out(samples: &[CommitSample], seed: u64) -> CrossValidation {
    let all_kinds = rule_kinds(samples);
    let repos: BTreeSet<&str> = samples.iter().map(|s| s.repository.as_str()).collect();
    let mut chosen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut folds = Vec::new();
    for repo in repos {
        let train: Vec<&CommitSample> = samples.iter().filter(|s| s.repository != repo).collect();
        let kinds = select_rules(&train, all_kinds.clone());
        let held: Vec<&CommitSample> = samples.iter().filter(|s| s.repository == repo).collect();
        folds.push(Fold {
            repository: repo.to_owned(),
            dropped: all_kinds.difference(&kinds).cloned().collect(),
            accuracy_all_pairs: Some(accuracy(&held, &kinds)),
        });
        chosen.insert(repo.to_owned(), kinds);
    }
    CrossValidation {
        folds,
        held_out: figures(
            &by_repository(samples, |repo| &chosen[repo]),
            RESAMPLES,
            seed,
        ),
        all_rules: with_intervals(samples, seed),
        rules: rule_precision(samples),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::trajectory::{EdgeReason, OrderKind, ReasonKind};

    fn edge(from: usize, to: usize, kind: &str) -> OrderEdge {
        OrderEdge {
            from: format!("e{from}"),
            to: format!("e{to}"),
            kind: OrderKind::Bi,
            reasons: vec![EdgeReason {
                kind: ReasonKind::from(kind.to_string()),
                detail: String::new(),
            }],
        }
    }

    fn sample(repo: &str, gold_related: bool, edges: Vec<OrderEdge>) -> CommitSample {
        let gold = if gold_related {
            BTreeMap::from([((0, 1), PairLabel::Bi)])
        } else {
            BTreeMap::new()
        };
        CommitSample {
            repository: repo.into(),
            edits: 2,
            gold,
            edges,
        }
    }

    #[test]
    fn rule_precision_counts_related_links_per_repository() {
        let samples = vec![
            sample("a", true, vec![edge(0, 1, "good"), edge(1, 0, "noisy")]),
            sample("b", false, vec![edge(0, 1, "noisy")]),
        ];
        let rows: Vec<String> = rule_precision(&samples)
            .iter()
            .map(RulePrecision::row)
            .collect();
        assert_eq!(
            rows,
            vec![
                format!(
                    "{:<20} {:>4} links {:>4} related {:>6}%  below half: -",
                    "good", 1, 1, "100.0"
                ),
                format!(
                    "{:<20} {:>4} links {:>4} related {:>6}%  below half: b 0/1",
                    "noisy", 2, 1, "50.0"
                ),
            ]
        );
    }

    #[test]
    fn repositories_come_from_commit_urls() {
        assert_eq!(
            repository_of("https://github.com/home-assistant/core/commit/abc"),
            "home-assistant/core"
        );
    }

    #[test]
    fn a_rule_that_is_wrong_elsewhere_is_dropped_for_the_held_out_repository() {
        // `good` is right in every repository; `noisy` links unrelated pairs in a, b
        // and c, and is right only in d.
        let samples = vec![
            sample("a", true, vec![edge(0, 1, "good")]),
            sample("a", false, vec![edge(0, 1, "noisy")]),
            sample("b", false, vec![edge(0, 1, "noisy")]),
            sample("c", false, vec![edge(0, 1, "noisy")]),
            sample("d", true, vec![edge(0, 1, "noisy")]),
        ];
        let cv = leave_one_repository_out(&samples, 1);
        let dropped: Vec<(&str, &[String])> = cv
            .folds
            .iter()
            .map(|f| (f.repository.as_str(), f.dropped.as_slice()))
            .collect();
        let noisy = ["noisy".to_string()];
        assert_eq!(
            dropped,
            [
                ("a", &noisy[..]),
                ("b", &noisy[..]),
                ("c", &noisy[..]),
                ("d", &noisy[..])
            ]
        );
        // Held out: a's two commits right, b and c right, d wrong (its link dropped).
        assert_eq!(cv.held_out.accuracy_all_pairs.value, Some(4.0 / 5.0));
        // With every rule: a's second commit, b and c wrong.
        assert_eq!(cv.all_rules.accuracy_all_pairs.value, Some(2.0 / 5.0));
        let ci = &cv.held_out.accuracy_all_pairs;
        assert!(ci.low.unwrap() <= 0.8 && ci.high.unwrap() >= 0.8, "{ci:?}");
    }
}
