//! Feature flags.

use domain::audit::ShownVersion;
use domain::flag::{Flag, FlagCopyPost, FlagFacts, FlagPost, InitialPrerequisite, ProjectFlags};
use domain::id::{MemberId, ProjectId};
use domain::instruction::SemanticPatch;
use domain::key::{FlagKey, ProjectKey, TeamKey};
use domain::member::Member;
use domain::patch::JsonPatchBody;
use domain::policy::{Request, Resource};
use domain::query::FlagQuery;
use domain::role::Action;
use domain::team::Team;
use domain::ValidationError;
use ports::{FlagDependent, Listed, Locked, ProjectEnvironment, Repository, StoreExt};
use std::sync::Arc;

use crate::audit::{json, Change, PendingAudits};
use serde_json::Value;

use crate::projects::{hold_project, load_project, lock_project};
use crate::{
    use_case, ApiResource, Caller, Detail, Permit, QueuedWrite, RandomIds, Service, ServiceError,
    ServiceResult, Write,
};

/// Who maintains a flag, as the API shows it (`_maintainer`, `_maintainerTeam`): the member its
/// `maintainerId` names and the team its `maintainerTeamKey` names, each while it exists.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Maintainers {
    /// The maintaining member.
    pub member: Option<Member>,
    /// The maintaining team.
    pub team: Option<Team>,
}

/// A flag as the use cases return it: the aggregate, and who maintains it.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagView {
    /// The flag.
    pub flag: Flag,
    /// Its maintaining member or team.
    pub maintainers: Maintainers,
}

