//! The traits the flagsvc core needs from the outside world.
//!
//! Ports are synchronous: the storage engines behind them (diesel on PostgreSQL and SQLite) are
//! synchronous, and the HTTP adapter runs use cases on a blocking thread pool.
//!
//! - [`Store`] opens transactions; inside one, a [`Repository`] reads and writes aggregates.
//!   Everything a use case does happens in one transaction: all of it or none of it.
//!
//! # The concurrency rule
//! A use case that reads an object in order to change it holds that object until its
//! transaction ends, so that two concurrent writers never lose each other's change, on any
//! aggregate and on every store. The port makes this the only way to write: every `update_*`,
//! `delete_*` and `reset_*` of an existing object takes a [`Locked`], and only the `lock_*`
//! methods hand one out (PostgreSQL: `SELECT ... FOR UPDATE`; SQLite: write transactions run one
//! at a time). Rules that depend on other rows (one owner, "no role above your own") are checked
//! on objects locked in the same transaction.
//! - [`Clock`] tells the time, so that use cases and tests agree on "now".

use std::net::IpAddr;

use domain::audit::{AuditEntry, AuditQuery};
use domain::environment::Environment;
use domain::flag::{Defaults, Flag, FlagConfig, FlagFacts, StatusFacts};
use domain::member::Member;
use domain::project::Project;
use domain::query::{EnvironmentQuery, FlagQuery, MemberQuery, Page, ProjectQuery, SegmentQuery};
use domain::role::Role;
use domain::segment::Segment;
use domain::token::{EnvironmentCredential, Token};
use domain::webhook::target::WebhookTarget;
use domain::webhook::{DeliveryAttempt, Webhook};

/// A storage failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// A unique constraint refused the write (e.g. a key that is taken).
    #[error("already exists: {0}")]
    Duplicate(String),
    /// A concurrent transaction got in the way; the whole unit of work may be retried.
    #[error("concurrent modification: {0}")]
    Conflict(String),
    /// The store cannot be reached or is overloaded.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The unit of work asked for a rollback (its own error is reported by the caller).
    #[error("transaction rolled back")]
    Aborted,
    /// Anything else: a bug or corrupt data.
    #[error("storage error: {0}")]
    Other(String),
}

/// Result of storage operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// An object read by a `lock_*` method of [`Repository`]: no other transaction can change it
/// until this one ends. Saving or deleting an existing object takes one of these, so a write
/// cannot forget its lock. It reads as the object it holds (`Deref`).
///
/// ```
/// use ports::Locked;
/// // Only a `Repository` implementation creates one, right after locking the row.
/// let mut held = Locked::assume_locked(String::from("v1"));
/// let before = held.replace(String::from("v2"));
/// assert_eq!((before.as_str(), held.as_str()), ("v1", "v2"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked<T>(T);

impl<T> Locked<T> {
    /// Wraps `value`, which the caller has just read under a lock held until the end of the
    /// transaction. For [`Repository`] implementations only: use cases get a `Locked` from a
    /// `lock_*` method (`cargo xtask check-deps` refuses this call outside the storage adapters).
    pub fn assume_locked(value: T) -> Self {
        Self(value)
    }

    /// Replaces the held state with `next` (the same object, changed), returning the previous.
    pub fn replace(&mut self, next: T) -> T {
        std::mem::replace(&mut self.0, next)
    }

    /// The held state, for changing it in place before saving.
    pub fn get_mut(&mut self) -> &mut T {
        &mut self.0
    }

