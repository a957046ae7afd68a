//! Applying semantic-patch instructions to a flag.

use super::in_environment::apply_in_environment;
use super::project::{ProjectFlags, ProjectRuleError};
use super::serve::{variation_index, variation_use, variation_with_value};
use super::{CustomProperty, Flag, Variation, VariationOrRollout};
use crate::instruction::{Instruction, InstructionError, SemanticPatch};
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

fn availability_field<'a>(flag: &'a mut Flag, value: &str) -> Result<&'a mut bool, String> {
    match value {
        "usingMobileKey" => Ok(&mut flag.client_side_availability.using_mobile_key),
        "usingEnvironmentId" => Ok(&mut flag.client_side_availability.using_environment_id),
        other => Err(format!(
            "'{other}' is neither usingMobileKey nor usingEnvironmentId"
        )),
    }
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
    if apply_to_variations(flag, instruction, ids, project)?
        || apply_to_custom_properties(flag, instruction)?
    {
        return Ok(());
    }
    match instruction {
        UpdateName { value } => flag.name = value.clone(),
        UpdateDescription { value } => flag.description = value.clone(),
        AddTags { values } => flag.tags.extend(values.iter().cloned()),
        RemoveTags { values } => flag.tags.retain(|t| !values.contains(t)),
        MakeFlagPermanent => flag.temporary = false,
        MakeFlagTemporary => flag.temporary = true,
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

/// A flag's variations and the defaults of new environments: `Ok(false)` for an instruction of another group.
fn apply_to_variations(
    flag: &mut Flag,
    instruction: &Instruction,
    ids: &mut dyn IdSource,
    project: &ProjectFlags,
) -> Result<bool, String> {
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
        _ => return Ok(false),
    }
    Ok(true)
}

/// Custom properties: `Ok(false)` for an instruction of another group.
fn apply_to_custom_properties(flag: &mut Flag, instruction: &Instruction) -> Result<bool, String> {
    use Instruction::*;
    match instruction {
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
        _ => return Ok(false),
    }
    Ok(true)
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