/// A change to a flag, in one of the three patch forms.
#[derive(Debug, Clone, PartialEq)]
pub enum FlagChange {
    /// RFC 6902 operations.
    JsonPatch(JsonPatchBody),
    /// RFC 7386 merge document.
    MergePatch {
        /// Audit comment.
        comment: Option<String>,
        /// The merge document.
        merge: Value,
    },
    /// Named instructions.
    Semantic(SemanticPatch),
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

/// `Invalid` when a new flag or segment (created or cloned) would be larger than the resource size
/// limit ([`domain::patch::MAX_DOCUMENT_BYTES`]); `what` names it in the message.
pub(crate) fn check_new_size<T: serde::Serialize>(what: &str, resource: &T) -> ServiceResult<()> {
    domain::patch::check_size(what, None, resource)
        .map_err(|e| ServiceError::invalid(e.to_string()))
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

/// A change to a flag (`key`, as the request names it), by a caller whose permit was checked.
#[derive(Debug)]
pub(crate) struct FlagWrite {
    caller: Caller,
    key: String,
    change: FlagChange,
    /// The version the flag (or one environment's configuration) must still have.
    expected: Option<ExpectedVersion>,
}

impl FlagWrite {
    fn new(permit: &Permit<use_case::PatchFlag>, key: &str, change: FlagChange) -> Self {
        Self {
            caller: permit.caller().clone(),
            key: key.to_owned(),
            change,
            expected: None,
        }
    }
}

/// The version a change was made against, as a client saw it: the change applies only if the
/// flag still has it (else [`ServiceError::VersionConflict`]), checked with the flag locked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectedVersion {
    /// The flag's `_version`: nothing about the flag changed since, in any environment (for a
    /// change of its settings, made from a form that showed them all).
    Flag(i64),
    /// One environment's configuration's `version`: nothing changed there since (changes in
    /// other environments do not matter to it).
    Environment {
        /// The environment's key.
        key: String,
        /// The configuration's `version`.
        version: i64,
    },
}

impl ExpectedVersion {
    /// Refuses `flag` unless it (or its configuration in the environment) has the version
    /// expected.
    fn check(&self, flag: &Flag) -> ServiceResult<()> {
        match self {
            Self::Flag(expected) if flag.version == *expected => Ok(()),
            Self::Flag(expected) => Err(ServiceError::VersionConflict(Detail::from(format!(
                "the flag is at version {}, not {expected}: it was changed meanwhile",
                flag.version
            )))),
            Self::Environment { key, version } => {
                match flag.environments.get(key).map(|config| config.version) {
                    Some(found) if found == *version => Ok(()),
                    Some(found) => Err(ServiceError::VersionConflict(Detail::from(format!(
                        "the flag in environment '{key}' is at version {found}, not {version}: it was changed meanwhile"
                    )))),
                    None => Err(ServiceError::NotFound(format!(
                        "the flag has no environment '{key}'"
                    ))),
                }
            }
        }
    }
}

/// What a batch of flag changes writes once they are all applied: the flags they changed (each
/// with the flag as it was locked) and their audit entries.
#[derive(Default)]
struct BatchWrites {
    flags: Vec<(Locked<Flag>, Flag)>,
    audits: PendingAudits,
}

impl BatchWrites {
    /// Saves the flags changed so far: at the end, and before a change reads other flags of the
    /// project from the store (prerequisites, dependents), which must see them as changed.
    fn save_flags(
        &mut self,
        repo: &mut dyn Repository,
        project_id: &ProjectId,
    ) -> ServiceResult<()> {
        if !self.flags.is_empty() {
            let flags: Vec<(&Locked<Flag>, &Flag)> =
                self.flags.iter().map(|(f, p)| (f, p)).collect();
            repo.update_flags(project_id, &flags)?;
            self.flags.clear();
        }
        Ok(())
    }
}

/// A flag to create (without prerequisites), by a caller whose permit was checked.
#[derive(Debug)]
pub(crate) struct FlagCreate {
    caller: Caller,
    /// The new flag, without configurations yet.
    flag: Flag,
    /// `isFlagOn`: targeting on in every environment.
    turn_on: bool,
}

/// A flag to create from `post`, checked on its own, and its initial prerequisites (checked
/// against the project when it is created).
fn new_flag(
    caller: &Caller,
    project_key: &str,
    post: FlagPost,
    now: i64,
) -> ServiceResult<(FlagCreate, Vec<InitialPrerequisite>)> {
    let new = post.validate()?;
    let turn_on = new.post.is_flag_on.unwrap_or(false);
    let prerequisites = new.post.initial_prerequisites.clone().unwrap_or_default();
    let flag = Flag::create(new, now, &mut RandomIds)?;
    // Decided before the flag joins a batch: a refusal there would fail the others with it.
    caller.require_all(&[Request::new("createFlag", created_flag(project_key, &flag))])?;
    Ok((
        FlagCreate {
            caller: caller.clone(),
            flag,
            turn_on,
        },
        prerequisites,
    ))
}

/// `flag` with a configuration in each of `environments`, targeting on when `turn_on`.
fn configured(flag: &Flag, environments: &[ProjectEnvironment], turn_on: bool, now: i64) -> Flag {
    let mut flag = flag.clone();
    for ProjectEnvironment { environment, .. } in environments {
        let mut config = flag.new_config(&environment.name, now, &mut RandomIds);
        config.on = turn_on;
        flag.environments
            .insert(environment.key.to_string(), config);
    }
    flag
}

/// What creating `flag` (configured in `environments`) sets in each environment beyond what a
/// new flag has there (targeting on, prerequisites, a clone's targets and rules...): requests
/// decided, and recorded, per environment, as a change to an existing flag's would be.
fn configured_beyond_defaults(
    project_key: &str,
    flag: &Flag,
    environments: &[ProjectEnvironment],
) -> Vec<Request> {
    let mut bare = flag.clone();
    bare.environments.clear();
    let defaults = configured(&bare, environments, false, flag.creation_date);
    domain::audit::flag_requests(&Resource::project(project_key), &defaults, flag)
}

/// Changes to the flags of one project are written by this many writers at a time per process,
/// each with a queue of its own ([`crate::flag_writes`]); a flag's changes always go through the
/// same one (by its key's hash), so that they are written in arrival order. Creations of flags
/// have as many lanes of their own. One writer per project would run one transaction at a time,
/// on one of the machine's cores, however many flags change; one per flag wrote every change in
/// a transaction of its own.
const FLAG_WRITE_LANES: u64 = 2;

/// At most this many flag configurations (flags × the project's environments) are created in
/// one transaction: a batch of creations holds its flags, and what the API shows of each for
/// its audit entry, until it commits, and the allocator keeps the peak of the thread that wrote
/// it (measured: creations in a project of 50 environments, 32 clients, peak RSS 88 MiB
/// unbounded, 53 MiB with this bound, at the same rate). In a project of a few environments the
/// whole batch is one transaction.
const MAX_CREATED_CONFIGS: usize = 256;

/// The write queue of flag `key` of project `project_key`.
pub(crate) type FlagWriteLane = (String, u64);

fn flag_write_lane(project_key: &str, key: &str) -> FlagWriteLane {
    use std::hash::{Hash, Hasher};
    // `DefaultHasher::new()` hashes alike in every process (fixed keys).
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    key.hash(&mut hasher);
    (project_key.to_owned(), hasher.finish() % FLAG_WRITE_LANES)
}

/// What one change did to a flag.
enum FlagChanged {
    /// The flag as the change left it (unchanged when it changed nothing).
    To(FlagView),
    /// The change deleted the flag; the flag as the change showed it last.
    Deleted(FlagView),
}

/// What a flag change needs of the flag's project: its `_id` and key.
#[derive(Debug)]
struct FlagProject {
    id: ProjectId,
    key: ProjectKey,
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

impl Service {
    /// Creates a flag; it appears in every environment of the project, with targeting off
    /// unless `isFlagOn`, and with `initialPrerequisites` if given. Its key must follow the
    /// project's naming convention.
    ///
    /// It waits for its turn on the calling thread. A caller that runs use cases on a bounded
    /// pool of threads should use the queued form ([`Service::queue_create_flag`]) for every
    /// such write, not mix the two: threads waiting here could fill the pool while the turn
    /// belongs to a queued write that needs a thread of it to write.
    ///
    /// # Errors
    /// `Invalid` (also for a flag larger than the resource size limit, a key against the naming
    /// convention, or a prerequisite that does not exist), `NotFound` for an
    /// unknown project, `KeyTaken` for a taken key.
    pub fn create_flag(
        &self,
        permit: &Permit<use_case::CreateFlag>,
        project_key: &str,
        post: FlagPost,
    ) -> ServiceResult<FlagView> {
        let (request, prerequisites) = new_flag(permit.caller(), project_key, post, self.now())?;
        if prerequisites.is_empty() {
            // Created with the others that arrive meanwhile, in one transaction.
            let lane = flag_write_lane(project_key, &request.flag.key);
            return self
                .flag_creates
                .write(lane, request, |(project_key, _), requests| {
                    self.create_flags(project_key, requests)
                });
        }
        self.create_flag_with_prerequisites(project_key, request, &prerequisites)
    }

