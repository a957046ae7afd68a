//! flagsvc use cases: each loads what it needs, asks `domain` to apply the change, checks the
//! caller's role, and stores the result, all in one transaction through the `ports`.

mod audit;
mod auth;
mod environments;
mod error;
mod flags;
mod ids;
mod members;
mod projects;
mod representation;
mod segments;
mod statuses;
mod tokens;
mod webhooks;

use std::sync::Arc;

use domain::role::{Action, Actor, Role};
use domain::version::ApiVersion;
use ports::{Clock, Repository, Store, StoreExt};

pub use auth::BootstrapOutcome;
pub use environments::EnvironmentPage;
pub use error::ServiceError;
pub use flags::{DependentFlag, EnvironmentSelection, FlagChange, FlagList, FlagListRequest};
pub use ids::{object_id, RandomIds};
pub use members::MemberPage;
pub use projects::{ProjectList, ProjectWithEnvironments};
pub use representation::{ApiResource, PlainRepresentations, Representations};
pub use segments::{SegmentChange, SegmentPage, SegmentWithFlags};
pub use statuses::FlagStatus;
pub use tokens::{CreatedToken, TokenPage};
pub use webhooks::{sign, WebhookSettings, SIGNATURE_HEADER};

/// The result of a use case.
pub type ServiceResult<T> = Result<T, ServiceError>;

/// Who is calling: the access token presented and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The token's `_id`.
    pub token_id: String,
    /// The token's name.
    pub token_name: String,
    /// The member the token belongs to (its creator, for service tokens).
    pub member_id: String,
    /// The role in effect: a personal token never exceeds its member's role.
    pub role: Role,
    /// Whether it is a service token.
    pub service_token: bool,
    /// The API version for requests that do not name one.
    pub default_api_version: ApiVersion,
}

impl Caller {
    /// Who is acting, for the rules about whom the caller may act on.
    pub fn actor(&self) -> Actor<'_> {
        Actor {
            role: self.role,
            member_id: &self.member_id,
            service_token: self.service_token,
        }
    }

    /// Refuses callers whose role may not do `action` (see the table in `domain::role`).
    ///
    /// # Errors
    /// [`ServiceError::Forbidden`] naming the role and what it cannot do.
    pub fn require(&self, action: Action) -> ServiceResult<()> {
        if self.role.can(action) {
            Ok(())
        } else {
            Err(ServiceError::Forbidden(format!(
                "the role '{}' cannot {}",
                self.role,
                action.describe()
            )))
        }
    }
}

/// The use cases, over a store and a clock.
pub struct Service {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    tokens: auth::TokenCache,
    webhooks: WebhookSettings,
    /// How the API shows resources (for audit entries).
    shown: Arc<dyn Representations>,
    /// The account's `_id`, once read (it never changes).
    account_id: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl Service {
    /// A service over `store` telling time by `clock`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            tokens: auth::TokenCache::default(),
            webhooks: WebhookSettings::default(),
            shown: Arc::new(PlainRepresentations),
            account_id: std::sync::OnceLock::new(),
        }
    }

    /// The same service, delivering webhooks as `settings` say.
    pub fn with_webhook_settings(mut self, settings: WebhookSettings) -> Self {
        self.webhooks = settings;
        self
    }

    /// The same service, recording resources in audit entries as `representations` show them
    /// (the HTTP adapter's, in a deployment; without it, entries hold plain domain JSON).
    pub fn with_representations(mut self, representations: Arc<dyn Representations>) -> Self {
        self.shown = representations;
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
