//! The flags of `nextedit tasks run` about its test runs: which tests each task runs
//! (by the per-state coverage map or by name, `--tests-by`; how many, `--max-tests`; the
//! coverage run's time limit, `--coverage-timeout`) and whether their outcomes are
//! served from the execution cache (`--exec-cache`).

use clap::{Args, ValueEnum};
use nextedit::engine::task::covermap::{DEFAULT_MAX_TESTS, TestsBy};
use nextedit::service::tasks::runner::{DEFAULT_COVERAGE_TIMEOUT, ExecCache};

/// `--tests-by`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TestsByArg {
    /// The tests that execute the hole's lines (the state's coverage map), else those
    /// found by name
    Coverage,
    /// Only the tests found by name when the task was cut
    Name,
}

/// `--exec-cache`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExecCacheArg {
    ReadWrite,
    Off,
}

/// Which tests run, and whether their outcomes are cached.
#[derive(Debug, Args)]
pub struct TestsArgs {
    /// How each task's tests are chosen: coverage (run the suite once per state under
    /// coverage, one record per test; the tests that execute a line of the hole and
    /// pass, those running the fewest lines first; Python and Go, else or when none: by
    /// name) or name (the
    /// tests calling the hole's function, found when the task was cut)
    #[arg(long, value_enum, value_name = "HOW", default_value_t = TestsByArg::Coverage)]
    tests_by: TestsByArg,

    /// Tests a task runs at most
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TESTS, allow_negative_numbers = true, value_parser = nextedit::base::ranges::max_tests)]
    max_tests: usize,

    /// Time limit of one state's coverage run (its whole suite), seconds
    #[arg(long, value_name = "S", default_value_t = DEFAULT_COVERAGE_TIMEOUT, allow_negative_numbers = true, value_parser = nextedit::base::ranges::seconds)]
    coverage_timeout: f64,

    /// How test runs go through the execution cache: read-write (serve a run with the
    /// same state, answer, command, limits, sandbox and test environment; store new
    /// ones, and each state's coverage map) or off (run every test, store none)
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ExecCacheArg::ReadWrite)]
    exec_cache: ExecCacheArg,
}

impl TestsArgs {
    /// (`--tests-by`, `--max-tests`, `--coverage-timeout`, `--exec-cache`) as the
    /// library takes them.
    pub fn settings(&self) -> (TestsBy, usize, f64, ExecCache) {
        let by = match self.tests_by {
            TestsByArg::Coverage => TestsBy::Coverage,
            TestsByArg::Name => TestsBy::Name,
        };
        let cache = match self.exec_cache {
            ExecCacheArg::ReadWrite => ExecCache::ReadWrite,
            ExecCacheArg::Off => ExecCache::Off,
        };
        (by, self.max_tests, self.coverage_timeout, cache)
    }
}
