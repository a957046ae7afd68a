//! Semantic patch: a list of named instructions applied to a flag, all or nothing.
//!
//! The body is `{"environmentKey"?, "comment"?, "instructions": [{"kind": ..., ...}]}`.
//! Environment-scoped kinds need `environmentKey`. An instruction that finds the flag already as
//! asked succeeds without change, and a request that changes nothing leaves `_version` alone.
//! Variations, rules and clauses are addressed by their `_id`.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ValidationError;

// Where it was first named.
pub use crate::targeting::ClauseInput;

/// What a rule or the fallthrough serves: `variationId`, or `rolloutWeights` (variation id ->
/// weight in thousandths of a percent) with optional `rolloutBucketBy` and `rolloutContextKind`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ServeInput {
    /// A fixed variation, by `_id`.
    #[serde(default)]
    pub variation_id: Option<String>,
    /// A percentage rollout: variation `_id` -> weight (0..=100000, summing to 100000).
    #[serde(default)]
    pub rollout_weights: Option<BTreeMap<String, i64>>,
    /// The attribute to bucket by (default `key`).
    #[serde(default)]
    pub rollout_bucket_by: Option<String>,
    /// The context kind to bucket by (default `user`).
    #[serde(default)]
    pub rollout_context_kind: Option<String>,
}

/// A rule as sent in `replaceRules`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RuleInput {
    /// All must match.
    pub clauses: Vec<ClauseInput>,
    /// What the rule serves.
    #[serde(flatten)]
    pub serve: ServeInput,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// Send full events for matches.
    #[serde(default)]
    pub track_events: bool,
}

/// Individual targets as sent in `replaceTargets` and `replaceUserTargets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TargetInput {
    /// Context kind (default `user`).
    #[serde(default)]
    pub context_kind: Option<String>,
    /// The variation, by `_id`.
    pub variation_id: String,
    /// Context keys.
    pub values: Vec<String>,
}

/// A prerequisite as sent in `replacePrerequisites`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrerequisiteInput {
    /// The prerequisite flag's key.
    pub key: String,
    /// The prerequisite flag's variation, by `_id`.
    pub variation_id: String,
}

