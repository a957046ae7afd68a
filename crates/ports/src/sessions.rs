//! Sessions of the web console: a browser signed in with an access token.

use domain::id::TokenId;

use crate::StoreResult;

/// A console session as stored: which token's secret it was opened with, and its CSRF token.
/// The session's own id is a secret of the browser's cookie; the store keeps only its SHA-256
/// hash (hex), as it does for tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsoleSession {
    /// The token whose secret opened the session (deleting the token deletes its sessions).
    pub token_id: TokenId,
    /// The SHA-256 hash (hex) of the secret that opened it: the session authenticates as that
    /// secret would, so a secret replaced by a reset ends it when the old secret stops working.
    pub secret_hash: String,
    /// What every state-changing form of the session must carry.
    pub csrf_token: String,
    /// When it was opened (epoch ms).
    pub created_at: i64,
    /// When it stops being valid (epoch ms).
    pub expires_at: i64,
}

/// Console sessions, by the hash of their id.
pub trait ConsoleSessionRepository {
    /// Stores a new session under `id_hash`, and deletes the token's expired sessions (those
    /// whose `expires_at` is at or before `now`) and, beyond the newest `keep - 1` others, its
    /// oldest: a token has at most `keep` sessions.
    fn insert_console_session(
        &mut self,
        id_hash: &str,
        session: &ConsoleSession,
        keep: u32,
        now: i64,
    ) -> StoreResult<()>;
    /// The session stored under `id_hash`, unless it expired at or before `now`.
    fn find_console_session(
        &mut self,
        id_hash: &str,
        now: i64,
    ) -> StoreResult<Option<ConsoleSession>>;
    /// Deletes the session stored under `id_hash` (nothing if there is none).
    fn delete_console_session(&mut self, id_hash: &str) -> StoreResult<()>;
}
