-- Schema version 4: reproducible runs (a response cache, repetitions, cache use per call).

-- Suggester answers by request: a re-run asks the cache before the suggester
-- (`replay --cache`). `request` is the SHA-256 of the call's canonical params (the
-- worktree path left out); the answer is `result` (JSON), or the failure.
CREATE TABLE response_cache (
    suggester       TEXT NOT NULL,              -- the --suggester spec, as given
    repetition      INTEGER NOT NULL,           -- 1-based repetition of the run that asked
    call            TEXT NOT NULL,              -- initialize | suggest | generate
    request         TEXT NOT NULL,              -- hex SHA-256 of the canonical params
    result          TEXT,                       -- JSON result; NULL when the call failed
    failure_kind    TEXT,                       -- timeout | crash | … when it failed
    failure_message TEXT,
    latency_ms      REAL NOT NULL,              -- the suggester's own time when it answered
    run_id          INTEGER NOT NULL,           -- the run that stored it (deleted with it)
    created_at      TEXT NOT NULL,
    PRIMARY KEY (suggester, repetition, call, request)
);

-- Repetitions of one replay (`replay --repetitions N`): run 1 of N is the group's
-- first run (repetition_of NULL), runs 2..N name it.
ALTER TABLE runs ADD COLUMN repetition INTEGER;              -- 1-based; NULL: 1
ALTER TABLE runs ADD COLUMN repetition_of INTEGER;           -- the first repetition's run id

-- Whether a call was served from the response cache (1), asked live (0), or the run
-- used no cache / made no such call (NULL).
ALTER TABLE run_steps ADD COLUMN suggest_cached INTEGER;
ALTER TABLE run_steps ADD COLUMN generate_cached INTEGER;
ALTER TABLE run_trajectories ADD COLUMN initialize_cached INTEGER;
