//! Tombstones of deleted flags and segments in memory.

use std::collections::BTreeMap;

use domain::id::ProjectId;
use ports::{StoreResult, TombstoneOf, TombstoneRepository};

use crate::repository::MemoryRepository;
use crate::rows;

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
        let (kind, environment) = of.columns();
        rows(&mut self.tables.tombstones).insert(
            (
                project_id.to_string(),
                kind,
                environment.to_owned(),
                key.to_owned(),
            ),
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
        let (kind, environment) = of.columns();
        let mut id = (
            project_id.to_string(),
            kind,
            environment.to_owned(),
            String::new(),
        );
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
