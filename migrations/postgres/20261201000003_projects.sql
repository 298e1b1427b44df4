-- Projects and repositories (keep in step with migrations/sqlite).
-- A run is frozen with the project and repositories it works on (the events crate's
-- RunWorkspace as JSON); its requirement and schedule name their project.
ALTER TABLE runs ADD COLUMN project TEXT;
ALTER TABLE runs ADD COLUMN workspace TEXT;
ALTER TABLE requirements ADD COLUMN project TEXT;
ALTER TABLE schedules ADD COLUMN project TEXT;

-- A requirement is delivered when every pull request opened for it is merged: open,
-- merged or closed (unmerged).
ALTER TABLE pull_requests ADD COLUMN state TEXT NOT NULL DEFAULT 'open';

-- The tree (git write-tree of every file, tracked and untracked) of each repository of a
-- run's workspace, as the last attempt left it.
CREATE TABLE workspace_trees (
    run_id      UUID        NOT NULL,
    repo        TEXT        NOT NULL,
    tree        TEXT        NOT NULL,
    -- the attempt that left it
    node        TEXT        NOT NULL,
    attempt     INTEGER     NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, repo)
);

-- What a gate's approval saw: the workspace's trees when it was approved. Delivery pushes
-- nothing else.
CREATE TABLE approved_trees (
    run_id      UUID        NOT NULL,
    node        TEXT        NOT NULL,
    attempt     INTEGER     NOT NULL,
    repo        TEXT        NOT NULL,
    tree        TEXT        NOT NULL,
    PRIMARY KEY (run_id, node, attempt, repo)
);

-- Work merged straight into a branch (deliver mode: direct), and the gate that accepted it.
CREATE TABLE direct_merges (
    run_id         UUID        NOT NULL,
    repo           TEXT        NOT NULL,
    requirement_id UUID,
    branch         TEXT        NOT NULL,
    commit_sha     TEXT        NOT NULL,
    -- the approved gate upstream of the delivery (node name), if any
    approved_by    TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, repo)
);
