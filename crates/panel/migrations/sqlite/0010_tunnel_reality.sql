-- Switchyard panel schema, version 10: REALITY as a tunnel profile's link security.
-- A REALITY profile's target and server name live in the `profiles` JSON with the
-- rest of the profile; the tunnel's X25519 key pair and short id, made by the panel
-- once per tunnel, are kept here: the private key is a secret (sent only to the
-- listening half, never shown by the API), the public key and short id go to both
-- halves. NULL for tunnels made before: the panel makes them on the first change.
-- The same in both backends.
ALTER TABLE tunnels ADD COLUMN reality_private_key TEXT;
ALTER TABLE tunnels ADD COLUMN reality_public_key TEXT;
ALTER TABLE tunnels ADD COLUMN reality_short_id TEXT;
