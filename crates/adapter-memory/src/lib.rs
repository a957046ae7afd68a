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
mod tables;
mod teams;
mod tombstones;

use std::sync::{Mutex, PoisonError};

use ports::{Store, StoreResult, UnitOfWork};

pub use repository::MemoryRepository;
use tables::{
    directed, duplicate, has_all_tags, matches_search, missing, one_page, rows, search_text,
    tag_rows, AttemptRow, DeliveryRow, DeliveryState, EnvironmentRow, RetiredKey, Tables, TokenRow,
};

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

#[cfg(test)]
mod tests {
    use domain::member::Member;
    use ports::{StoreError, StoreExt};

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
