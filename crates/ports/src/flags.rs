//! Feature flags and their per-environment configurations.

use domain::flag::{Defaults, Flag, FlagConfig, FlagFacts, StatusFacts};
use domain::id::ProjectId;
use domain::key::{EnvironmentKey, FlagKey, ProjectKey};
use domain::query::FlagQuery;

use crate::{Listed, Locked, StoreResult};

/// What the status of one flag in one environment is derived from.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagEnvironmentFacts {
    /// The flag's key.
    pub flag_key: String,
    /// The environment's key.
    pub environment_key: String,
    /// The facts.
    pub facts: StatusFacts,
}

/// A flag that uses another as a prerequisite, in one environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagDependent {
    /// The dependent flag's key.
    pub flag_key: String,
    /// The dependent flag's name.
    pub flag_name: String,
    /// The environment whose configuration names the prerequisite.
    pub environment_key: String,
}

/// A flag's key and the defaults its new configurations start from.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagDefaults {
    /// The flag's key.
    pub flag_key: String,
    /// Its defaults.
    pub defaults: Defaults,
}

/// A configuration to store for the flag with key `flag_key`.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyedFlagConfig {
    /// The flag's key.
    pub flag_key: String,
    /// The flag's configuration in the environment.
    pub config: FlagConfig,
}

