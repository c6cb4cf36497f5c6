//! Completion task runs (`nextedit tasks run`, schema v6): the run, each task's
//! validity (its ground truth's test run) and answers, written as each task finishes,
//! read back for `--resume` and `nextedit tasks report`; and the execution cache keyed
//! by (state hash, answer hash, command); the limit a test run hit (schema v8); why a
//! task is non-discriminating (schema v9); how a task's tests were chosen and the
//! per-state coverage maps (schema v10).

use rusqlite::{OptionalExtension, params};

use super::values::{stored, stored_option, text_of};
use super::{Database, StoreError, sqlite};
use crate::base::sys::limits::Limit;
use crate::engine::task::covermap::TestSelection;
use crate::engine::task::score::AnswerScores;
use crate::engine::task::{ContextFrom, DependencyLevel, Scenario};

/// A task run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRunRow {
    /// Run id.
    pub id: i64,
    /// The `--suggester` spec.
    pub suggester: String,
    /// Answers asked per task.
    pub samples: u32,
    /// The task file as given.
    pub task_file: String,
    /// The run's settings as JSON (the library's own type, for `--resume`).
    pub settings: String,
    /// Whether every task is done.
    pub finished: bool,
}

/// One task of a run, with its answers.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredTask {
    /// 0-based line in the task file.
    pub index: usize,
    /// Task id.
    pub task_id: String,
    /// The scenario it was cut for.
    pub scenario: Scenario,
    /// Its dependency level, when it has one.
    pub dependency: Option<DependencyLevel>,
    /// Where its retrieved context came from, when it carries some.
    pub context_from: Option<ContextFrom>,
    /// Its context held a chunk that did not exist in the state.
    pub leaked: bool,
    /// Language.
    pub language: String,
    /// The task counts: the ground truth passed its covering tests and no do-nothing
    /// answer did.
    pub valid: bool,
    /// Why the task is invalid.
    pub invalid_reason: Option<String>,
    /// Tail of the ground truth's test output.
    pub truth_output: Option<String>,
    /// Why the task is non-discriminating (its ground truth passes, and so does a
    /// do-nothing answer: the empty hole or the file as cut); such a task is not valid.
    pub excluded: Option<String>,
    /// Tail of the passing do-nothing answer's test output.
    pub excluded_output: Option<String>,
    /// The ground truth's test duration, ms (0 when cached).
    pub truth_ms: Option<f64>,
    /// How its tests were chosen (`None`: before any test was chosen, or stored by an
    /// older version).
    pub selection: Option<TestSelection>,
    /// Its answers, by sample.
    pub answers: Vec<StoredAnswer>,
}

/// One answer of a task.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnswer {
    /// Repetition index, 0-based.
    pub sample: u32,
    /// The answer (empty when the call failed).
    pub text: String,
    /// The call's failure.
    pub error: Option<String>,
    /// The tests passed with it.
    pub passed: bool,
    /// Exit code of the test command.
    pub exit_code: Option<i32>,
    /// The time limit was hit.
    pub timed_out: bool,
    /// The limit the test run hit (its processes were killed for it).
    pub limit: Option<Limit>,
    /// The execution came from the cache.
    pub cached: bool,
    /// Tail of the test output.
    pub output_tail: String,
    /// The answer's text figures.
    pub scores: AnswerScores,
    /// The complete call, ms.
    pub complete_ms: f64,
    /// The test run, ms (0 when cached).
    pub test_ms: f64,
}

/// A cached test execution.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedExecution {
    /// Exit 0 within the time limit.
    pub passed: bool,
    /// Exit code.
    pub exit_code: Option<i32>,
    /// The time limit was hit.
    pub timed_out: bool,
    /// The limit it hit.
    pub limit: Option<Limit>,
    /// Tail of the output.
    pub output_tail: String,
    /// Wall time of the original run, ms.
    pub duration_ms: f64,
}

