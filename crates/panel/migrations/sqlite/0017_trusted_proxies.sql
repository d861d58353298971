-- An inbound's trusted proxies (WebSocket, HTTPUpgrade, XHTTP and gRPC only): the
-- CDN's or reverse proxy's networks whose X-Forwarded-For names the user's address.
-- A JSON list of strings; every inbound has one, empty until it is set.
ALTER TABLE inbounds ADD COLUMN trusted_proxies TEXT NOT NULL DEFAULT '[]';
