//! [`ProjectRepository`] on diesel.

use std::collections::BTreeMap;

use diesel::prelude::*;
use domain::id::ProjectId;
use domain::key::ProjectKey;
use domain::project::{ClientSideAvailability, NamingCase, NamingConvention, Project};
use domain::query::{ProjectQuery, ProjectSortField};
use ports::{Listed, Locked, ProjectRepository, StoreResult};

use crate::schema::{project_tags, projects};

use super::fixed::{statement, Bind, Fixed};
use super::query::*;
use super::SqlRepository;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = projects, treat_none_as_null = true)]
struct ProjectRow {
    id: String,
    key: String,
    name: String,
    search: String,
    include_in_snippet_by_default: bool,
    using_mobile_key: bool,
    using_environment_id: bool,
    creation_date: i64,
    /// The naming convention's case, by its API name (`kebabCase`, ...).
    naming_case: Option<String>,
    naming_prefix: Option<String>,
}

impl ProjectRow {
    fn from_project(p: &Project) -> Self {
        Self {
            id: p.id.to_string(),
            key: p.key.to_string(),
            name: p.name.clone(),
            search: search_text(&p.key, &p.name),
            include_in_snippet_by_default: p.include_in_snippet_by_default,
            using_mobile_key: p.default_client_side_availability.using_mobile_key,
            using_environment_id: p.default_client_side_availability.using_environment_id,
            creation_date: p.creation_date,
            naming_case: p
                .naming_convention
                .as_ref()
                .and_then(|c| c.case)
                .map(|case| case.as_str().to_owned()),
            naming_prefix: p.naming_convention.as_ref().and_then(|c| c.prefix.clone()),
        }
    }

    fn into_project(self, tags: Vec<String>) -> StoreResult<Project> {
        let case = match self.naming_case.as_deref() {
            Some(name) => Some(
                NamingCase::parse(name)
                    .ok_or_else(|| corrupt("naming case", format!("unknown case '{name}'")))?,
            ),
            None => None,
        };
        let naming_convention =
            (case.is_some() || self.naming_prefix.is_some()).then_some(NamingConvention {
                case,
                prefix: self.naming_prefix,
            });
        Ok(Project {
            id: ProjectId::from_stored(self.id),
            key: ProjectKey::from_stored(self.key),
            name: self.name,
            tags,
            include_in_snippet_by_default: self.include_in_snippet_by_default,
            default_client_side_availability: ClientSideAvailability {
                using_mobile_key: self.using_mobile_key,
                using_environment_id: self.using_environment_id,
            },
            naming_convention,
            creation_date: self.creation_date,
        })
    }
}

fn filtered_projects(q: &ProjectQuery) -> projects::BoxedQuery<'_, Backend> {
    let mut query = projects::table.into_boxed();
    if let Some(text) = &q.query {
        query = query.filter(projects::search.like(search_pattern(text)).escape('\\'));
    }
    query = with_all_tags!(query, &q.tags, projects::id, project_tags.project_id);
    if !q.keys.is_empty() {
        query = query.filter(projects::key.eq_any(&q.keys));
    }
    query
}

impl SqlRepository<'_> {
    /// Makes the stored tags of `project` exactly `project.tags`.
    fn replace_project_tags(&mut self, project: &Project) -> StoreResult<()> {
        replace_tags!(
            self.conn,
            project_tags,
            [project_id = project.id.as_str()],
            project.tags
        );
        Ok(())
    }

    fn project_tags_of(&mut self, ids: &[String]) -> StoreResult<BTreeMap<String, Vec<String>>> {
        let conn = &mut *self.conn;
        let rows = chunked(ids, |ids| {
            load_per_engine!(
                conn,
                project_tags::table
                    .filter(project_tags::project_id.eq_any(ids))
                    .order((project_tags::project_id, project_tags::tag))
            )
        })?;
        Ok(group_tags(rows))
    }
}

