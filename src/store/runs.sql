-- Schema version 2: replay runs, stored step by step.

CREATE TABLE runs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at       TEXT NOT NULL,
    ended_at         TEXT,
    status           TEXT NOT NULL,             -- running | done | interrupted
    suggester        TEXT NOT NULL,             -- the --suggester spec
    config           TEXT NOT NULL,             -- JSON: order, match, seed, reveal, timeout
    nextedit_version TEXT NOT NULL
);

CREATE TABLE run_trajectories (
    run_id        INTEGER NOT NULL,
    key           TEXT NOT NULL,                -- what the user named: file path, commit, session
    position      INTEGER NOT NULL,             -- order within the run
    trajectory    TEXT,                         -- the trajectory JSON replayed (so resume needs no source)
    status        TEXT NOT NULL,                -- pending | running | done | failed
    initial       TEXT,                         -- edit id
    error         TEXT,
    PRIMARY KEY (run_id, key)
);

CREATE TABLE run_steps (
    run_id          INTEGER NOT NULL,
    key             TEXT NOT NULL,
    step            INTEGER NOT NULL,
    applied         TEXT NOT NULL,              -- edit id applied at the end of the step
    allowed         TEXT NOT NULL,              -- JSON array of edit ids
    remaining       INTEGER NOT NULL,
    precision       REAL NOT NULL,
    recall          REAL NOT NULL,
    f1              REAL NOT NULL,
    tp              INTEGER NOT NULL,
    fp              INTEGER NOT NULL,
    fn              INTEGER NOT NULL,
    content_edit    TEXT,
    content_bleu    REAL,
    content_es      REAL,
    content_generated INTEGER,
    suggest_ms      REAL NOT NULL,
    generate_ms     REAL,
    flow            TEXT NOT NULL,              -- JSON: the step as flow aggregation takes it
    PRIMARY KEY (run_id, key, step)
);

CREATE TABLE run_predictions (
    run_id      INTEGER NOT NULL,
    key         TEXT NOT NULL,
    step        INTEGER NOT NULL,
    rank        INTEGER NOT NULL,
    file        TEXT NOT NULL,
    start_line  INTEGER NOT NULL,
    end_line    INTEGER NOT NULL,
    text        TEXT NOT NULL,
    confidence  REAL,
    matched     TEXT,                           -- edit id it matched (one to one)
    class       TEXT NOT NULL,                  -- flow_keeping | flow_jumping | flow_reverting | flow_breaking
    PRIMARY KEY (run_id, key, step, rank)
);

CREATE TABLE run_errors (
    run_id      INTEGER NOT NULL,
    key         TEXT NOT NULL,
    step        INTEGER,                        -- NULL: the trajectory as a whole
    call        TEXT NOT NULL,                  -- initialize | suggest | generate | trajectory
    kind        TEXT NOT NULL,                  -- timeout | crash | bad_json | huge_output | error_response | bad_result | …
    message     TEXT NOT NULL
);
