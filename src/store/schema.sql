-- nextedit database, schema version 1.
-- Times: t_ns = nanoseconds since the session started (monotonic clock);
-- started_at/ended_at = RFC 3339 UTC wall clock. Coordinates: 0-based lines,
-- byte offsets into UTF-8 text (ARCHITECTURE.md, invariant 2). `seq` orders every row of one
-- session across all tables.

CREATE TABLE sessions (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    kind              TEXT NOT NULL,            -- recorded | commit | imported
    started_at        TEXT NOT NULL,
    ended_at          TEXT,
    status            TEXT NOT NULL,            -- running | ended | signalled | incomplete (frames lost)
    workspace         TEXT,
    git_head          TEXT,
    server_command    TEXT,                     -- JSON array of argv
    position_encoding TEXT,
    client            TEXT,
    server            TEXT,
    nextedit_version  TEXT NOT NULL,
    pid               INTEGER,
    exit_code         INTEGER,
    dropped           INTEGER NOT NULL DEFAULT 0, -- frames the recorder could not keep
    record_raw        INTEGER NOT NULL DEFAULT 1,
    trajectory        TEXT                      -- whole trajectory JSON (commit/imported sessions)
);

CREATE TABLE messages (
    session_id  INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    t_ns        INTEGER NOT NULL,
    dir         TEXT NOT NULL,                  -- c2s | s2c
    kind        TEXT,                           -- request | response | notification | other; NULL if not JSON
    method      TEXT,                           -- responses carry their request's method
    msg_id      TEXT,                           -- raw JSON text of the id
    size        INTEGER NOT NULL,
    raw         BLOB,                           -- exact frame bytes with secrets masked; NULL when off or excluded
    redactions  INTEGER NOT NULL DEFAULT 0,
    invalid     TEXT,                           -- why the frame is not a valid message
    consumed    INTEGER NOT NULL DEFAULT 0,     -- editor signal kept back by the proxy
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX messages_by_id ON messages (session_id, dir, msg_id);

CREATE TABLE documents (
    session_id  INTEGER NOT NULL,
    uri         TEXT NOT NULL,
    path        TEXT NOT NULL,                  -- relative to the workspace when inside it
    language_id TEXT,
    excluded    INTEGER NOT NULL DEFAULT 0,     -- text never stored
    first_seq   INTEGER NOT NULL,
    PRIMARY KEY (session_id, uri)
);

CREATE TABLE snapshots (
    session_id  INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    t_ns        INTEGER NOT NULL,
    uri         TEXT NOT NULL,
    kind        TEXT NOT NULL,                  -- open | save | close
    version     INTEGER NOT NULL,
    text        TEXT,
    redactions  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE edits (
    session_id   INTEGER NOT NULL,
    seq          INTEGER NOT NULL,
    t_ns         INTEGER NOT NULL,
    uri          TEXT NOT NULL,
    version      INTEGER NOT NULL,
    change_index INTEGER NOT NULL,              -- position within its didChange
    start_byte   INTEGER NOT NULL,              -- in the text before
    end_byte     INTEGER NOT NULL,
    start_line   INTEGER NOT NULL,              -- line of start_byte, text before
    end_line     INTEGER NOT NULL,              -- line of end_byte, text before
    new_end_line INTEGER NOT NULL,              -- line of the inserted text's end, text after
    text_before  TEXT NOT NULL,
    text_after   TEXT NOT NULL,
    origin       TEXT NOT NULL DEFAULT 'user',
    redactions   INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX edits_by_uri ON edits (session_id, uri, seq);

CREATE TABLE reads (
    session_id  INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    t_ns        INTEGER NOT NULL,
    uri         TEXT NOT NULL,
    via         TEXT NOT NULL,                  -- LSP method, or 'open'
    role        TEXT NOT NULL,                  -- open | request | target
    start_line  INTEGER NOT NULL,               -- half-open [start_line, end_line)
    end_line    INTEGER NOT NULL,
    request_id  TEXT,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE signals (
    session_id  INTEGER NOT NULL,
    seq         INTEGER NOT NULL,
    t_ns        INTEGER NOT NULL,
    kind        TEXT NOT NULL,                  -- cursor | selection | visible_ranges | focus
    uri         TEXT,
    payload     TEXT NOT NULL,                  -- params JSON as sent by the editor
    PRIMARY KEY (session_id, seq)
);
