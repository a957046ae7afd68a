//! Sessions of the web console: a browser signs in with an access token once, and its cookie
//! then names a session kept in the store (so that every replica knows it), which acts as that
//! token would, with that token's role, until it expires, is signed out or the token goes.

use ports::{ConsoleSession, StoreExt};

use crate::secrets::hash_secret;
use crate::{Caller, Service, ServiceError, ServiceResult};

/// The web console's sessions. The use cases of `Service::console_sessions`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct ConsoleSessions<'a>(&'a Service);

impl Service {
    /// The web console's sessions.
    pub fn console_sessions(&self) -> ConsoleSessions<'_> {
        ConsoleSessions(self)
    }
}

impl std::ops::Deref for ConsoleSessions<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// How long a console session lasts from sign-in (epoch ms): a working day.
pub const CONSOLE_SESSION_TTL_MS: i64 = 12 * 60 * 60 * 1000;

/// How many console sessions one token may have at once: signing in once more ends the oldest.
pub const CONSOLE_SESSIONS_PER_TOKEN: u32 = 16;

/// A session just opened: its id (for the browser's cookie; the store keeps only its hash) and
/// what the session knows.
#[derive(Debug, Clone)]
pub struct OpenedSession {
    /// The session's id: a secret, 64 hex characters.
    pub id: String,
    /// The session.
    pub session: SessionCaller,
}

/// Who acts through a console session, and what its forms must carry.
#[derive(Debug, Clone)]
pub struct SessionCaller {
    /// The caller the session's token makes.
    pub caller: Caller,
    /// The session's CSRF token: every state-changing form carries it.
    pub csrf_token: String,
    /// When the session ends (epoch ms).
    pub expires_at: i64,
}

/// 64 random hex characters (244 random bits, from two version-4 UUIDs).
fn random_hex() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

impl ConsoleSessions<'_> {
    /// Opens a console session for the token with `secret`.
    ///
    /// # Errors
    /// As [`Authentication::authenticate`](crate::Authentication::authenticate) for a secret that is no token's; storage errors.
    pub fn open_console_session(&self, secret: &str) -> ServiceResult<OpenedSession> {
        let caller = self.authentication().authenticate(secret)?;
        let token_id = caller
            .token_id()
            .cloned()
            .ok_or_else(|| ServiceError::Internal("a token made no token's caller".into()))?;
        let now = self.now();
        let id = random_hex();
        let session = ConsoleSession {
            token_id: token_id.clone(),
            secret_hash: hash_secret(secret),
            csrf_token: random_hex(),
            created_at: now,
            expires_at: now.saturating_add(CONSOLE_SESSION_TTL_MS),
        };
        self.store.write_tx(|repo| -> ServiceResult<()> {
            // The token held while its sessions are counted: two sign-ins at once cannot both
            // see room for one more.
            repo.lock_token(&token_id)?.ok_or_else(|| {
                ServiceError::Unauthenticated("this access token no longer exists".into())
            })?;
            Ok(repo.insert_console_session(
                &hash_secret(&id),
                &session,
                CONSOLE_SESSIONS_PER_TOKEN,
                now,
            )?)
        })?;
        Ok(OpenedSession {
            id,
            session: SessionCaller {
                caller,
                csrf_token: session.csrf_token,
                expires_at: session.expires_at,
            },
        })
    }

    /// The session whose id is `id`, if it is open: not expired, not signed out, and its
    /// token's secret still authenticates (a deleted token, or a secret replaced by a reset
    /// once the old one expires, ends it).
    ///
    /// # Errors
    /// Storage errors.
    pub fn console_session(&self, id: &str) -> ServiceResult<Option<SessionCaller>> {
        let now = self.now();
        let id_hash = hash_secret(id);
        let Some(session) = self.store.read_tx(|repo| -> ServiceResult<_> {
            Ok(repo.find_console_session(&id_hash, now)?)
        })?
        else {
            return Ok(None);
        };
        match self.authenticate_hash(&session.secret_hash, None) {
            Ok(caller) => Ok(Some(SessionCaller {
                caller,
                csrf_token: session.csrf_token,
                expires_at: session.expires_at,
            })),
            Err(ServiceError::Unauthenticated(_)) => {
                self.close_console_session(id)?;
                Ok(None)
            }
            Err(err) => Err(err),
        }
    }

    /// Ends the session whose id is `id` (nothing happens for an unknown one).
    ///
    /// # Errors
    /// Storage errors.
    pub fn close_console_session(&self, id: &str) -> ServiceResult<()> {
        let id_hash = hash_secret(id);
        self.store
            .write_tx(|repo| -> ServiceResult<()> { Ok(repo.delete_console_session(&id_hash)?) })
    }
}
