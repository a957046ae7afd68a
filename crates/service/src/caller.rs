//! [`Caller`]: who is calling, and what it may do.

use std::sync::Arc;

use domain::audit::{AuditMember, AuditToken};
use domain::id::{MemberId, TokenId};
use domain::role::{Action, Actor, Role};
use domain::version::ApiVersion;

use crate::{access, Access, ServiceError, ServiceResult};

/// What authenticated a caller, and so what it may be admitted to ([`Caller::may`]).
///
/// A person signed in to the console acts through a session opened with an access token (an
/// `AccessToken`). An environment's SDK key is never a caller: it reads its environment's flag
/// data through the SDK routes, and no use case here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// An access token, presented to the API or through a console session opened with it.
    AccessToken {
        /// The token's `_id`.
        id: TokenId,
        /// Its name.
        name: String,
        /// Whether it is a service token (it acts for the account, not for a member).
        service: bool,
    },
    /// A background job doing work that a member asked for earlier (a scheduled change, an
    /// expiring target), acting as that member and the token it asked with are when the job
    /// runs: never more than that token may then. It is admitted only to the use cases such
    /// work consists of (see [`crate::use_case`]).
    Job {
        /// What the job is, for refusals (`scheduled change`).
        name: &'static str,
        /// The access token the work was asked with, if a token asked.
        token: Option<TokenId>,
    },
}

/// Who is calling and what it may do: a [`Principal`] acting for a member.
///
/// Only authentication ([`Authentication::authenticate`](crate::Authentication::authenticate),
/// or [`Authentication::act_for`](crate::Authentication::act_for) for a job)
/// makes one, so a use case, which takes a [`Permit`](crate::Permit) made from a caller, cannot
/// be reached by someone who has not authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// What authenticated it.
    pub(crate) principal: Principal,
    /// The member it acts for (a token's member: its creator, for service tokens).
    pub(crate) member_id: MemberId,
    /// The role in effect: a personal token never exceeds its member's role.
    pub(crate) role: Role,
    /// What the caller may do, as policies decided per action and resource (its role's
    /// built-in policy, or its custom roles' and its member's).
    pub(crate) permissions: access::Permissions,
    /// The API version for requests that do not name one.
    pub(crate) default_api_version: ApiVersion,
    /// Who acts, as the caller's audit entries record it: the member, and the token (none for
    /// a job), as they were when the caller was authenticated (a change to either through this
    /// replica authenticates it again).
    pub(crate) audited_as: Arc<(AuditMember, Option<AuditToken>)>,
    /// The request this caller makes, when a driving adapter names it
    /// ([`Caller::for_request`]): webhook deliveries its changes queue carry it.
    pub(crate) request_id: Option<Arc<str>>,
}

impl Caller {
    /// The same caller, making the request `request_id` (the HTTP adapter's `X-Request-Id`).
    #[must_use]
    pub fn for_request(mut self, request_id: &str) -> Self {
        self.request_id = Some(Arc::from(request_id));
        self
    }

    /// The request this caller makes, if named.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// What authenticated the caller.
    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// Who asks for work done later by a background job as this caller
    /// ([`Authentication::act_for`](crate::Authentication::act_for)): its member, and the token
    /// it asks with.
    pub fn asked_by(&self) -> (&MemberId, Option<&TokenId>) {
        let token = match &self.principal {
            Principal::AccessToken { id, .. } => Some(id),
            Principal::Job { token, .. } => token.as_ref(),
        };
        (&self.member_id, token)
    }

    /// The `_id` of the access token presented, if a token authenticated the caller.
    pub fn token_id(&self) -> Option<&TokenId> {
        match &self.principal {
            Principal::AccessToken { id, .. } => Some(id),
            Principal::Job { .. } => None,
        }
    }

    /// The name of the access token presented, if a token authenticated the caller.
    pub fn token_name(&self) -> Option<&str> {
        match &self.principal {
            Principal::AccessToken { name, .. } => Some(name),
            Principal::Job { .. } => None,
        }
    }

    /// The member the caller acts for (a token's member: its creator, for service tokens).
    pub fn member_id(&self) -> &MemberId {
        &self.member_id
    }

    /// The role in effect.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether the token is a service token (it acts for the account, not for a member).
    pub fn service_token(&self) -> bool {
        matches!(self.principal, Principal::AccessToken { service: true, .. })
    }

    /// The API version for requests that do not name one.
    pub fn default_api_version(&self) -> ApiVersion {
        self.default_api_version
    }

