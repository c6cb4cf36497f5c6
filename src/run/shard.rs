//! Scale-out: a run's work as a plan of shards, one shard run per machine, and the
//! shard runs merged back into one run whose report equals the single-machine run's.
//!
//! A plan unit is one trajectory × suggester × repetition; its index is its place in
//! the run order (`position × repetitions + repetition`; one repetition today, so the
//! position). Shard `i/N` takes the units whose index is `i` modulo `N`: the
//! assignment follows from the plan's order alone, so every machine computes it
//! without talking to the others. A shard run stores its trajectories at their places
//! in the whole plan (reports and suggesters see the same order and names) and the
//! plan's identity in `runs.shard` ([`ShardOf`]); merging copies the shard runs' rows
//! as stored, so every figure is computed from the very same rows.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::RunError;
use super::plan::{Collected, RunSettings};
use crate::store::{Database, MergedRun, RunSummary};

/// One shard of `count`: `index/count`, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl std::str::FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("{text:?} is not a shard: expected I/N with 0 <= I < N (e.g. 0/4)");
        let (index, count) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = index.trim().parse().map_err(|_| bad())?;
        let count: usize = count.trim().parse().map_err(|_| bad())?;
        if index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Which of a request's trajectories a run loads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Select {
    /// All of them (a whole run).
    #[default]
    All,
    /// One shard's; the others are named, not loaded or derived.
    Shard(Shard),
    /// None: their keys and sources only (writing a plan).
    KeysOnly,
}

impl Select {
    /// Whether the unit at `index` of the run order is loaded.
    pub fn takes(&self, index: usize) -> bool {
        match self {
            Select::All => true,
            Select::Shard(shard) => index % shard.count == shard.index,
            Select::KeysOnly => false,
        }
    }
}

/// Where a trajectory comes from: what a machine needs to load it again.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Source {
    /// A trajectory file.
    File {
        /// Its path (absolute when it could be resolved).
        path: PathBuf,
    },
    /// A commit of a repository.
    Commit {
        /// The repository's absolute path.
        repo: PathBuf,
        /// The full commit id.
        commit: String,
    },
    /// A stored session.
    Session {
        /// Its id in the database.
        id: i64,
    },
}

/// What a shard run stores about its plan (`runs.shard`, JSON): merging checks that
/// shards come from one plan, do not overlap, and which are missing.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardOf {
    /// This shard, from 0.
    pub index: usize,
    /// How many shards the plan was cut into.
    pub count: usize,
    /// Every unit's trajectory key, in plan order.
    pub units: Vec<String>,
}

impl ShardOf {
    /// The (position, key) of the units shard `index` takes.
    fn units_of(&self, index: usize) -> impl Iterator<Item = (usize, &String)> {
        let count = self.count;
        self.units
            .iter()
            .enumerate()
            .filter(move |(position, _)| position % count == index)
    }
}

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
    /// The repetition (0: one repetition).
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

