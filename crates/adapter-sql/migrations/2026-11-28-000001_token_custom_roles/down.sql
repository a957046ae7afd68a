ALTER TABLE tokens DROP COLUMN inline_role;
ALTER TABLE tokens DROP COLUMN custom_role_ids;
