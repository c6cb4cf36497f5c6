//! Whether a run measured anything: the share of its calls of each kind
//! (`initialize`, `suggest`, `generate`) that failed, against the run's
//! `--max-failed-share`. By default a run fails only when every call of one kind
//! failed (a suggester that answered nothing scores zeros that mean nothing); a
//! failed run exits 1 and `report` marks it in every format.

use super::{RunError, RunRead, RunSettings};
use crate::engine::suggest::Call;
use crate::store::CallTally;

/// The default `--max-failed-share`: a run fails only when all calls of one kind did.
pub const DEFAULT_MAX_FAILED_SHARE: f64 = 1.0;

/// A run's calls by kind and the share of failures it tolerates.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The calls of each kind: made, failed, failures by kind.
    pub tallies: Vec<CallTally>,
    /// More than this share of one kind's calls failing fails the run (all of them
    /// failing always does).
    pub max_failed_share: f64,
    /// The judge's spec and its questions (`--judge`), judged like the calls.
    pub judge: Option<(String, CallTally)>,
}

impl Verdict {
    /// The verdict on run `run`, by its stored settings' threshold.
    pub fn of(store: &dyn RunRead, run: i64) -> Result<Verdict, RunError> {
        let settings = RunSettings::of(store, run)?;
        let judge = super::judge::JudgeSummary::of(store, run)?;
        Ok(Verdict {
            tallies: store.run_call_tallies(run)?,
            max_failed_share: settings.max_failed_share,
            judge: judge.map(|j| (j.judge.clone(), j.tally())),
        })
    }

    /// The kinds of call whose failures fail the run.
    pub fn failing(&self) -> Vec<&CallTally> {
        (self.tallies.iter())
            .chain(self.judge.as_ref().map(|(_, tally)| tally))
            .filter(|t| {
                t.made > 0
                    && (t.failed == t.made
                        || t.failed as f64 / t.made as f64 > self.max_failed_share)
            })
            .collect()
    }

    /// Whether the run failed.
    pub fn failed(&self) -> bool {
        !self.failing().is_empty()
    }

    /// Why the run failed, as one line (`all 101 suggest calls failed (error_response
    /// 101)`); `None` when it did not.
    pub fn reason(&self) -> Option<String> {
        let failing = self.failing();
        if failing.is_empty() {
            return None;
        }
        let lines: Vec<String> = failing
            .iter()
            .map(|t| {
                let kinds: Vec<String> = (t.kinds.iter())
                    .map(|(kind, n)| format!("{kind} {n}"))
                    .collect();
                let s = if t.made == 1 { "" } else { "s" };
                if t.failed == t.made {
                    let all = if t.made == 1 { "the" } else { "all" };
                    format!(
                        "{all} {} {} call{s} failed ({})",
                        t.made,
                        t.call.key(),
                        kinds.join(", ")
                    )
                } else {
                    format!(
                        "{} of {} {} call{s} failed ({}; more than --max-failed-share {})",
                        t.failed,
                        t.made,
                        t.call.key(),
                        kinds.join(", "),
                        self.max_failed_share
                    )
                }
            })
            .collect();
        let mut reason = lines.join("; ");
        if let Some((spec, _)) = &self.judge
            && failing.iter().any(|t| t.call == Call::Judge)
        {
            reason.push_str(&format!(" (judge {spec})"));
        }
        Some(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(call: Call, made: usize, failed: usize) -> CallTally {
        CallTally {
            call,
            made,
            failed,
            kinds: if failed > 0 {
                vec![("error_response".into(), failed)]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn a_run_fails_when_all_calls_of_one_kind_or_more_than_the_share_failed() {
        let verdict = |tallies, max_failed_share| Verdict {
            tallies,
            max_failed_share,
            judge: None,
        };
        let all = verdict(
            vec![
                tally(Call::Initialize, 2, 0),
                tally(Call::Suggest, 101, 101),
            ],
            1.0,
        );
        assert_eq!(
            all.reason().as_deref(),
            Some("all 101 suggest calls failed (error_response 101)")
        );
        let some = verdict(vec![tally(Call::Suggest, 10, 3)], 1.0);
        assert_eq!(some.reason(), None);
        let share = verdict(vec![tally(Call::Suggest, 10, 3)], 0.25);
        assert_eq!(
            share.reason().as_deref(),
            Some(
                "3 of 10 suggest calls failed (error_response 3; more than --max-failed-share 0.25)"
            )
        );
        // Exactly the share is tolerated; no call made is no failure.
        assert!(!verdict(vec![tally(Call::Suggest, 4, 1)], 0.25).failed());
        assert!(!verdict(vec![tally(Call::Generate, 0, 0)], 0.0).failed());
        assert_eq!(
            verdict(vec![tally(Call::Initialize, 1, 1)], 1.0)
                .reason()
                .as_deref(),
            Some("the 1 initialize call failed (error_response 1)")
        );
    }
}
