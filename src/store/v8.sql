-- Schema version 8: the limit a task's test run hit (`pids`, `memory`, `disk`, `time`;
-- NULL: none), its process tree killed for it.

ALTER TABLE task_answers ADD COLUMN limit_hit TEXT;
ALTER TABLE task_executions ADD COLUMN limit_hit TEXT;
