-- Foundation: the outbox, the inbox, dead letters, and the tables behind the in-process bus.
-- Lease and visibility columns are epoch milliseconds so Postgres and SQLite compare them
-- the same way; human-facing times are timestamps.

-- Events a service emitted in the same transaction as its state change, waiting for the
-- relay to publish them.
CREATE TABLE outbox (
    seq            BIGSERIAL PRIMARY KEY,
    id             UUID        NOT NULL UNIQUE,
    topic          TEXT        NOT NULL,
    payload        BYTEA       NOT NULL,
    traceparent    TEXT,
    created_at     TIMESTAMPTZ NOT NULL,
    lease_until_ms BIGINT,
    attempts       INTEGER     NOT NULL DEFAULT 0,
    last_error     TEXT,
    sent_at        TIMESTAMPTZ
);
CREATE INDEX outbox_unsent ON outbox (seq) WHERE sent_at IS NULL;
CREATE INDEX outbox_sent ON outbox (sent_at) WHERE sent_at IS NOT NULL;

-- Events a consumer has applied: recorded in the transaction of the effect, so a
-- redelivery is a no-op.
CREATE TABLE inbox (
    consumer     TEXT        NOT NULL,
    event_id     UUID        NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (consumer, event_id)
);

-- Messages a consumer gave up on, with the reason, for an operator to inspect or replay.
CREATE TABLE dead_letters (
    id         BIGSERIAL PRIMARY KEY,
    consumer   TEXT        NOT NULL,
    event_id   UUID,
    topic      TEXT        NOT NULL,
    payload    BYTEA       NOT NULL,
    reason     TEXT        NOT NULL,
    deliveries INTEGER     NOT NULL,
    parked_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX dead_letters_by_consumer ON dead_letters (consumer, id);

-- The in-process bus: a message log, durable named consumers, and one delivery row per
-- (consumer, message) that is still to be acknowledged.
-- One row per stream, locked by publishers (shared) and by consumer creation (exclusive) so
-- a new consumer's backfill and a concurrent publish cannot miss each other.
CREATE TABLE bus_streams (
    name TEXT PRIMARY KEY
);
INSERT INTO bus_streams (name) VALUES ('events'), ('jobs');

CREATE TABLE bus_messages (
    seq          BIGSERIAL PRIMARY KEY,
    id           UUID   NOT NULL UNIQUE,
    stream       TEXT   NOT NULL,
    topic        TEXT   NOT NULL,
    payload      BYTEA  NOT NULL,
    traceparent  TEXT,
    published_ms BIGINT NOT NULL
);
CREATE INDEX bus_messages_by_stream ON bus_messages (stream, seq);

CREATE TABLE bus_consumers (
    name       TEXT        PRIMARY KEY,
    stream     TEXT        NOT NULL,
    filter     TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE bus_deliveries (
    consumer   TEXT    NOT NULL REFERENCES bus_consumers (name) ON DELETE CASCADE,
    seq        BIGINT  NOT NULL REFERENCES bus_messages (seq) ON DELETE CASCADE,
    deliveries INTEGER NOT NULL DEFAULT 0,
    visible_ms BIGINT  NOT NULL,
    PRIMARY KEY (consumer, seq)
);
CREATE INDEX bus_deliveries_due ON bus_deliveries (consumer, visible_ms);
CREATE INDEX bus_deliveries_by_seq ON bus_deliveries (seq);
