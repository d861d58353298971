-- Switchyard panel schema, version 5: a tunnel's stream window (the largest receive
-- window a stream grows to on both halves, in MiB; default 16). The same in both
-- backends.
ALTER TABLE tunnels ADD COLUMN window_mib BIGINT NOT NULL DEFAULT 16;
