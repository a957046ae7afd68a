//! API access tokens and the other credentials a caller might send by mistake.

use serde::{Deserialize, Serialize};

use crate::id::{MemberId, TokenId};
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
    /// The token's role (`reader`, `writer` or `admin`).
    pub role: Role,
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
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenPost {
    /// A label for the token.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
    /// `reader` (default), `writer` or `admin`.
    pub role: Option<String>,
    /// A service token belongs to the account instead of the creating member.
    pub service_token: Option<bool>,
    /// The API version for requests without `Svc-API-Version`: 20240415 (default) or 20220603.
    pub default_api_version: Option<i32>,
    /// Custom roles are not supported yet: only an empty list is accepted.
    pub custom_role_ids: Option<Vec<String>>,
    /// Inline roles (policy statements instead of a role) are not supported yet: only an empty
    /// list is accepted.
    pub inline_role: Option<Vec<serde_json::Value>>,
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
        let role = match self.role.as_deref() {
            None => Some(Role::Reader),
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
        let version = self
            .default_api_version
            .unwrap_or(ApiVersion::CURRENT.date());
        if ApiVersion::from_date(version).is_err() {
            errors.push(FieldError::new(
                "defaultApiVersion",
                "must be 20240415 or 20220603",
            ));
        }
        if self.custom_role_ids.as_ref().is_some_and(|r| !r.is_empty()) {
            errors.push(FieldError::new(
                "customRoleIds",
                "custom roles are not supported yet; give a base role in role",
            ));
        }
        if self.inline_role.as_ref().is_some_and(|r| !r.is_empty()) {
            errors.push(FieldError::new(
                "inlineRole",
                "inline roles are not supported yet; give a base role in role",
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
        })
    }
}

/// The fields of a token a JSON Patch may change: `/name`, `/description`, `/role`,
/// `/defaultApiVersion`.
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
}

impl TokenPatch {
    /// The patchable fields of `token`.
    pub fn of(token: &Token) -> Self {
        Self {
            name: token.name.clone(),
            description: token.description.clone(),
            role: token.role,
            default_api_version: token.default_api_version,
        }
    }

    /// Applies JSON Patch operations and checks the result.
    ///
    /// ```
    /// use domain::token::TokenPatch;
    /// use domain::role::Role;
    /// let fields = TokenPatch { name: "ci".into(), description: String::new(), role: Role::Reader, default_api_version: 20240415 };
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
            &["name", "description", "role", "defaultApiVersion"],
        )?;
        let mut errors = Vec::new();
        if !next.role.is_token_role() {
            errors.push(FieldError::new(
                "role",
                "must be one of reader, writer, admin",
            ));
        }
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
