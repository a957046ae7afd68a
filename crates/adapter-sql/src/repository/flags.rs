//! [`FlagRepository`] on diesel.

use std::collections::{BTreeMap, HashMap};

use diesel::prelude::*;
use domain::flag::{Defaults, Flag, FlagConfig, FlagFacts, PrerequisiteEdge};
use domain::id::ProjectId;
use domain::key::{EnvironmentKey, FlagKey, ProjectKey};
use domain::query::{Direction, FlagQuery, FlagSortField, FlagState};
use domain::segment::Segment;
use ports::{
    FlagDefaults, FlagDependent, FlagEnvironmentFacts, FlagRepository, KeyedFlagConfig, Listed,
    Locked, StoreResult,
};

use crate::schema::{
    environments, flag_configs, flag_prerequisites, flag_segment_refs, flag_tags, flags, projects,
};

use super::fixed::{statement, Bind, Fixed};
use super::query::*;
use super::SqlRepository;
use crate::stored;
use crate::stored::flag::{config_json, read_config};
use crate::DbConnection;

statement!(
    /// Flags' rows (every column but their keys) and the configurations of theirs that changed,
    /// rewritten in one round trip (on PostgreSQL; see `fixed`): one flag, or those of a batch of
    /// changes; each column of the rows, then of the configurations, as an array. Planned each
    /// time: a plan kept from when the project was small scans all its flags.
    planned each time UpdateFlagRowsAndConfigs = "WITH flag_rows AS (UPDATE flags SET name = r.name, \
        search = r.search, version = r.version, creation_date = r.creation_date, \
        archived = r.archived, deprecated = r.deprecated, temporary = r.temporary, \
        maintainer_id = r.maintainer_id, default_on = r.default_on, \
        default_off = r.default_off, settings = r.settings \
        FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::boolean[], \
        ?::boolean[], ?::boolean[], ?::text[], ?::integer[], ?::integer[], ?::text[]) \
        AS r (key, name, search, version, creation_date, archived, deprecated, temporary, \
        maintainer_id, default_on, default_off, settings) \
        WHERE flags.project_id = ? AND flags.key = r.key) \
        UPDATE flag_configs SET config = changed.config \
        FROM unnest(?::text[], ?::text[], ?::text[]) AS changed (flag_key, environment_key, config) \
        WHERE flag_configs.project_id = ? AND flag_configs.flag_key = changed.flag_key \
        AND flag_configs.environment_key = changed.environment_key"
);

/// Flag rows, column by column (the arrays [`UpdateFlagRowsAndConfigs`] binds), and the
/// configurations that changed.
#[derive(Default)]
struct FlagColumns {
    keys: Vec<String>,
    names: Vec<String>,
    searches: Vec<String>,
    versions: Vec<i64>,
    creation_dates: Vec<i64>,
    archived: Vec<bool>,
    deprecated: Vec<bool>,
    temporary: Vec<bool>,
    maintainer_ids: Vec<Option<String>>,
    defaults_on: Vec<i32>,
    defaults_off: Vec<i32>,
    settings: Vec<String>,
    config_flag_keys: Vec<String>,
    config_environment_keys: Vec<String>,
    configs: Vec<String>,
}

impl FlagColumns {
    fn push(&mut self, row: FlagRow) {
        self.keys.push(row.key);
        self.names.push(row.name);
        self.searches.push(row.search);
        self.versions.push(row.version);
        self.creation_dates.push(row.creation_date);
        self.archived.push(row.archived);
        self.deprecated.push(row.deprecated);
        self.temporary.push(row.temporary);
        self.maintainer_ids.push(row.maintainer_id);
        self.defaults_on.push(row.default_on);
        self.defaults_off.push(row.default_off);
        self.settings.push(row.settings);
    }
}

/// The configurations of `flag` that differ from `previous`'s.
fn changed_configs<'a>(flag: &'a Flag, previous: &Flag) -> Vec<(&'a String, &'a FlagConfig)> {
    flag.environments
        .iter()
        .filter(|(env_key, config)| previous.environments.get(*env_key) != Some(*config))
        .collect()
}

/// A flag joined with one of its configurations: environment key, environment name, config JSON
/// (all `None` for a flag of a project without environments).
type FlagWithConfigRow = (FlagRow, Option<String>, Option<String>, Option<String>);

