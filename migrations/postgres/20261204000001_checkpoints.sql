-- Workspace checkpoints in the blob store (keep in step with migrations/sqlite). A
-- workspace follows its run or conversation from runner to runner: the runner that holds
-- it is preferred, any other restores the latest checkpoint before it starts.
--
-- The latest checkpoint of each workspace, `run:<id>` or `conversation:<id>`: the
-- manifest's digest, the runner whose disk matches it, and what it was taken after.
CREATE TABLE workspace_checkpoints (
    workspace   TEXT        PRIMARY KEY,
    manifest    TEXT        NOT NULL,
    runner      TEXT        NOT NULL,
    taken_after TEXT        NOT NULL,
    taken_at    TIMESTAMPTZ NOT NULL
);

-- The checkpoint a run's node first started from: a send-back to the node restores it, so
-- the rework starts where the work first did.
CREATE TABLE node_start_checkpoints (
    run_id     UUID        NOT NULL,
    node       TEXT        NOT NULL,
    manifest   TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, node)
);
