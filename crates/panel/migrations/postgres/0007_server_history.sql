-- Switchyard panel schema, version 7: each server's throughput and users online over
-- time, for its charts, from the heartbeats that found it online. Kept at the same two
-- steps as tunnels' usage (a minute for 48 hours, an hour for 90 days); `at_ms` is the
-- step's start; sums over `samples` heartbeats give the averages. The same in both
-- backends.
CREATE TABLE server_history (
    server_id BIGINT NOT NULL REFERENCES servers(id) ON DELETE CASCADE,
    step_ms BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    samples BIGINT NOT NULL,
    up_sum BIGINT NOT NULL,
    down_sum BIGINT NOT NULL,
    users_sum BIGINT NOT NULL,
    users_max BIGINT NOT NULL,
    PRIMARY KEY (server_id, step_ms, at_ms)
);