/// One instruction of a semantic patch, tagged by `kind`. Unknown parameters are refused.
// By `SemanticPatch::parse`; no link in the doc line, which is the schema's description too.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[strum_discriminants(
    name(InstructionKind),
    derive(strum::EnumIter, strum::IntoStaticStr, strum::VariantNames, Hash),
    strum(serialize_all = "camelCase"),
    allow(missing_docs),
    doc = "The kind of a [`Instruction`] (its `kind`), without its parameters."
)]
#[serde(tag = "kind", rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum Instruction {
    /// Turn targeting on in the environment.
    TurnFlagOn,
    /// Turn targeting off in the environment.
    TurnFlagOff,
    /// Target context keys with a variation (an error if a key is targeted by another variation).
    #[serde(rename_all = "camelCase")]
    AddTargets {
        values: Vec<String>,
        variation_id: String,
        #[serde(default)]
        context_kind: Option<String>,
    },
    /// Stop targeting context keys (a no-op for keys not targeted).
    #[serde(rename_all = "camelCase")]
    RemoveTargets {
        values: Vec<String>,
        variation_id: String,
        #[serde(default)]
        context_kind: Option<String>,
    },
    /// Replace all individual targeting.
    #[serde(rename_all = "camelCase")]
    ReplaceTargets { targets: Vec<TargetInput> },
    /// Remove every individual target (any context kind) of a variation.
    #[serde(rename_all = "camelCase")]
    ClearTargets { variation_id: String },
    /// Legacy: `addTargets` for user keys.
    #[serde(rename_all = "camelCase")]
    AddUserTargets {
        values: Vec<String>,
        variation_id: String,
    },
    /// Legacy: `removeTargets` for user keys.
    #[serde(rename_all = "camelCase")]
    RemoveUserTargets {
        values: Vec<String>,
        variation_id: String,
    },
    /// Legacy: replace user targeting (one entry per variation).
    #[serde(rename_all = "camelCase")]
    ReplaceUserTargets { targets: Vec<TargetInput> },
    /// Legacy: remove the user targets of a variation.
    #[serde(rename_all = "camelCase")]
    ClearUserTargets { variation_id: String },
    /// Add a rule, before `beforeRuleId` or at the end.
    #[serde(rename_all = "camelCase")]
    AddRule {
        clauses: Vec<ClauseInput>,
        #[serde(default)]
        before_rule_id: Option<String>,
        #[serde(flatten)]
        serve: ServeInput,
        #[serde(default)]
        description: Option<String>,
        #[serde(default)]
        track_events: Option<bool>,
    },
    /// Remove a rule (a no-op if it does not exist).
    #[serde(rename_all = "camelCase")]
    RemoveRule { rule_id: String },
    /// Reorder the rules; `ruleIds` must be exactly the current rules.
    #[serde(rename_all = "camelCase")]
    ReorderRules { rule_ids: Vec<String> },
    /// Replace all rules.
    #[serde(rename_all = "camelCase")]
    ReplaceRules { rules: Vec<RuleInput> },
    /// Set a rule's description.
    #[serde(rename_all = "camelCase")]
    UpdateRuleDescription {
        rule_id: String,
        description: String,
    },
    /// Set a rule's `trackEvents`.
    #[serde(rename_all = "camelCase")]
    UpdateRuleTrackEvents { rule_id: String, track_events: bool },
    /// Set what a rule serves.
    #[serde(rename_all = "camelCase")]
    UpdateRuleVariationOrRollout {
        rule_id: String,
        #[serde(flatten)]
        serve: ServeInput,
    },
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
    #[cfg_attr(feature = "openapi", schema(title = "AddValuesToClause"))]
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
    /// Set what the default rule serves.
    #[serde(rename_all = "camelCase")]
    UpdateFallthroughVariationOrRollout {
        #[serde(flatten)]
        serve: ServeInput,
    },
    /// Set the variation served when targeting is off.
    #[serde(rename_all = "camelCase")]
    UpdateOffVariation { variation_id: String },
    /// Add a prerequisite: flag `key` must serve its variation `variationId`.
    #[serde(rename_all = "camelCase")]
    AddPrerequisite { key: String, variation_id: String },
    /// Remove a prerequisite (a no-op if absent).
    #[serde(rename_all = "camelCase")]
    RemovePrerequisite { key: String },
    /// Change a prerequisite's variation (an error if absent).
    #[serde(rename_all = "camelCase")]
    UpdatePrerequisite { key: String, variation_id: String },
    /// Replace all prerequisites.
    #[serde(rename_all = "camelCase")]
    ReplacePrerequisites {
        prerequisites: Vec<PrerequisiteInput>,
    },
    /// Set `trackEvents` on every rule.
    #[serde(rename_all = "camelCase")]
    UpdateTrackEvents { track_events: bool },
    /// Set `trackEventsFallthrough`.
    #[serde(rename_all = "camelCase")]
    UpdateTrackEventsFallthrough { track_events: bool },
    /// Add a variation (flag-wide).
    #[serde(rename_all = "camelCase")]
    AddVariation {
        value: Value,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        description: Option<String>,
    },
    /// Remove a variation that nothing uses (flag-wide).
    #[serde(rename_all = "camelCase")]
    RemoveVariation { variation_id: String },
    /// Change a variation's value, name or description (flag-wide).
    #[serde(rename_all = "camelCase")]
    UpdateVariation {
        variation_id: String,
        #[serde(default)]
        value: Option<Value>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        description: Option<String>,
    },
    /// Set the flag's `defaults` by variation value (flag-wide).
    #[serde(rename_all = "camelCase")]
    UpdateDefaultVariation {
        #[serde(default, alias = "OnVariationValue")]
        on_variation_value: Option<Value>,
        #[serde(default, alias = "OffVariationValue")]
        off_variation_value: Option<Value>,
    },
    /// Rename the flag.
    #[serde(rename_all = "camelCase")]
    UpdateName { value: String },
    /// Set the description.
    #[serde(rename_all = "camelCase")]
    UpdateDescription { value: String },
    /// Add tags.
    #[serde(rename_all = "camelCase")]
    AddTags { values: Vec<String> },
    /// Remove tags.
    #[serde(rename_all = "camelCase")]
    RemoveTags { values: Vec<String> },
    /// Mark the flag permanent.
    MakeFlagPermanent,
    /// Mark the flag temporary.
    MakeFlagTemporary,
    /// Add values to a custom property (creating it).
    #[serde(rename_all = "camelCase")]
    AddCustomProperties {
        key: String,
        name: String,
        values: Vec<String>,
    },
    /// Set a custom property.
    #[serde(rename_all = "camelCase")]
    ReplaceCustomProperties {
        key: String,
        name: String,
        values: Vec<String>,
    },
    /// Remove values from a custom property (removed when empty).
    #[serde(rename_all = "camelCase")]
    RemoveCustomProperties { key: String, values: Vec<String> },
    /// Set the maintaining member (the maintaining team, if any, is removed).
    #[serde(rename_all = "camelCase")]
    UpdateMaintainerMember { value: String },
    /// Set the maintaining team, by the key of an existing team (the maintaining member, if any,
    /// is removed).
    #[serde(rename_all = "camelCase")]
    UpdateMaintainerTeam { value: String },
    /// Remove the maintainer (member or team).
    RemoveMaintainer,
    /// Make the flag available to `usingMobileKey` or `usingEnvironmentId` SDKs.
    #[serde(rename_all = "camelCase")]
    TurnOnClientSideAvailability { value: String },
    /// Make the flag unavailable to `usingMobileKey` or `usingEnvironmentId` SDKs.
    #[serde(rename_all = "camelCase")]
    TurnOffClientSideAvailability { value: String },
    /// Archive the flag (refused while other flags use it as a prerequisite).
    ArchiveFlag,
    /// Restore an archived flag.
    RestoreFlag,
    /// Deprecate the flag.
    DeprecateFlag,
    /// Restore a deprecated flag.
    RestoreDeprecatedFlag,
    /// Delete the flag in every environment (refused while other flags use it as a prerequisite).
    DeleteFlag,
}

