//! A run's rows copied between databases, every column as stored (the later
//! migrations' columns too), for `nextedit runs merge`: shard runs read out whole,
//! then written as one run per repetition (a repetition group) in one transaction.
//! A shard is data from another machine: its columns must be ones this build's schema
//! has (a column it does not know is refused, never spliced into SQL), and every
//! identifier is quoted.

use rusqlite::params;
use rusqlite::types::Value;

use super::{Database, RunStatus, StoreError, sqlite};

/// The tables that hold a run's rows besides `runs` (keyed by `run_id`).
const RUN_TABLES: [&str; 7] = [
    "run_trajectories",
    "run_steps",
    "run_step_yardsticks",
    "run_step_judgements",
    "run_predictions",
    "run_errors",
    "run_reads",
];

/// Every row of one run, table by table, every column but `run_id` as stored.
#[derive(Debug, Clone, Default)]
pub struct RunRows {
    tables: Vec<TableRows>,
}

/// One table's rows of a run.
#[derive(Debug, Clone)]
struct TableRows {
    table: &'static str,
    /// Its columns but `run_id`.
    columns: Vec<String>,
    /// The rows, in the order they were written.
    rows: Vec<Vec<Value>>,
}

/// What a merged run is, besides its rows.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedRun<'a> {
    /// Suggester spec, as the shards stored it.
    pub suggester: &'a str,
    /// Settings JSON, as the shards stored it.
    pub config: &'a serde_json::Value,
    /// When the first shard started.
    pub started_at: &'a str,
    /// Done, or partial when shards are missing.
    pub status: RunStatus,
    /// (position, key) of the trajectories no shard brought, stored as `missing`.
    pub missing: &'a [(usize, String)],
    /// 1-based repetition.
    pub repetition: u32,
}

/// The columns of each run table in the schema this build creates (every
/// migration's), read once from a database made in memory.
static KNOWN_COLUMNS: std::sync::LazyLock<Vec<(&'static str, Vec<String>)>> =
    std::sync::LazyLock::new(|| {
        let mut db = Database {
            conn: rusqlite::Connection::open_in_memory().expect("an in-memory database opens"),
            path: ":memory:".into(),
            fixed: None,
        };
        db.migrate()
            .expect("the schema applies to an empty database");
        RUN_TABLES
            .iter()
            .map(|&table| (table, db.table_columns(table).expect("schema tables read")))
            .collect()
    });

/// `name` as an SQL identifier, quoted.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Copying runs between databases row for row (`nextedit runs merge`).
pub trait RunMerge {
    /// Every row of run `run`, as stored.
    fn run_rows(&self, run: i64) -> Result<RunRows, StoreError>;

    /// Writes runs made of the rows of others (shards of one plan, checked by the
    /// caller), each `(run, its parts)`, in one transaction: all or nothing. The runs
    /// form a repetition group: the first names it, the later ones point at it.
    /// Returns their ids, in order.
    fn insert_merged_runs(
        &mut self,
        runs: &[(MergedRun<'_>, Vec<RunRows>)],
    ) -> Result<Vec<i64>, StoreError>;
}

impl RunMerge for Database {
    fn run_rows(&self, run: i64) -> Result<RunRows, StoreError> {
        let mut rows = RunRows::default();
        for table in RUN_TABLES {
            let columns = self.run_columns(table)?;
            let width = columns.len();
            let sql = format!(
                "SELECT {} FROM {} WHERE run_id = ?1 ORDER BY rowid",
                columns
                    .iter()
                    .map(|c| quoted(c))
                    .collect::<Vec<_>>()
                    .join(", "),
                quoted(table)
            );
            let values = self.rows(&sql, [run], |row| {
                (0..width).map(|i| row.get::<_, Value>(i)).collect()
            })?;
            rows.tables.push(TableRows {
                table,
                columns,
                rows: values,
            });
        }
        Ok(rows)
    }

    fn insert_merged_runs(
        &mut self,
        runs: &[(MergedRun<'_>, Vec<RunRows>)],
    ) -> Result<Vec<i64>, StoreError> {
        let path = self.path.clone();
        let e = |source| sqlite(&path, source);
        let tx = self.conn.transaction().map_err(e)?;
        let mut ids: Vec<i64> = Vec::new();
        for (run, parts) in runs {
            let id = insert_merged_run(&tx, run, parts, ids.first().copied()).map_err(e)?;
            ids.push(id);
        }
        tx.commit().map_err(e)?;
        Ok(ids)
    }
}

impl Database {
    /// The columns of `table` in this database, in table order.
    fn table_columns(&self, table: &str) -> Result<Vec<String>, StoreError> {
        self.rows("SELECT name FROM pragma_table_info(?1)", [table], |row| {
            row.get::<_, String>(0)
        })
    }

    /// The columns of a run table but `run_id`, in table order; each must be one the
    /// schema this build creates has.
    fn run_columns(&self, table: &'static str) -> Result<Vec<String>, StoreError> {
        let known = &KNOWN_COLUMNS
            .iter()
            .find(|(t, _)| *t == table)
            .expect("a run table")
            .1;
        let columns = self.table_columns(table)?;
        if let Some(odd) = columns.iter().find(|c| !known.contains(c)) {
            return Err(StoreError::UnknownColumn {
                path: self.path.clone(),
                table: table.to_string(),
                column: crate::base::secrets::scrub(odd).into_owned(),
            });
        }
        Ok(columns.into_iter().filter(|c| c != "run_id").collect())
    }
}

/// Writes one merged run into `tx` (`of`: the group's first run, for the later
/// repetitions); returns its id.
fn insert_merged_run(
    tx: &rusqlite::Transaction<'_>,
    run: &MergedRun<'_>,
    parts: &[RunRows],
    of: Option<i64>,
) -> rusqlite::Result<i64> {
    tx.execute(
        "INSERT INTO runs (started_at, ended_at, status, suggester, config, nextedit_version,
                               repetition, repetition_of)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            run.started_at,
            super::runs::now(),
            run.status,
            run.suggester,
            run.config.to_string(),
            env!("CARGO_PKG_VERSION"),
            run.repetition,
            of
        ],
    )?;
    let id = tx.last_insert_rowid();
    for part in parts {
        for TableRows {
            table,
            columns,
            rows,
        } in &part.tables
        {
            let sql = format!(
                "INSERT INTO {} (run_id, {}) VALUES (?1{})",
                quoted(table),
                columns
                    .iter()
                    .map(|c| quoted(c))
                    .collect::<Vec<_>>()
                    .join(", "),
                (0..columns.len())
                    .map(|i| format!(", ?{}", i + 2))
                    .collect::<String>()
            );
            let mut insert = tx.prepare_cached(&sql)?;
            for row in rows {
                let values = std::iter::once(Value::Integer(id)).chain(row.iter().cloned());
                insert.execute(rusqlite::params_from_iter(values))?;
            }
        }
    }
    for (position, key) in run.missing {
        tx.execute(
            "INSERT INTO run_trajectories (run_id, key, position, trajectory, status, error)
                 VALUES (?1, ?2, ?3, NULL, 'missing', 'its shard was not merged')",
            params![id, key, *position as i64],
        )?;
    }
    Ok(id)
}
