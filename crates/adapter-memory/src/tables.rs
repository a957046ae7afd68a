//! The tables of the in-memory state, and helpers that every aggregate's code shares.

use domain::audit::AuditEntry;
use domain::environment::Environment;
use domain::flag::{Flag, FlagConfig};
use domain::id::{AuditEntryId, EnvironmentId, MemberId, ProjectId, TokenId, WebhookId};
use domain::member::Member;
use domain::project::Project;
use domain::query::{Direction, Page};
use domain::segment::Segment;
use domain::token::{EnvironmentCredential, Token};
use domain::webhook::{DeliveryAttempt, Webhook};
use ports::{StoreError, StoreResult};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A table: rows by primary key, shared between copies of the state until one writes to it.
pub(crate) type Table<K, V> = Arc<BTreeMap<K, V>>;

/// A tombstone's key: project `_id`, kind, environment key (`""` for a flag), item key.
pub(crate) type TombstoneId = (String, &'static str, String, String);

/// The table, for writing (copied first if another state shares it).
pub(crate) fn rows<K: Clone + Ord, V: Clone>(table: &mut Table<K, V>) -> &mut BTreeMap<K, V> {
    Arc::make_mut(table)
}

/// A token as stored: the token, the hash of its secret and, after a reset that keeps it, the
/// previous secret's hash with its expiry.
#[derive(Debug, Clone)]
pub(crate) struct TokenRow {
    pub(crate) token: Token,
    pub(crate) secret_hash: String,
    pub(crate) previous_secret_hash: Option<String>,
    pub(crate) previous_expires_at: Option<i64>,
}

/// An environment and the `_id` of its project.
#[derive(Debug, Clone)]
pub(crate) struct EnvironmentRow {
    pub(crate) project_id: ProjectId,
    pub(crate) environment: Environment,
}

/// An SDK or mobile key replaced by a reset.
#[derive(Debug, Clone)]
pub(crate) struct RetiredKey {
    pub(crate) environment_id: EnvironmentId,
    pub(crate) kind: EnvironmentCredential,
    /// Until when an SDK still opens the environment with it (epoch ms).
    pub(crate) expires_at: i64,
}

/// Where a queued webhook delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

/// A queued webhook delivery; `next_attempt_at` both schedules retries and leases claimed rows.
#[derive(Debug, Clone)]
pub(crate) struct DeliveryRow {
    pub(crate) webhook_id: WebhookId,
    pub(crate) entry_id: AuditEntryId,
    pub(crate) payload: String,
    pub(crate) state: DeliveryState,
    pub(crate) attempts: u32,
    pub(crate) next_attempt_at: i64,
    pub(crate) created_at: i64,
    pub(crate) request_id: Option<String>,
}

/// A delivery attempt and the webhook it was for.
#[derive(Debug, Clone)]
pub(crate) struct AttemptRow {
    pub(crate) webhook_id: WebhookId,
    pub(crate) attempt: DeliveryAttempt,
}

/// `(project _id, flag key)`.
pub(crate) type FlagId = (String, String);
/// `(project _id, flag key, environment key)`.
pub(crate) type ConfigId = (String, String, String);
/// `(project _id, environment key, segment key)`.
pub(crate) type SegmentId = (String, String, String);
/// `(project _id, flag key, environment key, other key)`: a prerequisite or a segment a flag's
/// rules name.
pub(crate) type EdgeId = (String, String, String, String);

/// The whole state, table by table as in the SQL schema (one field per table; tag tables are
/// the entities' own sorted `tags`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    pub(crate) account: Option<String>,
    /// By `_id`.
    pub(crate) members: Table<MemberId, Member>,
    /// By `_id`.
    pub(crate) tokens: Table<TokenId, TokenRow>,
    /// By `_id`, with sorted tags.
    pub(crate) projects: Table<ProjectId, Project>,
    /// By `_id`, with sorted tags.
    pub(crate) environments: Table<EnvironmentId, EnvironmentRow>,
    /// By the retired key.
    pub(crate) retired_keys: Table<String, RetiredKey>,
    /// Without configurations (`environments` is empty) and without `_maintainer`.
    pub(crate) flags: Table<FlagId, Flag>,
    pub(crate) flag_configs: Table<ConfigId, FlagConfig>,
    /// The prerequisite's variation index, by edge.
    pub(crate) prerequisites: Table<EdgeId, usize>,
    /// Which segments each flag's rules name, per environment.
    pub(crate) segment_refs: Arc<BTreeSet<EdgeId>>,
    pub(crate) segments: Table<SegmentId, Segment>,
    /// Whole entries, detail included; shared, so that copying the log (which only grows) for a
    /// write copies no entry.
    pub(crate) audit: Table<AuditEntryId, Arc<AuditEntry>>,
    /// By `_id`, with their creation time.
    pub(crate) webhooks: Table<WebhookId, (i64, Webhook)>,
    pub(crate) deliveries: Table<String, DeliveryRow>,
    /// By `(delivery _id, attempt number)`.
    pub(crate) attempts: Table<(String, u32), AttemptRow>,
    /// By key, with their creation time.
    pub(crate) custom_roles: Table<String, (i64, domain::custom_role::CustomRole)>,
    /// By key.
    pub(crate) teams: Table<String, domain::team::Team>,
    /// `(team key, member _id)`.
    pub(crate) team_members: Arc<BTreeSet<(String, MemberId)>>,
    /// Console sessions by the hash of their id.
    pub(crate) console_sessions: Table<String, ports::ConsoleSession>,
    /// Deleted flags' and segments' last SDK versions.
    pub(crate) tombstones: Table<TombstoneId, i64>,
}

