//! [`CustomRoleRepository`] on diesel.

use diesel::prelude::*;
use domain::custom_role::CustomRole;
use domain::key::CustomRoleKey;
use domain::query::{CustomRoleQuery, CustomRoleSortField};
use ports::{CustomRoleRepository, Listed, Locked, StoreResult};

use crate::schema::custom_roles;
use crate::stored;

use super::query::*;
use super::SqlRepository;

#[derive(Queryable, Selectable)]
#[diesel(table_name = custom_roles)]
struct DocRow {
    doc: String,
}

/// What a `query` filter matches: the key and the name, lower-cased.
fn search_text(role: &CustomRole) -> String {
    format!("{}\n{}", role.key, role.name).to_lowercase()
}

fn filtered(q: &CustomRoleQuery) -> custom_roles::BoxedQuery<'_, Backend> {
    let mut query = custom_roles::table.into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(custom_roles::search.like(search_pattern(text)).escape('\\'));
    }
    query
}

impl SqlRepository<'_> {
    /// The roles `query` selects, in key order, in one query.
    fn roles_where(
        &mut self,
        query: custom_roles::BoxedQuery<'_, Backend>,
    ) -> StoreResult<Vec<CustomRole>> {
        let docs: Vec<String> = query
            .order(custom_roles::key)
            .select(custom_roles::doc)
            .load(self.conn)
            .store()?;
        docs.iter()
            .map(|doc| stored::custom_role::read_doc(doc))
            .collect()
    }
}

impl CustomRoleRepository for SqlRepository<'_> {
    fn insert_custom_role(&mut self, role: &CustomRole, now: i64) -> StoreResult<()> {
        diesel::insert_into(custom_roles::table)
            .values((
                custom_roles::id.eq(role.id.as_str()),
                custom_roles::key.eq(role.key.as_str()),
                custom_roles::sort_name.eq(role.name.to_lowercase()),
                custom_roles::search.eq(search_text(role)),
                custom_roles::creation_date.eq(now),
                custom_roles::doc.eq(stored::custom_role::doc_json(role)?),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn get_custom_role(&mut self, key: &CustomRoleKey) -> StoreResult<Option<CustomRole>> {
        let doc: Option<String> = custom_roles::table
            .filter(custom_roles::key.eq(key.as_str()))
            .select(custom_roles::doc)
            .first(self.conn)
            .optional()
            .store()?;
        doc.map(|d| stored::custom_role::read_doc(&d)).transpose()
    }

    fn get_custom_roles(&mut self, keys: &[String]) -> StoreResult<Vec<CustomRole>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.roles_where(
            custom_roles::table
                .filter(custom_roles::key.eq_any(keys))
                .into_boxed(),
        )
    }

    fn get_custom_roles_by_id(
        &mut self,
        ids: &[domain::id::CustomRoleId],
    ) -> StoreResult<Vec<CustomRole>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let ids = ids.iter().map(|id| id.as_str());
        self.roles_where(
            custom_roles::table
                .filter(custom_roles::id.eq_any(ids))
                .into_boxed(),
        )
    }

    fn lock_custom_role(&mut self, key: &CustomRoleKey) -> StoreResult<Option<Locked<CustomRole>>> {
        // One round trip: the locked row's document is what the lock reads.
        let docs = lock_rows!(
            self.conn,
            custom_roles::table
                .filter(custom_roles::key.eq(key.as_str()))
                .select(custom_roles::doc)
        );
        docs.first()
            .map(|doc| stored::custom_role::read_doc(doc).map(Locked::assume_locked))
            .transpose()
    }

    fn list_custom_roles(&mut self, q: &CustomRoleQuery) -> StoreResult<Listed<CustomRole>> {
        let total: i64 = filtered(q).count().get_result(self.conn).store()?;
        let query = filtered(q);
        let query = match q.sort.field {
            CustomRoleSortField::Key => {
                sorted!(query, q.sort.direction, custom_roles::key, custom_roles::id)
            }
            CustomRoleSortField::Name => {
                sorted!(
                    query,
                    q.sort.direction,
                    custom_roles::sort_name,
                    custom_roles::key
                )
            }
        };
        let rows = load_page!(self.conn, query, q.page, DocRow);
        Ok(Listed::new(
            rows.iter()
                .map(|row| stored::custom_role::read_doc(&row.doc))
                .collect::<StoreResult<_>>()?,
            count(total),
        ))
    }

    fn update_custom_role(&mut self, role: &Locked<CustomRole>) -> StoreResult<()> {
        let role: &CustomRole = role;
        diesel::update(custom_roles::table.find(role.id.as_str()))
            .set((
                custom_roles::sort_name.eq(role.name.to_lowercase()),
                custom_roles::search.eq(search_text(role)),
                custom_roles::doc.eq(stored::custom_role::doc_json(role)?),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn delete_custom_role(&mut self, role: &Locked<CustomRole>) -> StoreResult<()> {
        diesel::delete(custom_roles::table.find(role.id.as_str()))
            .execute(self.conn)
            .store()?;
        Ok(())
    }
}
