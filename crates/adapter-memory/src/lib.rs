//! The storage port ([`ports::Store`], [`ports::Repository`]) in memory, so that use cases can be
//! tested without a database.
//!
//! It keeps the semantics of the SQL stores (`adapter-sql`): the same unique constraints answer
//! [`StoreError::Duplicate`], a reference to a missing row answers [`StoreError::Conflict`] (as a
//! foreign-key violation does there), deletes cascade as the schema's `ON DELETE CASCADE` do, and
//! lists filter, sort and page alike. It passes the storage conformance suite that the engines
//! pass (`crates/app/tests/it/storage*.rs`).
//!
//! # Transactions
//! A write transaction holds the writers' [`Mutex`] from start to end, so writers run one at a
//! time (which is what makes the `lock_*` methods' promise hold), and works on a copy of the
//! committed state that replaces it only when the work succeeds: a rollback drops the copy. A
//! read transaction works on a copy of the committed state taken when it starts, and waits for
//! no writer (as on the SQL stores, a read inside a write sees what was committed). Copies are
//! cheap: each table is shared ([`Arc`]) until a transaction first writes to it.
//!
//! ```
//! use adapter_memory::MemoryStore;
//! use ports::{StoreError, StoreExt};
//!
//! let store = MemoryStore::new();
//! store.write_tx(|repo| repo.create_account("0123456789abcdef01234567")).unwrap();
//! let id = store.read_tx(|repo| -> Result<_, StoreError> { repo.account_id() }).unwrap();
//! assert_eq!(id.as_deref(), Some("0123456789abcdef01234567"));
//! ```

mod audit;
mod custom_roles;
mod flags;
mod members;
mod projects;
mod repository;
mod segments;
mod sessions;
mod teams;

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};

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
use ports::{Store, StoreError, StoreResult, UnitOfWork};

pub use repository::MemoryRepository;

/// A [`Store`] whose data lives in this process, and dies with it.
#[derive(Debug, Default)]
pub struct MemoryStore {
    /// Held by a write transaction from start to end.
    writer: Mutex<()>,
    /// The committed state: locked only to copy or replace it.
    committed: Mutex<Tables>,
    /// Told what committed writes announced (there are no other processes to hear of).
    listeners: ports::Listeners,
}

impl MemoryStore {
    /// An empty store: no account, no members, no projects.
    pub fn new() -> Self {
        Self::default()
    }
}

impl MemoryStore {
    /// A copy of the committed state.
    fn snapshot(&self) -> Tables {
        // A poisoned lock only means a transaction panicked: the committed state is whole, since
        // a transaction replaces it only once its work succeeded.
        self.committed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Store for MemoryStore {
    fn read(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        let mut snapshot = self.snapshot();
        work(&mut MemoryRepository::new(&mut snapshot))
    }

    fn write(&self, work: &mut UnitOfWork<'_>) -> StoreResult<()> {
        let _one_writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let mut working = self.snapshot();
        let mut repo = MemoryRepository::new(&mut working);
        work(&mut repo)?;
        let announced = std::mem::take(&mut repo.announced);
        *self
            .committed
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = working;
        self.listeners.tell(&announced);
        Ok(())
    }

    fn subscribe(&self, listener: std::sync::Weak<dyn ports::ChangeListener>) -> bool {
        self.listeners.add(listener);
        // One process: there are no others to hear of.
        false
    }

    fn check_ready(&self) -> StoreResult<()> {
        // In memory: nothing to reach, nothing to migrate.
        Ok(())
    }
}

/// A table: rows by primary key, shared between copies of the state until one writes to it.
type Table<K, V> = Arc<BTreeMap<K, V>>;

/// The table, for writing (copied first if another state shares it).
fn rows<K: Clone + Ord, V: Clone>(table: &mut Table<K, V>) -> &mut BTreeMap<K, V> {
    Arc::make_mut(table)
}

/// A token as stored: the token, the hash of its secret and, after a reset that keeps it, the
/// previous secret's hash with its expiry.
#[derive(Debug, Clone)]
struct TokenRow {
    token: Token,
    secret_hash: String,
    previous_secret_hash: Option<String>,
    previous_expires_at: Option<i64>,
}

/// An environment and the `_id` of its project.
#[derive(Debug, Clone)]
struct EnvironmentRow {
    project_id: ProjectId,
    environment: Environment,
}

/// An SDK or mobile key replaced by a reset.
#[derive(Debug, Clone)]
struct RetiredKey {
    environment_id: EnvironmentId,
    kind: EnvironmentCredential,
}

/// Where a queued webhook delivery stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeliveryState {
    Pending,
    Delivered,
    Failed,
}

/// A queued webhook delivery; `next_attempt_at` both schedules retries and leases claimed rows.
#[derive(Debug, Clone)]
struct DeliveryRow {
    webhook_id: WebhookId,
    entry_id: AuditEntryId,
    payload: String,
    state: DeliveryState,
    attempts: u32,
    next_attempt_at: i64,
    created_at: i64,
    request_id: Option<String>,
}

/// A delivery attempt and the webhook it was for.
#[derive(Debug, Clone)]
struct AttemptRow {
    webhook_id: WebhookId,
    attempt: DeliveryAttempt,
}

/// `(project _id, flag key)`.
type FlagId = (String, String);
/// `(project _id, flag key, environment key)`.
type ConfigId = (String, String, String);
/// `(project _id, environment key, segment key)`.
type SegmentId = (String, String, String);
/// `(project _id, flag key, environment key, other key)`: a prerequisite or a segment a flag's
/// rules name.
type EdgeId = (String, String, String, String);

/// The whole state, table by table as in the SQL schema (one field per table; tag tables are
/// the entities' own sorted `tags`).
#[derive(Debug, Clone, Default)]
struct Tables {
    account: Option<String>,
    /// By `_id`.
    members: Table<MemberId, Member>,
    /// By `_id`.
    tokens: Table<TokenId, TokenRow>,
    /// By `_id`, with sorted tags.
    projects: Table<ProjectId, Project>,
    /// By `_id`, with sorted tags.
    environments: Table<EnvironmentId, EnvironmentRow>,
    /// By the retired key.
    retired_keys: Table<String, RetiredKey>,
    /// Without configurations (`environments` is empty) and without `_maintainer`.
    flags: Table<FlagId, Flag>,
    flag_configs: Table<ConfigId, FlagConfig>,
    /// The prerequisite's variation index, by edge.
    prerequisites: Table<EdgeId, usize>,
    /// Which segments each flag's rules name, per environment.
    segment_refs: Arc<BTreeSet<EdgeId>>,
    segments: Table<SegmentId, Segment>,
    /// Whole entries, detail included; shared, so that copying the log (which only grows) for a
    /// write copies no entry.
    audit: Table<AuditEntryId, Arc<AuditEntry>>,
    /// By `_id`, with their creation time.
    webhooks: Table<WebhookId, (i64, Webhook)>,
    deliveries: Table<String, DeliveryRow>,
    /// By `(delivery _id, attempt number)`.
    attempts: Table<(String, u32), AttemptRow>,
    /// By key, with their creation time.
    custom_roles: Table<String, (i64, domain::custom_role::CustomRole)>,
    /// By key.
    teams: Table<String, domain::team::Team>,
    /// `(team key, member _id)`.
    team_members: Arc<BTreeSet<(String, MemberId)>>,
    /// Console sessions by the hash of their id.
    console_sessions: Table<String, ports::ConsoleSession>,
}

/// What a unique constraint answers.
fn duplicate(what: &str) -> StoreError {
    StoreError::Duplicate(format!("UNIQUE constraint failed: {what}"))
}

/// What a foreign key answers when the row it names is missing: as on the SQL stores, a
/// conflict (a concurrent transaction deleted it; the retry then finds it gone).
fn missing(what: &str) -> StoreError {
    StoreError::Conflict(format!("FOREIGN KEY constraint failed: {what}"))
}

/// `tags` as a tag table holds them: sorted, each once (a repeated tag violates its key).
fn tag_rows(tags: &[String], table: &str) -> StoreResult<Vec<String>> {
    let mut sorted = tags.to_vec();
    sorted.sort();
    if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(duplicate(table));
    }
    Ok(sorted)
}

