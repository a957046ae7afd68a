//! flagsvc use cases: each loads what it needs, asks `domain` to apply the change, checks the
//! caller's role (or takes a [`Permit`] proving it was checked), and stores the result, all in one
//! transaction through the `ports`.

mod access;
mod audit;
mod auth;
mod console_sessions;
mod custom_roles;
mod environments;
mod error;
mod flag_writes;
mod flags;
mod granting;
mod ids;
mod known_secrets;
mod members;
mod projects;
mod read_cache;
mod representation;
mod segments;
mod statuses;
mod teams;
mod tokens;
pub mod use_case;
mod webhooks;

use std::sync::Arc;

use domain::audit::{AuditMember, AuditToken};
use domain::id::{MemberId, TokenId};
use domain::role::{Action, Actor, Role};
use domain::version::ApiVersion;
use ports::{Clock, Repository, Store, StoreExt};

pub use access::{Access, AccessReason, ActionAccess, MAX_CALLER_SPECIFIERS};
pub use auth::{BootstrapOutcome, TOKEN_MAX_LAG};
pub use console_sessions::{
    OpenedSession, SessionCaller, CONSOLE_SESSIONS_PER_TOKEN, CONSOLE_SESSION_TTL_MS,
};
pub use custom_roles::CustomRoleChange;
pub use environments::EnvironmentPage;
pub use error::{Cause, Detail, ServiceError};
pub use flag_writes::{Queued, QueuedWrite, WriteTurn};
pub use flags::{
    DependentFlag, EnvironmentSelection, ExpectedVersion, FlagChange, FlagList, FlagListRequest,
    FlagView, Maintainers,
};
pub use ids::{object_id, RandomIds};
pub use known_secrets::{is_generated_secret, RELOAD_INTERVAL as KNOWN_SECRETS_RELOAD_INTERVAL};
pub use members::MemberPage;
pub use projects::{ProjectList, ProjectWithEnvironments};
pub use read_cache::{
    Answer as CachedAnswer, Ticket as ReadTicket, MAX_AGE as READ_CACHE_MAX_AGE,
    MAX_LAG as READ_CACHE_MAX_LAG,
};
pub use representation::{ApiResource, PlainRepresentations, Representations};
pub use segments::{SegmentChange, SegmentPage, SegmentWithFlags};
pub use statuses::FlagStatus;
pub use teams::TeamView;
pub use tokens::{CreatedToken, TokenPage};
pub use use_case::{Permit, UseCase};
pub use webhooks::{sign, WebhookSettings, SIGNATURE_HEADER};

/// The result of a use case.
pub type ServiceResult<T> = Result<T, ServiceError>;

