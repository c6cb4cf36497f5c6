-- Schema version 13: which right answer a replay step's content was scored against
-- (issue 31): 0 the gold edit itself, k its k-th alternative (an imported Zed example's
-- expected patches after the first; docs/metrics.md §10). NULL: a step without content,
-- or one recorded before version 13.

ALTER TABLE run_steps ADD COLUMN content_answer INTEGER;
