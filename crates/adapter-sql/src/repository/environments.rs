//! [`EnvironmentRepository`] on diesel.

use std::collections::BTreeMap;

use diesel::prelude::*;
use domain::environment::Environment;
use domain::id::{EnvironmentId, ProjectId};
use domain::key::EnvironmentKey;
use domain::query::{Direction, EnvironmentQuery, EnvironmentSortField};
use domain::token::EnvironmentCredential;
use ports::{EnvironmentRepository, Listed, Locked, ProjectEnvironment, SdkKeyHolder, StoreResult};

use crate::schema::{environment_old_keys, environment_tags, environments, projects};

use super::query::*;
use super::SqlRepository;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = environments)]
struct EnvironmentRow {
    id: String,
    project_id: String,
    key: String,
    name: String,
    search: String,
    api_key: String,
    mobile_key: String,
    color: String,
    default_ttl: i32,
    secure_mode: bool,
    default_track_events: bool,
    require_comments: bool,
    confirm_changes: bool,
    critical: bool,
    creation_date: i64,
}

impl EnvironmentRow {
    fn from_environment(project_id: &str, e: &Environment) -> Self {
        Self {
            id: e.id.to_string(),
            project_id: project_id.to_owned(),
            key: e.key.to_string(),
            name: e.name.clone(),
            search: search_text(&e.key, &e.name),
            api_key: e.api_key.clone(),
            mobile_key: e.mobile_key.clone(),
            color: e.color.clone(),
            default_ttl: e.default_ttl,
            secure_mode: e.secure_mode,
            default_track_events: e.default_track_events,
            require_comments: e.require_comments,
            confirm_changes: e.confirm_changes,
            critical: e.critical,
            creation_date: e.creation_date,
        }
    }

    /// The environment, with its tags.
    fn into_environment(self, tags: Vec<String>) -> Environment {
        Environment {
            id: EnvironmentId::from_stored(self.id),
            key: EnvironmentKey::from_stored(self.key),
            name: self.name,
            api_key: self.api_key,
            mobile_key: self.mobile_key,
            color: self.color,
            default_ttl: self.default_ttl,
            secure_mode: self.secure_mode,
            default_track_events: self.default_track_events,
            require_comments: self.require_comments,
            confirm_changes: self.confirm_changes,
            critical: self.critical,
            tags,
            creation_date: self.creation_date,
        }
    }
}

fn filtered_environments<'a>(
    project_id: &'a str,
    q: &'a EnvironmentQuery,
) -> environments::BoxedQuery<'a, Backend> {
    let mut query = environments::table
        .filter(environments::project_id.eq(project_id))
        .into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(environments::search.like(search_pattern(text)).escape('\\'));
    }
    query = with_all_tags!(
        query,
        &q.tags,
        environments::id,
        environment_tags.environment_id
    );
    if let Some(key) = &q.key {
        query = query.filter(environments::key.eq(key));
    }
    if let Some(name) = &q.name {
        query = query.filter(environments::name.eq(name));
    }
    if let Some(critical) = q.critical {
        query = query.filter(environments::critical.eq(critical));
    }
    query
}

impl SqlRepository<'_> {
    fn environment_tags_of(
        &mut self,
        ids: &[String],
    ) -> StoreResult<BTreeMap<String, Vec<String>>> {
        let conn = &mut *self.conn;
        let rows = chunked(ids, |ids| {
            environment_tags::table
                .filter(environment_tags::environment_id.eq_any(ids))
                .order((environment_tags::environment_id, environment_tags::tag))
                .load(conn)
                .store()
        })?;
        Ok(group_tags(rows))
    }

    /// Makes the stored tags of `environment` exactly `environment.tags`.
    fn replace_environment_tags(&mut self, environment: &Environment) -> StoreResult<()> {
        replace_tags!(
            self.conn,
            environment_tags,
            [environment_id = environment.id.as_str()],
            environment.tags
        );
        Ok(())
    }

    /// Environments with their tags, for rows already loaded.
    fn environments_from_rows(
        &mut self,
        rows: Vec<EnvironmentRow>,
    ) -> StoreResult<Vec<ProjectEnvironment>> {
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let mut tags = self.environment_tags_of(&ids)?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let project_id = ProjectId::from_stored(row.project_id.clone());
                let env_tags = tags.remove(&row.id).unwrap_or_default();
                ProjectEnvironment {
                    environment: row.into_environment(env_tags),
                    project_id,
                }
            })
            .collect())
    }
}

