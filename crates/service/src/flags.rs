//! Feature flags.

use domain::audit::ShownVersion;
use domain::flag::{Flag, FlagCopyPost, FlagFacts, FlagPost, InitialPrerequisite, ProjectFlags};
use domain::id::{MemberId, ProjectId};
use domain::instruction::SemanticPatch;
use domain::key::{FlagKey, ProjectKey, TeamKey};
use domain::policy::{Request, Resource};
use domain::query::FlagQuery;
use domain::ValidationError;
use ports::{
    FlagDependent, Listed, Locked, Maintainers, ProjectEnvironment, Repository, StoreExt,
    TombstoneOf,
};
use std::sync::Arc;

use crate::audit::{json, Change, PendingAudits};
use serde_json::Value;

use crate::projects::{hold_project, load_project, lock_project};

mod create;
mod write;
pub use crate::flag_requests::{ExpectedVersion, FlagChange, FlagView};
pub(crate) use crate::flag_requests::{FlagCreate, FlagWrite, FlagWriteLane};
use crate::{
    use_case, ApiResource, Caller, Detail, Permit, QueuedWrite, RandomIds, Service, ServiceError,
    ServiceResult, Write,
};

/// Feature flags: reading, creating, changing, copying, deleting. The use cases of
/// `Service::flags`; they work with the service's data ([`Service`], which this derefs to). The
/// forms that wait for a write lane without a thread are on `Arc<Service>`, since what they
/// return outlives the call: `Service::queue_patch_flag`, `Service::queue_create_flag`.
#[derive(Debug, Clone, Copy)]
pub struct Flags<'a>(&'a Service);

impl Service {
    /// Feature flags: reading, creating, changing, copying, deleting.
    pub fn flags(&self) -> Flags<'_> {
        Flags(self)
    }
}

impl std::ops::Deref for Flags<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// Which environments' configurations a flag list carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvironmentSelection {
    /// None.
    None,
    /// These (unknown keys are ignored).
    Only(Vec<String>),
    /// Every environment of the project.
    All,
}

/// `GET /flags/{projectKey}` parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagListRequest {
    /// Filters, order, page.
    pub query: FlagQuery,
    /// Which configurations to include.
    pub environments: EnvironmentSelection,
}

/// One page of flags.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagList {
    /// The page.
    pub items: Vec<FlagView>,
    /// All matches.
    pub total: u64,
}

pub(crate) fn flag_not_found(project_key: &str, key: &str) -> ServiceError {
    ServiceError::NotFound(format!(
        "no flag with key '{key}' in project '{project_key}'"
    ))
}

/// The distinct resources of `accesses`, in order: what an audit entry's target is.
fn resources_of(accesses: &[domain::audit::Access]) -> Vec<String> {
    let mut resources: Vec<String> = Vec::new();
    for access in accesses {
        if !resources.contains(&access.resource) {
            resources.push(access.resource.clone());
        }
    }
    resources
}

/// `turned on` or `turned off` for a change that only switched targeting, the same way in
/// every environment it touched; else `updated`.
fn switch_verb(previous: &Flag, next: &Flag, accesses: &[domain::audit::Access]) -> &'static str {
    if accesses.is_empty() || accesses.iter().any(|a| a.action != "updateOn") {
        return "updated";
    }
    let switched: Vec<bool> = next
        .environments
        .iter()
        .filter(|(env, config)| {
            previous
                .environments
                .get(*env)
                .is_some_and(|old| old.on != config.on)
        })
        .map(|(_, config)| config.on)
        .collect();
    match (switched.iter().all(|on| *on), switched.iter().all(|on| !on)) {
        (true, false) => "turned on",
        (false, true) => "turned off",
        _ => "updated",
    }
}

/// `requests` on `flag`, each one in every environment (`env/*`) also in each of the flag's
/// environments: what a change must be allowed, so that a statement denying something in one
/// environment also denies a flag-wide change (deleting the flag, changing its variations),
/// which changes what that environment serves.
fn in_every_environment(requests: &[Request], flag: &Flag) -> Vec<Request> {
    let mut decided = requests.to_vec();
    for request in requests {
        for env in flag.environments.keys() {
            if let Some(resource) = request.resource.in_environment(env) {
                decided.push(Request::new(&request.action, resource));
            }
        }
    }
    decided
}

/// The resource a new flag is: in every environment of its project, with its tags.
fn created_flag(project_key: &str, flag: &Flag) -> Resource {
    Resource::project(project_key)
        .environment("*")
        .flag(&flag.key)
        .with_tags(&flag.tags)
}

/// A flag that uses another as a prerequisite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependentFlag {
    /// Its key.
    pub key: String,
    /// Its name.
    pub name: String,
    /// The environments where it has the prerequisite.
    pub environments: Vec<String>,
}

