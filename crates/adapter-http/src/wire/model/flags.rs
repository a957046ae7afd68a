//! Parts of a flag as the API shows it, and its status: schemas of `domain::flag`'s types.

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;

/// `boolean` (exactly the variations `true` and `false`) or `multivariate`.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FlagKind {
    /// Two variations: `true` and `false`.
    Boolean,
    /// Two or more variations of one JSON type.
    Multivariate,
}

/// One value a flag can serve.
#[derive(Debug, ToSchema)]
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
    #[schema(nullable = false)]
    pub name: Option<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub description: Option<String>,
}

/// Variation indexes used for new environments.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Defaults {
    /// Index served by the fallthrough of a new environment.
    pub on_variation: usize,
    /// Index served when targeting is off in a new environment.
    pub off_variation: usize,
}

/// A custom property: a name and a list of values.
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomProperty {
    /// Display name.
    pub name: String,
    /// Values.
    pub value: Vec<String>,
}

/// Experiments attached to a flag (always empty here; present because clients require it).
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Experiments {
    /// Index of the baseline.
    pub baseline_idx: i64,
    /// Experiments.
    pub items: Vec<Value>,
}

/// Individual targets: context keys served one variation.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Target {
    /// Context keys.
    pub values: Vec<String>,
    /// Variation index.
    pub variation: usize,
    /// Context kind (default `user`).
    #[serde(default = "user_kind")]
    pub context_kind: String,
}

/// Either a fixed variation or a percentage rollout (exactly one is set).
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariationOrRollout {
    /// Variation index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub variation: Option<usize>,
    /// Percentage rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rollout: Option<Rollout>,
}

/// A percentage rollout over variations.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    /// Weights per variation, in thousandths of a percent, summing to 100000.
    pub variations: Vec<WeightedVariation>,
    /// The attribute used for bucketing (default `key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub bucket_by: Option<String>,
    /// Context kind bucketed by (default `user`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub context_kind: Option<String>,
    /// Bucketing seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub seed: Option<i64>,
}

/// One variation's share of a rollout.
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WeightedVariation {
    /// Variation index.
    pub variation: usize,
    /// 0..=100000.
    pub weight: i64,
    /// Excluded from experiment analysis.
    #[serde(
        rename = "_untracked",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub untracked: bool,
}

/// A targeting rule: when all clauses match, serve a variation or rollout.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    /// UUID, assigned by the server.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// All must match.
    #[serde(default)]
    #[schema(required = true)]
    pub clauses: Vec<Clause>,
    /// Send full events for matches.
    #[serde(default)]
    #[schema(required = true)]
    pub track_events: bool,
    /// Variation index served (or `rollout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub variation: Option<usize>,
    /// Rollout served (or `variation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rollout: Option<Rollout>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub description: Option<String>,
    /// A disabled rule is skipped.
    #[serde(default)]
    pub disabled: bool,
}

/// A condition on one attribute of a context.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Clause {
    /// UUID, assigned by the server.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// The attribute compared (`key`, `email`, `country`, ...).
    pub attribute: String,
    /// The operator.
    pub op: Operator,
    /// Values compared against (any match); at most 1000. A `matches` value is a regular
    /// expression of at most 64 KiB compiled.
    #[schema(max_items = 1000)]
    pub values: Vec<Value>,
    /// Inverts the result.
    #[serde(default)]
    #[schema(required = true)]
    pub negate: bool,
    /// Context kind (default `user`).
    #[serde(default = "user_kind")]
    pub context_kind: String,
}

/// The 15 clause operators.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Operator {
    In,
    EndsWith,
    StartsWith,
    Matches,
    Contains,
    LessThan,
    LessThanOrEqual,
    GreaterThan,
    GreaterThanOrEqual,
    Before,
    After,
    SegmentMatch,
    SemVerEqual,
    SemVerLessThan,
    SemVerGreaterThan,
}

/// A flag that must serve `variation` before this flag is evaluated.
#[derive(Debug, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Prerequisite {
    /// The prerequisite flag's key.
    pub key: String,
    /// Its variation index.
    pub variation: usize,
}

/// How one configuration uses its flag's variations.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigSummary {
    /// Per variation index (as a string key).
    pub variations: BTreeMap<String, VariationSummary>,
    /// Number of prerequisites.
    pub prerequisites: usize,
}

/// How one configuration uses one variation.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VariationSummary {
    /// Rules serving it.
    pub rules: usize,
    /// Rules without clauses serving it.
    pub null_rules: usize,
    /// User keys targeted with it.
    pub targets: usize,
    /// Keys of other context kinds targeted with it.
    pub context_targets: usize,
    /// Whether the default rule serves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_fallthrough: bool,
    /// Whether it is served when targeting is off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_off: bool,
    /// Its weight in the default rule's rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rollout: Option<i64>,
    /// The default rule rollout's bucketing attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub bucket_by: Option<String>,
}

/// The status of a flag in one environment.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FlagStatusName {
    /// Created less than seven days ago, and its configuration in the environment never changed.
    New,
    /// Archived, or targeting off with the configuration unchanged for seven days or more.
    Inactive,
    /// Anything else: recently changed, or serving more than one variation.
    Active,
    /// On and serving one variation to everyone, unchanged for seven days or more.
    Launched,
}
