-- Conversations (keep in step with migrations/sqlite).
-- One per chat thread the assistant works in. `state` is gatehouse-conversation's state as
-- JSON, written only by the scheduler, compare-and-set on `revision`; `last_seq` is
-- ingest's counter of what was said in the thread (each message's number, from 1).
-- `workspace` is the project's repositories as the first message froze them. The idle
-- timer is armed by the scheduler and fired by any scheduler replica once it is due.
CREATE TABLE conversations (
    id             UUID        PRIMARY KEY,
    requirement_id UUID        NOT NULL REFERENCES requirements (id),
    project        TEXT        NOT NULL,
    platform       TEXT        NOT NULL,
    channel        TEXT        NOT NULL,
    thread         TEXT        NOT NULL,
    started_by     TEXT        NOT NULL,
    workspace      TEXT        NOT NULL,
    state          TEXT        NOT NULL,
    revision       BIGINT      NOT NULL,
    -- working, waiting (a run holds the workspace), idle, released, new
    activity       TEXT        NOT NULL,
    last_seq       BIGINT      NOT NULL DEFAULT 0,
    idle_timer     BIGINT      NOT NULL DEFAULT 0,
    idle_due_ms    BIGINT,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL,
    UNIQUE (platform, channel, thread)
);
CREATE INDEX conversations_requirement ON conversations (requirement_id);
CREATE INDEX conversations_idle_due ON conversations (idle_due_ms) WHERE idle_due_ms IS NOT NULL;
