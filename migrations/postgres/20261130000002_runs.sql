-- Runs: frozen SOP versions, run state, node attempts, artifacts, logs, gate decisions,
-- timers and API tokens.

-- The exact definition a run started with; runs keep their version when files change.
CREATE TABLE sop_versions (
    version    TEXT        PRIMARY KEY,
    name       TEXT        NOT NULL,
    source     TEXT        NOT NULL,
    body       TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- One row per run; `state` is the engine's state as JSON, `revision` guards concurrent
-- writers (compare-and-set).
CREATE TABLE runs (
    id             UUID        PRIMARY KEY,
    sop            TEXT        NOT NULL,
    sop_version    TEXT        NOT NULL REFERENCES sop_versions (version),
    params         TEXT        NOT NULL,
    requested_by   TEXT,
    status         TEXT        NOT NULL,
    state          TEXT        NOT NULL,
    revision       BIGINT      NOT NULL,
    parent_run     UUID,
    parent_node    TEXT,
    parent_attempt INTEGER,
    created_at     TIMESTAMPTZ NOT NULL,
    updated_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX runs_by_status ON runs (status, created_at);

-- Every execution of a node: recorded by the runner when it starts, closed when it ends.
CREATE TABLE node_attempts (
    run_id      UUID        NOT NULL,
    node        TEXT        NOT NULL,
    attempt     INTEGER     NOT NULL,
    status      TEXT        NOT NULL,
    exit_code   INTEGER,
    error       TEXT,
    started_at  TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    duration_ms BIGINT,
    PRIMARY KEY (run_id, node, attempt)
);

CREATE TABLE artifacts (
    run_id  UUID    NOT NULL,
    node    TEXT    NOT NULL,
    attempt INTEGER NOT NULL,
    name    TEXT    NOT NULL,
    sha256  TEXT    NOT NULL,
    size    BIGINT  NOT NULL,
    -- The file, relative to the data directory; an imported artifact points at the
    -- child run\'s file.
    location TEXT   NOT NULL,
    PRIMARY KEY (run_id, node, attempt, name)
);

CREATE TABLE node_logs (
    seq     BIGSERIAL   PRIMARY KEY,
    run_id  UUID        NOT NULL,
    node    TEXT        NOT NULL,
    attempt INTEGER     NOT NULL,
    stream  TEXT        NOT NULL,
    line    TEXT        NOT NULL,
    at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX node_logs_by_attempt ON node_logs (run_id, node, attempt, seq);

-- The audit trail of gate decisions: who, where, when, what.
CREATE TABLE gate_decisions (
    id         BIGSERIAL   PRIMARY KEY,
    run_id     UUID        NOT NULL,
    node       TEXT        NOT NULL,
    attempt    INTEGER     NOT NULL,
    decision   TEXT        NOT NULL,
    target     TEXT,
    comment    TEXT,
    person     TEXT        NOT NULL,
    channel    TEXT        NOT NULL,
    outcome    TEXT        NOT NULL,
    decided_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX gate_decisions_by_run ON gate_decisions (run_id, id);

-- Retries and gate expiries waiting for their time; they survive restarts.
CREATE TABLE timers (
    run_id  UUID    NOT NULL,
    node    TEXT    NOT NULL,
    attempt INTEGER NOT NULL,
    kind    TEXT    NOT NULL,
    due_ms  BIGINT  NOT NULL,
    PRIMARY KEY (run_id, node, attempt, kind)
);
CREATE INDEX timers_due ON timers (due_ms);

-- API bearer tokens, stored as SHA-256 hashes.
CREATE TABLE api_tokens (
    id         UUID        PRIMARY KEY,
    name       TEXT        NOT NULL,
    hash       TEXT        NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL
);
