//! Access tokens.

use domain::audit::resource;
use domain::patch::JsonPatchBody;
use domain::query::Page;
use domain::role::Action;
use domain::token::{Token, TokenPatch, TokenPost};
use ports::{Repository, StoreExt};

use crate::audit::Change;

use crate::auth::{ending, hash_secret, new_secret};
use crate::{object_id, Caller, Service, ServiceError, ServiceResult};

/// A token with its secret: the only times the secret is shown (create and reset).
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

/// A token as the audit log shows it: never its secret, only its last four characters.
fn token_json(token: &Token) -> Option<serde_json::Value> {
    Some(serde_json::json!({
        "_id": token.id,
        "name": token.name,
        "description": token.description,
        "role": token.role,
        "serviceToken": token.service_token,
        "defaultApiVersion": token.default_api_version,
        "token": token.ending,
    }))
}

fn token_change(
    token: &Token,
    verb: &'static str,
    action: &str,
    before: Option<&Token>,
    after: Option<&Token>,
) -> Change {
    Change::new(
        "token",
        &token.name,
        verb,
        action,
        resource::token(&token.member_id, &token.name),
    )
    .links(format!("/api/v2/tokens/{}", token.id))
    .versions(before.and_then(token_json), after.and_then(token_json))
}

fn load_token(repo: &mut dyn Repository, id: &str) -> ServiceResult<Token> {
    repo.get_token(id)?.ok_or_else(|| not_found(id))
}

impl Service {
    /// Creates a token for the caller's member (personal) or the account (service); its role is
    /// at most the caller's.
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
            self.audit(
                repo,
                caller,
                token_change(&token, "created", "createAccessToken", None, Some(&token)),
            )?;
            Ok(())
        })?;
        Ok(CreatedToken { token, secret })
    }

    /// Service tokens and the caller's personal tokens; with `show_all`, every member's tokens.
    ///
    /// # Errors
    /// 403 without token management.
    pub fn list_tokens(
        &self,
        caller: &Caller,
        page: Page,
        show_all: bool,
    ) -> ServiceResult<TokenPage> {
        caller.require(Action::ManageTokens)?;
        let member = (!show_all).then_some(caller.member_id.as_str());
        let (items, total) = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_tokens(member, page)?) })?;
        Ok(TokenPage { items, total })
    }

    /// One token.
    ///
    /// # Errors
    /// 403 without token management; 404 for an unknown id.
    pub fn get_token(&self, caller: &Caller, id: &str) -> ServiceResult<Token> {
        caller.require(Action::ManageTokens)?;
        self.store
            .read_tx(|repo| -> ServiceResult<_> { load_token(repo, id) })
    }

    /// Changes a token by JSON Patch (`/name`, `/description`, `/role`, `/defaultApiVersion`).
    /// Its role stays at most the caller's, and a personal token's at most its member's.
    ///
    /// # Errors
    /// 403, 404; 409 for a failed `test`; 422 for another path or an invalid value.
    pub fn patch_token(
        &self,
        caller: &Caller,
        id: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<Token> {
        caller.require(Action::ManageTokens)?;
        let now = self.now();
        let token = self.store.write_tx(|repo| -> ServiceResult<_> {
            let token = load_token(repo, id)?;
            let mut next = TokenPatch::of(&token)
                .apply(&patch.operations)?
                .onto(&token);
            if next == token {
                return Ok(token);
            }
            if next.role > caller.role {
                return Err(ServiceError::Forbidden(format!(
                    "cannot give a token the role '{}' above your own role '{}'",
                    next.role, caller.role
                )));
            }
            if !token.service_token {
                let member = repo.get_member(&token.member_id)?.map(|m| m.role);
                if member.is_some_and(|role| next.role > role) {
                    return Err(ServiceError::PatchFailed(format!(
                        "a personal token cannot have a role above its member's role ({})",
                        member.map(|r| r.to_string()).unwrap_or_default()
                    )));
                }
            }
            next.last_modified = now;
            repo.update_token(&next)?;
            let change = token_change(
                &next,
                "updated",
                "updateAccessToken",
                Some(&token),
                Some(&next),
            )
            .comment(patch.comment.clone())
            .delta(crate::audit::json(&patch.operations));
            self.audit(repo, caller, change)?;
            Ok(next)
        })?;
        self.tokens.forget_token(id);
        Ok(token)
    }

    /// Gives a token a new secret. With `expiry` (epoch ms, in the future) the old secret keeps
    /// working until then; otherwise it stops at once.
    ///
    /// # Errors
    /// 400 for an expiry in the past, 403, 404.
    pub fn reset_token(
        &self,
        caller: &Caller,
        id: &str,
        expiry: Option<i64>,
    ) -> ServiceResult<CreatedToken> {
        caller.require(Action::ManageTokens)?;
        let now = self.now();
        if expiry.is_some_and(|e| e <= now) {
            return Err(ServiceError::invalid(
                "expiry must be a time in the future (epoch milliseconds)",
            ));
        }
        let secret = new_secret();
        let token = self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut token = load_token(repo, id)?;
            token.ending = ending(&secret);
            token.last_modified = now;
            repo.reset_token_secret(&token, &hash_secret(&secret), expiry)?;
            self.audit(
                repo,
                caller,
                token_change(
                    &token,
                    "reset the secret of",
                    "resetAccessToken",
                    None,
                    None,
                ),
            )?;
            Ok(token)
        })?;
        self.tokens.forget_token(id);
        Ok(CreatedToken { token, secret })
    }

    /// Deletes a token; it stops working at once on this replica.
    ///
    /// # Errors
    /// 403 without token management; 404 for an unknown id.
    pub fn delete_token(&self, caller: &Caller, id: &str) -> ServiceResult<()> {
        caller.require(Action::ManageTokens)?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let token = load_token(repo, id)?;
            repo.delete_token(id)?;
            self.audit(
                repo,
                caller,
                token_change(&token, "deleted", "deleteAccessToken", Some(&token), None),
            )?;
            Ok(())
        })?;
        self.tokens.forget_token(id);
        Ok(())
    }
}
