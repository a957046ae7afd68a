-- Prerequisite edges, kept in step with the flag configurations, so that "which flags depend on
-- this one" and cycle checks are one indexed query instead of a scan of every configuration.
CREATE TABLE flag_prerequisites (
    project_id TEXT NOT NULL,
    flag_key TEXT NOT NULL,
    environment_key TEXT NOT NULL,
    prerequisite_key TEXT NOT NULL,
    variation INTEGER NOT NULL,
    PRIMARY KEY (project_id, flag_key, environment_key, prerequisite_key),
    FOREIGN KEY (project_id, flag_key) REFERENCES flags (project_id, key) ON DELETE CASCADE,
    FOREIGN KEY (project_id, environment_key) REFERENCES environments (project_id, key) ON DELETE CASCADE
);
CREATE INDEX flag_prerequisites_prerequisite ON flag_prerequisites (project_id, prerequisite_key);
CREATE INDEX flags_project_maintainer ON flags (project_id, maintainer_id);
CREATE INDEX flags_project_state ON flags (project_id, archived, deprecated);
