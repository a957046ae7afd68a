//! Projects.

use std::collections::BTreeMap;

use domain::environment::{Environment, EnvironmentCredentials};
use domain::id::{EnvironmentId, ProjectId};
use domain::key::ProjectKey;
use domain::patch::JsonPatchBody;
use domain::policy::{Request, Resource};
use domain::project::{Project, ProjectPost};
use domain::query::ProjectQuery;
use ports::{EnvironmentRepository, Listed, Locked, ProjectRepository, Repository, StoreExt};

use crate::audit::{json, Change};

use crate::{
    use_case, ApiResource, Caller, Permit, RandomIds, Service, ServiceError, ServiceResult,
};
use domain::IdSource;

/// Projects. The use cases of `Service::projects`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Projects<'a>(&'a Service);

impl Service {
    /// Projects.
    pub fn projects(&self) -> Projects<'_> {
        Projects(self)
    }
}

impl std::ops::Deref for Projects<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// A project, with its environments when they were asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectWithEnvironments {
    /// The project.
    pub project: Project,
    /// Its environments in creation order, if loaded.
    pub environments: Option<Vec<Environment>>,
}

/// One page of projects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectList {
    /// The page.
    pub items: Vec<ProjectWithEnvironments>,
    /// All matches.
    pub total: u64,
}

pub(crate) fn project_not_found(key: &str) -> ServiceError {
    ServiceError::NotFound(format!("no project with key '{key}'"))
}

/// The project `key` (as a request names it) names.
pub(crate) fn load_project(repo: &mut dyn ProjectRepository, key: &str) -> ServiceResult<Project> {
    repo.get_project(&ProjectKey::lookup(key))?
        .ok_or_else(|| project_not_found(key))
}

/// The project `key` (as a request names it) names, to change, held until the transaction ends.
pub(crate) fn lock_project(
    repo: &mut dyn ProjectRepository,
    key: &str,
) -> ServiceResult<Locked<Project>> {
    hold_project(repo, &ProjectKey::lookup(key))
}

/// A project to change, held until the transaction ends.
pub(crate) fn hold_project(
    repo: &mut dyn ProjectRepository,
    key: &ProjectKey,
) -> ServiceResult<Locked<Project>> {
    repo.lock_project(key)?
        .ok_or_else(|| project_not_found(key))
}

/// New environment credentials: `_id`, `sdk-<uuid>`, `mob-<uuid>`.
pub(crate) fn new_credentials() -> EnvironmentCredentials {
    EnvironmentCredentials {
        id: EnvironmentId::generate(&mut RandomIds),
        api_key: format!("sdk-{}", RandomIds.uuid()),
        mobile_key: format!("mob-{}", RandomIds.uuid()),
    }
}

fn environments_of_one(
    repo: &mut dyn EnvironmentRepository,
    project_id: &ProjectId,
) -> ServiceResult<Vec<Environment>> {
    Ok(repo
        .environments_of(std::slice::from_ref(project_id))?
        .into_iter()
        .map(|found| found.environment)
        .collect())
}

/// At most this many projects are looked at to list those a caller with custom roles may
/// see (each is decided on its own): the bound of such a listing's cost.
const MAX_DECIDED_PROJECTS: u64 = 10_000;

/// The page of projects `query` asks for, of those `caller` may read: the store's page as it
/// is when the caller may read every project (a built-in role), else the projects the store
/// lists, each decided (`viewProject` on it, with its tags), paged here.
fn visible_projects(
    repo: &mut dyn Repository,
    caller: &Caller,
    query: &ProjectQuery,
) -> ServiceResult<Listed<Project>> {
    if caller.permissions.built_in_only() {
        return Ok(repo.list_projects(query)?);
    }
    let may_view = |project: &Project| {
        caller
            .require_on(
                "viewProject",
                &Resource::project(&project.key).with_tags(&project.tags),
            )
            .is_ok()
    };
    let mut scan = query.clone();
    scan.page = domain::query::Page {
        limit: domain::query::MAX_LIMIT,
        offset: 0,
    };
    let mut items = Vec::new();
    let mut total = 0u64;
    loop {
        let Listed { items: found, .. } = repo.list_projects(&scan)?;
        let read = found.len() as u64;
        for project in found.into_iter().filter(|p| may_view(p)) {
            if total >= query.page.offset && items.len() < query.page.limit as usize {
                items.push(project);
            }
            total += 1;
        }
        scan.page.offset += read;
        if read < u64::from(scan.page.limit) || scan.page.offset >= MAX_DECIDED_PROJECTS {
            break;
        }
    }
    Ok(Listed { items, total })
}

