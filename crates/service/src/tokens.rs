//! Access tokens.

use domain::id::TokenId;
use domain::member::Member;
use domain::patch::JsonPatchBody;
use domain::policy::{Request, Resource};
use domain::query::Page;
use domain::role::Action;
use domain::token::{Token, TokenPatch, TokenPost};
use domain::ValidationError;
use ports::{Changed, Listed, Locked, Repository, StoreExt, TokenRepository};

use crate::audit::Change;

use crate::auth::{caller_as, ending, hold_members, new_secret};
use crate::secrets::hash_secret;
use crate::{
    use_case, ApiResource, Caller, Permit, RandomIds, Representations, Service, ServiceError,
    ServiceResult, UseCase,
};

/// Access tokens. The use cases of `Service::tokens`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Tokens<'a>(&'a Service);

impl Service {
    /// Access tokens.
    pub fn tokens(&self) -> Tokens<'_> {
        Tokens(self)
    }
}

impl std::ops::Deref for Tokens<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

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
        "customRoleIds": token.custom_role_ids,
        "inlineRole": token.inline_role,
        "serviceToken": token.service_token,
        "defaultApiVersion": token.default_api_version,
        "token": token.ending,
    }))
}

fn token_change(
    shown: &dyn Representations,
    token: &Token,
    verb: &'static str,
    action: &str,
    before: Option<&Token>,
    after: Option<&Token>,
) -> Change {
    let at = |token: &Token| Resource::member(&token.member_id).token(&token.name);
    let mut change = Change::new("token", &token.name, verb, action, at(token))
        .href(shown.href(ApiResource::Token { id: &token.id }))
        .versions(before.and_then(token_json), after.and_then(token_json));
    // A renamed token: the action is on the token as it was and as it becomes.
    for other in [before, after].into_iter().flatten() {
        if other.name != token.name {
            change.accesses.push(Request::new(action, at(other)));
        }
    }
    change
}

/// The token `id` (as a request names it) names: text that is not a token id names none, and
/// gets the same `NotFound` as an id that names none.
fn load_token(repo: &mut dyn TokenRepository, id: &str) -> ServiceResult<Token> {
    let parsed = TokenId::parse(id).map_err(|_| not_found(id))?;
    repo.get_token(&parsed)?.ok_or_else(|| not_found(id))
}

/// A token to change, held until the transaction ends, with the caller re-read under the lock of
/// its member and the token's member's role.
struct HeldToken {
    caller: Caller,
    token: Locked<Token>,
    member: Locked<Member>,
}

/// Locks the caller's member and the token's member (members first, in `_id` order, as every
/// use case does), then the token, and checks that the caller may act on this token: see
/// [`domain::role::Actor::may_manage_token`].
///
/// # Errors
/// `Unauthenticated` for a caller whose token or member is gone; `NotPermitted` without token
/// management or authority over this token; `NotFound` for an unknown id; `VersionConflict` when a
/// concurrent change moved the token.
fn hold_token<U: UseCase>(
    repo: &mut dyn Repository,
    permit: &Permit<U>,
    id: &str,
) -> ServiceResult<HeldToken> {
    let Token {
        id: token_id,
        member_id,
        ..
    } = load_token(repo, id)?;
    let mut held = hold_members(repo, permit.caller(), &[&member_id])?;
    let caller = held.caller.clone();
    permit.recheck(&caller)?;
    let token = repo.lock_token(&token_id)?.ok_or_else(|| not_found(id))?;
    // Its base role does not say what it may do: whoever resets it holds its custom roles and
    // inline role, so only who may give those manages it.
    if (!token.custom_role_ids.is_empty() || !token.inline_role.is_empty())
        && !caller.role.can(Action::ManageMembers)
    {
        return Err(ServiceError::NotPermitted(
            "this token acts with custom roles or an inline role: managing it needs the admin \
             base role"
                .into(),
        ));
    }
    let member = match held.take(&token.member_id) {
        Some(member) if token.member_id == member_id => member,
        _ => {
            return Err(ServiceError::VersionConflict(
                "the token changed hands while this request ran; retry".into(),
            ))
        }
    };
    let member_role = member.role;
    if !caller.actor().may_manage_token(
        &token.member_id,
        member_role,
        token.service_token,
        token.role,
    ) {
        return Err(ServiceError::NotPermitted(if token.service_token {
            format!(
                "the role '{}' cannot manage a service token with the role '{}'",
                caller.role, token.role
            )
        } else {
            format!(
                "this is a personal token of a member whose role '{member_role}' is not below \
                 your role '{}'; only that member (or someone who outranks them) may change it",
                caller.role
            )
        }));
    }
    Ok(HeldToken {
        caller,
        token,
        member,
    })
}

