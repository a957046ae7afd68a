//! Flag statuses (`new`, `launched`, `inactive`, `active`), derived from configurations and dates
//! at the service clock's "now" by [`domain::flag::flag_status`].

use domain::flag::{flag_status, FlagStatusName};
use domain::id::ProjectId;
use domain::key::FlagKey;
use ports::{FlagRepository, StoreExt};

use crate::environments::load_environment;
use crate::flags::flag_not_found;
use crate::projects::load_project;
use crate::{use_case, Permit, Service, ServiceResult};

/// Flag statuses. The use cases of `Service::flag_statuses`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct FlagStatuses<'a>(&'a Service);

impl Service {
    /// Flag statuses.
    pub fn flag_statuses(&self) -> FlagStatuses<'_> {
        FlagStatuses(self)
    }
}

impl std::ops::Deref for FlagStatuses<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// The status of one flag in one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagStatus {
    /// The flag's key.
    pub flag_key: String,
    /// The environment's key.
    pub environment_key: String,
    /// The status.
    pub name: FlagStatusName,
}

impl Service {
    /// The statuses of `flag` (every flag when `None`) in `environments` (every environment
    /// when empty) of project `project_id`, in one query.
    fn statuses(
        &self,
        repo: &mut dyn FlagRepository,
        project_id: &ProjectId,
        flag: Option<&FlagKey>,
        environments: &[String],
    ) -> ServiceResult<Vec<FlagStatus>> {
        let now = self.now();
        Ok(repo
            .flag_status_facts(project_id, flag, environments)?
            .into_iter()
            .map(|found| FlagStatus {
                flag_key: found.flag_key,
                environment_key: found.environment_key,
                name: flag_status(&found.facts, now),
            })
            .collect())
    }
}

impl FlagStatuses<'_> {
    /// The status of every flag of the project in one environment, by flag key.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` for an unknown project or environment.
    pub fn environment_flag_statuses(
        &self,
        permit: &Permit<use_case::ReadFlagStatuses>,
        project_key: &str,
        environment_key: &str,
    ) -> ServiceResult<Vec<FlagStatus>> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            load_environment(repo, &project.id, project_key, environment_key)?;
            self.statuses(
                repo,
                &project.id,
                None,
                std::slice::from_ref(&environment_key.to_owned()),
            )
        })
    }

    /// The status of one flag in one environment.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` for an unknown project, environment or flag.
    pub fn flag_status(
        &self,
        permit: &Permit<use_case::ReadFlagStatuses>,
        project_key: &str,
        environment_key: &str,
        key: &str,
    ) -> ServiceResult<FlagStatus> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            load_environment(repo, &project.id, project_key, environment_key)?;
            self.statuses(
                repo,
                &project.id,
                Some(&FlagKey::lookup(key)),
                std::slice::from_ref(&environment_key.to_owned()),
            )?
            .pop()
            .ok_or_else(|| flag_not_found(project_key, key))
        })
    }

    /// The status of one flag in each environment of its project, or in those of
    /// `environments` that exist (all when empty), by environment key.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound` for an unknown project or flag.
    pub fn flag_status_across_environments(
        &self,
        permit: &Permit<use_case::ReadFlagStatuses>,
        project_key: &str,
        key: &str,
        environments: &[String],
    ) -> ServiceResult<Vec<FlagStatus>> {
        let caller = permit.caller();
        caller.authorize_view(project_key)?;
        self.store.read_tx(|repo| -> ServiceResult<_> {
            let project = load_project(repo, project_key)?;
            let key_named = FlagKey::lookup(key);
            let statuses = self.statuses(repo, &project.id, Some(&key_named), environments)?;
            // Nothing found: the flag is missing, or none of the environments asked for exists.
            if statuses.is_empty() && repo.get_flag(&project.id, &key_named)?.is_none() {
                return Err(flag_not_found(project_key, key));
            }
            Ok(statuses)
        })
    }
}
