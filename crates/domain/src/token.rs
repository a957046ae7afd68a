//! API access tokens and the other credentials a caller might send by mistake.

use serde::{Deserialize, Serialize};

use crate::id::{CustomRoleId, MemberId, TokenId};
use crate::policy::Statement;
use crate::role::Role;
use crate::version::ApiVersion;
use crate::{FieldError, ValidationError};

/// An access token as stored: never its secret, only a hash and the last four characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// 24 lowercase hex characters.
    pub id: TokenId,
    /// The member who created it (personal tokens act with at most that member's role).
    pub member_id: MemberId,
    /// A label.
    pub name: String,
    /// Free text.
    pub description: String,
    /// The token's base role (`reader`, `writer` or `admin`; `no_access` for a token that acts
    /// with its custom roles or inline role alone).
    pub role: Role,
    /// Custom roles (by `_id`) the token acts with besides its base role.
    pub custom_role_ids: Vec<CustomRoleId>,
    /// Policy statements the token acts with besides its base role (empty for none).
    pub inline_role: Vec<Statement>,
    /// Service tokens belong to the account, not to a member.
    pub service_token: bool,
    /// The API version used when a request does not send `Svc-API-Version`.
    pub default_api_version: i32,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// Last change (epoch ms).
    pub last_modified: i64,
    /// Last use (epoch ms), if known.
    pub last_used: Option<i64>,
    /// The secret's last four characters.
    pub ending: String,
}

/// The request to create a token, as sent by a client.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenPost {
    /// A label for the token.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// `reader` (default), `writer` or `admin`; without it, a token with `customRoleIds` or
    /// `inlineRole` acts with those alone (its role is then `no_access`).
    pub role: Option<String>,
    /// A service token belongs to the account instead of the creating member.
    pub service_token: Option<bool>,
    /// The API version for requests without `Svc-API-Version`: 20240415 (default) or 20220603.
    pub default_api_version: Option<i32>,
    /// Custom roles (`_id`s, at most 50, each naming an existing role) the token acts with
    /// besides its role. Giving them needs the admin base role. A personal token never does what
    /// its member may not.
    pub custom_role_ids: Option<Vec<String>>,
    /// Policy statements the token acts with besides its role (a custom role's policy: at most
    /// 50 statements).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Vec<crate::policy::Statement>>))]
    pub inline_role: Option<Vec<serde_json::Value>>,
}

/// The most custom roles a token acts with.
pub const MAX_TOKEN_CUSTOM_ROLES: usize = 50;

/// Checks what a token acts with: its base role (`no_access` only with custom roles or an inline
/// role), at most [`MAX_TOKEN_CUSTOM_ROLES`] custom roles, none twice, and the inline role's
/// statements as a custom role's policy.
fn check_grants(
    role: Role,
    custom_role_ids: &[CustomRoleId],
    inline_role: &[Statement],
    errors: &mut Vec<FieldError>,
) {
    let alone = custom_role_ids.is_empty() && inline_role.is_empty();
    if !(role.is_token_role() || role == Role::NoAccess && !alone) {
        errors.push(FieldError::new(
            "role",
            "must be one of reader, writer, admin (or absent, with customRoleIds or inlineRole)",
        ));
    }
    if custom_role_ids.len() > MAX_TOKEN_CUSTOM_ROLES {
        errors.push(FieldError::new(
            "customRoleIds",
            format!("a token acts with at most {MAX_TOKEN_CUSTOM_ROLES} custom roles"),
        ));
    }
    for (i, id) in custom_role_ids.iter().enumerate() {
        if custom_role_ids[..i].contains(id) {
            errors.push(FieldError::new(
                format!("customRoleIds[{i}]"),
                format!("the custom role '{id}' is given twice"),
            ));
        }
    }
    crate::custom_role::validate_policy("inlineRole", inline_role, errors);
    let bytes = serde_json::to_vec(inline_role).map_or(0, |json| json.len());
    if bytes > crate::custom_role::MAX_ROLE_BYTES {
        errors.push(FieldError::new(
            "inlineRole",
            format!(
                "an inline role is at most {} bytes of JSON, as a custom role",
                crate::custom_role::MAX_ROLE_BYTES
            ),
        ));
    }
}

/// A validated token request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewToken {
    /// Label.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Role carried by the token.
    pub role: Role,
    /// Service or personal.
    pub service_token: bool,
    /// Default API version (a dated version).
    pub default_api_version: i32,
    /// Custom roles (checked against the roles that exist by the use case).
    pub custom_role_ids: Vec<CustomRoleId>,
    /// Inline policy statements.
    pub inline_role: Vec<Statement>,
}

