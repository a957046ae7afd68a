//! Flags, their per-environment configurations and what the stores keep in step with them
//! (prerequisite edges, the segments their rules name).

use std::cmp::Ordering;

use domain::flag::{Defaults, Flag, FlagConfig, FlagFacts, PrerequisiteEdge, StatusFacts};
use domain::query::{Direction, FlagQuery, FlagSortField, FlagState};
use domain::segment::Segment;
use ports::{KeyedFlagConfig, StoreResult};

use crate::{
    directed, duplicate, has_all_tags, matches_search, missing, rows, search_text, tag_rows, Tables,
};

fn flag_order(field: FlagSortField, direction: Direction, a: &Flag, b: &Flag) -> Ordering {
    let by_key = || a.key.cmp(&b.key);
    let ordering = match field {
        FlagSortField::CreationDate => a.creation_date.cmp(&b.creation_date).then_with(by_key),
        FlagSortField::Key => by_key(),
        FlagSortField::Name => a.name.cmp(&b.name).then_with(by_key),
    };
    directed(direction, ordering)
}

fn matches_state(flag: &Flag, state: Option<FlagState>) -> bool {
    match state {
        None => !flag.archived,
        Some(FlagState::Live) => !flag.archived && !flag.deprecated,
        Some(FlagState::Deprecated) => !flag.archived && flag.deprecated,
        Some(FlagState::Archived) => flag.archived,
    }
}

fn flag_id(project_id: &str, key: &str) -> (String, String) {
    (project_id.to_owned(), key.to_owned())
}

impl Tables {
    /// Whether the project has an environment `key`.
    fn has_environment(&self, project_id: &str, key: &str) -> bool {
        self.environment_row(project_id, key).is_some()
    }

    /// Stores the flag's own fields (no configurations), checking its tags as the tag table
    /// would.
    fn save_flag_row(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        tag_rows(&flag.tags, "flag_tags")?;
        let mut stored = flag.clone();
        stored.environments.clear();
        rows(&mut self.flags).insert(flag_id(project_id, &flag.key), stored);
        Ok(())
    }

    /// Adds the prerequisite edges and segment references of `flag_key`'s configuration in
    /// `environment_key`.
    fn add_references(
        &mut self,
        project_id: &str,
        flag_key: &str,
        environment_key: &str,
        config: &FlagConfig,
    ) -> StoreResult<()> {
        for prerequisite in &config.prerequisites {
            if !self.has_environment(project_id, environment_key) {
                return Err(missing("flag_prerequisites.environment_key"));
            }
            let edge = (
                project_id.to_owned(),
                flag_key.to_owned(),
                environment_key.to_owned(),
                prerequisite.key.clone(),
            );
            if rows(&mut self.prerequisites)
                .insert(edge, prerequisite.variation)
                .is_some()
            {
                return Err(duplicate("flag_prerequisites"));
            }
        }
        for segment in Segment::referenced_by(config.rules.iter().flat_map(|r| &r.clauses)) {
            let reference = (
                project_id.to_owned(),
                flag_key.to_owned(),
                environment_key.to_owned(),
                segment,
            );
            if !std::sync::Arc::make_mut(&mut self.segment_refs).insert(reference) {
                return Err(duplicate("flag_segment_refs"));
            }
        }
        Ok(())
    }

    /// Rewrites the prerequisite edges and segment references of `flag` from all its
    /// configurations.
    fn replace_references(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        let of_flag = |p: &String, f: &String| p == project_id && *f == flag.key;
        rows(&mut self.prerequisites).retain(|(p, f, _, _), _| !of_flag(p, f));
        std::sync::Arc::make_mut(&mut self.segment_refs).retain(|(p, f, _, _)| !of_flag(p, f));
        for (environment_key, config) in &flag.environments {
            self.add_references(project_id, &flag.key, environment_key, config)?;
        }
        Ok(())
    }

    /// Stores a configuration of an existing flag in an existing environment.
    fn insert_config(
        &mut self,
        project_id: &str,
        flag_key: &str,
        environment_key: &str,
        config: &FlagConfig,
    ) -> StoreResult<()> {
        if !self.flags.contains_key(&flag_id(project_id, flag_key)) {
            return Err(missing("flag_configs.flag_key"));
        }
        if !self.has_environment(project_id, environment_key) {
            return Err(missing("flag_configs.environment_key"));
        }
        let id = (
            project_id.to_owned(),
            flag_key.to_owned(),
            environment_key.to_owned(),
        );
        if rows(&mut self.flag_configs)
            .insert(id, config.clone())
            .is_some()
        {
            return Err(duplicate("flag_configs"));
        }
        Ok(())
    }