/// A stored `limit_hit` (an unknown name reads as none).
fn limit_of(key: Option<String>) -> Option<Limit> {
    key.as_deref().and_then(Limit::from_key)
}

impl StoredTask {
    /// This task with what its tests and suggester said masked and cut
    /// ([`crate::base::secrets::scrub`]) and known keys masked in its answers: the form that
    /// is stored and printed.
    pub fn scrubbed(&self) -> StoredTask {
        let scrub = |text: &str| crate::base::secrets::scrub(text).into_owned();
        StoredTask {
            invalid_reason: self.invalid_reason.as_deref().map(scrub),
            truth_output: self.truth_output.as_deref().map(scrub),
            excluded_output: self.excluded_output.as_deref().map(scrub),
            selection: self.selection.as_ref().map(|s| TestSelection {
                note: s.note.as_deref().map(scrub),
                ..s.clone()
            }),
            answers: (self.answers.iter())
                .map(|a| StoredAnswer {
                    text: crate::base::secrets::mask_known(&a.text).into_owned(),
                    error: a.error.as_deref().map(scrub),
                    output_tail: scrub(&a.output_tail),
                    ..a.clone()
                })
                .collect(),
            ..self.clone()
        }
    }
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Completion task runs, their tasks and answers, the execution cache and the
/// coverage maps.
pub trait TaskStore {
    /// Creates a task run and returns its id.
    fn create_task_run(
        &self,
        suggester: &str,
        samples: u32,
        task_file: &str,
        settings: &str,
    ) -> Result<i64, StoreError>;

    /// The task run `id`, if there is one.
    fn task_run(&self, id: i64) -> Result<Option<TaskRunRow>, StoreError>;

    /// Marks a task run finished.
    fn finish_task_run(&self, id: i64) -> Result<(), StoreError>;

    /// Stores one finished task and its answers in one transaction.
    fn store_task(&self, run: i64, task: &StoredTask) -> Result<(), StoreError>;

    /// The tasks of run `run` stored so far, by index, with their answers.
    fn task_run_tasks(&self, run: i64) -> Result<Vec<StoredTask>, StoreError>;

    /// The cached execution for (state, answer, command), if any.
    fn cached_execution(
        &self,
        state_hash: &str,
        answer_hash: &str,
        command: &str,
    ) -> Result<Option<CachedExecution>, StoreError>;

    /// Stores an execution in the cache (a concurrent identical one is kept as it is).
    fn store_execution(
        &self,
        state_hash: &str,
        answer_hash: &str,
        command: &str,
        execution: &CachedExecution,
    ) -> Result<(), StoreError>;

    /// The coverage map stored under `key` (JSON, [`crate::engine::task::covermap::CoverageMap`]).
    fn coverage_map(&self, key: &str) -> Result<Option<String>, StoreError>;

    /// Stores a coverage map (JSON) made in `made_ms` under `key` (a concurrent
    /// identical one is kept as it is).
    fn store_coverage_map(&self, key: &str, map: &str, made_ms: f64) -> Result<(), StoreError>;
}

impl TaskStore for Database {
    fn create_task_run(
        &self,
        suggester: &str,
        samples: u32,
        task_file: &str,
        settings: &str,
    ) -> Result<i64, StoreError> {
        self.conn
            .execute(
                "INSERT INTO task_runs (created_ns, suggester, samples, task_file, settings)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![now_ns(), suggester, samples, task_file, settings],
            )
            .map_err(|source| sqlite(&self.path, source))?;
        Ok(self.conn.last_insert_rowid())
    }

    fn task_run(&self, id: i64) -> Result<Option<TaskRunRow>, StoreError> {
        self.conn
            .query_row(
                "SELECT id, suggester, samples, task_file, settings, finished_ns IS NOT NULL
                 FROM task_runs WHERE id = ?1",
                [id],
                |row| {
                    Ok(TaskRunRow {
                        id: row.get(0)?,
                        suggester: row.get(1)?,
                        samples: row.get(2)?,
                        task_file: row.get(3)?,
                        settings: row.get(4)?,
                        finished: row.get(5)?,
                    })
                },
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))
    }

