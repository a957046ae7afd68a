//! The evaluation algorithm: off, prerequisites, individual targets, rules, fallthrough, as the
//! original's SDKs compute it.

use serde_json::Value;

use super::bucket::{bucket, BucketBy};
use super::context::{AttributeRef, Context};
use super::model::{
    Clause, FlagRule, RolloutKind, SdkFlag, SdkSegment, Target, VariationOrRollout, USER_KIND,
};
use super::operators;
use super::reason::{Detail, ErrorKind, Reason};

/// The most prerequisites and segments deep an evaluation follows: deeper chains are
/// malformed (a cycle is one, found at once).
pub const MAX_DEPTH: usize = 64;

/// Where an evaluation finds the flags that prerequisites name and the segments that clauses
/// name.
pub trait FlagData {
    /// The flag with `key`, if there is one (a deleted one is none).
    fn flag(&self, key: &str) -> Option<&SdkFlag>;
    /// The segment with `key`, if there is one (a deleted one is none).
    fn segment(&self, key: &str) -> Option<&SdkSegment>;
}

/// An evaluation failed in a way that makes the flag malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Malformed;

/// The flags and segments an evaluation is inside of: a cycle is found when one comes again.
#[derive(Debug, Default)]
struct Stack<'a> {
    flags: Vec<&'a str>,
    segments: Vec<&'a str>,
}

/// Evaluates `flag` for `context`, finding prerequisites and segments in `data`.
pub fn evaluate(flag: &SdkFlag, context: &Context, data: &dyn FlagData) -> Detail {
    evaluate_in(flag, context, data, &mut Stack::default())
}

fn evaluate_in<'a>(
    flag: &'a SdkFlag,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
) -> Detail {
    if !flag.on {
        return off_value(flag, Reason::Off);
    }
    if stack.flags.contains(&flag.key.as_str()) || stack.flags.len() >= MAX_DEPTH {
        return off_value(
            flag,
            Reason::Error {
                error_kind: ErrorKind::MalformedFlag,
            },
        );
    }
    stack.flags.push(&flag.key);
    for prerequisite in &flag.prerequisites {
        let Some(required) = data.flag(&prerequisite.key) else {
            return off_value(flag, prerequisite_failed(&prerequisite.key));
        };
        if stack.flags.contains(&required.key.as_str()) {
            return Detail::error(ErrorKind::MalformedFlag);
        }
        let result = evaluate_in(required, context, data, stack);
        if matches!(result.reason, Reason::Error { .. }) {
            return Detail::error(ErrorKind::MalformedFlag);
        }
        let served = result.variation_index.and_then(|i| i64::try_from(i).ok());
        if !required.on || served != Some(prerequisite.variation) {
            return off_value(flag, prerequisite_failed(&prerequisite.key));
        }
    }
    stack.flags.pop();
    if let Some(variation) = target_match(flag, context) {
        return variation_of(flag, variation, Reason::TargetMatch);
    }
    for (rule_index, rule) in flag.rules.iter().enumerate() {
        match rule_matches(rule, context, data, stack) {
            Err(Malformed) => return Detail::error(ErrorKind::MalformedFlag),
            Ok(false) => {}
            Ok(true) => {
                return match serve(flag, &rule.serve, context) {
                    Ok((variation, in_experiment)) => variation_of(
                        flag,
                        variation,
                        Reason::RuleMatch {
                            rule_index,
                            rule_id: rule.id.clone().filter(|id| !id.is_empty()),
                            in_experiment,
                        },
                    ),
                    Err(Malformed) => Detail::error(ErrorKind::MalformedFlag),
                }
            }
        }
    }
    match serve(flag, &flag.fallthrough, context) {
        Ok((variation, in_experiment)) => {
            variation_of(flag, variation, Reason::Fallthrough { in_experiment })
        }
        Err(Malformed) => Detail::error(ErrorKind::MalformedFlag),
    }
}

fn prerequisite_failed(key: &str) -> Reason {
    Reason::PrerequisiteFailed {
        prerequisite_key: key.to_owned(),
    }
}

/// The off variation with `reason`; none: no value (the caller's default).
fn off_value(flag: &SdkFlag, reason: Reason) -> Detail {
    match flag.off_variation {
        Some(index) => variation_of(flag, index, reason),
        None => Detail {
            value: None,
            variation_index: None,
            reason,
        },
    }
}

/// Variation `index` with `reason`, or a malformed flag when there is no such variation.
fn variation_of(flag: &SdkFlag, index: i64, reason: Reason) -> Detail {
    let value = usize::try_from(index)
        .ok()
        .and_then(|at| flag.variations.get(at).map(|value| (at, value)));
    match value {
        Some((at, value)) => Detail {
            value: Some(value.clone()),
            variation_index: Some(at),
            reason,
        },
        None => Detail::error(ErrorKind::MalformedFlag),
    }
}

/// The variation of the first individual target naming the context. Once a flag has
/// `contextTargets`, user targets are read where a `user` entry without values stands in them.
fn target_match(flag: &SdkFlag, context: &Context) -> Option<i64> {
    if flag.context_targets.is_empty() {
        return flag.targets.iter().find_map(|t| targeted(t, context));
    }
    flag.context_targets.iter().find_map(|entry| {
        if entry.context_kind == USER_KIND && entry.values.is_empty() {
            flag.targets
                .iter()
                .filter(|t| t.variation == entry.variation)
                .find_map(|t| targeted(t, context))
        } else {
            targeted(entry, context)
        }
    })
}

fn targeted(target: &Target, context: &Context) -> Option<i64> {
    let single = context.as_kind(&target.context_kind)?;
    target
        .values
        .iter()
        .any(|value| value == single.key())
        .then_some(target.variation)
}

