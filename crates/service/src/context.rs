//! [`Service`], the data every use case works with (the store, the clock, the presentation port,
//! the caches and write queues), and what every use case does with it: tell the time, run a
//! unit of work in a transaction (or a dry run), know the account. The use cases are `impl
//! Service` blocks in their own modules; `wiring.rs` builds the service.

use std::sync::Arc;

use ports::{Clock, Repository, Store};

use crate::flag_requests::{FlagCreate, FlagView, FlagWrite, FlagWriteLane};
use crate::{
    flag_writes, known_secrets, object_id, read_cache, Representations, ServiceError,
    ServiceResult, WebhookSettings, Write,
};

/// Why the store cannot serve now ([`Service::check_ready`]): a reason fit to show to anyone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotReady(pub String);

/// The use cases, over a store and a clock.
pub struct Service {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) clock: Arc<dyn Clock>,
    /// Verified callers, told of changes to tokens and members (see [`crate::TOKEN_MAX_LAG`]).
    pub(crate) tokens: Arc<crate::token_cache::TokenCache>,
    /// Which secrets may be tokens' (see [`Authentication::may_be_a_token`]).
    pub(crate) known_secrets: known_secrets::KnownSecrets,
    pub(crate) webhooks: WebhookSettings,
    /// How the API shows resources (for audit entries).
    pub(crate) shown: Arc<dyn Representations>,
    /// The account's `_id`, once read (it never changes).
    pub(crate) account_id: std::sync::OnceLock<String>,
    /// Changes to flags waiting while another change to a flag of their lane is written.
    pub(crate) flag_writes: Arc<flag_writes::WriteQueues<FlagWriteLane, FlagWrite, FlagView>>,
    /// Flags to create waiting while others of their lane are created.
    pub(crate) flag_creates: Arc<flag_writes::WriteQueues<FlagWriteLane, FlagCreate, FlagView>>,
    /// Answers to reads, when a read cache was asked for ([`Service::with_read_cache`]).
    pub(crate) read_cache: Option<Arc<read_cache::ReadCache>>,
    /// Environments' flag data for evaluations, and the SDK keys that open them.
    pub(crate) snapshots: Arc<crate::snapshots::Snapshots>,
    /// The SDK streams of this replica, told of changes by `snapshots`.
    pub(crate) delivery: Arc<crate::delivery::Delivery>,
    /// The last readiness check and when it ended ([`Service::refresh_readiness`]).
    pub(crate) readiness: std::sync::Mutex<Option<LastReadiness>>,
}

/// A readiness check's outcome and when it ended.
pub type LastReadiness = (std::time::Instant, Result<(), NotReady>);

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service").finish_non_exhaustive()
    }
}

impl Service {
    pub(crate) fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Runs `work` in a write transaction that commits ([`Write::Commit`]) or, for a dry run,
    /// is rolled back once `work` has succeeded ([`Write::DryRun`]).
    pub(crate) fn write<T>(
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
}
