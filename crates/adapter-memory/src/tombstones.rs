//! Tombstones of deleted flags and segments in memory.

use std::collections::BTreeMap;

use domain::id::ProjectId;
use ports::{StoreResult, TombstoneOf, TombstoneRepository};

use crate::repository::MemoryRepository;
use crate::rows;

/// The stored kind and environment of a tombstone of `of`.
fn columns(of: TombstoneOf<'_>) -> (&'static str, String) {
    match of {
        TombstoneOf::Flag => ("flag", String::new()),
        TombstoneOf::Segment(environment) => ("segment", environment.to_string()),
    }
}

impl TombstoneRepository for MemoryRepository<'_> {
    fn keep_tombstone(
        &mut self,
        project_id: &ProjectId,
        of: TombstoneOf<'_>,
        key: &str,
        version: i64,
    ) -> StoreResult<()> {
        if !self.tables.projects.contains_key(project_id) {
            return Err(crate::missing("sdk_tombstones.project_id"));
        }
        let (kind, environment) = columns(of);
        rows(&mut self.tables.tombstones).insert(
            (project_id.to_string(), kind, environment, key.to_owned()),
            version,
        );
        Ok(())
    }

    fn tombstones(
        &mut self,
        project_id: &ProjectId,
        of: TombstoneOf<'_>,
        keys: &[&str],
    ) -> StoreResult<BTreeMap<String, i64>> {
        let (kind, environment) = columns(of);
        let mut id = (project_id.to_string(), kind, environment, String::new());
        Ok(keys
            .iter()
            .filter_map(|key| {
                (*key).clone_into(&mut id.3);
                self.tables
                    .tombstones
                    .get(&id)
                    .map(|version| ((*key).to_owned(), *version))
            })
            .collect())
    }
}
