-- What a token acts with besides its base role: custom roles' `_id`s, each between newlines
-- ("\nid1\nid2\n"; empty for none, so that "who holds role i" is a match of "\ni\n"), and
-- inline policy statements as JSON (empty for none).
ALTER TABLE tokens ADD COLUMN custom_role_ids TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN inline_role TEXT NOT NULL DEFAULT '';
