//! Projects.

use domain::key::ProjectKey;
use domain::project::Project;
use domain::query::ProjectQuery;

use crate::{Listed, Locked, StoreResult};

/// Projects, by key. Deleting one deletes everything in it.
pub trait ProjectRepository {
    /// Stores a new project (without environments).
    fn insert_project(&mut self, project: &Project) -> StoreResult<()>;
    /// A project by key.
    fn get_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Project>>;
    /// A project by key, locked until the transaction ends.
    fn lock_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Locked<Project>>>;
    /// A project by key, held against changes until the transaction ends, but shared: other
    /// transactions may hold it so too at the same time (creating flags in it, say), while one
    /// that locks it ([`ProjectRepository::lock_project`]: to change it, add an environment,
    /// delete it) waits for them all, and they for it. Fairly: a share asked for while a lock
    /// waits comes after that lock, so a stream of shares cannot keep a lock out.
    fn share_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Project>>;
    /// One page of projects matching `query`, with the total count of matches.
    fn list_projects(&mut self, query: &ProjectQuery) -> StoreResult<Listed<Project>>;
    /// Saves a project's changed fields.
    fn update_project(&mut self, project: &Locked<Project>) -> StoreResult<()>;
    /// Deletes a project with its environments and flags.
    fn delete_project(&mut self, project: &Locked<Project>) -> StoreResult<()>;
}
