-- The sha256 of the binary the server's node runs, as its status last said (NULL:
-- not known yet). The panel compares it with the binary it hands out to offer an
-- upgrade; node_version, set at the join until now, follows the status too.
ALTER TABLE servers ADD COLUMN node_binary_sha256 TEXT;
