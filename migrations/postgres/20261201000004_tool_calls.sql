-- Tool traces (keep in step with migrations/sqlite).
-- The tools an agent attempt called, parsed from its CLI's output as it ran (Claude Code's
-- stream-json, Codex's JSON events): which tool, a one-line summary of its input, when it
-- started (ms after the attempt began), how long it took (none without a result), whether
-- it failed. Untrusted text, as the agent wrote it.
CREATE TABLE tool_calls (
    run_id      UUID        NOT NULL,
    node        TEXT        NOT NULL,
    attempt     INTEGER     NOT NULL,
    seq         INTEGER     NOT NULL,
    tool        TEXT        NOT NULL,
    summary     TEXT        NOT NULL,
    started_ms  BIGINT      NOT NULL,
    duration_ms BIGINT,
    failed      BOOLEAN     NOT NULL,
    PRIMARY KEY (run_id, node, attempt, seq)
);
