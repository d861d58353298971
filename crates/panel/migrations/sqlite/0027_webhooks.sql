-- Webhooks and their outbox (docs/panel.md, "Webhooks"): a delivery is kept until it
-- is delivered or given up, so a restart loses none; the lease lets one instance of
-- several take each.
CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    secret TEXT NOT NULL,
    events TEXT NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 1,
    allow_private INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL
) STRICT;
CREATE TABLE webhook_deliveries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    hook_id INTEGER NOT NULL REFERENCES webhooks(id) ON DELETE CASCADE,
    event TEXT NOT NULL,
    body TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ms INTEGER NOT NULL,
    lease_ms INTEGER NOT NULL DEFAULT 0,
    last_status INTEGER,
    last_error TEXT,
    done_ms INTEGER
) STRICT;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_ms);
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries (hook_id, id);
