-- Schema version 5: runs that are one shard of a planned run (`nextedit replay --shard`).
-- (Version 4 is another feature's; each migration only adds.)

-- NULL for a whole run. A shard run's JSON: {"index": i, "count": N, "units": [every
-- unit's trajectory key, in plan order]}; `nextedit runs merge` checks shards by it.
ALTER TABLE runs ADD COLUMN shard TEXT;
