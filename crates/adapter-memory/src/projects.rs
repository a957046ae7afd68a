//! Projects, environments and environment credentials.

use std::cmp::Ordering;

use domain::environment::Environment;
use domain::id::{EnvironmentId, ProjectId};
use domain::project::Project;
use domain::query::{
    Direction, EnvironmentQuery, EnvironmentSortField, ProjectQuery, ProjectSortField,
};
use domain::token::EnvironmentCredential;
use ports::{SdkKeyHolder, StoreResult};

use crate::{
    directed, duplicate, has_all_tags, matches_search, missing, one_page, rows, search_text,
    tag_rows, EnvironmentRow, RetiredKey, Tables,
};

fn project_order(field: ProjectSortField, a: &Project, b: &Project) -> Ordering {
    match field {
        ProjectSortField::Name => a.name.cmp(&b.name),
        ProjectSortField::CreatedOn => a.creation_date.cmp(&b.creation_date),
    }
    .then_with(|| a.id.cmp(&b.id))
}

fn environment_order(
    field: EnvironmentSortField,
    direction: Direction,
    a: &Environment,
    b: &Environment,
) -> Ordering {
    let by_id = || a.id.cmp(&b.id);
    match field {
        EnvironmentSortField::Name => directed(direction, a.name.cmp(&b.name).then_with(by_id)),
        EnvironmentSortField::CreatedOn => directed(
            direction,
            a.creation_date.cmp(&b.creation_date).then_with(by_id),
        ),
        // Critical first (or last), then always oldest first.
        EnvironmentSortField::Critical => directed(direction, a.critical.cmp(&b.critical))
            .then_with(|| a.creation_date.cmp(&b.creation_date))
            .then_with(by_id),
    }
}

/// A project as read back: a naming convention with neither a case nor a prefix read as none (the SQL stores keep the two as columns that are then both empty).
fn project_as_read(stored: &Project) -> Project {
    let mut project = stored.clone();
    if project
        .naming_convention
        .as_ref()
        .is_some_and(|c| c.case.is_none() && c.prefix.is_none())
    {
        project.naming_convention = None;
    }
    project
}

impl Tables {
    /// An environment as read back.
    fn environment_as_read(&self, row: &EnvironmentRow) -> Environment {
        row.environment.clone()
    }

    /// Checks the project's unique columns against the other projects and stores it.
    fn save_project(&mut self, project: &Project) -> StoreResult<()> {
        if self
            .projects
            .values()
            .any(|p| p.id != project.id && p.key == project.key)
        {
            return Err(duplicate("projects.key"));
        }
        let mut stored = project.clone();
        stored.tags = tag_rows(&project.tags, "project_tags")?;
        rows(&mut self.projects).insert(project.id.clone(), stored);
        Ok(())
    }

    pub(crate) fn insert_project(&mut self, project: &Project) -> StoreResult<()> {
        if self.projects.contains_key(&project.id) {
            return Err(duplicate("projects.id"));
        }
        self.save_project(project)
    }

    pub(crate) fn get_project(&self, key: &str) -> Option<Project> {
        self.projects
            .values()
            .find(|p| p.key == key)
            .map(project_as_read)
    }

    pub(crate) fn list_projects(&self, q: &ProjectQuery) -> (Vec<Project>, u64) {
        let mut found: Vec<Project> = self
            .projects
            .values()
            .filter(|p| {
                q.query
                    .as_ref()
                    .is_none_or(|text| matches_search(&search_text(&[&p.key, &p.name]), text))
            })
            .filter(|p| has_all_tags(&p.tags, &q.tags))
            .filter(|p| q.keys.is_empty() || q.keys.iter().any(|key| *key == p.key))
            .map(project_as_read)
            .collect();
        found.sort_by(|a, b| directed(q.sort.direction, project_order(q.sort.field, a, b)));
        one_page(found, q.page)
    }

    pub(crate) fn update_project(&mut self, project: &Project) -> StoreResult<()> {
        if !self.projects.contains_key(&project.id) {
            return Ok(());
        }
        self.save_project(project)
    }

