-- Members: invitation state, last activity, and the columns lists filter and sort on.
ALTER TABLE members ADD COLUMN pending_invite BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE members ADD COLUMN verified BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE members ADD COLUMN last_seen BIGINT NOT NULL DEFAULT 0;
-- lower(first + last name), else lower(email): the `displayName` sort
ALTER TABLE members ADD COLUMN display_name TEXT NOT NULL DEFAULT '';
-- lower(email) || char(10) || lower(first) || ' ' || lower(last): the `query` filter
ALTER TABLE members ADD COLUMN search TEXT NOT NULL DEFAULT '';
UPDATE members SET display_name = lower(email), search = lower(email);
CREATE UNIQUE INDEX members_email_lower ON members (lower(email));
CREATE INDEX members_display_name ON members (display_name, id);
CREATE INDEX members_last_seen ON members (last_seen, id);

-- Tokens: a reset may keep the previous secret valid until a given time.
ALTER TABLE tokens ADD COLUMN previous_secret_hash TEXT;
ALTER TABLE tokens ADD COLUMN previous_expires_at BIGINT;
CREATE INDEX tokens_previous_secret ON tokens (previous_secret_hash);

-- SDK and mobile keys replaced by a reset: recognised (never accepted) as access tokens, and an
-- SDK key stays valid for SDKs until `expires_at`.
CREATE TABLE environment_old_keys (
    key TEXT PRIMARY KEY,
    environment_id TEXT NOT NULL REFERENCES environments (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX environment_old_keys_environment ON environment_old_keys (environment_id);
