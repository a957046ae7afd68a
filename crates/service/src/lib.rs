//! flagsvc use cases, one facade per resource (`service.flags()`, `service.segments()`, ...):
//! each takes a [`Permit`] proving that its caller was admitted ([`Caller::may`]), loads what it
//! needs, asks `domain` to apply the change, authorizes every action on every resource it
//! touches, once, and stores the result with its audit entry, all in one transaction through
//! the `ports`.

mod access;
mod audit;
mod auth;
mod authorize;
mod caller;
mod change;
mod clock;
mod console_sessions;
mod context;
mod custom_roles;
mod delivery;
mod environments;
mod error;
mod evaluations;
mod flag_requests;
mod flag_writes;
mod flags;
mod granting;
mod holding;
mod ids;
mod known_secrets;
mod member_caller;
mod members;
mod payload;
mod projects;
mod read_cache;
mod representation;
mod sdk;
mod secrets;
mod segments;
mod sizes;
mod snapshot;
mod snapshots;
mod statuses;
mod teams;
mod token_cache;
mod tokens;
pub mod use_case;
mod webhook_settings;
mod webhooks;
mod wiring;
mod write_mode;

pub use access::{Access, AccessReason, ActionAccess, MAX_CALLER_SPECIFIERS};
pub use auth::BootstrapOutcome;
pub use caller::{Caller, Principal};
pub use clock::SystemClock;
pub use console_sessions::{
    OpenedSession, SessionCaller, CONSOLE_SESSIONS_PER_TOKEN, CONSOLE_SESSION_TTL_MS,
};
pub use custom_roles::CustomRoleChange;
pub use delivery::{
    StreamEnd, StreamItem, StreamLimits, Subscription, DEFAULT_HEARTBEAT, HEARTBEAT,
    MAX_EVENTS_PER_STEP, STREAM_BUFFER,
};
pub use environments::EnvironmentPage;
pub use error::{Cause, Detail, ServiceError, ServiceResult};
pub use evaluations::{EvaluationPage, Evaluations, FlagEvaluation};
pub use flag_writes::{Queued, QueuedWrite, WriteTurn};
pub use flags::{
    DependentFlag, EnvironmentSelection, ExpectedVersion, FlagChange, FlagList, FlagListRequest,
    FlagView,
};
pub use ids::{object_id, RandomIds};
pub use known_secrets::{is_generated_secret, RELOAD_INTERVAL as KNOWN_SECRETS_RELOAD_INTERVAL};
pub use members::MemberPage;
pub use payload::SdkPayload;
pub use projects::{ProjectList, ProjectWithEnvironments};
pub use read_cache::{
    Answer as CachedAnswer, Ticket as ReadTicket, MAX_AGE as READ_CACHE_MAX_AGE,
    MAX_LAG as READ_CACHE_MAX_LAG,
};
pub use sdk::{is_generated_sdk_key, Sdk, SdkAccess};
pub use snapshot::EnvironmentSnapshot;
pub use snapshots::{
    MAX_AGE as SNAPSHOT_MAX_AGE, MAX_KEYS as SNAPSHOT_MAX_KEYS, MAX_LAG as SNAPSHOT_MAX_LAG,
};
pub use token_cache::TOKEN_MAX_LAG;
pub use wiring::DEFAULT_SNAPSHOT_BUDGET;
// The presentation port, where the use cases have always named it.
pub use audit::AuditLog;
pub use auth::Authentication;
pub use console_sessions::ConsoleSessions;
pub use context::{LastReadiness, NotReady, Service};
pub use custom_roles::CustomRoles;
pub use environments::Environments;
pub use flags::Flags;
pub use members::Members;
pub use ports::{ApiResource, Maintainers, Representations};
pub use projects::Projects;
pub use representation::PlainRepresentations;
pub use segments::Segments;
pub use segments::{SegmentChange, SegmentPage, SegmentWithFlags};
pub use statuses::FlagStatus;
pub use statuses::FlagStatuses;
pub use teams::TeamView;
pub use teams::Teams;
pub use tokens::Tokens;
pub use tokens::{CreatedToken, TokenPage};
pub use use_case::{Permit, UseCase};
pub use webhook_settings::WebhookSettings;
pub use webhooks::Webhooks;
pub use webhooks::{sign, SIGNATURE_HEADER};
use write_mode::Write;
