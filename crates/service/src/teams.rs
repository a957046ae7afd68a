//! Teams of the account (`/teams`) and the members' side of them (`POST /members/{id}/teams`,
//! invitations with `teamKeys`).
//!
//! Locks are taken in one order everywhere: members (by `_id`, the caller's among them), then
//! teams (by key), then custom roles (by key); two writers never wait for each other in a
//! circle. A team's members are rows of their own: adding different members to one team from
//! two requests loses neither.

use domain::id::MemberId;
use domain::instruction::InstructionError;
use domain::key::TeamKey;
use domain::member::Member;
use domain::policy::{Request, Resource};
use domain::query::TeamQuery;
use domain::team::{
    check_team_keys, MembershipStep, Team, TeamInstruction, TeamPatch, TeamPost,
    MAX_TEAMS_PER_MEMBER,
};
use domain::ValidationError;
use ports::{Changed, Listed, Repository, StoreExt};

use crate::audit::{json, Change};
use crate::auth::{hold_members, HeldMembers};
use crate::holding::{hold_custom_roles, hold_teams};
use crate::members::{may_change, member_id};
use crate::{use_case, ApiResource, Permit, Service, ServiceError, ServiceResult};

/// Teams. The use cases of `Service::teams`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Teams<'a>(&'a Service);

impl Service {
    /// Teams.
    pub fn teams(&self) -> Teams<'_> {
        Teams(self)
    }
}

impl std::ops::Deref for Teams<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// A team with the number of its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamView {
    /// The team.
    pub team: Team,
    /// How many members it has.
    pub member_count: u64,
}

fn not_found(key: &str) -> ServiceError {
    ServiceError::NotFound(format!("no team with key '{key}'"))
}

fn team_change(service: &Service, team: &Team, verb: &'static str, action: &str) -> Change {
    Change::new("team", &team.key, verb, action, Resource::team(&team.key)).href(
        service.shown.href(ApiResource::Team {
            key: team.key.as_str(),
        }),
    )
}

/// Why `member` (held) cannot join team `key`: it does not exist, or it is in as many teams as a
/// member may be (and not in this one).
fn cannot_join(held: &HeldMembers, id: &MemberId, key: &str) -> Option<String> {
    match held.get(id) {
        None => Some(format!("no member with id '{id}'")),
        Some(member)
            if member.teams.len() >= MAX_TEAMS_PER_MEMBER
                && !member.teams.iter().any(|t| t.key == key) =>
        {
            Some(format!(
                "the member '{id}' belongs to {MAX_TEAMS_PER_MEMBER} teams already, the most a member may"
            ))
        }
        Some(_) => None,
    }
}

