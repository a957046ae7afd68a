//! Custom roles: named policies an administrator writes ("may toggle flags in `staging` of
//! `shop`"), given to members, teams and access tokens on top of their base role.
//!
//! ```
//! use domain::custom_role::{CustomRole, CustomRolePost};
//! use domain::policy::{decide, Resource, Statement};
//! let post = CustomRolePost {
//!     key: "staging-toggler".into(),
//!     name: "Staging toggler".into(),
//!     policy: vec![Statement::allow(&["proj/shop:env/staging:flag/*"], &["updateOn"])],
//!     ..CustomRolePost::default()
//! };
//! let role = CustomRole::create(domain::id::CustomRoleId::parse(&"0".repeat(24)).unwrap(), post).unwrap();
//! let policies = role.policies();
//! let staging = Resource::project("shop").environment("staging").flag("f");
//! assert!(decide(&policies, "updateOn", &staging).is_allowed());
//! assert!(decide(&policies, "viewProject", &Resource::project("shop")).is_allowed(), "reader base");
//! ```

use serde::{Deserialize, Serialize};

use crate::id::CustomRoleId;
use crate::key::CustomRoleKey;
use crate::patch::{self, PatchError};
use crate::policy::{base_role_policy, Policy, Statement};
use crate::role::Role;
use crate::{validate_name, FieldError, ValidationError};

/// The most custom roles a member holds.
pub const MAX_CUSTOM_ROLES: usize = 50;

/// Checks a member's custom role keys: at most [`MAX_CUSTOM_ROLES`], each a well-formed role key
/// (`domain::key` rules), none twice.
///
/// ```
/// let mut errors = Vec::new();
/// domain::custom_role::check_custom_roles("customRoles", &["ops".into(), "ops".into(), "no way".into()], &mut errors);
/// assert_eq!(errors.len(), 2);
/// ```
pub fn check_custom_roles(at: &str, keys: &[String], errors: &mut Vec<FieldError>) {
    if keys.len() > MAX_CUSTOM_ROLES {
        errors.push(FieldError::new(
            at,
            format!("at most {MAX_CUSTOM_ROLES} custom roles"),
        ));
        return;
    }
    for (i, key) in keys.iter().enumerate() {
        if let Err(e) = crate::key::CustomRoleKey::parse(key) {
            errors.push(FieldError::new(format!("{at}[{i}]"), e.to_string()));
        } else if keys[..i].contains(key) {
            errors.push(FieldError::new(
                format!("{at}[{i}]"),
                format!("the custom role '{key}' is given twice"),
            ));
        }
    }
}

/// The most statements a custom role's policy (or a token's inline role) holds.
pub const MAX_STATEMENTS: usize = 50;

/// The most resource specifiers or actions one statement lists.
pub const MAX_STATEMENT_ENTRIES: usize = 50;

/// The longest description of a custom role, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 4096;

/// The most bytes of a custom role's JSON (its policy included): a page of 100 roles stays a
/// few MiB, and a role decides requests without reading much.
pub const MAX_ROLE_BYTES: usize = 32 * 1024;

/// Keys a custom role cannot take: the built-in roles' (a decision names its policy by key).
pub const RESERVED_KEYS: [&str; 5] = ["no_access", "reader", "writer", "admin", "owner"];

/// What a custom role grants besides its policy: what a `reader` may, or nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BasePermissions {
    /// Everything a `reader` may (the default).
    #[default]
    Reader,
    /// Nothing but the policy.
    NoAccess,
}

impl BasePermissions {
    /// The built-in role these base permissions are.
    pub fn role(self) -> Role {
        match self {
            BasePermissions::Reader => Role::Reader,
            BasePermissions::NoAccess => Role::NoAccess,
        }
    }
}

/// A custom role. How the API shows it (links, `_access`) is the HTTP adapter's business; this
/// JSON is what JSON Patch paths address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomRole {
    /// 24 lowercase hex characters.
    #[serde(rename = "_id")]
    pub id: CustomRoleId,
    /// Unique in the account; never changes.
    pub key: CustomRoleKey,
    /// Display name.
    pub name: String,
    /// Free text (empty when none was given).
    #[serde(default)]
    pub description: String,
    /// Its statements.
    pub policy: Vec<Statement>,
    /// What it grants besides the policy (never absent: removing it is refused rather than
    /// read as the default).
    pub base_permissions: BasePermissions,
}

/// `POST /roles` body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomRolePost {
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Its statements (at most 50).
    pub policy: Vec<Statement>,
    /// `reader` (the default) or `no_access`.
    #[serde(default)]
    pub base_permissions: Option<BasePermissions>,
}

