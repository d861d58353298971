-- Switchyard panel schema, version 8: REALITY inbounds and the VLESS flow. A REALITY
-- inbound's settings (target, server names, short ids, clock difference, uTLS
-- fingerprint) live in its `security` JSON like TLS's; the X25519 key pair the panel
-- makes is kept here: the private key is a secret (sent only to the node, never shown
-- by the API), the public key is what clients get. `flow` is `xtls-rprx-vision` or
-- NULL. The same in both backends.
ALTER TABLE inbounds ADD COLUMN flow TEXT;
ALTER TABLE inbounds ADD COLUMN reality_private_key TEXT;
ALTER TABLE inbounds ADD COLUMN reality_public_key TEXT;
