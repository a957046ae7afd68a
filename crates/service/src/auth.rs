//! Authentication: access tokens by the hash of their secret, and the first-start bootstrap.

use std::sync::Arc;

use domain::audit::AuditToken;
use domain::custom_role::CustomRole;
use domain::id::{MemberId, TokenId};
use domain::member::Member;
use domain::policy::Policy;
use domain::role::Role;
use domain::token::Token;
use domain::version::ApiVersion;
use ports::{Locked, Repository, StoreExt, TokenMatch};

use crate::access::Permissions;
use crate::caller::Principal;
use crate::member_caller::{audit_member, job_caller_as, policy_set};
use crate::secrets::hash_secret;
use crate::{Caller, RandomIds, Service, ServiceError, ServiceResult};

/// Authentication: who a secret is, and the first start. The use cases of `Service::authentication`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Authentication<'a>(&'a Service);

impl Service {
    /// Authentication: who a secret is, and the first start.
    pub fn authentication(&self) -> Authentication<'_> {
        Authentication(self)
    }
}

impl std::ops::Deref for Authentication<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// What the first-start bootstrap did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootstrapOutcome {
    /// Created the owner and its token; `generated` when the secret was made up here (it must
    /// be shown to the operator once).
    CreatedOwner {
        /// The owner's token secret.
        secret: String,
        /// Whether the secret was generated rather than given.
        generated: bool,
    },
    /// The account existed: the given bootstrap token was not applied (it is only for creating
    /// the account; a deleted or reset bootstrap token never comes back, and it never becomes a
    /// token of a later owner).
    IgnoredToken,
    /// Nothing to do.
    Unchanged,
}

/// The custom roles a caller acts with: its member's (for a personal token; a service token
/// acts for the account) and its token's.
#[derive(Debug, Default)]
pub(crate) struct Grants {
    member_roles: Vec<CustomRole>,
    token_roles: Vec<CustomRole>,
}

/// The custom roles `token` of `member` acts with, read from the store.
fn grants_of(repo: &mut dyn Repository, token: &Token, member: &Member) -> ServiceResult<Grants> {
    let held = member.all_custom_roles();
    let member_roles = if token.service_token || held.is_empty() {
        Vec::new()
    } else {
        repo.get_custom_roles(&held)?
    };
    let token_roles = if token.custom_role_ids.is_empty() {
        Vec::new()
    } else {
        repo.get_custom_roles_by_id(&token.custom_role_ids)?
    };
    Ok(Grants {
        member_roles,
        token_roles,
    })
}

/// What `token` of `member` may do, acting with built-in role `role` (its own, capped by its
/// member's for a personal token): that role's policy and its member's custom roles'; for a
/// token with custom roles or an inline role, what those and its own base role allow, and (a
/// personal token) never beyond what its member may.
fn permissions_of(token: &Token, member: &Member, role: Role, grants: &Grants) -> Permissions {
    if token.custom_role_ids.is_empty() && token.inline_role.is_empty() {
        if grants.member_roles.is_empty() || role == Role::Owner {
            return Permissions::of_role(role);
        }
        return Permissions::of_sets(vec![Arc::from(policy_set(role, &grants.member_roles))]);
    }
    let token_role = match (token.service_token, token.role, member.role) {
        (false, Role::Admin, Role::Owner) => Role::Owner,
        (_, own, _) => own,
    };
    let mut token_set = policy_set(token_role, &grants.token_roles);
    if !token.inline_role.is_empty() {
        token_set.push(Policy::new("inline", token.inline_role.clone()));
    }
    let mut sets = vec![Arc::from(token_set)];
    if !token.service_token {
        sets.push(Arc::from(policy_set(member.role, &grants.member_roles)));
    }
    Permissions::of_sets(sets)
}