fn rule_matches<'a>(
    rule: &'a FlagRule,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
) -> Result<bool, Malformed> {
    for clause in &rule.clauses {
        if !clause_matches(clause, context, data, stack)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The variation `serve` gives `context`, and whether that puts it in an experiment.
fn serve(
    flag: &SdkFlag,
    serve: &VariationOrRollout,
    context: &Context,
) -> Result<(i64, bool), Malformed> {
    if let Some(variation) = serve.variation {
        return Ok((variation, false));
    }
    let rollout = serve.rollout.as_ref().ok_or(Malformed)?;
    let last = rollout.variations.last().ok_or(Malformed)?;
    let experiment = rollout.kind == Some(RolloutKind::Experiment);
    let attribute = match (&rollout.bucket_by, experiment) {
        (Some(name), false) => Some(reference(name, rollout.context_kind.is_some())?),
        _ => None,
    };
    let by = BucketBy {
        kind: rollout.context_kind.as_deref().unwrap_or(USER_KIND),
        attribute: attribute.as_ref(),
        key: &flag.key,
        salt: &flag.salt,
        seed: rollout.seed,
    };
    let (bucket, found) = bucket(context, &by);
    let mut sum = 0.0_f32;
    for weighted in &rollout.variations {
        #[allow(clippy::cast_precision_loss)]
        {
            sum += weighted.weight as f32 / 100_000.0;
        }
        if bucket < sum {
            return Ok((
                weighted.variation,
                experiment && found && !weighted.untracked,
            ));
        }
    }
    Ok((last.variation, experiment && found && !last.untracked))
}

/// The attribute a clause or rollout names: a reference when it says its context kind, else a
/// plain name.
fn reference(attribute: &str, with_kind: bool) -> Result<AttributeRef, Malformed> {
    if attribute.is_empty() {
        return Err(Malformed);
    }
    if with_kind {
        AttributeRef::parse(attribute).map_err(|_| Malformed)
    } else {
        Ok(AttributeRef::name(attribute))
    }
}

fn clause_matches<'a>(
    clause: &'a Clause,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
) -> Result<bool, Malformed> {
    if clause.op == "segmentMatch" {
        let mut matched = false;
        for key in clause.values.iter().filter_map(Value::as_str) {
            if let Some(segment) = data.segment(key) {
                if segment_matches(segment, context, data, stack)? {
                    matched = true;
                    break;
                }
            }
        }
        return Ok(matched != clause.negate);
    }
    let attribute = reference(&clause.attribute, clause.context_kind.is_some())?;
    if attribute.is_kind() {
        let matched = context.kinds().any(|kind| {
            let kind = Value::String(kind.to_owned());
            clause
                .values
                .iter()
                .any(|expected| operators::matches(&clause.op, &kind, expected))
        });
        return Ok(matched != clause.negate);
    }
    let kind = clause.context_kind.as_deref().unwrap_or(USER_KIND);
    let Some(single) = context.as_kind(kind) else {
        return Ok(false);
    };
    let Some(value) = single.get(&attribute) else {
        return Ok(false);
    };
    let any = |value: &Value| {
        if clause.op == "matches" {
            // Patterns compiled once per clause, not once per evaluation.
            let Value::String(text) = value else {
                return false;
            };
            return clause
                .patterns()
                .iter()
                .flatten()
                .any(|re| re.is_match(text));
        }
        clause
            .values
            .iter()
            .any(|expected| operators::matches(&clause.op, value, expected))
    };
    let matched = match &value {
        Value::Array(items) => items.iter().any(any),
        Value::Null => return Ok(false),
        other => any(other),
    };
    Ok(matched != clause.negate)
}

/// Whether `context` is in `segment`: included, else not excluded and matched by a rule.
fn segment_matches<'a>(
    segment: &'a SdkSegment,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
) -> Result<bool, Malformed> {
    if stack.segments.contains(&segment.key.as_str()) || stack.segments.len() >= MAX_DEPTH {
        return Err(Malformed);
    }
    if segment.unbounded {
        return Ok(false);
    }
    let user_key = context.as_kind(USER_KIND).map(|user| user.key());
    let listed = |keys: &[String], targets: &[super::model::SegmentTarget]| {
        user_key.is_some_and(|key| keys.iter().any(|k| k == key))
            || targets.iter().any(|target| {
                context
                    .as_kind(&target.context_kind)
                    .is_some_and(|single| target.values.iter().any(|v| v == single.key()))
            })
    };
    if listed(&segment.included, &segment.included_contexts) {
        return Ok(true);
    }
    if listed(&segment.excluded, &segment.excluded_contexts) {
        return Ok(false);
    }
    stack.segments.push(&segment.key);
    let mut matched = false;
    for rule in &segment.rules {
        let mut all = true;
        for clause in &rule.clauses {
            if !clause_matches(clause, context, data, stack)? {
                all = false;
                break;
            }
        }
        if !all {
            continue;
        }
        let Some(weight) = rule.weight else {
            matched = true;
            break;
        };
        let attribute = match &rule.bucket_by {
            Some(name) => Some(reference(name, rule.rollout_context_kind.is_some())?),
            None => None,
        };
        let by = BucketBy {
            kind: rule.rollout_context_kind.as_deref().unwrap_or(USER_KIND),
            attribute: attribute.as_ref(),
            key: &segment.key,
            salt: &segment.salt,
            seed: None,
        };
        #[allow(clippy::cast_precision_loss)]
        if bucket(context, &by).0 < weight as f32 / 100_000.0 {
            matched = true;
            break;
        }
    }
    stack.segments.pop();
    Ok(matched)
}
