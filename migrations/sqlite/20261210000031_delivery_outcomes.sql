-- What became of each delivery, for people to see (SQLite edition; keep in step with migrations/postgres).

-- The project a delivery concerns, as known when it arrived (a GitHub repository one
-- project lists): people who may read that project may see it; the others are for
-- administrators only.
ALTER TABLE webhook_deliveries ADD COLUMN project TEXT;
-- Why processing it last failed, while it waits to be tried again; cleared when it is.
ALTER TABLE webhook_deliveries ADD COLUMN error TEXT;
CREATE INDEX webhook_deliveries_newest ON webhook_deliveries (received_at, delivery_id);