    /// [`Service::create_flag`], waiting for its turn without holding a thread (see
    /// [`QueuedWrite`]).
    pub fn queue_create_flag(
        self: &Arc<Self>,
        permit: &Permit<use_case::CreateFlag>,
        project_key: &str,
        post: FlagPost,
    ) -> QueuedWrite<FlagView> {
        let (request, prerequisites) =
            match new_flag(permit.caller(), project_key, post, self.now()) {
                Ok(new) => new,
                Err(refused) => return QueuedWrite::answered(Err(refused)),
            };
        let service = Arc::clone(self);
        if prerequisites.is_empty() {
            let lane = flag_write_lane(project_key, &request.flag.key);
            return QueuedWrite::on(
                self.flag_creates.queue(lane, request),
                move |(project_key, _), requests| service.create_flags(project_key, requests),
            );
        }
        let project_key = project_key.to_owned();
        QueuedWrite::at_once(move || {
            service.create_flag_with_prerequisites(&project_key, request, &prerequisites)
        })
    }

    /// Creates a flag with initial prerequisites, alone.
    fn create_flag_with_prerequisites(
        &self,
        project_key: &str,
        request: FlagCreate,
        prerequisites: &[InitialPrerequisite],
    ) -> ServiceResult<FlagView> {
        let FlagCreate {
            caller,
            flag,
            turn_on,
        } = request;
        let now = flag.creation_date;
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                // Held alone so that the flags the prerequisites name stay as they are until it
                // commits (and no environment is created meanwhile without this flag's config,
                // nor the project changed or deleted).
                let project = lock_project(repo, project_key)?.into_inner();
                let environments = repo.environments_of(std::slice::from_ref(&project.id))?;
                let mut flag = configured(&flag, &environments, turn_on, now);
                project.check_flag_key(&flag.key)?;
                let others = ProjectFlags::new(repo.flag_facts(&project.id)?);
                flag.add_initial_prerequisites(prerequisites, &others)?;
                flag.validate()?;
                flag.validate_in_project(&flag, &others)?;
                let beyond = configured_beyond_defaults(&project.key, &flag, &environments);
                caller.require_all(&beyond)?;
                let (view, shown) = self.new_flag_view(repo, &project.key, flag)?;
                repo.insert_flag(&project.id, &view.flag)?;
                let change = self.created(&project.key, &view.flag, shown, beyond);
                self.audit(repo, &caller, change)?;
                Ok(view)
            })
            .map_err(|e| {
                e.key_taken(|| {
                    format!(
                        "a flag with key '{}' already exists in project '{project_key}'",
                        flag.key
                    )
                })
            })
    }

    /// Creates the flags of `requests` (without prerequisites) in project `project_key`, in as
    /// few transactions as [`MAX_CREATED_CONFIGS`] allows; each gets its own outcome and audit
    /// entry, as if created alone. A refused one (a key against the naming convention, too
    /// large, a key taken) does not stop the others; a transaction that fails in the store is
    /// followed by one for its first flag alone, so that the failure stays with its own flag.
    fn create_flags(
        &self,
        project_key: &str,
        requests: &[&FlagCreate],
    ) -> Vec<ServiceResult<FlagView>> {
        let mut outcomes = Vec::with_capacity(requests.len());
        while outcomes.len() < requests.len() {
            let rest = &requests[outcomes.len()..];
            match self.create_first_flags(project_key, rest) {
                Ok(created) => outcomes.extend(created),
                // As for changes: a failed statement fails the transaction, and none of its
                // flags was created (none was answered).
                Err(err)
                    if rest.len() > 1
                        && err.is_storage_failure()
                        && !matches!(err, ServiceError::Unavailable(_)) =>
                {
                    let alone = self.create_first_flags(project_key, &rest[..1]);
                    outcomes.push(match alone {
                        Ok(mut created) => created
                            .pop()
                            .unwrap_or_else(|| Err(ServiceError::Internal("no outcome".into()))),
                        Err(err) => Err(err),
                    });
                }
                Err(err) => outcomes.extend(rest.iter().map(|_| Err(err.clone()))),
            }
        }
        outcomes
    }

