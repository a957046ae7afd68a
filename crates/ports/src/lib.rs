//! The traits the flagsvc core needs from the outside world.
//!
//! Ports are synchronous: the storage engines behind them (diesel on PostgreSQL and SQLite) are
//! synchronous, and the HTTP adapter runs use cases on a blocking thread pool.
//!
//! - [`Store`] opens transactions; inside one, a [`Repository`] reads and writes aggregates.
//!   Everything a use case does happens in one transaction: all of it or none of it.
//! - [`Repository`] is the combination of one trait per aggregate ([`AccountRepository`],
//!   [`MemberRepository`], [`TokenRepository`], [`ProjectRepository`],
//!   [`EnvironmentRepository`], [`FlagRepository`], [`SegmentRepository`], [`AuditRepository`],
//!   [`WebhookRepository`], [`CustomRoleRepository`], [`TeamRepository`],
//!   [`ConsoleSessionRepository`]); a helper that needs one aggregate takes that trait.
//! - [`Locked`] carries the concurrency rule (see [`locked`]): a write takes what a `lock_*`
//!   method handed out, so it cannot forget its lock.
//! - [`Clock`] tells the time, so that use cases and tests agree on "now".
//! - [`ChangeListener`] is told what committed writes changed (see [`changes`]), so that a read
//!   cache can forget what changed, here and on other replicas.

use std::net::IpAddr;

use domain::webhook::target::WebhookTarget;

pub mod account;
pub mod audit;
pub mod changes;
pub mod custom_roles;
pub mod environments;
pub mod flags;
pub mod listed;
pub mod locked;
pub mod members;
pub mod projects;
pub mod segments;
pub mod sessions;
pub mod store;
pub mod teams;
pub mod tokens;
pub mod webhooks;

pub use account::AccountRepository;
pub use audit::AuditRepository;
pub use changes::{ChangeListener, Changed, Listeners};
pub use custom_roles::CustomRoleRepository;
pub use environments::{EnvironmentRepository, ProjectEnvironment};
pub use flags::{
    FlagDefaults, FlagDependent, FlagEnvironmentFacts, FlagRepository, KeyedFlagConfig,
};
pub use listed::Listed;
pub use locked::Locked;
pub use members::MemberRepository;
pub use projects::ProjectRepository;
pub use segments::{SegmentRepository, SegmentUser};
pub use sessions::{ConsoleSession, ConsoleSessionRepository};
pub use store::{Store, StoreError, StoreExt, StoreResult, UnitOfWork, WRITE_ATTEMPTS};
pub use teams::TeamRepository;
pub use tokens::{TokenMatch, TokenRepository};
pub use webhooks::{
    ClaimedDelivery, DeliveryOutcome, OutboxDepth, QueuedDelivery, WebhookRepository,
    OUTBOX_COUNT_CAP,
};

/// Reads and writes inside one transaction: every aggregate's repository. Implementations map
/// unique-constraint violations to [`StoreError::Duplicate`]. Methods that take a `project_id`
/// act within that project only.
///
/// Implemented for every type that implements all the aggregate repositories; a use case gets
/// one as `&mut dyn Repository` from [`StoreExt`], and passes it on where one aggregate's trait
/// is expected.
pub trait Repository:
    AccountRepository
    + MemberRepository
    + TokenRepository
    + ProjectRepository
    + EnvironmentRepository
    + FlagRepository
    + SegmentRepository
    + AuditRepository
    + WebhookRepository
    + CustomRoleRepository
    + TeamRepository
    + ConsoleSessionRepository
{
}

impl<T> Repository for T where
    T: AccountRepository
        + MemberRepository
        + TokenRepository
        + ProjectRepository
        + EnvironmentRepository
        + FlagRepository
        + SegmentRepository
        + AuditRepository
        + WebhookRepository
        + CustomRoleRepository
        + TeamRepository
        + ConsoleSessionRepository
        + ?Sized
{
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
