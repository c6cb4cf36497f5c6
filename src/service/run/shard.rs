//! Scale-out: a run's work as a plan of shards, one shard run per machine, and the
//! shard runs merged back into one run whose report equals the single-machine run's.
//!
//! A plan unit is one trajectory × suggester × repetition; its index is its place in
//! the run order (`position × repetitions + repetition`, the repetition from 0).
//! Shard `i/N` takes the units whose index is `i` modulo `N`: the assignment follows
//! from the plan's order alone, so every machine computes it without talking to the
//! others. A shard run stores its trajectories at their places in the whole plan
//! (reports and suggesters see the same order and names) and the plan's identity in
//! `runs.shard` ([`ShardOf`]); a shard with units of several repetitions holds one run
//! per repetition, grouped like a `--repetitions` run. Merging copies each
//! repetition's shard runs' rows as stored into one run of a merged repetition group,
//! so every figure and every interval is computed from the very same rows. The plan
//! file a machine reads its shard from is [`super::plan_file`]'s. Before merging, the
//! shards are checked: one plan, the same settings, no overlap, none twice, and which
//! are missing (docs/replay.md "Scale-out").

use crate::store::RunMerge;
use crate::store::RunRead;
use crate::store::RunStatus;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::RunError;
use crate::store::{Database, MergedRun, RunSummary};

/// One shard of `count`: `index/count`, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

/// A `--shard` value that is not `I/N` with `0 <= I < N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a shard: expected I/N with 0 <= I < N (e.g. 0/4)")]
pub struct ShardError(String);

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError(text.to_owned());
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

/// The index in the run order of the unit of the trajectory at `position` in
/// `repetition` (from 0) of `repetitions`.
pub fn unit_index(position: usize, repetition: u32, repetitions: u32) -> usize {
    position * repetitions.max(1) as usize + repetition as usize
}

impl Select {
    /// Whether the unit of the trajectory at `position` in `repetition` (from 0) of
    /// `repetitions` is run.
    pub fn takes_unit(&self, position: usize, repetition: u32, repetitions: u32) -> bool {
        match self {
            Select::All => true,
            Select::Shard(shard) => {
                unit_index(position, repetition, repetitions) % shard.count == shard.index
            }
            Select::KeysOnly => false,
        }
    }

    /// Whether the trajectory at `position` is loaded: some repetition of it is run.
    pub fn takes(&self, position: usize, repetitions: u32) -> bool {
        (0..repetitions.max(1)).any(|r| self.takes_unit(position, r, repetitions))
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
    /// Every trajectory's key, in plan order.
    pub units: Vec<String>,
    /// How many repetitions each trajectory has (plans stored before repetitions: 1).
    #[serde(default = "one_repetition")]
    pub repetitions: u32,
}

fn one_repetition() -> u32 {
    1
}

impl ShardOf {
    /// The (position, key) of the trajectories whose unit of `repetition` (from 0)
    /// shard `index` takes.
    fn units_of(&self, index: usize, repetition: u32) -> impl Iterator<Item = (usize, &String)> {
        let select = Select::Shard(Shard {
            index,
            count: self.count,
        });
        let repetitions = self.repetitions;
        self.units
            .iter()
            .enumerate()
            .filter(move |(position, _)| select.takes_unit(*position, repetition, repetitions))
    }
}

/// Why shard runs could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No shard database was named.
    #[error("no shard databases to merge")]
    Nothing,
    /// A shard database that does not exist.
    #[error("shard database {} does not exist (`nextedit replay --shard I/N --db FILE` writes one)", .0.display())]
    NoSuchShard(PathBuf),
    /// The output is one of the shards.
    #[error("{} is both the output and a shard: merge into another database", .0.display())]
    IntoAShard(PathBuf),
    /// A database holds no shard run (or an unreadable one).
    #[error("{db} holds {found} shard runs (runs made by `nextedit replay --shard I/N`); a shard database holds one shard's runs", db = .db.display())]
    NotOneShard {
        /// The database.
        db: PathBuf,
        /// How many shard runs it holds.
        found: usize,
    },
    /// A shard run did not finish.
    #[error("{db}: shard {shard} (run {run}) is {status}, not done: finish it with `nextedit replay --resume {run} --db {db}` and the shard's --suggester", db = .db.display())]
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
    /// A database holds runs of different shards, or one repetition twice.
    #[error("{db}: run {run} is not one more repetition of shard {shard}: a shard database holds one shard's runs, one per repetition", db = .db.display())]
    MixedShards {
        /// The database.
        db: PathBuf,
        /// The shard of its first shard run.
        shard: Shard,
        /// The run that does not fit.
        run: i64,
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
    /// The merged run's id in the output database (its first repetition's: it names
    /// the group).
    pub run: i64,
    /// Every merged run, in repetition order (just `run` with one repetition).
    pub runs: Vec<i64>,
    /// Shards merged, and of how many.
    pub shards: (usize, usize),
    /// The missing shards (merged with `allow_partial`).
    pub missing: Vec<usize>,
}

/// One shard run as read for a merge (one repetition of a shard).
struct ShardRun {
    info: RunSummary,
    keys: Vec<(usize, String)>,
    rows: crate::store::RunRows,
}

/// One shard database as read for a merge: its shard's runs, by repetition.
struct ShardDb {
    db: PathBuf,
    of: ShardOf,
    runs: BTreeMap<u32, ShardRun>,
}

impl ShardDb {
    fn shard(&self) -> Shard {
        Shard {
            index: self.of.index,
            count: self.of.count,
        }
    }