    pub(crate) fn insert_flag(&mut self, project_id: &str, flag: &Flag) -> StoreResult<()> {
        if self.flags.contains_key(&flag_id(project_id, &flag.key)) {
            return Err(duplicate("flags.project_id, flags.key"));
        }
        if !self.projects.contains_key(project_id) {
            return Err(missing("flags.project_id"));
        }
        self.save_flag_row(project_id, flag)?;
        self.replace_references(project_id, flag)?;
        for (environment_key, config) in &flag.environments {
            self.insert_config(project_id, &flag.key, environment_key, config)?;
        }
        Ok(())
    }

    /// The stored flag with its configurations in `environments` (all when `None`), each with
    /// its environment's current name.
    fn flag_as_read(
        &self,
        project_id: &str,
        stored: &Flag,
        environments: Option<&[String]>,
    ) -> Flag {
        let mut flag = stored.clone();
        for ((p, f, environment_key), config) in self.flag_configs.iter() {
            if p != project_id || *f != stored.key {
                continue;
            }
            if environments.is_some_and(|wanted| !wanted.contains(environment_key)) {
                continue;
            }
            let Some(environment) = self.environment_row(project_id, environment_key) else {
                continue;
            };
            let mut config = config.clone();
            config
                .environment_name
                .clone_from(&environment.environment.name);
            flag.environments.insert(environment_key.clone(), config);
        }
        flag
    }

    pub(crate) fn get_flag(&self, project_id: &str, key: &str) -> Option<Flag> {
        self.flags
            .get(&flag_id(project_id, key))
            .map(|stored| self.flag_as_read(project_id, stored, None))
    }

    /// Every flag of the project with all its configurations, by key.
    pub(crate) fn all_flags(&self, project_id: &str) -> Vec<Flag> {
        self.flags
            .iter()
            .filter(|((p, _), _)| p == project_id)
            .map(|(_, stored)| self.flag_as_read(project_id, stored, None))
            .collect()
    }

    pub(crate) fn find_flag(&self, project_key: &str, key: &str) -> Option<Flag> {
        let project = self.projects.values().find(|p| p.key == project_key)?;
        self.get_flag(&project.id, key)
    }

    pub(crate) fn list_flags(
        &self,
        project_id: &str,
        q: &FlagQuery,
        environments: &[String],
    ) -> (Vec<Flag>, u64) {
        let mut found: Vec<&Flag> = self
            .flags
            .iter()
            .filter(|((p, _), _)| p == project_id)
            .map(|(_, flag)| flag)
            .filter(|f| matches_state(f, q.state))
            .filter(|f| q.temporary.is_none_or(|temporary| f.temporary == temporary))
            .filter(|f| {
                q.maintainer_id
                    .as_ref()
                    .is_none_or(|m| f.maintainer_id.as_ref() == Some(m))
            })
            .filter(|f| {
                q.query
                    .as_ref()
                    .is_none_or(|text| matches_search(&search_text(&[&f.key, &f.name]), text))
            })
            .filter(|f| has_all_tags(&f.tags, &q.tags))
            .collect();
        found.sort_by(|a, b| flag_order(q.sort.field, q.sort.direction, a, b));
        let total = u64::try_from(found.len()).unwrap_or(u64::MAX);
        let page: Vec<&Flag> = match q.page {
            Some(page) => found
                .into_iter()
                .skip(usize::try_from(page.offset).unwrap_or(usize::MAX))
                .take(usize::try_from(page.limit).unwrap_or(usize::MAX))
                .collect(),
            None => found,
        };
        let flags = page
            .into_iter()
            .map(|stored| self.flag_as_read(project_id, stored, Some(environments)))
            .collect();
        (flags, total)
    }

    /// Saves the flag's own fields, its references from all its configurations, and the stored
    /// configurations of `changed_environments` (configurations not stored yet are not added).
    pub(crate) fn update_flag(
        &mut self,
        project_id: &str,
        flag: &Flag,
        changed_environments: &[String],
    ) -> StoreResult<()> {
        if !self.flags.contains_key(&flag_id(project_id, &flag.key)) {
            return Ok(());
        }
        self.save_flag_row(project_id, flag)?;
        self.replace_references(project_id, flag)?;
        for environment_key in changed_environments {
            let Some(config) = flag.environments.get(environment_key) else {
                continue;
            };
            let id = (
                project_id.to_owned(),
                flag.key.to_string(),
                environment_key.clone(),
            );
            if let Some(stored) = rows(&mut self.flag_configs).get_mut(&id) {
                *stored = config.clone();
            }
        }
        Ok(())
    }

