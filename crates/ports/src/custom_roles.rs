//! Custom roles of the account.

use domain::custom_role::CustomRole;
use domain::key::CustomRoleKey;
use domain::query::CustomRoleQuery;

use crate::{Listed, Locked, StoreResult};

/// Custom roles, by key (unique in the account: a second one answers
/// [`crate::StoreError::Duplicate`]).
pub trait CustomRoleRepository {
    /// Stores a new custom role created at `now`.
    fn insert_custom_role(&mut self, role: &CustomRole, now: i64) -> StoreResult<()>;
    /// A custom role by key.
    fn get_custom_role(&mut self, key: &CustomRoleKey) -> StoreResult<Option<CustomRole>>;
    /// The custom roles with these keys (unknown ones are left out), in one query, unlocked.
    fn get_custom_roles(&mut self, keys: &[String]) -> StoreResult<Vec<CustomRole>>;
    /// The custom roles with these `_id`s (unknown ones are left out), in one query, unlocked.
    fn get_custom_roles_by_id(
        &mut self,
        ids: &[domain::id::CustomRoleId],
    ) -> StoreResult<Vec<CustomRole>>;
    /// A custom role by key, locked until the transaction ends.
    fn lock_custom_role(&mut self, key: &CustomRoleKey) -> StoreResult<Option<Locked<CustomRole>>>;
    /// One page of custom roles matching `query`, with the total count of matches.
    fn list_custom_roles(&mut self, query: &CustomRoleQuery) -> StoreResult<Listed<CustomRole>>;
    /// Saves a custom role's name, description, policy and base permissions.
    fn update_custom_role(&mut self, role: &Locked<CustomRole>) -> StoreResult<()>;
    /// Deletes a custom role.
    fn delete_custom_role(&mut self, role: &Locked<CustomRole>) -> StoreResult<()>;
}
