-- Switchyard panel schema, version 11 (SQLite): every table STRICT, so a column's type
-- can never drift (an INTEGER column refuses a REAL or a TEXT instead of storing it),
-- and every id `INTEGER PRIMARY KEY AUTOINCREMENT`, so an id is never given twice
-- (late stats for a deleted user can never land on a new one). Keep in step with
-- postgres/0011_strict.sql.
--
-- Each table is rebuilt (create anew, copy, drop, rename), parents before children,
-- keeping every column, default, UNIQUE, index and foreign key of versions 1-10. The
-- panel runs this with foreign keys off (a DROP would otherwise cascade into the
-- children), then checks them (`PRAGMA foreign_key_check`). Counters that SQL adds up
-- are copied through CAST: one stored as a REAL by an overflow before this version
-- (a usage past 2^63 bytes) becomes the largest INTEGER instead of failing the copy.
--
-- New: `servers.stats_allowance_ms`, the panel time from which the server's allowance
-- for reported traffic accrues (see nodes/stats.rs); 0 is "as much as it can hold".

CREATE TABLE settings_new (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
INSERT INTO settings_new (key, value) SELECT key, value FROM settings;
DROP TABLE settings;
ALTER TABLE settings_new RENAME TO settings;

CREATE TABLE clusters_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    created_ms INTEGER NOT NULL
) STRICT;
INSERT INTO clusters_new (id, name, created_ms) SELECT id, name, created_ms FROM clusters;
DROP TABLE clusters;
ALTER TABLE clusters_new RENAME TO clusters;

CREATE TABLE servers_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    name TEXT NOT NULL,
    address TEXT NOT NULL,
    allow_private INTEGER NOT NULL DEFAULT 0,
    fingerprint TEXT UNIQUE,
    hostname TEXT,
    node_version TEXT,
    state TEXT NOT NULL DEFAULT 'pending',
    state_reason TEXT NOT NULL DEFAULT 'never connected',
    state_since_ms INTEGER NOT NULL,
    refreshed_ms INTEGER,
    config_version INTEGER,
    journal_cursor INTEGER NOT NULL DEFAULT 0,
    users_online INTEGER NOT NULL DEFAULT 0,
    up_bps INTEGER NOT NULL DEFAULT 0,
    down_bps INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    capacity_peak REAL NOT NULL DEFAULT 0,
    capacity_above_floor_ms INTEGER NOT NULL DEFAULT 0,
    capacity_last_ms INTEGER,
    stats_allowance_ms INTEGER NOT NULL DEFAULT 0,
    UNIQUE (cluster_id, name)
) STRICT;
INSERT INTO servers_new (id, cluster_id, name, address, allow_private, fingerprint,
    hostname, node_version, state, state_reason, state_since_ms, refreshed_ms,
    config_version, journal_cursor, users_online, up_bps, down_bps, created_ms,
    capacity_peak, capacity_above_floor_ms, capacity_last_ms)
SELECT id, cluster_id, name, address, allow_private, fingerprint,
    hostname, node_version, state, state_reason, state_since_ms, refreshed_ms,
    config_version, journal_cursor, CAST(users_online AS INTEGER), CAST(up_bps AS INTEGER),
    CAST(down_bps AS INTEGER), created_ms,
    capacity_peak, CAST(capacity_above_floor_ms AS INTEGER), capacity_last_ms FROM servers;
DROP TABLE servers;
ALTER TABLE servers_new RENAME TO servers;

CREATE TABLE join_tokens_new (
    secret_hash TEXT PRIMARY KEY,
    server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    expires_ms INTEGER NOT NULL,
    used_ms INTEGER,
    created_ms INTEGER NOT NULL
) STRICT;
INSERT INTO join_tokens_new (secret_hash, server_id, expires_ms, used_ms, created_ms)
SELECT secret_hash, server_id, expires_ms, used_ms, created_ms FROM join_tokens;
DROP TABLE join_tokens;
ALTER TABLE join_tokens_new RENAME TO join_tokens;

