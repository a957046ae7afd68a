-- Segments, per project and environment; the document is the segment's JSON representation.
CREATE TABLE segments (
    project_id TEXT NOT NULL,
    environment_key TEXT NOT NULL,
    key TEXT NOT NULL,
    name TEXT NOT NULL,
    -- lower(key) || char(10) || lower(name) || char(10) || lower(description): the `query` filter
    search TEXT NOT NULL,
    creation_date BIGINT NOT NULL,
    last_modified BIGINT NOT NULL,
    version BIGINT NOT NULL,
    doc TEXT NOT NULL,
    PRIMARY KEY (project_id, environment_key, key),
    FOREIGN KEY (project_id, environment_key) REFERENCES environments (project_id, key) ON DELETE CASCADE
);
CREATE INDEX segments_name ON segments (project_id, environment_key, name, key);
CREATE INDEX segments_created ON segments (project_id, environment_key, creation_date, key);
CREATE INDEX segments_modified ON segments (project_id, environment_key, last_modified, key);

CREATE TABLE segment_tags (
    project_id TEXT NOT NULL,
    environment_key TEXT NOT NULL,
    segment_key TEXT NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (project_id, environment_key, segment_key, tag),
    FOREIGN KEY (project_id, environment_key, segment_key) REFERENCES segments (project_id, environment_key, key) ON DELETE CASCADE
);
CREATE INDEX segment_tags_tag ON segment_tags (project_id, environment_key, tag, segment_key);

-- Which flags' rules name which segments (segmentMatch clauses), kept in step with the flag
-- configurations: a segment's `_flags`, and the 409 when deleting a segment in use.
CREATE TABLE flag_segment_refs (
    project_id TEXT NOT NULL,
    flag_key TEXT NOT NULL,
    environment_key TEXT NOT NULL,
    segment_key TEXT NOT NULL,
    PRIMARY KEY (project_id, flag_key, environment_key, segment_key),
    FOREIGN KEY (project_id, flag_key) REFERENCES flags (project_id, key) ON DELETE CASCADE
);
CREATE INDEX flag_segment_refs_segment ON flag_segment_refs (project_id, environment_key, segment_key);