impl TokenPost {
    /// Checks the request.
    ///
    /// ```
    /// use domain::token::TokenPost;
    /// use domain::role::Role;
    /// let t = TokenPost { role: Some("writer".into()), ..Default::default() }.validate().unwrap();
    /// assert_eq!(t.role, Role::Writer);
    /// assert_eq!(t.default_api_version, 20240415);
    /// assert!(TokenPost { role: Some("owner".into()), ..Default::default() }.validate().is_err());
    /// ```
    ///
    /// # Errors
    /// [`ValidationError`] for a role other than reader/writer/admin, an unknown API version, or
    /// a name longer than 256 characters.
    pub fn validate(self) -> Result<NewToken, ValidationError> {
        let mut errors = Vec::new();
        let mut custom_role_ids = Vec::new();
        for (i, id) in self.custom_role_ids.unwrap_or_default().iter().enumerate() {
            match CustomRoleId::parse(id) {
                Ok(id) => custom_role_ids.push(id),
                Err(_) => errors.push(FieldError::new(
                    format!("customRoleIds[{i}]"),
                    "must be a custom role's _id (24 lowercase hex digits)",
                )),
            }
        }
        let mut inline_role = Vec::new();
        for (i, statement) in self.inline_role.unwrap_or_default().into_iter().enumerate() {
            match serde_json::from_value::<Statement>(statement) {
                Ok(statement) => inline_role.push(statement),
                Err(e) => errors.push(FieldError::new(format!("inlineRole[{i}]"), e.to_string())),
            }
        }
        let alone = custom_role_ids.is_empty() && inline_role.is_empty();
        let role = match self.role.as_deref() {
            None if alone => Some(Role::Reader),
            None => Some(Role::NoAccess),
            Some(r) => match r.parse::<Role>() {
                Ok(role) if role.is_token_role() => Some(role),
                _ => {
                    errors.push(FieldError::new(
                        "role",
                        "must be one of reader, writer, admin",
                    ));
                    None
                }
            },
        };
        if let Some(role) = role {
            check_grants(role, &custom_role_ids, &inline_role, &mut errors);
        }
        let version = self
            .default_api_version
            .unwrap_or(ApiVersion::CURRENT.date());
        if ApiVersion::from_date(version).is_err() {
            errors.push(FieldError::new(
                "defaultApiVersion",
                "must be 20240415 or 20220603",
            ));
        }
        let name = self.name.unwrap_or_default();
        if name.chars().count() > 256 {
            errors.push(FieldError::new("name", "must be at most 256 characters"));
        }
        crate::validate_single_line("name", &name, &mut errors);
        ValidationError::check(errors)?;
        Ok(NewToken {
            name,
            description: self.description.unwrap_or_default(),
            role: role.unwrap_or(Role::Reader),
            service_token: self.service_token.unwrap_or(false),
            default_api_version: version,
            custom_role_ids,
            inline_role,
        })
    }
}

/// The fields of a token a JSON Patch may change: `/name`, `/description`, `/role`,
/// `/defaultApiVersion`, `/customRoleIds`, `/inlineRole`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenPatch {
    /// Label.
    pub name: String,
    /// Free text.
    pub description: String,
    /// `reader`, `writer` or `admin`.
    pub role: Role,
    /// A dated API version.
    pub default_api_version: i32,
    /// Custom roles (`_id`s).
    #[serde(default)]
    pub custom_role_ids: Vec<CustomRoleId>,
    /// Inline policy statements.
    #[serde(default)]
    pub inline_role: Vec<Statement>,
}

impl TokenPatch {
    /// The patchable fields of `token`.
    pub fn of(token: &Token) -> Self {
        Self {
            name: token.name.clone(),
            description: token.description.clone(),
            role: token.role,
            default_api_version: token.default_api_version,
            custom_role_ids: token.custom_role_ids.clone(),
            inline_role: token.inline_role.clone(),
        }
    }

    /// Applies JSON Patch operations and checks the result.
    ///
    /// ```
    /// use domain::token::TokenPatch;
    /// use domain::role::Role;
    /// let fields = TokenPatch { name: "ci".into(), description: String::new(), role: Role::Reader, default_api_version: 20240415, custom_role_ids: vec![], inline_role: vec![] };
    /// let ops: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!(
    ///     [{"op": "replace", "path": "/role", "value": "writer"}])).unwrap();
    /// assert_eq!(fields.apply(&ops).unwrap().role, Role::Writer);
    /// let bad: Vec<domain::patch::Operation> = serde_json::from_value(serde_json::json!(
    ///     [{"op": "replace", "path": "/role", "value": "owner"}])).unwrap();
    /// assert!(fields.apply(&bad).is_err());
    /// ```
    ///
    /// # Errors
    /// [`crate::patch::PatchError`] for another path, a role other than reader/writer/admin, an
    /// unknown API version or a name over 256 characters.
    pub fn apply(&self, ops: &[crate::patch::Operation]) -> Result<Self, crate::patch::PatchError> {
        let next: Self = crate::patch::apply_to_fields(
            self,
            ops,
            &[
                "name",
                "description",
                "role",
                "defaultApiVersion",
                "customRoleIds",
                "inlineRole",
            ],
        )?;
        let mut errors = Vec::new();
        check_grants(
            next.role,
            &next.custom_role_ids,
            &next.inline_role,
            &mut errors,
        );
        if ApiVersion::from_date(next.default_api_version).is_err() {
            errors.push(FieldError::new(
                "defaultApiVersion",
                "must be 20240415 or 20220603",
            ));
        }
        if next.name.chars().count() > 256 {
            errors.push(FieldError::new("name", "must be at most 256 characters"));
        }
        crate::validate_single_line("name", &next.name, &mut errors);
        ValidationError::check(errors)?;
        Ok(next)
    }

    /// `token` with these fields.
    pub fn onto(self, token: &Token) -> Token {
        Token {
            name: self.name,
            description: self.description,
            role: self.role,
            default_api_version: self.default_api_version,
            custom_role_ids: self.custom_role_ids,
            inline_role: self.inline_role,
            ..token.clone()
        }
    }
}

/// A credential of an environment: never accepted as an access token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvironmentCredential {
    /// An environment's server-side SDK key (`sdk-...`).
    SdkKey,
    /// An environment's mobile key (`mob-...`).
    MobileKey,
    /// An environment's client-side ID (its `_id`).
    ClientSideId,
}

impl EnvironmentCredential {
    /// What the credential is, for the 401 message.
    pub fn describe(self) -> &'static str {
        match self {
            EnvironmentCredential::SdkKey => "an environment's SDK key",
            EnvironmentCredential::MobileKey => "an environment's mobile key",
            EnvironmentCredential::ClientSideId => "an environment's client-side ID",
        }
    }
}
