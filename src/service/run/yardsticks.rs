//! The field's other yardsticks over a run's steps, as `nextedit report` shows them:
//! mean delta-chrF (Zed), NEP partial and position match rates, and location accuracy
//! (NES: the share of steps whose best-ranked prediction is where an edit allowed next
//! is). Per-step values come from the replay engine (`engine::replay::yardsticks`).

use serde::Serialize;

use super::{RunError, RunRead};
use crate::core::metrics::statistics::mean;
use crate::engine::replay::yardsticks::StepYardsticks;

/// A run's yardsticks; `None` where no step measured one (and for runs recorded before
/// they were measured).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct YardstickSummary {
    /// Mean delta-chrF (0–100) of the steps' content.
    pub mean_delta_chrf: Option<f64>,
    /// Share of content steps whose content is a NEP partial match (where defined).
    pub nep_partial_rate: Option<f64>,
    /// Share of content steps whose content is a NEP position match (where defined).
    pub nep_position_rate: Option<f64>,
    /// Share of steps with an allowed edit whose best-ranked prediction is at one.
    pub location_accuracy: Option<f64>,
    /// How many steps the location accuracy is over.
    pub location_steps: usize,
}

impl YardstickSummary {
    /// The yardsticks of run `run` (over the steps `store` holds).
    pub fn of(store: &dyn RunRead, run: i64) -> Result<YardstickSummary, RunError> {
        let rows = store.run_step_yardsticks(run)?;
        let share = |flags: Vec<bool>| -> Option<f64> { mean(flags.into_iter().map(f64::from)) };
        let flags = |pick: fn(&StepYardsticks) -> Option<bool>| -> Vec<bool> {
            rows.iter().filter_map(|(_, _, y)| pick(y)).collect()
        };
        let location = flags(|y| y.location_hit);
        Ok(YardstickSummary {
            mean_delta_chrf: mean(rows.iter().filter_map(|(_, _, y)| y.delta_chrf)),
            nep_partial_rate: share(flags(|y| y.nep_partial)),
            nep_position_rate: share(flags(|y| y.nep_position)),
            location_steps: location.len(),
            location_accuracy: share(location),
        })
    }
}
