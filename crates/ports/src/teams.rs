//! Teams of the account and their members.

use domain::key::{CustomRoleKey, TeamKey};
use domain::query::TeamQuery;
use domain::team::{MembershipStep, Team};

use crate::{Listed, Locked, StoreResult};

/// Teams, by key (unique in the account: a second one answers
/// [`crate::StoreError::Duplicate`]), and which members belong to them. A member's teams are
/// part of the member as [`crate::MemberRepository`] reads it (`Member::teams`); a deleted
/// member leaves its teams, and a deleted team's members leave it, in the same transaction.
pub trait TeamRepository {
    /// Stores a new team (without members).
    fn insert_team(&mut self, team: &Team) -> StoreResult<()>;
    /// A team by key.
    fn get_team(&mut self, key: &TeamKey) -> StoreResult<Option<Team>>;
    /// The teams with these keys (unknown ones are left out), in one query, unlocked.
    fn get_teams(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<Team>>;
    /// The teams with these keys (unknown ones are left out), locked until the transaction
    /// ends. Rows are locked in key order, whatever the order of `keys`, so that two
    /// transactions locking the same teams cannot deadlock.
    fn lock_teams(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<Locked<Team>>>;
    /// One page of teams matching `query`, with the total count of matches.
    fn list_teams(&mut self, query: &TeamQuery) -> StoreResult<Listed<Team>>;
    /// How many members each of these teams has, in the order of `keys` (0 for an unknown one).
    fn count_team_members(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<u64>>;
    /// Saves a team's name, description, custom roles, version and last change.
    fn update_team(&mut self, team: &Locked<Team>) -> StoreResult<()>;
    /// Changes a team's members; whether any joined or left. Every member `step` adds exists
    /// when the use case looked: one deleted since is a [`crate::StoreError::Conflict`] (the
    /// unit of work runs again and finds it gone).
    fn change_team_members(
        &mut self,
        team: &Locked<Team>,
        step: &MembershipStep,
    ) -> StoreResult<bool>;
    /// Deletes a team; its members leave it.
    fn delete_team(&mut self, team: &Locked<Team>) -> StoreResult<()>;
    /// The keys of at most `limit` teams giving the custom role `key`, in key order.
    fn teams_with_custom_role(
        &mut self,
        key: &CustomRoleKey,
        limit: u32,
    ) -> StoreResult<Vec<String>>;
}