impl ProjectRepository for SqlRepository<'_> {
    fn insert_project(&mut self, project: &Project) -> StoreResult<()> {
        diesel::insert_into(projects::table)
            .values(ProjectRow::from_project(project))
            .execute(self.conn)
            .store()?;
        self.replace_project_tags(project)
    }

    fn get_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Project>> {
        let Some(row) = projects::table
            .filter(projects::key.eq(key.as_str()))
            .select(ProjectRow::as_select())
            .first(self.conn)
            .optional()
            .store()?
        else {
            return Ok(None);
        };
        self.with_tags(row).map(Some)
    }

    fn lock_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Locked<Project>>> {
        Ok(self
            .held_project(key, Hold::Alone)?
            .map(Locked::assume_locked))
    }

    fn share_project(&mut self, key: &ProjectKey) -> StoreResult<Option<Project>> {
        self.held_project(key, Hold::Shared)
    }

    fn list_projects(&mut self, q: &ProjectQuery) -> StoreResult<Listed<Project>> {
        let total: i64 = filtered_projects(q).count().get_result(self.conn).store()?;
        let query = filtered_projects(q);
        let query = match (q.sort.field, q.sort.direction) {
            (ProjectSortField::Name, direction) => {
                sorted!(query, direction, projects::name, projects::id)
            }
            (ProjectSortField::CreatedOn, direction) => {
                sorted!(query, direction, projects::creation_date, projects::id)
            }
        };
        let rows = load_page!(self.conn, query, q.page, ProjectRow);
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let mut tags = self.project_tags_of(&ids)?;
        let projects = rows
            .into_iter()
            .map(|row| {
                let t = tags.remove(&row.id).unwrap_or_default();
                row.into_project(t)
            })
            .collect::<StoreResult<_>>()?;
        Ok(Listed::new(projects, count(total)))
    }

    fn update_project(&mut self, project: &Locked<Project>) -> StoreResult<()> {
        diesel::update(projects::table.find(project.id.as_str()))
            .set(ProjectRow::from_project(project))
            .execute(self.conn)
            .store()?;
        self.replace_project_tags(project)
    }

    fn delete_project(&mut self, project: &Locked<Project>) -> StoreResult<()> {
        diesel::delete(projects::table.find(project.id.as_str()))
            .execute(self.conn)
            .store()?;
        Ok(())
    }
}

/// How a project is held until the transaction ends.
///
/// On PostgreSQL the row lock alone would not be fair: a new `FOR SHARE` joins those held even
/// while a `FOR NO KEY UPDATE` waits, so a stream of overlapping creations would keep a change
/// to the project out for as long as it lasts. Both holds therefore first pass a gate, an
/// advisory lock on the project's key (shared or exclusive), whose queue is fair: a share asked
/// for while an exclusive one waits queues behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// By this transaction alone (`FOR NO KEY UPDATE`, behind the exclusive gate).
    Alone,
    /// With others that share it (`FOR SHARE`, behind the shared gate).
    Shared,
}

/// The advisory lock class of the project gate (see [`Hold`]), taken before the row lock; the
/// other key is the hash of the project's key (two projects that share a hash only wait for each
/// other more).
const PROJECT_GATE: i32 = 0x5f1a;

statement!(
    /// Passes the project gate alone (see [`Hold`]).
    GateAlone = "SELECT pg_advisory_xact_lock(?::integer, hashtext(?))"
);

statement!(
    /// Passes the project gate with others (see [`Hold`]).
    GateShared = "SELECT pg_advisory_xact_lock_shared(?::integer, hashtext(?))"
);

impl SqlRepository<'_> {
    /// The project `key`, held as `hold` says (SQLite's write transactions run one at a time:
    /// any hold is alone there).
    fn held_project(&mut self, key: &ProjectKey, hold: Hold) -> StoreResult<Option<Project>> {
        // The row is locked and read in one statement: PostgreSQL returns a row locked after
        // waiting in its latest committed version (it is one table: nothing joined is read from
        // the older snapshot). The tags are read after the lock.
        let query = projects::table.filter(projects::key.eq(key.as_str()));
        if let crate::DbConnection::Pg(conn) = &mut *self.conn {
            let binds = vec![Bind::Integer(PROJECT_GATE), Bind::Text(key.as_str())];
            match hold {
                Hold::Alone => Fixed::<GateAlone>::new(binds).execute(conn),
                Hold::Shared => Fixed::<GateShared>::new(binds).execute(conn),
            }
            .store()?;
        }
        let row: Option<ProjectRow> = match (&mut *self.conn, hold) {
            (crate::DbConnection::Pg(conn), Hold::Alone) => query
                .select(ProjectRow::as_select())
                .for_no_key_update()
                .first(conn)
                .optional(),
            (crate::DbConnection::Pg(conn), Hold::Shared) => query
                .select(ProjectRow::as_select())
                .for_share()
                .first(conn)
                .optional(),
            (crate::DbConnection::Sqlite(conn), _) => {
                query.select(ProjectRow::as_select()).first(conn).optional()
            }
        }
        .store()?;
        match row {
            Some(row) => self.with_tags(row).map(Some),
            None => Ok(None),
        }
    }

    /// The project of `row`, with its tags.
    fn with_tags(&mut self, row: ProjectRow) -> StoreResult<Project> {
        let tags = self
            .project_tags_of(std::slice::from_ref(&row.id))?
            .remove(&row.id)
            .unwrap_or_default();
        row.into_project(tags)
    }
}
