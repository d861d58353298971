-- Switchyard panel schema, version 3 (SQLite): tunnels. Keep in step with
-- postgres/0003_tunnels.sql.
--
-- Kept: what the operator chose and the certificate the panel issued (its key is a
-- secret, never served by the API). Not kept: credentials (derived from the panel's
-- secret, the tunnel's name and the origin's name), the tag and the certificate name
-- (derived from the tunnel's name, which never changes).
CREATE TABLE tunnels (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    relay_server_id BIGINT NOT NULL REFERENCES servers(id),
    mode TEXT NOT NULL,
    balancing TEXT NOT NULL,
    links BIGINT NOT NULL,
    -- The profiles and the routing rules, as the API's JSON (value objects, always
    -- read and written whole).
    profiles TEXT NOT NULL,
    rules TEXT NOT NULL,
    enabled BIGINT NOT NULL DEFAULT 1,
    cert_pem TEXT NOT NULL,
    key_pem TEXT NOT NULL,
    pin TEXT NOT NULL,
    -- The previous certificate's pin, accepted beside the new one while a re-issue
    -- rolls out (so no link drops).
    previous_pin TEXT,
    created_ms BIGINT NOT NULL
);

CREATE TABLE tunnel_origins (
    tunnel_id BIGINT NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    server_id BIGINT NOT NULL REFERENCES servers(id),
    position BIGINT NOT NULL,
    PRIMARY KEY (tunnel_id, server_id)
);
CREATE INDEX tunnel_origins_server ON tunnel_origins (server_id);
