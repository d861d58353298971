-- What the webhook observer last saw of each user (docs/panel.md, "Webhooks"): the
-- status, and which notices of this period it sent (1: usage past 80 %, 2: expiry
-- within three days). NULL: not seen yet (the first look sends nothing).
ALTER TABLE users ADD COLUMN watch_status TEXT;
ALTER TABLE users ADD COLUMN watch_flags INTEGER NOT NULL DEFAULT 0;
