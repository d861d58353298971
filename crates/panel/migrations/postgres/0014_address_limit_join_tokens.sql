-- A user's address limit: the most source addresses online at once on each server
-- (NULL: no limit).
ALTER TABLE users ADD COLUMN address_limit BIGINT;
-- When a join token stopped being valid before use: a newer token for its server, the
-- server's enrollment or a replacement of its node revoked it (NULL: not revoked).
ALTER TABLE join_tokens ADD COLUMN revoked_ms BIGINT;
