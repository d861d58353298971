-- Switchyard panel schema, version 13 (PostgreSQL). Keep in step with
-- sqlite/0013_tunnel_origin_addresses.sql.
--
-- A direct-mode tunnel's origin may be dialed at several addresses (hot standby): the
-- host names or IP addresses the relay dials it at, as a JSON array of strings; empty:
-- the origin server's own address.
ALTER TABLE tunnel_origins ADD COLUMN addresses TEXT NOT NULL DEFAULT '[]';

-- Answers of a node to a request another panel instance forwarded to the instance
-- holding the node's channel (`crates/panel/src/nodes/forward.rs`): written by the
-- holder, read and deleted by the asker, swept once past `expires_ms`.
CREATE TABLE node_answers (
    id TEXT PRIMARY KEY,
    status BIGINT NOT NULL,
    body TEXT NOT NULL,
    expires_ms BIGINT NOT NULL
);
