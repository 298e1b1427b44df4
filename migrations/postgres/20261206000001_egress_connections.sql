-- Egress connections (keep in step with migrations/sqlite).
-- Every connection a sandbox attempt made through the egress proxy, tunnelled or refused:
-- the host and port it asked for (as the client named them, untrusted), whether it was
-- allowed, the refusal explained, the bytes each way, when it came and how long it took.
-- An attempt is a run's node's (run_id, node, attempt) or a conversation turn's
-- (conversation_id, seq, attempt), never both. At most 1000 rows are kept per attempt
-- (the store refuses the rest; the runner summarises them). Runs and conversations are
-- never deleted; should they be, these rows go with them, as tool_calls and node_usage do.
CREATE TABLE egress_connections (
    id              BIGSERIAL   PRIMARY KEY,
    run_id          UUID,
    node            TEXT,
    conversation_id UUID,
    seq             BIGINT,
    attempt         INTEGER     NOT NULL,
    host            TEXT        NOT NULL,
    port            INTEGER     NOT NULL CHECK (port BETWEEN 0 AND 65535),
    -- allowed, refused
    verdict         TEXT        NOT NULL CHECK (verdict IN ('allowed', 'refused')),
    reason          TEXT,
    bytes_up        BIGINT      NOT NULL CHECK (bytes_up >= 0),
    bytes_down      BIGINT      NOT NULL CHECK (bytes_down >= 0),
    started_at      TIMESTAMPTZ NOT NULL,
    duration_ms     BIGINT      NOT NULL CHECK (duration_ms >= 0),
    CHECK ((run_id IS NOT NULL AND node IS NOT NULL AND conversation_id IS NULL AND seq IS NULL)
        OR (run_id IS NULL AND node IS NULL AND conversation_id IS NOT NULL AND seq IS NOT NULL))
);
CREATE INDEX egress_connections_by_run
    ON egress_connections (run_id, node, attempt, started_at) WHERE run_id IS NOT NULL;
CREATE INDEX egress_connections_by_conversation
    ON egress_connections (conversation_id, seq, attempt, started_at)
    WHERE conversation_id IS NOT NULL;
