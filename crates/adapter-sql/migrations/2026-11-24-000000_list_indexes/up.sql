-- A page of flags is read in the order of an index that starts with what every list filters on
-- (the project, and whether the flag is archived), so that a page at any offset walks only index
-- entries: the keys of the page first, then the page's rows (see `list_flags`).
CREATE INDEX flags_list_created ON flags (project_id, archived, creation_date, key);
CREATE INDEX flags_list_key ON flags (project_id, archived, key);
CREATE INDEX flags_list_name ON flags (project_id, archived, name, key);
DROP INDEX flags_project_created;
DROP INDEX flags_project_name;
