-- A project's naming convention for new flag keys: a case (`camelCase`, `upperCamelCase`,
-- `snakeCase`, `kebabCase`, `constantCase`) and a prefix, either of them absent (NULL). Projects
-- stored before this column existed have none.
ALTER TABLE projects ADD COLUMN naming_case TEXT;
ALTER TABLE projects ADD COLUMN naming_prefix TEXT;