pub(crate) fn caller_of(token: &Token, member: &Member, grants: &Grants) -> Caller {
    let member_role = member.role;
    // A personal token acts with at most its member's role; the owner's admin tokens act as the
    // owner (tokens carry at most `admin`, and ownership moves through the API).
    let role = match (token.service_token, token.role, member_role) {
        (true, role, _) => role,
        (false, Role::Admin, Role::Owner) => Role::Owner,
        (false, role, member) => role.min(member),
    };
    Caller {
        principal: Principal::AccessToken {
            id: token.id.clone(),
            name: token.name.clone(),
            service: token.service_token,
        },
        member_id: token.member_id.clone(),
        role,
        permissions: permissions_of(token, member, role, grants),
        default_api_version: ApiVersion::from_date(token.default_api_version)
            .unwrap_or(ApiVersion::CURRENT),
        audited_as: std::sync::Arc::new((
            audit_member(member),
            Some(AuditToken {
                id: token.id.to_string(),
                name: token.name.clone(),
                ending: token.ending.clone(),
                service_token: token.service_token,
            }),
        )),
        request_id: None,
    }
}

/// The caller `token` of `member` would be, its custom roles read from the store: what a token
/// about to be created, reset or changed could do.
pub(crate) fn caller_as(
    repo: &mut dyn Repository,
    token: &Token,
    member: &Member,
) -> ServiceResult<Caller> {
    let grants = grants_of(repo, token, member)?;
    Ok(caller_of(token, member, &grants))
}

/// Members held until the end of a transaction, with the caller as it stands under those locks.
#[derive(Debug)]
pub(crate) struct HeldMembers {
    /// The caller re-read inside the transaction: its member's current role counts.
    pub(crate) caller: Caller,
    members: Vec<Locked<Member>>,
}

impl HeldMembers {
    /// Member `id`, if it is held.
    pub(crate) fn get(&self, id: &MemberId) -> Option<&Member> {
        self.members.iter().map(|m| &**m).find(|m| m.id == *id)
    }

    /// Takes member `id` out of the held set (locked all the same).
    pub(crate) fn take(&mut self, id: &MemberId) -> Option<Locked<Member>> {
        let at = self.members.iter().position(|m| m.id == *id)?;
        Some(self.members.swap_remove(at))
    }
}

/// Locks the caller's member and the members `others` until the transaction ends (in `_id`
/// order, so two transactions cannot deadlock), and re-reads the caller under that lock: a
/// demotion or an ownership transfer committed since the caller was authenticated counts.
///
/// # Errors
/// `Unauthenticated` when the caller's token or member no longer exists.
pub(crate) fn hold_members(
    repo: &mut dyn Repository,
    caller: &Caller,
    others: &[&MemberId],
) -> ServiceResult<HeldMembers> {
    let mut ids = others.to_vec();
    ids.push(&caller.member_id);
    let members = repo.lock_members(&ids)?;
    let member = members
        .iter()
        .find(|m| m.id == caller.member_id)
        .ok_or_else(|| {
            ServiceError::Unauthenticated(match &caller.principal {
                Principal::AccessToken { .. } => {
                    "the member of this access token no longer exists".into()
                }
                Principal::Job { name, .. } => {
                    format!("the member for whom this {name} acts no longer exists")
                }
            })
        })?;
    let caller = match &caller.principal {
        Principal::AccessToken { id, .. } => {
            let token = repo.get_token(id)?.ok_or_else(|| {
                ServiceError::Unauthenticated("this access token no longer exists".into())
            })?;
            let grants = grants_of(repo, &token, member)?;
            caller_of(&token, member, &grants)
        }
        Principal::Job { name, token } => job_caller(repo, member, token.as_ref(), name)?,
    };
    Ok(HeldMembers { caller, members })
}

/// A new access token secret: `api-<uuid v4>`.
pub(crate) fn new_secret() -> String {
    format!("api-{}", uuid::Uuid::new_v4())
}

pub(crate) fn ending(secret: &str) -> String {
    let chars: Vec<char> = secret.chars().collect();
    chars[chars.len().saturating_sub(4)..].iter().collect()
}