impl Instruction {
    /// Every instruction kind, as sent in `kind`.
    pub const KINDS: &'static [&'static str] = <InstructionKind as strum::VariantNames>::VARIANTS;

    /// How many target values the instruction names (individual targeting only).
    ///
    /// ```
    /// use domain::instruction::Instruction;
    /// let add: Instruction = serde_json::from_value(serde_json::json!(
    ///     {"kind": "addTargets", "variationId": "v", "values": ["a", "b"]})).unwrap();
    /// assert_eq!(add.target_values(), 2);
    /// ```
    pub fn target_values(&self) -> usize {
        use Instruction::*;
        match self {
            AddTargets { values, .. }
            | RemoveTargets { values, .. }
            | AddUserTargets { values, .. }
            | RemoveUserTargets { values, .. } => values.len(),
            ReplaceTargets { targets } | ReplaceUserTargets { targets } => {
                targets.iter().map(|t| t.values.len()).sum()
            }
            _ => 0,
        }
    }

    /// The policy action the instruction needs (see [`crate::policy::actions`]): on the flag
    /// in the patch's environment when [`Instruction::is_environment_scoped`], else on the flag
    /// in every environment (`env/*`). Decided whether or not the instruction changes anything.
    ///
    /// ```
    /// use domain::instruction::Instruction;
    /// assert_eq!(Instruction::TurnFlagOn.action(), "updateOn");
    /// assert_eq!(Instruction::ArchiveFlag.action(), "updateGlobalArchived");
    /// ```
    pub fn action(&self) -> &'static str {
        InstructionKind::from(self).action()
    }
}

