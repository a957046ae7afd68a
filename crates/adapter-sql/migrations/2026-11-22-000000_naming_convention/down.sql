ALTER TABLE projects DROP COLUMN naming_prefix;
ALTER TABLE projects DROP COLUMN naming_case;
