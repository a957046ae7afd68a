//! Applying semantic-patch instructions to a flag.

use std::collections::HashSet;

use serde_json::Value;

use super::project::{ProjectFlags, ProjectRuleError};
use super::{
    CustomProperty, Flag, FlagConfig, Prerequisite, Rollout, Rule, Target, Variation,
    VariationOrRollout, WeightedVariation,
};
use crate::instruction::{
    ClauseInput, Instruction, InstructionError, SemanticPatch, ServeInput, TargetInput,
};
use crate::IdSource;

/// The result of a semantic patch.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchOutcome {
    /// The flag after the instructions (`_version` grown only if something changed).
    pub flag: Flag,
    /// Whether a `deleteFlag` instruction asks for the flag to be deleted.
    pub delete: bool,
}

type Step = Result<(), String>;

fn variation_index(flag: &Flag, id: &str) -> Result<usize, String> {
    flag.variations
        .iter()
        .position(|v| v.id == id)
        .ok_or_else(|| format!("no variation with _id '{id}' in this flag"))
}

fn resolve_serve(flag: &Flag, input: &ServeInput) -> Result<VariationOrRollout, String> {
    match (&input.variation_id, &input.rollout_weights) {
        (Some(id), None) => Ok(VariationOrRollout {
            variation: Some(variation_index(flag, id)?),
            rollout: None,
        }),
        (None, Some(weights)) => {
            let mut variations = Vec::with_capacity(weights.len());
            for (id, weight) in weights {
                variations.push(WeightedVariation {
                    variation: variation_index(flag, id)?,
                    weight: *weight,
                    untracked: false,
                });
            }
            variations.sort_by_key(|w| w.variation);
            Ok(VariationOrRollout {
                variation: None,
                rollout: Some(Rollout {
                    variations,
                    bucket_by: input.rollout_bucket_by.clone(),
                    context_kind: input.rollout_context_kind.clone(),
                    seed: None,
                }),
            })
        }
        _ => Err("needs exactly one of 'variationId' and 'rolloutWeights'".into()),
    }
}

use crate::rules::{self, rule_mut};

fn targets_of_kind<'a>(config: &'a mut FlagConfig, kind: &str) -> &'a mut Vec<Target> {
    if kind == "user" {
        &mut config.targets
    } else {
        &mut config.context_targets
    }
}

/// Targets `values` (of context kind `kind`) with `variation`. Linear in the values and the
/// targets already there: membership is checked through sets, not list scans.
fn add_targets(config: &mut FlagConfig, values: &[String], variation: usize, kind: &str) -> Step {
    let list = targets_of_kind(config, kind);
    let wanted: HashSet<&str> = values.iter().map(String::as_str).collect();
    for other in list
        .iter()
        .filter(|t| t.context_kind == kind && t.variation != variation)
    {
        if let Some(value) = other.values.iter().find(|v| wanted.contains(v.as_str())) {
            return Err(format!(
                "'{value}' ({kind}) is already targeted by variation {}",
                other.variation
            ));
        }
    }
    let index = match list
        .iter()
        .position(|t| t.variation == variation && t.context_kind == kind)
    {
        Some(index) => index,
        None => {
            list.push(Target {
                values: vec![],
                variation,
                context_kind: kind.to_owned(),
            });
            list.len() - 1
        }
    };
    let mut present: HashSet<String> = list[index].values.iter().cloned().collect();
    for value in values {
        if present.insert(value.clone()) {
            list[index].values.push(value.clone());
        }
    }
    if list[index].values.is_empty() {
        list.remove(index);
    }
    Ok(())
}

fn remove_targets(config: &mut FlagConfig, values: &[String], variation: usize, kind: &str) {
    let list = targets_of_kind(config, kind);
    for target in list
        .iter_mut()
        .filter(|t| t.variation == variation && t.context_kind == kind)
    {
        let gone: HashSet<&str> = values.iter().map(String::as_str).collect();
        target.values.retain(|v| !gone.contains(v.as_str()));
    }
    list.retain(|t| !t.values.is_empty());
}

