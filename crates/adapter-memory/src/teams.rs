//! Teams, by key, and their members.

use std::sync::Arc;

use domain::id::MemberId;
use domain::query::{CustomRoleSortField, TeamQuery};
use domain::team::{MemberTeam, MembershipStep, Team};
use ports::StoreResult;

use crate::{directed, duplicate, matches_search, missing, one_page, rows, search_text, Tables};

impl Tables {
    pub(crate) fn insert_team(&mut self, team: &Team) -> StoreResult<()> {
        if self.teams.contains_key(team.key.as_str()) {
            return Err(duplicate("teams.key"));
        }
        rows(&mut self.teams).insert(team.key.to_string(), team.clone());
        Ok(())
    }

    pub(crate) fn get_team(&self, key: &str) -> Option<Team> {
        self.teams.get(key).cloned()
    }

    pub(crate) fn list_teams(&self, q: &TeamQuery) -> (Vec<Team>, u64) {
        let mut found: Vec<Team> = self
            .teams
            .values()
            .filter(|team| {
                q.query
                    .as_ref()
                    .is_none_or(|text| matches_search(&search_text(&[&team.key, &team.name]), text))
            })
            .cloned()
            .collect();
        found.sort_by(|a, b| {
            let ordering = match q.sort.field {
                CustomRoleSortField::Key => a.key.cmp(&b.key),
                CustomRoleSortField::Name => a
                    .name
                    .to_lowercase()
                    .cmp(&b.name.to_lowercase())
                    .then_with(|| a.key.cmp(&b.key)),
            };
            directed(q.sort.direction, ordering)
        });
        one_page(found, q.page)
    }

    pub(crate) fn count_team_members(&self, key: &str) -> u64 {
        let count = self
            .team_members
            .iter()
            .filter(|(team, _)| team == key)
            .count();
        u64::try_from(count).unwrap_or(u64::MAX)
    }

    pub(crate) fn update_team(&mut self, team: &Team) {
        if let Some(stored) = rows(&mut self.teams).get_mut(team.key.as_str()) {
            *stored = team.clone();
        }
    }

    pub(crate) fn change_team_members(
        &mut self,
        key: &str,
        step: &MembershipStep,
    ) -> StoreResult<bool> {
        let joining: &[MemberId] = match step {
            MembershipStep::Add(ids) | MembershipStep::Replace(ids) => ids,
            MembershipStep::Remove(_) => &[],
        };
        if joining.iter().any(|id| !self.members.contains_key(id)) {
            return Err(missing("team_members.member_id"));
        }
        let before = Arc::clone(&self.team_members);
        let pairs = Arc::make_mut(&mut self.team_members);
        match step {
            MembershipStep::Add(ids) => {
                pairs.extend(ids.iter().map(|id| (key.to_owned(), id.clone())));
            }
            MembershipStep::Remove(ids) => {
                pairs.retain(|(team, member)| team != key || !ids.contains(member));
            }
            MembershipStep::Replace(ids) => {
                pairs.retain(|(team, _)| team != key);
                pairs.extend(ids.iter().map(|id| (key.to_owned(), id.clone())));
            }
        }
        Ok(*pairs != *before)
    }

    pub(crate) fn delete_team(&mut self, key: &str) {
        rows(&mut self.teams).remove(key);
        Arc::make_mut(&mut self.team_members).retain(|(team, _)| team != key);
    }

    pub(crate) fn teams_with_custom_role(&self, key: &str, limit: u32) -> Vec<String> {
        self.teams
            .values()
            .filter(|team| team.custom_role_keys.iter().any(|k| k == key))
            .map(|team| team.key.to_string())
            .take(limit as usize)
            .collect()
    }

    /// The teams of member `id`, in key order.
    pub(crate) fn teams_of(&self, id: &MemberId) -> Vec<MemberTeam> {
        self.team_members
            .iter()
            .filter(|(_, member)| member == id)
            .filter_map(|(team, _)| self.teams.get(team))
            .map(MemberTeam::from)
            .collect()
    }
}
