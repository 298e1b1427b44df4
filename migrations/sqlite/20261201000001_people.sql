-- People added through the API and CLI (the configuration's [[people]] win over these),
-- tokens that act for one person with scopes, an expiry and revocation, and who is
-- accountable for the runs a schedule starts.

CREATE TABLE people (
    id         TEXT        PRIMARY KEY,
    github     TEXT,
    slack      TEXT,
    discord    TEXT,
    -- JSON array of group names
    groups     TEXT        NOT NULL,
    created_by TEXT        NOT NULL,
    created_at TEXT        NOT NULL
);
CREATE UNIQUE INDEX people_github ON people (lower(github)) WHERE github IS NOT NULL;
CREATE UNIQUE INDEX people_slack ON people (slack) WHERE slack IS NOT NULL;
CREATE UNIQUE INDEX people_discord ON people (discord) WHERE discord IS NOT NULL;

-- Until now a token's name was the person it acted as. (SQLite cannot add NOT NULL
-- columns without a default; the store always writes them.)
ALTER TABLE api_tokens ADD COLUMN person TEXT NOT NULL DEFAULT '';
ALTER TABLE api_tokens ADD COLUMN created_by TEXT NOT NULL DEFAULT '';
-- Comma-separated: read, run, decide, admin.
ALTER TABLE api_tokens ADD COLUMN scopes TEXT NOT NULL DEFAULT 'read,run,decide';
ALTER TABLE api_tokens ADD COLUMN expires_at TEXT;
ALTER TABLE api_tokens ADD COLUMN revoked_at TEXT;
UPDATE api_tokens SET person = name, created_by = name;
UPDATE api_tokens SET scopes = 'read,run,decide,admin' WHERE name = 'admin';
-- Names become unique: older duplicates get a suffix of their id.
UPDATE api_tokens SET name = name || '-' || lower(substr(hex(id), 1, 8))
 WHERE EXISTS (SELECT 1 FROM api_tokens o WHERE o.name = api_tokens.name AND o.id < api_tokens.id);
CREATE UNIQUE INDEX api_tokens_name ON api_tokens (name);
CREATE INDEX api_tokens_person ON api_tokens (person);

-- The person accountable for a schedule's runs: who created or last changed it.
ALTER TABLE schedules ADD COLUMN owner TEXT NOT NULL DEFAULT 'admin';
-- Who triggered or backfilled a fire by hand (cron fires have none: the owner answers).
ALTER TABLE schedule_fires ADD COLUMN requested_by TEXT;