/// A plan's lines: one per unit of the collected request, in run order.
pub fn plan_lines(
    settings: &RunSettings,
    collected: &Collected,
    command: &ShardCommand,
) -> Vec<PlanLine> {
    let settings_json = serde_json::to_value(settings).expect("plain data serialises");
    let shards = collected.units.len();
    collected
        .units
        .iter()
        .enumerate()
        .map(|(shard, (key, source))| PlanLine {
            shard,
            shards,
            key: key.clone(),
            repetition: 0,
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

/// Why shard runs could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No shard database was named.
    #[error("no shard databases to merge")]
    Nothing,
    /// The output is one of the shards.
    #[error("{} is both the output and a shard: merge into another database", .0.display())]
    IntoAShard(PathBuf),
    /// A database holds no shard run, or several.
    #[error("{db} holds {found} shard runs (runs made by `nextedit replay --shard I/N`); a shard database holds exactly one", db = .db.display())]
    NotOneShard {
        /// The database.
        db: PathBuf,
        /// How many shard runs it holds.
        found: usize,
    },
    /// A shard run did not finish.
    #[error("{db}: shard {shard} (run {run}) is {status}, not done: finish it with `nextedit replay --resume {run} --db {db}`", db = .db.display())]
    Unfinished {
        /// The database.
        db: PathBuf,
        /// The shard.
        shard: Shard,
        /// Its run id there.
        run: i64,
        /// Its status.
        status: String,
    },
    /// Two shards ran with different settings.
    #[error("{db} and {other} ran with different settings ({what}): they are not shards of one plan", db = .db.display(), other = .other.display())]
    SettingsDiffer {
        /// A shard database.
        db: PathBuf,
        /// The first shard database.
        other: PathBuf,
        /// The differing settings, as `name: a vs b`.
        what: String,
    },
    /// Two shards were cut from different plans.
    #[error("{db} and {other} are shards of different plans ({what})", db = .db.display(), other = .other.display())]
    PlanDiffers {
        /// A shard database.
        db: PathBuf,
        /// The first shard database.
        other: PathBuf,
        /// What differs.
        what: String,
    },
    /// The same shard twice.
    #[error("shard {shard} is given twice: {first} and {second}", first = .first.display(), second = .second.display())]
    Duplicate {
        /// The shard.
        shard: Shard,
        /// One database.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A shard run's trajectories are not the ones its shard takes.
    #[error("{db}: shard {shard} holds {found:?} where the plan assigns {expected:?} (overlapping or altered shards)", db = .db.display())]
    NotItsUnits {
        /// The database.
        db: PathBuf,
        /// The shard.
        shard: Shard,
        /// The keys it holds.
        found: Vec<String>,
        /// The keys the plan assigns it.
        expected: Vec<String>,
    },
    /// Shards are missing.
    #[error(
        "shards {missing} of {count} are missing ({units} trajectories not merged); merge them too, or pass --allow-partial for a run marked partial"
    )]
    Missing {
        /// The missing shard indexes, as `1, 3`.
        missing: String,
        /// How many shards the plan has.
        count: usize,
        /// Trajectories those shards take.
        units: usize,
    },
}

/// A finished merge.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The merged run's id in the output database.
    pub run: i64,
    /// Shards merged, and of how many.
    pub shards: (usize, usize),
    /// The missing shards (merged with `allow_partial`).
    pub missing: Vec<usize>,
}

/// One shard database as read for a merge.
struct ShardRun {
    db: PathBuf,
    info: RunSummary,
    of: ShardOf,
    keys: Vec<(usize, String)>,
    rows: crate::store::RunRows,
}

/// Reads the one shard run of the database at `db`.
fn read_shard(db: &Path) -> Result<ShardRun, RunError> {
    let database = Database::open_existing(db)?;
    let mut found = Vec::new();
    for info in database.runs()? {
        if let Some(of) = database.run_shard(info.id)? {
            found.push((info, of));
        }
    }
    let not_one = |found| MergeError::NotOneShard {
        db: db.to_path_buf(),
        found,
    };
    if found.len() != 1 {
        return Err(not_one(found.len()).into());
    }
    let (info, of) = found.pop().expect("one");
    let of: ShardOf = serde_json::from_value(of).map_err(|_| not_one(0))?;
    let shard = Shard {
        index: of.index,
        count: of.count,
    };
    if info.status != "done" {
        return Err(MergeError::Unfinished {
            db: db.to_path_buf(),
            shard,
            run: info.id,
            status: info.status,
        }
        .into());
    }
    let keys = crate::run::RunStore::run_trajectories(&database, info.id)?
        .into_iter()
        .map(|t| (t.position, t.key))
        .collect();
    let rows = database.run_rows(info.id)?;
    Ok(ShardRun {
        db: db.to_path_buf(),
        info,
        of,
        keys,
        rows,
    })
}

