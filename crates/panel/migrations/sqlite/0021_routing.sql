-- A cluster's and a user's own split tunnelling (JSON RoutingSettings); NULL: the
-- cluster's (for a user) or the panel's default.
ALTER TABLE clusters ADD COLUMN routing TEXT;
ALTER TABLE users ADD COLUMN routing TEXT;