    /// The object, no longer savable.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> std::ops::Deref for Locked<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// Work done inside one transaction.
pub type UnitOfWork<'a> = dyn FnMut(&mut dyn Repository) -> StoreResult<()> + 'a;

/// Opens transactions.
///
/// # Contract
/// `read` and `write` run `work` inside one transaction and commit when it returns `Ok`; on
/// `Err` they roll back and return that error. Locks taken by the `lock_*` methods of
/// [`Repository`] are held until the end, so two writers never lose each other's change.
/// Neither retries: [`StoreExt::write_tx`] does.
pub trait Store: Send + Sync {
    /// Runs `work` in a read-only transaction.
    ///
    /// # Errors
    /// The error `work` returned, or [`StoreError::Unavailable`] when no connection can be had.
    fn read(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()>;

    /// Runs `work` in a read-write transaction.
    ///
    /// # Errors
    /// As [`Store::read`]; [`StoreError::Conflict`] when the engine aborted the transaction
    /// because of a concurrent one.
    fn write(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()>;
}

/// How many times a write transaction is attempted when the engine reports a conflict.
pub const WRITE_ATTEMPTS: usize = 5;

/// Typed transactions over any [`Store`]: the unit of work returns a value or the caller's own
/// error, and a write that meets a [`StoreError::Conflict`] is retried.
pub trait StoreExt {
    /// Runs `work` in a read transaction.
    ///
    /// # Errors
    /// `work`'s error, or the store's converted into `E`.
    fn read_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E>;

    /// Runs `work` in a write transaction, retrying it on conflicts up to [`WRITE_ATTEMPTS`] times.
    ///
    /// # Errors
    /// `work`'s error, or the store's converted into `E`.
    fn write_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E>;

    /// A dry run: runs `work` exactly as [`StoreExt::write_tx`] does (same transaction, same
    /// locks, same retries), then rolls the transaction back even when `work` succeeds, and
    /// returns what `work` returned. Nothing `work` wrote is kept: no version, audit entry or
    /// queued delivery outlives the call.
    ///
    /// # Errors
    /// As [`StoreExt::write_tx`].
    fn dry_run_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E>;
}

/// Whether a unit of work that succeeds is committed or rolled back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Commit,
    RollBack,
}

fn write_with<S: Store + ?Sized, T, E: From<StoreError>>(
    store: &S,
    ending: Ending,
    mut work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
) -> Result<T, E> {
    let mut attempt = 1;
    loop {
        let mut conflict = false;
        let result = run(
            |w| {
                let status = store.write(w);
                conflict = matches!(status, Err(StoreError::Conflict(_)));
                status
            },
            ending,
            &mut work,
        );
        if !conflict || attempt >= WRITE_ATTEMPTS {
            return result;
        }
        attempt += 1;
    }
}

fn run<T, E: From<StoreError>>(
    mut mode: impl FnMut(&mut UnitOfWork<'_>) -> StoreResult<()>,
    ending: Ending,
    mut work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
) -> Result<T, E> {
    let mut outcome: Option<Result<T, E>> = None;
    let status = mode(&mut |repo: &mut dyn Repository| match work(repo) {
        Ok(value) => {
            outcome = Some(Ok(value));
            match ending {
                Ending::Commit => Ok(()),
                // The store rolls back on any error; `Aborted` is the one that means "on purpose".
                Ending::RollBack => Err(StoreError::Aborted),
            }
        }
        Err(err) => {
            outcome = Some(Err(err));
            Err(StoreError::Aborted)
        }
    });
    match (status, outcome) {
        (Err(StoreError::Aborted), Some(Err(err))) => Err(err),
        (Err(StoreError::Aborted), Some(Ok(value))) if ending == Ending::RollBack => Ok(value),
        (Err(store), _) => Err(E::from(store)),
        (Ok(()), Some(result)) => result,
        (Ok(()), None) => Err(E::from(StoreError::Other(
            "the transaction ran no work".into(),
        ))),
    }
}

impl<S: Store + ?Sized> StoreExt for S {
    fn read_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E> {
        run(|w| self.read(w), Ending::Commit, work)
    }

    fn write_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E> {
        write_with(self, Ending::Commit, work)
    }

    fn dry_run_tx<T, E: From<StoreError>>(
        &self,
        work: impl FnMut(&mut dyn Repository) -> Result<T, E>,
    ) -> Result<T, E> {
        write_with(self, Ending::RollBack, work)
    }
}

/// Reads and writes inside one transaction. Implementations map unique-constraint violations to
/// [`StoreError::Duplicate`]. Methods that take a `project_id` act within that project only.
pub trait Repository {
    /// The `_id` of the account this deployment serves, once created.
    fn account_id(&mut self) -> StoreResult<Option<String>>;
    /// Creates the account with `_id` `id`, unless it exists (then nothing changes): there is
    /// one account per deployment, and its `_id` never changes.
    fn create_account(&mut self, id: &str) -> StoreResult<()>;
    /// The account owner, if one exists.
    fn find_owner(&mut self) -> StoreResult<Option<Member>>;
    /// Stores a new member.
    fn insert_member(&mut self, member: &Member) -> StoreResult<()>;
    /// A member by `_id`.
    fn get_member(&mut self, id: &str) -> StoreResult<Option<Member>>;
    /// The members with these `_id`s (unknown ones are left out), in one query, unlocked.
    fn get_members(&mut self, ids: &[&str]) -> StoreResult<Vec<Member>>;
    /// The members with these `_id`s (unknown ones are left out), locked until the transaction
    /// ends. Rows are locked in `_id` order, whatever the order of `ids`, so that two
    /// transactions locking the same members cannot deadlock.
    fn lock_members(&mut self, ids: &[&str]) -> StoreResult<Vec<Locked<Member>>>;
    /// One page of members matching `query`, with the total count of matches.
    fn list_members(&mut self, query: &MemberQuery) -> StoreResult<(Vec<Member>, u64)>;
    /// Which of `emails` (lower-cased) belong to members already, lower-cased.
    fn taken_emails(&mut self, emails: &[String]) -> StoreResult<Vec<String>>;
    /// Saves a member's changed fields.
    fn update_member(&mut self, member: &Locked<Member>) -> StoreResult<()>;
    /// Deletes a member and its personal tokens.
    fn delete_member(&mut self, member: &Locked<Member>) -> StoreResult<()>;
    /// Hands the service tokens created by member `from` to member `to` (service tokens belong
    /// to the account, not to the member who made them).
    fn reassign_service_tokens(&mut self, from: &str, to: &str) -> StoreResult<()>;

    /// Stores a new token with the SHA-256 hash (hex) of its secret.
    fn insert_token(&mut self, token: &Token, secret_hash: &str) -> StoreResult<()>;
    /// The token whose secret hashes to `secret_hash` (or whose previous secret does, until it
    /// expires after `now`), with its member's role and, for a previous secret, its expiry.
    fn find_token_by_hash(
        &mut self,
        secret_hash: &str,
        now: i64,
    ) -> StoreResult<Option<(Token, Role, Option<i64>)>>;
    /// A token by `_id`.
    fn get_token(&mut self, id: &str) -> StoreResult<Option<Token>>;
    /// A token by `_id`, locked until the transaction ends.
    fn lock_token(&mut self, id: &str) -> StoreResult<Option<Locked<Token>>>;
    /// Service tokens and `member_id`'s personal tokens (every token when `None`), oldest first,
    /// with the total count.
    fn list_tokens(
        &mut self,
        member_id: Option<&str>,
        page: Page,
    ) -> StoreResult<(Vec<Token>, u64)>;
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
    fn record_token_use(&mut self, token_id: &str, member_id: &str, now: i64) -> StoreResult<()>;
    /// Deletes a token.
    fn delete_token(&mut self, token: &Locked<Token>) -> StoreResult<()>;
    /// Whether `secret` is an environment's SDK key, mobile key or client-side ID (current or
    /// replaced by a reset).
    fn find_environment_credential(
        &mut self,
        secret: &str,
    ) -> StoreResult<Option<EnvironmentCredential>>;
    /// Remembers an SDK or mobile key replaced by a reset, valid for SDKs until `expires_at`.
    fn retire_environment_key(
        &mut self,
        environment_id: &str,
        key: &str,
        kind: EnvironmentCredential,
        expires_at: i64,
    ) -> StoreResult<()>;

    /// Stores a new project (without environments).
    fn insert_project(&mut self, project: &Project) -> StoreResult<()>;
    /// A project by key.
    fn get_project(&mut self, key: &str) -> StoreResult<Option<Project>>;
    /// A project by key, locked until the transaction ends.
    fn lock_project(&mut self, key: &str) -> StoreResult<Option<Locked<Project>>>;
    /// One page of projects matching `query`, with the total count of matches.
    fn list_projects(&mut self, query: &ProjectQuery) -> StoreResult<(Vec<Project>, u64)>;
    /// Saves a project's changed fields.
    fn update_project(&mut self, project: &Locked<Project>) -> StoreResult<()>;
    /// Deletes a project with its environments and flags.
    fn delete_project(&mut self, project: &Locked<Project>) -> StoreResult<()>;

    /// Stores a new environment.
    fn insert_environment(
        &mut self,
        project_id: &str,
        environment: &Environment,
    ) -> StoreResult<()>;
    /// An environment by key.
    fn get_environment(&mut self, project_id: &str, key: &str) -> StoreResult<Option<Environment>>;
    /// An environment by key, locked until the transaction ends.
    fn lock_environment(
        &mut self,
        project_id: &str,
        key: &str,
    ) -> StoreResult<Option<Locked<Environment>>>;
    /// One page of a project's environments matching `query`, with the total count of matches.
    fn list_environments(
        &mut self,
        project_id: &str,
        query: &EnvironmentQuery,
    ) -> StoreResult<(Vec<Environment>, u64)>;
    /// Every environment of the given projects, as `(project_id, environment)` in creation order.
    fn environments_of(
        &mut self,
        project_ids: &[String],
    ) -> StoreResult<Vec<(String, Environment)>>;
    /// Saves an environment's changed fields.
    fn update_environment(
        &mut self,
        project_id: &str,
        environment: &Locked<Environment>,
    ) -> StoreResult<()>;
    /// Deletes an environment with its flag configurations.
    fn delete_environment(
        &mut self,
        project_id: &str,
        environment: &Locked<Environment>,
    ) -> StoreResult<()>;

    /// Stores a new flag with a configuration for each entry of `flag.environments`.
    fn insert_flag(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()>;
    /// A flag by key with all its configurations (`_environmentName` filled in).
    fn get_flag(&mut self, project_id: &str, key: &str) -> StoreResult<Option<Flag>>;
    /// As [`Repository::get_flag`], locked until the transaction ends.
    fn lock_flag(&mut self, project_id: &str, key: &str) -> StoreResult<Option<Locked<Flag>>>;
    /// Every flag of the project with all its configurations, by key, each locked until the
    /// transaction ends (in key order, as [`Repository::lock_flag`] would lock them one by one).
    fn lock_flags(&mut self, project_id: &str) -> StoreResult<Vec<Locked<Flag>>>;
    /// A flag by project key and flag key with all its configurations, in one query (the read
    /// path of `GET` one flag). `None` when either does not exist.
    fn find_flag(&mut self, project_key: &str, key: &str) -> StoreResult<Option<Flag>>;
    /// One page of flags matching `query` (all when it has no page), with the total count; each
    /// flag carries the configurations of the environments named in `environments`.
    fn list_flags(
        &mut self,
        project_id: &str,
        query: &FlagQuery,
        environments: &[String],
    ) -> StoreResult<(Vec<Flag>, u64)>;
    /// Saves a flag's settings and the configurations of `changed_environments`.
    fn update_flag(
        &mut self,
        project_id: &str,
        flag: &Locked<Flag>,
        changed_environments: &[String],
    ) -> StoreResult<()>;
    /// Deletes a flag in every environment.
    fn delete_flag(&mut self, project_id: &str, flag: &Locked<Flag>) -> StoreResult<()>;
    /// What cross-flag rules need to know of every flag of the project (variations, archived,
    /// prerequisites).
    fn flag_facts(&mut self, project_id: &str) -> StoreResult<Vec<FlagFacts>>;
    /// What the status of flags in environments is derived from, in one query: each flag's
    /// facts in each environment, as `(flag key, environment key, facts)`, ordered by flag key
    /// then environment key. `flag` narrows to one flag, `environments` (when not empty) to
    /// those environments.
    fn flag_status_facts(
        &mut self,
        project_id: &str,
        flag: Option<&str>,
        environments: &[String],
    ) -> StoreResult<Vec<(String, String, StatusFacts)>>;
    /// Flags that use `key` as a prerequisite, as `(flag key, flag name, environment key)`.
    fn flag_dependents(
        &mut self,
        project_id: &str,
        key: &str,
    ) -> StoreResult<Vec<(String, String, String)>>;
    /// Stores a new segment of an environment.
    fn insert_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Segment,
    ) -> StoreResult<()>;
    /// A segment by key.
    fn get_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> StoreResult<Option<Segment>>;
    /// A segment by key, locked until the transaction ends.
    fn lock_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> StoreResult<Option<Locked<Segment>>>;
    /// Every segment of an environment, by key, each locked until the transaction ends.
    fn lock_segments(
        &mut self,
        project_id: &str,
        environment_key: &str,
    ) -> StoreResult<Vec<Locked<Segment>>>;
    /// One page of an environment's segments matching `query`, with the total count.
    fn list_segments(
        &mut self,
        project_id: &str,
        environment_key: &str,
        query: &SegmentQuery,
    ) -> StoreResult<(Vec<Segment>, u64)>;
    /// Saves a segment.
    fn update_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Locked<Segment>,
    ) -> StoreResult<()>;
    /// Deletes a segment.
    fn delete_segment(
        &mut self,
        project_id: &str,
        environment_key: &str,
        segment: &Locked<Segment>,
    ) -> StoreResult<()>;
    /// Flags whose rules in the environment use segment `key`, as `(flag key, flag name)`.
    fn segment_users(
        &mut self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> StoreResult<Vec<(String, String)>>;
    /// Which of `keys` are segments of the environment; those found cannot be deleted until the
    /// transaction ends.
    fn existing_segments(
        &mut self,
        project_id: &str,
        environment_key: &str,
        keys: &[String],
    ) -> StoreResult<Vec<String>>;
    /// Appends an audit entry (with its detail fields).
    fn insert_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<()>;
    /// Newest-first audit entries matching `query`, in the listing view
    /// ([`AuditEntry::listing`]: no `delta`, `previousVersion`, `currentVersion`). The detail,
    /// up to two resources of 1 MiB each per entry, is not read.
    fn list_audit_entries(&mut self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>>;
    /// One audit entry, with its detail fields.
    fn get_audit_entry(&mut self, id: &str) -> StoreResult<Option<AuditEntry>>;
    /// Stores a new webhook created at `now`.
    fn insert_webhook(&mut self, webhook: &Webhook, now: i64) -> StoreResult<()>;
    /// A webhook by `_id`.
    fn get_webhook(&mut self, id: &str) -> StoreResult<Option<Webhook>>;
    /// A webhook by `_id`, locked until the transaction ends.
    fn lock_webhook(&mut self, id: &str) -> StoreResult<Option<Locked<Webhook>>>;
    /// Every webhook, oldest first.
    fn list_webhooks(&mut self) -> StoreResult<Vec<Webhook>>;
    /// Saves a webhook.
    fn update_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()>;
    /// Deletes a webhook with its deliveries.
    fn delete_webhook(&mut self, webhook: &Locked<Webhook>) -> StoreResult<()>;
    /// Queues the delivery of an audit entry (`payload`, its JSON) to a webhook.
    fn enqueue_delivery(&mut self, delivery: &QueuedDelivery) -> StoreResult<()>;
    /// Claims up to `limit` pending deliveries due at `now`, leasing them until `lease_until`
    /// so that no other worker (of any replica) takes them meanwhile.
    fn claim_deliveries(
        &mut self,
        now: i64,
        lease_until: i64,
        limit: u32,
    ) -> StoreResult<Vec<ClaimedDelivery>>;
    /// Records an attempt and its outcome: delivered, retry at a time, or given up.
    fn record_attempt(
        &mut self,
        attempt: &DeliveryAttempt,
        webhook_id: &str,
        outcome: DeliveryOutcome,
    ) -> StoreResult<()>;
    /// A webhook's most recent attempts, newest first.
    fn list_attempts(&mut self, webhook_id: &str, limit: u32) -> StoreResult<Vec<DeliveryAttempt>>;
    /// Key and defaults of every flag of the project.
    fn flag_defaults(&mut self, project_id: &str) -> StoreResult<Vec<(String, Defaults)>>;
    /// Stores configurations for one environment, as `(flag key, configuration)`, with what
    /// they refer to (their prerequisites, the segments their rules match).
    fn insert_flag_configs(
        &mut self,
        project_id: &str,
        environment_key: &str,
        configs: &[(String, FlagConfig)],
    ) -> StoreResult<()>;
}

/// A delivery to queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedDelivery {
    /// 24 hex.
    pub id: String,
    /// The webhook.
    pub webhook_id: String,
    /// The audit entry.
    pub entry_id: String,
    /// The request body (the entry's JSON).
    pub payload: String,
    /// When it was queued (and is first due), epoch ms.
    pub created_at: i64,
}

/// A delivery claimed by a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedDelivery {
    /// The delivery.
    pub id: String,
    /// The webhook.
    pub webhook_id: String,
    /// The audit entry.
    pub entry_id: String,
    /// The webhook's URL and secret at claim time.
    pub webhook: Webhook,
    /// The request body.
    pub payload: String,
    /// Attempts made so far.
    pub attempts: u32,
}

/// What became of a delivery after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The receiver answered 2xx.
    Delivered,
    /// Try again at this time (epoch ms).
    RetryAt(i64),
    /// No more attempts.
    GaveUp,
}

/// Why a webhook delivery got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The target's host is or resolves to an address the policy refuses (see
    /// [`WebhookTarget::check_addresses`]); nothing was sent.
    #[error("{0}")]
    Refused(String),
    /// The host could not be resolved, or the connection was refused, reset or timed out. Which
    /// of these is not told (it would make webhooks a port scanner); the sender logs it.
    #[error("connection failed")]
    Failed,
}

/// Sends webhook deliveries: an HTTP POST that follows no redirect.
pub trait WebhookSender: Send + Sync {
    /// POSTs `body` to `target` with `headers`; the receiver's status, or why there is none.
    /// The sender resolves the target's host once, checks every address with
    /// [`WebhookTarget::check_addresses`], and connects only to the addresses it checked.
    ///
    /// # Errors
    /// [`SendError::Refused`] for a host that resolves to a refused address, else
    /// [`SendError::Failed`].
    fn post(
        &self,
        target: &WebhookTarget,
        body: &[u8],
        headers: &[(String, String)],
    ) -> Result<u16, SendError>;
}

/// Looks host names up (DNS): used to check a webhook's host when it is created or changed.
pub trait HostResolver: Send + Sync + std::fmt::Debug {
    /// The addresses `host` resolves to (at least one).
    ///
    /// # Errors
    /// A description when the name does not resolve, or not in time.
    fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String>;
}

/// The time.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}