fn replace_targets(
    flag: &Flag,
    config: &mut FlagConfig,
    targets: &[TargetInput],
    users_only: bool,
) -> Step {
    config.targets.clear();
    if !users_only {
        config.context_targets.clear();
    }
    for target in targets {
        let kind = target.context_kind.as_deref().unwrap_or("user");
        if users_only && kind != "user" {
            return Err("user targets have context kind 'user'".into());
        }
        add_targets(
            config,
            &target.values,
            variation_index(flag, &target.variation_id)?,
            kind,
        )?;
    }
    Ok(())
}

/// Where a variation index is used in this flag, if anywhere.
pub(crate) fn variation_use(flag: &Flag, index: usize) -> Option<String> {
    if flag.defaults.on_variation == index || flag.defaults.off_variation == index {
        return Some("the flag's defaults".into());
    }
    for (env, config) in &flag.environments {
        let serves = |s: &VariationOrRollout| {
            s.variation == Some(index)
                || s.rollout.as_ref().is_some_and(|r| {
                    r.variations
                        .iter()
                        .any(|w| w.variation == index && w.weight > 0)
                })
        };
        let used = if config.off_variation == Some(index) {
            Some("the off variation")
        } else if serves(&config.fallthrough) {
            Some("the default rule")
        } else if config.rules.iter().any(|r| {
            serves(&VariationOrRollout {
                variation: r.variation,
                rollout: r.rollout.clone(),
            })
        }) {
            Some("a rule")
        } else if config
            .targets
            .iter()
            .chain(&config.context_targets)
            .any(|t| t.variation == index)
        {
            Some("individual targets")
        } else {
            None
        };
        if let Some(what) = used {
            return Some(format!("{what} in '{env}'"));
        }
    }
    None
}

/// Removes variation `index` and renumbers every reference to the ones after it.
fn remove_variation(flag: &mut Flag, index: usize) {
    flag.variations.remove(index);
    let shift = |v: &mut usize| {
        if *v > index {
            *v -= 1;
        }
    };
    shift(&mut flag.defaults.on_variation);
    shift(&mut flag.defaults.off_variation);
    let shift_serve = |s: &mut VariationOrRollout| {
        if let Some(v) = s.variation.as_mut() {
            shift(v);
        }
        if let Some(rollout) = s.rollout.as_mut() {
            rollout.variations.retain(|w| w.variation != index);
            rollout
                .variations
                .iter_mut()
                .for_each(|w| shift(&mut w.variation));
        }
    };
    for config in flag.environments.values_mut() {
        if let Some(v) = config.off_variation.as_mut() {
            shift(v);
        }
        shift_serve(&mut config.fallthrough);
        for rule in &mut config.rules {
            let mut serve = VariationOrRollout {
                variation: rule.variation,
                rollout: rule.rollout.take(),
            };
            shift_serve(&mut serve);
            rule.variation = serve.variation;
            rule.rollout = serve.rollout;
        }
        for target in config
            .targets
            .iter_mut()
            .chain(config.context_targets.iter_mut())
        {
            shift(&mut target.variation);
        }
    }
}

fn prerequisite(
    project: &ProjectFlags,
    flag: &Flag,
    key: &str,
    variation_id: &str,
) -> Result<Prerequisite, String> {
    if key == flag.key {
        return Err("a flag cannot be its own prerequisite".into());
    }
    let other = project
        .get(key)
        .ok_or_else(|| format!("no flag '{key}' in this project"))?;
    if other.archived {
        return Err(format!(
            "flag '{key}' is archived and cannot be a prerequisite"
        ));
    }
    let variation = other
        .variation_ids
        .iter()
        .position(|id| id == variation_id)
        .ok_or_else(|| format!("flag '{key}' has no variation with _id '{variation_id}'"))?;
    Ok(Prerequisite {
        key: key.to_owned(),
        variation,
    })
}