/// The other flags of the project (all but `key`), for cross-flag rules.
/// What the cross-flag rules need of the project's other flags (prerequisites, cycles,
/// variations in use). The project is held until the transaction ends, so that two changes
/// checked against the same facts (two prerequisites that would form a cycle, a delete and a new
/// prerequisite on the deleted flag) run one after the other.
fn project_flags(
    repo: &mut dyn Repository,
    project_key: &ProjectKey,
    project_id: &ProjectId,
    key: &FlagKey,
) -> ServiceResult<ProjectFlags> {
    hold_project(repo, project_key)?;
    let facts: Vec<FlagFacts> = repo
        .flag_facts(project_id)?
        .into_iter()
        .filter(|f| f.key != *key)
        .collect();
    Ok(ProjectFlags::new(facts))
}

/// `StillReferenced` while other flags use `key` as a prerequisite.
/// Refuses to delete a flag that others use as a prerequisite, holding the project (as
/// [`project_flags`] does) so that none starts using it before the delete commits.
fn refuse_if_depended_on(
    repo: &mut dyn Repository,
    project_key: &ProjectKey,
    project_id: &ProjectId,
    key: &FlagKey,
) -> ServiceResult<()> {
    hold_project(repo, project_key)?;
    let dependents = repo.flag_dependents(project_id, key)?;
    if dependents.is_empty() {
        return Ok(());
    }
    let mut names: Vec<String> = dependents
        .into_iter()
        .map(|dependent| dependent.flag_key)
        .collect();
    names.dedup();
    Err(ServiceError::StillReferenced(
        format!(
            "flag '{key}' is a prerequisite of {}; remove those prerequisites first",
            names.join(", ")
        )
        .into(),
    ))
}

/// The member id a `maintainerId` holds: none when it is not a member id (it then names no
/// member, as one that names no member).
fn maintainer_id(flag: &Flag) -> Option<MemberId> {
    flag.maintainer_id
        .as_deref()
        .and_then(|id| MemberId::parse(id).ok())
}

/// Each flag with who maintains it (one query for all members, one for all teams; a
/// `maintainerId` or `maintainerTeamKey` that names none gives none).
fn with_maintainers(repo: &mut dyn Repository, flags: Vec<Flag>) -> ServiceResult<Vec<FlagView>> {
    let mut ids: Vec<MemberId> = flags.iter().filter_map(maintainer_id).collect();
    ids.sort_unstable();
    ids.dedup();
    let members = if ids.is_empty() {
        Vec::new()
    } else {
        repo.get_members(&ids.iter().collect::<Vec<_>>())?
    };
    let mut keys: Vec<TeamKey> = flags
        .iter()
        .filter_map(|f| f.maintainer_team_key.as_deref().map(TeamKey::lookup))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let teams = if keys.is_empty() {
        Vec::new()
    } else {
        repo.get_teams(&keys.iter().collect::<Vec<_>>())?
    };
    Ok(flags
        .into_iter()
        .map(|flag| FlagView {
            maintainers: Maintainers {
                member: flag
                    .maintainer_id
                    .as_ref()
                    .and_then(|id| members.iter().find(|m| m.id == *id))
                    .cloned(),
                team: flag
                    .maintainer_team_key
                    .as_ref()
                    .and_then(|key| teams.iter().find(|t| t.key == *key))
                    .cloned(),
            },
            flag,
        })
        .collect())
}

/// One flag with who maintains it (see [`with_maintainers`]).
fn with_maintainer(repo: &mut dyn Repository, flag: Flag) -> ServiceResult<FlagView> {
    let maintainers = maintainers_of(repo, &flag)?;
    Ok(FlagView { flag, maintainers })
}

/// Who maintains `flag`: the member and the team it names, if they exist.
fn maintainers_of(repo: &mut dyn Repository, flag: &Flag) -> ServiceResult<Maintainers> {
    let member = match maintainer_id(flag) {
        Some(id) => repo.get_members(&[&id])?.into_iter().next(),
        None => None,
    };
    let team = match &flag.maintainer_team_key {
        Some(key) => repo.get_team(&TeamKey::lookup(key))?,
        None => None,
    };
    Ok(Maintainers { member, team })
}

/// Refuses a maintaining team that does not exist (`maintainers` are those `flag` names).
fn check_maintaining_team(flag: &Flag, maintainers: &Maintainers) -> Result<(), String> {
    match &flag.maintainer_team_key {
        Some(key) if maintainers.team.is_none() => Err(format!("no team with key '{key}'")),
        _ => Ok(()),
    }
}