impl InstructionKind {
    /// The policy action an instruction of this kind needs (see [`crate::policy::actions`]).
    pub fn action(self) -> &'static str {
        use InstructionKind::*;
        match self {
            TurnFlagOn | TurnFlagOff => "updateOn",
            AddTargets | RemoveTargets | ReplaceTargets | ClearTargets | AddUserTargets
            | RemoveUserTargets | ReplaceUserTargets | ClearUserTargets => "updateTargets",
            AddRule
            | RemoveRule
            | ReorderRules
            | ReplaceRules
            | UpdateRuleDescription
            | UpdateRuleTrackEvents
            | UpdateRuleVariationOrRollout
            | AddClauses
            | RemoveClauses
            | UpdateClause
            | AddValuesToClause
            | RemoveValuesFromClause => "updateRules",
            UpdateFallthroughVariationOrRollout => "updateFallthrough",
            UpdateOffVariation => "updateOffVariation",
            AddPrerequisite | RemovePrerequisite | UpdatePrerequisite | ReplacePrerequisites => {
                "updatePrerequisites"
            }
            UpdateTrackEvents => "updateTrackEvents",
            UpdateTrackEventsFallthrough => "updateTrackEventsFallthrough",
            AddVariation | RemoveVariation | UpdateVariation => "updateFlagVariations",
            UpdateDefaultVariation => "updateFlagDefaults",
            UpdateName => "updateName",
            UpdateDescription => "updateDescription",
            AddTags | RemoveTags => "updateTags",
            MakeFlagPermanent | MakeFlagTemporary => "updateTemporary",
            AddCustomProperties | ReplaceCustomProperties | RemoveCustomProperties => {
                "updateFlagCustomProperties"
            }
            UpdateMaintainerMember | UpdateMaintainerTeam | RemoveMaintainer => "updateMaintainer",
            TurnOnClientSideAvailability | TurnOffClientSideAvailability => {
                "updateClientSideFlagAvailability"
            }
            ArchiveFlag | RestoreFlag => "updateGlobalArchived",
            DeprecateFlag | RestoreDeprecatedFlag => "updateDeprecated",
            DeleteFlag => "deleteFlag",
        }
    }
}

impl Instruction {
    /// Whether the instruction acts on one environment (and so needs `environmentKey`): what
    /// its action ([`Instruction::action`]) changes is per environment.
    pub fn is_environment_scoped(&self) -> bool {
        matches!(
            self.action(),
            "updateOn"
                | "updateTargets"
                | "updateRules"
                | "updateFallthrough"
                | "updateOffVariation"
                | "updatePrerequisites"
                | "updateTrackEvents"
                | "updateTrackEventsFallthrough"
        )
    }

    /// Whether applying the instruction needs to know the project's other flags (prerequisites,
    /// variations other flags may point at, archiving).
    pub fn involves_other_flags(&self) -> bool {
        use Instruction::*;
        matches!(
            self,
            AddPrerequisite { .. }
                | RemovePrerequisite { .. }
                | UpdatePrerequisite { .. }
                | ReplacePrerequisites { .. }
                | AddVariation { .. }
                | RemoveVariation { .. }
                | ArchiveFlag
                | RestoreFlag
        )
    }

    /// The instruction's `kind`.
    pub fn kind(&self) -> String {
        match serde_json::to_value(self) {
            Ok(Value::Object(fields)) => fields
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            _ => String::new(),
        }
    }
}

