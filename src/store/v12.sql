-- Schema version 12: what a judge model said about each replay step's scored prediction
-- (`replay --judge`, issue 31): the question asked (`nep` or `zed-qa`), the parsed verdict
-- (nep: `yes`; zed-qa: `reverts_edits` and `confidence` 1-5) or why there is none (the
-- kind and message of the failure: an unreadable answer is `bad_result`), and whether
-- the answer came from the response cache. A step the judge was not asked about has no
-- row; runs recorded before version 12 have none.

CREATE TABLE run_step_judgements (
    run_id           INTEGER NOT NULL,
    key              TEXT NOT NULL,
    step             INTEGER NOT NULL,
    prompt           TEXT NOT NULL,
    yes              INTEGER,
    reverts_edits    INTEGER,
    confidence       INTEGER,
    failure_kind     TEXT,
    failure_message  TEXT,
    cached           INTEGER NOT NULL,
    PRIMARY KEY (run_id, key, step)
);
