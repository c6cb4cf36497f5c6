//! The narrow store the run service needs: create runs, write steps as they finish,
//! read them back for resume and reports. [`crate::store::Database`] implements it.

use crate::store::{
    Database, RunMeasurements, RunSummary, RunTrajectory, StepFlow, StoreError, StoredStep,
};
use crate::suggest::{Call, CallFailure, StepRead};

/// Where replay runs live.
pub trait RunStore {
    /// Creates a run with its trajectories (key, trajectory JSON) in order; returns its id.
    fn create_run(
        &mut self,
        suggester: &str,
        settings: &serde_json::Value,
        trajectories: &[(String, Option<String>)],
    ) -> Result<i64, StoreError>;
    /// Sets a trajectory's status within a run (and its initial edit or error).
    fn set_run_trajectory(
        &mut self,
        run: i64,
        key: &str,
        status: &str,
        initial: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Records a failed call outside any step (`initialize`).
    fn record_run_error(
        &mut self,
        run: i64,
        key: &str,
        call: Call,
        failure: &CallFailure,
    ) -> Result<(), StoreError>;
    /// Writes one finished step.
    fn record_step(&mut self, run: i64, key: &str, step: &StoredStep) -> Result<(), StoreError>;
    /// Appends reads to a step.
    fn add_run_reads(
        &mut self,
        run: i64,
        key: &str,
        step: usize,
        reads: &[StepRead],
    ) -> Result<(), StoreError>;
    /// Marks a run finished.
    fn finish_run(&mut self, run: i64, status: &str) -> Result<(), StoreError>;
    /// Every run's summary, newest first.
    fn runs(&self) -> Result<Vec<RunSummary>, StoreError>;
    /// A run's summary.
    fn run(&self, run: i64) -> Result<RunSummary, StoreError>;
    /// A run's trajectories in order.
    fn run_trajectories(&self, run: i64) -> Result<Vec<RunTrajectory>, StoreError>;
    /// A trajectory's stored steps, in step order.
    fn run_steps(&self, run: i64, key: &str) -> Result<Vec<StepFlow>, StoreError>;
    /// The initial edit id of a trajectory of a run.
    fn run_initial(&self, run: i64, key: &str) -> Result<Option<String>, StoreError>;
    /// What the suggester read in a trajectory: (step, read) in order.
    fn run_reads(&self, run: i64, key: &str) -> Result<Vec<(usize, StepRead)>, StoreError>;
    /// Content scores, latencies and failures of every step of a run.
    fn run_measurements(&self, run: i64) -> Result<RunMeasurements, StoreError>;
    /// (key, edit id) each scored step's content was scored against, in order.
    fn run_content_edits(&self, run: i64) -> Result<Vec<(String, String)>, StoreError>;
}

impl RunStore for Database {
    fn create_run(
        &mut self,
        suggester: &str,
        settings: &serde_json::Value,
        trajectories: &[(String, Option<String>)],
    ) -> Result<i64, StoreError> {
        Database::create_run(self, suggester, settings, trajectories)
    }

    fn set_run_trajectory(
        &mut self,
        run: i64,
        key: &str,
        status: &str,
        initial: Option<&str>,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        Database::set_run_trajectory(self, run, key, status, initial, error)
    }

    fn record_run_error(
        &mut self,
        run: i64,
        key: &str,
        call: Call,
        failure: &CallFailure,
    ) -> Result<(), StoreError> {
        Database::record_run_error(self, run, key, call, failure)
    }

    fn record_step(&mut self, run: i64, key: &str, step: &StoredStep) -> Result<(), StoreError> {
        Database::record_step(self, run, key, step)
    }

    fn add_run_reads(
        &mut self,
        run: i64,
        key: &str,
        step: usize,
        reads: &[StepRead],
    ) -> Result<(), StoreError> {
        Database::add_run_reads(self, run, key, step, reads)
    }

    fn finish_run(&mut self, run: i64, status: &str) -> Result<(), StoreError> {
        Database::finish_run(self, run, status)
    }

    fn runs(&self) -> Result<Vec<RunSummary>, StoreError> {
        Database::runs(self)
    }

    fn run(&self, run: i64) -> Result<RunSummary, StoreError> {
        Database::run(self, run)
    }

    fn run_trajectories(&self, run: i64) -> Result<Vec<RunTrajectory>, StoreError> {
        Database::run_trajectories(self, run)
    }

    fn run_steps(&self, run: i64, key: &str) -> Result<Vec<StepFlow>, StoreError> {
        Database::run_steps(self, run, key)
    }

    fn run_initial(&self, run: i64, key: &str) -> Result<Option<String>, StoreError> {
        Database::run_initial(self, run, key)
    }

    fn run_reads(&self, run: i64, key: &str) -> Result<Vec<(usize, StepRead)>, StoreError> {
        Database::run_reads(self, run, key)
    }

    fn run_measurements(&self, run: i64) -> Result<RunMeasurements, StoreError> {
        Database::run_measurements(self, run)
    }

    fn run_content_edits(&self, run: i64) -> Result<Vec<(String, String)>, StoreError> {
        Database::run_content_edits(self, run)
    }
}