/// Who is calling: the access token presented and what it may do.
///
/// Only authentication ([`Service::authenticate`]) makes one, so a use case, which takes the
/// caller (or a [`Permit`] made from it) as a parameter, cannot be reached by someone who has
/// not authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's `_id`.
    token_id: TokenId,
    /// The member the token belongs to (its creator, for service tokens).
    member_id: MemberId,
    /// The role in effect: a personal token never exceeds its member's role.
    role: Role,
    /// What the caller may do, as policies decided per action and resource (its role's
    /// built-in policy, or its custom roles' and its member's).
    permissions: access::Permissions,
    /// Whether it is a service token.
    service_token: bool,
    /// The API version for requests that do not name one.
    default_api_version: ApiVersion,
    /// Who acts, as the caller's audit entries record it: the member and the token as they were
    /// when the token was verified (a change to either through this replica verifies it again).
    audited_as: Arc<(AuditMember, AuditToken)>,
    /// The request this caller makes, when a driving adapter names it
    /// ([`Caller::for_request`]): webhook deliveries its changes queue carry it.
    request_id: Option<Arc<str>>,
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

    /// The `_id` of the access token presented.
    pub fn token_id(&self) -> &TokenId {
        &self.token_id
    }

    /// The name of the access token presented.
    pub fn token_name(&self) -> &str {
        &self.audited_as.1.name
    }

    /// The member the token belongs to (its creator, for service tokens).
    pub fn member_id(&self) -> &MemberId {
        &self.member_id
    }

    /// The role in effect.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Whether the token is a service token (it acts for the account, not for a member).
    pub fn service_token(&self) -> bool {
        self.service_token
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
            service_token: self.service_token,
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

    /// A permit for use case `U` (one of the markers in [`use_case`]), if the caller's role
    /// allows it. This is where the rule is decided: the use case takes the permit and does not
    /// ask again.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`] naming the role and what it cannot do.
    pub fn may<U: UseCase>(&self, _: U) -> ServiceResult<Permit<U>> {
        Permit::ask(self)
    }

    /// [`Caller::may`] for a use case inside project `project_key`: a caller whose policies
    /// allow none of its actions in that project learns so before anything about its input.
    ///
    /// # Errors
    /// [`ServiceError::NotPermitted`].
    pub fn may_in<U: UseCase>(&self, use_case: U, project_key: &str) -> ServiceResult<Permit<U>> {
        let permit = self.may(use_case)?;
        if !self.permissions.built_in_only()
            && !self
                .permissions
                .may_do_some_in(use_case::action_of::<U>(), project_key)
        {
            return Err(ServiceError::NotPermitted(format!(
                "no role of the caller may {} in project '{project_key}'",
                use_case::action_of::<U>().describe()
            )));
        }
        Ok(permit)
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
    fn require_base_for(&self, action: &str) -> ServiceResult<()> {
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

/// Why the store cannot serve now ([`Service::check_ready`]): a reason fit to show to anyone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotReady(pub String);

/// The use cases, over a store and a clock.
pub struct Service {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    /// Verified callers, told of changes to tokens and members (see [`TOKEN_MAX_LAG`]).
    tokens: Arc<auth::TokenCache>,
    /// Which secrets may be tokens' (see [`Service::may_be_a_token`]).
    known_secrets: known_secrets::KnownSecrets,
    webhooks: WebhookSettings,
    /// How the API shows resources (for audit entries).
    shown: Arc<dyn Representations>,
    /// The account's `_id`, once read (it never changes).
    account_id: std::sync::OnceLock<String>,
    /// Changes to flags waiting while another change to a flag of their lane is written.
    flag_writes: Arc<flag_writes::WriteQueues<flags::FlagWriteLane, flags::FlagWrite, FlagView>>,
    /// Flags to create waiting while others of their lane are created.
    flag_creates: Arc<flag_writes::WriteQueues<flags::FlagWriteLane, flags::FlagCreate, FlagView>>,
    /// Answers to reads, when a read cache was asked for ([`Service::with_read_cache`]).
    read_cache: Option<Arc<read_cache::ReadCache>>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl Service {
    /// A service over `store` telling time by `clock`, recording resources in audit entries
    /// (and webhook payloads) as `representations` show them: the HTTP adapter's
    /// (`adapter_http::ApiRepresentations`) in a deployment, so that an entry holds what the API
    /// showed; [`PlainRepresentations`] only where nothing reads the entries as the API would.
    /// There is no default: an entry point that forgot would store entries without links, for good.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        representations: Arc<dyn Representations>,
    ) -> Self {
        Self {
            tokens: auth::TokenCache::on(&*store),
            known_secrets: known_secrets::KnownSecrets::default(),
            store,
            clock,
            webhooks: WebhookSettings::default(),
            shown: representations,
            account_id: std::sync::OnceLock::new(),
            flag_writes: Arc::default(),
            flag_creates: Arc::default(),
            read_cache: None,
        }
    }

    /// The same service, keeping up to `budget` bytes of answers to reads (as the driving
    /// adapter rendered them) to serve them again from memory ([`Service::cached_answer`])
    /// while the store vouches that no change to what they show was missed: never an answer
    /// older than a change this replica committed, nor one older than a change another replica
    /// committed more than [`READ_CACHE_MAX_LAG`] ago (see `read_cache`). Only a store that hears
    /// other processes' commits (PostgreSQL) ever vouches; elsewhere nothing is served from the
    /// cache. `budget` 0 keeps none.
    pub fn with_read_cache(mut self, budget: usize) -> Self {
        if budget == 0 {
            self.read_cache = None;
            return self;
        }
        let cache = Arc::new(read_cache::ReadCache::new(budget));
        let listener: Arc<dyn ports::ChangeListener> = cache.clone();
        // A store that cannot vouch for other processes' commits would never let it serve.
        self.read_cache = self
            .store
            .subscribe(Arc::downgrade(&listener))
            .then_some(cache);
        self
    }

    /// Taken before a read whose answer about `answer` is to be kept
    /// ([`Service::keep_answer`]); `None` without a read cache.
    pub fn read_ticket(&self, answer: &CachedAnswer<'_>) -> Option<ReadTicket> {
        self.read_cache.as_ref().map(|cache| cache.ticket(answer))
    }

    /// The answer kept for `request` (the whole request as the adapter tells requests apart)
    /// about `answer`, if the read cache holds one and may serve it now; `None` otherwise (then
    /// read as usual, with a [`Service::read_ticket`] taken before, and keep the answer). An
    /// answer is served to any caller who may read resources, whom it is refused to otherwise:
    /// only answers that do not depend on who asked may be kept.
    pub fn cached_answer(
        &self,
        caller: &Caller,
        answer: &CachedAnswer<'_>,
        request: &str,
    ) -> Option<ServiceResult<Arc<[u8]>>> {
        let cache = self.read_cache.as_ref()?;
        if let Err(refused) = caller.require_view(answer.project()) {
            return Some(Err(refused));
        }
        cache.get(answer, request).map(Ok)
    }

    /// Keeps `body`, the answer to `request` about `answer` read since `ticket` was taken, to
    /// be served by [`Service::cached_answer`] until a change to what it shows (or told since
    /// the ticket: then it is not kept). The keys in `answer` must be the resources' keys as
    /// stored (a request names them so when it finds them).
    pub fn keep_answer(
        &self,
        ticket: ReadTicket,
        answer: &CachedAnswer<'_>,
        request: &str,
        body: Arc<[u8]>,
    ) {
        if let Some(cache) = &self.read_cache {
            cache.keep(ticket, answer, request, body);
        }
    }

    /// Whether the store can serve now (see [`ports::Store::check_ready`]): the database
    /// answers, on a connection of its own, and its schema has every migration of this release.
    ///
    /// # Errors
    /// [`NotReady`], saying what is missing (fit to show; not a request's error).
    pub fn check_ready(&self) -> Result<(), NotReady> {
        self.store.check_ready().map_err(|err| {
            NotReady(match err {
                ports::StoreError::Unavailable(reason) => reason,
                other => other.to_string(),
            })
        })
    }

    /// The same service, delivering webhooks as `settings` say.
    pub fn with_webhook_settings(mut self, settings: WebhookSettings) -> Self {
        self.webhooks = settings;
        self
    }

    fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Runs `work` in a write transaction that commits ([`Write::Commit`]) or, for a dry run,
    /// is rolled back once `work` has succeeded ([`Write::DryRun`]).
    fn write<T>(
        &self,
        write: Write,
        work: impl FnMut(&mut dyn ports::Repository) -> ServiceResult<T>,
    ) -> ServiceResult<T> {
        use ports::StoreExt;
        match write {
            Write::Commit => self.store.write_tx(work),
            Write::DryRun => self.store.dry_run_tx(work),
        }
    }

    /// The `_id` of the account, read (or, on the very first call of a new deployment,
    /// created) inside the caller's write transaction.
    pub(crate) fn account_id_in(&self, repo: &mut dyn Repository) -> ServiceResult<String> {
        if let Some(id) = self.account_id.get() {
            return Ok(id.clone());
        }
        if let Some(id) = repo.account_id()? {
            return Ok(self.account_id.get_or_init(|| id).clone());
        }
        // Not remembered until committed: this transaction may yet roll back.
        repo.create_account(&object_id())?;
        repo.account_id()?
            .ok_or_else(|| ServiceError::Internal("the account could not be created".into()))
    }

    /// The `_id` of the account this deployment serves (24 hex, stored, never changes).
    ///
    /// # Errors
    /// Storage errors.
    pub fn account_id(&self) -> ServiceResult<String> {
        if let Some(id) = self.account_id.get() {
            return Ok(id.clone());
        }
        if let Some(id) = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.account_id()?) })?
        {
            return Ok(self.account_id.get_or_init(|| id).clone());
        }
        self.store
            .write_tx(|repo| -> ServiceResult<_> { self.account_id_in(repo) })
    }
}

