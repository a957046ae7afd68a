//! API access tokens.

use domain::id::{MemberId, TokenId};
use domain::member::Member;
use domain::query::Page;
use domain::token::Token;

use crate::{Listed, Locked, StoreResult};

/// A token found by the hash of a secret, with what authenticating with it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenMatch {
    /// The token.
    pub token: Token,
    /// The member the token belongs to (its role caps a personal token's; its name and email go
    /// into the audit entries of the caller's changes).
    pub member: Member,
    /// When the secret matched is the token's previous one (replaced by a reset), when it stops
    /// being valid (epoch ms); `None` for the current secret.
    pub previous_secret_expires_at: Option<i64>,
}

/// API access tokens, stored with the SHA-256 hash (hex) of their secret, never the secret.
pub trait TokenRepository {
    /// Stores a new token with the SHA-256 hash (hex) of its secret.
    fn insert_token(&mut self, token: &Token, secret_hash: &str) -> StoreResult<()>;
    /// The token whose secret hashes to `secret_hash` (or whose previous secret does, until it
    /// expires after `now`), with its member's role and, for a previous secret, its expiry.
    fn find_token_by_hash(
        &mut self,
        secret_hash: &str,
        now: i64,
    ) -> StoreResult<Option<TokenMatch>>;
    /// The hashes of every token's secret, and of every previous secret until it expires after
    /// `now`: what tells, without a lookup per request, that a secret may be a token's.
    fn list_secret_hashes(&mut self, now: i64) -> StoreResult<Vec<String>>;
    /// A token by `_id`.
    fn get_token(&mut self, id: &TokenId) -> StoreResult<Option<Token>>;
    /// A token by `_id`, locked until the transaction ends.
    fn lock_token(&mut self, id: &TokenId) -> StoreResult<Option<Locked<Token>>>;
    /// Service tokens and `member_id`'s personal tokens (every token when `None`), oldest first,
    /// with the total count.
    fn list_tokens(
        &mut self,
        member_id: Option<&MemberId>,
        page: Page,
    ) -> StoreResult<Listed<Token>>;
    /// Saves a token's name, description, role, default API version, ending and last change.
    fn update_token(&mut self, token: &Locked<Token>) -> StoreResult<()>;
    /// Gives a token a new secret; the old one stays valid until `previous_valid_until` (if any).
    fn reset_token_secret(
        &mut self,
        token: &Locked<Token>,
        secret_hash: &str,
        previous_valid_until: Option<i64>,
    ) -> StoreResult<()>;
    /// Records that a token was used at `now` (its `lastUsed`, its member's `_lastSeen`).
    fn record_token_use(
        &mut self,
        token_id: &TokenId,
        member_id: &MemberId,
        now: i64,
    ) -> StoreResult<()>;
    /// Deletes a token.
    fn delete_token(&mut self, token: &Locked<Token>) -> StoreResult<()>;
    /// Hands the service tokens created by member `from` to member `to` (service tokens belong
    /// to the account, not to the member who made them).
    fn reassign_service_tokens(&mut self, from: &MemberId, to: &MemberId) -> StoreResult<()>;
    /// The names of at most `limit` tokens acting with custom role `id`, in name order.
    fn tokens_with_custom_role(
        &mut self,
        id: &domain::id::CustomRoleId,
        limit: u32,
    ) -> StoreResult<Vec<String>>;
}
