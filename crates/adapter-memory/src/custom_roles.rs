//! Custom roles, by key.

use std::cmp::Ordering;

use domain::custom_role::CustomRole;
use domain::query::{CustomRoleQuery, CustomRoleSortField};
use ports::StoreResult;

use crate::{directed, duplicate, matches_search, one_page, rows, Tables};

/// As the SQL stores order them: by lower-cased name or by key, then by key.
fn order(field: CustomRoleSortField, a: &CustomRole, b: &CustomRole) -> Ordering {
    match field {
        CustomRoleSortField::Key => a.key.cmp(&b.key).then_with(|| a.id.cmp(&b.id)),
        CustomRoleSortField::Name => a
            .name
            .to_lowercase()
            .cmp(&b.name.to_lowercase())
            .then_with(|| a.key.cmp(&b.key)),
    }
}

impl Tables {
    pub(crate) fn insert_custom_role(&mut self, role: &CustomRole, now: i64) -> StoreResult<()> {
        if self.custom_roles.contains_key(role.key.as_str()) {
            return Err(duplicate("custom_roles.key"));
        }
        if self.custom_roles.values().any(|(_, r)| r.id == role.id) {
            return Err(duplicate("custom_roles.id"));
        }
        rows(&mut self.custom_roles).insert(role.key.to_string(), (now, role.clone()));
        Ok(())
    }

    pub(crate) fn get_custom_role(&self, key: &str) -> Option<CustomRole> {
        self.custom_roles.get(key).map(|(_, role)| role.clone())
    }

    pub(crate) fn get_custom_roles_by_id(
        &self,
        ids: &[domain::id::CustomRoleId],
    ) -> Vec<CustomRole> {
        self.custom_roles
            .values()
            .filter(|(_, role)| ids.contains(&role.id))
            .map(|(_, role)| role.clone())
            .collect()
    }

    pub(crate) fn list_custom_roles(&self, q: &CustomRoleQuery) -> (Vec<CustomRole>, u64) {
        let mut found: Vec<CustomRole> = self
            .custom_roles
            .values()
            .map(|(_, role)| role)
            .filter(|role| {
                q.query.as_ref().is_none_or(|text| {
                    matches_search(&format!("{}\n{}", role.key, role.name).to_lowercase(), text)
                })
            })
            .cloned()
            .collect();
        found.sort_by(|a, b| directed(q.sort.direction, order(q.sort.field, a, b)));
        one_page(found, q.page)
    }

    pub(crate) fn update_custom_role(&mut self, role: &CustomRole) {
        if let Some((_, stored)) = rows(&mut self.custom_roles).get_mut(role.key.as_str()) {
            *stored = role.clone();
        }
    }

    pub(crate) fn delete_custom_role(&mut self, key: &str) {
        rows(&mut self.custom_roles).remove(key);
    }
}
