-- One case-folding rule for emails on both engines: the key is the email lower-cased by the
-- service (Unicode), not by the engine's lower() (ASCII-only on SQLite, the locale's on
-- PostgreSQL). Rows written before are keyed when the migration runs (adapter_sql::fold_email_keys).
ALTER TABLE members ADD COLUMN email_key TEXT;
DROP INDEX members_email_lower;
CREATE UNIQUE INDEX members_email_folded ON members (email_key);
