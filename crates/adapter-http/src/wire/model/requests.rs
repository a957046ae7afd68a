//! Request bodies of the create routes (`POST`), as the domain reads them: schemas of
//! `domain::project::ProjectPost`, `domain::flag::FlagPost`, ... and their parts.

use std::collections::BTreeMap;

use super::account::{BasePermissions, ClientSideAvailability, NamingConvention, PolicyStatement};
use super::flags::{CustomProperty, Defaults};
use serde_json::Value;
use utoipa::ToSchema;

/// `POST /projects` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectPost {
    /// Project key.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Tags.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Legacy: same as `defaultClientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet_by_default: Option<bool>,
    /// Client-side availability of new flags (default: mobile yes, browser no).
    pub default_client_side_availability: Option<ClientSideAvailability>,
    /// Environments to create; without it `test` and `production` are created. They cannot
    /// have a `source` (there is nothing to clone yet).
    #[schema(max_items = 100)]
    pub environments: Option<Vec<EnvironmentPost>>,
    /// The rule new flag keys must follow (on create and clone): a prefix, a case, or both.
    pub naming_convention: Option<NamingConvention>,
}

/// `POST /projects/{projectKey}/environments` body (and items of a project's `environments`).
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvironmentPost {
    /// Environment key.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Hex RGB colour without `#` (e.g. `F5A623`).
    pub color: String,
    /// Minutes (default 0).
    pub default_ttl: Option<i32>,
    /// Default false.
    pub secure_mode: Option<bool>,
    /// Default false.
    pub default_track_events: Option<bool>,
    /// Default false.
    pub confirm_changes: Option<bool>,
    /// Default false.
    pub require_comments: Option<bool>,
    /// Tags.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Default false.
    pub critical: Option<bool>,
    /// Clone an existing environment of the project: every flag's configuration there, and its
    /// segments, are copied into the new environment.
    pub source: Option<EnvironmentSource>,
}

/// The environment a new environment is cloned from (`source` of an environment request).
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvironmentSource {
    /// Key of an environment of the same project.
    pub key: String,
    /// Not supported: environments carry no version here, so there is nothing to compare it
    /// with. A request that sets it is a 400 naming `source.version`.
    pub version: Option<i64>,
}

/// `POST /flags/{projectKey}` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlagPost {
    /// Flag key, unique in the project.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text (default empty).
    pub description: Option<String>,
    /// Variations (default: boolean `[true, false]`); at most 1000.
    #[schema(max_items = 1000)]
    pub variations: Option<Vec<VariationPost>>,
    /// Default true.
    pub temporary: Option<bool>,
    /// Tags.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Variation indexes for new environments (default on=0, off=1 for two variations; else on=0, off=last).
    pub defaults: Option<Defaults>,
    /// Client-side availability (default: mobile yes, browser no).
    pub client_side_availability: Option<ClientSideAvailability>,
    /// Deprecated mirror of `clientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet: Option<bool>,
    /// Custom properties.
    pub custom_properties: Option<BTreeMap<String, CustomProperty>>,
    /// The maintaining member's `_id`.
    pub maintainer_id: Option<String>,
    /// Turn targeting on in every environment at creation (default false: off everywhere).
    pub is_flag_on: Option<bool>,
    /// Prerequisites added in every environment at creation, at most 100: each names an
    /// existing, non-archived flag of the project and the `_id` of one of its variations.
    #[schema(max_items = 100)]
    pub initial_prerequisites: Option<Vec<InitialPrerequisite>>,
    /// Not supported: migration and holdout flags do not exist here. A request that sets it
    /// (to anything but `null`) is a 400 naming the field.
    #[schema(value_type = Option<String>)]
    pub purpose: Option<Value>,
    /// Not supported: migration flags do not exist here. A request that sets it (to anything
    /// but `null`) is a 400 naming the field.
    #[schema(value_type = Option<Object>)]
    pub migration_settings: Option<Value>,
    /// The maintaining team's key: an existing team (a 400 naming the field otherwise), not
    /// together with `maintainerId`.
    pub maintainer_team_key: Option<String>,
}

/// A variation in a create request.
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariationPost {
    /// The value: boolean, string, number or JSON; JSON nests at most 32 levels of arrays and
    /// objects.
    pub value: Value,
    /// Display name.
    pub name: Option<String>,
    /// Free text.
    pub description: Option<String>,
}

/// A prerequisite of a new flag (`initialPrerequisites` of a create request).
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitialPrerequisite {
    /// Key of the prerequisite flag (an existing, non-archived flag of the project).
    pub key: String,
    /// `_id` of the variation of that flag that must be served; stored as its index.
    pub variation_id: String,
}

