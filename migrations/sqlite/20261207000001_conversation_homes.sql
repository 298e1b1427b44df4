-- Conversations' homes in the blob store (SQLite edition; keep in step with migrations/postgres). A
-- conversation's CLI keeps its own state (its sessions) in the home its turns run with,
-- outside the workspace; after each turn that changed it the runner saves it as a snapshot
-- of its own, beside the workspace's checkpoint, so a turn on another runner finds the
-- session to resume. Never delivered, never an artifact: it can hold unmasked tool output.
--
-- The latest state of each conversation's home: the snapshot's manifest digest in the blob
-- store, or NULL when the home that turn left could not be saved (past
-- storage.conversation_home_limit, or the blob store failed) and only that runner's disk
-- holds it; the runner, and what it was taken after.
CREATE TABLE conversation_homes (
    conversation_id BLOB        PRIMARY KEY,
    manifest        TEXT,
    runner          TEXT        NOT NULL,
    taken_after     TEXT        NOT NULL,
    taken_at        TEXT        NOT NULL
);