/// Whether `owned` carries every tag of `wanted` (none wanted: true).
fn has_all_tags(owned: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|tag| owned.contains(tag))
}

/// The text `query` filters search (key and name, lower-cased, one per line, so that a match
/// never spans both), as the SQL stores keep it in their `search` columns.
/// Whether `haystack` (lower-cased, as [`search_text`] makes it) holds the search `text`, whatever
/// the case of `text` (the domain's parsers lower-case it, but a query built directly need not).
fn matches_search(haystack: &str, text: &str) -> bool {
    haystack.contains(&text.to_lowercase())
}

fn search_text(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|part| part.to_lowercase())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `ordering` in `direction`.
fn directed(direction: Direction, ordering: Ordering) -> Ordering {
    match direction {
        Direction::Ascending => ordering,
        Direction::Descending => ordering.reverse(),
    }
}

/// The items of one page of `all`, and the count of `all`.
fn one_page<T>(all: Vec<T>, page: Page) -> (Vec<T>, u64) {
    let total = u64::try_from(all.len()).unwrap_or(u64::MAX);
    let skip = usize::try_from(page.offset).unwrap_or(usize::MAX);
    let take = usize::try_from(page.limit).unwrap_or(usize::MAX);
    (all.into_iter().skip(skip).take(take).collect(), total)
}

#[cfg(test)]
mod tests {
    use ports::StoreExt;

    use super::*;

    #[test]
    fn a_read_inside_a_write_sees_what_was_committed_and_a_failed_write_leaves_nothing() {
        let store = MemoryStore::new();
        let inner = store.write_tx(|repo| -> StoreResult<_> {
            repo.create_account("0123456789abcdef01234567")?;
            // Waits for no writer, and sees the state from before this transaction.
            store.read_tx(|inner| inner.account_id())
        });
        assert_eq!(inner, Ok(None));
        let failed = store.write_tx(|repo| -> StoreResult<()> {
            let owner = domain::id::MemberId::parse(&"a".repeat(24)).unwrap();
            repo.insert_member(&Member::owner(owner, "o@example.com".into(), 1))?;
            Err(StoreError::Other("changed my mind".into()))
        });
        assert!(failed.is_err());
        let (account, owner) = store
            .read_tx(|repo| -> StoreResult<_> { Ok((repo.account_id()?, repo.find_owner()?)) })
            .unwrap_or_default();
        assert_eq!(account.as_deref(), Some("0123456789abcdef01234567"));
        assert_eq!(owner, None);
    }
}
