//! [`TeamRepository`] on diesel, and the teams of members as [`MemberRepository`] reads them.
//!
//! [`MemberRepository`]: ports::MemberRepository

use diesel::prelude::*;
use domain::id::MemberId;
use domain::key::{CustomRoleKey, TeamKey};
use domain::member::Member;
use domain::query::{CustomRoleSortField, TeamQuery};
use domain::team::{MemberTeam, MembershipStep, Team};
use ports::{Listed, Locked, StoreResult, TeamRepository};

use crate::schema::{team_members, teams};

use super::query::*;
use super::SqlRepository;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = teams)]
struct TeamRow {
    key: String,
    name: String,
    description: String,
    /// The custom roles' keys, each between newlines (empty for none).
    custom_roles: String,
    sort_name: String,
    search: String,
    creation_date: i64,
    last_modified: i64,
    version: i64,
}

/// The stored form of custom role keys: each between newlines, so that a team giving `key` is
/// a match of `\n{key}\n` (as `members.custom_roles`).
pub(super) fn stored_keys(keys: &[String]) -> String {
    if keys.is_empty() {
        String::new()
    } else {
        format!("\n{}\n", keys.join("\n"))
    }
}

/// The keys of [`stored_keys`], in their order.
pub(super) fn read_keys(stored: &str) -> Vec<String> {
    stored
        .split('\n')
        .filter(|key| !key.is_empty())
        .map(str::to_owned)
        .collect()
}

impl TeamRow {
    fn from_team(team: &Team) -> StoreResult<Self> {
        Ok(Self {
            key: team.key.to_string(),
            name: team.name.clone(),
            description: team.description.clone(),
            custom_roles: stored_keys(&team.custom_role_keys),
            sort_name: team.name.to_lowercase(),
            search: format!("{}\n{}", team.key, team.name).to_lowercase(),
            creation_date: team.creation_date,
            last_modified: team.last_modified,
            version: i64::try_from(team.version)
                .map_err(|_| ports::StoreError::Other("team version out of range".into()))?,
        })
    }

    fn into_team(self) -> StoreResult<Team> {
        Ok(Team {
            key: TeamKey::from_stored(self.key),
            name: self.name,
            description: self.description,
            custom_role_keys: read_keys(&self.custom_roles),
            creation_date: self.creation_date,
            last_modified: self.last_modified,
            version: u64::try_from(self.version)
                .map_err(|_| ports::StoreError::Other("negative team version".into()))?,
        })
    }
}

fn filtered(q: &TeamQuery) -> teams::BoxedQuery<'_, Backend> {
    let mut query = teams::table.into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(teams::search.like(search_pattern(text)).escape('\\'));
    }
    query
}

impl SqlRepository<'_> {
    /// `members` with their teams (`Member::teams`, in key order), in one query.
    pub(super) fn with_teams(&mut self, mut members: Vec<Member>) -> StoreResult<Vec<Member>> {
        if members.is_empty() {
            return Ok(members);
        }
        let ids: Vec<&str> = members.iter().map(|m| m.id.as_str()).collect();
        let rows: Vec<(String, String, String, String)> = team_members::table
            .inner_join(teams::table)
            .filter(team_members::member_id.eq_any(&ids))
            .order((team_members::member_id, teams::key))
            .select((
                team_members::member_id,
                teams::key,
                teams::name,
                teams::custom_roles,
            ))
            .load(self.conn)
            .store()?;
        for (member_id, key, name, custom_roles) in rows {
            if let Some(member) = members.iter_mut().find(|m| m.id.as_str() == member_id) {
                member.teams.push(MemberTeam {
                    key,
                    name,
                    custom_role_keys: read_keys(&custom_roles),
                });
            }
        }
        Ok(members)
    }

    /// One member with its teams.
    pub(super) fn with_teams_one(&mut self, member: Option<Member>) -> StoreResult<Option<Member>> {
        Ok(self
            .with_teams(member.into_iter().collect())?
            .into_iter()
            .next())
    }

    /// Adds members to team `key`; how many were not in it.
    fn add_team_members(&mut self, key: &str, ids: &[MemberId]) -> StoreResult<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        let rows: Vec<_> = ids
            .iter()
            .map(|id| {
                (
                    team_members::team_key.eq(key),
                    team_members::member_id.eq(id.as_str()),
                )
            })
            .collect();
        // Those already in stay: a member added twice (here or by a concurrent writer) is in once.
        let added = match &mut *self.conn {
            crate::DbConnection::Pg(conn) => diesel::insert_into(team_members::table)
                .values(&rows)
                .on_conflict_do_nothing()
                .execute(conn),
            crate::DbConnection::Sqlite(conn) => diesel::insert_or_ignore_into(team_members::table)
                .values(&rows)
                .execute(conn),
        }
        .store()?;
        Ok(added)
    }
}

