//! Semantic-patch instructions of flags, segments and teams, as the domain reads them: schemas
//! of `domain::instruction::Instruction` (with its inputs), `domain::segment::SegmentInstruction`
//! and `domain::team::TeamInstruction`.

use std::collections::BTreeMap;

use super::flags::Operator;
use serde_json::Value;
use utoipa::ToSchema;

/// One instruction of a semantic patch, tagged by `kind`. Unknown parameters are refused by
/// [`SemanticPatch::parse`].
#[derive(Debug, ToSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
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
    #[schema(title = "AddValuesToClause")]
    #[serde(rename_all = "camelCase")]
    AddValuesToClause {
        rule_id: String,
        clause_id: String,
        #[schema(max_items = 1000)]
        values: Vec<Value>,
    },
    /// Remove values from a clause.
    #[serde(rename_all = "camelCase")]
    RemoveValuesFromClause {
        rule_id: String,
        clause_id: String,
        #[schema(max_items = 1000)]
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
    /// Set the maintaining member.
    #[serde(rename_all = "camelCase")]
    UpdateMaintainerMember { value: String },
    /// Set the maintaining team, by the key of an existing team (the maintaining member, if any,
    /// is removed).
    #[serde(rename_all = "camelCase")]
    UpdateMaintainerTeam { value: String },
    /// Remove the maintainer.
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

/// A clause as sent in an instruction.
#[derive(Debug, ToSchema)]
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
    #[schema(max_items = 1000)]
    pub values: Vec<Value>,
}

/// What a rule or the fallthrough serves: `variationId`, or `rolloutWeights` (variation id ->
/// weight in thousandths of a percent) with optional `rolloutBucketBy` and `rolloutContextKind`.
#[derive(Debug, ToSchema)]
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
#[derive(Debug, ToSchema)]
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
#[derive(Debug, ToSchema)]
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
#[derive(Debug, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrerequisiteInput {
    /// The prerequisite flag's key.
    pub key: String,
    /// The prerequisite flag's variation, by `_id`.
    pub variation_id: String,
}

/// One segment instruction, tagged by `kind` (big-segment kinds are not supported).
#[derive(Debug, ToSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
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
        #[schema(max_items = 1000)]
        values: Vec<Value>,
    },
    /// Remove values from a clause.
    #[serde(rename_all = "camelCase")]
    RemoveValuesFromClause {
        rule_id: String,
        clause_id: String,
        #[schema(max_items = 1000)]
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

/// One team instruction, tagged by `kind`.
#[derive(Debug, ToSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TeamInstruction {
    /// Give the team's members these custom roles (keys of existing roles).
    AddCustomRoles { values: Vec<String> },
    /// Take these custom roles (keys) from the team.
    RemoveCustomRoles { values: Vec<String> },
    /// Add these members (`_id`s of existing members).
    AddMembers { values: Vec<String> },
    /// Remove these members (`_id`s).
    RemoveMembers { values: Vec<String> },
    /// Make these members (`_id`s of existing members) the team's only ones.
    ReplaceMembers { values: Vec<String> },
    /// Rename the team.
    UpdateName { value: String },
    /// Change the team's description.
    UpdateDescription { value: String },
}