/// Refuses a rename of `token` to `name` that would let `caller` do to it what a statement
/// naming it (by its current name) keeps from it: renamed, reset and renamed back, a token would
/// step around a deny on `token/deploy-bot`.
fn require_rename_gains_nothing(caller: &Caller, token: &Token, name: &str) -> ServiceResult<()> {
    let member = Resource::member(&token.member_id);
    let (before, after) = (member.clone().token(&token.name), member.token(name));
    for action in domain::policy::actions::of_kind(domain::policy::actions::ResourceKind::Token) {
        if caller.require_on(action.name, &after).is_ok()
            && caller.require_on(action.name, &before).is_err()
        {
            return Err(ServiceError::NotPermitted(format!(
                "renaming the token '{}' to '{name}' would let you '{}' it, which you may not do \
                 under its current name",
                token.name, action.name
            )));
        }
    }
    Ok(())
}

/// Refuses unless `caller` may do everything `token` of `member` could (see
/// [`Caller::may_do_all_that`]): a caller never creates, resets, widens or takes over a token
/// with a power it lacks, by its base role or by its statements (a deny it is under, an allow
/// narrower than the token's). `doing` says what the caller tried, for the message.
fn require_no_wider(
    repo: &mut dyn Repository,
    caller: &Caller,
    token: &Token,
    member: &Member,
    doing: &str,
) -> ServiceResult<()> {
    let would_be = caller_as(repo, token, member)?;
    if caller.may_do_all_that(&would_be) {
        return Ok(());
    }
    Err(ServiceError::NotPermitted(format!(
        "cannot {doing} a token that could do what you may not: its role and policies must stay \
         within yours (your role '{}', the deny statements you are under, and what your allow \
         statements cover); give it the same restrictions (inline role or custom roles) or fewer \
         powers (see docs/roles.md)",
        caller.role
    )))
}

/// Locks the custom roles `token` is given until the transaction ends (as giving roles to
/// members does: `holding::hold_custom_roles`): none is deleted while a token is given it.
/// Giving a token custom roles or an inline role is giving it policies, which needs the admin
/// base role (see `domain::policy::actions::OVER_POLICIES`).
///
/// # Errors
/// `NotPermitted` below admin; the first `_id` that names no custom role, as a
/// [`ValidationError`] on `customRoleIds`, inside the storage error's `Ok`.
fn hold_token_roles(
    repo: &mut dyn Repository,
    caller: &Caller,
    token: &Token,
) -> ServiceResult<Result<(), ValidationError>> {
    let ids = &token.custom_role_ids;
    if ids.is_empty() && token.inline_role.is_empty() {
        return Ok(Ok(()));
    }
    if !caller.role.can(Action::ManageMembers) {
        return Err(ServiceError::NotPermitted(
            "giving a token custom roles or an inline role needs the admin base role".into(),
        ));
    }
    let found = repo.get_custom_roles_by_id(ids)?;
    let missing = ids.iter().find(|id| !found.iter().any(|r| r.id == **id));
    let keys: Vec<String> = found.iter().map(|r| r.key.to_string()).collect();
    let deleted = crate::holding::hold_custom_roles(repo, &keys)?;
    Ok(match (missing, deleted) {
        (Some(id), _) => Err(ValidationError::single(
            "customRoleIds",
            format!("no custom role with _id '{id}'"),
        )),
        (None, Some(key)) => Err(ValidationError::single(
            "customRoleIds",
            format!("the custom role '{key}' was deleted meanwhile"),
        )),
        (None, None) => Ok(()),
    })
}

