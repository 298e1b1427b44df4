-- Budget ledger (SQLite edition; keep in step with migrations/postgres).
-- What each budget scope has spent at the model gateway, shared by every runner and kept
-- across restarts: a scope is an attempt (`attempt:<run>:<node>:<n>`, `turn:<conversation>:
-- <seq>:<n>`), a run (`run:<run>`) or a project's UTC day (`project:<name>:<YYYY-MM-DD>`).
-- Tokens of every kind and USD in micro-dollars, both added atomically when a request is
-- charged; the largest request seen, which admission uses to keep concurrent requests
-- from overshooting; the limit last admitted against, for `run show`.
CREATE TABLE spend (
    scope              TEXT    PRIMARY KEY,
    -- Who the limit is, as the refusal names it: "project api", "role coder", "run 01ab…".
    label              TEXT    NOT NULL,
    -- "today", "for this attempt", "for this run".
    period             TEXT    NOT NULL,
    tokens             BIGINT  NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    usd_micros         BIGINT  NOT NULL DEFAULT 0 CHECK (usd_micros >= 0),
    requests           BIGINT  NOT NULL DEFAULT 0 CHECK (requests >= 0),
    largest_tokens     BIGINT  NOT NULL DEFAULT 0 CHECK (largest_tokens >= 0),
    largest_usd_micros BIGINT  NOT NULL DEFAULT 0 CHECK (largest_usd_micros >= 0),
    limit_tokens       BIGINT,
    limit_usd_micros   BIGINT,
    updated_ms         BIGINT  NOT NULL
);
-- Requests admitted and not yet charged, per scope: near a limit a scope admits a request
-- only when none is in flight or what is left covers the largest request seen for each.
-- A hold expires (a runner that died mid-request holds nothing for long).
CREATE TABLE spend_holds (
    scope      TEXT   NOT NULL,
    hold       TEXT   NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (scope, hold)
);
CREATE INDEX spend_holds_by_hold ON spend_holds (hold);
