-- One schema for PostgreSQL and SQLite: only portable types (TEXT, BIGINT, INTEGER, BOOLEAN).
-- Aggregates that lists never look inside (a flag's settings, a flag's per-environment
-- configuration) are JSON text; everything lists filter or sort on is a column with an index.

CREATE TABLE members (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL,
    first_name TEXT,
    last_name TEXT,
    creation_date BIGINT NOT NULL
);
CREATE INDEX members_role ON members (role);

CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL UNIQUE,
    member_id TEXT NOT NULL REFERENCES members (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    description TEXT NOT NULL,
    role TEXT NOT NULL,
    service_token BOOLEAN NOT NULL,
    default_api_version INTEGER NOT NULL,
    creation_date BIGINT NOT NULL,
    last_modified BIGINT NOT NULL,
    last_used BIGINT,
    ending TEXT NOT NULL
);
CREATE INDEX tokens_member ON tokens (member_id, creation_date);
CREATE INDEX tokens_service ON tokens (service_token, creation_date);

CREATE TABLE projects (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    -- lower(key) || char(10) || lower(name): the column `query` filters match substrings of
    search TEXT NOT NULL,
    include_in_snippet_by_default BOOLEAN NOT NULL,
    using_mobile_key BOOLEAN NOT NULL,
    using_environment_id BOOLEAN NOT NULL,
    creation_date BIGINT NOT NULL
);
CREATE INDEX projects_name ON projects (name, id);
CREATE INDEX projects_created ON projects (creation_date, id);

CREATE TABLE project_tags (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (project_id, tag)
);
CREATE INDEX project_tags_tag ON project_tags (tag, project_id);

CREATE TABLE environments (
    id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    search TEXT NOT NULL,
    api_key TEXT NOT NULL UNIQUE,
    mobile_key TEXT NOT NULL UNIQUE,
    color TEXT NOT NULL,
    default_ttl INTEGER NOT NULL,
    secure_mode BOOLEAN NOT NULL,
    default_track_events BOOLEAN NOT NULL,
    require_comments BOOLEAN NOT NULL,
    confirm_changes BOOLEAN NOT NULL,
    critical BOOLEAN NOT NULL,
    creation_date BIGINT NOT NULL,
    UNIQUE (project_id, key)
);
CREATE INDEX environments_project_name ON environments (project_id, name, id);
CREATE INDEX environments_project_created ON environments (project_id, creation_date, id);
CREATE INDEX environments_project_critical ON environments (project_id, critical, id);

CREATE TABLE environment_tags (
    environment_id TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (environment_id, tag)
);
CREATE INDEX environment_tags_tag ON environment_tags (tag, environment_id);

CREATE TABLE flags (
    project_id TEXT NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    search TEXT NOT NULL,
    version BIGINT NOT NULL,
    creation_date BIGINT NOT NULL,
    archived BOOLEAN NOT NULL,
    deprecated BOOLEAN NOT NULL,
    temporary BOOLEAN NOT NULL,
    maintainer_id TEXT,
    default_on INTEGER NOT NULL,
    default_off INTEGER NOT NULL,
    -- the flag's JSON representation without `environments`
    settings TEXT NOT NULL,
    PRIMARY KEY (project_id, key)
);
CREATE INDEX flags_project_created ON flags (project_id, creation_date, key);
CREATE INDEX flags_project_name ON flags (project_id, name, key);

CREATE TABLE flag_tags (
    project_id TEXT NOT NULL,
    flag_key TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (project_id, flag_key, tag),
    FOREIGN KEY (project_id, flag_key) REFERENCES flags (project_id, key) ON DELETE CASCADE
);
CREATE INDEX flag_tags_tag ON flag_tags (project_id, tag, flag_key);

CREATE TABLE flag_configs (
    project_id TEXT NOT NULL,
    flag_key TEXT NOT NULL,
    environment_key TEXT NOT NULL,
    -- the configuration's JSON representation
    config TEXT NOT NULL,
    PRIMARY KEY (project_id, flag_key, environment_key),
    FOREIGN KEY (project_id, flag_key) REFERENCES flags (project_id, key) ON DELETE CASCADE,
    FOREIGN KEY (project_id, environment_key) REFERENCES environments (project_id, key) ON DELETE CASCADE
);
CREATE INDEX flag_configs_environment ON flag_configs (project_id, environment_key);