impl Projects<'_> {
    /// Lists projects; with `expand_environments` each carries its environments (one query for all).
    ///
    /// # Errors
    /// `NotPermitted` for a caller who cannot read.
    pub fn list_projects(
        &self,
        permit: &Permit<use_case::ListProjects>,
        query: &ProjectQuery,
        expand_environments: bool,
    ) -> ServiceResult<ProjectList> {
        let caller = permit.caller();
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let Listed {
                items: projects,
                total,
            } = visible_projects(repo, caller, query)?;
            let mut environments: BTreeMap<ProjectId, Vec<Environment>> = BTreeMap::new();
            if expand_environments && !projects.is_empty() {
                let ids: Vec<ProjectId> = projects.iter().map(|p| p.id.clone()).collect();
                for found in repo.environments_of(&ids)? {
                    environments
                        .entry(found.project_id)
                        .or_default()
                        .push(found.environment);
                }
            }
            let items = projects
                .into_iter()
                .map(|project| {
                    let envs = expand_environments
                        .then(|| environments.remove(&project.id).unwrap_or_default());
                    ProjectWithEnvironments {
                        project,
                        environments: envs,
                    }
                })
                .collect();
            Ok(ProjectList { items, total })
        })
    }

    /// Creates a project with its environments (`test` and `production` unless named).
    ///
    /// # Errors
    /// `Invalid` for invalid input; `KeyTaken` for a taken key.
    pub fn create_project(
        &self,
        permit: &Permit<use_case::CreateProject>,
        post: ProjectPost,
    ) -> ServiceResult<ProjectWithEnvironments> {
        let caller = permit.caller();
        let new = post.validate()?;
        let now = self.now();
        let key = new.project.key.to_string();
        let project = Project::create(new.project, ProjectId::generate(&mut RandomIds), now);
        let environments: Vec<Environment> = new
            .environments
            .into_iter()
            .enumerate()
            .map(|(i, env)| {
                // Creation order is the listing order: keep the request's order.
                Environment::create(env, new_credentials(), now + i64::try_from(i).unwrap_or(0))
            })
            .collect();
        self.store
            .write_tx(|repo| -> ServiceResult<()> {
                repo.insert_project(&project)?;
                for env in &environments {
                    repo.insert_environment(&project.id, env)?;
                }
                let mut change = Change::new(
                    "project",
                    &project.key,
                    "created",
                    "createProject",
                    Resource::project(&project.key).with_tags(&project.tags),
                )
                .href(self.shown.href(ApiResource::Project { key: &project.key }))
                .versions(None, Some(self.shown.project(&project)));
                for env in &environments {
                    change.accesses.push(Request::new(
                        "createEnvironment",
                        Resource::project(&project.key)
                            .with_tags(&project.tags)
                            .environment(&env.key)
                            .with_tags(&env.tags),
                    ));
                }
                self.audit(repo, caller, change.authorize(caller)?)?;
                Ok(())
            })
            .map_err(|e| e.key_taken(|| format!("a project with key '{key}' already exists")))?;
        Ok(ProjectWithEnvironments {
            project,
            environments: Some(environments),
        })
    }

    /// One project, with its environments when asked.
    ///
    /// # Errors
    /// `NotPermitted` for a caller who cannot read; `NotFound` for an unknown key.
    pub fn get_project(
        &self,
        permit: &Permit<use_case::GetProject>,
        key: &str,
        expand_environments: bool,
    ) -> ServiceResult<ProjectWithEnvironments> {
        let caller = permit.caller();
        caller.authorize_view(key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, key)?;
            let environments = if expand_environments {
                Some(environments_of_one(repo, &project.id)?)
            } else {
                None
            };
            Ok(ProjectWithEnvironments {
                project,
                environments,
            })
        })
    }

    /// Applies a JSON Patch to a project; returns it with its environments.
    ///
    /// # Errors
    /// `NotFound`; `VersionConflict` for a failed `test`; `PatchFailed` for a read-only path or an
    /// invalid result.
    pub fn patch_project(
        &self,
        permit: &Permit<use_case::PatchProject>,
        key: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<ProjectWithEnvironments> {
        let caller = permit.caller();
        // It answers the resource even when it changes nothing: only for a caller who may read it.
        caller.require_view(key)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = lock_project(repo, key)?;
            let next = held.apply_patch_as_shown(&self.shown.project(&held), &patch.operations)?;
            if next != *held {
                let project = held.replace(next);
                repo.update_project(&held)?;
                let next: &Project = &held;
                let was = Resource::project(&project.key).with_tags(&project.tags);
                let becomes = Resource::project(&next.key).with_tags(&next.tags);
                let mut change = Change::new(
                    "project",
                    &next.key,
                    "updated",
                    "updateProject",
                    was.clone(),
                )
                .href(self.shown.href(ApiResource::Project { key: &next.key }))
                .comment(patch.comment.clone())
                .delta(json(&patch.operations))
                .versions(
                    Some(self.shown.project(&project)),
                    Some(self.shown.project(next)),
                );
                change.accesses = [
                    (project.name != next.name, "updateName"),
                    (project.tags != next.tags, "updateTags"),
                    (
                        project.default_client_side_availability
                            != next.default_client_side_availability,
                        "updateDefaultClientSideAvailability",
                    ),
                    (
                        project.include_in_snippet_by_default != next.include_in_snippet_by_default,
                        "updateIncludeInSnippetByDefault",
                    ),
                    (
                        project.naming_convention != next.naming_convention,
                        "updateFlagNamingConvention",
                    ),
                ]
                .into_iter()
                .filter(|(changed, _)| *changed)
                .flat_map(|(_, action)| {
                    [
                        Request::new(action, was.clone()),
                        Request::new(action, becomes.clone()),
                    ]
                })
                .collect();
                self.audit(repo, caller, change.authorize(caller)?)?;
            }
            let environments = environments_of_one(repo, &held.id)?;
            Ok(ProjectWithEnvironments {
                project: held.into_inner(),
                environments: Some(environments),
            })
        })
    }

    /// Deletes a project with its environments and flags.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_project(
        &self,
        permit: &Permit<use_case::DeleteProject>,
        key: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let project = lock_project(repo, key)?;
            repo.delete_project(&project)?;
            let change = Change::new(
                "project",
                &project.key,
                "deleted",
                "deleteProject",
                Resource::project(&project.key).with_tags(&project.tags),
            )
            .versions(Some(self.shown.project(&project)), None);
            self.audit(repo, caller, change.authorize(caller)?)?;
            Ok(())
        })
    }
}
