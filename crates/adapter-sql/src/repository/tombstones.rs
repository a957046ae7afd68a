//! [`TombstoneRepository`] on diesel.

use std::collections::BTreeMap;

use diesel::prelude::*;
use domain::id::ProjectId;
use ports::{StoreResult, TombstoneOf, TombstoneRepository};

use crate::schema::sdk_tombstones;

use super::query::*;
use super::SqlRepository;

impl TombstoneRepository for SqlRepository<'_> {
    fn keep_tombstone(
        &mut self,
        project_id: &ProjectId,
        of: TombstoneOf<'_>,
        key: &str,
        version: i64,
    ) -> StoreResult<()> {
        let (kind, environment) = of.columns();
        // Delete and insert: one statement form for both engines (the row is the deleted
        // item's, locked by the deletion's transaction).
        diesel::delete(
            sdk_tombstones::table
                .filter(sdk_tombstones::project_id.eq(project_id.as_str()))
                .filter(sdk_tombstones::kind.eq(kind))
                .filter(sdk_tombstones::environment_key.eq(environment))
                .filter(sdk_tombstones::item_key.eq(key)),
        )
        .execute(self.conn)
        .store()?;
        diesel::insert_into(sdk_tombstones::table)
            .values((
                sdk_tombstones::project_id.eq(project_id.as_str()),
                sdk_tombstones::kind.eq(kind),
                sdk_tombstones::environment_key.eq(environment),
                sdk_tombstones::item_key.eq(key),
                sdk_tombstones::version.eq(version),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn tombstones(
        &mut self,
        project_id: &ProjectId,
        of: TombstoneOf<'_>,
        keys: &[&str],
    ) -> StoreResult<BTreeMap<String, i64>> {
        let (kind, environment) = of.columns();
        let rows = chunked(keys, |chunk| {
            sdk_tombstones::table
                .filter(sdk_tombstones::project_id.eq(project_id.as_str()))
                .filter(sdk_tombstones::kind.eq(kind))
                .filter(sdk_tombstones::environment_key.eq(environment))
                .filter(sdk_tombstones::item_key.eq_any(chunk))
                .select((sdk_tombstones::item_key, sdk_tombstones::version))
                .load::<(String, i64)>(self.conn)
                .store()
        })?;
        Ok(rows.into_iter().collect())
    }
}