/// `POST /flags/{projectKey}/{flagKey}/copy` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlagCopyPost {
    /// Where to copy from.
    pub source: CopyEnvironment,
    /// Where to copy to.
    pub target: CopyEnvironment,
    /// A comment for the audit log.
    #[serde(default)]
    pub comment: Option<String>,
    /// Copy only these parts (not with `excludedActions`).
    #[serde(default)]
    pub included_actions: Option<Vec<CopyAction>>,
    /// Copy everything but these parts (not with `includedActions`).
    #[serde(default)]
    pub excluded_actions: Option<Vec<CopyAction>>,
}

/// One side of a copy.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopyEnvironment {
    /// Environment key.
    pub key: String,
    /// When given, the copy happens only if the environment's configuration `version` is this.
    #[serde(default)]
    pub current_version: Option<i64>,
}

/// A part of a configuration that a copy can carry over.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
// The variant names of the domain type, which the schema's values come from.
#[allow(clippy::enum_variant_names)]
pub enum CopyAction {
    /// Targeting on/off.
    UpdateOn,
    /// Rules.
    UpdateRules,
    /// The default rule.
    UpdateFallthrough,
    /// The off variation.
    UpdateOffVariation,
    /// Prerequisites.
    UpdatePrerequisites,
    /// Individual targets (all context kinds).
    UpdateTargets,
    /// Migration settings: flags here have none (migration flags are not supported), so this
    /// copies nothing.
    UpdateFlagConfigMigrationSettings,
}

/// `POST /segments/{projectKey}/{environmentKey}` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentPost {
    /// Segment key.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Tags.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
    /// Big segments are not supported: `false` (or absent) only; `true` is a 400 naming the
    /// field.
    #[serde(default)]
    pub unbounded: Option<bool>,
    /// Big segments are not supported: a request that sets it is a 400 naming the field.
    #[serde(default)]
    pub unbounded_context_kind: Option<String>,
}

/// The request to create a token, as sent by a client.
#[derive(Debug, ToSchema)]
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
    #[schema(value_type = Option<Vec<PolicyStatement>>)]
    pub inline_role: Option<Vec<Value>>,
}

/// One invitation in `POST /members`.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMemberForm {
    /// Email address.
    pub email: String,
    /// `reader` (default), `writer`, `admin` or `no_access`.
    #[serde(default)]
    pub role: Option<String>,
    /// Given name.
    #[serde(default)]
    pub first_name: Option<String>,
    /// Family name.
    #[serde(default)]
    pub last_name: Option<String>,
    /// Not supported: members authenticate with access tokens, never a password. A request
    /// that sets it is a 400 naming the field.
    #[serde(default)]
    pub password: Option<String>,
    /// Keys of custom roles to give the member, at most 50, each naming an existing role (a 400
    /// naming `[i].customRoles` otherwise): its permissions are its base role's and theirs.
    #[serde(default)]
    pub custom_roles: Option<Vec<String>>,
    /// Keys of teams the member joins, at most 20, each naming an existing team (a 400 naming
    /// `[i].teamKeys` otherwise): it holds their custom roles too.
    #[serde(default)]
    pub team_keys: Option<Vec<String>>,
    /// Role attributes are not supported: only an empty map is accepted.
    #[serde(default)]
    pub role_attributes: Option<BTreeMap<String, Vec<String>>>,
}

/// `POST /roles` body.
#[derive(Debug, ToSchema)]
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
    pub policy: Vec<PolicyStatement>,
    /// `reader` (the default) or `no_access`.
    #[serde(default)]
    pub base_permissions: Option<BasePermissions>,
}

/// `POST /teams` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TeamPost {
    /// Unique in the account; never changes.
    pub key: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Keys of custom roles the team's members hold through it (at most 50, each naming an
    /// existing role).
    #[serde(default)]
    pub custom_role_keys: Option<Vec<String>>,
    /// `_id`s of its first members (at most 1000, each naming a member).
    #[serde(default, rename = "memberIDs")]
    pub member_ids: Option<Vec<String>>,
}

/// `POST /members/{id}/teams` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberTeamsPost {
    /// Keys of the teams the member joins (1 to 20, each naming an existing team; a member
    /// belongs to at most 20 teams).
    pub team_keys: Vec<String>,
}

/// `POST /webhooks` body.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookPost {
    /// Where to POST (`http` or `https`; a public host unless the service allows private
    /// networks or lists the host; no `user@`).
    #[schema(format = "uri")]
    pub url: String,
    /// Sign deliveries (a secret is generated when none is given).
    pub sign: bool,
    /// Deliver.
    pub on: bool,
    /// Display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Signing key.
    #[serde(default)]
    pub secret: Option<String>,
    /// Which changes; none = every change.
    #[serde(default)]
    pub statements: Vec<PolicyStatement>,
    /// Tags.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub tags: Vec<String>,
}
