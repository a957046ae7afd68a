-- The version SDKs were told a deleted flag or segment was deleted at: one created again with
-- its key starts above it (SDKs keep a deleted key's version and apply only a higher one).
-- environment_key is '' for a flag (its tombstone covers every environment).
CREATE TABLE sdk_tombstones (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    environment_key TEXT NOT NULL,
    item_key TEXT NOT NULL,
    version BIGINT NOT NULL,
    PRIMARY KEY (project_id, kind, environment_key, item_key)
);