/// Checks a list of policy statements (a custom role's or an inline role's): at most
/// [`MAX_STATEMENTS`], each valid ([`Statement::validate`]) and listing at most
/// [`MAX_STATEMENT_ENTRIES`] specifiers or actions per list.
///
/// ```
/// use domain::custom_role::validate_policy;
/// use domain::policy::Statement;
/// let mut errors = Vec::new();
/// validate_policy("policy", &[Statement::allow(&["proj/*"], &["viewProject"])], &mut errors);
/// assert!(errors.is_empty());
/// validate_policy("policy", &[Statement::allow(&["nope"], &["viewProject"])], &mut errors);
/// assert_eq!(errors[0].attribute, "policy[0].resources[0]");
/// ```
pub fn validate_policy(attribute: &str, policy: &[Statement], errors: &mut Vec<FieldError>) {
    let before = errors.len();
    if policy.len() > MAX_STATEMENTS {
        errors.push(FieldError::new(
            attribute,
            format!("holds at most {MAX_STATEMENTS} statements"),
        ));
        return;
    }
    for (i, statement) in policy.iter().enumerate() {
        let at = format!("{attribute}[{i}]");
        let lists = [
            ("resources", &statement.resources),
            ("notResources", &statement.not_resources),
            ("actions", &statement.actions),
            ("notActions", &statement.not_actions),
        ];
        let too_long = lists.iter().find(|(_, list)| {
            list.as_ref()
                .is_some_and(|l| l.len() > MAX_STATEMENT_ENTRIES)
        });
        if let Some((field, _)) = too_long {
            errors.push(FieldError::new(
                format!("{at}.{field}"),
                format!("lists at most {MAX_STATEMENT_ENTRIES} entries"),
            ));
            continue;
        }
        statement.validate(&at, errors);
        for (field, list) in [
            ("resources", &statement.resources),
            ("notResources", &statement.not_resources),
        ] {
            for (j, spec) in list.iter().flatten().enumerate() {
                if crate::policy::check_specifier(spec).is_ok() {
                    if let Err(e) = crate::policy::check_shape(spec) {
                        errors.push(FieldError::new(format!("{at}.{field}[{j}]"), e));
                    }
                }
            }
        }
        // The first problems say what is wrong; a policy of thousands of bad entries does not
        // make an answer of megabytes.
        if errors.len() - before >= MAX_REPORTED_ERRORS {
            errors.truncate(before + MAX_REPORTED_ERRORS);
            errors.push(FieldError::new(
                format!("{attribute}[{i}]"),
                "more problems not reported: fix these first",
            ));
            return;
        }
    }
}

/// The most problems of one policy an error reports.
const MAX_REPORTED_ERRORS: usize = 20;

impl CustomRole {
    /// A new custom role.
    ///
    /// # Errors
    /// [`ValidationError`] for a bad key, name, description or policy.
    pub fn create(id: CustomRoleId, post: CustomRolePost) -> Result<Self, ValidationError> {
        let key = CustomRoleKey::parse(&post.key)
            .map_err(|e| ValidationError::single("key", e.to_string()))?;
        if RESERVED_KEYS.contains(&key.as_str()) {
            return Err(ValidationError::single(
                "key",
                format!("'{key}' is the name of a built-in role"),
            ));
        }
        let role = Self {
            id,
            key,
            name: post.name,
            description: post.description.unwrap_or_default(),
            policy: post.policy,
            base_permissions: post.base_permissions.unwrap_or_default(),
        };
        role.validate()?;
        Ok(role)
    }

