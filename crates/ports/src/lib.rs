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

pub mod account;
pub mod audit;
pub mod changes;
pub mod clock;
pub mod custom_roles;
pub mod delivery;
pub mod environments;
pub mod error;
pub mod flags;
pub mod listed;
pub mod locked;
pub mod members;
pub mod projects;
pub mod repository;
pub mod representation;
pub mod segments;
pub mod sessions;
pub mod store;
pub mod teams;
pub mod tokens;
pub mod tombstones;
pub mod webhooks;

pub use account::AccountRepository;
pub use audit::AuditRepository;
pub use changes::{ChangeListener, Changed, Listeners};
pub use clock::Clock;
pub use custom_roles::CustomRoleRepository;
pub use delivery::{HostResolver, SendError, WebhookSender};
pub use environments::{EnvironmentRepository, ProjectEnvironment, SdkKeyHolder};
pub use error::{StoreError, StoreResult};
pub use flags::{
    FlagDefaults, FlagDependent, FlagEnvironmentFacts, FlagRepository, KeyedFlagConfig,
};
pub use listed::Listed;
pub use locked::Locked;
pub use members::MemberRepository;
pub use projects::ProjectRepository;
pub use repository::Repository;
pub use representation::{ApiResource, Maintainers, Representations};
pub use segments::{SegmentRepository, SegmentUser};
pub use sessions::{ConsoleSession, ConsoleSessionRepository};
pub use store::{Store, StoreExt, UnitOfWork, WRITE_ATTEMPTS};
pub use teams::TeamRepository;
pub use tokens::{TokenMatch, TokenRepository};
pub use tombstones::{TombstoneOf, TombstoneRepository};
pub use webhooks::{
    ClaimedDelivery, DeliveryOutcome, OutboxDepth, QueuedDelivery, WebhookRepository,
    OUTBOX_COUNT_CAP,
};
