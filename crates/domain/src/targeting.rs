//! What flags and segments target by: clauses on the attributes of a context, their operators,
//! and a clause as an instruction sends it. Below both flags and segments, and below the
//! instructions that edit them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A condition on one attribute of a context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
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
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub values: Vec<Value>,
    /// Inverts the result.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub negate: bool,
    /// Context kind (default `user`).
    #[serde(default = "user_kind")]
    pub context_kind: String,
}

/// The 15 clause operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
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

/// A clause as sent in an instruction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClauseInput {
    /// Context kind (default `user`).
    #[serde(default)]
    pub context_kind: Option<String>,
    /// The attribute compared.
    pub attribute: String,
    /// The operator.
    pub op: Operator,
    /// Inverts the result.
    #[serde(default)]
    pub negate: bool,
    /// Values compared against; at most 1000.
    #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
    pub values: Vec<Value>,
}

/// The context kind a clause or target names when it names none.
pub(crate) fn user_kind() -> String {
    "user".to_owned()
}
