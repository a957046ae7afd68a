//! Account members.

use domain::id::MemberId;
use domain::member::{validate_invites, Member, NewMemberForm};
use domain::patch::JsonPatchBody;
use domain::policy::{Request, Resource};
use domain::query::MemberQuery;
use domain::role::{Action, Role};
use domain::team::{MemberTeam, MembershipStep, Team};
use domain::ValidationError;
use ports::{Changed, Listed, MemberRepository, Repository, StoreError, StoreExt};

use crate::audit::{json, Change};

use crate::auth::hold_members;
use crate::error::Detail;
use crate::holding::{hold_custom_roles, hold_teams};
use crate::{
    use_case, ApiResource, Caller, Permit, RandomIds, Service, ServiceError, ServiceResult,
};

/// Members of the account. The use cases of `Service::members`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Members<'a>(&'a Service);

impl Service {
    /// Members of the account.
    pub fn members(&self) -> Members<'_> {
        Members(self)
    }
}

impl std::ops::Deref for Members<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// One page of members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberPage {
    /// The page.
    pub items: Vec<Member>,
    /// All matches.
    pub total: u64,
}

/// The member a request names by `id` (in its path): `me` is the caller's.
#[derive(Debug)]
pub(crate) struct Target<'a> {
    /// The member id, if `id` is one (or `me`): text that is not a member id names no member.
    pub(crate) id: Option<MemberId>,
    /// How the request named it (the caller's id for `me`), for a `NotFound`.
    named: &'a str,
}

impl Target<'_> {
    /// The member ids to hold: this one, if it is one.
    pub(crate) fn ids(&self) -> Vec<&MemberId> {
        self.id.iter().collect()
    }

    pub(crate) fn not_found(&self) -> ServiceError {
        member_not_found(self.named)
    }
}

/// The member `id` names: `me` is the caller's.
///
/// # Errors
/// `NotFound` for `me` with a service token, which acts for the account and is no member.
pub(crate) fn member_id<'a>(caller: &'a Caller, id: &'a str) -> ServiceResult<Target<'a>> {
    match id {
        "me" if caller.service_token() => Err(ServiceError::NotFound(
            "a service token belongs to the account, not to a member: there is no 'me'".into(),
        )),
        "me" => Ok(Target {
            id: Some(caller.member_id.clone()),
            named: caller.member_id.as_str(),
        }),
        id => Ok(Target {
            id: MemberId::parse(id).ok(),
            named: id,
        }),
    }
}

/// Refuses a change of `member` by a caller ranked below it (see
/// [`domain::role::Actor::may_change_member`]).
pub(crate) fn may_change(caller: &Caller, member: &Member, what: &str) -> ServiceResult<()> {
    if caller.actor().may_change_member(&member.id, member.role) {
        Ok(())
    } else {
        Err(ServiceError::NotPermitted(format!(
            "cannot {what} a member whose role '{}' is above your own '{}'",
            member.role, caller.role
        )))
    }
}

fn member_not_found(id: &str) -> ServiceError {
    ServiceError::NotFound(format!("no member with id '{id}'"))
}

fn load_member(
    repo: &mut dyn MemberRepository,
    caller: &Caller,
    id: &str,
) -> ServiceResult<Member> {
    let target = member_id(caller, id)?;
    match &target.id {
        Some(id) => repo.get_member(id)?,
        None => None,
    }
    .ok_or_else(|| target.not_found())
}

impl Service {
    /// The audit entry of one invitation: the member created, its custom roles and teams.
    fn invitation_change(&self, member: &Member) -> Change {
        let mut change = Change::new(
            "member",
            &member.email,
            "invited",
            "createMember",
            Resource::member(&member.id),
        )
        .href(self.shown.href(ApiResource::Member { id: &member.id }))
        .versions(None, Some(self.shown.member(member)));
        if !member.custom_roles.is_empty() {
            change.accesses.push(Request::new(
                "updateCustomRole",
                Resource::member(&member.id),
            ));
        }
        if !member.teams.is_empty() {
            change.accesses.push(Request::new(
                "updateMemberTeams",
                Resource::member(&member.id),
            ));
        }
        for team in &member.teams {
            change
                .accesses
                .push(Request::new("updateTeamMembers", Resource::team(&team.key)));
        }
        change
    }
}

