-- Schema version 3: sessions linked to commits, and what suggesters read during replay.

-- The commit that contains a recorded session's edits (`nextedit sessions link`).
ALTER TABLE sessions ADD COLUMN linked_commit TEXT;

-- Locations a suggester read while answering one replay step: reported in its
-- `reads` field, or recorded by a nextedit proxy in front of its language server.
CREATE TABLE run_reads (
    run_id      INTEGER NOT NULL,
    key         TEXT NOT NULL,
    step        INTEGER NOT NULL,
    seq         INTEGER NOT NULL,               -- order within the step
    call        TEXT NOT NULL,                  -- suggest | generate
    source      TEXT NOT NULL,                  -- reported | lsp
    file        TEXT NOT NULL,
    start_line  INTEGER NOT NULL,               -- 0-based
    end_line    INTEGER,                        -- exclusive; NULL = whole file
    via         TEXT,                           -- LSP method, tool name, …
    PRIMARY KEY (run_id, key, step, seq)
);
