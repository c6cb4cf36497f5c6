//! ContextBench: how well the context an agent (or developer) read covers the gold
//! context, per granularity (file, symbol, byte span, line), along the trajectory (AUC,
//! redundancy) and for the edit location (EditLoc).
//!
//! Two modes ([`Mode`]): `Compat` reproduces the reference evaluator
//! (`EuniAI/ContextBench` `contextbench.evaluate`) bit for bit, quirks included; `Fixed`
//! (the default) corrects the documented defects. Each difference is listed in
//! `docs/metrics.md` §ContextBench and in [`Mode::Fixed`].
//!
//! Pure: file contents come through [`RepoView`]; parsing works on strings.

mod benchkit;
mod diff;
mod evaluate;
mod input;
mod intervals;
mod session;

pub use benchkit::{
    Conversion, LineCounts, ToolStep, normalize_repo_path, trace_to_steps, trace_to_tool_steps,
};
pub use diff::{LinesByFile, deleted_lines_compat, edited_lines};
pub use evaluate::{
    Aggregate, ContextBenchConfig, EditLoc, Granularity, GranularityScore, InstanceError,
    InstanceResult, Mode, PerGranularity, RepoView, StepCoverage, Trajectory, aggregate, evaluate,
    normalize_gold_path,
};
pub use input::{
    Gold, GoldRegion, InputError, LineSpan, Prediction, Step, parse_gold_context, parse_gold_jsonl,
    parse_gold_row, parse_prediction_row, parse_predictions_jsonl, parse_traj_data,
};
pub use intervals::{Interval, IntervalMap};
pub use session::{
    ContextRead, ContextStep, GoldSource, SessionScores, TrajectoryRepo, default_gold,
    edited_regions, evaluate_steps, prediction, regions_by_file, regions_to_gold, session_steps,
    to_step, used_definitions,
};
