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
use domain::role::Action;
use domain::team::{check_team_keys, MembershipStep, Team, TeamInstruction, TeamPatch, TeamPost};
use domain::ValidationError;
use ports::{Changed, Listed, Locked, Repository, StoreExt};

use crate::audit::{json, Change};
use crate::auth::hold_members;
use crate::members::hold_custom_roles;
use crate::{use_case, ApiResource, Caller, Permit, Service, ServiceError, ServiceResult};

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

/// The members of `ids` that do not exist, by their place in `ids`.
fn missing_members(repo: &mut dyn Repository, ids: &[MemberId]) -> ServiceResult<Vec<usize>> {
    let refs: Vec<&MemberId> = ids.iter().collect();
    let found = repo.get_members(&refs)?;
    Ok(ids
        .iter()
        .enumerate()
        .filter(|(_, id)| !found.iter().any(|m| m.id == **id))
        .map(|(i, _)| i)
        .collect())
}

/// Locks the teams `keys` name (each once, in key order). The first key naming no team, if any.
pub(crate) fn hold_teams(
    repo: &mut dyn Repository,
    keys: &[String],
) -> ServiceResult<Result<Vec<Locked<Team>>, String>> {
    let lookups: Vec<TeamKey> = keys.iter().map(|k| TeamKey::lookup(k)).collect();
    let refs: Vec<&TeamKey> = lookups.iter().collect();
    let teams = repo.lock_teams(&refs)?;
    Ok(
        match keys.iter().find(|k| !teams.iter().any(|t| t.key == **k)) {
            Some(missing) => Err(missing.clone()),
            None => Ok(teams),
        },
    )
}

/// Adds `member` to each of `teams` it is not in yet (each team's version moves on), at `now`.
pub(crate) fn join_teams(
    repo: &mut dyn Repository,
    member: &MemberId,
    teams: &mut [Locked<Team>],
    now: i64,
) -> ServiceResult<()> {
    for team in teams.iter_mut() {
        repo.change_team_members(team, &MembershipStep::Add(vec![member.clone()]))?;
        let team = team.get_mut();
        team.version += 1;
        team.last_modified = now;
    }
    for team in teams.iter() {
        repo.update_team(team)?;
    }
    Ok(())
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

    /// One page of teams.
    ///
    /// # Errors
    /// `NotPermitted` for a caller who may not read members (and so teams).
    pub fn list_teams(
        &self,
        caller: &Caller,
        query: &TeamQuery,
    ) -> ServiceResult<Listed<TeamView>> {
        caller.require(Action::ViewMembers)?;
        caller.require_on("viewTeams", &Resource::team("*"))?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let Listed { items, total } = repo.list_teams(query)?;
            Ok(Listed::new(self.team_views(repo, items)?, total))
        })
    }

    /// One team, by key.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_team(&self, caller: &Caller, key: &str) -> ServiceResult<TeamView> {
        caller.require(Action::ViewMembers)?;
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
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                let caller = &hold_members(repo, permit.caller(), &[])?.caller;
                permit.recheck(caller)?;
                let team = &new.team;
                if let Some(missing) = hold_custom_roles(repo, &team.custom_role_keys)? {
                    return Err(ValidationError::single(
                        "customRoleKeys",
                        format!("no custom role with key '{missing}'"),
                    )
                    .into());
                }
                if let Some(&i) = missing_members(repo, &new.member_ids)?.first() {
                    return Err(ValidationError::single(
                        format!("memberIDs[{i}]"),
                        format!("no member with id '{}'", new.member_ids[i]),
                    )
                    .into());
                }
                repo.insert_team(team)?;
                let mut held = repo.lock_teams(&[&team.key])?;
                let held = held
                    .first_mut()
                    .ok_or_else(|| ServiceError::Internal("a new team vanished".into()))?;
                repo.change_team_members(held, &MembershipStep::Add(new.member_ids.clone()))?;
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
                self.audit(repo, caller, change)?;
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
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let caller = &hold_members(repo, permit.caller(), &[])?.caller;
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
            let change = held.apply(&patch.instructions, now)?;
            let added: Vec<String> = change
                .team
                .custom_role_keys
                .iter()
                .filter(|k| !held.custom_role_keys.contains(k))
                .cloned()
                .collect();
            if let Some(missing) = hold_custom_roles(repo, &added)? {
                return Err(instruction_naming(&patch.instructions, |i| {
                    matches!(i, TeamInstruction::AddCustomRoles { values } if values.contains(&missing))
                }, format!("no custom role with key '{missing}'")));
            }
            let joining: Vec<MemberId> = change
                .membership
                .iter()
                .filter(|step| !matches!(step, MembershipStep::Remove(_)))
                .flat_map(|step| step.member_ids().iter().cloned())
                .collect();
            if let Some(&i) = missing_members(repo, &joining)?.first() {
                let id = joining[i].to_string();
                return Err(instruction_naming(&patch.instructions, |instruction| {
                    matches!(instruction, TeamInstruction::AddMembers { values } | TeamInstruction::ReplaceMembers { values } if values.contains(&id))
                }, format!("no member with id '{id}'")));
            }
            for step in &change.membership {
                repo.change_team_members(&held, step)?;
            }
            if change.team != *held {
                let previous = held.replace(change.team);
                repo.update_team(&held)?;
                let mut audit = team_change(self, &held, "updated", "updateTeam")
                    .comment(patch.comment.clone())
                    .delta(json(&patch.instructions))
                    .versions(Some(self.shown.team(&previous)), Some(self.shown.team(&held)));
                audit.accesses = patch
                    .instructions
                    .iter()
                    .map(|i| Request::new(i.action(), resource.clone()))
                    .collect();
                audit.accesses.dedup();
                self.audit(repo, caller, audit)?;
            }
            let team = held.into_inner();
            Ok(self.team_views(repo, vec![team])?.remove(0))
        })
    }

    /// Deletes a team; its members leave it (and lose the custom roles it gave them).
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_team(&self, caller: &Caller, key: &str) -> ServiceResult<()> {
        caller.require(Action::ManageMembers)?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let caller = &hold_members(repo, caller, &[])?.caller;
            caller.require(Action::ManageMembers)?;
            let held = repo
                .lock_teams(&[&TeamKey::lookup(key)])?
                .pop()
                .ok_or_else(|| not_found(key))?;
            repo.delete_team(&held)?;
            self.audit(
                repo,
                caller,
                team_change(self, &held, "deleted", "deleteTeam")
                    .versions(Some(self.shown.team(&held)), None),
            )?;
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
        let target = crate::members::member_id(permit.caller(), id)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = hold_members(repo, permit.caller(), &target.ids())?;
            let caller = held.caller.clone();
            permit.recheck(&caller)?;
            let member = target
                .id
                .as_ref()
                .and_then(|id| held.take(id))
                .ok_or_else(|| target.not_found())?;
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
            teams.retain(|t| {
                !member
                    .teams
                    .iter()
                    .any(|in_team| in_team.key == t.key.as_str())
            });
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
            for access in &change.accesses {
                caller.require_on(&access.action, &access.resource)?;
            }
            if teams.is_empty() {
                return Ok(member.into_inner());
            }
            join_teams(repo, &member.id, &mut teams, now)?;
            let after = repo
                .get_member(&member.id)?
                .ok_or_else(|| target.not_found())?;
            // Its tokens act with its teams' roles from the next request, on every replica.
            repo.announce(&Changed::Member(member.id.to_string()))?;
            let change = change.versions(
                Some(self.shown.member(&member)),
                Some(self.shown.member(&after)),
            );
            self.audit(repo, &caller, change)?;
            Ok(after)
        })
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