impl Service {
    /// The caller whose secret hashes to `hash` (see [`Authentication::authenticate`]); `secret`, when
    /// known, lets a refusal say that it is an environment's key rather than a token.
    pub(crate) fn authenticate_hash(
        &self,
        hash: &str,
        secret: Option<&str>,
    ) -> ServiceResult<Caller> {
        let now = self.now();
        let caller = match self.tokens.get(hash, now) {
            Some(caller) => caller,
            None => self.verify(secret, hash, now)?,
        };
        let token_id = caller
            .token_id()
            .filter(|id| self.tokens.should_record_use(id, now));
        if let Some(token_id) = token_id {
            // Bookkeeping, not part of the request: a failure here must not fail the request.
            let recorded = self.store.write_tx(|repo| -> ServiceResult<()> {
                Ok(repo.record_token_use(token_id, &caller.member_id, now)?)
            });
            if let Err(err) = recorded {
                log::warn!("could not record the use of token {token_id}: {err}");
            }
        }
        Ok(caller)
    }

    fn verify(&self, secret: Option<&str>, hash: &str, now: i64) -> ServiceResult<Caller> {
        let epoch = self.tokens.epoch();
        let found = self.store.read_tx(|repo| -> ServiceResult<_> {
            match repo.find_token_by_hash(hash, now)? {
                Some(found) => {
                    let grants = grants_of(repo, &found.token, &found.member)?;
                    Ok(Ok((found, grants)))
                }
                None => match secret {
                    Some(secret) => Ok(Err(repo.find_environment_credential(secret)?)),
                    None => Ok(Err(None)),
                },
            }
        })?;
        match found {
            Ok((
                TokenMatch {
                    token,
                    member,
                    previous_secret_expires_at,
                },
                grants,
            )) => {
                let caller = caller_of(&token, &member, &grants);
                self.tokens.put(
                    epoch,
                    hash.to_owned(),
                    caller.clone(),
                    previous_secret_expires_at,
                );
                Ok(caller)
            }
            Err(Some(credential)) => Err(ServiceError::NotAnAccessToken(credential)),
            Err(None) => Err(ServiceError::Unauthenticated("invalid access token".into())),
        }
    }
}

impl Authentication<'_> {
    /// The caller presenting `secret` (the `Authorization` header's value).
    ///
    /// # Errors
    /// [`ServiceError::Unauthenticated`] for an unknown secret, saying so when it is an
    /// environment's SDK key, mobile key or client-side ID.
    pub fn authenticate(&self, secret: &str) -> ServiceResult<Caller> {
        self.authenticate_hash(&hash_secret(secret), Some(secret))
    }

    /// The caller presenting `secret` when this replica verified it recently and nothing is due
    /// to be written (its `lastUsed`, at most once a minute): no store is asked, so an async
    /// caller may run this on its own thread. `None` means: call [`Authentication::authenticate`].
    pub fn authenticate_cached(&self, secret: &str) -> Option<Caller> {
        let now = self.now();
        let caller = self.tokens.get(&hash_secret(secret), now)?;
        self.tokens
            .use_recorded_recently(caller.token_id()?, now)
            .then_some(caller)
    }

    /// Whether `secret` is a token this replica verified recently (it is in the in-memory
    /// cache): no store is asked. The HTTP adapter lets such callers past its throttling of failed
    /// authentications.
    pub fn is_verified(&self, secret: &str) -> bool {
        self.tokens.get(&hash_secret(secret), self.now()).is_some()
    }

    /// Makes sure an owner exists, with `bootstrap_token` (or a generated secret) as a token.
    ///
    /// # Errors
    /// [`ServiceError::Invalid`] for a bootstrap token shorter than 8 characters; storage errors.
    pub fn bootstrap(
        &self,
        bootstrap_token: Option<&str>,
        owner_email: &str,
    ) -> ServiceResult<BootstrapOutcome> {
        if let Some(secret) = bootstrap_token {
            if secret.chars().count() < 8 || secret.trim() != secret {
                return Err(ServiceError::invalid(
                    "the bootstrap token must be at least 8 characters, without surrounding spaces",
                ));
            }
        }
        let now = self.now();
        self.store.write_tx(|repo| -> ServiceResult<_> {
            self.account_id_in(repo)?;
            let token_for = |member_id: &MemberId, secret: &str, name: &str| Token {
                id: TokenId::generate(&mut RandomIds),
                member_id: member_id.clone(),
                name: name.to_owned(),
                description: "created at start-up".to_owned(),
                role: Role::Admin,
                custom_role_ids: Vec::new(),
                inline_role: Vec::new(),
                service_token: false,
                default_api_version: ApiVersion::CURRENT.date(),
                creation_date: now,
                last_modified: now,
                last_used: None,
                ending: ending(secret),
            };
            match (repo.find_owner()?, bootstrap_token) {
                (None, given) => {
                    let owner = Member::owner(
                        MemberId::generate(&mut RandomIds),
                        owner_email.to_owned(),
                        now,
                    );
                    repo.insert_member(&owner)?;
                    let secret = given.map_or_else(new_secret, str::to_owned);
                    repo.insert_token(
                        &token_for(&owner.id, &secret, "owner"),
                        &hash_secret(&secret),
                    )?;
                    Ok(BootstrapOutcome::CreatedOwner {
                        secret,
                        generated: given.is_none(),
                    })
                }
                (Some(_), Some(_)) => Ok(BootstrapOutcome::IgnoredToken),
                (Some(_), None) => Ok(BootstrapOutcome::Unchanged),
            }
        })
    }

    /// Whether `secret` may be an access token's, decided from the secrets this replica knows
    /// (see the module documentation): `false` for a secret that is surely none, without asking
    /// the store more than once per [`crate::KNOWN_SECRETS_RELOAD_INTERVAL`]. Blocks on the store when it reads.
    ///
    /// # Errors
    /// Storage errors of a reading.
    pub fn may_be_a_token(&self, secret: &str) -> ServiceResult<bool> {
        let Some(wanted) = crate::known_secrets::prefix(&hash_secret(secret)) else {
            return Ok(false);
        };
        if self.known_secrets.contains(wanted) {
            return Ok(true);
        }
        if !self.known_secrets.due(std::time::Instant::now()) {
            return Ok(false);
        }
        let now = self.now();
        let hashes = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_secret_hashes(now)?) })?;
        self.known_secrets.replace(&hashes);
        Ok(self.known_secrets.contains(wanted))
    }
}

