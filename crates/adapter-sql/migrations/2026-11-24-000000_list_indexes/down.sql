CREATE INDEX flags_project_created ON flags (project_id, creation_date, key);
CREATE INDEX flags_project_name ON flags (project_id, name, key);
DROP INDEX flags_list_created;
DROP INDEX flags_list_key;
DROP INDEX flags_list_name;
