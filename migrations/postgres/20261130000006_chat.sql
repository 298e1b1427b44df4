-- Chat: the messages Gatehouse keeps in Slack and Discord, and the claims that make gate
-- decisions compare-and-set across every channel.

-- One row per message Gatehouse shows: an approval card per (gate attempt, channel), a
-- run's progress message in its requirement's thread, a reply to a command, an ephemeral
-- answer to a click. `body` is the platform-neutral value (JSON); the notifier renders and
-- posts it and clears `dirty`. `first_try_at` is set before the first post, so after a
-- crash the poster looks for a message it may already have created (Slack: by metadata;
-- Discord: by nonce) instead of posting a second one.
CREATE TABLE chat_messages (
    key          TEXT        PRIMARY KEY,
    -- slack, discord
    platform     TEXT        NOT NULL,
    channel      TEXT        NOT NULL,
    -- Slack thread_ts / Discord message replied to
    thread       TEXT,
    -- ephemeral answers: the Slack user, or the Discord interaction token
    recipient    TEXT,
    run_id       UUID,
    body         TEXT        NOT NULL,
    body_hash    TEXT        NOT NULL,
    -- Slack ts / Discord message id, once posted
    message_id   TEXT,
    first_try_at TIMESTAMPTZ,
    dirty        BOOLEAN     NOT NULL,
    updated_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX chat_messages_dirty ON chat_messages (updated_at) WHERE dirty;
CREATE INDEX chat_messages_by_run ON chat_messages (run_id);

-- Every decision claimed on a gate attempt, one per person: a second click by the same
-- person is refused instead of counted twice.
CREATE TABLE gate_votes (
    run_id     UUID       NOT NULL,
    node       TEXT        NOT NULL,
    attempt    INTEGER     NOT NULL,
    person     TEXT        NOT NULL,
    decision   TEXT        NOT NULL,
    channel    TEXT        NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, node, attempt, person)
);

-- The decision that settles a gate attempt: the primary key is the compare-and-set, so of
-- two simultaneous final decisions exactly one is inserted and the other is told who won.
CREATE TABLE gate_outcomes (
    run_id     UUID       NOT NULL,
    node       TEXT        NOT NULL,
    attempt    INTEGER     NOT NULL,
    decision   TEXT        NOT NULL,
    target     TEXT,
    decided_by TEXT        NOT NULL,
    channel    TEXT        NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, node, attempt)
);
