//! Environments.

use domain::environment::{Environment, EnvironmentPost};
use domain::id::ProjectId;
use domain::key::EnvironmentKey;
use domain::patch::JsonPatchBody;
use domain::policy::{Request, Resource};
use domain::query::EnvironmentQuery;
use domain::token::EnvironmentCredential;
use ports::{FlagDefaults, KeyedFlagConfig, Listed, Locked, Repository, StoreExt};

use crate::audit::{json, Change};

use crate::projects::{load_project, lock_project, new_credentials};
use crate::{use_case, ApiResource, Permit, RandomIds, Service, ServiceError, ServiceResult};

/// Environments of projects, and their keys. The use cases of `Service::environments`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct Environments<'a>(&'a Service);

impl Service {
    /// Environments of projects, and their keys.
    pub fn environments(&self) -> Environments<'_> {
        Environments(self)
    }
}

impl std::ops::Deref for Environments<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// One page of environments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentPage {
    /// The page.
    pub items: Vec<Environment>,
    /// All matches.
    pub total: u64,
}

pub(crate) fn environment_not_found(project_key: &str, key: &str) -> ServiceError {
    ServiceError::NotFound(format!(
        "no environment with key '{key}' in project '{project_key}'"
    ))
}

/// The environment `key` (as a request names it) names in the project.
pub(crate) fn load_environment(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    project_key: &str,
    key: &str,
) -> ServiceResult<Environment> {
    repo.get_environment(project_id, &EnvironmentKey::lookup(key))?
        .ok_or_else(|| environment_not_found(project_key, key))
}

/// An environment to change, held until the transaction ends.
fn lock_environment(
    repo: &mut dyn Repository,
    project_id: &ProjectId,
    project_key: &str,
    key: &str,
) -> ServiceResult<Locked<Environment>> {
    repo.lock_environment(project_id, &EnvironmentKey::lookup(key))?
        .ok_or_else(|| environment_not_found(project_key, key))
}

impl Service {
    /// Copies the contents of environment `source` into the new environment `target`, inside
    /// the transaction that creates it (the project is held: no flag or environment is created
    /// meanwhile).
    ///
    /// - Segments first: every segment of `source`, at version 1, created now, so that the
    ///   copied rules' `segmentMatch` clauses find them.
    /// - Then every flag's configuration of `source` (targeting on/off, targets, rules,
    ///   fallthrough, off variation, prerequisites, event tracking), at version 1, with a salt of
    ///   its own. Flags' `_version`s do not change, as when an environment is created empty.
    ///
    /// Every flag and every segment of `source` is held until the transaction ends, so that a
    /// concurrent change of one either lands before the copy (and is copied) or waits for it
    /// (and changes the source only); none is half-copied. Afterwards the two environments are
    /// independent.
    ///
    /// # Errors
    /// `Invalid` when a flag with the copied configuration would be larger than the resource size
    /// limit.
    fn clone_environment_contents(
        &self,
        repo: &mut dyn Repository,
        (project_id, project_key): (&ProjectId, &str),
        source: &Environment,
        target: &Environment,
        now: i64,
    ) -> ServiceResult<Vec<Request>> {
        let mut requests = Vec::new();
        let project = Resource::project(project_key);
        for segment in repo.lock_segments(project_id, &source.key)? {
            let copy = segment.clone_for_environment(now);
            repo.insert_segment(project_id, &target.key, &copy)?;
            let at = project
                .clone()
                .environment(&target.key)
                .segment(&copy.key)
                .with_tags(&copy.tags);
            // Created, and given what a new segment lacks, as the same patch would be decided.
            for (action, copied) in [
                ("createSegment", true),
                (
                    "updateIncluded",
                    !copy.included.is_empty() || !copy.included_contexts.is_empty(),
                ),
                (
                    "updateExcluded",
                    !copy.excluded.is_empty() || !copy.excluded_contexts.is_empty(),
                ),
                ("updateRules", !copy.rules.is_empty()),
            ] {
                if copied {
                    requests.push(Request::new(action, at.clone()));
                }
            }
        }
        let mut configs = Vec::new();
        for held in repo.lock_flags(project_id)? {
            let mut flag = held.into_inner();
            let config = match flag.environments.get(source.key.as_str()) {
                Some(config) => config.clone_for_environment(&target.name, now, &mut RandomIds),
                // Every flag has a configuration in every environment; should one be missing,
                // the new environment gets what an environment created empty would.
                None => flag.new_config(&target.name, now, &mut RandomIds),
            };
            let mut defaults = flag.clone();
            defaults.environments.insert(
                target.key.to_string(),
                flag.new_config(&target.name, now, &mut RandomIds),
            );
            flag.environments
                .insert(target.key.to_string(), config.clone());
            requests.extend(
                domain::audit::flag_requests(&project, &defaults, &flag)
                    .into_iter()
                    .filter(|request| {
                        request
                            .resource
                            .split_environment()
                            .is_some_and(|(_, env)| env == target.key.as_str())
                    }),
            );
            crate::sizes::check_new_size(
                &format!(
                    "cloning environment '{}' into flag '{}'",
                    source.key, flag.key
                ),
                &flag,
            )?;
            configs.push(KeyedFlagConfig {
                flag_key: flag.key.into_string(),
                config,
            });
        }
        repo.insert_flag_configs(project_id, &target.key, &configs)?;
        Ok(requests)
    }
}