/// The `delta` of a semantic patch: its environment (when it named one) and its instructions,
/// as sent.
fn semantic_delta(patch: &SemanticPatch) -> Value {
    let mut delta = serde_json::Map::new();
    if let Some(environment) = &patch.environment_key {
        delta.insert("environmentKey".into(), Value::from(environment.as_str()));
    }
    delta.insert(
        "instructions".into(),
        json(&patch.instructions).unwrap_or(Value::Null),
    );
    Value::Object(delta)
}

/// The flag `key` (as a request names it) names in the project.
fn load_flag(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    project_key: &str,
    key: &str,
) -> ServiceResult<Flag> {
    repo.get_flag(project_id, &FlagKey::lookup(key))?
        .ok_or_else(|| flag_not_found(project_key, key))
}

/// The flag `key` (as a request names it) names, to change, held until the transaction ends.
fn lock_flag(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    project_key: &str,
    key: &str,
) -> ServiceResult<Locked<Flag>> {
    repo.lock_flag(project_id, &FlagKey::lookup(key))?
        .ok_or_else(|| flag_not_found(project_key, key))
}

/// Changes to the flags of one project are written by this many writers at a time per process,
/// each with a queue of its own ([`crate::flag_writes`]); a flag's changes always go through the
/// same one (by its key's hash), so that they are written in arrival order. Creations of flags
/// have as many lanes of their own. One writer per project would run one transaction at a time,
/// on one of the machine's cores, however many flags change; one per flag wrote every change in
/// a transaction of its own.
const FLAG_WRITE_LANES: u64 = 2;

fn flag_write_lane(project_key: &str, key: &str) -> FlagWriteLane {
    use std::hash::{Hash, Hasher};
    // `DefaultHasher::new()` hashes alike in every process (fixed keys).
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    (project_key.to_owned(), hasher.finish() % FLAG_WRITE_LANES)
}

