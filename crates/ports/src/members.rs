//! Members of the account.

use domain::id::MemberId;
use domain::member::Member;
use domain::query::MemberQuery;

use crate::{Listed, Locked, StoreResult};

/// Members: who may use the API, with which role. Rules between members (one owner, "no role
/// above your own") are checked on members locked with [`MemberRepository::lock_members`].
pub trait MemberRepository {
    /// The account owner, if one exists.
    fn find_owner(&mut self) -> StoreResult<Option<Member>>;
    /// Stores a new member.
    fn insert_member(&mut self, member: &Member) -> StoreResult<()>;
    /// A member by `_id`.
    fn get_member(&mut self, id: &MemberId) -> StoreResult<Option<Member>>;
    /// The members with these `_id`s (unknown ones are left out), in one query, unlocked.
    fn get_members(&mut self, ids: &[&MemberId]) -> StoreResult<Vec<Member>>;
    /// The members with these `_id`s (unknown ones are left out), locked until the transaction
    /// ends. Rows are locked in `_id` order, whatever the order of `ids`, so that two
    /// transactions locking the same members cannot deadlock.
    fn lock_members(&mut self, ids: &[&MemberId]) -> StoreResult<Vec<Locked<Member>>>;
    /// One page of members matching `query`, with the total count of matches.
    fn list_members(&mut self, query: &MemberQuery) -> StoreResult<Listed<Member>>;
    /// Which of `emails` (lower-cased) belong to members already, lower-cased.
    fn taken_emails(&mut self, emails: &[String]) -> StoreResult<Vec<String>>;
    /// The emails of at most `limit` members holding the custom role `key`, in email order.
    fn members_with_custom_role(
        &mut self,
        key: &domain::key::CustomRoleKey,
        limit: u32,
    ) -> StoreResult<Vec<String>>;
    /// Saves a member's changed fields.
    fn update_member(&mut self, member: &Locked<Member>) -> StoreResult<()>;
    /// Deletes a member and its personal tokens.
    fn delete_member(&mut self, member: &Locked<Member>) -> StoreResult<()>;
}