/// The flags of project `$project_key` whose key matches `$key_filter`, with their
/// configurations and those environments' names: one row per configuration (`flags_of_rows`
/// reads them back), in one statement.
macro_rules! flags_with_configs {
    ($project_key:expr, $key_filter:expr) => {
        flags::table
            .inner_join(projects::table.on(projects::id.eq(flags::project_id)))
            .left_join(
                flag_configs::table.on(flag_configs::project_id
                    .eq(flags::project_id)
                    .and(flag_configs::flag_key.eq(flags::key))),
            )
            .left_join(
                environments::table.on(environments::project_id
                    .nullable()
                    .eq(flag_configs::project_id.nullable())
                    .and(
                        environments::key
                            .nullable()
                            .eq(flag_configs::environment_key.nullable()),
                    )),
            )
            .filter(projects::key.eq($project_key))
            .filter($key_filter)
            .select((
                FlagRow::as_select(),
                flag_configs::environment_key.nullable(),
                environments::name.nullable(),
                flag_configs::config.nullable(),
            ))
    };
}

/// The `(project_id, key)` of the flags of project `$project_key` whose keys are among `$keys`,
/// in key order (to lock them in that order).
macro_rules! flags_by_keys {
    ($project_key:expr, $keys:expr) => {
        flags::table
            .filter(
                flags::project_id.eq_any(
                    projects::table
                        .filter(projects::key.eq($project_key.as_str()))
                        .select(projects::id),
                ),
            )
            .filter(flags::key.eq_any($keys))
            .order(flags::key.asc())
            .select((flags::project_id, flags::key))
    };
}

mod parts;
mod rows;
use parts::ConfigReferences;
use rows::{FlagConfigRow, FlagRow};

/// The flags of `flags_with_configs!` rows, which hold each flag's rows together (one flag, or
/// ordered by key), in the rows' order.
fn flags_of_rows(rows: Vec<FlagWithConfigRow>) -> StoreResult<Vec<Flag>> {
    let mut flags: Vec<Flag> = Vec::new();
    for (row, env_key, env_name, config) in rows {
        if flags.last().is_none_or(|flag| flag.key.as_str() != row.key) {
            flags.push(row.into_flag()?);
        }
        let Some(flag) = flags.last_mut() else {
            continue;
        };
        if let (Some(env_key), Some(env_name), Some(config)) = (env_key, env_name, config) {
            flag.environments
                .insert(env_key, read_config(&config, env_name)?);
        }
    }
    Ok(flags)
}

fn filtered_flags<'a>(project_id: &'a str, q: &'a FlagQuery) -> flags::BoxedQuery<'a, Backend> {
    let mut query = flags::table
        .filter(flags::project_id.eq(project_id))
        .into_boxed();
    query = match q.state {
        None => query.filter(flags::archived.eq(false)),
        Some(FlagState::Live) => query
            .filter(flags::archived.eq(false))
            .filter(flags::deprecated.eq(false)),
        Some(FlagState::Deprecated) => query
            .filter(flags::archived.eq(false))
            .filter(flags::deprecated.eq(true)),
        Some(FlagState::Archived) => query.filter(flags::archived.eq(true)),
    };
    if let Some(temporary) = q.temporary {
        query = query.filter(flags::temporary.eq(temporary));
    }
    if let Some(maintainer) = &q.maintainer_id {
        query = query.filter(flags::maintainer_id.eq(maintainer));
    }
    if let Some(text) = &q.query {
        query = query.filter(flags::search.like(search_pattern(text)).escape('\\'));
    }
    query = with_all_tags!(
        query,
        &q.tags,
        flags::key,
        flag_tags.flag_key,
        project_id = project_id
    );
    query
}

