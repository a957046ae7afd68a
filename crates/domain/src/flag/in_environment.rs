//! Instructions that act on one environment's configuration of a flag: switches, targets,
//! rules and their clauses, prerequisites, event tracking.

use std::collections::HashSet;

use super::project::ProjectFlags;
use super::{Flag, FlagConfig, Prerequisite, Rule, Target, VariationOrRollout};
use crate::instruction::{ClauseInput, Instruction, TargetInput};
use crate::rules::{self, rule_mut};
use crate::IdSource;

use super::serve::{resolve_serve, variation_index};

type Step = Result<(), String>;

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

/// Applies one environment-scoped instruction to `env`'s configuration of `flag`.
pub(super) fn apply_in_environment(
    flag: &mut Flag,
    env: &str,
    instruction: &Instruction,
    ids: &mut dyn IdSource,
    project: &ProjectFlags,
) -> Step {
    let snapshot = flag.clone();
    let config = flag
        .environments
        .get_mut(env)
        .ok_or_else(|| format!("environment '{env}' does not exist in this project"))?;
    let applied = apply_settings(&snapshot, config, instruction)?
        || apply_targets(&snapshot, config, instruction)?
        || apply_rules(&snapshot, config, instruction, ids)?
        || apply_prerequisites(project, &snapshot, config, instruction)?;
    if applied {
        Ok(())
    } else {
        Err(format!(
            "'{}' does not act on an environment",
            instruction.kind()
        ))
    }
}

/// Switches, fallthrough, off variation and event tracking: `Ok(false)` for an instruction of another group.
fn apply_settings(
    snapshot: &Flag,
    config: &mut FlagConfig,
    instruction: &Instruction,
) -> Result<bool, String> {
    use Instruction::*;
    let index_of = |id: &str| variation_index(snapshot, id);
    match instruction {
        TurnFlagOn => config.on = true,
        TurnFlagOff => config.on = false,
        UpdateFallthroughVariationOrRollout { serve } => {
            config.fallthrough = resolve_serve(snapshot, serve)?;
        }
        UpdateOffVariation { variation_id } => config.off_variation = Some(index_of(variation_id)?),
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
        _ => return Ok(false),
    }
    Ok(true)
}

/// Individual targets: `Ok(false)` for an instruction of another group.
fn apply_targets(
    snapshot: &Flag,
    config: &mut FlagConfig,
    instruction: &Instruction,
) -> Result<bool, String> {
    use Instruction::*;
    let index_of = |id: &str| variation_index(snapshot, id);
    match instruction {
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
        ReplaceTargets { targets } => replace_targets(snapshot, config, targets, false)?,
        ReplaceUserTargets { targets } => replace_targets(snapshot, config, targets, true)?,
        ClearTargets { variation_id } => {
            let variation = index_of(variation_id)?;
            config.targets.retain(|t| t.variation != variation);
            config.context_targets.retain(|t| t.variation != variation);
        }
        ClearUserTargets { variation_id } => {
            let variation = index_of(variation_id)?;
            config.targets.retain(|t| t.variation != variation);
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// A new rule with fresh ids.
fn new_rule(
    ids: &mut dyn IdSource,
    clauses: &[ClauseInput],
    serve: VariationOrRollout,
    description: Option<String>,
    track_events: bool,
) -> Rule {
    Rule {
        id: ids.uuid(),
        clauses: rules::clauses_from(clauses, ids),
        track_events,
        variation: serve.variation,
        rollout: serve.rollout,
        description,
        disabled: false,
    }
}

/// Rules and their clauses: `Ok(false)` for an instruction of another group.
fn apply_rules(
    snapshot: &Flag,
    config: &mut FlagConfig,
    instruction: &Instruction,
    ids: &mut dyn IdSource,
) -> Result<bool, String> {
    use Instruction::*;
    match instruction {
        AddRule {
            clauses,
            before_rule_id,
            serve,
            description,
            track_events,
        } => {
            let serve = resolve_serve(snapshot, serve)?;
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
                let serve = resolve_serve(snapshot, &input.serve)
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
            let serve = resolve_serve(snapshot, serve)?;
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
        _ => return Ok(false),
    }
    Ok(true)
}

/// Prerequisites: `Ok(false)` for an instruction of another group.
fn apply_prerequisites(
    project: &ProjectFlags,
    snapshot: &Flag,
    config: &mut FlagConfig,
    instruction: &Instruction,
) -> Result<bool, String> {
    use Instruction::*;
    match instruction {
        AddPrerequisite { key, variation_id } => {
            let new = prerequisite(project, snapshot, key, variation_id)?;
            match config.prerequisites.iter().find(|p| &p.key == key) {
                Some(existing) if existing.variation == new.variation => {}
                Some(_) => return Err(format!("'{key}' is already a prerequisite; use updatePrerequisite to change its variation")),
                None => config.prerequisites.push(new),
            }
        }
        RemovePrerequisite { key } => config.prerequisites.retain(|p| &p.key != key),
        UpdatePrerequisite { key, variation_id } => {
            let new = prerequisite(project, snapshot, key, variation_id)?;
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
                    snapshot,
                    &input.key,
                    &input.variation_id,
                )?);
            }
            config.prerequisites = replaced;
        }
        _ => return Ok(false),
    }
    Ok(true)
}
