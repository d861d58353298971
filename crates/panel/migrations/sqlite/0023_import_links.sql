-- A source's link id for an imported user where it is not the user's key
-- (Remnawave's short id, which a revocation there changes): the old subscription
-- link finds the user by it.
ALTER TABLE imported_users ADD COLUMN link TEXT;
CREATE INDEX imported_users_link ON imported_users (source, link);
