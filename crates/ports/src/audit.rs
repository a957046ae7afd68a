//! The audit log.

use domain::audit::{AuditEntry, AuditPage, AuditQuery};
use domain::id::AuditEntryId;
use domain::webhook::Webhook;

use crate::{Changed, StoreResult};

/// The audit log: entries are appended, never changed.
pub trait AuditRepository {
    /// Appends an audit entry (with its detail fields).
    fn insert_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<()>;
    /// Appends an audit entry as [`AuditRepository::insert_audit_entry`] does, and returns every
    /// webhook (oldest first): those to consider telling of it. What every change does, so a
    /// store does it in one round trip where it can.
    fn append_audit_entry(&mut self, entry: &AuditEntry) -> StoreResult<Vec<Webhook>>;
    /// Appends `entries` as [`AuditRepository::append_audit_entry`] appends one, and returns
    /// every webhook (oldest first) once: the entries of changes written together, in one round
    /// trip where the store can. The default appends them one by one.
    fn append_audit_entries(&mut self, entries: &[AuditEntry]) -> StoreResult<Vec<Webhook>> {
        let mut webhooks = Vec::new();
        for entry in entries {
            webhooks = self.append_audit_entry(entry)?;
        }
        Ok(webhooks)
    }
    /// Newest-first audit entries matching `query`, in the listing view
    /// ([`AuditEntry::listing`]: no `delta`, `previousVersion`, `currentVersion`). The detail,
    /// up to two resources of 1 MiB each per entry, is not read. It reads at most
    /// [`MAX_AUDIT_ENTRIES_READ`](domain::audit::MAX_AUDIT_ENTRIES_READ) entries (by `before`
    /// and `after` alone, newest first) and keeps those `q` and `spec` match; where it stopped
    /// before the end, the page says where the next one starts.
    fn page_audit_entries(&mut self, query: &AuditQuery) -> StoreResult<AuditPage>;
    /// The entries of [`AuditRepository::page_audit_entries`].
    fn list_audit_entries(&mut self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        Ok(self.page_audit_entries(query)?.entries)
    }
    /// One audit entry, with its detail fields.
    fn get_audit_entry(&mut self, id: &AuditEntryId) -> StoreResult<Option<AuditEntry>>;
    /// Announces that this transaction changes what `changed` covers: once it commits, the
    /// store tells its [`ChangeListener`](crate::ChangeListener)s (in this process before the
    /// write returns; in others where it can, e.g. by a `NOTIFY` sent in this transaction).
    /// Nothing is told of a transaction that rolls back.
    fn announce(&mut self, changed: &Changed) -> StoreResult<()>;
}
