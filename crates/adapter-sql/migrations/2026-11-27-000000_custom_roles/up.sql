-- Custom roles: named policies of the account, by a key unique in it. `search` is the lower-cased
-- key and name a `query` filter matches; `sort_name`, the lower-cased name, orders a list
-- sorted by name (as members' `display_name` does).
CREATE TABLE custom_roles (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    sort_name TEXT NOT NULL,
    search TEXT NOT NULL,
    creation_date BIGINT NOT NULL,
    -- the role as JSON (stored::custom_role)
    doc TEXT NOT NULL
);
CREATE INDEX custom_roles_name ON custom_roles (sort_name, key);
