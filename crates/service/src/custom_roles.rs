//! Custom roles: named policies of the account (`/roles`).

use domain::custom_role::{CustomRole, CustomRolePost};
use domain::id::CustomRoleId;
use domain::key::CustomRoleKey;
use domain::patch::JsonPatchBody;
use domain::policy::Resource;
use domain::query::CustomRoleQuery;
use ports::{CustomRoleRepository, Listed, Locked, StoreExt};
use serde_json::Value;

use crate::audit::Change;
use crate::{
    use_case, ApiResource, Permit, RandomIds, Representations, Service, ServiceError, ServiceResult,
};

/// Custom roles. The use cases of `Service::custom_roles`; they work with the service's data
/// ([`Service`], which this derefs to).
#[derive(Debug, Clone, Copy)]
pub struct CustomRoles<'a>(&'a Service);

impl Service {
    /// Custom roles.
    pub fn custom_roles(&self) -> CustomRoles<'_> {
        CustomRoles(self)
    }
}

impl std::ops::Deref for CustomRoles<'_> {
    type Target = Service;

    fn deref(&self) -> &Service {
        self.0
    }
}

/// A change to a custom role, in one of its two patch forms.
#[derive(Debug, Clone, PartialEq)]
pub enum CustomRoleChange {
    /// RFC 6902 operations (with an optional audit comment).
    JsonPatch(JsonPatchBody),
    /// RFC 7386 merge document.
    MergePatch {
        /// Audit comment.
        comment: Option<String>,
        /// The merge document.
        merge: Value,
    },
}

fn not_found(key: &str) -> ServiceError {
    ServiceError::NotFound(format!("no custom role with key '{key}'"))
}

fn lock_role(repo: &mut dyn CustomRoleRepository, key: &str) -> ServiceResult<Locked<CustomRole>> {
    repo.lock_custom_role(&CustomRoleKey::lookup(key))?
        .ok_or_else(|| not_found(key))
}

fn role_change(
    shown: &dyn Representations,
    role: &CustomRole,
    verb: &'static str,
    action: &str,
) -> Change {
    Change::new(
        "role",
        &role.key,
        verb,
        action,
        Resource::role(role.key.as_str()),
    )
    .href(shown.href(ApiResource::CustomRole {
        key: role.key.as_str(),
    }))
}

