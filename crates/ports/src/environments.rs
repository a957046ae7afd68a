//! Environments of projects, and their SDK credentials.

use domain::environment::Environment;
use domain::id::{EnvironmentId, ProjectId};
use domain::key::EnvironmentKey;
use domain::query::EnvironmentQuery;
use domain::token::EnvironmentCredential;

use crate::{Listed, Locked, StoreResult};

/// An environment with the `_id` of the project it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectEnvironment {
    /// The project's `_id`.
    pub project_id: ProjectId,
    /// The environment.
    pub environment: Environment,
}

/// The environment an SDK key opens (see [`EnvironmentRepository::environment_of_sdk_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdkKeyHolder {
    /// The key of the environment's project, as stored.
    pub project_key: String,
    /// The environment's key, as stored.
    pub environment_key: String,
    /// When a key replaced by a reset stops opening the environment (epoch ms); `None` for
    /// the environment's current key.
    pub expires_at: Option<i64>,
}

/// Environments, by key within their project (`project_id`), and the SDK keys they hand out.
pub trait EnvironmentRepository {
    /// Stores a new environment.
    fn insert_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Environment,
    ) -> StoreResult<()>;
    /// An environment by key.
    fn get_environment(
        &mut self,
        project_id: &ProjectId,
        key: &EnvironmentKey,
    ) -> StoreResult<Option<Environment>>;
    /// An environment by key, locked until the transaction ends.
    fn lock_environment(
        &mut self,
        project_id: &ProjectId,
        key: &EnvironmentKey,
    ) -> StoreResult<Option<Locked<Environment>>>;
    /// One page of a project's environments matching `query`, with the total count of matches.
    fn list_environments(
        &mut self,
        project_id: &ProjectId,
        query: &EnvironmentQuery,
    ) -> StoreResult<Listed<Environment>>;
    /// Every environment of the given projects, in creation order.
    fn environments_of(
        &mut self,
        project_ids: &[ProjectId],
    ) -> StoreResult<Vec<ProjectEnvironment>>;
    /// Saves an environment's changed fields.
    fn update_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Locked<Environment>,
    ) -> StoreResult<()>;
    /// Deletes an environment with its flag configurations.
    fn delete_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Locked<Environment>,
    ) -> StoreResult<()>;
    /// Whether `secret` is an environment's SDK key, mobile key or client-side ID (current or
    /// replaced by a reset).
    fn find_environment_credential(
        &mut self,
        secret: &str,
    ) -> StoreResult<Option<EnvironmentCredential>>;
    /// The environment whose server-side SDK key (current, or replaced by a reset: with its
    /// expiry, passed or not) `secret` is; `None` for anything else (a mobile key, a
    /// client-side ID, an unknown secret).
    fn environment_of_sdk_key(&mut self, secret: &str) -> StoreResult<Option<SdkKeyHolder>>;
    /// Remembers an SDK or mobile key replaced by a reset, valid for SDKs until `expires_at`.
    fn retire_environment_key(
        &mut self,
        environment_id: &EnvironmentId,
        key: &str,
        kind: EnvironmentCredential,
        expires_at: i64,
    ) -> StoreResult<()>;
}
