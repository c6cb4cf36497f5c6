-- Schema version 9: a task whose ground truth passes but whose do-nothing answer passes
-- too (the empty hole, or the file as cut) is non-discriminating: `excluded` names which
-- one passed (NULL: none did), `excluded_output` is the tail of that run's output.

ALTER TABLE task_run_tasks ADD COLUMN excluded TEXT;
ALTER TABLE task_run_tasks ADD COLUMN excluded_output TEXT;
