//! The parts of a stored flag beside its row: its configurations, tags, and the references of
//! its configurations (prerequisites, segments) that other flags' checks read without reading
//! configurations.

use super::*;

/// A prerequisite edge of a configuration, as `flag_prerequisites` holds it (so that a flag
/// others depend on is found without reading configurations).
#[derive(Insertable)]
#[diesel(table_name = flag_prerequisites)]
struct PrerequisiteRow<'a> {
    project_id: &'a str,
    flag_key: &'a str,
    environment_key: &'a str,
    prerequisite_key: &'a str,
    variation: i32,
}

/// A segment named by a configuration's rules, as `flag_segment_refs` holds it (so that a
/// segment in use is found without reading configurations).
#[derive(Insertable)]
#[diesel(table_name = flag_segment_refs)]
struct SegmentRefRow<'a> {
    project_id: &'a str,
    flag_key: &'a str,
    environment_key: &'a str,
    segment_key: String,
}

/// What configurations refer to, as rows to insert.
#[derive(Default)]
pub(super) struct ConfigReferences<'a> {
    prerequisites: Vec<PrerequisiteRow<'a>>,
    segments: Vec<SegmentRefRow<'a>>,
}

impl<'a> ConfigReferences<'a> {
    /// What all of `flag`'s configurations refer to.
    pub(super) fn of_flag(project_id: &'a str, flag: &'a Flag) -> Self {
        let mut references = Self::default();
        for (environment_key, config) in &flag.environments {
            references.add(project_id, &flag.key, environment_key, config);
        }
        references
    }

    /// Adds what the configuration of flag `flag_key` in `environment_key` refers to.
    pub(super) fn add(
        &mut self,
        project_id: &'a str,
        flag_key: &'a str,
        environment_key: &'a str,
        config: &'a FlagConfig,
    ) {
        self.prerequisites
            .extend(config.prerequisites.iter().map(|p| PrerequisiteRow {
                project_id,
                flag_key,
                environment_key,
                prerequisite_key: &p.key,
                variation: index_i32(p.variation),
            }));
        self.segments.extend(
            Segment::referenced_by(config.rules.iter().flat_map(|r| &r.clauses))
                .into_iter()
                .map(|segment_key| SegmentRefRow {
                    project_id,
                    flag_key,
                    environment_key,
                    segment_key,
                }),
        );
    }
}

/// Whether two configurations refer to the same prerequisites and segments.
fn same_references(a: &FlagConfig, b: &FlagConfig) -> bool {
    let segments = |c: &FlagConfig| Segment::referenced_by(c.rules.iter().flat_map(|r| &r.clauses));
    a.prerequisites == b.prerequisites && segments(a) == segments(b)
}

