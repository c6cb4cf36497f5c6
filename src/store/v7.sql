-- Schema version 7: what the language server offered in a recorded session
-- (`nextedit live`). One row per offered item; what became of it is computed from the
-- session's edits and signals when it is read, never stored (so it can be recomputed).

CREATE TABLE offers (
    session_id  INTEGER NOT NULL,
    seq         INTEGER NOT NULL,               -- seq of the answer message
    rank        INTEGER NOT NULL,               -- 0-based position in the answer as sent
    request_seq INTEGER NOT NULL,               -- seq of the request it answers
    t_ns        INTEGER NOT NULL,               -- time of the answer
    latency_ns  INTEGER NOT NULL,               -- request to answer
    kind        TEXT NOT NULL,                  -- completion | inline_completion | code_action | rename | apply_edit
    method      TEXT NOT NULL,                  -- LSP method of the request
    uri         TEXT NOT NULL,                  -- document the request was about
    line        INTEGER,                        -- request position (0-based line), when it has one
    col_byte    INTEGER,                        -- request position, byte column in the text at the answer
    label       TEXT,                           -- completion label, code action title
    text        TEXT NOT NULL,                  -- the text it would insert at the position (masked)
    edits       TEXT NOT NULL,                  -- JSON [{"uri","start_byte","end_byte","text"}], offsets in the texts at the answer (masked)
    list_size   INTEGER NOT NULL,               -- items in the answer
    incomplete  INTEGER NOT NULL DEFAULT 0,     -- the answer was a CompletionList with isIncomplete (added by offers-record)
    PRIMARY KEY (session_id, seq, rank)
);
CREATE INDEX offers_by_request ON offers (session_id, request_seq);
