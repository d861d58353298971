-- Hysteria 2 inbounds: their own settings (JSON: obfs on or off, up/down Mbit/s,
-- udp, hop ports; never the obfs password) and their Salamander password, a secret
-- like the Shadowsocks server key. NULL on every other inbound.
ALTER TABLE inbounds ADD COLUMN hysteria2 TEXT;
ALTER TABLE inbounds ADD COLUMN hy2_obfs_password TEXT;
