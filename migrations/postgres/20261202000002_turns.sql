-- Conversation turns as runners record them (keep in step with migrations/sqlite).
-- One row per attempt of a turn, begun once (a second begin means its runner died, so the
-- attempt is reported interrupted, never run twice). `session_id` is the CLI's session as
-- soon as its output names it, so an interrupted attempt's successor resumes it.
-- `duration_ms` is the whole attempt, `cli_ms` the CLI process's own wall time: their
-- difference is what Gatehouse adds to a turn. `reply` and `failure` are untrusted text,
-- as the CLI printed it (secrets masked).
CREATE TABLE turn_attempts (
    conversation_id UUID        NOT NULL,
    seq             BIGINT      NOT NULL,
    attempt         INTEGER     NOT NULL,
    requirement_id  UUID        NOT NULL,
    role            TEXT        NOT NULL,
    ask             BOOLEAN     NOT NULL,
    -- running, replied, failed, interrupted
    status          TEXT        NOT NULL,
    session_id      TEXT,
    reply           TEXT,
    failure         TEXT,
    started_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ,
    duration_ms     BIGINT,
    cli_ms          BIGINT,
    PRIMARY KEY (conversation_id, seq, attempt)
);

-- The tools a turn's attempt called, as tool_calls holds them for node attempts.
CREATE TABLE turn_tool_calls (
    conversation_id UUID        NOT NULL,
    seq             BIGINT      NOT NULL,
    attempt         INTEGER     NOT NULL,
    n               INTEGER     NOT NULL,
    tool            TEXT        NOT NULL,
    summary         TEXT        NOT NULL,
    started_ms      BIGINT      NOT NULL,
    duration_ms     BIGINT,
    failed          BOOLEAN     NOT NULL,
    PRIMARY KEY (conversation_id, seq, attempt, n)
);

-- One row per model a turn's attempt used, as node_usage; cost_usd is NULL when the model
-- has no price. requirement_id lets a requirement's total gather its turns'.
CREATE TABLE turn_usage (
    conversation_id    UUID             NOT NULL,
    seq                BIGINT           NOT NULL,
    attempt            INTEGER          NOT NULL,
    model              TEXT             NOT NULL,
    requirement_id     UUID             NOT NULL,
    input_tokens       BIGINT           NOT NULL,
    output_tokens      BIGINT           NOT NULL,
    cache_read_tokens  BIGINT           NOT NULL,
    cache_write_tokens BIGINT           NOT NULL,
    cost_usd           DOUBLE PRECISION,
    PRIMARY KEY (conversation_id, seq, attempt, model)
);
CREATE INDEX turn_usage_requirement ON turn_usage (requirement_id);

-- Attempts someone stopped (`stop`, `steer`), recorded by whichever runner heard the
-- `turn.cancel`: the runner running the attempt (any replica) finds it here, and one that
-- has not started it yet does not start it.
CREATE TABLE turn_cancels (
    conversation_id UUID        NOT NULL,
    seq             BIGINT      NOT NULL,
    attempt         INTEGER     NOT NULL,
    at              TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (conversation_id, seq, attempt)
);
