//! Custom roles as the API shows them: `CustomRole` with its `_links`.

use crate::wire::link::{Link, Links};
use domain::custom_role::BasePermissions;
use domain::policy::Statement;
use serde::Serialize;

use super::hrefs::role_href;
use super::hrefs::ROLES_HREF;

/// A custom role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomRole {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: String,
    /// `self`, `parent`.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text (empty when none was given).
    pub description: String,
    /// Its statements.
    pub policy: Vec<Statement>,
    /// `reader` (what a reader may, besides the policy) or `no_access`.
    pub base_permissions: BasePermissions,
}

impl From<&domain::custom_role::CustomRole> for CustomRole {
    fn from(role: &domain::custom_role::CustomRole) -> Self {
        Self {
            id: role.id.to_string(),
            links: Links::from([
                ("self".to_owned(), Link::api(role_href(&role.key))),
                ("parent".to_owned(), Link::api(ROLES_HREF)),
            ]),
            key: role.key.to_string(),
            name: role.name.clone(),
            description: role.description.clone(),
            policy: role.policy.clone(),
            base_permissions: role.base_permissions,
        }
    }
}

/// A page of custom roles.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomRoles {
    /// The page's roles.
    pub items: Vec<CustomRole>,
    /// All matches.
    #[serde(rename = "totalCount")]
    pub total_count: u64,
    /// Paging links.
    #[serde(rename = "_links")]
    #[schema(value_type = crate::wire::link::LinksSchema)]
    pub links: Links,
}

crate::wire::page::collection_of!(CustomRoles, CustomRole);