/// Why a semantic patch was refused (HTTP 400; a conflict with other flags is HTTP 409).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstructionError {
    /// The body is not a semantic patch.
    #[error("{0}")]
    Malformed(String),
    /// One instruction is ill-formed or cannot be applied.
    #[error("instruction {index}: {message}")]
    Instruction {
        /// Its index in `instructions`.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The change would break flags that depend on this one.
    #[error("instruction {index}: {message}")]
    Conflict {
        /// Its index in `instructions`.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// The result breaks a rule of the model.
    #[error("the result is invalid: {0}")]
    Invalid(#[from] ValidationError),
}

/// A parsed semantic patch body.
///
/// ```
/// use domain::instruction::{Instruction, SemanticPatch};
/// let patch = SemanticPatch::parse(serde_json::json!({
///     "environmentKey": "production",
///     "instructions": [{"kind": "turnFlagOn"}]})).unwrap();
/// assert_eq!(patch.instructions, vec![Instruction::TurnFlagOn]);
/// let err = SemanticPatch::parse(serde_json::json!({"instructions": [{"kind": "fly"}]})).unwrap_err();
/// assert!(err.to_string().starts_with("instruction 0: unknown variant `fly`"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticPatch {
    /// The environment that environment-scoped instructions act on.
    pub environment_key: Option<String>,
    /// A comment for the audit log.
    pub comment: Option<String>,
    /// The instructions, applied in order.
    pub instructions: Vec<Instruction>,
}

impl SemanticPatch {
    /// Reads a semantic patch body.
    ///
    /// # Errors
    /// [`InstructionError`] for a body that is not an object with an `instructions` array of at
    /// most [`MAX_INSTRUCTIONS`], or an instruction with an unknown kind or missing or ill-typed
    /// parameters (naming its index).
    pub fn parse(body: Value) -> Result<Self, InstructionError> {
        let (environment_key, comment, instructions) = parse_body::<Instruction>(body)?;
        // Refused before anything runs: a flag environment holds at most this many targets, so
        // a request never needs to name more.
        let values: usize = instructions.iter().map(Instruction::target_values).sum();
        if values > crate::MAX_TARGETS {
            return Err(InstructionError::Malformed(format!(
                "{values} target values in one request; at most {} (the most a flag environment holds)",
                crate::MAX_TARGETS
            )));
        }
        Ok(Self {
            environment_key,
            comment,
            instructions,
        })
    }
}

/// The most instructions one semantic patch may have.
pub const MAX_INSTRUCTIONS: usize = 1000;

/// `environmentKey`, `comment` and the instructions of a semantic patch body.
pub(crate) type PatchBody<T> = (Option<String>, Option<String>, Vec<T>);

/// Reads the body every semantic patch shares (flags' and segments'):
/// `{environmentKey?, comment?, instructions: [...]}`, refusing other fields.
pub(crate) fn parse_body<T: DeserializeOwned + Serialize>(
    body: Value,
) -> Result<PatchBody<T>, InstructionError> {
    let Value::Object(mut fields) = body else {
        return Err(InstructionError::Malformed(
            "a semantic patch is an object: {\"environmentKey\", \"comment\", \"instructions\": [...]}".into(),
        ));
    };
    let string_field = |fields: &mut Map<String, Value>, name: &str| match fields.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(InstructionError::Malformed(format!(
            "'{name}' must be a string"
        ))),
    };
    let environment_key = string_field(&mut fields, "environmentKey")?;
    let comment = string_field(&mut fields, "comment")?;
    let instructions = match fields.remove("instructions") {
        Some(Value::Array(items)) if items.len() > MAX_INSTRUCTIONS => {
            return Err(InstructionError::Malformed(format!(
                "a semantic patch has at most {MAX_INSTRUCTIONS} instructions (the limit of instructions per patch); this one has {}",
                items.len()
            )))
        }
        Some(Value::Array(items)) if !items.is_empty() => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| parse_instruction(i, item))
            .collect::<Result<Vec<_>, _>>()?,
        Some(Value::Array(_)) => {
            return Err(InstructionError::Malformed(
                "'instructions' must not be empty".into(),
            ))
        }
        Some(_) => {
            return Err(InstructionError::Malformed(
                "'instructions' must be an array".into(),
            ))
        }
        None => return Err(InstructionError::Malformed("missing 'instructions'".into())),
    };
    if let Some(other) = fields.keys().next() {
        return Err(InstructionError::Malformed(format!(
            "unexpected field '{other}' in semantic patch"
        )));
    }
    Ok((environment_key, comment, instructions))
}

/// Reads instruction `index`, refusing parameters its kind does not have (serde alone would
/// ignore them on kinds without parameters).
fn parse_instruction<T: DeserializeOwned + Serialize>(
    index: usize,
    value: Value,
) -> Result<T, InstructionError> {
    let fail = |message: String| InstructionError::Instruction { index, message };
    let Value::Object(fields) = &value else {
        return Err(fail(
            "an instruction must be an object with a 'kind'".into(),
        ));
    };
    let sent: Vec<String> = fields.keys().cloned().collect();
    let instruction: T = serde_json::from_value(value).map_err(|e| fail(e.to_string()))?;
    if let Ok(Value::Object(known)) = serde_json::to_value(&instruction) {
        let known: Vec<String> = known.keys().map(|k| k.to_lowercase()).collect();
        if let Some(unknown) = sent.iter().find(|k| !known.contains(&k.to_lowercase())) {
            return Err(fail(format!("unknown field `{unknown}`")));
        }
    }
    Ok(instruction)
}