/// Settings that differ between two stored configs, as `name: a vs b`.
fn differing_settings(a: &serde_json::Value, b: &serde_json::Value) -> String {
    let empty = serde_json::Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let names: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    names
        .into_iter()
        .filter(|name| a.get(*name) != b.get(*name))
        .map(|name| {
            let show = |v: Option<&serde_json::Value>| v.map_or("absent".into(), |v| v.to_string());
            format!("{name}: {} vs {}", show(b.get(name)), show(a.get(name)))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Merges the shard runs of the databases `shards` into one new run of `out`: checks
/// they are shards of one plan, with the same settings, each holding exactly the
/// trajectories its shard takes, none twice; missing shards are an error unless
/// `allow_partial` (the run is then `partial` and their trajectories `missing`).
pub fn merge(
    out: &mut Database,
    shards: &[PathBuf],
    allow_partial: bool,
) -> Result<Merged, RunError> {
    if shards.is_empty() {
        return Err(MergeError::Nothing.into());
    }
    let out_path = out.path().canonicalize().ok();
    for db in shards {
        if db
            .canonicalize()
            .ok()
            .is_some_and(|p| Some(&p) == out_path.as_ref())
        {
            return Err(MergeError::IntoAShard(db.clone()).into());
        }
    }
    let mut by_index: BTreeMap<usize, ShardRun> = BTreeMap::new();
    let mut first: Option<(PathBuf, serde_json::Value, String, usize, Vec<String>)> = None;
    for db in shards {
        let shard = read_shard(db)?;
        let this = Shard {
            index: shard.of.index,
            count: shard.of.count,
        };
        match &first {
            None => {
                first = Some((
                    shard.db.clone(),
                    shard.info.config.clone(),
                    shard.info.suggester.clone(),
                    shard.of.count,
                    shard.of.units.clone(),
                ))
            }
            Some((other, config, suggester, count, units)) => {
                let what = differing_settings(&shard.info.config, config);
                if !what.is_empty() || &shard.info.suggester != suggester {
                    return Err(MergeError::SettingsDiffer {
                        db: shard.db,
                        other: other.clone(),
                        what,
                    }
                    .into());
                }
                let what = if *count != shard.of.count {
                    Some(format!("{} shards vs {count}", shard.of.count))
                } else if *units != shard.of.units {
                    Some("their trajectories differ".to_string())
                } else {
                    None
                };
                if let Some(what) = what {
                    return Err(MergeError::PlanDiffers {
                        db: shard.db,
                        other: other.clone(),
                        what,
                    }
                    .into());
                }
            }
        }
        let expected: Vec<(usize, String)> = shard
            .of
            .units_of(shard.of.index)
            .map(|(p, k)| (p, k.clone()))
            .collect();
        if shard.keys != expected {
            return Err(MergeError::NotItsUnits {
                db: shard.db,
                shard: this,
                found: shard.keys.into_iter().map(|(_, k)| k).collect(),
                expected: expected.into_iter().map(|(_, k)| k).collect(),
            }
            .into());
        }
        if let Some(previous) = by_index.get(&this.index) {
            return Err(MergeError::Duplicate {
                shard: this,
                first: previous.db.clone(),
                second: shard.db,
            }
            .into());
        }
        by_index.insert(this.index, shard);
    }
    let any = by_index.values().next().expect("at least one shard");
    let of = any.of.clone();
    let missing: Vec<usize> = (0..of.count)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    let missing_units: Vec<(usize, String)> = missing
        .iter()
        .flat_map(|&i| of.units_of(i).map(|(p, k)| (p, k.clone())))
        .collect();
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::Missing {
            missing: missing
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            count: of.count,
            units: missing_units.len(),
        }
        .into());
    }
    let started_at = by_index
        .values()
        .map(|s| s.info.started_at.as_str())
        .min()
        .expect("at least one shard")
        .to_string();
    let merged = MergedRun {
        suggester: &any.info.suggester,
        config: &any.info.config,
        started_at: &started_at,
        status: if missing.is_empty() {
            "done"
        } else {
            "partial"
        },
        missing: &missing_units,
    };
    let parts: Vec<crate::store::RunRows> = by_index.values().map(|s| s.rows.clone()).collect();
    let run = out.insert_merged_run(&merged, &parts)?;
    Ok(Merged {
        run,
        shards: (by_index.len(), of.count),
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::{Select, Shard, shard_arguments};

    #[test]
    fn shards_parse_and_take_every_nth_unit() {
        assert_eq!("1/3".parse(), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "1", "a/2", "-1/2", "0/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shard = Select::Shard(Shard { index: 1, count: 3 });
        let taken: Vec<usize> = (0..8).filter(|&i| shard.takes(i)).collect();
        assert_eq!(taken, [1, 4, 7]);
        assert!(!Select::KeysOnly.takes(0) && Select::All.takes(5));
    }

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
