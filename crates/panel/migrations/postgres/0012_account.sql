-- The admin's account: sessions one can see and end, API tokens that expire and may be
-- read-only. A session's public id names it in the API (never its secret); sessions made
-- before this migration get the first half of their id's hash, which proves nothing.
ALTER TABLE sessions ADD COLUMN public_id TEXT;
ALTER TABLE sessions ADD COLUMN last_seen_ms BIGINT;
ALTER TABLE sessions ADD COLUMN address TEXT;
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
UPDATE sessions SET public_id = substr(id_hash, 1, 32) WHERE public_id IS NULL;
CREATE UNIQUE INDEX sessions_public_id ON sessions (public_id);
CREATE INDEX sessions_admin ON sessions (admin_id);
ALTER TABLE api_tokens ADD COLUMN expires_ms BIGINT;
ALTER TABLE api_tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'read'));