impl Tokens<'_> {
    /// Creates a token for the caller's member (personal) or the account (service); its role is
    /// at most the caller's.
    ///
    /// # Errors
    /// `NotPermitted` without token management, or for a role above the caller's; `Invalid` for
    /// invalid input.
    pub fn create_token(
        &self,
        permit: &Permit<use_case::CreateToken>,
        post: TokenPost,
    ) -> ServiceResult<CreatedToken> {
        let caller = permit.caller();
        let new = post.validate()?;
        let above_caller = |caller: &Caller| {
            (new.role > caller.role).then(|| {
                ServiceError::NotPermitted(format!(
                    "cannot create a token with role '{}' above your own role '{}'",
                    new.role, caller.role
                ))
            })
        };
        if let Some(refused) = above_caller(caller) {
            return Err(refused);
        }
        if caller.service_token() && !new.service_token {
            // A personal token would belong to the member who created this service token, and
            // act as that member (as the owner, for a service token the owner made).
            return Err(ServiceError::NotPermitted(
                "a service token acts for the account, not for a member: it can create only service tokens (\"serviceToken\": true)".into(),
            ));
        }
        let now = self.now();
        let secret = new_secret();
        let token = Token {
            id: TokenId::generate(&mut RandomIds),
            member_id: caller.member_id.clone(),
            name: new.name,
            description: new.description,
            role: new.role,
            custom_role_ids: new.custom_role_ids,
            inline_role: new.inline_role,
            service_token: new.service_token,
            default_api_version: new.default_api_version,
            creation_date: now,
            last_modified: now,
            last_used: None,
            ending: ending(&secret),
        };
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let held = hold_members(repo, caller, &[])?;
            let caller = &held.caller;
            permit.recheck(caller)?;
            if let Some(refused) = above_caller(caller) {
                return Err(refused);
            }
            hold_token_roles(repo, caller, &token)??;
            let member = held.get(&caller.member_id).ok_or_else(|| {
                ServiceError::Unauthenticated(
                    "the member of this access token no longer exists".into(),
                )
            })?;
            require_no_wider(repo, caller, &token, member, "create")?;
            repo.insert_token(&token, &hash_secret(&secret))?;
            self.audit(
                repo,
                caller,
                token_change(
                    &*self.shown,
                    &token,
                    "created",
                    "createAccessToken",
                    None,
                    Some(&token),
                )
                .authorize(caller)?,
            )?;
            Ok(())
        })?;
        self.known_secrets.add(&hash_secret(&secret));
        Ok(CreatedToken { token, secret })
    }

    /// Service tokens and the caller's personal tokens; with `show_all`, every member's tokens.
    ///
    /// # Errors
    /// `NotPermitted` without token management.
    pub fn list_tokens(
        &self,
        permit: &Permit<use_case::ListTokens>,
        page: Page,
        show_all: bool,
    ) -> ServiceResult<TokenPage> {
        let caller = permit.caller();
        let member = (!show_all).then_some(&caller.member_id);
        let listed = Resource::member(member.map_or("*", |m| m.as_str())).token("*");
        caller.require_on("viewAccessTokens", &listed)?;
        let Listed { items, total } = self.store.read_tx(|repo| -> ServiceResult<_> {
            if caller.permissions.built_in_only() {
                return Ok(repo.list_tokens(member, page)?);
            }
            // Statements may hide some tokens: the list shows what a lookup by id would.
            crate::granting::visible_page(
                page,
                |page| Ok(repo.list_tokens(member, page)?),
                |token: &Token| {
                    caller
                        .require_on(
                            "viewAccessTokens",
                            &Resource::member(&token.member_id).token(&token.name),
                        )
                        .is_ok()
                },
            )
        })?;
        Ok(TokenPage { items, total })
    }

    /// One token.
    ///
    /// # Errors
    /// `NotPermitted` without token management; `NotFound` for an unknown id.
    pub fn get_token(&self, permit: &Permit<use_case::GetToken>, id: &str) -> ServiceResult<Token> {
        let caller = permit.caller();
        let token = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { load_token(repo, id) })?;
        caller.require_on(
            "viewAccessTokens",
            &Resource::member(&token.member_id).token(&token.name),
        )?;
        Ok(token)
    }

    /// Changes a token by JSON Patch (`/name`, `/description`, `/role`, `/defaultApiVersion`).
    /// Its role stays at most the caller's, and a personal token's at most its member's.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`; `VersionConflict` for a failed `test`; `PatchFailed` for another
    /// path or an invalid value.
    pub fn patch_token(
        &self,
        permit: &Permit<use_case::PatchToken>,
        id: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<Token> {
        let now = self.now();
        let token = self.store.write_tx(|repo| -> ServiceResult<_> {
            let HeldToken {
                caller,
                token: mut held,
                member,
            } = hold_token(repo, permit, id)?;
            let member_role = member.role;
            let mut next = TokenPatch::of(&held).apply(&patch.operations)?.onto(&held);
            if next == *held {
                return Ok(held.into_inner());
            }
            if next.role > caller.role {
                return Err(ServiceError::NotPermitted(format!(
                    "cannot give a token the role '{}' above your own role '{}'",
                    next.role, caller.role
                )));
            }
            if !held.service_token && next.role > member_role {
                return Err(ServiceError::PatchFailed(
                    format!(
                        "a personal token cannot have a role above its member's role ({member_role})"
                    )
                    .into(),
                ));
            }
            if next.custom_role_ids != held.custom_role_ids || next.inline_role != held.inline_role {
                hold_token_roles(repo, &caller, &next)?
                    .map_err(|e| ServiceError::PatchFailed(e.to_string().into()))?;
            }
            if next.name != held.name {
                require_rename_gains_nothing(&caller, &held, &next.name)?;
            }
            if next.role != held.role
                || next.custom_role_ids != held.custom_role_ids
                || next.inline_role != held.inline_role
            {
                require_no_wider(repo, &caller, &next, &member, "give these powers to")?;
            }
            next.last_modified = now;
            let token = held.replace(next);
            repo.update_token(&held)?;
            repo.announce(&Changed::Token(held.id.to_string()))?;
            let change = token_change(
                &*self.shown,
                &held,
                "updated",
                "updateAccessToken",
                Some(&token),
                Some(&held),
            )
            .comment(patch.comment.clone())
            .delta(crate::audit::json(&patch.operations));
            self.audit(repo, &caller, change.authorize(&caller)?)?;
            Ok(held.into_inner())
        })?;
        Ok(token)
    }

    /// Gives a token a new secret. With `expiry` (epoch ms, in the future) the old secret keeps
    /// working until then; otherwise it stops at once.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn reset_token(
        &self,
        permit: &Permit<use_case::ResetToken>,
        id: &str,
        expiry: Option<i64>,
    ) -> ServiceResult<CreatedToken> {
        let now = self.now();
        // A time already past retires the old secret at once, as no expiry does.
        let expiry = expiry.filter(|e| *e > now);
        let secret = new_secret();
        let token = self.store.write_tx(|repo| -> ServiceResult<_> {
            let HeldToken {
                caller,
                token: mut held,
                member,
            } = hold_token(repo, permit, id)?;
            // Whoever holds the new secret acts as the token.
            require_no_wider(repo, &caller, &held, &member, "reset")?;
            let token = held.get_mut();
            token.ending = ending(&secret);
            token.last_modified = now;
            repo.reset_token_secret(&held, &hash_secret(&secret), expiry)?;
            repo.announce(&Changed::Token(held.id.to_string()))?;
            let token = held.into_inner();
            self.audit(
                repo,
                &caller,
                token_change(
                    &*self.shown,
                    &token,
                    "reset the secret of",
                    "resetAccessToken",
                    None,
                    None,
                )
                .authorize(&caller)?,
            )?;
            Ok(token)
        })?;
        self.known_secrets.add(&hash_secret(&secret));
        Ok(CreatedToken { token, secret })
    }

    /// Deletes a token; it stops working at once on this replica, and on the others as soon as
    /// they hear of it (see [`crate::TOKEN_MAX_LAG`]).
    ///
    /// # Errors
    /// `NotPermitted` without token management; `NotFound` for an unknown id.
    pub fn delete_token(
        &self,
        permit: &Permit<use_case::DeleteToken>,
        id: &str,
    ) -> ServiceResult<()> {
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let HeldToken { caller, token, .. } = hold_token(repo, permit, id)?;
            repo.delete_token(&token)?;
            repo.announce(&Changed::Token(token.id.to_string()))?;
            self.audit(
                repo,
                &caller,
                token_change(
                    &*self.shown,
                    &token,
                    "deleted",
                    "deleteAccessToken",
                    Some(&token),
                    None,
                )
                .authorize(&caller)?,
            )
        })?;
        Ok(())
    }
}