fn availability_field<'a>(flag: &'a mut Flag, value: &str) -> Result<&'a mut bool, String> {
    match value {
        "usingMobileKey" => Ok(&mut flag.client_side_availability.using_mobile_key),
        "usingEnvironmentId" => Ok(&mut flag.client_side_availability.using_environment_id),
        other => Err(format!(
            "'{other}' is neither usingMobileKey nor usingEnvironmentId"
        )),
    }
}

fn variation_with_value(flag: &Flag, value: &Value) -> Result<usize, String> {
    flag.variations
        .iter()
        .position(|v| super::validate::same_value(&v.value, value))
        .ok_or_else(|| format!("no variation has the value {value}"))
}

/// Applies one environment-scoped instruction to `env`'s configuration of `flag`.
fn apply_in_environment(
    flag: &mut Flag,
    env: &str,
    instruction: &Instruction,
    ids: &mut dyn IdSource,
    project: &ProjectFlags,
) -> Step {
    use Instruction::*;
    let snapshot = flag.clone();
    let config = flag
        .environments
        .get_mut(env)
        .ok_or_else(|| format!("environment '{env}' does not exist in this project"))?;
    let index_of = |id: &str| variation_index(&snapshot, id);
    let new_rule = |ids: &mut dyn IdSource,
                    clauses: &[ClauseInput],
                    serve: VariationOrRollout,
                    description: Option<String>,
                    track: bool| Rule {
        id: ids.uuid(),
        clauses: rules::clauses_from(clauses, ids),
        track_events: track,
        variation: serve.variation,
        rollout: serve.rollout,
        description,
        disabled: false,
    };
    match instruction {
        TurnFlagOn => config.on = true,
        TurnFlagOff => config.on = false,
        AddTargets {
            values,
            variation_id,
            context_kind,
        } => {
            add_targets(
                config,
                values,
                index_of(variation_id)?,
                context_kind.as_deref().unwrap_or("user"),
            )?;
        }
        RemoveTargets {
            values,
            variation_id,
            context_kind,
        } => {
            remove_targets(
                config,
                values,
                index_of(variation_id)?,
                context_kind.as_deref().unwrap_or("user"),
            );
        }
        AddUserTargets {
            values,
            variation_id,
        } => add_targets(config, values, index_of(variation_id)?, "user")?,
        RemoveUserTargets {
            values,
            variation_id,
        } => remove_targets(config, values, index_of(variation_id)?, "user"),
        ReplaceTargets { targets } => replace_targets(&snapshot, config, targets, false)?,
        ReplaceUserTargets { targets } => replace_targets(&snapshot, config, targets, true)?,
        ClearTargets { variation_id } => {
            let variation = index_of(variation_id)?;
            config.targets.retain(|t| t.variation != variation);
            config.context_targets.retain(|t| t.variation != variation);
        }
        ClearUserTargets { variation_id } => {
            let variation = index_of(variation_id)?;
            config.targets.retain(|t| t.variation != variation);
        }
        AddRule {
            clauses,
            before_rule_id,
            serve,
            description,
            track_events,
        } => {
            let serve = resolve_serve(&snapshot, serve)?;
            let rule = new_rule(
                ids,
                clauses,
                serve,
                description.clone(),
                track_events.unwrap_or(false),
            );
            match before_rule_id {
                Some(before) => {
                    let position = config
                        .rules
                        .iter()
                        .position(|r| &r.id == before)
                        .ok_or_else(|| format!("no rule with _id '{before}'"))?;
                    config.rules.insert(position, rule);
                }
                None => config.rules.push(rule),
            }
        }
        RemoveRule { rule_id } => rules::remove_rule(&mut config.rules, rule_id),
        ReorderRules { rule_ids } => rules::reorder_rules(&mut config.rules, rule_ids)?,
        ReplaceRules { rules: inputs } => {
            let mut replaced = Vec::with_capacity(inputs.len());
            for (i, input) in inputs.iter().enumerate() {
                let serve = resolve_serve(&snapshot, &input.serve)
                    .map_err(|e| format!("rules[{i}]: {e}"))?;
                replaced.push(new_rule(
                    ids,
                    &input.clauses,
                    serve,
                    input.description.clone(),
                    input.track_events,
                ));
            }
            config.rules = replaced;
        }
        UpdateRuleDescription {
            rule_id,
            description,
        } => rule_mut(&mut config.rules, rule_id)?.description = Some(description.clone()),
        UpdateRuleTrackEvents {
            rule_id,
            track_events,
        } => rule_mut(&mut config.rules, rule_id)?.track_events = *track_events,
        UpdateRuleVariationOrRollout { rule_id, serve } => {
            let serve = resolve_serve(&snapshot, serve)?;
            let rule = rule_mut(&mut config.rules, rule_id)?;
            rule.variation = serve.variation;
            rule.rollout = serve.rollout;
        }
        AddClauses { rule_id, clauses } => {
            rules::add_clauses(&mut config.rules, rule_id, clauses, ids)?
        }
        RemoveClauses {
            rule_id,
            clause_ids,
        } => rules::remove_clauses(&mut config.rules, rule_id, clause_ids)?,
        UpdateClause {
            rule_id,
            clause_id,
            clause,
        } => rules::update_clause(&mut config.rules, rule_id, clause_id, clause)?,
        AddValuesToClause {
            rule_id,
            clause_id,
            values,
        } => {
            rules::add_clause_values(&mut config.rules, rule_id, clause_id, values)?;
        }
        RemoveValuesFromClause {
            rule_id,
            clause_id,
            values,
        } => {
            rules::remove_clause_values(&mut config.rules, rule_id, clause_id, values)?;
        }
        UpdateFallthroughVariationOrRollout { serve } => {
            config.fallthrough = resolve_serve(&snapshot, serve)?;
        }
        UpdateOffVariation { variation_id } => config.off_variation = Some(index_of(variation_id)?),
        AddPrerequisite { key, variation_id } => {
            let new = prerequisite(project, &snapshot, key, variation_id)?;
            match config.prerequisites.iter().find(|p| &p.key == key) {
                Some(existing) if existing.variation == new.variation => {}
                Some(_) => return Err(format!("'{key}' is already a prerequisite; use updatePrerequisite to change its variation")),
                None => config.prerequisites.push(new),
            }
        }
        RemovePrerequisite { key } => config.prerequisites.retain(|p| &p.key != key),
        UpdatePrerequisite { key, variation_id } => {
            let new = prerequisite(project, &snapshot, key, variation_id)?;
            let existing = config
                .prerequisites
                .iter_mut()
                .find(|p| &p.key == key)
                .ok_or_else(|| format!("'{key}' is not a prerequisite"))?;
            existing.variation = new.variation;
        }
        ReplacePrerequisites { prerequisites } => {
            let mut replaced = Vec::with_capacity(prerequisites.len());
            for input in prerequisites {
                if replaced.iter().any(|p: &Prerequisite| p.key == input.key) {
                    return Err(format!("'{}' is listed twice", input.key));
                }
                replaced.push(prerequisite(
                    project,
                    &snapshot,
                    &input.key,
                    &input.variation_id,
                )?);
            }
            config.prerequisites = replaced;
        }
        UpdateTrackEvents { track_events } => {
            config.track_events = *track_events;
            config
                .rules
                .iter_mut()
                .for_each(|r| r.track_events = *track_events);
        }
        UpdateTrackEventsFallthrough { track_events } => {
            config.track_events_fallthrough = *track_events
        }
        other => return Err(format!("'{}' does not act on an environment", other.kind())),
    }
    Ok(())
}