CREATE TABLE inbounds_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    server_id INTEGER NOT NULL REFERENCES servers(id),
    name TEXT NOT NULL,
    protocol TEXT NOT NULL,
    port INTEGER NOT NULL,
    transport TEXT NOT NULL,
    security TEXT NOT NULL,
    host TEXT,
    sni TEXT,
    coefficient REAL NOT NULL DEFAULT 1.0,
    method TEXT,
    ss_server_key TEXT,
    tls_cert_pem TEXT,
    tls_key_pem TEXT,
    created_ms INTEGER NOT NULL,
    flow TEXT,
    reality_private_key TEXT,
    reality_public_key TEXT,
    UNIQUE (server_id, port)
) STRICT;
INSERT INTO inbounds_new (id, server_id, name, protocol, port, transport, security, host,
    sni, coefficient, method, ss_server_key, tls_cert_pem, tls_key_pem, created_ms, flow,
    reality_private_key, reality_public_key)
SELECT id, server_id, name, protocol, port, transport, security, host,
    sni, coefficient, method, ss_server_key, tls_cert_pem, tls_key_pem, created_ms, flow,
    reality_private_key, reality_public_key FROM inbounds;
DROP TABLE inbounds;
ALTER TABLE inbounds_new RENAME TO inbounds;

CREATE TABLE routes_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    cluster_id INTEGER NOT NULL REFERENCES clusters(id),
    name TEXT NOT NULL,
    flag TEXT,
    algorithm TEXT NOT NULL DEFAULT 'least_loaded',
    position INTEGER NOT NULL,
    is_default INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL
) STRICT;
INSERT INTO routes_new (id, cluster_id, name, flag, algorithm, position, is_default,
    created_ms)
SELECT id, cluster_id, name, flag, algorithm, position, is_default, created_ms FROM routes;
DROP TABLE routes;
ALTER TABLE routes_new RENAME TO routes;

-- An inbound is in at most one route: the inbound id is the key.
CREATE TABLE route_inbounds_new (
    inbound_id INTEGER PRIMARY KEY REFERENCES inbounds(id) ON DELETE CASCADE,
    route_id INTEGER NOT NULL REFERENCES routes(id) ON DELETE CASCADE,
    position INTEGER NOT NULL
) STRICT;
INSERT INTO route_inbounds_new (inbound_id, route_id, position)
SELECT inbound_id, route_id, position FROM route_inbounds;
DROP TABLE route_inbounds;
ALTER TABLE route_inbounds_new RENAME TO route_inbounds;

CREATE TABLE users_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    enabled INTEGER NOT NULL DEFAULT 1,
    note TEXT NOT NULL DEFAULT '',
    traffic_limit INTEGER,
    reset_strategy TEXT NOT NULL DEFAULT 'none',
    expires_ms INTEGER,
    on_hold_days INTEGER,
    first_connected_ms INTEGER,
    used_up INTEGER NOT NULL DEFAULT 0,
    used_down INTEGER NOT NULL DEFAULT 0,
    period_started_ms INTEGER NOT NULL,
    lifetime_bytes INTEGER NOT NULL DEFAULT 0,
    online_ms INTEGER,
    subscription_token TEXT NOT NULL UNIQUE,
    vless_uuid TEXT NOT NULL,
    trojan_password TEXT NOT NULL,
    ss_seed TEXT NOT NULL,
    all_clusters INTEGER NOT NULL DEFAULT 1,
    created_ms INTEGER NOT NULL,
    token_hash TEXT,
    device_limit INTEGER
) STRICT;
INSERT INTO users_new (id, username, enabled, note, traffic_limit, reset_strategy,
    expires_ms, on_hold_days, first_connected_ms, used_up, used_down, period_started_ms,
    lifetime_bytes, online_ms, subscription_token, vless_uuid, trojan_password, ss_seed,
    all_clusters, created_ms, token_hash, device_limit)
