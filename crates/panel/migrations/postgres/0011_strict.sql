-- Switchyard panel schema, version 11 (PostgreSQL). Keep in step with
-- sqlite/0011_strict.sql, which makes every SQLite table STRICT and every id
-- AUTOINCREMENT. PostgreSQL's columns never change type, and an out-of-range value is
-- refused ("bigint out of range"), never stored as something else; its identity ids
-- come from a sequence that never goes back, so a deleted row's id is never given
-- again. What this version adds: ids are GENERATED ALWAYS, so no statement can write
-- an id of its own choosing (one past the sequence would later collide, one below it
-- would take a deleted row's id).
--
-- New: `servers.stats_allowance_ms`, the panel time from which the server's allowance
-- for reported traffic accrues (see nodes/stats.rs); 0 is "as much as it can hold".
ALTER TABLE servers ADD COLUMN stats_allowance_ms BIGINT NOT NULL DEFAULT 0;

ALTER TABLE clusters ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE servers ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE inbounds ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE routes ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE users ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE admins ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE api_tokens ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE devices ALTER COLUMN id SET GENERATED ALWAYS;
ALTER TABLE tunnels ALTER COLUMN id SET GENERATED ALWAYS;
