//! The field's other yardsticks of replay steps (`run_step_yardsticks`, schema v11):
//! written with their step, read back per step for `nextedit report` and step pages.

use rusqlite::{Transaction, params};

use super::{Database, StoreError};
use crate::engine::replay::yardsticks::StepYardsticks;

/// Writes a step's yardsticks inside the transaction that records the step; a step with
/// nothing measured has no row.
pub(super) fn record_step_yardsticks(
    tx: &Transaction<'_>,
    run: i64,
    key: &str,
    step: usize,
    y: &StepYardsticks,
) -> rusqlite::Result<()> {
    if *y == StepYardsticks::default() {
        return Ok(());
    }
    tx.execute(
        "INSERT OR REPLACE INTO run_step_yardsticks (run_id, key, step, delta_chrf, nep_partial, nep_position, location_hit)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![run, key, step as i64, y.delta_chrf, y.nep_partial, y.nep_position, y.location_hit],
    )?;
    Ok(())
}

impl Database {
    /// (key, step, yardsticks) of every step of run `run` that has any, in order (none for
    /// a run recorded before schema version 11).
    pub fn run_step_yardsticks(
        &self,
        run: i64,
    ) -> Result<Vec<(String, usize, StepYardsticks)>, StoreError> {
        self.rows(
            "SELECT key, step, delta_chrf, nep_partial, nep_position, location_hit
               FROM run_step_yardsticks WHERE run_id = ?1 ORDER BY key, step",
            [run],
            |row| {
                let y = StepYardsticks {
                    delta_chrf: row.get(2)?,
                    nep_partial: row.get(3)?,
                    nep_position: row.get(4)?,
                    location_hit: row.get(5)?,
                };
                Ok((row.get(0)?, row.get::<_, i64>(1)? as usize, y))
            },
        )
    }
}
