-- Sessions of the web console, by the SHA-256 hash (hex) of the id in the browser's cookie. A
-- session authenticates as the secret that opened it (`secret_hash`, as tokens.secret_hash), and
-- goes with its token.
CREATE TABLE console_sessions (
    id_hash TEXT PRIMARY KEY,
    token_id TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
    secret_hash TEXT NOT NULL,
    csrf_token TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX console_sessions_token ON console_sessions (token_id, created_at);
