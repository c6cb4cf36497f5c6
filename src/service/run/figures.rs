//! The figures a report compares, as named numbers per run; each figure's mean and
//! 95 % interval over the repetitions of a run (`replay --repetitions`), and how a
//! run's figures moved against a baseline run's (`report --baseline`).
//!
//! Interval: over the n repetitions' values x₁…xₙ of a figure, mean x̄ ± t·s/√n with s
//! the sample standard deviation (n − 1 in the denominator) and t the 0.975 quantile of
//! Student's t with n − 1 degrees of freedom; no interval for n < 2 (docs/replay.md).
//! A figure *moved* when the run's mean lies outside the baseline's interval, or, when
//! only the run has one, the baseline's value lies outside the run's; with neither
//! (two single runs) only the difference is shown, never a mark.

use statrs::distribution::{ContinuousCDF, StudentsT};

use super::report::RunReport;
use super::{RunError, RunRead};
use crate::core::metrics::statistics::quantile;

/// The figures of a run, in report order: (name, value; `None` when the run has none,
/// e.g. no content steps, no yardsticks (a run recorded before them) or no judge).
pub fn figures(r: &RunReport) -> Vec<(&'static str, Option<f64>)> {
    let s = &r.summary;
    let m = &r.measurements;
    let y = &r.yardsticks;
    let j = r.judge.as_ref();
    let hit = |k: usize| s.hit_at.iter().find(|(kk, _)| *kk == k).map(|(_, v)| *v);
    vec![
        ("micro_precision", Some(s.micro.precision)),
        ("micro_recall", Some(s.micro.recall)),
        ("micro_f1", Some(s.micro.f1)),
        ("macro_f1", Some(s.macro_.f1)),
        ("hit_at_1", hit(1)),
        ("hit_at_3", hit(3)),
        ("mrr", Some(s.mrr)),
        ("flow_keeping", Some(s.shares.flow_keeping)),
        ("flow_jumping", Some(s.shares.flow_jumping)),
        ("flow_reverting", Some(s.shares.flow_reverting)),
        ("flow_breaking", Some(s.shares.flow_breaking)),
        ("mean_bleu", r.mean_bleu()),
        ("mean_es", r.mean_es()),
        ("mean_delta_chrf", y.mean_delta_chrf),
        ("nep_partial", y.nep_partial_rate),
        ("nep_position", y.nep_position_rate),
        ("location_acc", y.location_accuracy),
        ("judge_yes", j.and_then(|j| j.yes_share)),
        ("judge_reverting", j.and_then(|j| j.reverting_share)),
        ("judge_confidence", j.and_then(|j| j.mean_confidence)),
        ("judge_failures", j.map(|j| j.failed as f64)),
        ("suggest_p50_ms", quantile(&m.suggest_ms, 0.5)),
        ("suggest_p95_ms", quantile(&m.suggest_ms, 0.95)),
        ("generate_p50_ms", quantile(&m.generate_ms, 0.5)),
        ("generate_p95_ms", quantile(&m.generate_ms, 0.95)),
        (
            "failed_calls",
            Some(m.errors.iter().fold(0.0, |sum, (_, n)| sum + *n as f64)),
        ),
    ]
}

/// A figure over the repetitions of a run: its values, mean and 95 % interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The value of each repetition that has one, in repetition order.
    pub values: Vec<f64>,
    /// Their mean; `None` when no repetition has a value.
    pub mean: Option<f64>,
    /// The 95 % t-interval (low, high); `None` for fewer than two values.
    pub interval: Option<(f64, f64)>,
}

impl Estimate {
    /// The mean and 95 % t-interval of `values`.
    pub fn of(values: Vec<f64>) -> Estimate {
        let n = values.len();
        // Summed from +0.0 (`Sum` starts at -0.0, which would print as `-0.000`).
        let mean = (n > 0).then(|| values.iter().fold(0.0, |a, b| a + b) / n as f64);
        let interval = mean.filter(|_| n >= 2).map(|mean| {
            let variance = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let half = t_975(n - 1) * variance.sqrt() / (n as f64).sqrt();
            (mean - half, mean + half)
        });
        Estimate {
            values,
            mean,
            interval,
        }
    }