impl Service {
    fn reset_environment_key(
        &self,
        permit: &Permit<use_case::ResetEnvironmentKey>,
        project_key: &str,
        key: &str,
        kind: EnvironmentCredential,
        expiry: Option<i64>,
    ) -> ServiceResult<Environment> {
        let caller = permit.caller();
        let now = self.now();
        // A time already past retires the old secret at once, as no expiry does.
        let expiry = expiry.filter(|e| *e > now);
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let mut held = lock_environment(repo, &project.id, project_key, key)?;
            let before = masked(self.shown.environment(&project.key, &held));
            let env = held.get_mut();
            let fresh = new_credentials();
            let old = match kind {
                EnvironmentCredential::MobileKey => {
                    std::mem::replace(&mut env.mobile_key, fresh.mobile_key)
                }
                EnvironmentCredential::SdkKey | EnvironmentCredential::ClientSideId => {
                    std::mem::replace(&mut env.api_key, fresh.api_key)
                }
            };
            repo.retire_environment_key(&env.id, &old, kind, expiry.unwrap_or(now))?;
            repo.update_environment(&project.id, &held)?;
            let env: &Environment = &held;
            let action = match kind {
                EnvironmentCredential::MobileKey => "updateMobileKey",
                EnvironmentCredential::SdkKey | EnvironmentCredential::ClientSideId => {
                    "updateApiKey"
                }
            };
            let change = Change::new(
                "environment",
                &env.key,
                "reset a key of",
                action,
                Resource::project(&project.key)
                    .environment(&env.key)
                    .with_tags(&env.tags),
            )
            .href(self.shown.href(ApiResource::Environment {
                project_key: &project.key,
                key: &env.key,
            }))
            .versions(before, masked(self.shown.environment(&project.key, env)));
            self.audit(repo, caller, change.authorize(caller)?)?;
            Ok(held.into_inner())
        })
    }
}

/// A JSON Patch as JSON for the audit log, with the values it names for the SDK and mobile keys
/// masked (a `test` of `/apiKey` carries the key itself).
fn masked_operations(operations: &[domain::patch::Operation]) -> Option<serde_json::Value> {
    let mut value = json(&operations)?;
    for op in value.as_array_mut().into_iter().flatten() {
        let names_a_key = op
            .get("path")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|path| {
                ["/apiKey", "/mobileKey"]
                    .iter()
                    .any(|key| path == *key || path.starts_with(&format!("{key}/")))
            });
        if let (true, Some(serde_json::Value::String(secret))) = (names_a_key, op.get_mut("value"))
        {
            *secret = domain::audit::mask(secret);
        }
    }
    Some(value)
}

/// An environment as JSON for the audit log, its SDK and mobile keys masked.
fn masked(mut value: serde_json::Value) -> Option<serde_json::Value> {
    for field in ["apiKey", "mobileKey"] {
        if let Some(serde_json::Value::String(key)) = value.get_mut(field) {
            *key = domain::audit::mask(key);
        }
    }
    Some(value)
}

