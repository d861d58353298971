-- The SSH host key an install over SSH found on the server and the operator
-- confirmed: its SHA256 fingerprint as OpenSSH prints it (NULL: none pinned yet).
-- A later install over SSH goes on only with this key; replacing the node forgets it.
ALTER TABLE servers ADD COLUMN ssh_host_key TEXT;
