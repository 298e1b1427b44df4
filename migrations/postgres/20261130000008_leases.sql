-- Leases: work that only one replica may do at a time (the notifier's posters), held by
-- one process until it lets go or stops renewing.
CREATE TABLE leases (
    name     TEXT   PRIMARY KEY,
    holder   TEXT   NOT NULL,
    until_ms BIGINT NOT NULL
);
