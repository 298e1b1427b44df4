-- Conversations (keep in step with migrations/sqlite).
-- One per chat thread: its requirement and project, the workspace it checks out (the events
-- crate's RunWorkspace as JSON), and its state (gatehouse-conversation's Conversation as
-- JSON), written compare-and-set on revision as runs are.
CREATE TABLE conversations (
    id             UUID        PRIMARY KEY,
    -- slack:C0123:1700000000.000100, discord:CHANNEL:MESSAGE: one conversation per thread
    thread_key     TEXT        NOT NULL UNIQUE,
    requirement_id UUID,
    project        TEXT,
    workspace      TEXT,
    state          TEXT        NOT NULL,
    revision       BIGINT      NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);

-- The effects of a conversation carried out, by their key: each at most once, however
-- often the state that asked for it is replayed.
CREATE TABLE conversation_effects (
    conversation_id UUID        NOT NULL,
    effect_key      TEXT        NOT NULL,
    done_at         TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (conversation_id, effect_key)
);