impl Environments<'_> {
    /// Lists a project's environments.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` for an unknown project.
    pub fn list_environments(
        &self,
        permit: &Permit<use_case::ListEnvironments>,
        project_key: &str,
        query: &EnvironmentQuery,
    ) -> ServiceResult<EnvironmentPage> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let Listed { items, total } = repo.list_environments(&project.id, query)?;
            Ok(EnvironmentPage { items, total })
        })
    }

    /// Creates an environment and, in the same transaction, a configuration (targeting off) for
    /// every flag of the project. With `source`, the new environment is a clone of that one:
    /// every flag's configuration there and every segment of it are copied (see
    /// `clone_environment_contents`).
    ///
    /// # Errors
    /// `Invalid` (also for a `source` that is not an environment of the project, or a clone that
    /// would make a flag larger than the resource size limit), `NotFound` for an unknown project,
    /// `KeyTaken` for a taken key.
    pub fn create_environment(
        &self,
        permit: &Permit<use_case::CreateEnvironment>,
        project_key: &str,
        post: EnvironmentPost,
    ) -> ServiceResult<Environment> {
        let caller = permit.caller();
        let new = post.validate()?;
        let env_key = new.key().to_owned();
        let now = self.now();
        self.store
            .write_tx(|repo| -> ServiceResult<_> {
                // Held so that no flag is created meanwhile without a config here (and no other
                // environment, past the limit).
                let project = lock_project(repo, project_key)?;
                let existing = repo.environments_of(std::slice::from_ref(&project.id))?.len();
                if existing >= domain::project::MAX_ENVIRONMENTS {
                    return Err(ServiceError::invalid(format!(
                        "project '{project_key}' already has {existing} environments, the limit of a project is {}",
                        domain::project::MAX_ENVIRONMENTS
                    )));
                }
                let source = match new.source() {
                    Some(source_key) => {
                        let found = repo
                            .lock_environment(&project.id, &EnvironmentKey::lookup(source_key))?;
                        let held = found.ok_or_else(|| {
                            ServiceError::from(domain::ValidationError::single(
                                "source.key",
                                format!(
                                    "no environment with key '{source_key}' in project '{project_key}'"
                                ),
                            ))
                        })?;
                        Some(held.into_inner())
                    }
                    None => None,
                };
                let env = Environment::create(new.clone(), new_credentials(), now);
                repo.insert_environment(&project.id, &env)?;
                let mut copied = Vec::new();
                match &source {
                    Some(source) => {
                        copied = self.clone_environment_contents(
                            repo,
                            (&project.id, &project.key),
                            source,
                            &env,
                            now,
                        )?;
                    }
                    None => {
                        let configs: Vec<_> = repo
                            .flag_defaults(&project.id)?
                            .into_iter()
                            .map(|FlagDefaults { flag_key, defaults }| KeyedFlagConfig {
                                flag_key,
                                config: domain::flag::FlagConfig::new(defaults, &env.name, now, &mut RandomIds),
                            })
                            .collect();
                        repo.insert_flag_configs(&project.id, &env.key, &configs)?;
                    }
                }
                let mut change = Change::new(
                    "environment",
                    &env.key,
                    if source.is_some() { "cloned" } else { "created" },
                    "createEnvironment",
                    Resource::project(&project.key).environment(&env.key).with_tags(&env.tags),
                )
                .href(self.shown.href(ApiResource::Environment { project_key: &project.key, key: &env.key }))
                .versions(None, masked(self.shown.environment(&project.key, &env)));
                if let Some(source) = &source {
                    change.delta = Some(serde_json::json!({"source": {"key": source.key}}));
                    change.accesses.push(Request::new(
                        "cloneEnvironment",
                        Resource::project(&project.key)
                            .environment(&source.key)
                            .with_tags(&source.tags),
                    ));
                    // What the copies set in the new environment is decided there, flag by flag
                    // and segment by segment, as the same changes would be (the entry records the
                    // clone, whose copies its `cloneEnvironment` access stands for).
                    caller.require_all(&copied)?;
                }
                self.audit(repo, caller, change.authorize(caller)?)?;
                Ok(env)
            })
            .map_err(|e| {
                e.key_taken(|| {
                    format!(
                    "an environment with key '{env_key}' already exists in project '{project_key}'"
                )
                })
            })
    }

    /// One environment.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_environment(
        &self,
        permit: &Permit<use_case::GetEnvironment>,
        project_key: &str,
        key: &str,
    ) -> ServiceResult<Environment> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            load_environment(repo, &project.id, project_key, key)
        })
    }

    /// Applies a JSON Patch to an environment.
    ///
    /// # Errors
    /// `NotFound`; `VersionConflict` for a failed `test`; `PatchFailed` for a read-only path or an
    /// invalid result.
    pub fn patch_environment(
        &self,
        permit: &Permit<use_case::PatchEnvironment>,
        project_key: &str,
        key: &str,
        patch: &JsonPatchBody,
    ) -> ServiceResult<Environment> {
        let caller = permit.caller();
        // It answers the resource even when it changes nothing: only for a caller who may read it.
        caller.require_view(project_key)?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let mut held = lock_environment(repo, &project.id, project_key, key)?;
            let shown = self.shown.environment(&project.key, &held);
            let next = held.apply_patch_as_shown(&shown, &patch.operations)?;
            if next != *held {
                let env = held.replace(next);
                repo.update_environment(&project.id, &held)?;
                let next: &Environment = &held;
                let at = Resource::project(&project.key).environment(&next.key);
                let (was, becomes) = (at.clone().with_tags(&env.tags), at.with_tags(&next.tags));
                let mut change = Change::new(
                    "environment",
                    &next.key,
                    "updated",
                    "updateEnvironment",
                    was.clone(),
                )
                .href(self.shown.href(ApiResource::Environment {
                    project_key: &project.key,
                    key: &next.key,
                }))
                .comment(patch.comment.clone())
                .delta(masked_operations(&patch.operations))
                .versions(
                    masked(self.shown.environment(&project.key, &env)),
                    masked(self.shown.environment(&project.key, next)),
                );
                change.accesses = [
                    (env.name != next.name, "updateName"),
                    (env.color != next.color, "updateColor"),
                    (env.default_ttl != next.default_ttl, "updateTtl"),
                    (env.secure_mode != next.secure_mode, "updateSecureMode"),
                    (
                        env.default_track_events != next.default_track_events,
                        "updateDefaultTrackEvents",
                    ),
                    (
                        env.require_comments != next.require_comments,
                        "updateRequireComments",
                    ),
                    (
                        env.confirm_changes != next.confirm_changes,
                        "updateConfirmChanges",
                    ),
                    (env.critical != next.critical, "updateCritical"),
                    (env.tags != next.tags, "updateTags"),
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
            Ok(held.into_inner())
        })
    }

    /// Deletes an environment and every flag's configuration in it.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_environment(
        &self,
        permit: &Permit<use_case::DeleteEnvironment>,
        project_key: &str,
        key: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let project = load_project(repo, project_key)?;
            let env = lock_environment(repo, &project.id, project_key, key)?;
            repo.delete_environment(&project.id, &env)?;
            let change = Change::new(
                "environment",
                &env.key,
                "deleted",
                "deleteEnvironment",
                Resource::project(&project.key)
                    .environment(&env.key)
                    .with_tags(&env.tags),
            )
            .versions(masked(self.shown.environment(&project.key, &env)), None);
            self.audit(repo, caller, change.authorize(caller)?)?;
            Ok(())
        })
    }

    /// Gives an environment a new SDK key. With `expiry` (epoch ms, in the future) the old key
    /// stays valid for SDKs until then. Neither key is ever an access token.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn reset_sdk_key(
        &self,
        permit: &Permit<use_case::ResetEnvironmentKey>,
        project_key: &str,
        key: &str,
        expiry: Option<i64>,
    ) -> ServiceResult<Environment> {
        self.reset_environment_key(
            permit,
            project_key,
            key,
            EnvironmentCredential::SdkKey,
            expiry,
        )
    }

    /// Gives an environment a new mobile key; the old one stops at once.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn reset_mobile_key(
        &self,
        permit: &Permit<use_case::ResetEnvironmentKey>,
        project_key: &str,
        key: &str,
    ) -> ServiceResult<Environment> {
        self.reset_environment_key(
            permit,
            project_key,
            key,
            EnvironmentCredential::MobileKey,
            None,
        )
    }
}