/// Applies one flag-wide instruction.
fn apply_to_flag(
    flag: &mut Flag,
    instruction: &Instruction,
    ids: &mut dyn IdSource,
    project: &ProjectFlags,
    delete: &mut bool,
) -> Step {
    use Instruction::*;
    match instruction {
        AddVariation {
            value,
            name,
            description,
        } => {
            flag.variations.push(Variation {
                id: ids.uuid(),
                value: value.clone(),
                name: name.clone(),
                description: description.clone(),
            });
        }
        RemoveVariation { variation_id } => {
            let index = variation_index(flag, variation_id)?;
            if let Some(place) = variation_use(flag, index) {
                return Err(format!(
                    "variation '{variation_id}' is used by {place}; stop using it first"
                ));
            }
            if let Some((dependent, edge)) = project
                .dependents_of(&flag.key)
                .into_iter()
                .find(|(_, e)| e.variation >= index)
            {
                return Err(format!(
                    "flag '{dependent}' uses variation {} of this flag as a prerequisite in '{}'; removing variation {index} would change it",
                    edge.variation, edge.environment
                ));
            }
            remove_variation(flag, index);
        }
        UpdateVariation {
            variation_id,
            value,
            name,
            description,
        } => {
            let index = variation_index(flag, variation_id)?;
            let variation = &mut flag.variations[index];
            if let Some(value) = value {
                variation.value = value.clone();
            }
            if let Some(name) = name {
                variation.name = Some(name.clone());
            }
            if let Some(description) = description {
                variation.description = Some(description.clone());
            }
        }
        UpdateDefaultVariation {
            on_variation_value,
            off_variation_value,
        } => {
            if on_variation_value.is_none() && off_variation_value.is_none() {
                return Err("needs onVariationValue or offVariationValue".into());
            }
            if let Some(value) = on_variation_value {
                flag.defaults.on_variation = variation_with_value(flag, value)?;
            }
            if let Some(value) = off_variation_value {
                flag.defaults.off_variation = variation_with_value(flag, value)?;
            }
        }
        UpdateName { value } => flag.name = value.clone(),
        UpdateDescription { value } => flag.description = value.clone(),
        AddTags { values } => flag.tags.extend(values.iter().cloned()),
        RemoveTags { values } => flag.tags.retain(|t| !values.contains(t)),
        MakeFlagPermanent => flag.temporary = false,
        MakeFlagTemporary => flag.temporary = true,
        AddCustomProperties { key, name, values } => {
            let property = flag
                .custom_properties
                .entry(key.clone())
                .or_insert_with(|| CustomProperty {
                    name: name.clone(),
                    value: vec![],
                });
            property.name = name.clone();
            for value in values {
                if !property.value.contains(value) {
                    property.value.push(value.clone());
                }
            }
        }
        ReplaceCustomProperties { key, name, values } => {
            flag.custom_properties.insert(
                key.clone(),
                CustomProperty {
                    name: name.clone(),
                    value: values.clone(),
                },
            );
        }
        RemoveCustomProperties { key, values } => {
            if let Some(property) = flag.custom_properties.get_mut(key) {
                property.value.retain(|v| !values.contains(v));
                if property.value.is_empty() {
                    flag.custom_properties.remove(key);
                }
            }
        }
        UpdateMaintainerMember { value } => {
            flag.maintainer_id = Some(value.clone());
            flag.maintainer_team_key = None;
        }
        UpdateMaintainerTeam { value } => {
            flag.maintainer_team_key = Some(value.clone());
            flag.maintainer_id = None;
        }
        RemoveMaintainer => {
            flag.maintainer_id = None;
            flag.maintainer_team_key = None;
        }
        TurnOnClientSideAvailability { value } => *availability_field(flag, value)? = true,
        TurnOffClientSideAvailability { value } => *availability_field(flag, value)? = false,
        ArchiveFlag | RestoreFlag => {
            let archived = matches!(instruction, ArchiveFlag);
            flag.archived = archived;
            flag.environments
                .values_mut()
                .for_each(|c| c.archived = archived);
        }
        DeprecateFlag => flag.deprecated = true,
        RestoreDeprecatedFlag => flag.deprecated = false,
        DeleteFlag => *delete = true,
        other => return Err(format!("'{}' needs an environment", other.kind())),
    }
    Ok(())
}