    /// Deletes a flag and, as the schema cascades, its configurations and references.
    pub(crate) fn delete_flag(&mut self, project_id: &str, key: &str) {
        if rows(&mut self.flags)
            .remove(&flag_id(project_id, key))
            .is_none()
        {
            return;
        }
        let of_flag = |p: &String, f: &String| p == project_id && f == key;
        rows(&mut self.flag_configs).retain(|(p, f, _), _| !of_flag(p, f));
        rows(&mut self.prerequisites).retain(|(p, f, _, _), _| !of_flag(p, f));
        std::sync::Arc::make_mut(&mut self.segment_refs).retain(|(p, f, _, _)| !of_flag(p, f));
    }

    pub(crate) fn flag_facts(&self, project_id: &str) -> Vec<FlagFacts> {
        self.flags
            .iter()
            .filter(|((p, _), _)| p == project_id)
            .map(|((_, key), flag)| FlagFacts {
                key: key.clone(),
                variation_ids: flag.variations.iter().map(|v| v.id.clone()).collect(),
                archived: flag.archived,
                prerequisites: self
                    .prerequisites
                    .iter()
                    .filter(|((p, f, _, _), _)| p == project_id && f == key)
                    .map(
                        |((_, _, environment, prerequisite), variation)| PrerequisiteEdge {
                            environment: environment.clone(),
                            key: prerequisite.clone(),
                            variation: *variation,
                        },
                    )
                    .collect(),
            })
            .collect()
    }

    /// `(flag key, environment key, facts)` by flag key, then environment key.
    pub(crate) fn flag_status_facts(
        &self,
        project_id: &str,
        flag: Option<&str>,
        environments: &[String],
    ) -> Vec<(String, String, StatusFacts)> {
        self.flag_configs
            .iter()
            .filter(|((p, f, _), _)| p == project_id && flag.is_none_or(|key| f == key))
            .filter(|((_, _, e), _)| environments.is_empty() || environments.contains(e))
            .filter_map(|((_, f, e), config)| {
                let stored = self.flags.get(&flag_id(project_id, f))?;
                Some((f.clone(), e.clone(), StatusFacts::of(stored, config)))
            })
            .collect()
    }

    /// Flags that use `key` as a prerequisite, as `(flag key, flag name, environment key)`.
    pub(crate) fn flag_dependents(
        &self,
        project_id: &str,
        key: &str,
    ) -> Vec<(String, String, String)> {
        self.prerequisites
            .keys()
            .filter(|(p, _, _, prerequisite)| p == project_id && prerequisite == key)
            .filter_map(|(_, f, e, _)| {
                let flag = self.flags.get(&flag_id(project_id, f))?;
                Some((f.clone(), flag.name.clone(), e.clone()))
            })
            .collect()
    }

    pub(crate) fn flag_defaults(&self, project_id: &str) -> Vec<(String, Defaults)> {
        self.flags
            .iter()
            .filter(|((p, _), _)| p == project_id)
            .map(|((_, key), flag)| (key.clone(), flag.defaults))
            .collect()
    }

    pub(crate) fn insert_flag_configs(
        &mut self,
        project_id: &str,
        environment_key: &str,
        configs: &[KeyedFlagConfig],
    ) -> StoreResult<()> {
        for keyed in configs {
            self.insert_config(project_id, &keyed.flag_key, environment_key, &keyed.config)?;
        }
        for keyed in configs {
            self.add_references(project_id, &keyed.flag_key, environment_key, &keyed.config)?;
        }
        Ok(())
    }

    /// Flags whose rules in the environment name segment `key`, as `(flag key, flag name)`.
    pub(crate) fn segment_users(
        &self,
        project_id: &str,
        environment_key: &str,
        key: &str,
    ) -> Vec<(String, String)> {
        self.segment_refs
            .iter()
            .filter(|(p, _, e, s)| p == project_id && e == environment_key && s == key)
            .filter_map(|(_, f, _, _)| {
                let flag = self.flags.get(&flag_id(project_id, f))?;
                Some((f.clone(), flag.name.clone()))
            })
            .collect()
    }
}
