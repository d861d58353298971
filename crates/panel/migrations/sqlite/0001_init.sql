-- Switchyard panel schema, version 1 (SQLite). Keep in step with postgres/0001_init.sql:
-- the queries are the same for both; only the id columns' DDL differs.
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE clusters (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_ms BIGINT NOT NULL
);
CREATE TABLE servers (
    id INTEGER PRIMARY KEY,
    cluster_id BIGINT NOT NULL REFERENCES clusters(id),
    name TEXT NOT NULL,
    address TEXT NOT NULL,
    allow_private BIGINT NOT NULL DEFAULT 0,
    fingerprint TEXT UNIQUE,
    hostname TEXT,
    node_version TEXT,
    state TEXT NOT NULL DEFAULT 'pending',
    state_reason TEXT NOT NULL DEFAULT 'never connected',
    state_since_ms BIGINT NOT NULL,
    refreshed_ms BIGINT,
    config_version BIGINT,
    journal_cursor BIGINT NOT NULL DEFAULT 0,
    users_online BIGINT NOT NULL DEFAULT 0,
    up_bps BIGINT NOT NULL DEFAULT 0,
    down_bps BIGINT NOT NULL DEFAULT 0,
    created_ms BIGINT NOT NULL,
    UNIQUE (cluster_id, name)
);
CREATE TABLE join_tokens (
    secret_hash TEXT PRIMARY KEY,
    server_id BIGINT NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    expires_ms BIGINT NOT NULL,
    used_ms BIGINT,
    created_ms BIGINT NOT NULL
);
CREATE TABLE inbounds (
    id INTEGER PRIMARY KEY,
    server_id BIGINT NOT NULL REFERENCES servers(id),
    name TEXT NOT NULL,
    protocol TEXT NOT NULL,
    port BIGINT NOT NULL,
    transport TEXT NOT NULL,
    security TEXT NOT NULL,
    host TEXT,
    sni TEXT,
    coefficient DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    method TEXT,
    ss_server_key TEXT,
    tls_cert_pem TEXT,
    tls_key_pem TEXT,
    created_ms BIGINT NOT NULL,
    UNIQUE (server_id, port)
);
CREATE TABLE routes (
    id INTEGER PRIMARY KEY,
    cluster_id BIGINT NOT NULL REFERENCES clusters(id),
    name TEXT NOT NULL,
    flag TEXT,
    algorithm TEXT NOT NULL DEFAULT 'least_loaded',
    position BIGINT NOT NULL,
    is_default BIGINT NOT NULL DEFAULT 0,
    created_ms BIGINT NOT NULL
);
-- An inbound is in at most one route: the inbound id is the key.
CREATE TABLE route_inbounds (
    inbound_id BIGINT PRIMARY KEY REFERENCES inbounds(id) ON DELETE CASCADE,
    route_id BIGINT NOT NULL REFERENCES routes(id) ON DELETE CASCADE,
    position BIGINT NOT NULL
);
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    enabled BIGINT NOT NULL DEFAULT 1,
    note TEXT NOT NULL DEFAULT '',
    traffic_limit BIGINT,
    reset_strategy TEXT NOT NULL DEFAULT 'none',
    expires_ms BIGINT,
    on_hold_days BIGINT,
    first_connected_ms BIGINT,
    used_up BIGINT NOT NULL DEFAULT 0,
    used_down BIGINT NOT NULL DEFAULT 0,
    period_started_ms BIGINT NOT NULL,
    lifetime_bytes BIGINT NOT NULL DEFAULT 0,
    online_ms BIGINT,
    subscription_token TEXT NOT NULL UNIQUE,
    vless_uuid TEXT NOT NULL,
    trojan_password TEXT NOT NULL,
    ss_seed TEXT NOT NULL,
    all_clusters BIGINT NOT NULL DEFAULT 1,
    created_ms BIGINT NOT NULL
);
CREATE TABLE user_clusters (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    cluster_id BIGINT NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, cluster_id)
);
-- The inbound a user got last time for a route (balancing stickiness, next issue).
CREATE TABLE sticky_choices (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    route_id BIGINT NOT NULL REFERENCES routes(id) ON DELETE CASCADE,
    inbound_id BIGINT NOT NULL,
    chosen_ms BIGINT NOT NULL,
    PRIMARY KEY (user_id, route_id)
);
CREATE TABLE admins (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_ms BIGINT NOT NULL
);
CREATE TABLE sessions (
    id_hash TEXT PRIMARY KEY,
    admin_id BIGINT NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE TABLE api_tokens (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    admin_id BIGINT NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
    created_ms BIGINT NOT NULL,
    last_used_ms BIGINT
);
