-- Sandboxes and agents: what a run froze when it first used a sandbox profile or an agent
-- role, and the tokens and cost of every agent attempt.

-- A run keeps the profile and role it started with even when the configuration changes
-- under it: the first runner to use (kind, name) for a run writes it, later ones read it.
CREATE TABLE run_settings (
    run_id UUID NOT NULL,
    -- profile, role
    kind   TEXT NOT NULL,
    name   TEXT NOT NULL,
    -- the JSON value as it was frozen
    body   TEXT NOT NULL,
    PRIMARY KEY (run_id, kind, name)
);

-- One row per model an agent attempt used. cost_usd is NULL when the model has no price.
CREATE TABLE node_usage (
    run_id             UUID             NOT NULL,
    node               TEXT             NOT NULL,
    attempt            INTEGER          NOT NULL,
    model              TEXT             NOT NULL,
    input_tokens       BIGINT           NOT NULL,
    output_tokens      BIGINT           NOT NULL,
    cache_read_tokens  BIGINT           NOT NULL,
    cache_write_tokens BIGINT           NOT NULL,
    cost_usd           DOUBLE PRECISION,
    PRIMARY KEY (run_id, node, attempt, model)
);