/// The members the instructions add (`addMembers`, `replaceMembers`): those to hold and check.
fn joining(instructions: &[TeamInstruction]) -> Vec<MemberId> {
    let mut ids: Vec<MemberId> = instructions
        .iter()
        .flat_map(|i| match i {
            TeamInstruction::AddMembers { values } | TeamInstruction::ReplaceMembers { values } => {
                values.as_slice()
            }
            _ => &[],
        })
        .filter_map(|v| MemberId::parse(v).ok())
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

impl Service {
    fn team_views(
        &self,
        repo: &mut dyn Repository,
        teams: Vec<Team>,
    ) -> ServiceResult<Vec<TeamView>> {
        let keys: Vec<&TeamKey> = teams.iter().map(|t| &t.key).collect();
        let counts = repo.count_team_members(&keys)?;
        Ok(teams
            .into_iter()
            .zip(counts)
            .map(|(team, member_count)| TeamView { team, member_count })
            .collect())
    }
}

/// The refusal of the first instruction `names` picks, saying `message`.
fn instruction_naming(
    instructions: &[TeamInstruction],
    names: impl Fn(&TeamInstruction) -> bool,
    message: String,
) -> ServiceError {
    let index = instructions.iter().position(names).unwrap_or(0);
    InstructionError::Instruction { index, message }.into()
}

impl Teams<'_> {
    /// One page of teams.
    ///
    /// # Errors
    /// `NotPermitted` for a caller who may not read members (and so teams).
    pub fn list_teams(
        &self,
        permit: &Permit<use_case::ListTeams>,
        query: &TeamQuery,
    ) -> ServiceResult<Listed<TeamView>> {
        let caller = permit.caller();
        caller.require_on("viewTeams", &Resource::team("*"))?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let Listed { items, total } = if caller.permissions.built_in_only() {
                repo.list_teams(query)?
            } else {
                // Statements may hide some teams: the list shows what a lookup by key would.
                crate::granting::visible_page(
                    query.page,
                    |page| {
                        let mut query = query.clone();
                        query.page = page;
                        Ok(repo.list_teams(&query)?)
                    },
                    |team| {
                        caller
                            .require_on("viewTeams", &Resource::team(team.key.as_str()))
                            .is_ok()
                    },
                )?
            };
            Ok(Listed::new(self.team_views(repo, items)?, total))
        })
    }

    /// One team, by key.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_team(
        &self,
        permit: &Permit<use_case::GetTeam>,
        key: &str,
    ) -> ServiceResult<TeamView> {
        let caller = permit.caller();
        // Decided on the key asked for before the store is: a caller allowed only some keys
        // learns nothing of whether others exist (403 alike).
        caller.require_on("viewTeams", &Resource::team(key))?;
        let view = self.store.read_tx(|repo| -> ServiceResult<_> {
            let team = repo
                .get_team(&TeamKey::lookup(key))?
                .ok_or_else(|| not_found(key))?;
            Ok(self.team_views(repo, vec![team])?.remove(0))
        })?;
        caller.require_on("viewTeams", &Resource::team(&view.team.key))?;
        Ok(view)
    }

    /// Creates a team, with its custom roles and first members.
    ///
    /// # Errors
    /// `Invalid` for a bad key, name, description, or an unknown role or member; `KeyTaken`
    /// for a taken key; `NotPermitted`.
    pub fn create_team(
        &self,
        permit: &Permit<use_case::CreateTeam>,
        post: TeamPost,
    ) -> ServiceResult<TeamView> {
        let new = Team::new_team(post, self.now())?;
        let key = new.team.key.to_string();
        // Decided before the store says whether the key is taken (403 alike).
        permit
            .caller()
            .require_on("createTeam", &Resource::team(&key))?;
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                let ids: Vec<&MemberId> = new.member_ids.iter().collect();
                let held = hold_members(repo, permit.caller(), &ids)?;
                let caller = &held.caller;
                permit.recheck(caller)?;
                let team = &new.team;
                crate::granting::require_view_roles(caller, &team.custom_role_keys)?;
                if let Some(missing) = hold_custom_roles(repo, &team.custom_role_keys)? {
                    return Err(ValidationError::single(
                        "customRoleKeys",
                        format!("no custom role with key '{missing}'"),
                    )
                    .into());
                }
                for (i, id) in new.member_ids.iter().enumerate() {
                    if let Some(reason) = cannot_join(&held, id, &key) {
                        return Err(
                            ValidationError::single(format!("memberIDs[{i}]"), reason).into()
                        );
                    }
                }
                repo.insert_team(team)?;
                let mut locked = repo.lock_teams(&[&team.key])?;
                let locked = locked
                    .first_mut()
                    .ok_or_else(|| ServiceError::Internal("a new team vanished".into()))?;
                repo.change_team_members(locked, &MembershipStep::Add(new.member_ids.clone()))?;
                for id in &new.member_ids {
                    let after = repo.get_member(id)?.ok_or_else(|| {
                        ServiceError::Internal("a new team's member vanished".into())
                    })?;
                    crate::granting::require_grant_within(repo, caller, held.get(id), &after)?;
                }
                let mut change = team_change(self, team, "created", "createTeam")
                    .versions(None, Some(self.shown.team(team)));
                for (action, given) in [
                    ("updateTeamCustomRoles", !team.custom_role_keys.is_empty()),
                    ("updateTeamMembers", !new.member_ids.is_empty()),
                ] {
                    if given {
                        change
                            .accesses
                            .push(Request::new(action, Resource::team(&team.key)));
                    }
                }
                self.audit(repo, caller, change.authorize(caller)?)?;
                Ok(TeamView {
                    team: team.clone(),
                    member_count: u64::try_from(new.member_ids.len()).unwrap_or(u64::MAX),
                })
            })
            .map_err(|e| e.key_taken(|| format!("a team with key '{key}' already exists")))
    }

    /// Changes a team by semantic patch: its name, description, custom roles and members.
    ///
    /// # Errors
    /// `NotFound`; `Instruction` naming an instruction with an unknown role or member;
    /// `NotPermitted` for an instruction whose action the caller's policies do not allow.
    pub fn patch_team(
        &self,
        permit: &Permit<use_case::PatchTeam>,
        key: &str,
        patch: &TeamPatch,
    ) -> ServiceResult<TeamView> {
        let now = self.now();
        let joining = joining(&patch.instructions);
        // Decided on the key asked for before the store is (403 alike for a missing key).
        for instruction in &patch.instructions {
            permit
                .caller()
                .require_on(instruction.action(), &Resource::team(key))?;
        }
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let held_members = hold_members(repo, permit.caller(), &joining.iter().collect::<Vec<_>>())?;
            let caller = &held_members.caller;
            permit.recheck(caller)?;
            let mut held = repo
                .lock_teams(&[&TeamKey::lookup(key)])?
                .pop()
                .ok_or_else(|| not_found(key))?;
            let resource = Resource::team(&held.key);
            // Each instruction is decided, whether or not it changes anything.
            for instruction in &patch.instructions {
                caller.require_on(instruction.action(), &resource)?;
            }
            let change = held.apply(&patch.instructions)?;
            let added: Vec<String> = change
                .team
                .custom_role_keys
                .iter()
                .filter(|k| !held.custom_role_keys.contains(k))
                .cloned()
                .collect();
            crate::granting::require_view_roles(caller, &added)?;
            if let Some(missing) = hold_custom_roles(repo, &added)? {
                return Err(instruction_naming(&patch.instructions, |i| {
                    matches!(i, TeamInstruction::AddCustomRoles { values } if values.contains(&missing))
                }, format!("no custom role with key '{missing}'")));
            }
            for id in &joining {
                if let Some(reason) = cannot_join(&held_members, id, held.key.as_str()) {
                    let id = id.to_string();
                    return Err(instruction_naming(&patch.instructions, |instruction| {
                        matches!(instruction, TeamInstruction::AddMembers { values } | TeamInstruction::ReplaceMembers { values } if values.contains(&id))
                    }, reason));
                }
            }
            // What the team grants reaches every member at once; one joining gets it alone.
            let grants = !held.custom_role_keys.is_empty() || !change.team.custom_role_keys.is_empty();
            if change.team.custom_role_keys != held.custom_role_keys
                || (grants && !change.membership.is_empty())
            {
                crate::granting::require_unrestricted(caller, &format!("the team '{}'", held.key))?;
            }
            let mut members_changed = false;
            for step in &change.membership {
                members_changed |= repo.change_team_members(&held, step)?;
            }
            for id in &joining {
                if let (Some(before), Some(after)) = (held_members.get(id), repo.get_member(id)?) {
                    crate::granting::require_grant_within(repo, caller, Some(before), &after)?;
                }
            }
            if change.team != *held || members_changed {
                let previous = held.replace(change.team.touched(now));
                repo.update_team(&held)?;
                let mut audit = team_change(self, &held, "updated", "updateTeam")
                    .comment(patch.comment.clone())
                    .delta(json(&patch.instructions))
                    .versions(Some(self.shown.team(&previous)), Some(self.shown.team(&held)));
                audit.accesses = Vec::new();
                for instruction in &patch.instructions {
                    let access = Request::new(instruction.action(), resource.clone());
                    if !audit.accesses.contains(&access) {
                        audit.accesses.push(access);
                    }
                }
                self.audit(repo, caller, audit.authorize(caller)?)?;
            }
            let team = held.into_inner();
            Ok(self.team_views(repo, vec![team])?.remove(0))
        })
    }

    /// Deletes a team; its members leave it (and lose the custom roles it gave them).
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_team(
        &self,
        permit: &Permit<use_case::DeleteTeam>,
        key: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        // Decided on the key asked for before the store is (403 alike for a missing key).
        caller.require_on("deleteTeam", &Resource::team(key))?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let caller = &hold_members(repo, caller, &[])?.caller;
            permit.recheck(caller)?;
            let held = repo
                .lock_teams(&[&TeamKey::lookup(key)])?
                .pop()
                .ok_or_else(|| not_found(key))?;
            let resource = Resource::team(&held.key);
            // Deleting a team takes its roles from its members: decided as that too.
            let mut change =
                Change::new("team", &held.key, "deleted", "deleteTeam", resource.clone())
                    .versions(Some(self.shown.team(&held)), None);
            if repo
                .count_team_members(&[&held.key])?
                .first()
                .is_some_and(|n| *n > 0)
            {
                change
                    .accesses
                    .push(Request::new("updateTeamMembers", resource.clone()));
            }
            if !held.custom_role_keys.is_empty() {
                change
                    .accesses
                    .push(Request::new("updateTeamCustomRoles", resource));
                if change
                    .accesses
                    .iter()
                    .any(|a| a.action == "updateTeamMembers")
                {
                    crate::granting::require_unrestricted(
                        caller,
                        &format!("deleting the team '{}'", held.key),
                    )?;
                }
            }
            repo.delete_team(&held)?;
            self.audit(repo, caller, change.authorize(caller)?)?;
            Ok(())
        })
    }

    /// Adds a member to teams (`POST /members/{id}/teams`); `me` is the caller.
    ///
    /// # Errors
    /// `Invalid` for a bad or unknown team key; `NotFound`; `NotPermitted`.
    pub fn add_member_to_teams(
        &self,
        permit: &Permit<use_case::PatchMember>,
        id: &str,
        team_keys: &[String],
    ) -> ServiceResult<Member> {
        let mut errors = Vec::new();
        check_team_keys("teamKeys", team_keys, &mut errors);
        if team_keys.is_empty() {
            errors.push(domain::FieldError::new(
                "teamKeys",
                "name at least one team",
            ));
        }
        ValidationError::check(errors)?;
        let now = self.now();
        let target = member_id(permit.caller(), id)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = hold_members(repo, permit.caller(), &target.ids())?;
            let caller = held.caller.clone();
            permit.recheck(&caller)?;
            let member = target
                .id
                .as_ref()
                .and_then(|id| held.take(id))
                .ok_or_else(|| target.not_found())?;
            may_change(&caller, &member, "change the teams of")?;
            let mut teams = match hold_teams(repo, team_keys)? {
                Ok(teams) => teams,
                Err(missing) => {
                    let i = team_keys.iter().position(|k| *k == missing).unwrap_or(0);
                    return Err(ValidationError::single(
                        format!("teamKeys[{i}]"),
                        format!("no team with key '{missing}'"),
                    )
                    .into());
                }
            };
            let mut change = Change::new(
                "member",
                &member.email,
                "updated",
                "updateMemberTeams",
                Resource::member(&member.id),
            )
            .href(self.shown.href(ApiResource::Member { id: &member.id }))
            .delta(json(&team_keys));
            for team in &teams {
                change
                    .accesses
                    .push(Request::new("updateTeamMembers", Resource::team(&team.key)));
            }
            // Decided whether or not it is in them all already.
            let authorized = caller.authorize(change.accesses.clone())?;
            teams.retain(|t| !member.teams.iter().any(|in_team| in_team.key == t.key.as_str()));
            if teams.is_empty() {
                return Ok(member.into_inner());
            }
            if member.teams.len() + teams.len() > MAX_TEAMS_PER_MEMBER {
                return Err(ValidationError::single(
                    "teamKeys",
                    format!(
                        "the member belongs to {} teams; a member belongs to at most {MAX_TEAMS_PER_MEMBER}",
                        member.teams.len()
                    ),
                )
                .into());
            }
            for team in &mut teams {
                repo.change_team_members(team, &MembershipStep::Add(vec![member.id.clone()]))?;
                let touched = Team::clone(team).touched(now);
                team.replace(touched);
                repo.update_team(team)?;
            }
            let after = repo
                .get_member(&member.id)?
                .ok_or_else(|| target.not_found())?;
            crate::granting::require_grant_within(repo, &caller, Some(&member), &after)?;
            // Its tokens act with its teams' roles from the next request, on every replica.
            repo.announce(&Changed::Member(member.id.to_string()))?;
            let change = change.versions(
                Some(self.shown.member(&member)),
                Some(self.shown.member(&after)),
            );
            self.audit(repo, &caller, authorized.record(change)?)?;
            Ok(after)
        })
    }
}
