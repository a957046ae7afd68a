-- The audit log: one row per change, written in the change's own transaction.
CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    date BIGINT NOT NULL,
    kind TEXT NOT NULL,
    -- lower(name) || char(10) || lower(description): the `q` filter
    search TEXT NOT NULL,
    -- the entry as JSON, detail fields (delta, previous and current versions) included
    entry TEXT NOT NULL
);
CREATE INDEX audit_log_date ON audit_log (date, id);

-- Every resource specifier an entry touches, for `spec` filters and webhook statements.
CREATE TABLE audit_resources (
    entry_id TEXT NOT NULL REFERENCES audit_log (id) ON DELETE CASCADE,
    resource TEXT NOT NULL,
    PRIMARY KEY (entry_id, resource)
);
CREATE INDEX audit_resources_resource ON audit_resources (resource, entry_id);