    fn finish_task_run(&self, id: i64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "UPDATE task_runs SET finished_ns = ?2 WHERE id = ?1",
                params![id, now_ns()],
            )
            .map(|_| ())
            .map_err(|source| sqlite(&self.path, source))
    }

    fn store_task(&self, run: i64, task: &StoredTask) -> Result<(), StoreError> {
        let task = &task.scrubbed();
        let write = || -> rusqlite::Result<()> {
            let tx = self.conn.unchecked_transaction()?;
            tx.execute(
                "INSERT INTO task_run_tasks (run_id, task_index, task_id, scenario, dependency,
                     context_from, leaked, language, valid, invalid_reason, truth_output, truth_ms,
                     excluded, excluded_output, tests_selection)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    run,
                    task.index as i64,
                    task.task_id,
                    text_of(&task.scenario),
                    task.dependency.as_ref().map(text_of),
                    task.context_from.as_ref().map(text_of),
                    task.leaked,
                    task.language,
                    task.valid,
                    task.invalid_reason,
                    task.truth_output,
                    task.truth_ms,
                    task.excluded,
                    task.excluded_output,
                    (task.selection.as_ref())
                        .map(|s| serde_json::to_string(s).expect("a selection serializes"))
                ],
            )?;
            for a in &task.answers {
                tx.execute(
                    "INSERT INTO task_answers (run_id, task_index, sample, text, error, passed,
                         exit_code, timed_out, cached, output_tail, exact, edit_sim, es_line,
                         es_token, bleu, sari, stopped, complete_ms, test_ms, limit_hit)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                         ?16, ?17, ?18, ?19, ?20)",
                    params![
                        run,
                        task.index as i64,
                        a.sample,
                        a.text,
                        a.error,
                        a.passed,
                        a.exit_code,
                        a.timed_out,
                        a.cached,
                        a.output_tail,
                        a.scores.exact,
                        a.scores.edit_similarity,
                        a.scores.es_line,
                        a.scores.es_token,
                        a.scores.bleu,
                        a.scores.sari,
                        a.scores.stopped,
                        a.complete_ms,
                        a.test_ms,
                        a.limit.map(Limit::key)
                    ],
                )?;
            }
            tx.commit()
        };
        write().map_err(|source| sqlite(&self.path, source))
    }

    fn task_run_tasks(&self, run: i64) -> Result<Vec<StoredTask>, StoreError> {
        let mut tasks = self.rows(
            "SELECT task_index, task_id, scenario, dependency, context_from, leaked, language,
                    valid, invalid_reason, truth_output, truth_ms, excluded, excluded_output,
                    tests_selection
             FROM task_run_tasks WHERE run_id = ?1 ORDER BY task_index",
            [run],
            |row| {
                Ok(StoredTask {
                    index: row.get::<_, i64>(0)? as usize,
                    task_id: row.get(1)?,
                    scenario: stored(row, 2, "task_run_tasks", "scenario")?,
                    dependency: stored_option(row, 3, "task_run_tasks", "dependency")?,
                    context_from: stored_option(row, 4, "task_run_tasks", "context_from")?,
                    leaked: row.get(5)?,
                    language: row.get(6)?,
                    valid: row.get(7)?,
                    invalid_reason: row.get(8)?,
                    truth_output: row.get(9)?,
                    truth_ms: row.get(10)?,
                    excluded: row.get(11)?,
                    excluded_output: row.get(12)?,
                    // One this version cannot read is shown as none.
                    selection: (row.get::<_, Option<String>>(13)?)
                        .and_then(|json| serde_json::from_str(&json).ok()),
                    answers: Vec::new(),
                })
            },
        )?;
        let answers = self.rows(
            "SELECT task_index, sample, text, error, passed, exit_code, timed_out, cached,
                    output_tail, exact, edit_sim, es_line, es_token, bleu, sari, stopped,
                    complete_ms, test_ms, limit_hit
             FROM task_answers WHERE run_id = ?1 ORDER BY task_index, sample",
            [run],
            |row| {
                Ok((
                    row.get::<_, i64>(0)? as usize,
                    StoredAnswer {
                        sample: row.get(1)?,
                        text: row.get(2)?,
                        error: row.get(3)?,
                        passed: row.get(4)?,
                        exit_code: row.get(5)?,
                        timed_out: row.get(6)?,
                        cached: row.get(7)?,
                        output_tail: row.get(8)?,
                        scores: AnswerScores {
                            exact: row.get(9)?,
                            edit_similarity: row.get(10)?,
                            es_line: row.get(11)?,
                            es_token: row.get(12)?,
                            bleu: row.get(13)?,
                            sari: row.get(14)?,
                            stopped: row.get(15)?,
                        },
                        complete_ms: row.get(16)?,
                        test_ms: row.get(17)?,
                        limit: limit_of(row.get(18)?),
                    },
                ))
            },
        )?;
        for (index, answer) in answers {
            if let Some(task) = tasks.iter_mut().find(|t| t.index == index) {
                task.answers.push(answer);
            }
        }
        // A database made elsewhere may hold what this one never stores.
        Ok(tasks.iter().map(StoredTask::scrubbed).collect())
    }

    fn cached_execution(
        &self,
        state_hash: &str,
        answer_hash: &str,
        command: &str,
    ) -> Result<Option<CachedExecution>, StoreError> {
        self.conn
            .query_row(
                "SELECT passed, exit_code, timed_out, output_tail, duration_ms, limit_hit
                 FROM task_executions
                 WHERE state_hash = ?1 AND answer_hash = ?2 AND command = ?3",
                params![state_hash, answer_hash, stored_command(command)],
                |row| {
                    Ok(CachedExecution {
                        passed: row.get(0)?,
                        exit_code: row.get(1)?,
                        timed_out: row.get(2)?,
                        output_tail: crate::base::secrets::scrub(&row.get::<_, String>(3)?)
                            .into_owned(),
                        duration_ms: row.get(4)?,
                        limit: limit_of(row.get(5)?),
                    })
                },
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))
    }

    fn store_execution(
        &self,
        state_hash: &str,
        answer_hash: &str,
        command: &str,
        execution: &CachedExecution,
    ) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO task_executions (state_hash, answer_hash, command, passed,
                     exit_code, timed_out, output_tail, duration_ms, created_ns, limit_hit)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    state_hash,
                    answer_hash,
                    stored_command(command),
                    execution.passed,
                    execution.exit_code,
                    execution.timed_out,
                    crate::base::secrets::scrub(&execution.output_tail),
                    execution.duration_ms,
                    now_ns(),
                    execution.limit.map(Limit::key)
                ],
            )
            .map(|_| ())
            .map_err(|source| sqlite(&self.path, source))
    }

    fn coverage_map(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.conn
            .query_row(
                "SELECT map FROM task_coverage_maps WHERE key = ?1",
                [key],
                |row| row.get(0),
            )
            .optional()
            .map_err(|source| sqlite(&self.path, source))
    }

    fn store_coverage_map(&self, key: &str, map: &str, made_ms: f64) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO task_coverage_maps (key, map, made_ms, created_ns)
                 VALUES (?1, ?2, ?3, ?4)",
                params![key, map, made_ms, now_ns()],
            )
            .map(|_| ())
            .map_err(|source| sqlite(&self.path, source))
    }
}

/// A test command as the execution cache keys it: masked like a suggester's spec (a key
/// it carries is never stored; two commands that differ only in a secret share results).
fn stored_command(command: &str) -> String {
    crate::base::secrets::stored_spec(command)
}
