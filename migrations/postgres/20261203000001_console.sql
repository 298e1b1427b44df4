-- The console's sign-in (keep in step with migrations/sqlite). Only hashes of secrets are
-- kept: a leaked row signs nobody in.
--
-- A one-time login link: created for a person (by `gatehouse login` or `@gatehouse
-- login`), used once, before it expires.
CREATE TABLE login_links (
    hash       TEXT        PRIMARY KEY,
    person     TEXT        NOT NULL,
    created_by TEXT        NOT NULL,
    -- What the session it starts may do (`read,run,decide`): never more than the token
    -- that asked for the link had.
    scopes     TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
-- A signed-in browser: the cookie holds the secret whose hash is `hash`. Signing out ends
-- the row, so the cookie is refused from then on, wherever it is replayed.
CREATE TABLE console_sessions (
    id           UUID        PRIMARY KEY,
    hash         TEXT        NOT NULL UNIQUE,
    person       TEXT        NOT NULL,
    -- How the person signed in: `link` or `github`.
    via          TEXT        NOT NULL,
    scopes       TEXT        NOT NULL,
    created_at   TIMESTAMPTZ NOT NULL,
    expires_at   TIMESTAMPTZ NOT NULL,
    ended_at     TIMESTAMPTZ
);
CREATE INDEX console_sessions_person ON console_sessions (person);
-- A GitHub sign-in under way: the `state` sent to GitHub, accepted back once.
CREATE TABLE oauth_states (
    hash       TEXT        PRIMARY KEY,
    -- The console page to return to afterwards.
    next       TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ
);
-- The console pages a run's output from either end: by run, in order.
CREATE INDEX node_logs_by_run ON node_logs (run_id, seq);
-- An SOP's page lists the versions runs used, with how many runs each.
CREATE INDEX runs_by_sop_version ON runs (sop_version);
CREATE INDEX sop_versions_by_name ON sop_versions (name, created_at);
-- The inbox lists the runs each person asked for.
CREATE INDEX runs_by_requester ON runs (requested_by, created_at);
CREATE INDEX conversations_by_starter ON conversations (started_by, created_at);
