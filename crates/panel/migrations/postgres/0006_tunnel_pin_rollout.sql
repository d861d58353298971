-- Switchyard panel schema, version 6: which servers of a tunnel run its current
-- certificate's pin, so the previous pin (the overlap after a re-issue) is dropped
-- once every one of them does. The same in both backends.
CREATE TABLE tunnel_pin_rollout (
    tunnel_id BIGINT NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    server_id BIGINT NOT NULL,
    pin TEXT NOT NULL,
    PRIMARY KEY (tunnel_id, server_id)
);
