-- Comment commands run once per version of a comment (SQLite edition; keep in step with
-- migrations/postgres): the same comment (its id and `updated_at`) delivered again under
-- another delivery id — a redelivery, a second hook, a replayed body — starts nothing; an
-- edit is a new version, whose added commands run.
CREATE TABLE github_comment_commands (
    comment_id  BIGINT      NOT NULL,
    updated_at  TEXT        NOT NULL,
    -- the delivery that ran them
    delivery_id TEXT        NOT NULL,
    created_at  TEXT        NOT NULL,
    PRIMARY KEY (comment_id, updated_at)
);
