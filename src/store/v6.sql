-- Schema version 6: completion task runs (`nextedit tasks run`).
-- Reserved for the tasks work; it fills this file. Each migration only adds.
SELECT 1;