impl EnvironmentRepository for SqlRepository<'_> {
    fn find_environment_credential(
        &mut self,
        secret: &str,
    ) -> StoreResult<Option<EnvironmentCredential>> {
        let row: Option<(String, String, String)> = environments::table
            .filter(
                environments::api_key
                    .eq(secret)
                    .or(environments::mobile_key.eq(secret))
                    .or(environments::id.eq(secret)),
            )
            .select((
                environments::api_key,
                environments::mobile_key,
                environments::id,
            ))
            .first(self.conn)
            .optional()
            .store()?;
        if row.is_none() {
            let retired: Option<String> = environment_old_keys::table
                .find(secret)
                .select(environment_old_keys::kind)
                .first(self.conn)
                .optional()
                .store()?;
            return Ok(retired.map(|kind| {
                if kind == "mobile" {
                    EnvironmentCredential::MobileKey
                } else {
                    EnvironmentCredential::SdkKey
                }
            }));
        }
        Ok(row.map(|(api_key, mobile_key, _)| {
            if api_key == secret {
                EnvironmentCredential::SdkKey
            } else if mobile_key == secret {
                EnvironmentCredential::MobileKey
            } else {
                EnvironmentCredential::ClientSideId
            }
        }))
    }

    fn environment_of_sdk_key(&mut self, secret: &str) -> StoreResult<Option<SdkKeyHolder>> {
        // Both lookups go by a unique index (`api_key`, the old keys' primary key).
        let current: Option<(String, String)> = environments::table
            .inner_join(projects::table.on(projects::id.eq(environments::project_id)))
            .filter(environments::api_key.eq(secret))
            .select((projects::key, environments::key))
            .first(self.conn)
            .optional()
            .store()?;
        if let Some((project_key, environment_key)) = current {
            return Ok(Some(SdkKeyHolder {
                project_key,
                environment_key,
                expires_at: None,
            }));
        }
        let retired: Option<(String, String, i64)> = environment_old_keys::table
            .inner_join(
                environments::table.on(environments::id.eq(environment_old_keys::environment_id)),
            )
            .inner_join(projects::table.on(projects::id.eq(environments::project_id)))
            .filter(environment_old_keys::key.eq(secret))
            .filter(environment_old_keys::kind.eq("sdk"))
            .select((
                projects::key,
                environments::key,
                environment_old_keys::expires_at,
            ))
            .first(self.conn)
            .optional()
            .store()?;
        Ok(
            retired.map(|(project_key, environment_key, expires_at)| SdkKeyHolder {
                project_key,
                environment_key,
                expires_at: Some(expires_at),
            }),
        )
    }

    fn retire_environment_key(
        &mut self,
        environment_id: &EnvironmentId,
        key: &str,
        kind: EnvironmentCredential,
        expires_at: i64,
    ) -> StoreResult<()> {
        let kind = match kind {
            EnvironmentCredential::MobileKey => "mobile",
            EnvironmentCredential::SdkKey | EnvironmentCredential::ClientSideId => "sdk",
        };
        diesel::insert_into(environment_old_keys::table)
            .values((
                environment_old_keys::key.eq(key),
                environment_old_keys::environment_id.eq(environment_id.as_str()),
                environment_old_keys::kind.eq(kind),
                environment_old_keys::expires_at.eq(expires_at),
            ))
            .execute(self.conn)
            .store()?;
        Ok(())
    }

    fn insert_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Environment,
    ) -> StoreResult<()> {
        diesel::insert_into(environments::table)
            .values(EnvironmentRow::from_environment(project_id, environment))
            .execute(self.conn)
            .store()?;
        self.replace_environment_tags(environment)
    }

    fn get_environment(
        &mut self,
        project_id: &ProjectId,
        key: &EnvironmentKey,
    ) -> StoreResult<Option<Environment>> {
        let rows: Vec<EnvironmentRow> = environments::table
            .filter(environments::project_id.eq(project_id.as_str()))
            .filter(environments::key.eq(key.as_str()))
            .select(EnvironmentRow::as_select())
            .load(self.conn)
            .store()?;
        if rows.is_empty() {
            return Ok(None);
        }
        Ok(self
            .environments_from_rows(rows)?
            .pop()
            .map(|found| found.environment))
    }

    fn lock_environment(
        &mut self,
        project_id: &ProjectId,
        key: &EnvironmentKey,
    ) -> StoreResult<Option<Locked<Environment>>> {
        let locked = lock_rows!(
            self.conn,
            environments::table
                .filter(environments::project_id.eq(project_id.as_str()))
                .filter(environments::key.eq(key.as_str()))
                .select(environments::id)
        );
        held(&locked, || self.get_environment(project_id, key))
    }

    fn list_environments(
        &mut self,
        project_id: &ProjectId,
        q: &EnvironmentQuery,
    ) -> StoreResult<Listed<Environment>> {
        let total: i64 = filtered_environments(project_id, q)
            .count()
            .get_result(self.conn)
            .store()?;
        let query = filtered_environments(project_id, q);
        let query = match (q.sort.field, q.sort.direction) {
            (EnvironmentSortField::Name, direction) => {
                sorted!(query, direction, environments::name, environments::id)
            }
            (EnvironmentSortField::CreatedOn, direction) => sorted!(
                query,
                direction,
                environments::creation_date,
                environments::id
            ),
            (EnvironmentSortField::Critical, Direction::Ascending) => query.order((
                environments::critical.asc(),
                environments::creation_date.asc(),
                environments::id.asc(),
            )),
            (EnvironmentSortField::Critical, Direction::Descending) => query.order((
                environments::critical.desc(),
                environments::creation_date.asc(),
                environments::id.asc(),
            )),
        };
        let rows = load_page!(self.conn, query, q.page, EnvironmentRow);
        let envs = self
            .environments_from_rows(rows)?
            .into_iter()
            .map(|found| found.environment)
            .collect();
        Ok(Listed::new(envs, count(total)))
    }

    fn environments_of(
        &mut self,
        project_ids: &[ProjectId],
    ) -> StoreResult<Vec<ProjectEnvironment>> {
        // Sorted ids make the chunks' results one list ordered by project.
        let mut ids: Vec<&str> = project_ids.iter().map(|id| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let conn = &mut *self.conn;
        let rows: Vec<EnvironmentRow> = chunked(&ids, |ids| {
            load_per_engine!(
                conn,
                environments::table
                    .filter(environments::project_id.eq_any(ids))
                    .order((
                        environments::project_id,
                        environments::creation_date,
                        environments::id,
                    ))
                    .select(EnvironmentRow::as_select())
            )
        })?;
        self.environments_from_rows(rows)
    }

    fn update_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Locked<Environment>,
    ) -> StoreResult<()> {
        diesel::update(environments::table.find(environment.id.as_str()))
            .set(EnvironmentRow::from_environment(project_id, environment))
            .execute(self.conn)
            .store()?;
        self.replace_environment_tags(environment)
    }

    fn delete_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Locked<Environment>,
    ) -> StoreResult<()> {
        diesel::delete(
            environments::table
                .filter(environments::project_id.eq(project_id.as_str()))
                .filter(environments::id.eq(environment.id.as_str())),
        )
        .execute(self.conn)
        .store()?;
        Ok(())
    }
}
