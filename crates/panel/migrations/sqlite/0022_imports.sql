-- Users brought from another panel (`switchyard panel import`): which of ours each
-- source user became, so a second import updates instead of duplicating, and the
-- source's own subscription links keep working.
CREATE TABLE import_sources (
    source TEXT PRIMARY KEY,
    -- What checks the source's subscription tokens (Marzban's JWT secret).
    secret TEXT NOT NULL,
    imported_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE imported_users (
    source TEXT NOT NULL,
    -- The source's key for the user (its user name).
    source_key TEXT NOT NULL,
    user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- The source's creation and subscription-revocation times: a source token
    -- issued before either is refused, as the source refused it.
    source_created_ms INTEGER NOT NULL,
    sub_revoked_ms INTEGER,
    -- The source's usage at the last import: a re-import adds only what the source
    -- counted since, keeping what our nodes counted.
    source_used INTEGER NOT NULL,
    source_lifetime INTEGER NOT NULL,
    PRIMARY KEY (source, source_key)
) STRICT;
CREATE INDEX imported_users_user ON imported_users (user_id);
