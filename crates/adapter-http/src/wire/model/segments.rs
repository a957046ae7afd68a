//! Parts of a segment as the API shows it: schemas of `domain::segment`'s types.

use super::flags::Clause;
use utoipa::ToSchema;

/// Targets of one context kind.
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentTarget {
    /// Context keys.
    pub values: Vec<String>,
    /// Their context kind.
    pub context_kind: String,
}

/// A segment rule: contexts matching every clause are in the segment (or `weight`/100000 of them).
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SegmentRule {
    /// UUID, assigned by the server.
    #[serde(rename = "_id", default)]
    pub id: String,
    /// All must match.
    #[serde(default)]
    #[schema(required = true)]
    pub clauses: Vec<Clause>,
    /// Share of matching contexts included, in thousandths of a percent (0..=100000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub weight: Option<i64>,
    /// Attribute the weight buckets by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub bucket_by: Option<String>,
    /// Context kind the weight buckets by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub rollout_context_kind: Option<String>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub description: Option<String>,
}