/// The caller that job `name` is when acting for `member` as it is now, no more than the
/// access token with `token_id` (the one the work was asked with) may now: its role and roles,
/// capped by its member's for a personal token. Without a token, the member's own role and
/// roles.
fn job_caller(
    repo: &mut dyn Repository,
    member: &Member,
    token_id: Option<&TokenId>,
    name: &'static str,
) -> ServiceResult<Caller> {
    let Some(token_id) = token_id else {
        return job_caller_as(repo, member, name);
    };
    let token = repo
        .get_token(token_id)?
        .filter(|token| token.member_id == member.id)
        .ok_or_else(|| {
            ServiceError::Unauthenticated(format!(
                "the access token that asked for this {name} no longer exists"
            ))
        })?;
    let mut caller = caller_of(&token, member, &grants_of(repo, &token, member)?);
    caller.principal = Principal::Job {
        name,
        token: Some(token.id.clone()),
    };
    Ok(caller)
}

impl Authentication<'_> {
    /// The caller that background job `name` is when it does work that member `member_id`
    /// asked for with the access token `token_id` ([`Caller::asked_by`] says who asked): that
    /// member and that token as they are now, so the job never does more than the token could
    /// (a service token's work is done with the service token's role, not its creator's). The
    /// job's use cases admit it only to what such work consists of ([`crate::use_case`]); its
    /// audit entries name the member and the token. Deleting the token, or the member, ends
    /// the work it asked for.
    ///
    /// # Errors
    /// [`ServiceError::Unauthenticated`] when the member or the token no longer exists;
    /// storage errors.
    pub fn act_for(
        &self,
        (member_id, token_id): (&MemberId, Option<&TokenId>),
        name: &'static str,
    ) -> ServiceResult<Caller> {
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let member = repo.get_member(member_id)?.ok_or_else(|| {
                ServiceError::Unauthenticated(format!(
                    "the member for whom this {name} acts no longer exists"
                ))
            })?;
            job_caller(repo, &member, token_id, name)
        })
    }
}