    /// Deletes a project and everything under it: its environments (with their flag
    /// configurations, segments and retired keys) and its flags.
    pub(crate) fn delete_project(&mut self, id: &str) {
        if rows(&mut self.projects).remove(id).is_none() {
            return;
        }
        let environment_ids: Vec<EnvironmentId> = self
            .environments
            .iter()
            .filter(|(_, row)| row.project_id == id)
            .map(|(env_id, _)| env_id.clone())
            .collect();
        for environment_id in environment_ids {
            self.delete_environment(id, &environment_id);
        }
        let flag_keys: Vec<String> = self
            .flags
            .keys()
            .filter(|(project_id, _)| project_id == id)
            .map(|(_, key)| key.clone())
            .collect();
        for key in flag_keys {
            self.delete_flag(id, &key);
        }
        rows(&mut self.tombstones).retain(|(project_id, ..), _| project_id != id);
    }

    /// Checks the environment's unique columns and its project, and stores it.
    fn save_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Environment,
    ) -> StoreResult<()> {
        let others = || {
            self.environments
                .iter()
                .filter(|(id, _)| **id != environment.id)
                .map(|(_, row)| row)
        };
        if others()
            .any(|row| row.project_id == *project_id && row.environment.key == environment.key)
        {
            return Err(duplicate("environments.project_id, environments.key"));
        }
        if others().any(|row| row.environment.api_key == environment.api_key) {
            return Err(duplicate("environments.api_key"));
        }
        if others().any(|row| row.environment.mobile_key == environment.mobile_key) {
            return Err(duplicate("environments.mobile_key"));
        }
        if !self.projects.contains_key(project_id) {
            return Err(missing("environments.project_id"));
        }
        let mut stored = environment.clone();
        stored.tags = tag_rows(&environment.tags, "environment_tags")?;
        let row = EnvironmentRow {
            project_id: project_id.clone(),
            environment: stored,
        };
        rows(&mut self.environments).insert(environment.id.clone(), row);
        Ok(())
    }

    pub(crate) fn insert_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Environment,
    ) -> StoreResult<()> {
        if self.environments.contains_key(&environment.id) {
            return Err(duplicate("environments.id"));
        }
        self.save_environment(project_id, environment)
    }

    /// The row of environment `key` of the project.
    pub(crate) fn environment_row(&self, project_id: &str, key: &str) -> Option<&EnvironmentRow> {
        self.environments
            .values()
            .find(|row| row.project_id == project_id && row.environment.key == key)
    }

    pub(crate) fn get_environment(&self, project_id: &str, key: &str) -> Option<Environment> {
        self.environment_row(project_id, key)
            .map(|row| self.environment_as_read(row))
    }

    pub(crate) fn list_environments(
        &self,
        project_id: &str,
        q: &EnvironmentQuery,
    ) -> (Vec<Environment>, u64) {
        let mut found: Vec<Environment> = self
            .environments
            .values()
            .filter(|row| row.project_id == project_id)
            .map(|row| self.environment_as_read(row))
            .filter(|e| {
                q.query
                    .as_ref()
                    .is_none_or(|text| matches_search(&search_text(&[&e.key, &e.name]), text))
            })
            .filter(|e| has_all_tags(&e.tags, &q.tags))
            .filter(|e| q.key.as_ref().is_none_or(|key| e.key == *key))
            .filter(|e| q.name.as_ref().is_none_or(|name| e.name == *name))
            .filter(|e| q.critical.is_none_or(|critical| e.critical == critical))
            .collect();
        found.sort_by(|a, b| environment_order(q.sort.field, q.sort.direction, a, b));
        one_page(found, q.page)
    }

    /// The environments of `project_ids`, by project `_id`, then oldest first.
    pub(crate) fn environments_of(
        &self,
        project_ids: &[ProjectId],
    ) -> Vec<(ProjectId, Environment)> {
        let mut found: Vec<(ProjectId, Environment)> = self
            .environments
            .values()
            .filter(|row| project_ids.contains(&row.project_id))
            .filter(|row| self.projects.contains_key(&row.project_id))
            .map(|row| (row.project_id.clone(), self.environment_as_read(row)))
            .collect();
        found.sort_by(|(pa, a), (pb, b)| {
            (pa, a.creation_date, &a.id).cmp(&(pb, b.creation_date, &b.id))
        });
        found
    }

    pub(crate) fn update_environment(
        &mut self,
        project_id: &ProjectId,
        environment: &Environment,
    ) -> StoreResult<()> {
        if !self.environments.contains_key(&environment.id) {
            return Ok(());
        }
        self.save_environment(project_id, environment)
    }

    /// Deletes an environment of the project and, as the schema cascades, its retired keys,
    /// flag configurations, prerequisite edges and segments. (Which segments flags' rules name
    /// is kept: that table refers to flags only.)
    pub(crate) fn delete_environment(&mut self, project_id: &str, environment_id: &str) {
        let Some(row) = self.environments.get(environment_id) else {
            return;
        };
        if row.project_id != project_id {
            return;
        }
        let key = row.environment.key.clone();
        rows(&mut self.environments).remove(environment_id);
        rows(&mut self.retired_keys).retain(|_, old| old.environment_id != environment_id);
        rows(&mut self.flag_configs).retain(|(p, _, env), _| !(p == project_id && *env == key));
        rows(&mut self.prerequisites).retain(|(p, _, env, _), _| !(p == project_id && *env == key));
        rows(&mut self.segments).retain(|(p, env, _), _| !(p == project_id && *env == key));
    }

    pub(crate) fn find_environment_credential(
        &self,
        secret: &str,
    ) -> Option<EnvironmentCredential> {
        let current = self.environments.values().find_map(|row| {
            let e = &row.environment;
            if e.api_key == secret {
                Some(EnvironmentCredential::SdkKey)
            } else if e.mobile_key == secret {
                Some(EnvironmentCredential::MobileKey)
            } else if e.id == secret {
                Some(EnvironmentCredential::ClientSideId)
            } else {
                None
            }
        });
        current.or_else(|| self.retired_keys.get(secret).map(|old| old.kind))
    }

    /// The environment whose SDK key (current or retired) `secret` is.
    pub(crate) fn environment_of_sdk_key(&self, secret: &str) -> Option<SdkKeyHolder> {
        let holder = |row: &EnvironmentRow, expires_at| {
            let project = self.projects.get(row.project_id.as_str())?;
            Some(SdkKeyHolder {
                project_key: project.key.to_string(),
                environment_key: row.environment.key.to_string(),
                expires_at,
            })
        };
        if let Some(row) = self
            .environments
            .values()
            .find(|row| row.environment.api_key == secret)
        {
            return holder(row, None);
        }
        let old = self
            .retired_keys
            .get(secret)
            .filter(|old| old.kind == EnvironmentCredential::SdkKey)?;
        holder(
            self.environments.get(old.environment_id.as_str())?,
            Some(old.expires_at),
        )
    }

    pub(crate) fn retire_environment_key(
        &mut self,
        environment_id: &EnvironmentId,
        key: &str,
        kind: EnvironmentCredential,
        expires_at: i64,
    ) -> StoreResult<()> {
        if self.retired_keys.contains_key(key) {
            return Err(duplicate("environment_old_keys.key"));
        }
        if !self.environments.contains_key(environment_id) {
            return Err(missing("environment_old_keys.environment_id"));
        }
        // Stored as "mobile" or "sdk": a client-side ID is never retired, and reads as an SDK key.
        let kind = match kind {
            EnvironmentCredential::MobileKey => EnvironmentCredential::MobileKey,
            EnvironmentCredential::SdkKey | EnvironmentCredential::ClientSideId => {
                EnvironmentCredential::SdkKey
            }
        };
        let old = RetiredKey {
            environment_id: environment_id.clone(),
            kind,
            expires_at,
        };
        rows(&mut self.retired_keys).insert(key.to_owned(), old);
        Ok(())
    }
}