impl FlagRepository for SqlRepository<'_> {
    fn insert_flag(&mut self, project_id: &ProjectId, flag: &Flag) -> StoreResult<()> {
        diesel::insert_into(flags::table)
            .values(FlagRow::from_flag(project_id, flag)?)
            .execute(self.conn)
            .store()?;
        let rows = self.insert_new_flag_parts(project_id, flag)?;
        insert_rows!(self.conn, flag_configs, rows);
        Ok(())
    }

    fn insert_new_flags(
        &mut self,
        project_id: &ProjectId,
        flags: &[&Flag],
    ) -> StoreResult<Vec<bool>> {
        // The first flag of each key is offered; a later one of the same key is not stored.
        let mut offered: Vec<usize> = Vec::with_capacity(flags.len());
        for (i, flag) in flags.iter().enumerate() {
            if !offered.iter().any(|&o| flags[o].key == flag.key) {
                offered.push(i);
            }
        }
        // Inserted in key order: an insert whose key another transaction inserted but has not
        // committed waits for it, so two batches of the same keys (two replicas) must wait in
        // the same order, or they deadlock.
        let mut by_key = offered.clone();
        by_key.sort_by(|&a, &b| flags[a].key.as_str().cmp(flags[b].key.as_str()));
        let rows = by_key
            .iter()
            .map(|&i| FlagRow::from_flag(project_id, flags[i]))
            .collect::<StoreResult<Vec<_>>>()?;
        // A key taken meanwhile is skipped, not an error: the transaction goes on for the others
        // (a failed statement would end it on PostgreSQL).
        let mut inserted: Vec<String> = Vec::with_capacity(rows.len());
        match &mut *self.conn {
            DbConnection::Pg(conn) => {
                for chunk in rows.chunks(ROWS_PER_STATEMENT) {
                    inserted.extend(
                        diesel::insert_into(flags::table)
                            .values(chunk)
                            .on_conflict_do_nothing()
                            .returning(flags::key)
                            .get_results::<String>(conn)
                            .store()?,
                    );
                }
            }
            // No round trips to save: one by one, each telling whether it stored a row.
            DbConnection::Sqlite(conn) => {
                for row in &rows {
                    let stored = diesel::insert_into(flags::table)
                        .values(row)
                        .on_conflict_do_nothing()
                        .execute(conn)
                        .store()?;
                    if stored == 1 {
                        inserted.push(row.key.clone());
                    }
                }
            }
        }
        let stored: Vec<bool> = flags
            .iter()
            .enumerate()
            .map(|(i, flag)| {
                offered.contains(&i) && inserted.iter().any(|key| key == flag.key.as_str())
            })
            .collect();
        let mut configs = Vec::new();
        for (flag, _) in flags.iter().zip(&stored).filter(|(_, stored)| **stored) {
            configs.extend(self.insert_new_flag_parts(project_id, flag)?);
        }
        insert_rows!(self.conn, flag_configs, configs);
        Ok(stored)
    }

    fn get_flag(&mut self, project_id: &ProjectId, key: &FlagKey) -> StoreResult<Option<Flag>> {
        let Some(row) = flags::table
            .filter(flags::project_id.eq(project_id.as_str()))
            .filter(flags::key.eq(key.as_str()))
            .select(FlagRow::as_select())
            .first(self.conn)
            .optional()
            .store()?
        else {
            return Ok(None);
        };
        Ok(self.finish_flags(project_id, vec![row], None)?.pop())
    }

    fn lock_flag(
        &mut self,
        project_id: &ProjectId,
        key: &FlagKey,
    ) -> StoreResult<Option<Locked<Flag>>> {
        let locked = lock_rows!(
            self.conn,
            flags::table
                .filter(flags::project_id.eq(project_id.as_str()))
                .filter(flags::key.eq(key.as_str()))
                .select(flags::key)
        );
        held(&locked, || self.get_flag(project_id, key))
    }

    fn lock_flags(&mut self, project_id: &ProjectId) -> StoreResult<Vec<Locked<Flag>>> {
        let locked = lock_rows!(
            self.conn,
            flags::table
                .filter(flags::project_id.eq(project_id.as_str()))
                .order(flags::key.asc())
                .select(flags::key)
        );
        if locked.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<FlagRow> = flags::table
            .filter(flags::project_id.eq(project_id.as_str()))
            .order(flags::key.asc())
            .select(FlagRow::as_select())
            .load(self.conn)
            .store()?;
        Ok(self
            .finish_flags(project_id, rows, None)?
            .into_iter()
            .map(Locked::assume_locked)
            .collect())
    }

    fn find_flag(&mut self, project_key: &ProjectKey, key: &FlagKey) -> StoreResult<Option<Flag>> {
        let rows: Vec<FlagWithConfigRow> =
            flags_with_configs!(project_key.as_str(), flags::key.eq(key.as_str()))
                .load(self.conn)
                .store()?;
        Ok(flags_of_rows(rows)?.pop())
    }

    fn lock_flag_by_keys(
        &mut self,
        project_key: &ProjectKey,
        key: &FlagKey,
    ) -> StoreResult<Option<(ProjectId, Locked<Flag>)>> {
        // Two statements: the lock, then the read, which (at read committed) sees the flag as
        // the last writer before us committed it. One locking join would read the
        // configurations from the snapshot taken before waiting for the lock.
        let locked = lock_rows!(
            self.conn,
            flags::table
                .filter(
                    flags::project_id.eq_any(
                        projects::table
                            .filter(projects::key.eq(project_key.as_str()))
                            .select(projects::id),
                    ),
                )
                .filter(flags::key.eq(key.as_str()))
                .select(flags::project_id)
        );
        let Some(project_id) = locked.into_iter().next() else {
            return Ok(None);
        };
        Ok(self.find_flag(project_key, key)?.map(|flag| {
            (
                ProjectId::from_stored(project_id),
                Locked::assume_locked(flag),
            )
        }))
    }

    fn lock_flags_by_keys(
        &mut self,
        project_key: &ProjectKey,
        keys: &[FlagKey],
    ) -> StoreResult<Option<(ProjectId, Vec<Locked<Flag>>)>> {
        if let [key] = keys {
            return Ok(self
                .lock_flag_by_keys(project_key, key)?
                .map(|(id, flag)| (id, vec![flag])));
        }
        let keys: Vec<&str> = keys.iter().map(FlagKey::as_str).collect();
        // As for one flag: the locks (in key order), then the read, which sees each flag as the
        // last writer before us committed it. Only the flags locked are read: one created since
        // the lock's snapshot exists for the read, but is not held.
        let locked: Vec<(String, String)> = match &mut *self.conn {
            DbConnection::Pg(conn) => flags_by_keys!(project_key, &keys)
                .for_no_key_update()
                .load(conn),
            DbConnection::Sqlite(conn) => flags_by_keys!(project_key, &keys).load(conn),
        }
        .store()?;
        let Some((project_id, _)) = locked.first() else {
            return Ok(None);
        };
        let project_id = ProjectId::from_stored(project_id.clone());
        let locked: Vec<String> = locked.into_iter().map(|(_, key)| key).collect();
        let rows: Vec<FlagWithConfigRow> = load_per_engine!(
            self.conn,
            flags_with_configs!(project_key.as_str(), flags::key.eq_any(&locked))
                .order(flags::key.asc())
        )?;
        Ok(Some((
            project_id,
            flags_of_rows(rows)?
                .into_iter()
                .map(Locked::assume_locked)
                .collect(),
        )))
    }

    fn list_flags(
        &mut self,
        project_id: &ProjectId,
        q: &FlagQuery,
        environments: &[String],
    ) -> StoreResult<Listed<Flag>> {
        let total: i64 = filtered_flags(project_id, q)
            .count()
            .get_result(self.conn)
            .store()?;
        let query = filtered_flags(project_id, q);
        let query = match (q.sort.field, q.sort.direction) {
            (FlagSortField::CreationDate, direction) => {
                sorted!(query, direction, flags::creation_date, flags::key)
            }
            (FlagSortField::Key, Direction::Ascending) => query.order(flags::key.asc()),
            (FlagSortField::Key, Direction::Descending) => query.order(flags::key.desc()),
            (FlagSortField::Name, direction) => sorted!(query, direction, flags::name, flags::key),
        };
        let query = match q.page {
            Some(page) => query
                .limit(i64::from(page.limit))
                .offset(to_i64(page.offset)),
            None => query,
        };
        // The page's keys first, from the index alone (a deep offset steps over index entries,
        // not over flags' stored documents), then those flags' rows. The rows are read with the
        // same filters: on PostgreSQL the two statements see two snapshots, and a flag changed
        // in between (archived, say) must not be listed as matching what it no longer matches.
        let keys: Vec<String> = query.select(flags::key).load(self.conn).store()?;
        let mut rows: Vec<FlagRow> = chunked(&keys, |keys| {
            filtered_flags(project_id, q)
                .filter(flags::key.eq_any(keys))
                .select(FlagRow::as_select())
                .load(self.conn)
                .store()
        })?;
        let order: HashMap<&str, usize> = keys
            .iter()
            .enumerate()
            .map(|(i, key)| (key.as_str(), i))
            .collect();
        rows.sort_by_key(|row| order.get(row.key.as_str()).copied());
        let flags = self.finish_flags(project_id, rows, Some(environments))?;
        Ok(Listed::new(flags, count(total)))
    }

    fn update_flag(
        &mut self,
        project_id: &ProjectId,
        flag: &Locked<Flag>,
        previous: &Flag,
    ) -> StoreResult<()> {
        let DbConnection::Sqlite(conn) = &mut *self.conn else {
            // PostgreSQL: the row and the changed configurations in one statement.
            return self.update_flags(project_id, &[(flag, previous)]);
        };
        let flag: &Flag = flag;
        diesel::update(
            flags::table
                .filter(flags::project_id.eq(project_id.as_str()))
                .filter(flags::key.eq(flag.key.as_str())),
        )
        .set(&FlagRow::from_flag(project_id, flag)?)
        .execute(conn)
        .store()?;
        // Only what changed is written: a toggle rewrites one configuration, not the flag's
        // tags and references too.
        let changed = changed_configs(flag, previous);
        for (env_key, config) in &changed {
            let json = config_json(config)?;
            diesel::update(
                flag_configs::table
                    .filter(flag_configs::project_id.eq(project_id.as_str()))
                    .filter(flag_configs::flag_key.eq(flag.key.as_str()))
                    .filter(flag_configs::environment_key.eq(*env_key)),
            )
            .set(flag_configs::config.eq(&json))
            .execute(conn)
            .store()?;
        }
        self.update_flag_tags_and_references(project_id, flag, previous, &changed)
    }

    fn update_flags(
        &mut self,
        project_id: &ProjectId,
        flags: &[(&Locked<Flag>, &Flag)],
    ) -> StoreResult<()> {
        let DbConnection::Pg(conn) = &mut *self.conn else {
            // SQLite: no round trips to save.
            for (flag, previous) in flags {
                self.update_flag(project_id, flag, previous)?;
            }
            return Ok(());
        };
        // Only what changed is written: a toggle rewrites one configuration, not the flag's
        // tags and references too.
        let mut columns = FlagColumns::default();
        for (flag, previous) in flags {
            columns.push(FlagRow::from_flag(project_id, flag)?);
            for (env_key, config) in changed_configs(flag, previous) {
                columns.config_flag_keys.push(flag.key.to_string());
                columns.config_environment_keys.push(env_key.clone());
                columns.configs.push(config_json(config)?);
            }
        }
        Fixed::<UpdateFlagRowsAndConfigs>::new(vec![
            Bind::TextArray(&columns.keys),
            Bind::TextArray(&columns.names),
            Bind::TextArray(&columns.searches),
            Bind::BigIntArray(&columns.versions),
            Bind::BigIntArray(&columns.creation_dates),
            Bind::BoolArray(&columns.archived),
            Bind::BoolArray(&columns.deprecated),
            Bind::BoolArray(&columns.temporary),
            Bind::NullableTextArray(&columns.maintainer_ids),
            Bind::IntegerArray(&columns.defaults_on),
            Bind::IntegerArray(&columns.defaults_off),
            Bind::TextArray(&columns.settings),
            Bind::Text(project_id.as_str()),
            Bind::TextArray(&columns.config_flag_keys),
            Bind::TextArray(&columns.config_environment_keys),
            Bind::TextArray(&columns.configs),
            Bind::Text(project_id.as_str()),
        ])
        .execute(conn)
        .store()?;
        for (flag, previous) in flags {
            let changed = changed_configs(flag, previous);
            self.update_flag_tags_and_references(project_id, flag, previous, &changed)?;
        }
        Ok(())
    }

    fn delete_flag(&mut self, project_id: &ProjectId, flag: &Locked<Flag>) -> StoreResult<()> {
        diesel::delete(
            flags::table
                .filter(flags::project_id.eq(project_id.as_str()))
                .filter(flags::key.eq(flag.key.as_str())),
        )
        .execute(self.conn)
        .store()?;
        Ok(())
    }

    fn flag_status_facts(
        &mut self,
        project_id: &ProjectId,
        flag: Option<&FlagKey>,
        environments: &[String],
    ) -> StoreResult<Vec<FlagEnvironmentFacts>> {
        let mut query = flags::table
            .inner_join(
                flag_configs::table.on(flag_configs::project_id
                    .eq(flags::project_id)
                    .and(flag_configs::flag_key.eq(flags::key))),
            )
            .filter(flags::project_id.eq(project_id.as_str()))
            .into_boxed::<Backend>();
        if let Some(flag) = flag {
            query = query.filter(flags::key.eq(flag.as_str()));
        }
        if !environments.is_empty() {
            query = query.filter(flag_configs::environment_key.eq_any(environments));
        }
        let rows: Vec<(String, i64, bool, String, String)> = query
            .order((flags::key, flag_configs::environment_key))
            .select((
                flags::key,
                flags::creation_date,
                flags::archived,
                flag_configs::environment_key,
                flag_configs::config,
            ))
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|(key, creation_date, archived, environment, config)| {
                let facts = stored::flag::read_status_facts(&config, creation_date, archived)?;
                Ok(FlagEnvironmentFacts {
                    flag_key: key,
                    environment_key: environment,
                    facts,
                })
            })
            .collect()
    }

    fn flag_facts(&mut self, project_id: &ProjectId) -> StoreResult<Vec<FlagFacts>> {
        let rows: Vec<(String, bool, String)> = flags::table
            .filter(flags::project_id.eq(project_id.as_str()))
            .select((flags::key, flags::archived, flags::settings))
            .load(self.conn)
            .store()?;
        let edges: Vec<(String, String, String, i32)> = flag_prerequisites::table
            .filter(flag_prerequisites::project_id.eq(project_id.as_str()))
            .select((
                flag_prerequisites::flag_key,
                flag_prerequisites::environment_key,
                flag_prerequisites::prerequisite_key,
                flag_prerequisites::variation,
            ))
            .load(self.conn)
            .store()?;
        let mut by_flag: BTreeMap<String, Vec<PrerequisiteEdge>> = BTreeMap::new();
        for (flag_key, environment, key, variation) in edges {
            let variation = usize::try_from(variation).map_err(|e| corrupt("prerequisite", e))?;
            by_flag.entry(flag_key).or_default().push(PrerequisiteEdge {
                environment,
                key,
                variation,
            });
        }
        rows.into_iter()
            .map(|(key, archived, settings)| {
                Ok(FlagFacts {
                    prerequisites: by_flag.remove(&key).unwrap_or_default(),
                    variation_ids: stored::flag::read_variation_ids(&settings)?,
                    archived,
                    key,
                })
            })
            .collect()
    }

    fn flag_dependents(
        &mut self,
        project_id: &ProjectId,
        key: &FlagKey,
    ) -> StoreResult<Vec<FlagDependent>> {
        let rows: Vec<(String, String, String)> = flag_prerequisites::table
            .inner_join(
                flags::table.on(flags::project_id
                    .eq(flag_prerequisites::project_id)
                    .and(flags::key.eq(flag_prerequisites::flag_key))),
            )
            .filter(flag_prerequisites::project_id.eq(project_id.as_str()))
            .filter(flag_prerequisites::prerequisite_key.eq(key.as_str()))
            .order((
                flag_prerequisites::flag_key,
                flag_prerequisites::environment_key,
            ))
            .select((
                flag_prerequisites::flag_key,
                flags::name,
                flag_prerequisites::environment_key,
            ))
            .load(self.conn)
            .store()?;
        Ok(rows
            .into_iter()
            .map(|(flag_key, flag_name, environment_key)| FlagDependent {
                flag_key,
                flag_name,
                environment_key,
            })
            .collect())
    }

    fn flag_defaults(&mut self, project_id: &ProjectId) -> StoreResult<Vec<FlagDefaults>> {
        let rows: Vec<(String, i32, i32)> = flags::table
            .filter(flags::project_id.eq(project_id.as_str()))
            .select((flags::key, flags::default_on, flags::default_off))
            .load(self.conn)
            .store()?;
        rows.into_iter()
            .map(|(key, on, off)| {
                let index = |i: i32| usize::try_from(i).map_err(|e| corrupt("flag defaults", e));
                Ok(FlagDefaults {
                    flag_key: key,
                    defaults: Defaults {
                        on_variation: index(on)?,
                        off_variation: index(off)?,
                    },
                })
            })
            .collect()
    }

    fn insert_flag_configs(
        &mut self,
        project_id: &ProjectId,
        environment_key: &EnvironmentKey,
        configs: &[KeyedFlagConfig],
    ) -> StoreResult<()> {
        let rows = configs
            .iter()
            .map(|KeyedFlagConfig { flag_key, config }| {
                Ok(FlagConfigRow {
                    project_id: project_id.to_string(),
                    flag_key: flag_key.clone(),
                    environment_key: environment_key.to_string(),
                    config: config_json(config)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        insert_rows!(self.conn, flag_configs, rows);
        let mut references = ConfigReferences::default();
        for KeyedFlagConfig { flag_key, config } in configs {
            references.add(project_id, flag_key, environment_key, config);
        }
        self.insert_references(references)
    }
}
