//! A shard plan file: one JSON line per unit of a run (trajectory × repetition) with
//! its shard index, key, source, settings and the command that runs it, for a machine
//! that runs one shard (`replay/ray_replay.py` reads it). Which units a shard takes
//! and how shard runs merge back are [`super::shard`]'s.

use std::path::PathBuf;

use super::plan::{Collected, RunSettings};
use super::shard::{Source, unit_index};

/// The command that runs a plan's shards: the `nextedit` arguments (without the
/// database, the plan or a shard) and the directory they are relative to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardCommand {
    /// Directory to run in.
    pub cwd: PathBuf,
    /// Arguments after the program name, starting with `replay`.
    pub args: Vec<String>,
}

/// One line of a plan file (a wire format: `replay/ray_replay.py` reads it).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlanLine {
    /// This unit's shard index: run it with `--shard {shard}/{shards}`.
    pub shard: usize,
    /// How many shards the plan has (one per unit).
    pub shards: usize,
    /// The trajectory's key in the run.
    pub key: String,
    /// The repetition, from 0 (the shard's run of it is repetition `repetition + 1`).
    pub repetition: u32,
    /// The suggester spec.
    pub suggester: String,
    /// The run's settings, as every shard run stores them.
    pub settings: serde_json::Value,
    /// Where the trajectory comes from.
    pub source: Source,
    /// How to run a shard.
    pub command: ShardCommand,
}

/// A plan's lines: one per unit of the collected request (trajectory × repetition),
/// in run order.
pub fn plan_lines(
    settings: &RunSettings,
    collected: &Collected,
    command: &ShardCommand,
) -> Vec<PlanLine> {
    let settings_json = serde_json::to_value(settings).expect("plain data serialises");
    let repetitions = settings.repetitions.max(1);
    let shards = collected.units.len() * repetitions as usize;
    collected
        .units
        .iter()
        .enumerate()
        .flat_map(|(position, (key, source))| {
            (0..repetitions).map(move |repetition| (position, repetition, key, source))
        })
        .map(|(position, repetition, key, source)| PlanLine {
            shard: unit_index(position, repetition, repetitions),
            shards,
            key: key.clone(),
            repetition,
            suggester: settings.suggester.clone(),
            settings: settings_json.clone(),
            source: source.clone(),
            command: command.clone(),
        })
        .collect()
}

/// A plan file's text: one JSON object per line.
pub fn plan_jsonl(lines: &[PlanLine]) -> String {
    lines
        .iter()
        .map(|line| serde_json::to_string(line).expect("plain data serialises") + "\n")
        .collect()
}

/// A `replay` command line without the options that differ per machine or that made
/// the plan (`--db`, `--plan`, `--shard`), in either of their forms (`--db X`, `--db=X`).
pub fn shard_arguments(replay_args: &[String]) -> Vec<String> {
    const DROPPED: [&str; 3] = ["--db", "--plan", "--shard"];
    let mut out = Vec::new();
    let mut args = replay_args.iter();
    while let Some(arg) = args.next() {
        if DROPPED.contains(&arg.as_str()) {
            args.next();
        } else if !DROPPED
            .iter()
            .any(|flag| arg.starts_with(&format!("{flag}=")))
        {
            out.push(arg.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::shard_arguments;

    #[test]
    fn shard_arguments_leave_out_the_database_the_plan_and_the_shard() {
        let args: Vec<String> = [
            "replay",
            "--plan",
            "p.jsonl",
            "--repo",
            "r",
            "--db=x.db",
            "--range",
            "A..B",
            "--shard",
            "0/2",
            "--db",
            "y.db",
            "--plan=q",
            "--json",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            shard_arguments(&args),
            ["replay", "--repo", "r", "--range", "A..B", "--json"]
        );
    }
}
