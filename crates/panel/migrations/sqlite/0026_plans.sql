-- Plans: defaults a new user is made from (docs/panel.md, "Plans").
CREATE TABLE plans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    traffic_limit INTEGER,
    reset_strategy TEXT NOT NULL DEFAULT 'none',
    expiry_days INTEGER,
    on_hold INTEGER NOT NULL DEFAULT 0,
    device_limit INTEGER,
    address_limit INTEGER,
    clusters TEXT,
    created_ms INTEGER NOT NULL
) STRICT;
