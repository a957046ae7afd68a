DROP INDEX members_email_folded;
ALTER TABLE members DROP COLUMN email_key;
CREATE UNIQUE INDEX members_email_lower ON members (lower(email));
