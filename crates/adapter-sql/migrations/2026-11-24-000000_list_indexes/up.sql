-- A page of flags is read in the order of an index that starts with what every list filters on
-- (the project, and whether the flag is archived) and ends with the text a `query` filter
-- matches, so that a page at any offset, and a count, with or without `query`, read only index
-- entries: the page's keys first, then the page's rows (see `list_flags`).
CREATE INDEX flags_list_created ON flags (project_id, archived, creation_date, key, search);
CREATE INDEX flags_list_key ON flags (project_id, archived, key, search);
CREATE INDEX flags_list_name ON flags (project_id, archived, name, key, search);
DROP INDEX flags_project_created;
DROP INDEX flags_project_name;
