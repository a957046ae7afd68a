ALTER TABLE members DROP COLUMN custom_roles;
