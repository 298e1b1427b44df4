-- Runs started from a conversation's thread (SQLite edition; keep in step with migrations/postgres).
-- Such a run starts from the conversation's workspace and holds it until it ends; then
-- the conversation takes the run's workspace back. Written by ingest in the transaction
-- that asks for the run.
CREATE TABLE conversation_runs (
    run_id          BLOB        PRIMARY KEY,
    conversation_id BLOB        NOT NULL REFERENCES conversations (id),
    created_at      TEXT        NOT NULL
);
CREATE INDEX conversation_runs_conversation ON conversation_runs (conversation_id);
