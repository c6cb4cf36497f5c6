-- Schema version 6: completion task runs (`nextedit tasks run`). Each migration only adds.
-- A run asks one suggester for N samples per task and runs each answer's covering tests;
-- the ground truth of every task is run first and decides whether the task is valid.

CREATE TABLE task_runs (
    id          INTEGER PRIMARY KEY,
    created_ns  INTEGER NOT NULL,
    suggester   TEXT NOT NULL,                  -- the --suggester spec
    samples     INTEGER NOT NULL,               -- answers asked per task (pass@k's n)
    task_file   TEXT NOT NULL,                  -- the task file as given
    settings    TEXT NOT NULL,                  -- JSON: the run's settings (for --resume)
    finished_ns INTEGER                         -- set when every task is done
);

-- One row per task of a run, written when the task is done (its answers with it).
CREATE TABLE task_run_tasks (
    run_id         INTEGER NOT NULL REFERENCES task_runs(id),
    task_index     INTEGER NOT NULL,            -- 0-based line in the task file
    task_id        TEXT NOT NULL,
    scenario       TEXT NOT NULL,
    dependency     TEXT,                        -- standalone | intra_class | intra_file | cross_file
    context_from   TEXT,                        -- state | head (the task's retrieved context)
    leaked         INTEGER NOT NULL DEFAULT 0,  -- its context held a chunk from the future
    language       TEXT NOT NULL,
    valid          INTEGER NOT NULL,            -- the ground truth passed its tests
    invalid_reason TEXT,                        -- why not (no tests, ground truth failed, ...)
    truth_output   TEXT,                        -- tail of the ground truth's test output
    truth_ms       REAL,                        -- the ground truth's test duration (0 when cached)
    PRIMARY KEY (run_id, task_index)
);

-- One row per answer (sample) of a task.
CREATE TABLE task_answers (
    run_id       INTEGER NOT NULL REFERENCES task_runs(id),
    task_index   INTEGER NOT NULL,
    sample       INTEGER NOT NULL,              -- repetition index, 0-based
    text         TEXT NOT NULL,                 -- the answer ('' when the call failed)
    error        TEXT,                          -- the call's failure, when it failed
    passed       INTEGER NOT NULL,              -- the covering tests passed with the answer
    exit_code    INTEGER,                       -- the test command's exit code (NULL: killed)
    timed_out    INTEGER NOT NULL,
    cached       INTEGER NOT NULL,              -- the execution came from task_executions
    output_tail  TEXT NOT NULL,                 -- last lines of the test output
    exact        INTEGER NOT NULL,
    edit_sim     REAL NOT NULL,
    es_line      REAL NOT NULL,
    es_token     REAL NOT NULL,
    bleu         REAL NOT NULL,                 -- BLEU-4, 0-100
    sari         REAL NOT NULL,
    stopped      INTEGER,                       -- stopped at the right point (block scenarios)
    complete_ms  REAL NOT NULL,                 -- the complete call
    test_ms      REAL NOT NULL,                 -- the test run (0 when cached)
    PRIMARY KEY (run_id, task_index, sample)
);

-- Test executions by what decides their outcome, so an identical answer is not run twice.
CREATE TABLE task_executions (
    state_hash  TEXT NOT NULL,                  -- sha256 of the task's state (commit, files, hole)
    answer_hash TEXT NOT NULL,                  -- sha256 of the answer
    command     TEXT NOT NULL,                  -- the test command line, limits included
    passed      INTEGER NOT NULL,
    exit_code   INTEGER,
    timed_out   INTEGER NOT NULL,
    output_tail TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    created_ns  INTEGER NOT NULL,
    PRIMARY KEY (state_hash, answer_hash, command)
);