    /// Creates the first flags of `requests` (at least one) in one transaction: as many as have
    /// at most [`MAX_CREATED_CONFIGS`] configurations in all. Their outcomes, or the failure of
    /// the transaction.
    fn create_first_flags(
        &self,
        project_key: &str,
        requests: &[&FlagCreate],
    ) -> ServiceResult<Vec<ServiceResult<FlagView>>> {
        self.store.write_tx(|repo| -> ServiceResult<_> {
            // Held shared so that no environment is created meanwhile without these flags'
            // configs (nor the project changed or deleted); other creations run side by side.
            let project = repo
                .share_project(&ProjectKey::lookup(project_key))?
                .ok_or_else(|| crate::projects::project_not_found(project_key))?;
            let environments = repo.environments_of(std::slice::from_ref(&project.id))?;
            let take = (MAX_CREATED_CONFIGS / environments.len().max(1)).clamp(1, requests.len());
            let requests = &requests[..take];
            let mut outcomes: Vec<Option<ServiceResult<FlagView>>> =
                requests.iter().map(|_| None).collect();
            let mut made: Vec<(usize, FlagView, ShownVersion, Vec<Request>)> =
                Vec::with_capacity(requests.len());
            for (i, request) in requests.iter().enumerate() {
                let flag = configured(
                    &request.flag,
                    &environments,
                    request.turn_on,
                    request.flag.creation_date,
                );
                let beyond = configured_beyond_defaults(&project.key, &flag, &environments);
                let view = project
                    .check_flag_key(&flag.key)
                    .map_err(ServiceError::from)
                    .and_then(|()| request.caller.require_all(&beyond))
                    .and_then(|()| self.new_flag_view(repo, &project.key, flag));
                match view {
                    Ok((view, shown)) => made.push((i, view, shown, beyond)),
                    Err(err) if err.is_storage_failure() => return Err(err),
                    Err(refused) => outcomes[i] = Some(Err(refused)),
                }
            }
            let flags: Vec<&Flag> = made.iter().map(|(_, view, _, _)| &view.flag).collect();
            let stored = repo.insert_new_flags(&project.id, &flags)?;
            let mut audits = PendingAudits::default();
            for ((i, view, shown, beyond), stored) in made.into_iter().zip(stored) {
                outcomes[i] = Some(if stored {
                    let change = self.created(&project.key, &view.flag, shown, beyond);
                    self.audit_later(repo, &requests[i].caller, change, &mut audits)?;
                    Ok(view)
                } else {
                    Err(ServiceError::KeyTaken(Detail::from(format!(
                        "a flag with key '{}' already exists in project '{project_key}'",
                        view.flag.key
                    ))))
                });
            }
            self.append_audits(repo, audits)?;
            Ok(outcomes
                .into_iter()
                .map(|o| o.unwrap_or_else(|| Err(ServiceError::Internal("no outcome".into()))))
                .collect::<Vec<_>>())
        })
    }

    /// A new flag as the use case answers it (with its maintaining member), and as the API
    /// shows it, which must be within the resource size limit.
    fn new_flag_view(
        &self,
        repo: &mut dyn Repository,
        project_key: &ProjectKey,
        flag: Flag,
    ) -> ServiceResult<(FlagView, ShownVersion)> {
        let view = with_maintainer(repo, flag)?;
        check_maintaining_team(&view.flag, &view.maintainers)
            .map_err(|reason| ValidationError::single("maintainerTeamKey", reason))?;
        // Measured as the API shows it (`_maintainer` counts; derived links do not).
        let shown = self.shown.flag(project_key, &view.flag, &view.maintainers);
        check_new_size("the new flag", &shown)?;
        Ok((view, shown))
    }

    /// The audit change of creating `flag`, shown as `shown`, setting `configured` beyond a
    /// new flag's defaults (see [`configured_beyond_defaults`]).
    fn created(
        &self,
        project_key: &ProjectKey,
        flag: &Flag,
        shown: ShownVersion,
        configured: Vec<Request>,
    ) -> Change {
        let mut change = Change::new(
            "flag",
            &flag.key,
            "created",
            "createFlag",
            created_flag(project_key, flag),
        )
        .href(self.shown.href(ApiResource::Flag {
            project_key,
            key: &flag.key,
        }))
        .shown_versions(None, Some(shown));
        change.accesses.extend(configured);
        change
    }