    /// Whether `value` lies outside this estimate's interval (`None` without one).
    fn excludes(&self, value: f64) -> Option<bool> {
        self.interval.map(|(lo, hi)| value < lo || value > hi)
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom (df ≥ 1).
pub fn t_975(df: usize) -> f64 {
    StudentsT::new(0.0, 1.0, df as f64)
        .expect("positive degrees of freedom")
        .inverse_cdf(0.975)
}

/// Every figure of a run over its repetitions.
#[derive(Debug, Clone)]
pub struct GroupFigures {
    /// The run's repetitions (run ids, in repetition order; one for a single run).
    pub runs: Vec<i64>,
    /// (name, estimate), in report order.
    pub figures: Vec<(&'static str, Estimate)>,
}

impl GroupFigures {
    /// The figures of run `run` over its repetitions (the runs its group holds when it
    /// is a group's first run; else just it).
    pub fn of(store: &dyn RunRead, run: i64) -> Result<GroupFigures, RunError> {
        let runs = store.run_repetitions(run)?;
        let per_run = runs
            .iter()
            .map(|&r| RunReport::of(store, r).map(|report| figures(&report)))
            .collect::<Result<Vec<_>, _>>()?;
        let names: Vec<&'static str> = per_run
            .first()
            .map(|f| f.iter().map(|(n, _)| *n).collect())
            .unwrap_or_default();
        let figures = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let values = per_run.iter().filter_map(|f| f[i].1).collect();
                (*name, Estimate::of(values))
            })
            // A run without a judge has no judge figures at all (not a row of `-`).
            .filter(|(name, e)| !(name.starts_with(JUDGE) && e.values.is_empty()))
            .collect();
        Ok(GroupFigures { runs, figures })
    }

    /// The estimate of figure `name`, when the run has it.
    pub fn get(&self, name: &str) -> Option<&Estimate> {
        (self.figures.iter())
            .find(|(n, _)| *n == name)
            .map(|(_, e)| e)
    }
}

/// The prefix of the judge's figures, which only a judged run (`replay --judge`) has.
const JUDGE: &str = "judge_";

/// No value: what a baseline that lacks a figure compares with.
static NONE: Estimate = Estimate {
    values: Vec::new(),
    mean: None,
    interval: None,
};

/// A figure of a run beside the baseline run's.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Run mean − baseline mean, when both have one.
    pub delta: Option<f64>,
    /// Whether it moved beyond an interval (module doc); `None` when there is none
    /// to judge by.
    pub moved: Option<bool>,
}

/// How figure `name` of `run` compares with `baseline`'s (`baseline`'s estimate, and the
/// comparison; a figure the baseline lacks compares with no value).
pub fn against<'a>(
    name: &str,
    run: &Estimate,
    baseline: &'a GroupFigures,
) -> (&'a Estimate, Comparison) {
    let base = baseline.get(name).unwrap_or(&NONE);
    (base, compare(run, base))
}

/// How `run` compares with `baseline` (module doc).
pub fn compare(run: &Estimate, baseline: &Estimate) -> Comparison {
    let (Some(a), Some(b)) = (run.mean, baseline.mean) else {
        return Comparison {
            delta: None,
            moved: None,
        };
    };
    Comparison {
        delta: Some(a - b),
        moved: baseline.excludes(a).or_else(|| run.excludes(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_printed_tables() {
        for (df, t) in [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)] {
            assert!((t_975(df) - t).abs() < 5e-4, "df {df}: {}", t_975(df));
        }
    }

    #[test]
    fn interval_and_marks() {
        // Mean 2, s = 1, n = 3: 2 ± 4.303 / √3.
        let e = Estimate::of(vec![1.0, 2.0, 3.0]);
        let half = t_975(2) / 3f64.sqrt();
        assert_eq!(e.mean, Some(2.0));
        let (lo, hi) = e.interval.unwrap();
        assert!((lo - (2.0 - half)).abs() < 1e-12 && (hi - (2.0 + half)).abs() < 1e-12);
        let single = Estimate::of(vec![5.0]);
        assert_eq!(single.interval, None);
        // The run moved beyond the baseline's interval.
        assert_eq!(compare(&single, &e).moved, Some(true));
        // Only the run has an interval: the baseline's value is inside it.
        assert_eq!(compare(&e, &Estimate::of(vec![2.5])).moved, Some(false));
        // Two single runs: a difference, no mark.
        assert_eq!(
            compare(&single, &Estimate::of(vec![4.0])),
            Comparison {
                delta: Some(1.0),
                moved: None
            }
        );
        // No value at all.
        assert_eq!(compare(&Estimate::of(vec![]), &single).delta, None);
    }
}
