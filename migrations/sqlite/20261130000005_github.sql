-- Webhook deliveries and requirements (SQLite edition; keep in step with migrations/postgres).

-- A delivery is stored before the webhook is answered, so nothing acknowledged is lost;
-- it is processed afterwards (and after a restart, if one came in between). The delivery
-- id is unique per source: a redelivery answers 2xx and does nothing.
CREATE TABLE webhook_deliveries (
    source       TEXT        NOT NULL,
    delivery_id  TEXT        NOT NULL,
    event        TEXT        NOT NULL,
    body         TEXT        NOT NULL,
    -- pending, processed, ignored
    status       TEXT        NOT NULL,
    note         TEXT,
    received_at  TEXT        NOT NULL,
    processed_at TEXT       ,
    PRIMARY KEY (source, delivery_id)
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (received_at)
    WHERE status = 'pending';

-- What people asked for: one per GitHub issue or pull request (and, later, chat thread).
CREATE TABLE requirements (
    id           BLOB        PRIMARY KEY,
    -- e.g. github:acme/app#12
    source_key   TEXT        NOT NULL UNIQUE,
    -- the events crate's RequirementSource as JSON
    source       TEXT        NOT NULL,
    title        TEXT        NOT NULL,
    body         TEXT        NOT NULL,
    url          TEXT,
    -- open, closed, delivered
    state        TEXT        NOT NULL,
    requested_by TEXT        NOT NULL,
    -- The source's own last-change time (GitHub's `updated_at`): an older event arriving
    -- late does not roll the requirement back.
    source_updated_at TEXT   NOT NULL,
    created_at   TEXT        NOT NULL,
    updated_at   TEXT        NOT NULL
);

-- One run per trigger occurrence: the same label event delivered twice under different
-- delivery ids (an organisation hook and a repository hook) starts one run.
CREATE TABLE trigger_starts (
    key        TEXT        PRIMARY KEY,
    run_id     BLOB        NOT NULL,
    created_at TEXT        NOT NULL
);

ALTER TABLE runs ADD COLUMN requirement_id BLOB;
CREATE INDEX runs_by_requirement ON runs (requirement_id, created_at);

-- Comments Gatehouse keeps on issues: one status comment per run, one reply per command
-- that needs an answer. `body` is what the comment should say; the notifier posts it and
-- clears `dirty`. A comment carries an invisible marker with its key, so a create that
-- failed after GitHub stored it, or a crash before `comment_id` was recorded, is found
-- instead of posted twice.
CREATE TABLE github_comments (
    key        TEXT        PRIMARY KEY,
    repo       TEXT        NOT NULL,
    number     BIGINT      NOT NULL,
    body       TEXT        NOT NULL,
    body_hash  TEXT        NOT NULL,
    comment_id BIGINT,
    dirty      BOOLEAN     NOT NULL,
    updated_at TEXT        NOT NULL
);
CREATE INDEX github_comments_dirty ON github_comments (updated_at) WHERE dirty;

-- Pull requests Gatehouse opened, so their merge marks the requirement they deliver.
CREATE TABLE pull_requests (
    repo           TEXT   NOT NULL,
    number         BIGINT NOT NULL,
    requirement_id BLOB   NOT NULL,
    run_id         BLOB   NOT NULL,
    branch         TEXT   NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (repo, number)
);
