//! A segment's semantic patch: its instructions and their kinds.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::*;

/// At most this many target values are added or removed by one request.
pub const MAX_TARGET_OPERATIONS: usize = 1500;

/// One segment instruction, tagged by `kind` (big-segment kinds are not supported).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[strum_discriminants(
    name(SegmentInstructionKind),
    derive(strum::EnumIter, strum::IntoStaticStr, strum::VariantNames, Hash),
    strum(serialize_all = "camelCase"),
    allow(missing_docs),
    doc = "The kind of a [`SegmentInstruction`] (its `kind`), without its parameters."
)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum SegmentInstruction {
    /// Rename the segment.
    UpdateName { value: String },
    /// Add tags.
    AddTags { values: Vec<String> },
    /// Remove tags.
    RemoveTags { values: Vec<String> },
    /// Include context keys of a kind.
    #[serde(rename_all = "camelCase")]
    AddIncludedTargets {
        context_kind: String,
        values: Vec<String>,
    },
    /// Stop including context keys of a kind.
    #[serde(rename_all = "camelCase")]
    RemoveIncludedTargets {
        context_kind: String,
        values: Vec<String>,
    },
    /// Exclude context keys of a kind.
    #[serde(rename_all = "camelCase")]
    AddExcludedTargets {
        context_kind: String,
        values: Vec<String>,
    },
    /// Stop excluding context keys of a kind.
    #[serde(rename_all = "camelCase")]
    RemoveExcludedTargets {
        context_kind: String,
        values: Vec<String>,
    },
    /// Legacy: include user keys.
    AddIncludedUsers { values: Vec<String> },
    /// Legacy: stop including user keys.
    RemoveIncludedUsers { values: Vec<String> },
    /// Legacy: exclude user keys.
    AddExcludedUsers { values: Vec<String> },
    /// Legacy: stop excluding user keys.
    RemoveExcludedUsers { values: Vec<String> },
    /// Add a rule at the end.
    #[serde(rename_all = "camelCase")]
    AddRule {
        clauses: Vec<ClauseInput>,
        #[serde(default)]
        description: Option<String>,
        #[serde(default)]
        weight: Option<i64>,
        #[serde(default)]
        bucket_by: Option<String>,
        #[serde(default)]
        rollout_context_kind: Option<String>,
    },
    /// Remove a rule (a no-op if it does not exist).
    #[serde(rename_all = "camelCase")]
    RemoveRule { rule_id: String },
    /// Reorder the rules; `ruleIds` must be exactly the current rules.
    #[serde(rename_all = "camelCase")]
    ReorderRules { rule_ids: Vec<String> },
    /// Add clauses to a rule.
    #[serde(rename_all = "camelCase")]
    AddClauses {
        rule_id: String,
        clauses: Vec<ClauseInput>,
    },
    /// Remove clauses from a rule.
    #[serde(rename_all = "camelCase")]
    RemoveClauses {
        rule_id: String,
        clause_ids: Vec<String>,
    },
    /// Replace a clause.
    #[serde(rename_all = "camelCase")]
    UpdateClause {
        rule_id: String,
        clause_id: String,
        clause: ClauseInput,
    },
    /// Add values to a clause.
    #[serde(rename_all = "camelCase")]
    AddValuesToClause {
        rule_id: String,
        clause_id: String,
        #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
        values: Vec<Value>,
    },
    /// Remove values from a clause.
    #[serde(rename_all = "camelCase")]
    RemoveValuesFromClause {
        rule_id: String,
        clause_id: String,
        #[cfg_attr(feature = "openapi", schema(max_items = 1000))]
        values: Vec<Value>,
    },
    /// Set a rule's description.
    #[serde(rename_all = "camelCase")]
    UpdateRuleDescription {
        rule_id: String,
        description: String,
    },
    /// Set a rule's weight and the context kind it buckets by.
    #[serde(rename_all = "camelCase")]
    UpdateRuleRolloutAndContextKind {
        rule_id: String,
        weight: i64,
        #[serde(default)]
        context_kind: Option<String>,
    },
}

impl SegmentInstruction {
    /// Every segment instruction kind.
    pub const KINDS: &'static [&'static str] =
        <SegmentInstructionKind as strum::VariantNames>::VARIANTS;

    /// The policy action the instruction needs on the segment (see
    /// [`crate::policy::actions`]), decided whether or not it changes anything.
    ///
    /// ```
    /// use domain::segment::SegmentInstruction;
    /// let i = SegmentInstruction::AddIncludedUsers { values: vec!["a".into()] };
    /// assert_eq!(i.action(), "updateIncluded");
    /// ```
    pub fn action(&self) -> &'static str {
        SegmentInstructionKind::from(self).action()
    }
}

impl SegmentInstructionKind {
    /// The policy action an instruction of this kind needs (see [`crate::policy::actions`]).
    pub fn action(self) -> &'static str {
        use SegmentInstructionKind::*;
        match self {
            UpdateName => "updateName",
            AddTags | RemoveTags => "updateTags",
            AddIncludedTargets | RemoveIncludedTargets | AddIncludedUsers | RemoveIncludedUsers => {
                "updateIncluded"
            }
            AddExcludedTargets | RemoveExcludedTargets | AddExcludedUsers | RemoveExcludedUsers => {
                "updateExcluded"
            }
            AddRule
            | RemoveRule
            | ReorderRules
            | AddClauses
            | RemoveClauses
            | UpdateClause
            | AddValuesToClause
            | RemoveValuesFromClause
            | UpdateRuleDescription
            | UpdateRuleRolloutAndContextKind => "updateRules",
        }
    }
}

impl SegmentInstruction {
    /// How many target values the instruction adds or removes.
    pub fn target_operations(&self) -> usize {
        use SegmentInstruction::*;
        match self {
            AddIncludedTargets { values, .. }
            | RemoveIncludedTargets { values, .. }
            | AddExcludedTargets { values, .. }
            | RemoveExcludedTargets { values, .. }
            | AddIncludedUsers { values }
            | RemoveIncludedUsers { values }
            | AddExcludedUsers { values }
            | RemoveExcludedUsers { values } => values.len(),
            _ => 0,
        }
    }
}

/// A segment semantic patch: `{environmentKey, comment?, instructions}`.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentPatch {
    /// The environment (required, and must be the segment's).
    pub environment_key: String,
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// The instructions.
    pub instructions: Vec<SegmentInstruction>,
}

impl SegmentPatch {
    /// Reads a segment semantic patch body.
    ///
    /// # Errors
    /// [`InstructionError`] for a missing `environmentKey` or `instructions`, an unknown kind,
    /// missing or unknown parameters (naming the instruction), or more than 1500 target values.
    pub fn parse(body: Value) -> Result<Self, InstructionError> {
        let (environment_key, comment, instructions) =
            crate::instruction::parse_body::<SegmentInstruction>(body)?;
        let environment_key = environment_key.ok_or_else(|| {
            InstructionError::Malformed("a segment semantic patch needs 'environmentKey'".into())
        })?;
        let operations: usize = instructions
            .iter()
            .map(SegmentInstruction::target_operations)
            .sum();
        if operations > MAX_TARGET_OPERATIONS {
            return Err(InstructionError::Malformed(format!(
                "{operations} target values in one request; at most {MAX_TARGET_OPERATIONS}"
            )));
        }
        Ok(Self {
            environment_key,
            comment,
            instructions,
        })
    }
}