    /// Checks the name, description and policy.
    ///
    /// # Errors
    /// [`ValidationError`] naming each problem.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let mut errors = Vec::new();
        validate_name("name", &self.name, &mut errors);
        if self.description.chars().count() > MAX_DESCRIPTION_CHARS {
            errors.push(FieldError::new(
                "description",
                format!("must be at most {MAX_DESCRIPTION_CHARS} characters"),
            ));
        }
        validate_policy("policy", &self.policy, &mut errors);
        if errors.is_empty() && patch::json_len(self) > MAX_ROLE_BYTES {
            errors.push(FieldError::new(
                "policy",
                format!("a custom role is at most {MAX_ROLE_BYTES} bytes of JSON"),
            ));
        }
        ValidationError::check(errors)
    }

    /// What the role grants, as policies for [`crate::policy::decide`]: its own statements
    /// (named by its key), and its base permissions' (named `reader`) unless they are none.
    pub fn policies(&self) -> Vec<Policy> {
        let mut policies = vec![Policy::new(self.key.as_str(), self.policy.clone())];
        if self.base_permissions != BasePermissions::NoAccess {
            policies.push(base_role_policy(self.base_permissions.role()));
        }
        policies
    }

    /// Applies a JSON Patch to this role as the API shows it (with the `_links` of `shown`,
    /// which may be tested but not written): `/name`, `/description`, `/policy`,
    /// `/basePermissions`.
    ///
    /// ```
    /// # use domain::custom_role::{CustomRole, CustomRolePost};
    /// # let role = CustomRole::create(domain::id::CustomRoleId::parse(&"0".repeat(24)).unwrap(), CustomRolePost { key: "k".into(), name: "K".into(), ..Default::default() }).unwrap();
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([{"op": "replace", "path": "/name", "value": "Ops"}])).unwrap();
    /// assert_eq!(role.apply_patch_as_shown(&serde_json::Value::Null, &ops).unwrap().name, "Ops");
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!([{"op": "replace", "path": "/key", "value": "x"}])).unwrap();
    /// assert!(role.apply_patch_as_shown(&serde_json::Value::Null, &ops).is_err());
    /// ```
    ///
    /// # Errors
    /// [`PatchError`] for another path, a failed `test`, or an invalid result.
    pub fn apply_patch_as_shown(
        &self,
        shown: &serde_json::Value,
        ops: &[patch::Operation],
    ) -> Result<CustomRole, PatchError> {
        let next: CustomRole =
            patch::apply_to_fields_as_shown(self, shown, &patch::LINKS_ONLY, ops, &WRITABLE)?;
        next.validated()
    }

    /// Applies a JSON Merge Patch (RFC 7386) to the same fields as
    /// [`CustomRole::apply_patch_as_shown`], on the role as the API shows it (with the `_links`
    /// of `shown`), so that a GET's body sent back unchanged is accepted.
    ///
    /// ```
    /// # use domain::custom_role::{BasePermissions, CustomRole, CustomRolePost};
    /// # let role = CustomRole::create(domain::id::CustomRoleId::parse(&"0".repeat(24)).unwrap(), CustomRolePost { key: "k".into(), name: "K".into(), ..Default::default() }).unwrap();
    /// let shown = serde_json::Value::Null;
    /// let next = role.apply_merge_as_shown(&shown, &serde_json::json!({"basePermissions": "no_access"})).unwrap();
    /// assert_eq!(next.base_permissions, BasePermissions::NoAccess);
    /// assert!(role.apply_merge_as_shown(&shown, &serde_json::json!({"_id": "1"})).is_err());
    /// assert!(role.apply_merge_as_shown(&shown, &serde_json::json!({"basePermissions": null})).is_err());
    /// ```
    ///
    /// # Errors
    /// [`PatchError`] for another field or an invalid result.
    pub fn apply_merge_as_shown(
        &self,
        shown: &serde_json::Value,
        merge: &serde_json::Value,
    ) -> Result<CustomRole, PatchError> {
        let mut doc = patch::to_document(self)?;
        patch::copy_members(&mut doc, shown, &patch::LINKS_ONLY);
        let mut merged = patch::merge(&doc, merge, |path| {
            path.first()
                .is_none_or(|first| !WRITABLE.contains(&first.as_str()))
        })?;
        patch::remove_members(&mut merged, &patch::LINKS_ONLY);
        let next: CustomRole = patch::from_document(merged)?;
        next.validated()
    }

    /// The patched role, if it is valid (`_id` and `key` are not writable, so they are the
    /// role's own).
    fn validated(self) -> Result<CustomRole, PatchError> {
        self.validate()?;
        Ok(self)
    }
}

