-- The audit log: who changed what, when (docs/panel.md, "The audit log"). Never a
-- request's body: no secret reaches it.
CREATE TABLE audit_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms INTEGER NOT NULL,
    admin_id INTEGER,
    admin TEXT NOT NULL,
    action TEXT NOT NULL,
    kind TEXT NOT NULL,
    object_id INTEGER,
    object TEXT NOT NULL,
    status INTEGER NOT NULL
) STRICT;
CREATE INDEX audit_log_at ON audit_log (at_ms);
CREATE INDEX audit_log_admin ON audit_log (admin_id, id);
CREATE INDEX audit_log_object ON audit_log (kind, object_id, id);