    /// Any of its runs (they share suggester, settings and plan).
    fn any(&self) -> &ShardRun {
        self.runs.values().next().expect("at least one run")
    }
}

/// Reads the shard runs of the database at `db`: one shard's, one run per
/// repetition, each done.
fn read_shard(db: &Path) -> Result<ShardDb, RunError> {
    if !db.exists() {
        return Err(MergeError::NoSuchShard(db.to_path_buf()).into());
    }
    let database = Database::open_existing(db)?;
    let mut found: Vec<(RunSummary, ShardOf)> = Vec::new();
    for info in database.runs()? {
        if let Some(of) = database.run_shard(info.id)? {
            let of: ShardOf = serde_json::from_value(of).map_err(|_| MergeError::NotOneShard {
                db: db.to_path_buf(),
                found: 0,
            })?;
            found.push((info, of));
        }
    }
    let Some(of) = found.first().map(|(_, of)| of.clone()) else {
        return Err(MergeError::NotOneShard {
            db: db.to_path_buf(),
            found: 0,
        }
        .into());
    };
    let shard = Shard {
        index: of.index,
        count: of.count,
    };
    let mut runs = BTreeMap::new();
    for (info, this) in found {
        let again = runs.contains_key(&info.repetition);
        if this != of || again {
            return Err(MergeError::MixedShards {
                db: db.to_path_buf(),
                shard,
                run: info.id,
            }
            .into());
        }
        if info.status != RunStatus::Done {
            return Err(MergeError::Unfinished {
                db: db.to_path_buf(),
                shard,
                run: info.id,
                status: info.status.to_string(),
            }
            .into());
        }
        let keys = crate::service::run::RunRead::run_trajectories(&database, info.id)?
            .into_iter()
            .map(|t| (t.position, t.key))
            .collect();
        let rows = database.run_rows(info.id)?;
        runs.insert(info.repetition, ShardRun { info, keys, rows });
    }
    Ok(ShardDb {
        db: db.to_path_buf(),
        of,
        runs,
    })
}

/// Checks that `shard` holds exactly the units its shard takes, repetition by
/// repetition (a repetition it has no units of has no run, or an empty one).
fn check_units(shard: &ShardDb) -> Result<(), RunError> {
    for repetition in 1..=shard.of.repetitions.max(1) {
        let expected: Vec<(usize, String)> = shard
            .of
            .units_of(shard.of.index, repetition - 1)
            .map(|(p, k)| (p, k.clone()))
            .collect();
        let found = shard
            .runs
            .get(&repetition)
            .map(|run| run.keys.clone())
            .unwrap_or_default();
        if found != expected {
            return Err(MergeError::NotItsUnits {
                db: shard.db.clone(),
                shard: shard.shard(),
                found: found.into_iter().map(|(_, k)| k).collect(),
                expected: expected.into_iter().map(|(_, k)| k).collect(),
            }
            .into());
        }
    }
    if let Some(run) = shard
        .runs
        .keys()
        .find(|&&r| r == 0 || r > shard.of.repetitions.max(1))
    {
        return Err(MergeError::MixedShards {
            db: shard.db.clone(),
            shard: shard.shard(),
            run: shard.runs[run].info.id,
        }
        .into());
    }
    Ok(())
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

/// Checks that `shard` is a shard of the same plan, with the same settings, as
/// `first`.
fn check_same_plan(shard: &ShardDb, first: &ShardDb) -> Result<(), RunError> {
    let (this, that) = (&shard.any().info, &first.any().info);
    let what = differing_settings(&this.config, &that.config);
    if !what.is_empty() || this.suggester != that.suggester {
        return Err(MergeError::SettingsDiffer {
            db: shard.db.clone(),
            other: first.db.clone(),
            what,
        }
        .into());
    }
    let what = if shard.of.count != first.of.count {
        Some(format!("{} shards vs {}", shard.of.count, first.of.count))
    } else if shard.of.units != first.of.units || shard.of.repetitions != first.of.repetitions {
        Some("their trajectories differ".to_string())
    } else {
        None
    };
    match what {
        Some(what) => Err(MergeError::PlanDiffers {
            db: shard.db.clone(),
            other: first.db.clone(),
            what,
        }
        .into()),
        None => Ok(()),
    }
}

/// Merges the shard runs of the databases `shards` into new runs of the database at
/// `out` (created if needed, and only once every shard checked out), one per
/// repetition (grouped like a `--repetitions` run): checks they are shards of one
/// plan, with the same settings, each holding exactly the units its shard takes, none
/// twice; missing shards are an error unless `allow_partial` (the runs are then
/// `partial` and the missing units' trajectories `missing`).
pub fn merge(out: &Path, shards: &[PathBuf], allow_partial: bool) -> Result<Merged, RunError> {
    if shards.is_empty() {
        return Err(MergeError::Nothing.into());
    }
    let out_path = out.canonicalize().ok();
    for db in shards {
        if db
            .canonicalize()
            .ok()
            .is_some_and(|p| Some(&p) == out_path.as_ref())
        {
            return Err(MergeError::IntoAShard(db.clone()).into());
        }
    }
    let mut by_index: BTreeMap<usize, ShardDb> = BTreeMap::new();
    let mut first: Option<usize> = None;
    for db in shards {
        let shard = read_shard(db)?;
        if let Some(first) = first {
            check_same_plan(&shard, &by_index[&first])?;
        }
        check_units(&shard)?;
        if let Some(previous) = by_index.get(&shard.of.index) {
            return Err(MergeError::Duplicate {
                shard: shard.shard(),
                first: previous.db.clone(),
                second: shard.db,
            }
            .into());
        }
        first.get_or_insert(shard.of.index);
        by_index.insert(shard.of.index, shard);
    }
    let any = by_index.values().next().expect("at least one shard");
    let of = any.of.clone();
    let info = &any.any().info;
    let missing: Vec<usize> = (0..of.count)
        .filter(|i| !by_index.contains_key(i))
        .collect();
    let repetitions = of.repetitions.max(1);
    let missing_units = |repetition: u32| -> Vec<(usize, String)> {
        let mut units: Vec<(usize, String)> = missing
            .iter()
            .flat_map(|&i| of.units_of(i, repetition - 1).map(|(p, k)| (p, k.clone())))
            .collect();
        units.sort();
        units
    };
    if !missing.is_empty() && !allow_partial {
        return Err(MergeError::Missing {
            missing: missing
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            count: of.count,
            units: (1..=repetitions).map(|r| missing_units(r).len()).sum(),
        }
        .into());
    }
    let started_at = by_index
        .values()
        .flat_map(|s| s.runs.values().map(|r| r.info.started_at.as_str()))
        .min()
        .expect("at least one shard")
        .to_string();
    let missing_by_repetition: Vec<Vec<(usize, String)>> =
        (1..=repetitions).map(missing_units).collect();
    let group: Vec<(MergedRun<'_>, Vec<crate::store::RunRows>)> = (1..=repetitions)
        .zip(&missing_by_repetition)
        .map(|(repetition, missing)| {
            let merged = MergedRun {
                suggester: &info.suggester,
                config: &info.config,
                started_at: &started_at,
                status: if missing.is_empty() {
                    RunStatus::Done
                } else {
                    RunStatus::Partial
                },
                missing,
                repetition,
            };
            let parts = by_index
                .values()
                .filter_map(|s| s.runs.get(&repetition).map(|r| r.rows.clone()))
                .collect();
            (merged, parts)
        })
        .collect();
    let runs = Database::open(out)?.insert_merged_runs(&group)?;
    Ok(Merged {
        run: runs[0],
        runs,
        shards: (by_index.len(), of.count),
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::{Select, Shard};

    #[test]
    fn shards_parse_and_take_every_nth_unit() {
        assert_eq!("1/3".parse(), Ok(Shard { index: 1, count: 3 }));
        for bad in ["3/3", "1", "a/2", "-1/2", "0/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        let shard = Select::Shard(Shard { index: 1, count: 3 });
        let taken: Vec<usize> = (0..8).filter(|&i| shard.takes(i, 1)).collect();
        assert_eq!(taken, [1, 4, 7]);
        assert!(!Select::KeysOnly.takes(0, 1) && Select::All.takes(5, 1));
        // With two repetitions the units are (0, r0), (0, r1), (1, r0), …: shard 1/3
        // takes units 1, 4, 7, i.e. (0, r1), (2, r0), (3, r1).
        let units: Vec<(usize, u32)> = (0..4)
            .flat_map(|p| (0..2).map(move |r| (p, r)))
            .filter(|&(p, r)| shard.takes_unit(p, r, 2))
            .collect();
        assert_eq!(units, [(0, 1), (2, 0), (3, 1)]);
        let positions: Vec<usize> = (0..4).filter(|&p| shard.takes(p, 2)).collect();
        assert_eq!(positions, [0, 2, 3]);
    }
}