/// The refusal of custom role `key`, which does not exist, given in field `at`.
fn unknown_role(at: &str, key: &str) -> ValidationError {
    ValidationError::single(at, format!("no custom role with key '{key}'"))
}

/// All invitations' teams, held at once in key order (as every writer locks them: members,
/// teams, roles); a missing one is refused, naming the first invitation that names it.
fn hold_invited_teams(
    repo: &mut dyn Repository,
    members: &[(Member, Vec<String>)],
) -> ServiceResult<Vec<ports::Locked<Team>>> {
    let team_keys: Vec<String> = members.iter().flat_map(|(_, t)| t.clone()).collect();
    match hold_teams(repo, &team_keys)? {
        Ok(teams) => Ok(teams),
        Err(missing) => {
            let i = members
                .iter()
                .position(|(_, t)| t.contains(&missing))
                .unwrap_or(0);
            Err(ValidationError::single(
                format!("[{i}].teamKeys"),
                format!("no team with key '{missing}'"),
            )
            .into())
        }
    }
}

impl Members<'_> {
    /// Lists members.
    ///
    /// # Errors
    /// `NotPermitted` for a caller who cannot see members.
    pub fn list_members(
        &self,
        permit: &Permit<use_case::ListMembers>,
        query: &MemberQuery,
    ) -> ServiceResult<MemberPage> {
        let caller = permit.caller();
        caller.require_on("viewMembers", &Resource::member("*"))?;
        let Listed { items, total } = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_members(query)?) })?;
        Ok(MemberPage { items, total })
    }

    /// One member; `me` is the caller's.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_member(
        &self,
        permit: &Permit<use_case::GetMember>,
        id: &str,
    ) -> ServiceResult<Member> {
        let caller = permit.caller();
        if id != "me" {
            caller.require(Action::ViewMembers)?;
        }
        let member = self
            .store
            .read_tx(|repo| -> ServiceResult<_> { load_member(repo, caller, id) })?;
        if member.id != caller.member_id {
            caller.require_on("viewMembers", &Resource::member(&member.id))?;
        }
        Ok(member)
    }

    /// Invites up to 50 members, all or none, with roles no higher than the caller's.
    ///
    /// # Errors
    /// `Invalid` for invalid invitations, `DuplicateEmail` for an email given twice,
    /// `EmailTaken` for a member's email; `NotPermitted`.
    pub fn invite_members(
        &self,
        permit: &Permit<use_case::InviteMembers>,
        forms: Vec<NewMemberForm>,
    ) -> ServiceResult<Vec<Member>> {
        let caller = permit.caller();
        let invites = validate_invites(forms, caller.role)?;
        let now = self.now();
        let members: Vec<(Member, Vec<String>)> = invites
            .into_iter()
            .map(|i| {
                let teams = i.team_keys.clone();
                (
                    Member::invited(MemberId::generate(&mut RandomIds), i, now),
                    teams,
                )
            })
            .collect();
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let caller = &hold_members(repo, caller, &[])?.caller;
            permit.recheck(caller)?;
            if let Some((above, _)) = members.iter().find(|(m, _)| m.role > caller.role) {
                return Err(ServiceError::NotPermitted(format!(
                    "cannot invite a member with role '{}' above your own role '{}'",
                    above.role, caller.role
                )));
            }
            // All invitations' teams, then roles, at once in key order (as every writer locks
            // them: members, teams, roles).
            let mut teams = hold_invited_teams(repo, &members)?;
            let keys: Vec<String> = members
                .iter()
                .flat_map(|(m, _)| m.custom_roles.iter().cloned())
                .collect();
            crate::granting::require_view_roles(caller, &keys)?;
            if let Some(missing) = hold_custom_roles(repo, &keys)? {
                let i = members
                    .iter()
                    .position(|(m, _)| m.custom_roles.contains(&missing))
                    .unwrap_or(0);
                return Err(unknown_role(&format!("[{i}].customRoles"), &missing).into());
            }
            let emails: Vec<String> = members
                .iter()
                .map(|(m, _)| domain::member::email_key(&m.email))
                .collect();
            let taken = repo.taken_emails(&emails)?;
            if !taken.is_empty() {
                return Err(ServiceError::EmailTaken(
                    format!("already members of this account: {}", taken.join(", ")).into(),
                ));
            }
            let mut invited = Vec::with_capacity(members.len());
            for (member, team_keys) in &members {
                repo.insert_member(member).map_err(|e| match e {
                    // Another request invited the same email since `taken_emails` looked.
                    StoreError::Duplicate(_) => ServiceError::EmailTaken(Detail::caused_by(
                        format!("already a member of this account: {}", member.email),
                        e,
                    )),
                    other => ServiceError::from(other),
                })?;
                let mut member = member.clone();
                member.teams = teams
                    .iter()
                    .filter(|t| team_keys.contains(&t.key.to_string()))
                    .map(|t| MemberTeam::from(&**t))
                    .collect();
                let member = &member;
                crate::granting::require_grant_within(repo, caller, None, member)?;
                let change = self.invitation_change(member);
                self.audit(repo, caller, change.authorize(caller)?)?;
                invited.push(member.clone());
            }
            // Each team gains its new members at once, and changes once.
            for team in &mut teams {
                let joining: Vec<MemberId> = invited
                    .iter()
                    .filter(|m| m.teams.iter().any(|t| t.key == team.key.as_str()))
                    .map(|m| m.id.clone())
                    .collect();
                repo.change_team_members(team, &MembershipStep::Add(joining))?;
                let touched = Team::clone(team).touched(now);
                team.replace(touched);
                repo.update_team(team)?;
            }
            Ok(invited)
        })
    }

    /// Changes a member by JSON Patch (`/role`, `/firstName`, `/lastName`). Nobody gives a role
    /// above their own; the owner makes another member owner to transfer ownership, and becomes
    /// an admin.
    ///
    /// # Errors
    /// `NotPermitted` without member management (or ownership for a transfer), `NotFound`,
    /// `VersionConflict` for a failed `test`, `PatchFailed` for another path or a role change the
    /// rules refuse.
    pub fn patch_member(
        &self,
        permit: &Permit<use_case::PatchMember>,
        id: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<Member> {
        let caller = permit.caller();
        let target = member_id(caller, id)?;
        let member = self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = hold_members(repo, caller, &target.ids())?;
            let caller = held.caller.clone();
            permit.recheck(&caller)?;
            let mut member = target
                .id
                .as_ref()
                .and_then(|id| held.take(id))
                .ok_or_else(|| target.not_found())?;
            may_change(&caller, &member, "change")?;
            let shown = self.shown.member(&member);
            let next = member.apply_patch_as_shown(&shown, &patch.operations, caller.role)?;
            let mut changed = vec![];
            let mut audit = Change::new(
                "member",
                &member.email,
                "updated",
                "updateMember",
                Resource::member(&member.id),
            )
            .href(self.shown.href(ApiResource::Member { id: &member.id }))
            .comment(patch.comment.clone())
            .delta(json(&patch.operations))
            .versions(
                Some(self.shown.member(&member)),
                Some(self.shown.member(&next)),
            );
            audit.accesses.clear();
            if member.role != next.role {
                audit.accesses.push(Request::new(
                    "updateMemberRole",
                    Resource::member(&member.id),
                ));
            }
            if member.first_name != next.first_name || member.last_name != next.last_name {
                audit.accesses.push(Request::new(
                    "updateMemberName",
                    Resource::member(&member.id),
                ));
            }
            if member.custom_roles != next.custom_roles {
                crate::granting::require_view_roles(
                    &caller,
                    next.custom_roles
                        .iter()
                        .filter(|k| !member.custom_roles.contains(k)),
                )?;
                if let Some(missing) = hold_custom_roles(repo, &next.custom_roles)? {
                    let refused = unknown_role("customRoles", &missing);
                    return Err(ServiceError::PatchFailed(refused.to_string().into()));
                }
                audit.accesses.push(Request::new(
                    "updateCustomRole",
                    Resource::member(&member.id),
                ));
            }
            if member.role != next.role || member.custom_roles != next.custom_roles {
                crate::granting::require_grant_within(repo, &caller, Some(&member), &next)?;
            }
            if next.role == Role::Owner && member.role != Role::Owner {
                // Only the owner acts as the owner (service tokens carry at most `admin`), so
                // the previous owner is the caller's member, held since `hold_members`.
                caller.require(Action::TransferOwnership)?;
                let mut previous = held
                    .take(&caller.member_id)
                    .filter(|m| m.role == Role::Owner)
                    .ok_or_else(|| ServiceError::Internal("the owner is not the caller".into()))?;
                previous.get_mut().role = Role::Admin;
                repo.update_member(&previous)?;
                audit
                    .accesses
                    .push(Request::new("transferOwnership", Resource::account()));
                changed.push(previous.id.clone());
            }
            if next != *member {
                member.replace(next);
                repo.update_member(&member)?;
                changed.push(member.id.clone());
                // Tokens act with at most their member's role: every replica forgets what it
                // verified of them once this commits.
                for id in &changed {
                    repo.announce(&Changed::Member(id.to_string()))?;
                }
                self.audit(repo, &caller, audit.authorize(&caller)?)?;
            }
            Ok(member.into_inner())
        })?;
        Ok(member)
    }

    /// Deletes a member and its personal tokens; the service tokens it created pass to the owner.
    ///
    /// # Errors
    /// `NotPermitted` (also for a member with a higher role than the caller's), `NotFound`;
    /// `WrongState` for the owner (transfer ownership first).
    pub fn delete_member(
        &self,
        permit: &Permit<use_case::DeleteMember>,
        id: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        let target = member_id(caller, id)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = hold_members(repo, caller, &target.ids())?;
            let caller = held.caller.clone();
            permit.recheck(&caller)?;
            let member = target
                .id
                .as_ref()
                .and_then(|id| held.take(id))
                .ok_or_else(|| target.not_found())?;
            if member.role == Role::Owner {
                return Err(ServiceError::WrongState(
                    "the owner cannot be deleted; transfer ownership to another member first"
                        .into(),
                ));
            }
            may_change(&caller, &member, "delete")?;
            // It leaves its teams: each changes (and its change is decided with the deletion).
            let team_keys: Vec<String> = member.teams.iter().map(|t| t.key.clone()).collect();
            let mut teams = hold_teams(repo, &team_keys)?.unwrap_or_default();
            let now = self.now();
            let owner = repo
                .find_owner()?
                .ok_or_else(|| ServiceError::Internal("the account has no owner".into()))?;
            repo.reassign_service_tokens(&member.id, &owner.id)?;
            repo.delete_member(&member)?;
            for team in &mut teams {
                let touched = Team::clone(team).touched(now);
                team.replace(touched);
                repo.update_team(team)?;
            }
            // Its tokens stop (its service tokens pass to the owner) on every replica.
            repo.announce(&Changed::Member(member.id.to_string()))?;
            let mut change = Change::new(
                "member",
                &member.email,
                "deleted",
                "deleteMember",
                Resource::member(&member.id),
            )
            .versions(Some(self.shown.member(&member)), None);
            for team in &teams {
                change
                    .accesses
                    .push(Request::new("updateTeamMembers", Resource::team(&team.key)));
            }
            self.audit(repo, &caller, change.authorize(&caller)?)
        })?;
        Ok(())
    }
}
