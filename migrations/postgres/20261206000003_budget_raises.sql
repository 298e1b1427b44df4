-- Budgets a person raised for one run; keep in step with migrations/sqlite.
-- An agent node with `on_budget: ask` whose attempt reached a budget waits for a person;
-- each approval is one row, keyed by the ask (the attempt that reached it), so a decision
-- delivered twice raises nothing twice. Each row lets the run's later attempts spend the
-- budget's own amount once more: a budget raised twice allows three times its amount.
CREATE TABLE budget_raises (
    run_id     UUID    NOT NULL,
    node       TEXT    NOT NULL,
    attempt    INTEGER NOT NULL,
    -- The budget as the refusal named it: "project api", "role coder", "SOP ship".
    budget     TEXT    NOT NULL,
    -- Who approved it (`[[people]]` ids, comma-separated).
    raised_by  TEXT    NOT NULL,
    raised_ms  BIGINT  NOT NULL,
    PRIMARY KEY (run_id, node, attempt)
);