/// How a change ends: stored, or rolled back after every check and write ran (`dryRun=true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Write {
    /// Commit the change.
    Commit,
    /// Run the change in full, then roll it back.
    DryRun,
}

/// The system clock, made strictly increasing within the process: two calls never return the
/// same millisecond, so creation times order everything created through one replica.
#[derive(Debug, Default)]
pub struct SystemClock {
    last: std::sync::atomic::AtomicI64,
}

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        use std::sync::atomic::Ordering;
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let wall = i64::try_from(since_epoch.as_millis()).unwrap_or(i64::MAX);
        let previous = self
            .last
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |last| {
                Some(wall.max(last + 1))
            })
            .unwrap_or(wall);
        wall.max(previous + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller_with(role: Role) -> Caller {
        Caller {
            token_id: TokenId::parse(&"1".repeat(24)).unwrap(),
            member_id: MemberId::parse(&"2".repeat(24)).unwrap(),
            role,
            permissions: access::Permissions::of_role(role),
            service_token: false,
            default_api_version: ApiVersion::CURRENT,
            audited_as: Arc::new((
                AuditMember {
                    id: "2".repeat(24),
                    email: "m@example.com".into(),
                    first_name: None,
                    last_name: None,
                },
                AuditToken {
                    id: "1".repeat(24),
                    name: "token".into(),
                    ending: "oken".into(),
                    service_token: false,
                },
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

    #[test]
    fn system_clock_never_repeats() {
        let clock = SystemClock::default();
        let mut last = clock.now_ms();
        for _ in 0..10_000 {
            let now = clock.now_ms();
            assert!(now > last);
            last = now;
        }
    }
}
