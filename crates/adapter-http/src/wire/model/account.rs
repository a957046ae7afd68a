//! Parts of projects, members, webhooks, audit entries and errors as the API shows them:
//! schemas of types of `domain::project`, `domain::role`, `domain::webhook`, `domain::audit` and
//! `domain::FieldError`.

use utoipa::ToSchema;

/// Which client-side SDKs may see new flags by default.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClientSideAvailability {
    /// Available to mobile SDKs (mobile key).
    pub using_mobile_key: bool,
    /// Available to browser SDKs (client-side ID).
    pub using_environment_id: bool,
}

/// A letter case that new flag keys must be written in.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
// The variant names of the domain type, which the schema's values come from.
#[allow(clippy::enum_variant_names)]
pub enum NamingCase {
    /// `myFlagKey`: a lowercase letter, then letters and digits.
    CamelCase,
    /// `MyFlagKey`: an uppercase letter, then letters and digits.
    UpperCamelCase,
    /// `my_flag_key`: lowercase letters and digits, words joined by single `_`.
    SnakeCase,
    /// `my-flag-key`: lowercase letters and digits, words joined by single `-`.
    KebabCase,
    /// `MY_FLAG_KEY`: uppercase letters and digits, words joined by single `_`.
    ConstantCase,
}

/// The rule new flag keys of a project follow: a prefix, then a case (either may be absent).
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamingConvention {
    /// The case of the key after the prefix: `camelCase`, `upperCamelCase`, `snakeCase`,
    /// `kebabCase` or `constantCase`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<NamingCase>,
    /// What every new key starts with: 1 to 100 of `A-Z a-z 0-9 . _ -`, starting with a letter
    /// or digit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 100, pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]
    pub prefix: Option<String>,
}

/// A built-in role of a member or an access token.
///
/// Ordered by power: `NoAccess < Reader < Writer < Admin < Owner`.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Nothing until other roles are added.
    NoAccess,
    /// Views everything, changes nothing.
    Reader,
    /// Also changes projects, environments and flags.
    Writer,
    /// Also manages members and access tokens.
    Admin,
    /// Exactly one per account: everything an admin can, and ownership.
    Owner,
}

/// Allow or deny.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    /// Selects what it matches.
    Allow,
    /// Excludes what it matches.
    Deny,
}

/// A policy statement (of a custom role, an access token's inline role or a webhook): each
/// specifier must be of the grammar of `docs/roles.md` (kinds `acct`, `proj`, `env`, `flag`, `segment`, `member`,
/// `token`, `webhook`, `role`, `team`) and each action must name, or its glob match, an action of
/// the catalogue there; a list holds 1 to 50 entries. Exactly one of `resources` and
/// `notResources`, at most one of `actions` and `notActions`.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyStatement {
    /// `allow` or `deny` (deny wins).
    pub effect: Effect,
    /// Resource specifiers it covers (or `notResources`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub resources: Option<Vec<String>>,
    /// Resource specifiers it covers all but.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub not_resources: Option<Vec<String>>,
    /// Actions it covers (all when neither list is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub actions: Option<Vec<String>>,
    /// Actions it covers all but.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub not_actions: Option<Vec<String>>,
}

/// What a custom role grants besides its policy: what a `reader` may, or nothing.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BasePermissions {
    /// What a reader may.
    Reader,
    /// Nothing.
    NoAccess,
}

/// One attempt to deliver an audit entry to a webhook.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryAttempt {
    /// The delivery (one per entry and webhook).
    pub delivery_id: String,
    /// The audit entry delivered.
    pub entry_id: String,
    /// 1 for the first try.
    pub attempt: u32,
    /// When it was made (epoch ms).
    pub date: i64,
    /// The receiver's HTTP status, if it answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub status_code: Option<u16>,
    /// What went wrong, if the receiver did not answer with 2xx.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// How long it took (ms).
    pub duration_ms: i64,
}

/// One action on one resource.
#[derive(Debug, ToSchema)]
pub struct Access {
    /// What was done (`createFlag`, `updateOn`, ...).
    pub action: String,
    /// The resource specifier it was done to.
    pub resource: String,
}

/// One field of an input that broke a rule, as reported in an error's `errors` list.
#[derive(Debug, ToSchema)]
pub struct FieldError {
    /// The field, as named in the JSON body (`key`, `variations[1].value`).
    pub attribute: String,
    /// What is wrong with it.
    pub reason: String,
}