impl Flag {
    /// Applies a semantic patch: every instruction or none, then every invariant of the flag and
    /// of its project.
    ///
    /// `project` describes the other flags of the project; it is consulted when an instruction
    /// [involves other flags](Instruction::involves_other_flags) (an empty [`ProjectFlags`] will
    /// do for the others).
    ///
    /// ```
    /// # use domain::flag::{Flag, NewFlag, ProjectFlags};
    /// # use domain::key::FlagKey;
    /// use domain::instruction::SemanticPatch;
    /// # let mut ids = domain::SequentialIds::default();
    /// # let mut flag = Flag::create(NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"), 1, &mut ids).unwrap();
    /// # for env in ["test", "production"] { let c = flag.new_config(env, 1, &mut ids); flag.environments.insert(env.into(), c); }
    /// let on = flag.variations[0].id.clone();
    /// let patch = SemanticPatch::parse(serde_json::json!({
    ///     "environmentKey": "production",
    ///     "instructions": [
    ///         {"kind": "turnFlagOn"},
    ///         {"kind": "addTargets", "values": ["alice"], "variationId": on}]})).unwrap();
    /// let next = flag.apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default()).unwrap().flag;
    /// assert!(next.environments["production"].on);
    /// assert_eq!(next.environments["production"].targets[0].values, ["alice"]);
    /// assert!(!next.environments["test"].on);
    /// assert_eq!(next.version, flag.version + 1);
    /// // Already so: succeeds without a change.
    /// assert_eq!(next.apply_instructions(&patch, 3, &mut ids, &ProjectFlags::default()).unwrap().flag.version, next.version);
    /// ```
    ///
    /// # Errors
    /// [`InstructionError::Instruction`] naming the failing instruction (a missing
    /// `environmentKey`, an unknown environment, variation, rule or clause, ...);
    /// [`InstructionError::Invalid`] for a result that breaks a rule of the model;
    /// [`InstructionError::Conflict`] for a change that would break flags that depend on this one.
    pub fn apply_instructions(
        &self,
        patch: &SemanticPatch,
        now: i64,
        ids: &mut dyn IdSource,
        project: &ProjectFlags,
    ) -> Result<PatchOutcome, InstructionError> {
        let mut next = self.clone();
        let mut delete = false;
        for (index, instruction) in patch.instructions.iter().enumerate() {
            let fail = |message: String| InstructionError::Instruction { index, message };
            // The flag is gone after it: a later change would be answered but never made.
            if delete {
                return Err(fail(format!(
                    "'{}' follows 'deleteFlag', which must be the last instruction",
                    instruction.kind()
                )));
            }
            if instruction.is_environment_scoped() {
                let env = patch.environment_key.as_deref().ok_or_else(|| {
                    fail(format!(
                        "'{}' needs 'environmentKey' in the request body",
                        instruction.kind()
                    ))
                })?;
                apply_in_environment(&mut next, env, instruction, ids, project).map_err(fail)?;
            } else {
                apply_to_flag(&mut next, instruction, ids, project, &mut delete).map_err(fail)?;
            }
        }
        crate::normalize_tags(&mut next.tags);
        next.validate_since(Some(self))?;
        // Switching targeting is never refused for the flag's size: it changes a boolean and
        // the versions (a byte or a digit), and it is the kill switch of a flag that a new
        // environment's configuration pushed past the limit.
        let only_switches = patch
            .instructions
            .iter()
            .all(|i| matches!(i, Instruction::TurnFlagOn | Instruction::TurnFlagOff));
        if !only_switches {
            crate::patch::check_growth(self, &next)
                .map_err(|e| InstructionError::Malformed(e.to_string()))?;
        }
        if next.needs_project_check(self) {
            let last = patch.instructions.len().saturating_sub(1);
            next.validate_in_project(self, project)
                .map_err(|e| match e {
                    ProjectRuleError::Invalid(v) => InstructionError::Invalid(v),
                    ProjectRuleError::Conflict(message) => InstructionError::Conflict {
                        index: last,
                        message,
                    },
                })?;
        }
        next.settle_change(self, now);
        Ok(PatchOutcome { flag: next, delete })
    }
}