impl CustomRoles<'_> {
    /// One page of custom roles.
    ///
    /// # Errors
    /// `NotPermitted` for a caller who may not read members (and so roles).
    pub fn list_custom_roles(
        &self,
        permit: &Permit<use_case::ListCustomRoles>,
        query: &CustomRoleQuery,
    ) -> ServiceResult<Listed<CustomRole>> {
        let caller = permit.caller();
        caller.require_on("viewRoles", &Resource::role("*"))?;
        if caller.permissions.built_in_only() {
            return self
                .store
                .read_tx(|repo| -> ServiceResult<_> { Ok(repo.list_custom_roles(query)?) });
        }
        // Statements may hide some roles: the list shows what a lookup by key would.
        self.store.read_tx(|repo| -> ServiceResult<_> {
            crate::granting::visible_page(
                query.page,
                |page| {
                    let mut query = query.clone();
                    query.page = page;
                    Ok(repo.list_custom_roles(&query)?)
                },
                |role| {
                    caller
                        .require_on("viewRoles", &Resource::role(role.key.as_str()))
                        .is_ok()
                },
            )
        })
    }

    /// One custom role, by key.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn get_custom_role(
        &self,
        permit: &Permit<use_case::GetCustomRole>,
        key: &str,
    ) -> ServiceResult<CustomRole> {
        let caller = permit.caller();
        // Decided on the key asked for before the store is: a caller allowed only some keys
        // learns nothing of whether others exist (403 alike).
        caller.require_on("viewRoles", &Resource::role(key))?;
        let role = self.store.read_tx(|repo| -> ServiceResult<_> {
            repo.get_custom_role(&CustomRoleKey::lookup(key))?
                .ok_or_else(|| not_found(key))
        })?;
        caller.require_on("viewRoles", &Resource::role(role.key.as_str()))?;
        Ok(role)
    }

    /// Creates a custom role.
    ///
    /// # Errors
    /// `Invalid` for a bad key, name, description or policy; `KeyTaken` for a taken key.
    pub fn create_custom_role(
        &self,
        permit: &Permit<use_case::CreateCustomRole>,
        post: CustomRolePost,
    ) -> ServiceResult<CustomRole> {
        let caller = permit.caller();
        let role = CustomRole::create(CustomRoleId::generate(&mut RandomIds), post)?;
        // Decided before the store says whether the key is taken (403 alike).
        caller.require_on("createRole", &Resource::role(role.key.as_str()))?;
        let now = self.now();
        let key = role.key.to_string();
        self.store
            .write_tx(|repo| -> ServiceResult<()> {
                repo.insert_custom_role(&role, now)?;
                self.audit(
                    repo,
                    caller,
                    role_change(&*self.shown, &role, "created", "createRole")
                        .versions(None, Some(self.shown.custom_role(&role)))
                        .authorize(caller)?,
                )?;
                Ok(())
            })
            .map_err(|e| {
                e.key_taken(|| format!("a custom role with key '{key}' already exists"))
            })?;
        Ok(role)
    }

    /// Changes a custom role's name, description, policy or base permissions, by JSON Patch or
    /// merge patch.
    ///
    /// # Errors
    /// `NotFound`; `PatchFailed` for another path or an invalid result; `VersionConflict` for a
    /// failed `test`.
    pub fn patch_custom_role(
        &self,
        permit: &Permit<use_case::PatchCustomRole>,
        key: &str,
        change: &CustomRoleChange,
    ) -> ServiceResult<CustomRole> {
        let caller = permit.caller();
        // Decided on the key asked for before the store is (403 alike for a missing key).
        caller.require_on("updateRole", &Resource::role(key))?;
        self.store.write_tx(|repo| -> ServiceResult<_> {
            let mut held = lock_role(repo, key)?;
            let (next, comment) = match change {
                CustomRoleChange::JsonPatch(patch) => (
                    held.apply_patch_as_shown(&self.shown.custom_role(&held), &patch.operations)?,
                    patch.comment.clone(),
                ),
                CustomRoleChange::MergePatch { comment, merge } => (
                    held.apply_merge_as_shown(&self.shown.custom_role(&held), merge)?,
                    comment.clone(),
                ),
            };
            if next != *held {
                if !crate::granting::narrows(&held, &next) {
                    crate::granting::require_unrestricted(
                        caller,
                        &format!("widening the custom role '{}'", held.key),
                    )?;
                }
                let previous = held.replace(next);
                repo.update_custom_role(&held)?;
                let change = role_change(&*self.shown, &held, "updated", "updateRole")
                    .comment(comment)
                    .versions(
                        Some(self.shown.custom_role(&previous)),
                        Some(self.shown.custom_role(&held)),
                    );
                self.audit(repo, caller, change.authorize(caller)?)?;
            }
            Ok(held.into_inner())
        })
    }

    /// Deletes a custom role.
    ///
    /// # Errors
    /// `NotPermitted`, `NotFound`.
    pub fn delete_custom_role(
        &self,
        permit: &Permit<use_case::DeleteCustomRole>,
        key: &str,
    ) -> ServiceResult<()> {
        let caller = permit.caller();
        // Decided on the key asked for before the store is (403 alike for a missing key).
        caller.require_on("deleteRole", &Resource::role(key))?;
        self.store.write_tx(|repo| -> ServiceResult<()> {
            let held = lock_role(repo, key)?;
            // Decided before the refusal below names who holds it.
            caller.require_on("deleteRole", &Resource::role(held.key.as_str()))?;
            // Under the role's lock, which giving it takes too: none is given meanwhile.
            let mut holders = repo.members_with_custom_role(&held.key, 5)?;
            holders.extend(
                repo.teams_with_custom_role(&held.key, 5)?
                    .into_iter()
                    .map(|key| format!("the team '{key}'")),
            );
            holders.extend(
                repo.tokens_with_custom_role(&held.id, 5)?
                    .into_iter()
                    .map(|name| format!("the token '{name}'")),
            );
            if !holders.is_empty() {
                return Err(ServiceError::StillReferenced(
                    format!(
                        "the custom role '{}' is given to {}; take it from them first",
                        held.key,
                        holders.join(", ")
                    )
                    .into(),
                ));
            }
            repo.delete_custom_role(&held)?;
            self.audit(
                repo,
                caller,
                // No link: a deleted role has no address.
                Change::new(
                    "role",
                    &held.key,
                    "deleted",
                    "deleteRole",
                    Resource::role(held.key.as_str()),
                )
                .versions(Some(self.shown.custom_role(&held)), None)
                .authorize(caller)?,
            )?;
            Ok(())
        })
    }
}
