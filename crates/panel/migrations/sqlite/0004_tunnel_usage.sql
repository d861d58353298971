-- Switchyard panel schema, version 4: a tunnel's payload bytes over time, as its relay
-- reports them, for the usage chart. Kept at two steps: one minute (for 48 hours) and
-- one hour (for 90 days); `at_ms` is the step's start. The same in both backends.
CREATE TABLE tunnel_usage (
    tunnel_id BIGINT NOT NULL REFERENCES tunnels(id) ON DELETE CASCADE,
    step_ms BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    bytes BIGINT NOT NULL,
    PRIMARY KEY (tunnel_id, step_ms, at_ms)
);
