//! The flag-wide settings: kind, variations, defaults, custom properties, experiments.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Defaults, FlagConfig};
use crate::key::FlagKey;
use crate::project::ClientSideAvailability;

/// `boolean` (exactly the variations `true` and `false`) or `multivariate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum FlagKind {
    /// Two variations: `true` and `false`.
    Boolean,
    /// Two or more variations of one JSON type.
    Multivariate,
}

/// One value a flag can serve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Variation {
    /// UUID, assigned by the server.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// The served value: a boolean, string, number or JSON value; unique within the flag. A JSON
    /// value nests at most 32 levels of arrays and objects.
    pub value: Value,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub name: Option<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(nullable = false))]
    pub description: Option<String>,
}

/// A custom property: a name and a list of values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct CustomProperty {
    /// Display name.
    pub name: String,
    /// Values.
    pub value: Vec<String>,
}

/// Experiments attached to a flag (always empty here; present because clients require it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Experiments {
    /// Index of the baseline.
    pub baseline_idx: i64,
    /// Experiments.
    pub items: Vec<Value>,
}

/// A feature flag with its configuration in each environment of its project.
///
/// Its serde representation is the document a JSON Patch or merge patch applies to (see
/// [`Flag::apply_patch`]): the API's representation without what the HTTP adapter derives for
/// it (`_links`, `_maintainer`, and each configuration's `_site` and `_summary`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flag {
    /// Unique within the project; never changes.
    pub key: FlagKey,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// `boolean` or `multivariate`.
    pub kind: FlagKind,
    /// Grows by one with every change, in any environment.
    #[serde(rename = "_version")]
    pub version: i64,
    /// Creation time (epoch ms).
    pub creation_date: i64,
    /// The values the flag can serve; rules and targets refer to them by index. At most
    /// [`MAX_VARIATIONS`](super::MAX_VARIATIONS).
    pub variations: Vec<Variation>,
    /// Temporary flags are meant to be removed after a release.
    pub temporary: bool,
    /// Sorted, unique tags.
    pub tags: Vec<String>,
    /// Archived flags are hidden from the live list.
    pub archived: bool,
    /// When it was archived (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_date: Option<i64>,
    /// Deprecated flags are on their way out.
    pub deprecated: bool,
    /// When it was deprecated (epoch ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated_date: Option<i64>,
    /// Custom properties by key.
    pub custom_properties: BTreeMap<String, CustomProperty>,
    /// Always `{baselineIdx: 0, items: []}` here.
    pub experiments: Experiments,
    /// Which client-side SDKs may see the flag.
    pub client_side_availability: ClientSideAvailability,
    /// Deprecated mirror of `clientSideAvailability.usingEnvironmentId`.
    pub include_in_snippet: bool,
    /// Variations used for new environments.
    pub defaults: Defaults,
    /// The maintaining member's `_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainer_id: Option<String>,
    /// The maintaining team's key (a flag has a maintaining member or team, not both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainer_team_key: Option<String>,
    /// Per-environment configuration, by environment key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub environments: BTreeMap<String, FlagConfig>,
}
