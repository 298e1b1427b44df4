-- Tokens made for an agent (`gatehouse token create --for-agent`; keep in step with
-- migrations/postgres). Such a token acts for its person as any token does, but the API
-- refuses it the gate decision route whatever its scopes: gates are decided by people.
-- Every token made with an agent's token is an agent's token too.
ALTER TABLE api_tokens ADD COLUMN for_agent BOOLEAN NOT NULL DEFAULT 0;