impl SqlRepository<'_> {
    /// Stores what configurations refer to: their prerequisite edges, then the segments their
    /// rules name (one multi-row insert per table).
    pub(super) fn insert_references(
        &mut self,
        references: ConfigReferences<'_>,
    ) -> StoreResult<()> {
        insert_rows!(self.conn, flag_prerequisites, references.prerequisites);
        insert_rows!(self.conn, flag_segment_refs, references.segments);
        Ok(())
    }

    /// Rewrites what `flag`'s configurations (all environments) refer to: its prerequisite
    /// edges, then the segments its rules name.
    pub(super) fn replace_flag_references(
        &mut self,
        project_id: &str,
        flag: &Flag,
    ) -> StoreResult<()> {
        let references = ConfigReferences::of_flag(project_id, flag);
        diesel::delete(
            flag_prerequisites::table
                .filter(flag_prerequisites::project_id.eq(project_id))
                .filter(flag_prerequisites::flag_key.eq(flag.key.as_str())),
        )
        .execute(self.conn)
        .store()?;
        insert_rows!(self.conn, flag_prerequisites, references.prerequisites);
        diesel::delete(
            flag_segment_refs::table
                .filter(flag_segment_refs::project_id.eq(project_id))
                .filter(flag_segment_refs::flag_key.eq(flag.key.as_str())),
        )
        .execute(self.conn)
        .store()?;
        insert_rows!(self.conn, flag_segment_refs, references.segments);
        Ok(())
    }

    /// Stores the tags and references of `flag`, whose row was just inserted, and returns the
    /// rows of its configurations, to insert with others.
    pub(super) fn insert_new_flag_parts(
        &mut self,
        project_id: &ProjectId,
        flag: &Flag,
    ) -> StoreResult<Vec<FlagConfigRow>> {
        // A new flag has no tags or references to replace: only inserts.
        insert_tags!(
            self.conn,
            flag_tags,
            [
                project_id = project_id.as_str(),
                flag_key = flag.key.as_str()
            ],
            flag.tags
        );
        self.insert_references(ConfigReferences::of_flag(project_id, flag))?;
        flag.environments
            .iter()
            .map(|(env_key, config)| {
                Ok(FlagConfigRow {
                    project_id: project_id.to_string(),
                    flag_key: flag.key.to_string(),
                    environment_key: env_key.clone(),
                    config: config_json(config)?,
                })
            })
            .collect()
    }

    /// The tags and references of `flag` rewritten, when they differ from `previous`'s
    /// (`changed`: its configurations that differ).
    pub(super) fn update_flag_tags_and_references(
        &mut self,
        project_id: &ProjectId,
        flag: &Flag,
        previous: &Flag,
        changed: &[(&String, &FlagConfig)],
    ) -> StoreResult<()> {
        if flag.tags != previous.tags {
            self.replace_flag_tags(project_id, flag)?;
        }
        let references_changed = changed.iter().any(|(env_key, config)| {
            previous
                .environments
                .get(*env_key)
                .is_none_or(|old| !same_references(old, config))
        });
        if references_changed {
            self.replace_flag_references(project_id, flag)?;
        }
        Ok(())
    }

    pub(super) fn replace_flag_tags(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        replace_tags!(
            self.conn,
            flag_tags,
            [project_id = project_id, flag_key = flag.key.as_str()],
            flag.tags
        );
        Ok(())
    }

    /// Configurations of `flag_keys` in `environment_keys` (all environments when `None`),
    /// with environment names, as `(flag key, environment key, configuration)`.
    pub(super) fn configs_of(
        &mut self,
        project_id: &str,
        flag_keys: &[String],
        environment_keys: Option<&[String]>,
    ) -> StoreResult<Vec<(String, String, FlagConfig)>> {
        let conn = &mut *self.conn;
        let rows: Vec<(String, String, String, String)> = chunked(flag_keys, |flag_keys| {
            let mut query = flag_configs::table
                .inner_join(
                    environments::table.on(environments::project_id
                        .eq(flag_configs::project_id)
                        .and(environments::key.eq(flag_configs::environment_key))),
                )
                .filter(flag_configs::project_id.eq(project_id))
                .filter(flag_configs::flag_key.eq_any(flag_keys))
                .select((
                    flag_configs::flag_key,
                    flag_configs::environment_key,
                    environments::name,
                    flag_configs::config,
                ))
                .into_boxed();
            if let Some(keys) = environment_keys {
                query = query.filter(flag_configs::environment_key.eq_any(keys));
            }
            query.load(conn).store()
        })?;
        rows.into_iter()
            .map(|(flag, env, env_name, config)| Ok((flag, env, read_config(&config, env_name)?)))
            .collect()
    }

    pub(super) fn finish_flags(
        &mut self,
        project_id: &str,
        rows: Vec<FlagRow>,
        environment_keys: Option<&[String]>,
    ) -> StoreResult<Vec<Flag>> {
        let keys: Vec<String> = rows.iter().map(|r| r.key.clone()).collect();
        let mut flags: Vec<Flag> = rows
            .into_iter()
            .map(FlagRow::into_flag)
            .collect::<StoreResult<_>>()?;
        let wants_configs = environment_keys.is_none_or(|keys| !keys.is_empty());
        if wants_configs && !keys.is_empty() {
            let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
            for (i, flag) in flags.iter().enumerate() {
                by_key.insert(flag.key.to_string(), i);
            }
            for (flag_key, env_key, config) in
                self.configs_of(project_id, &keys, environment_keys)?
            {
                if let Some(&i) = by_key.get(&flag_key) {
                    flags[i].environments.insert(env_key, config);
                }
            }
        }
        Ok(flags)
    }
}
