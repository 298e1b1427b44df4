-- Schedules and their fires (SQLite edition; keep in step with migrations/postgres). A fire is
-- recorded under its (schedule, scheduled time) before its run starts, so several schedulers and
-- restarts never fire twice.

CREATE TABLE schedules (
    name              TEXT        PRIMARY KEY,
    cron              TEXT        NOT NULL,
    timezone          TEXT        NOT NULL,
    sop               TEXT        NOT NULL,
    params            TEXT        NOT NULL,
    overlap           TEXT        NOT NULL,
    catchup_window_ms BIGINT      NOT NULL,
    paused            INTEGER     NOT NULL DEFAULT 0,
    pause_note        TEXT,
    source            TEXT        NOT NULL,
    -- Fires before this are not owed: a new schedule does not catch up on its past.
    since_ms          BIGINT      NOT NULL,
    created_at        TEXT        NOT NULL,
    updated_at        TEXT        NOT NULL
);

CREATE TABLE schedule_fires (
    schedule     TEXT   NOT NULL,
    scheduled_ms BIGINT NOT NULL,
    -- started, buffered, skipped_missed, skipped_overlap
    outcome      TEXT   NOT NULL,
    run_id       BLOB,
    fired_ms     BIGINT NOT NULL,
    lateness_ms  BIGINT NOT NULL,
    PRIMARY KEY (schedule, scheduled_ms)
);
