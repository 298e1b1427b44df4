-- Workspace checkpoints in the blob store (SQLite edition; keep in step with migrations/postgres). A
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
    taken_at    TEXT        NOT NULL
);

-- The checkpoint a run's node first started from: a send-back to the node restores it, so
-- the rework starts where the work first did.
CREATE TABLE node_start_checkpoints (
    run_id     BLOB        NOT NULL,
    node       TEXT        NOT NULL,
    manifest   TEXT        NOT NULL,
    created_at TEXT        NOT NULL,
    PRIMARY KEY (run_id, node)
);
