-- An inbound's rules (JSON: block_bittorrent, block, direct, tunnel): what the
-- node does with its users' connections before they leave. None until set.
ALTER TABLE inbounds ADD COLUMN rules TEXT NOT NULL DEFAULT '{}';
