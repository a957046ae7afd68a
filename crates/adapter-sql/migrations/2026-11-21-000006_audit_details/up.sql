-- An audit entry's detail (the delta sent, the resource before and after: up to two resources
-- of 1 MiB each) lives apart from its listing fields, so that listing the log reads only the
-- small `audit_log.entry`. Entries written before this table existed keep their detail inside
-- `audit_log.entry` and have no row here; the store reads both.
CREATE TABLE audit_details (
    entry_id TEXT PRIMARY KEY REFERENCES audit_log (id) ON DELETE CASCADE,
    -- {"delta", "previousVersion", "currentVersion"} as JSON, absent fields left out
    detail TEXT NOT NULL
);
