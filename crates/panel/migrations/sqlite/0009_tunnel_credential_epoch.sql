-- Switchyard panel schema, version 9: rotating a tunnel's credentials. A tunnel's
-- credentials derive from the panel's secret, its name, the origin's name and its
-- credential epoch (0: as first derived, so tunnels made before keep theirs); after a
-- rotation the previous epoch stays accepted by the listening side until every server
-- of the tunnel runs the current one (recorded per server, as for a re-issue's pin).
-- The same in both backends.
ALTER TABLE tunnels ADD COLUMN credential_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE tunnels ADD COLUMN previous_credential_epoch BIGINT;
CREATE TABLE tunnel_credential_rollout (
    tunnel_id BIGINT NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    server_id BIGINT NOT NULL,
    epoch BIGINT NOT NULL,
    PRIMARY KEY (tunnel_id, server_id)
);
