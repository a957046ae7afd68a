//! [`MemberRepository`] on diesel.

use diesel::prelude::*;
use domain::id::MemberId;
use domain::key::CustomRoleKey;
use domain::member::Member;
use domain::query::{MemberQuery, MemberSortField};
use domain::role::Role;
use ports::{Listed, Locked, MemberRepository, StoreResult};

use crate::schema::members;

use super::query::*;
use super::teams::{read_keys, stored_keys as stored_custom_roles};
use super::SqlRepository;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = members)]
pub(super) struct MemberRow {
    id: String,
    email: String,
    role: String,
    first_name: Option<String>,
    last_name: Option<String>,
    creation_date: i64,
    pending_invite: bool,
    verified: bool,
    last_seen: i64,
    display_name: String,
    search: String,
    /// The custom roles' keys, each between newlines (empty for none).
    custom_roles: String,
    /// [`domain::member::email_key`] of the email: unique.
    email_key: Option<String>,
}

impl MemberRow {
    fn from_member(m: &Member) -> Self {
        let names = [m.first_name.as_deref(), m.last_name.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        Self {
            id: m.id.to_string(),
            email: m.email.clone(),
            role: m.role.as_str().to_owned(),
            first_name: m.first_name.clone(),
            last_name: m.last_name.clone(),
            creation_date: m.creation_date,
            pending_invite: m.pending_invite,
            verified: m.verified,
            last_seen: m.last_seen,
            display_name: m.display_name().to_lowercase(),
            search: format!("{}\n{}", m.email.to_lowercase(), names.to_lowercase()),
            custom_roles: stored_custom_roles(&m.custom_roles),
            email_key: Some(domain::member::email_key(&m.email)),
        }
    }

    pub(super) fn into_member(self) -> StoreResult<Member> {
        let mut member = Member::owner(
            MemberId::from_stored(self.id),
            self.email,
            self.creation_date,
        );
        member.role = parse_role(&self.role)?;
        member.first_name = self.first_name;
        member.last_name = self.last_name;
        member.pending_invite = self.pending_invite;
        member.verified = self.verified;
        member.last_seen = self.last_seen;
        member.custom_roles = read_keys(&self.custom_roles);
        Ok(member)
    }
}

fn filtered_members(q: &MemberQuery) -> members::BoxedQuery<'_, Backend> {
    let mut query = members::table.into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(members::search.like(search_pattern(text)).escape('\\'));
    }
    if !q.roles.is_empty() {
        query = query.filter(members::role.eq_any(q.roles.iter().map(|r| r.as_str())));
    }
    if !q.emails.is_empty() {
        query = query.filter(members::email_key.eq_any(&q.emails));
    }
    query
}

impl MemberRepository for SqlRepository<'_> {
    fn find_owner(&mut self) -> StoreResult<Option<Member>> {
        let row: Option<MemberRow> = members::table
            .filter(members::role.eq(Role::Owner.as_str()))
            .select(MemberRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        let owner = row.map(MemberRow::into_member).transpose()?;
        self.with_teams_one(owner)
    }

    fn insert_member(&mut self, member: &Member) -> StoreResult<()> {
        diesel::insert_into(members::table)
            .values(MemberRow::from_member(member))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn get_member(&mut self, id: &MemberId) -> StoreResult<Option<Member>> {
        let row: Option<MemberRow> = members::table
            .find(id.as_str())
            .select(MemberRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        let member = row.map(MemberRow::into_member).transpose()?;
        self.with_teams_one(member)
    }

    fn get_members(&mut self, ids: &[&MemberId]) -> StoreResult<Vec<Member>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<MemberRow> = members::table
            .filter(members::id.eq_any(ids.iter().map(|id| id.as_str())))
            .order(members::id)
            .select(MemberRow::as_select())
            .load(self.conn)
            .store()?;
        let members = rows
            .into_iter()
            .map(MemberRow::into_member)
            .collect::<StoreResult<_>>()?;
        self.with_teams(members)
    }

    fn lock_members(&mut self, ids: &[&MemberId]) -> StoreResult<Vec<Locked<Member>>> {
        let locked = lock_rows!(
            self.conn,
            members::table
                .filter(members::id.eq_any(ids.iter().map(|id| id.as_str())))
                .order(members::id)
                .select(members::id)
        );
        let rows: Vec<MemberRow> = members::table
            .filter(members::id.eq_any(&locked))
            .order(members::id)
            .select(MemberRow::as_select())
            .load(self.conn)
            .store()?;
        let members = rows
            .into_iter()
            .map(MemberRow::into_member)
            .collect::<StoreResult<_>>()?;
        Ok(self
            .with_teams(members)?
            .into_iter()
            .map(Locked::assume_locked)
            .collect())
    }

    fn list_members(&mut self, q: &MemberQuery) -> StoreResult<Listed<Member>> {
        let total: i64 = filtered_members(q).count().get_result(self.conn).store()?;
        let query = filtered_members(q);
        let query = match (q.sort.field, q.sort.direction) {
            (MemberSortField::DisplayName, direction) => {
                sorted!(query, direction, members::display_name, members::id)
            }
            (MemberSortField::LastSeen, direction) => {
                sorted!(query, direction, members::last_seen, members::id)
            }
        };
        let rows = load_page!(self.conn, query, q.page, MemberRow);
        let members = rows
            .into_iter()
            .map(MemberRow::into_member)
            .collect::<StoreResult<_>>()?;
        Ok(Listed::new(self.with_teams(members)?, count(total)))
    }

    fn taken_emails(&mut self, emails: &[String]) -> StoreResult<Vec<String>> {
        let conn = &mut *self.conn;
        chunked(emails, |emails| {
            members::table
                .filter(members::email_key.eq_any(emails))
                .select(members::email_key.assume_not_null())
                .load(conn)
                .store()
        })
    }

    fn members_with_custom_role(
        &mut self,
        key: &CustomRoleKey,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        let held = stored_custom_roles(&[key.as_str().to_owned()]);
        members::table
            .filter(
                members::custom_roles
                    .like(contains_pattern(&held))
                    .escape('\\'),
            )
            .order(members::email)
            .limit(i64::from(limit))
            .select(members::email)
            .load(self.conn)
            .store()
    }

    fn update_member(&mut self, member: &Locked<Member>) -> StoreResult<()> {
        let row = MemberRow::from_member(member);
        diesel::update(members::table.find(member.id.as_str()))
            .set((
                members::role.eq(row.role),
                members::first_name.eq(row.first_name),
                members::last_name.eq(row.last_name),
                members::pending_invite.eq(row.pending_invite),
                members::verified.eq(row.verified),
                members::display_name.eq(row.display_name),
                members::search.eq(row.search),
                members::custom_roles.eq(row.custom_roles),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_member(&mut self, member: &Locked<Member>) -> StoreResult<()> {
        diesel::delete(members::table.find(member.id.as_str()))
            .execute(self.conn)
            .store()?;
        Ok(())
    }
}
