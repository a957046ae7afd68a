-- A member's custom roles: their keys (which never change), each between newlines
-- ("\nops\nstaging\n"; empty for none), so that "who holds role k" is a match of "\nk\n".
ALTER TABLE members ADD COLUMN custom_roles TEXT NOT NULL DEFAULT '';
