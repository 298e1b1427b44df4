-- After the pull request: what Gatehouse hears about the
-- pull requests it opened, and the feedback it turned into work.

-- The head commit a delivery last pushed, so a check result for an older head is told
-- apart from one for the work as it stands.
ALTER TABLE pull_requests ADD COLUMN head_sha TEXT NOT NULL DEFAULT '';
-- The checks on that head as last heard: '', 'pending', 'success' or 'failure'.
ALTER TABLE pull_requests ADD COLUMN checks TEXT NOT NULL DEFAULT '';

-- Every event about one of those pull requests (reviews, comments, checks, pushes), with
-- what became of it, shown with the requirement.
CREATE TABLE pull_request_events (
    id             BIGSERIAL   PRIMARY KEY,
    repo           TEXT        NOT NULL,
    number         BIGINT      NOT NULL,
    requirement_id UUID        NOT NULL,
    delivery_id    TEXT        NOT NULL,
    -- e.g. pull_request_review.submitted
    event          TEXT        NOT NULL,
    -- the GitHub login that caused it ('' for CI)
    actor          TEXT        NOT NULL,
    summary        TEXT        NOT NULL,
    outcome        TEXT        NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX pull_request_events_requirement ON pull_request_events (requirement_id, id);

-- Feedback turned into work, by its key (review:ID, checks:SHA, conflict:SHA): the same
-- feedback under another delivery id (a second hook, a redelivery) starts nothing.
CREATE TABLE pull_feedback (
    key         TEXT        PRIMARY KEY,
    delivery_id TEXT        NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
