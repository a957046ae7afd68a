//! The account: one per deployment.

use crate::StoreResult;

/// The account this deployment serves.
pub trait AccountRepository {
    /// The `_id` of the account this deployment serves, once created.
    fn account_id(&mut self) -> StoreResult<Option<String>>;
    /// Creates the account with `_id` `id`, unless it exists (then nothing changes): there is
    /// one account per deployment, and its `_id` never changes.
    fn create_account(&mut self, id: &str) -> StoreResult<()>;
}