    /// Who is acting, for the rules about whom the caller may act on.
    pub fn actor(&self) -> Actor<'_> {
        Actor {
            role: self.role,
            member_id: &self.member_id,
            service_token: self.service_token(),
        }
    }

    /// Whether this caller may do everything `other` may: its role at least `other`'s, and its
    /// policies (base role and statements) shown to include `other`'s. What decides that a
    /// token a caller creates, resets or changes can do nothing the caller cannot.
    pub(crate) fn may_do_all_that(&self, other: &Caller) -> bool {
        other.role <= self.role && self.permissions.include(&other.permissions)
    }

    /// Whether the caller may see member `id` (`viewMembers` on `member/{id}`): who is not is
    /// shown no member's email, name or role where a resource names one (a flag's
    /// `_maintainer`, who made an audit entry's change), only its `_id` where one is kept.
    pub fn may_view_member(&self, id: &str) -> bool {
        self.require_on("viewMembers", &domain::policy::Resource::member(id))
            .is_ok()
    }

    /// Whether the caller may see team `key` (`viewTeams` on `team/{key}`): who may not is shown
    /// no name of it where a resource names it (a flag's `_maintainerTeam`).
    pub fn may_view_team(&self, key: &str) -> bool {
        self.require_on("viewTeams", &domain::policy::Resource::team(key))
            .is_ok()
    }

    /// Whether the caller sees every member (a built-in role that reads them): answers that
    /// show members may be shared among such callers (the read cache), and no one else.
    pub fn sees_every_member(&self) -> bool {
        // Every built-in role from `reader` up views members and teams (`base_role_policy`).
        self.permissions.built_in_only() && self.role >= Role::Reader
    }

    /// Refuses callers who may not do any of what a use case of `action` consists of (see the
    /// table in `domain::role`; for custom roles, whether a statement allows one of its actions
    /// on some resource of its kind): asked before the input is read; the resources touched are
    /// decided by [`Caller::require_all`] once known.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the role and what it cannot do.
    pub(crate) fn require(&self, action: Action) -> ServiceResult<()> {
        if let Some(refusal) = self.permissions.bound_refusal() {
            return Err(ServiceError::NotPermitted(refusal));
        }
        let refusal = if self.permissions.built_in_only() {
            (!self.role.can(action)).then(|| format!("the role '{}' cannot", self.role))
        } else {
            (!self.permissions.may_do_some(action)).then(|| "no role of the caller may".to_owned())
        };
        match refusal {
            None => Ok(()),
            Some(who) => Err(ServiceError::NotPermitted(format!(
                "{who} {}",
                action.describe()
            ))),
        }
    }

    /// Refuses unless the caller's policies allow every one of `requests`.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the first action refused, its resource and why.
    pub(crate) fn require_all(&self, requests: &[domain::policy::Request]) -> ServiceResult<()> {
        for request in requests {
            self.require_base_for(&request.action)?;
        }
        self.permissions.require_all(requests)
    }

    /// What the caller may do to `resource`, a resource of `kind`: its `_access`.
    pub fn access_to(
        &self,
        kind: domain::policy::actions::ResourceKind,
        resource: &domain::policy::Resource,
    ) -> Access {
        self.permissions.access(kind, resource, |action| {
            self.require_base_for(action).is_ok()
        })
    }

    /// What the caller may do to `flag` (of project `project_key`) in each environment of
    /// `shown`, as its requests are decided: an action on what every environment shares
    /// (`domain::policy::actions::FLAG_WIDE`) is allowed where `env/*` and each of the flag's
    /// environments allow it (the first refusal is the reason), `createFlag` and `cloneFlag` as
    /// `env/*` allows them, any other in the environment itself. `each` is given one
    /// environment's access at a time, in the order of `shown`; its error stops the walk.
    ///
    /// # Errors
    /// The first error of `each`.
    pub fn flag_access<E>(
        &self,
        project_key: &str,
        flag: &domain::flag::Flag,
        shown: &[&str],
        each: impl FnMut(&str, Access) -> Result<(), E>,
    ) -> Result<(), E> {
        let everywhere = domain::policy::Resource::project(project_key)
            .environment("*")
            .flag(&flag.key)
            .with_tags(&flag.tags);
        let environments: Vec<&str> = flag.environments.keys().map(String::as_str).collect();
        self.permissions.flag_access(
            &everywhere,
            &environments,
            shown,
            |action| self.require_base_for(action).is_ok(),
            each,
        )
    }

    /// Refuses an action over policies (`domain::policy::actions::OVER_POLICIES`) to a caller
    /// whose base role may not manage members, whatever its policies allow.
    pub(crate) fn require_base_for(&self, action: &str) -> ServiceResult<()> {
        if domain::policy::actions::OVER_POLICIES.contains(&action)
            && !self.role.can(Action::ManageMembers)
        {
            return Err(ServiceError::NotPermitted(format!(
                "'{action}' needs the admin base role: custom roles cannot grant power over \
                 custom roles"
            )));
        }
        if domain::policy::actions::ACCOUNT_WIDE.contains(&action)
            && !self.role.can(Action::ManageWebhooks)
        {
            return Err(ServiceError::NotPermitted(format!(
                "'{action}' needs the admin base role: a webhook is sent every change of the \
                 account"
            )));
        }
        Ok(())
    }

    /// Refuses callers who may not read project `project_key` (`viewProject` on `proj/{key}`)
    /// and what is in it.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`].
    pub(crate) fn require_view(&self, project_key: &str) -> ServiceResult<()> {
        self.require(Action::ViewResources)?;
        self.authorize_view(project_key)
    }

    /// Refuses unless the caller's policies allow reading project `project_key`
    /// (`viewProject` on `proj/{key}`): for a caller admitted to a read, whose role was asked.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`].
    pub(crate) fn authorize_view(&self, project_key: &str) -> ServiceResult<()> {
        self.require_on(
            "viewProject",
            &domain::policy::Resource::project(project_key),
        )
    }

    /// Refuses unless the caller's policies allow `action` on `resource`.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the action, the resource and why.
    pub(crate) fn require_on(
        &self,
        action: &str,
        resource: &domain::policy::Resource,
    ) -> ServiceResult<()> {
        self.require_base_for(action)?;
        self.permissions
            .decide(action, resource)
            .map_err(ServiceError::NotPermitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{use_case, UseCase};

    fn caller_with(role: Role) -> Caller {
        Caller {
            principal: Principal::AccessToken {
                id: TokenId::parse(&"1".repeat(24)).unwrap(),
                name: "token".into(),
                service: false,
            },
            member_id: MemberId::parse(&"2".repeat(24)).unwrap(),
            role,
            permissions: access::Permissions::of_role(role),
            default_api_version: ApiVersion::CURRENT,
            audited_as: Arc::new((
                AuditMember {
                    id: "2".repeat(24),
                    email: "m@example.com".into(),
                    first_name: None,
                    last_name: None,
                },
                Some(AuditToken {
                    id: "1".repeat(24),
                    name: "token".into(),
                    ending: "oken".into(),
                    service_token: false,
                }),
            )),
            request_id: None,
        }
    }

    /// Which of a reader, a writer and an admin are refused `use_case`; the others get a permit
    /// that carries them.
    fn refusals<U: UseCase>(use_case: U) -> [bool; 3] {
        [Role::Reader, Role::Writer, Role::Admin].map(|role| {
            let caller = caller_with(role);
            match caller.may(use_case) {
                Ok(permit) => {
                    assert_eq!(permit.caller(), &caller);
                    false
                }
                Err(ServiceError::NotPermitted(_)) => true,
                Err(other) => panic!("{other:?}"),
            }
        })
    }

    #[test]
    fn writers_create_flags_and_only_admins_create_tokens() {
        const WRITER_AND_UP: [bool; 3] = [true, false, false];
        const ADMIN_AND_UP: [bool; 3] = [true, true, false];
        assert_eq!(refusals(use_case::CreateFlag), WRITER_AND_UP);
        assert_eq!(refusals(use_case::PatchSegment), WRITER_AND_UP);
        assert_eq!(refusals(use_case::PatchProject), WRITER_AND_UP);
        assert_eq!(refusals(use_case::CreateToken), ADMIN_AND_UP);
        assert_eq!(refusals(use_case::PatchWebhook), ADMIN_AND_UP);
        assert_eq!(refusals(use_case::InviteMembers), ADMIN_AND_UP);
        let refused = caller_with(Role::Reader)
            .may(use_case::CreateFlag)
            .unwrap_err()
            .to_string();
        assert!(refused.starts_with("the role 'reader' cannot"), "{refused}");
    }

    #[test]
    fn a_permit_is_asked_again_for_the_caller_as_it_stands_now() {
        let permit = caller_with(Role::Admin)
            .may(use_case::InviteMembers)
            .unwrap();
        assert_eq!(permit.recheck(&caller_with(Role::Admin)), Ok(()));
        let demoted = permit.recheck(&caller_with(Role::Writer)).unwrap_err();
        assert!(
            demoted
                .to_string()
                .starts_with("the role 'writer' cannot invite"),
            "{demoted}"
        );
    }
}
