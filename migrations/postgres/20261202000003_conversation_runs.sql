-- Runs started from a conversation's thread (keep in step with migrations/sqlite).
-- Such a run starts from the conversation's workspace and holds it until it ends; then
-- the conversation takes the run's workspace back. Written by ingest in the transaction
-- that asks for the run.
CREATE TABLE conversation_runs (
    run_id          UUID        PRIMARY KEY,
    conversation_id UUID        NOT NULL REFERENCES conversations (id),
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX conversation_runs_conversation ON conversation_runs (conversation_id);