/// Flags of a project (`project_id`), by key, each with a configuration per environment.
pub trait FlagRepository {
    /// Stores a new flag with a configuration for each entry of `flag.environments`.
    fn insert_flag(&mut self, project_id: &ProjectId, flag: &Flag) -> StoreResult<()>;
    /// Stores the new flags of `flags` as [`FlagRepository::insert_flag`] stores one, except
    /// those whose key is taken (in the project, or by an earlier flag of the list), which are
    /// skipped without failing the transaction; returns, per flag, whether it was stored. The
    /// flags created together, in fewer round trips where the store can. The default inserts
    /// them one by one, which is right only for a store where a refused insert leaves the
    /// transaction usable (the SQL stores override it).
    fn insert_new_flags(
        &mut self,
        project_id: &ProjectId,
        flags: &[&Flag],
    ) -> StoreResult<Vec<bool>> {
        let mut stored = Vec::with_capacity(flags.len());
        for flag in flags {
            stored.push(match self.insert_flag(project_id, flag) {
                Ok(()) => true,
                Err(crate::StoreError::Duplicate(_)) => false,
                Err(other) => return Err(other),
            });
        }
        Ok(stored)
    }
    /// A flag by key with all its configurations (`_environmentName` filled in).
    fn get_flag(&mut self, project_id: &ProjectId, key: &FlagKey) -> StoreResult<Option<Flag>>;
    /// As [`FlagRepository::get_flag`], locked until the transaction ends.
    fn lock_flag(
        &mut self,
        project_id: &ProjectId,
        key: &FlagKey,
    ) -> StoreResult<Option<Locked<Flag>>>;
    /// Every flag of the project with all its configurations, by key, each locked until the
    /// transaction ends (in key order, as [`FlagRepository::lock_flag`] would lock them one by
    /// one).
    fn lock_flags(&mut self, project_id: &ProjectId) -> StoreResult<Vec<Locked<Flag>>>;
    /// A flag by project key and flag key with all its configurations, in one query (the read
    /// path of `GET` one flag). `None` when either does not exist.
    fn find_flag(&mut self, project_key: &ProjectKey, key: &FlagKey) -> StoreResult<Option<Flag>>;
    /// As [`FlagRepository::find_flag`], locked until the transaction ends, with its project's
    /// `_id`: the write path of a flag change, without reading the project first.
    fn lock_flag_by_keys(
        &mut self,
        project_key: &ProjectKey,
        key: &FlagKey,
    ) -> StoreResult<Option<(ProjectId, Locked<Flag>)>>;
    /// As [`FlagRepository::lock_flag_by_keys`] for several flags of one project at once: those
    /// of `keys` that exist, each once, in key order and locked in that order until the
    /// transaction ends (two writers of overlapping sets, each locking in key order, cannot
    /// deadlock on these locks), with the project's `_id`. A flag created after the lock was
    /// taken is not among them: only locked flags are returned. `None` when none of them exists, or the project does
    /// not. A store answers with as few statements as it can; the default locks one by one.
    ///
    /// The order is the store's order of keys, the same for every writer; a caller must not
    /// assume it is Rust's order of strings.
    fn lock_flags_by_keys(
        &mut self,
        project_key: &ProjectKey,
        keys: &[FlagKey],
    ) -> StoreResult<Option<(ProjectId, Vec<Locked<Flag>>)>> {
        let mut sorted: Vec<&FlagKey> = keys.iter().collect();
        sorted.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        sorted.dedup_by(|a, b| a.as_str() == b.as_str());
        let mut project = None;
        let mut flags = Vec::with_capacity(sorted.len());
        for key in sorted {
            if let Some((id, flag)) = self.lock_flag_by_keys(project_key, key)? {
                project = Some(id);
                flags.push(flag);
            }
        }
        Ok(project.map(|id| (id, flags)))
    }
    /// One page of flags matching `query` (all when it has no page), with the total count; each
    /// flag carries the configurations of the environments named in `environments`.
    fn list_flags(
        &mut self,
        project_id: &ProjectId,
        query: &FlagQuery,
        environments: &[String],
    ) -> StoreResult<Listed<Flag>>;
    /// Saves a flag's settings and, of its configurations, tags and references (prerequisite
    /// edges, segments its rules name), what differs from `previous`: the flag as it was read
    /// under the lock, before the change.
    fn update_flag(
        &mut self,
        project_id: &ProjectId,
        flag: &Locked<Flag>,
        previous: &Flag,
    ) -> StoreResult<()>;
    /// Saves several flags of the project as [`FlagRepository::update_flag`] saves one, each
    /// with the flag it was before the change: the flags a batch of changes changed, in one
    /// round trip where the store can. The default saves them one by one.
    fn update_flags(
        &mut self,
        project_id: &ProjectId,
        flags: &[(&Locked<Flag>, &Flag)],
    ) -> StoreResult<()> {
        for (flag, previous) in flags {
            self.update_flag(project_id, flag, previous)?;
        }
        Ok(())
    }
    /// Deletes a flag in every environment.
    fn delete_flag(&mut self, project_id: &ProjectId, flag: &Locked<Flag>) -> StoreResult<()>;
    /// What cross-flag rules need to know of every flag of the project (variations, archived,
    /// prerequisites).
    fn flag_facts(&mut self, project_id: &ProjectId) -> StoreResult<Vec<FlagFacts>>;
    /// What the status of flags in environments is derived from, in one query: each flag's
    /// facts in each environment, ordered by flag key then environment key. `flag` narrows to
    /// one flag, `environments` (when not empty) to those environments.
    fn flag_status_facts(
        &mut self,
        project_id: &ProjectId,
        flag: Option<&FlagKey>,
        environments: &[String],
    ) -> StoreResult<Vec<FlagEnvironmentFacts>>;
    /// Flags that use `key` as a prerequisite, one entry per environment that does.
    fn flag_dependents(
        &mut self,
        project_id: &ProjectId,
        key: &FlagKey,
    ) -> StoreResult<Vec<FlagDependent>>;
    /// Key and defaults of every flag of the project.
    fn flag_defaults(&mut self, project_id: &ProjectId) -> StoreResult<Vec<FlagDefaults>>;
    /// Stores configurations for one environment, with what they refer to (their
    /// prerequisites, the segments their rules match).
    fn insert_flag_configs(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        configs: &[KeyedFlagConfig],
    ) -> StoreResult<()>;
}