/// The fields of a custom role a patch may write.
const WRITABLE: [&str; 4] = ["name", "description", "policy", "basePermissions"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Effect;

    fn post(policy: serde_json::Value) -> CustomRolePost {
        CustomRolePost {
            key: "ops".into(),
            name: "Ops".into(),
            policy: serde_json::from_value(policy).unwrap(),
            ..CustomRolePost::default()
        }
    }

    fn id() -> CustomRoleId {
        CustomRoleId::parse(&"a".repeat(24)).unwrap()
    }

    #[test]
    fn creation_checks_key_name_and_policy() {
        let ok = CustomRole::create(
            id(),
            post(serde_json::json!([{"effect": "allow", "resources": ["proj/*"], "actions": ["viewProject"]}])),
        )
        .unwrap();
        assert_eq!(ok.base_permissions, BasePermissions::Reader);
        assert_eq!(ok.policy[0].effect, Effect::Allow);
        let bad_key = CustomRole::create(
            id(),
            CustomRolePost {
                key: "no way".into(),
                ..post(serde_json::json!([]))
            },
        )
        .unwrap_err();
        assert_eq!(bad_key.errors[0].attribute, "key");
        let bad_name = CustomRole::create(
            id(),
            CustomRolePost {
                name: " ".into(),
                ..post(serde_json::json!([]))
            },
        )
        .unwrap_err();
        assert_eq!(bad_name.errors[0].attribute, "name");
        let bad_policy = CustomRole::create(
            id(),
            post(serde_json::json!([{"effect": "allow", "resources": ["proj/*"], "notResources": ["acct"]}])),
        )
        .unwrap_err();
        assert_eq!(bad_policy.errors[0].attribute, "policy[0]");
    }

    #[test]
    fn built_in_role_names_are_not_keys() {
        for key in RESERVED_KEYS {
            let refused = CustomRole::create(
                id(),
                CustomRolePost {
                    key: key.into(),
                    ..post(serde_json::json!([]))
                },
            )
            .unwrap_err();
            assert_eq!(refused.errors[0].attribute, "key", "{key}");
        }
    }

    #[test]
    fn a_role_is_at_most_its_byte_limit() {
        let spec = format!("proj/{}", "p".repeat(400));
        let big = vec![Statement::allow(&[spec.as_str(); 10], &["viewProject"]); 10];
        let refused = CustomRole::create(
            id(),
            CustomRolePost {
                policy: big,
                ..post(serde_json::json!([]))
            },
        )
        .unwrap_err();
        assert!(refused.errors[0].reason.contains("bytes"), "{refused:?}");
    }

    #[test]
    fn policy_size_is_bounded() {
        let many = vec![Statement::allow(&["proj/*"], &["viewProject"]); MAX_STATEMENTS + 1];
        let mut errors = Vec::new();
        validate_policy("policy", &many, &mut errors);
        assert_eq!(errors.len(), 1);
        let specs: Vec<String> = (0..=MAX_STATEMENT_ENTRIES)
            .map(|i| format!("proj/p{i}"))
            .collect();
        let refs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let mut errors = Vec::new();
        validate_policy(
            "policy",
            &[Statement::allow(&refs, &["viewProject"])],
            &mut errors,
        );
        assert_eq!(errors[0].attribute, "policy[0].resources");
    }

    #[test]
    fn a_policy_reports_its_first_problems_only() {
        let bad: Vec<&str> = vec!["nope"; MAX_STATEMENT_ENTRIES];
        let policy = vec![Statement::allow(&bad, &["viewProject"]); MAX_STATEMENTS];
        let mut errors = Vec::new();
        validate_policy("policy", &policy, &mut errors);
        assert_eq!(errors.len(), MAX_REPORTED_ERRORS + 1);
    }

    #[test]
    fn no_access_base_grants_only_the_policy() {
        let mut role = CustomRole::create(id(), post(serde_json::json!([]))).unwrap();
        assert_eq!(role.policies().len(), 2);
        role.base_permissions = BasePermissions::NoAccess;
        assert_eq!(role.policies().len(), 1);
    }

    #[test]
    fn patches_keep_key_and_id() {
        let role = CustomRole::create(id(), post(serde_json::json!([]))).unwrap();
        let ops: Vec<patch::Operation> = serde_json::from_value(serde_json::json!([
            {"op": "add", "path": "/policy/-", "value": {"effect": "deny", "resources": ["acct"]}},
            {"op": "replace", "path": "/description", "value": ""}
        ]))
        .unwrap();
        let next = role
            .apply_patch_as_shown(&serde_json::Value::Null, &ops)
            .unwrap();
        assert_eq!(next.policy.len(), 1);
        assert_eq!(next.description, "");
        assert_eq!((next.id, next.key), (role.id.clone(), role.key.clone()));
        let bad: Vec<patch::Operation> = serde_json::from_value(serde_json::json!([
            {"op": "add", "path": "/policy/-", "value": {"effect": "allow", "resources": ["nope"]}}
        ]))
        .unwrap();
        assert!(role
            .apply_patch_as_shown(&serde_json::Value::Null, &bad)
            .is_err());
        let shown = serde_json::json!({"_links": {"self": {"href": "/r"}}});
        assert!(role
            .apply_merge_as_shown(&shown, &serde_json::json!({"key": "other"}))
            .is_err());
        let mut back = serde_json::to_value(&role).unwrap();
        back["_links"] = shown["_links"].clone();
        assert_eq!(
            role.apply_merge_as_shown(&shown, &back).unwrap(),
            role,
            "a GET's body sent back changes nothing"
        );
        let remove: Vec<patch::Operation> = serde_json::from_value(serde_json::json!([
            {"op": "remove", "path": "/basePermissions"}
        ]))
        .unwrap();
        assert!(
            role.apply_patch_as_shown(&serde_json::Value::Null, &remove)
                .is_err(),
            "base permissions are never defaulted by a patch"
        );
    }
}