SELECT id, username, enabled, note, traffic_limit, reset_strategy,
    expires_ms, on_hold_days, first_connected_ms, CAST(used_up AS INTEGER),
    CAST(used_down AS INTEGER), period_started_ms, CAST(lifetime_bytes AS INTEGER),
    online_ms, subscription_token, vless_uuid, trojan_password, ss_seed,
    all_clusters, created_ms, token_hash, device_limit FROM users;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;
CREATE UNIQUE INDEX users_token_hash ON users (token_hash);

CREATE TABLE user_clusters_new (
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    cluster_id INTEGER NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, cluster_id)
) STRICT;
INSERT INTO user_clusters_new (user_id, cluster_id)
SELECT user_id, cluster_id FROM user_clusters;
DROP TABLE user_clusters;
ALTER TABLE user_clusters_new RENAME TO user_clusters;

-- The inbound a user got last time for a route (balancing stickiness).
CREATE TABLE sticky_choices_new (
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    route_id INTEGER NOT NULL REFERENCES routes(id) ON DELETE CASCADE,
    inbound_id INTEGER NOT NULL,
    chosen_ms INTEGER NOT NULL,
    PRIMARY KEY (user_id, route_id)
) STRICT;
INSERT INTO sticky_choices_new (user_id, route_id, inbound_id, chosen_ms)
SELECT user_id, route_id, inbound_id, chosen_ms FROM sticky_choices;
DROP TABLE sticky_choices;
ALTER TABLE sticky_choices_new RENAME TO sticky_choices;

CREATE TABLE admins_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) STRICT;
INSERT INTO admins_new (id, username, password_hash, created_ms)
SELECT id, username, password_hash, created_ms FROM admins;
DROP TABLE admins;
ALTER TABLE admins_new RENAME TO admins;

CREATE TABLE sessions_new (
    id_hash TEXT PRIMARY KEY,
    admin_id INTEGER NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    expires_ms INTEGER NOT NULL
) STRICT;
INSERT INTO sessions_new (id_hash, admin_id, csrf, created_ms, expires_ms)
SELECT id_hash, admin_id, csrf, created_ms, expires_ms FROM sessions;
DROP TABLE sessions;
ALTER TABLE sessions_new RENAME TO sessions;

CREATE TABLE api_tokens_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    admin_id INTEGER NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
    created_ms INTEGER NOT NULL,
    last_used_ms INTEGER
) STRICT;
INSERT INTO api_tokens_new (id, name, token_hash, admin_id, created_ms, last_used_ms)
SELECT id, name, token_hash, admin_id, created_ms, last_used_ms FROM api_tokens;
DROP TABLE api_tokens;
ALTER TABLE api_tokens_new RENAME TO api_tokens;

CREATE TABLE devices_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    hwid TEXT NOT NULL,
    os TEXT,
    model TEXT,
    user_agent TEXT,
    first_seen_ms INTEGER NOT NULL,
    last_seen_ms INTEGER NOT NULL,
    UNIQUE (user_id, hwid)
) STRICT;
INSERT INTO devices_new (id, user_id, hwid, os, model, user_agent, first_seen_ms,
    last_seen_ms)
SELECT id, user_id, hwid, os, model, user_agent, first_seen_ms, last_seen_ms FROM devices;
DROP TABLE devices;
ALTER TABLE devices_new RENAME TO devices;

CREATE TABLE tunnels_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    relay_server_id INTEGER NOT NULL REFERENCES servers(id),
    mode TEXT NOT NULL,
    balancing TEXT NOT NULL,
    links INTEGER NOT NULL,
    -- The profiles and the routing rules, as the API's JSON (value objects, always
    -- read and written whole).
    profiles TEXT NOT NULL,
    rules TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    cert_pem TEXT NOT NULL,
    key_pem TEXT NOT NULL,
    pin TEXT NOT NULL,
    -- The previous certificate's pin, accepted beside the new one while a re-issue
    -- rolls out (so no link drops).
    previous_pin TEXT,
    created_ms INTEGER NOT NULL,
    window_mib INTEGER NOT NULL DEFAULT 16,
    credential_epoch INTEGER NOT NULL DEFAULT 0,
    previous_credential_epoch INTEGER,
    reality_private_key TEXT,
    reality_public_key TEXT,
    reality_short_id TEXT
) STRICT;
INSERT INTO tunnels_new (id, name, relay_server_id, mode, balancing, links, profiles, rules,
    enabled, cert_pem, key_pem, pin, previous_pin, created_ms, window_mib, credential_epoch,
    previous_credential_epoch, reality_private_key, reality_public_key, reality_short_id)
