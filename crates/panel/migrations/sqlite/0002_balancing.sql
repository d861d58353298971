-- Switchyard panel schema, version 2 (SQLite): balancing and subscriptions. Keep in
-- step with postgres/0002_balancing.sql.

-- The capacity estimate of each server (switchyard_balance::Capacity), kept across
-- restarts: the peak in bytes/s, how long traffic above the floor was seen, when
-- the last observation was made.
ALTER TABLE servers ADD COLUMN capacity_peak DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE servers ADD COLUMN capacity_above_floor_ms BIGINT NOT NULL DEFAULT 0;
ALTER TABLE servers ADD COLUMN capacity_last_ms BIGINT;

-- Subscriptions are looked up by the SHA-256 of their token (hex), so the lookup's
-- timing says nothing about the token; the panel fills it for older rows at start.
ALTER TABLE users ADD COLUMN token_hash TEXT;
CREATE UNIQUE INDEX users_token_hash ON users (token_hash);
-- At most this many devices (x-hwid) may fetch the subscription; unset: no limit.
ALTER TABLE users ADD COLUMN device_limit BIGINT;

CREATE TABLE devices (
    id INTEGER PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hwid TEXT NOT NULL,
    os TEXT,
    model TEXT,
    user_agent TEXT,
    first_seen_ms BIGINT NOT NULL,
    last_seen_ms BIGINT NOT NULL,
    UNIQUE (user_id, hwid)
);