impl Flags<'_> {
    /// One flag; with `environments` non-empty, only those environments' configurations.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_flag(
        &self,
        permit: &Permit<use_case::GetFlag>,
        project_key: &str,
        key: &str,
        environments: &[String],
    ) -> ServiceResult<FlagView> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        let mut view = self.store.read_tx(|repo| -> ServiceResult<_> {
            let found = repo.find_flag(&ProjectKey::lookup(project_key), &FlagKey::lookup(key))?;
            match found {
                Some(flag) => with_maintainer(repo, flag),
                // Only on the way to `NotFound`: say which of the two is missing.
                None => {
                    load_project(repo, project_key)?;
                    Err(flag_not_found(project_key, key))
                }
            }
        })?;
        if !environments.is_empty() {
            view.flag
                .environments
                .retain(|env, _| environments.contains(env));
        }
        Ok(view)
    }

    /// Lists flags.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` for an unknown project.
    pub fn list_flags(
        &self,
        permit: &Permit<use_case::ListFlags>,
        project_key: &str,
        request: &FlagListRequest,
    ) -> ServiceResult<FlagList> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let environments: Vec<String> = match &request.environments {
                EnvironmentSelection::None => vec![],
                EnvironmentSelection::Only(keys) => keys.clone(),
                EnvironmentSelection::All => repo
                    .environments_of(std::slice::from_ref(&project.id))?
                    .into_iter()
                    .map(|found| found.environment.key.into_string())
                    .collect(),
            };
            let Listed { items, total } =
                repo.list_flags(&project.id, &request.query, &environments)?;
            Ok(FlagList {
                items: with_maintainers(repo, items)?,
                total,
            })
        })
    }

    /// Copies parts of one environment's configuration onto another.
    ///
    /// # Errors
    /// `Invalid` for unknown or identical environments or a copy that would grow the flag past the
    /// resource size limit, `NotFound`, `VersionConflict` for a `currentVersion`
    /// that does not match.
    pub fn copy_flag_config(
        &self,
        permit: &Permit<use_case::CopyFlagConfig>,
        project_key: &str,
        key: &str,
        post: &FlagCopyPost,
    ) -> ServiceResult<FlagView> {
        let caller = permit.caller();
        // It answers the resource even when it changes nothing: only for a caller who may read it.
        caller.require_view(project_key)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let (project, mut held) = lock_flag_in(repo, project_key, key)?;
            let flag: &Flag = &held;
            // A copy between environments leaves the maintainers as they are.
            let maintainers = &maintainers_of(repo, flag)?;
            let mut next = flag.copy_config(post, self.now())?;
            if next.needs_project_check(flag) {
                next.validate_in_project(
                    flag,
                    &project_flags(repo, &project.key, &project.id, &flag.key)?,
                )?;
            }
            if let Some(missing) =
                crate::segments::missing_segments(repo, &project.id, Some(flag), &next)?
            {
                return Err(ServiceError::invalid(missing));
            }
            let in_env = |env: &str| {
                Resource::project(&project.key)
                    .environment(env)
                    .flag(key)
                    .with_tags(&flag.tags)
            };
            // Copying is decided even when it changes nothing (the changes it makes are decided
            // as well, with the audit entry): the answer is the caller's copy, not a read.
            let authorized = caller.authorize(vec![
                Request::new("copyFlagConfigFrom", in_env(&post.source.key)),
                Request::new("copyFlagConfigTo", in_env(&post.target.key)),
            ])?;
            if next.version != flag.version {
                let mut audit = Change::new(
                    "flag",
                    key,
                    "copied settings of",
                    "copyFlagConfigFrom",
                    in_env(&post.source.key),
                )
                .href(self.shown.href(ApiResource::Flag {
                    project_key: &project.key,
                    key,
                }))
                .comment(post.comment.clone())
                .delta(json(post))
                .shown_versions(
                    Some(self.shown.flag(&project.key, flag, maintainers)),
                    Some(self.shown.flag(&project.key, &next, maintainers)),
                );
                audit
                    .accesses
                    .push(Request::new("copyFlagConfigTo", in_env(&post.target.key)));
                audit.accesses.extend(domain::audit::flag_requests(
                    &Resource::project(&project.key),
                    flag,
                    &next,
                ));
                let authorized = authorized.and(caller, &audit.accesses)?;
                self.audit(repo, caller, authorized.record(audit)?)?;
                let previous = held.replace(next);
                repo.update_flag(&project.id, &held, &previous)?;
                next = held.into_inner();
            }
            Ok(FlagView {
                flag: next,
                maintainers: maintainers.clone(),
            })
        })
    }

    /// Flags that use flag `key` as a prerequisite, with the environments where they do.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn dependent_flags(
        &self,
        permit: &Permit<use_case::DependentFlags>,
        project_key: &str,
        key: &str,
    ) -> ServiceResult<Vec<DependentFlag>> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let flag = load_flag(repo, &project.id, project_key, key)?;
            let mut dependents: Vec<DependentFlag> = Vec::new();
            for FlagDependent {
                flag_key,
                flag_name,
                environment_key,
            } in repo.flag_dependents(&project.id, &flag.key)?
            {
                match dependents.last_mut() {
                    Some(last) if last.key == flag_key => last.environments.push(environment_key),
                    _ => dependents.push(DependentFlag {
                        key: flag_key,
                        name: flag_name,
                        environments: vec![environment_key],
                    }),
                }
            }
            Ok(dependents)
        })
    }

    /// Deletes a flag in every environment.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_flag(
        &self,
        permit: &Permit<use_case::DeleteFlag>,
        project_key: &str,
        key: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        // Its refusal names dependent flags: only for a caller who may read them.
        caller.require_view(project_key)?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let project = load_project(repo, project_key)?;
            // Project before flag, the order creations and clones lock in: no deadlock between
            // them, and no dependent can appear until commit.
            refuse_if_depended_on(repo, &project.key, &project.id, &FlagKey::lookup(key))?;
            let flag = lock_flag(repo, &project.id, project_key, key)?;
            let delete = Request::new(
                "deleteFlag",
                Resource::project(&project.key)
                    .environment("*")
                    .flag(key)
                    .with_tags(&flag.tags),
            );
            let authorized =
                caller.authorize(in_every_environment(std::slice::from_ref(&delete), &flag))?;
            let maintainers = maintainers_of(repo, &flag)?;
            repo.keep_tombstone(
                &project.id,
                TombstoneOf::Flag,
                key,
                flag.tombstone_version(),
            )?;
            repo.delete_flag(&project.id, &flag)?;
            let change = Change::new("flag", key, "deleted", &delete.action, delete.resource)
                .shown_versions(
                    Some(self.shown.flag(&project.key, &flag, &maintainers)),
                    None,
                );
            self.audit(repo, caller, authorized.record(change)?)?;
            Ok(())
        })
    }
}

/// What a flag change needs of the flag's project: its `_id` and key.
#[derive(Debug)]
pub(super) struct FlagProject {
    pub(super) id: ProjectId,
    pub(super) key: ProjectKey,
}

/// The flag `key` of project `project_key` (as a request names them), to change, held until the
/// transaction ends, with its project: one lock and one read, without reading the project.
fn lock_flag_in(
    repo: &mut dyn Repository,
    project_key: &str,
    key: &str,
) -> ServiceResult<(FlagProject, Locked<Flag>)> {
    let project_key = ProjectKey::lookup(project_key);
    match repo.lock_flag_by_keys(&project_key, &FlagKey::lookup(key))? {
        Some((id, flag)) => Ok((
            FlagProject {
                id,
                key: project_key,
            },
            flag,
        )),
        // Only on the way to `NotFound`: say which of the two is missing.
        None => {
            load_project(repo, project_key.as_str())?;
            Err(flag_not_found(project_key.as_str(), key))
        }
    }
}