SELECT id, name, relay_server_id, mode, balancing, links, profiles, rules,
    enabled, cert_pem, key_pem, pin, previous_pin, created_ms, window_mib, credential_epoch,
    previous_credential_epoch, reality_private_key, reality_public_key, reality_short_id
FROM tunnels;
DROP TABLE tunnels;
ALTER TABLE tunnels_new RENAME TO tunnels;

CREATE TABLE tunnel_origins_new (
    tunnel_id INTEGER NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    server_id INTEGER NOT NULL REFERENCES servers(id),
    position INTEGER NOT NULL,
    PRIMARY KEY (tunnel_id, server_id)
) STRICT;
INSERT INTO tunnel_origins_new (tunnel_id, server_id, position)
SELECT tunnel_id, server_id, position FROM tunnel_origins;
DROP TABLE tunnel_origins;
ALTER TABLE tunnel_origins_new RENAME TO tunnel_origins;
CREATE INDEX tunnel_origins_server ON tunnel_origins (server_id);

CREATE TABLE tunnel_usage_new (
    tunnel_id INTEGER NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    step_ms INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    PRIMARY KEY (tunnel_id, step_ms, at_ms)
) STRICT;
INSERT INTO tunnel_usage_new (tunnel_id, step_ms, at_ms, bytes)
SELECT tunnel_id, step_ms, at_ms, CAST(bytes AS INTEGER) FROM tunnel_usage;
DROP TABLE tunnel_usage;
ALTER TABLE tunnel_usage_new RENAME TO tunnel_usage;

CREATE TABLE tunnel_pin_rollout_new (
    tunnel_id INTEGER NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    server_id INTEGER NOT NULL,
    pin TEXT NOT NULL,
    PRIMARY KEY (tunnel_id, server_id)
) STRICT;
INSERT INTO tunnel_pin_rollout_new (tunnel_id, server_id, pin)
SELECT tunnel_id, server_id, pin FROM tunnel_pin_rollout;
DROP TABLE tunnel_pin_rollout;
ALTER TABLE tunnel_pin_rollout_new RENAME TO tunnel_pin_rollout;

CREATE TABLE server_history_new (
    server_id INTEGER NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    step_ms INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    up_sum INTEGER NOT NULL,
    down_sum INTEGER NOT NULL,
    users_sum INTEGER NOT NULL,
    users_max INTEGER NOT NULL,
    PRIMARY KEY (server_id, step_ms, at_ms)
) STRICT;
INSERT INTO server_history_new (server_id, step_ms, at_ms, samples, up_sum, down_sum,
    users_sum, users_max)
SELECT server_id, step_ms, at_ms, CAST(samples AS INTEGER), CAST(up_sum AS INTEGER),
    CAST(down_sum AS INTEGER), CAST(users_sum AS INTEGER), CAST(users_max AS INTEGER)
FROM server_history;
DROP TABLE server_history;
ALTER TABLE server_history_new RENAME TO server_history;

CREATE TABLE tunnel_credential_rollout_new (
    tunnel_id INTEGER NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    server_id INTEGER NOT NULL,
    epoch INTEGER NOT NULL,
    PRIMARY KEY (tunnel_id, server_id)
) STRICT;
INSERT INTO tunnel_credential_rollout_new (tunnel_id, server_id, epoch)
SELECT tunnel_id, server_id, epoch FROM tunnel_credential_rollout;
DROP TABLE tunnel_credential_rollout;
ALTER TABLE tunnel_credential_rollout_new RENAME TO tunnel_credential_rollout;
