-- What the webhook observer last saw of each server's node version and each
-- tunnel's state (NULL: not seen yet); the usage event's name now that its
-- threshold is the operator's.
ALTER TABLE servers ADD COLUMN watch_version TEXT;
ALTER TABLE tunnels ADD COLUMN watch_state TEXT;
UPDATE webhooks SET events = REPLACE(events, 'user.usage_80', 'user.usage_high');
