//! Access tokens.

use domain::query::Page;
use domain::role::Action;
use domain::token::{Token, TokenPost};
use ports::StoreExt;

use crate::auth::{ending, hash_secret, new_secret};
use crate::{object_id, Caller, Service, ServiceError, ServiceResult};

/// A token just created: the only time its secret is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedToken {
    /// The stored token.
    pub token: Token,
    /// The full secret.
    pub secret: String,
}

/// One page of tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenPage {
    /// The tokens.
    pub items: Vec<Token>,
    /// All visible tokens.
    pub total: u64,
}

fn not_found(id: &str) -> ServiceError {
    ServiceError::NotFound(format!("no access token with id '{id}'"))
}

impl Service {
    /// Creates a token for the caller's member (personal) or the account (service).
    ///
    /// # Errors
    /// 403 without token management, or for a role above the caller's; 400 for invalid input.
    pub fn create_token(&self, caller: &Caller, post: TokenPost) -> ServiceResult<CreatedToken> {
        caller.require(Action::ManageTokens)?;
        let new = post.validate()?;
        if new.role > caller.role {
            return Err(ServiceError::Forbidden(format!(
                "cannot create a token with role '{}' above your own role '{}'",
                new.role, caller.role
            )));
        }
        let now = self.now();
        let secret = new_secret();
        let token = Token {
            id: object_id(),
            member_id: caller.member_id.clone(),
            name: new.name,
            description: new.description,
            role: new.role,
            service_token: new.service_token,
            default_api_version: new.default_api_version,
            creation_date: now,
            last_modified: now,
            last_used: None,
            ending: ending(&secret),
        };
        self.store.write_tx(|repo| -> ServiceResult<()> {
            repo.insert_token(&token, &hash_secret(&secret))?;
            Ok(())
        })?;
        Ok(CreatedToken { token, secret })
    }

    /// Service tokens and the caller's personal tokens.
    ///
    /// # Errors
    /// 403 without token management.
    pub fn list_tokens(&self, caller: &Caller, page: Page) -> ServiceResult<TokenPage> {
        caller.require(Action::ManageTokens)?;
        let (items, total) = self.store.read_tx(|repo| -> ServiceResult<_> {
            Ok(repo.list_tokens(&caller.member_id, page)?)
        })?;
        Ok(TokenPage { items, total })
    }

    /// One token.
    ///
    /// # Errors
    /// 403 without token management; 404 for an unknown id.
    pub fn get_token(&self, caller: &Caller, id: &str) -> ServiceResult<Token> {
        caller.require(Action::ManageTokens)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            repo.get_token(id)?.ok_or_else(|| not_found(id))
        })
    }

    /// Deletes a token; it stops working at once on this replica.
    ///
    /// # Errors
    /// 403 without token management; 404 for an unknown id.
    pub fn delete_token(&self, caller: &Caller, id: &str) -> ServiceResult<()> {
        caller.require(Action::ManageTokens)?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            if repo.delete_token(id)? {
                Ok(())
            } else {
                Err(not_found(id))
            }
        })?;
        self.tokens.forget_token(id);
        Ok(())
    }
}