/// What a unique constraint answers.
pub(crate) fn duplicate(what: &str) -> StoreError {
    StoreError::Duplicate(format!("UNIQUE constraint failed: {what}"))
}

/// What a foreign key answers when the row it names is missing: as on the SQL stores, a
/// conflict (a concurrent transaction deleted it; the retry then finds it gone).
pub(crate) fn missing(what: &str) -> StoreError {
    StoreError::Conflict(format!("FOREIGN KEY constraint failed: {what}"))
}

/// `tags` as a tag table holds them: sorted, each once (a repeated tag violates its key).
pub(crate) fn tag_rows(tags: &[String], table: &str) -> StoreResult<Vec<String>> {
    let mut sorted = tags.to_vec();
    sorted.sort();
    if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(duplicate(table));
    }
    Ok(sorted)
}

/// Whether `owned` carries every tag of `wanted` (none wanted: true).
pub(crate) fn has_all_tags(owned: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|tag| owned.contains(tag))
}

/// The text `query` filters search (key and name, lower-cased, one per line, so that a match
/// never spans both), as the SQL stores keep it in their `search` columns.
/// Whether `haystack` (lower-cased, as [`search_text`] makes it) holds the search `text`, whatever
/// the case of `text` (the domain's parsers lower-case it, but a query built directly need not).
pub(crate) fn matches_search(haystack: &str, text: &str) -> bool {
    haystack.contains(&text.to_lowercase())
}

pub(crate) fn search_text(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|part| part.to_lowercase())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `ordering` in `direction`.
pub(crate) fn directed(direction: Direction, ordering: Ordering) -> Ordering {
    match direction {
        Direction::Ascending => ordering,
        Direction::Descending => ordering.reverse(),
    }
}

/// The items of one page of `all`, and the count of `all`.
pub(crate) fn one_page<T>(all: Vec<T>, page: Page) -> (Vec<T>, u64) {
    let total = u64::try_from(all.len()).unwrap_or(u64::MAX);
    let skip = usize::try_from(page.offset).unwrap_or(usize::MAX);
    let take = usize::try_from(page.limit).unwrap_or(usize::MAX);
    (all.into_iter().skip(skip).take(take).collect(), total)
}
