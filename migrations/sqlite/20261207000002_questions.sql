-- Questions an agent asked a person while it ran (SQLite edition; keep in step with migrations/postgres):
-- `request_approval` from Gatehouse's MCP server, or a tool call its role's permissions
-- say to `ask` about. The agent's attempt waits in the tool call while the question is
-- open; a person approves or denies it from a chat card, the console or the API, once
-- (compare-and-set on `status`).
--
-- A question belongs to a run's node or to a conversation's turn, never both, and is
-- keyed by its owner and the digest of its text: when the attempt that asked is lost (its
-- runner killed) and the node runs again, the new attempt asking the same thing adopts the
-- question (its card, its decision) instead of asking twice. `attempt` is the attempt that
-- asked last.
CREATE TABLE questions (
    id              BLOB        PRIMARY KEY,
    -- "node:<run>:<node>" or "turn:<conversation>:<seq>", the key questions are unique in.
    owner_key       TEXT        NOT NULL,
    run_id          BLOB,
    node            TEXT,
    conversation_id BLOB,
    seq             BIGINT,
    attempt         INTEGER     NOT NULL,
    project         TEXT,
    -- approval (request_approval), permission (an `ask` rule)
    kind            TEXT        NOT NULL CHECK (kind IN ('approval', 'permission')),
    question        TEXT        NOT NULL,
    evidence        TEXT,
    digest          TEXT        NOT NULL,
    -- open, approved, denied, expired, withdrawn
    status          TEXT        NOT NULL
        CHECK (status IN ('open', 'approved', 'denied', 'expired', 'withdrawn')),
    decided_by      TEXT,
    channel         TEXT,
    comment         TEXT,
    asked_at        TEXT        NOT NULL,
    expires_at      TEXT,
    decided_at      TEXT,
    UNIQUE (owner_key, digest),
    CHECK ((run_id IS NOT NULL AND node IS NOT NULL AND conversation_id IS NULL AND seq IS NULL)
        OR (run_id IS NULL AND node IS NULL AND conversation_id IS NOT NULL AND seq IS NOT NULL))
);
CREATE INDEX questions_open ON questions (asked_at) WHERE status = 'open';
CREATE INDEX questions_by_run ON questions (run_id, asked_at) WHERE run_id IS NOT NULL;
CREATE INDEX questions_by_conversation ON questions (conversation_id, asked_at)
    WHERE conversation_id IS NOT NULL;
