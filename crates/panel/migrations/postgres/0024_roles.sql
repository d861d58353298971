-- Admins with roles and quotas (docs/panel.md, "Admins, roles and quotas"). The
-- admins there were before roles had every right: they stay owners.
ALTER TABLE admins ADD COLUMN role TEXT NOT NULL DEFAULT 'owner';
-- A reseller's quota; NULL is no bound.
ALTER TABLE admins ADD COLUMN max_users BIGINT;
ALTER TABLE admins ADD COLUMN max_traffic BIGINT;
ALTER TABLE admins ADD COLUMN max_expiry_days BIGINT;
-- Whether the reseller is bound to the clusters in admin_clusters.
ALTER TABLE admins ADD COLUMN some_clusters BIGINT NOT NULL DEFAULT 0;
CREATE TABLE admin_clusters (
    admin_id BIGINT NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
    cluster_id BIGINT NOT NULL REFERENCES clusters(id) ON DELETE CASCADE,
    PRIMARY KEY (admin_id, cluster_id)
);
-- Who made (owns) a user; NULL: nobody in particular (the owner's and admins').
ALTER TABLE users ADD COLUMN admin_id BIGINT REFERENCES admins(id) ON DELETE SET NULL;
CREATE INDEX users_admin ON users (admin_id);