impl TeamRepository for SqlRepository<'_> {
    fn insert_team(&mut self, team: &Team) -> StoreResult<()> {
        diesel::insert_into(teams::table)
            .values(TeamRow::from_team(team)?)
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn get_team(&mut self, key: &TeamKey) -> StoreResult<Option<Team>> {
        let row: Option<TeamRow> = teams::table
            .find(key.as_str())
            .select(TeamRow::as_select())
            .first(self.conn)
            .optional()
            .store()?;
        row.map(TeamRow::into_team).transpose()
    }

    fn get_teams(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<Team>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<TeamRow> = teams::table
            .filter(teams::key.eq_any(keys.iter().map(|k| k.as_str())))
            .order(teams::key)
            .select(TeamRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter().map(TeamRow::into_team).collect()
    }

    fn lock_teams(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<Locked<Team>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let locked = lock_rows!(
            self.conn,
            teams::table
                .filter(teams::key.eq_any(keys.iter().map(|k| k.as_str())))
                .order(teams::key)
                .select(teams::key)
        );
        let rows: Vec<TeamRow> = teams::table
            .filter(teams::key.eq_any(&locked))
            .order(teams::key)
            .select(TeamRow::as_select())
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|row| row.into_team().map(Locked::assume_locked))
            .collect()
    }

    fn list_teams(&mut self, q: &TeamQuery) -> StoreResult<Listed<Team>> {
        let total: i64 = filtered(q).count().get_result(self.conn).store()?;
        let query = filtered(q);
        let query = match q.sort.field {
            CustomRoleSortField::Key => sorted!(query, q.sort.direction, teams::key, teams::key),
            CustomRoleSortField::Name => {
                sorted!(query, q.sort.direction, teams::sort_name, teams::key)
            }
        };
        let rows = load_page!(self.conn, query, q.page, TeamRow);
        Ok(Listed::new(
            rows.into_iter()
                .map(TeamRow::into_team)
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn count_team_members(&mut self, keys: &[&TeamKey]) -> StoreResult<Vec<u64>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let counts: Vec<(String, i64)> = team_members::table
            .filter(team_members::team_key.eq_any(keys.iter().map(|k| k.as_str())))
            .group_by(team_members::team_key)
            .select((team_members::team_key, diesel::dsl::count_star()))
            .load(self.conn)
            .store()?;
        Ok(keys
            .iter()
            .map(|key| {
                counts
                    .iter()
                    .find(|(k, _)| k == key.as_str())
                    .map_or(0, |(_, n)| count(*n))
            })
            .collect())
    }

    fn update_team(&mut self, team: &Locked<Team>) -> StoreResult<()> {
        let row = TeamRow::from_team(team)?;
        diesel::update(teams::table.find(team.key.as_str()))
            .set((
                teams::name.eq(row.name),
                teams::description.eq(row.description),
                teams::custom_roles.eq(row.custom_roles),
                teams::sort_name.eq(row.sort_name),
                teams::search.eq(row.search),
                teams::last_modified.eq(row.last_modified),
                teams::version.eq(row.version),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn change_team_members(
        &mut self,
        team: &Locked<Team>,
        step: &MembershipStep,
    ) -> StoreResult<bool> {
        let key = team.key.as_str();
        let ids: Vec<&str> = step.member_ids().iter().map(|id| id.as_str()).collect();
        let changed = match step {
            MembershipStep::Add(added) => self.add_team_members(key, added)?,
            MembershipStep::Remove(_) if ids.is_empty() => 0,
            MembershipStep::Remove(_) => diesel::delete(
                team_members::table.filter(
                    team_members::team_key
                        .eq(key)
                        .and(team_members::member_id.eq_any(&ids)),
                ),
            )
            .execute(self.conn)
            .store()?,
            MembershipStep::Replace(joining) => {
                let left = diesel::delete(
                    team_members::table.filter(
                        team_members::team_key
                            .eq(key)
                            .and(team_members::member_id.ne_all(&ids)),
                    ),
                )
                .execute(self.conn)
                .store()?;
                left + self.add_team_members(key, joining)?
            }
        };
        Ok(changed > 0)
    }

    fn delete_team(&mut self, team: &Locked<Team>) -> StoreResult<()> {
        diesel::delete(teams::table.find(team.key.as_str()))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn teams_with_custom_role(
        &mut self,
        key: &CustomRoleKey,
        limit: u32,
    ) -> StoreResult<Vec<String>> {
        let held = stored_keys(&[key.as_str().to_owned()]);
        teams::table
            .filter(
                teams::custom_roles
                    .like(contains_pattern(&held))
                    .escape('\\'),
            )
            .order(teams::key)
            .limit(i64::from(limit))
            .select(teams::key)
            .load(self.conn)
            .store()
    }
}