    /// One flag; with `environments` non-empty, only those environments' configurations.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_flag(
        &self,
        caller: &Caller,
        project_key: &str,
        key: &str,
        environments: &[String],
    ) -> ServiceResult<FlagView> {
        caller.require_view(project_key)?;
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
        caller: &Caller,
        project_key: &str,
        request: &FlagListRequest,
    ) -> ServiceResult<FlagList> {
        caller.require_view(project_key)?;
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

    /// Changes a flag by JSON Patch, merge patch or semantic patch; returns the new flag.
    ///
    /// It waits for its turn on the calling thread. A caller that runs use cases on a bounded
    /// pool of threads should use the queued form ([`Service::queue_patch_flag`]) for every
    /// such write, not mix the two: threads waiting here could fill the pool while the turn
    /// belongs to a queued write that needs a thread of it to write.
    ///
    /// # Errors
    /// `Invalid` for a malformed body or an invalid instruction, `NotFound`,
    /// `VersionConflict` for a failed `test`, `PatchFailed` for a patch that cannot be applied.
    pub fn patch_flag(
        &self,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: &FlagChange,
    ) -> ServiceResult<FlagView> {
        self.patch_flag_as(permit, project_key, key, change, Write::Commit)
    }

    /// A dry run of [`Service::patch_flag`]: the same checks, locks and writes in one
    /// transaction, which is then rolled back. Returns the flag as the change would make it
    /// (`_version` and environment versions included); nothing is stored, audited or queued for
    /// webhooks.
    ///
    /// # Errors
    /// Exactly those of [`Service::patch_flag`].
    pub fn dry_run_patch_flag(
        &self,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: &FlagChange,
    ) -> ServiceResult<FlagView> {
        self.patch_flag_as(permit, project_key, key, change, Write::DryRun)
    }

    fn patch_flag_as(
        &self,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: &FlagChange,
        write: Write,
    ) -> ServiceResult<FlagView> {
        // A patch answers the flag even when it changes nothing (or fails a `test`): only a
        // caller who may read it gets that far.
        permit.caller().require_view(project_key)?;
        let request = FlagWrite::new(permit, key, change.clone());
        match write {
            // A dry run writes nothing: it neither waits for other changes nor holds them up.
            Write::DryRun => self
                .write_flag_changes(Write::DryRun, project_key, &[&request])
                .pop()
                .unwrap_or_else(|| Err(ServiceError::Internal("no outcome".into()))),
            Write::Commit => self.flag_writes.write(
                flag_write_lane(project_key, key),
                request,
                |(project_key, _), requests| {
                    self.write_flag_changes(Write::Commit, project_key, requests)
                },
            ),
        }
    }

    /// [`Service::patch_flag`], waiting for its turn without holding a thread (see
    /// [`QueuedWrite`]).
    pub fn queue_patch_flag(
        self: &Arc<Self>,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: FlagChange,
    ) -> QueuedWrite<FlagView> {
        self.queue_patch_flag_at(permit, project_key, key, change, None)
    }

    /// [`Service::queue_patch_flag`], applied only if the flag still has the version `expected`
    /// (else [`ServiceError::VersionConflict`]): a change made from what a page showed.
    pub fn queue_patch_flag_at(
        self: &Arc<Self>,
        permit: &Permit<use_case::PatchFlag>,
        project_key: &str,
        key: &str,
        change: FlagChange,
        expected: Option<ExpectedVersion>,
    ) -> QueuedWrite<FlagView> {
        if let Err(refused) = permit.caller().require_view(project_key) {
            return QueuedWrite::answered(Err(refused));
        }
        let mut request = FlagWrite::new(permit, key, change);
        request.expected = expected;
        let service = Arc::clone(self);
        QueuedWrite::on(
            self.flag_writes
                .queue(flag_write_lane(project_key, key), request),
            move |(project_key, _), requests| {
                service.write_flag_changes(Write::Commit, project_key, requests)
            },
        )
    }

    /// Writes `requests`, changes to flags of one project, in one transaction: the flags are
    /// locked together (in the store's key order), then, flag after flag in that order, each
    /// flag's changes are applied one after the other in arrival order, each checked against the
    /// flag as the ones before left it, with its own outcome (see [`crate::flag_writes`]). The
    /// changed flags are saved together at the end, and before a change reads other flags
    /// (prerequisites, dependents), so that it reads them as changed. A refused change leaves its
    /// flag as it was; a storage failure fails the transaction, whose changes are then written
    /// again one flag at a time.
    fn write_flag_changes(
        &self,
        write: Write,
        project_key: &str,
        requests: &[&FlagWrite],
    ) -> Vec<ServiceResult<FlagView>> {
        let mut keys: Vec<FlagKey> = Vec::with_capacity(requests.len());
        for request in requests {
            let key = FlagKey::lookup(&request.key);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let written = self.write(write, |repo| -> ServiceResult<_> {
            let project_key = ProjectKey::lookup(project_key);
            let (project, held) = match repo.lock_flags_by_keys(&project_key, &keys)? {
                Some((id, held)) => (
                    FlagProject {
                        id,
                        key: project_key,
                    },
                    held,
                ),
                // Only on the way to `NotFound`: say which of the two is missing.
                None => {
                    load_project(repo, project_key.as_str())?;
                    return Ok(requests
                        .iter()
                        .map(|r| Err(flag_not_found(project_key.as_str(), &r.key)))
                        .collect());
                }
            };
            let mut outcomes: Vec<Option<ServiceResult<FlagView>>> =
                requests.iter().map(|_| None).collect();
            // The flags and every change's entry, written once all are applied.
            let mut writes = BatchWrites::default();
            for held in held {
                let mine: Vec<usize> = (0..requests.len())
                    .filter(|&i| requests[i].key == held.key.as_str())
                    .collect();
                let written = self.write_one_flag(
                    repo,
                    &project,
                    held,
                    mine.iter().map(|&i| requests[i]),
                    &mut writes,
                )?;
                for (i, outcome) in mine.into_iter().zip(written) {
                    outcomes[i] = Some(outcome);
                }
            }
            writes.save_flags(repo, &project.id)?;
            self.append_audits(repo, writes.audits)?;
            Ok(outcomes
                .into_iter()
                .zip(requests)
                .map(|(outcome, request)| {
                    outcome
                        .unwrap_or_else(|| Err(flag_not_found(project.key.as_str(), &request.key)))
                })
                .collect())
        });
        match written {
            Ok(outcomes) => outcomes,
            // A statement failed (a deadlock with another writer, say): the transaction is gone,
            // and with it every change in it. Changes to several flags are written again, one
            // flag's in a transaction of their own, so that what failed fails only its own flag's
            // changes (nothing was written: none was answered). Not when the store is away.
            Err(err)
                if keys.len() > 1
                    && write == Write::Commit
                    && err.is_storage_failure()
                    && !matches!(err, ServiceError::Unavailable(_)) =>
            {
                let mut outcomes: Vec<Option<ServiceResult<FlagView>>> =
                    requests.iter().map(|_| None).collect();
                for key in &keys {
                    let mine: Vec<usize> = (0..requests.len())
                        .filter(|&i| requests[i].key == key.as_str())
                        .collect();
                    let alone: Vec<&FlagWrite> = mine.iter().map(|&i| requests[i]).collect();
                    let written = self.write_flag_changes(write, project_key, &alone);
                    for (i, outcome) in mine.into_iter().zip(written) {
                        outcomes[i] = Some(outcome);
                    }
                }
                outcomes
                    .into_iter()
                    .map(|outcome| outcome.unwrap_or_else(|| Err(err.clone())))
                    .collect()
            }
            Err(err) => requests.iter().map(|_| Err(err.clone())).collect(),
        }
    }

    /// Applies `requests`, changes to the flag `held`, one after the other, and leaves the flag
    /// to save in `writes` if they changed it. Returns an outcome per change; `Err` only for a
    /// storage failure, which ends the transaction.
    fn write_one_flag<'r>(
        &self,
        repo: &mut dyn Repository,
        project: &FlagProject,
        mut held: Locked<Flag>,
        requests: impl Iterator<Item = &'r FlagWrite>,
        writes: &mut BatchWrites,
    ) -> ServiceResult<Vec<ServiceResult<FlagView>>> {
        // What GET shows of it: a patch reads `_maintainer` too, and the audit records it.
        let mut current = FlagView {
            maintainers: maintainers_of(repo, &held)?,
            flag: (*held).clone(),
        };
        let mut outcomes = Vec::new();
        let mut deleted = false;
        for request in requests {
            if deleted {
                outcomes.push(Err(flag_not_found(project.key.as_str(), &request.key)));
                continue;
            }
            match self.change_flag(repo, project, &held, &current, request, writes) {
                Ok(FlagChanged::To(next)) => {
                    outcomes.push(Ok(next.clone()));
                    current = next;
                }
                Ok(FlagChanged::Deleted(last)) => {
                    outcomes.push(Ok(last));
                    deleted = true;
                }
                // A failed statement (a deadlock, say, which is a 409 as a refusal is) ends
                // the transaction, and with it every change in it: none may be answered as
                // if the others were written.
                Err(err) if err.is_storage_failure() => return Err(err),
                Err(refused) => outcomes.push(Err(refused)),
            }
        }
        if !deleted && current.flag.version != held.version {
            let previous = held.replace(current.flag);
            writes.flags.push((held, previous));
        }
        Ok(outcomes)
    }

    /// Applies one change to `current` (the flag `held` as the changes before this one left
    /// it), and makes its audit entry (appended with the batch's; for a delete, deletes it). The
    /// flag itself is saved by the caller with the batch's (`writes`).
    fn change_flag(
        &self,
        repo: &mut dyn Repository,
        project: &FlagProject,
        held: &Locked<Flag>,
        current: &FlagView,
        request: &FlagWrite,
        writes: &mut BatchWrites,
    ) -> ServiceResult<FlagChanged> {
        let FlagWrite {
            caller,
            change,
            expected,
            ..
        } = request;
        let key = held.key.as_str();
        let flag = &current.flag;
        if let Some(expected) = expected {
            expected.check(flag)?;
        }
        let maintainers = &current.maintainers;
        let now = self.now();
        let involves_others = match change {
            FlagChange::Semantic(patch) => {
                patch.instructions.iter().any(|i| i.involves_other_flags())
            }
            FlagChange::JsonPatch(_) | FlagChange::MergePatch { .. } => false,
        };
        let mut others = if involves_others {
            writes.save_flags(repo, &project.id)?;
            project_flags(repo, &project.key, &project.id, &flag.key)?
        } else {
            ProjectFlags::default()
        };
        let (next, delete) = match change {
            FlagChange::JsonPatch(patch) => (
                flag.apply_patch_as_shown(
                    &self.shown.flag_document(&project.key, flag, maintainers),
                    &patch.operations,
                    now,
                    &mut RandomIds,
                )?,
                false,
            ),
            FlagChange::MergePatch { merge, .. } => {
                let shown = self.shown.flag_document(&project.key, flag, maintainers);
                (
                    flag.apply_merge_as_shown(&shown, merge, now, &mut RandomIds)?,
                    false,
                )
            }
            FlagChange::Semantic(patch) => {
                let outcome = flag.apply_instructions(patch, now, &mut RandomIds, &others)?;
                (outcome.flag, outcome.delete)
            }
        };
        // Decided before anything of this change is written: a refusal leaves the flag, and
        // the other changes of the batch, as they were.
        let project_resource = Resource::project(&project.key);
        let flag_wide = project_resource
            .clone()
            .environment("*")
            .flag(key)
            .with_tags(&flag.tags);
        let requests = if delete {
            vec![Request::new("deleteFlag", flag_wide.clone())]
        } else {
            domain::audit::flag_requests(&project_resource, flag, &next)
        };
        let mut decided = requests.clone();
        // What each instruction asks for is decided too, whether it changed anything or not.
        if let FlagChange::Semantic(patch) = change {
            let in_environment = project_resource
                .clone()
                .environment(patch.environment_key.as_deref().unwrap_or("*"))
                .flag(key)
                .with_tags(&flag.tags);
            for instruction in &patch.instructions {
                let resource = if instruction.is_environment_scoped() {
                    &in_environment
                } else {
                    &flag_wide
                };
                decided.push(Request::new(instruction.action(), resource.clone()));
            }
        }
        caller.require_all(&in_every_environment(&decided, flag))?;
        if !involves_others && next.needs_project_check(flag) {
            writes.save_flags(repo, &project.id)?;
            others = project_flags(repo, &project.key, &project.id, &flag.key)?;
            next.validate_in_project(flag, &others)
                .map_err(ServiceError::patched_flag)?;
        }
        if !matches!(change, FlagChange::Semantic(_)) {
            next.check_variation_moves(flag)?;
        }
        if let Some(missing) =
            crate::segments::missing_segments(repo, &project.id, Some(flag), &next)?
        {
            return Err(match change {
                FlagChange::Semantic(_) => ServiceError::invalid(missing),
                FlagChange::JsonPatch(_) | FlagChange::MergePatch { .. } => {
                    ServiceError::PatchFailed(missing.into())
                }
            });
        }
        let (comment, delta) = match change {
            FlagChange::JsonPatch(patch) => (patch.comment.clone(), json(&patch.operations)),
            FlagChange::MergePatch { comment, merge } => (comment.clone(), Some(merge.clone())),
            FlagChange::Semantic(patch) => (patch.comment.clone(), Some(semantic_delta(patch))),
        };
        let next_maintainers = if next.maintainer_id == flag.maintainer_id
            && next.maintainer_team_key == flag.maintainer_team_key
        {
            maintainers.clone()
        } else {
            let next_maintainers = maintainers_of(repo, &next)?;
            if next.maintainer_team_key != flag.maintainer_team_key {
                check_maintaining_team(&next, &next_maintainers).map_err(
                    |reason| match change {
                        FlagChange::Semantic(_) => {
                            ValidationError::single("maintainerTeamKey", reason).into()
                        }
                        _ => {
                            ServiceError::PatchFailed(format!("maintainerTeamKey: {reason}").into())
                        }
                    },
                )?;
            }
            next_maintainers
        };
        if delete {
            writes.save_flags(repo, &project.id)?;
            refuse_if_depended_on(repo, &project.key, &project.id, &held.key)?;
            repo.delete_flag(&project.id, held)?;
            let change = Change::new("flag", key, "deleted", "deleteFlag", flag_wide)
                .comment(comment)
                .delta(delta)
                .shown_versions(Some(self.shown.flag(&project.key, flag, maintainers)), None);
            self.audit_later(repo, caller, change, &mut writes.audits)?;
        } else if next.version != flag.version {
            let mut audit = Change::new("flag", key, "updated", "updateFlag", flag_wide)
                .href(self.shown.href(ApiResource::Flag {
                    project_key: &project.key,
                    key,
                }))
                .comment(comment)
                .delta(delta)
                .shown_versions(
                    Some(self.shown.flag(&project.key, flag, maintainers)),
                    Some(self.shown.flag(&project.key, &next, &next_maintainers)),
                );
            let accesses = domain::audit::accesses_of(&requests);
            audit.resources = resources_of(&accesses);
            audit.verb = switch_verb(flag, &next, &accesses);
            audit.accesses = requests;
            self.audit_later(repo, caller, audit, &mut writes.audits)?;
        }
        Ok(if delete {
            FlagChanged::Deleted(FlagView {
                flag: next,
                maintainers: next_maintainers,
            })
        } else {
            FlagChanged::To(FlagView {
                flag: next,
                maintainers: next_maintainers,
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
            caller.require_all(&[
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
                self.audit(repo, caller, audit)?;
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

    /// Creates flag `post.key` as a clone of flag `source`: its variations and its targeting in
    /// every environment.
    ///
    /// # Errors
    /// `Invalid` (also for a clone larger than the resource size limit or a key against the naming
    /// convention), `NotFound` for an unknown project or source flag, `KeyTaken`
    /// for a taken key.
    pub fn clone_flag(
        &self,
        permit: &Permit<use_case::CloneFlag>,
        project_key: &str,
        source: &str,
        post: FlagPost,
    ) -> ServiceResult<FlagView> {
        let caller = permit.caller();
        let new = post.validate()?;
        let key = new.key.to_string();
        let now = self.now();
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                // Held so that no environment is created meanwhile without the clone's config.
                let project = lock_project(repo, project_key)?;
                project.check_flag_key(new.key.as_str())?;
                let original = load_flag(repo, &project.id, project_key, source)?;
                let clone = original.clone_as(new.clone(), now, &mut RandomIds)?;
                let clone = with_maintainer(repo, clone)?;
                // A team the request names must exist (one copied from the source may be gone).
                if new.post.maintainer_team_key.is_some() {
                    check_maintaining_team(&clone.flag, &clone.maintainers)
                        .map_err(|reason| ValidationError::single("maintainerTeamKey", reason))?;
                }
                let shown = self
                    .shown
                    .flag(&project.key, &clone.flag, &clone.maintainers);
                check_new_size("the clone", &shown)?;
                repo.insert_flag(&project.id, &clone.flag)?;
                let mut change = Change::new(
                    "flag",
                    &clone.flag.key,
                    "cloned",
                    "createFlag",
                    created_flag(&project.key, &clone.flag),
                )
                .href(self.shown.href(ApiResource::Flag {
                    project_key: &project.key,
                    key: &clone.flag.key,
                }))
                .shown_versions(None, Some(shown));
                change.accesses.push(Request::new(
                    "cloneFlag",
                    created_flag(&project.key, &original),
                ));
                // What the clone carries into each environment is decided there.
                let environments = repo.environments_of(std::slice::from_ref(&project.id))?;
                change.accesses.extend(configured_beyond_defaults(
                    &project.key,
                    &clone.flag,
                    &environments,
                ));
                self.audit(repo, caller, change)?;
                Ok(clone)
            })
            .map_err(|e| {
                e.key_taken(|| {
                    format!("a flag with key '{key}' already exists in project '{project_key}'")
                })
            })
    }

    /// Flags that use flag `key` as a prerequisite, with the environments where they do.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn dependent_flags(
        &self,
        caller: &Caller,
        project_key: &str,
        key: &str,
    ) -> ServiceResult<Vec<DependentFlag>> {
        caller.require_view(project_key)?;
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
    pub fn delete_flag(&self, caller: &Caller, project_key: &str, key: &str) -> ServiceResult<()> {
        caller.require(Action::ManageFlags)?;
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
            caller.require_all(&in_every_environment(std::slice::from_ref(&delete), &flag))?;
            let maintainers = maintainers_of(repo, &flag)?;
            repo.delete_flag(&project.id, &flag)?;
            let change = Change::new("flag", key, "deleted", &delete.action, delete.resource)
                .shown_versions(
                    Some(self.shown.flag(&project.key, &flag, &maintainers)),
                    None,
                );
            self.audit(repo, caller, change)?;
            Ok(())
        })
    }
}
