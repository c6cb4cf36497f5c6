-- Schema version 10: how a task's tests were chosen (`tests_selection`, JSON: source
-- `coverage` | `name` | `none`, the hole's lines, how many qualified, the cap, the
-- order, why coverage gave none, the tests), and the per-state coverage maps
-- (`task_coverage_maps`: which tests execute which lines, keyed by the state, the
-- language, the driver, the interpreter and the test environment).

ALTER TABLE task_run_tasks ADD COLUMN tests_selection TEXT;

CREATE TABLE task_coverage_maps (
    key         TEXT PRIMARY KEY,
    map         TEXT NOT NULL,
    made_ms     REAL NOT NULL,
    created_ns  INTEGER NOT NULL
);
