//! Variations as instructions name them: by `_id`, by value, or as a rollout of weights; and
//! where a flag uses a variation.

use serde_json::Value;

use super::{Flag, Rollout, VariationOrRollout, WeightedVariation};
use crate::instruction::ServeInput;

pub(super) fn variation_index(flag: &Flag, id: &str) -> Result<usize, String> {
    flag.variations
        .iter()
        .position(|v| v.id == id)
        .ok_or_else(|| format!("no variation with _id '{id}' in this flag"))
}

pub(super) fn resolve_serve(flag: &Flag, input: &ServeInput) -> Result<VariationOrRollout, String> {
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

pub(super) fn variation_with_value(flag: &Flag, value: &Value) -> Result<usize, String> {
    flag.variations
        .iter()
        .position(|v| super::validate::same_value(&v.value, value))
        .ok_or_else(|| format!("no variation has the value {value}"))
}
