-- Schema version 11: the field's other yardsticks of each replay step (issue 31): Zed's
-- delta-chrF (0–100) and the Next Edit Prediction benchmark's partial and position match
-- of the step's content, and whether the best-ranked prediction was at the location of an
-- edit allowed next. NULL: nothing to measure at that step. Runs recorded before version 11
-- have no rows here.

CREATE TABLE run_step_yardsticks (
    run_id        INTEGER NOT NULL,
    key           TEXT NOT NULL,
    step          INTEGER NOT NULL,
    delta_chrf    REAL,
    nep_partial   INTEGER,
    nep_position  INTEGER,
    location_hit  INTEGER,
    PRIMARY KEY (run_id, key, step)
);
