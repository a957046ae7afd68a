//! Custom roles (`custom_roles.doc`).

use domain::custom_role::{BasePermissions, CustomRole};
use domain::id::CustomRoleId;
use domain::key::CustomRoleKey;
use domain::policy::Statement;
use ports::StoreResult;
use serde::{Deserialize, Serialize};

use super::{read, versioned, write, Versioned, FORMAT_VERSION};

/// A custom role as `custom_roles.doc` holds it. Statements are written with the domain's serde.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCustomRole {
    /// Format version.
    #[serde(rename = "v", default)]
    pub format: u32,
    /// The role's id.
    #[serde(rename = "_id")]
    pub id: String,
    /// The role's key.
    #[serde(rename = "key")]
    pub key: String,
    /// Display name.
    #[serde(rename = "name")]
    pub name: String,
    /// Free text.
    #[serde(rename = "description", default)]
    pub description: String,
    /// Its statements.
    #[serde(rename = "policy")]
    pub policy: Vec<Statement>,
    /// `reader` or `no_access`.
    #[serde(rename = "basePermissions")]
    pub base_permissions: StoredBasePermissions,
}
versioned!(StoredCustomRole);

/// A role's base permissions, spelled out here so the stored names cannot follow a domain rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StoredBasePermissions {
    /// Those of `reader`.
    #[serde(rename = "reader")]
    Reader,
    /// None.
    #[serde(rename = "no_access")]
    NoAccess,
}

impl From<&CustomRole> for StoredCustomRole {
    fn from(role: &CustomRole) -> Self {
        Self {
            format: FORMAT_VERSION,
            id: role.id.to_string(),
            key: role.key.to_string(),
            name: role.name.clone(),
            description: role.description.clone(),
            policy: role.policy.clone(),
            base_permissions: match role.base_permissions {
                BasePermissions::Reader => StoredBasePermissions::Reader,
                BasePermissions::NoAccess => StoredBasePermissions::NoAccess,
            },
        }
    }
}

impl From<StoredCustomRole> for CustomRole {
    fn from(stored: StoredCustomRole) -> Self {
        CustomRole {
            id: CustomRoleId::from_stored(stored.id),
            key: CustomRoleKey::from_stored(stored.key),
            name: stored.name,
            description: stored.description,
            policy: stored.policy,
            base_permissions: match stored.base_permissions {
                StoredBasePermissions::Reader => BasePermissions::Reader,
                StoredBasePermissions::NoAccess => BasePermissions::NoAccess,
            },
        }
    }
}

/// The JSON of `role`.
pub fn doc_json(role: &CustomRole) -> StoreResult<String> {
    write(&StoredCustomRole::from(role))
}

/// A custom role from its JSON.
pub fn read_doc(text: &str) -> StoreResult<CustomRole> {
    read::<StoredCustomRole>(text, "custom role").map(CustomRole::from)
}

#[cfg(test)]
mod tests {
    use domain::policy::Effect;

    use super::*;

    fn full_role() -> CustomRole {
        CustomRole {
            id: CustomRoleId::from_stored("0123456789abcdef01234567".into()),
            key: CustomRoleKey::from_stored("staging-toggler".into()),
            name: "Staging toggler".into(),
            description: "Toggles staging".into(),
            policy: vec![
                Statement {
                    effect: Effect::Allow,
                    resources: Some(vec!["proj/shop:env/staging:flag/*;beta".into()]),
                    not_resources: None,
                    actions: Some(vec!["updateOn".into()]),
                    not_actions: None,
                },
                Statement {
                    effect: Effect::Deny,
                    resources: None,
                    not_resources: Some(vec!["proj/*".into()]),
                    actions: None,
                    not_actions: Some(vec!["view*".into()]),
                },
            ],
            base_permissions: BasePermissions::NoAccess,
        }
    }

    /// The stored format of [`full_role`]: a change here is a change of the stored format.
    const DOC: &str = r#"{"v":1,"_id":"0123456789abcdef01234567","key":"staging-toggler","name":"Staging toggler","description":"Toggles staging","policy":[{"effect":"allow","resources":["proj/shop:env/staging:flag/*;beta"],"actions":["updateOn"]},{"effect":"deny","notResources":["proj/*"],"notActions":["view*"]}],"basePermissions":"no_access"}"#;

    #[test]
    fn the_stored_json_of_a_full_role_is_pinned() {
        assert_eq!(doc_json(&full_role()).unwrap(), DOC);
        assert_eq!(read_doc(DOC).unwrap(), full_role());
    }

    #[test]
    fn a_newer_format_is_refused() {
        let newer = DOC.replace(r#""v":1"#, r#""v":2"#);
        assert!(read_doc(&newer).is_err());
    }
}
