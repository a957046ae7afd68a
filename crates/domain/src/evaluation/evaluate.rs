//! The evaluation algorithm: off, prerequisites, individual targets, rules, fallthrough, as the
//! original's SDKs compute it.

use serde_json::Value;

use super::bucket::{bucket, BucketBy};
use super::context::{AttributeRef, Context};
use super::explain::{
    BucketRange, ClauseTrace, Explanation, PrerequisiteTrace, RolloutTrace, RuleTrace,
    SegmentTrace, TargetTrace,
};
use super::model::{
    Clause, FlagRule, RolloutKind, SdkFlag, SdkSegment, SegmentRule, Target, VariationOrRollout,
    USER_KIND,
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

/// The flags and segments an evaluation is inside of (a cycle is found when one comes again),
/// and what each flag and segment already gave this context: each is evaluated once per
/// evaluation, so that prerequisites and segments shared along many paths cost no more than
/// once each (without it, layers of flags that share prerequisites cost 2^layers).
#[derive(Debug, Default)]
struct Stack<'a> {
    flags: Vec<&'a str>,
    segments: Vec<&'a str>,
    flag_results: std::collections::HashMap<&'a str, Detail>,
    segment_results: std::collections::HashMap<&'a str, SegmentResult>,
}

/// Evaluates `flag` for `context`, finding prerequisites and segments in `data`.
pub fn evaluate(flag: &SdkFlag, context: &Context, data: &dyn FlagData) -> Detail {
    evaluate_in(
        flag,
        context,
        data,
        &mut Stack::default(),
        &mut Explanation::off(),
    )
}

/// Evaluates `flag` for `context` as [`evaluate`] does, and says how: every prerequisite, the
/// target that named the context, each rule and clause checked (with what the context had),
/// the segments asked and why, and the bucket a rollout put the context in.
pub fn explain(flag: &SdkFlag, context: &Context, data: &dyn FlagData) -> Explanation {
    let mut trace = Explanation::recording(&flag.key);
    trace.result = evaluate_in(flag, context, data, &mut Stack::default(), &mut trace);
    trace
}

fn evaluate_in<'a>(
    flag: &'a SdkFlag,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
    trace: &mut Explanation,
) -> Detail {
    trace.on = flag.on;
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
    let failed = check_prerequisites(flag, context, data, stack, trace);
    stack.flags.pop();
    if let Some(failed) = failed {
        return failed;
    }
    if let Some((kind, key, variation)) = target_match(flag, context) {
        if trace.recording {
            trace.target = Some(TargetTrace {
                context_kind: kind.to_owned(),
                key: key.to_owned(),
                variation,
            });
        }
        return variation_of(flag, variation, Reason::TargetMatch);
    }
    for (rule_index, rule) in flag.rules.iter().enumerate() {
        let mut clauses = trace.recording.then(Vec::new);
        let matched = rule_matches(rule, context, data, stack, clauses.as_mut());
        if let Some(clauses) = clauses {
            trace.rules.push(RuleTrace {
                index: rule_index,
                id: rule.id.clone(),
                matched: matched == Ok(true),
                clauses,
            });
        }
        match matched {
            Err(Malformed) => return Detail::error(ErrorKind::MalformedFlag),
            Ok(false) => {}
            Ok(true) => {
                return match serve(flag, &rule.serve, context, trace) {
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
    match serve(flag, &flag.fallthrough, context, trace) {
        Ok((variation, in_experiment)) => {
            variation_of(flag, variation, Reason::Fallthrough { in_experiment })
        }
        Err(Malformed) => Detail::error(ErrorKind::MalformedFlag),
    }
}

/// The result of the first prerequisite that fails (or of a malformed one), if one does.
fn check_prerequisites<'a>(
    flag: &'a SdkFlag,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
    trace: &mut Explanation,
) -> Option<Detail> {
    for prerequisite in &flag.prerequisites {
        let record = |trace: &mut Explanation, met: bool, child: Option<Explanation>| {
            if trace.recording {
                trace.prerequisites.push(PrerequisiteTrace {
                    key: prerequisite.key.clone(),
                    variation: prerequisite.variation,
                    met,
                    explanation: child.map(Box::new),
                });
            }
        };
        let Some(required) = data.flag(&prerequisite.key) else {
            record(trace, false, None);
            return Some(off_value(flag, prerequisite_failed(&prerequisite.key)));
        };
        if stack.flags.contains(&required.key.as_str()) {
            record(trace, false, None);
            return Some(Detail::error(ErrorKind::MalformedFlag));
        }
        // A prerequisite evaluated before in this evaluation is not evaluated (nor traced) again.
        let (result, child) = match stack.flag_results.get(required.key.as_str()) {
            Some(known) => (known.clone(), None),
            None => {
                let mut child = trace.child(&required.key);
                let result = evaluate_in(required, context, data, stack, &mut child);
                stack.flag_results.insert(&required.key, result.clone());
                child.result = result.clone();
                (result, Some(child))
            }
        };
        let malformed = matches!(result.reason, Reason::Error { .. });
        let served = result.variation_index.and_then(|i| i64::try_from(i).ok());
        let met = !malformed && required.on && served == Some(prerequisite.variation);
        record(trace, met, child);
        if malformed {
            return Some(Detail::error(ErrorKind::MalformedFlag));
        }
        if !met {
            return Some(off_value(flag, prerequisite_failed(&prerequisite.key)));
        }
    }
    None
}

fn prerequisite_failed(key: &str) -> Reason {
    Reason::PrerequisiteFailed {
        prerequisite_key: key.to_owned(),
    }
}

/// What `flag` serves while its targeting is off, which no context changes: its off variation
/// with reason `OFF` (no value without one: the caller's default). For a caller that has no
/// valid context, and may still serve a flag that is off.
///
/// ```
/// use domain::evaluation::{evaluate_off, Reason, SdkFlag};
/// let flag: SdkFlag = serde_json::from_value(serde_json::json!(
///     {"key": "f", "on": false, "offVariation": 1, "variations": [true, false]})).unwrap();
/// let detail = evaluate_off(&flag);
/// assert_eq!(detail.value, Some(serde_json::json!(false)));
/// assert_eq!(detail.reason, Reason::Off);
/// ```
pub fn evaluate_off(flag: &SdkFlag) -> Detail {
    off_value(flag, Reason::Off)
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

/// The first individual target naming the context: its kind, the key and the variation. Once a
/// flag has `contextTargets`, user targets are read where a `user` entry without values stands
/// in them.
fn target_match<'f>(flag: &'f SdkFlag, context: &'f Context) -> Option<(&'f str, &'f str, i64)> {
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

fn targeted<'f>(target: &'f Target, context: &'f Context) -> Option<(&'f str, &'f str, i64)> {
    let single = context.as_kind(&target.context_kind)?;
    target
        .values
        .iter()
        .any(|value| value == single.key())
        .then_some((target.context_kind.as_str(), single.key(), target.variation))
}

fn rule_matches<'a>(
    rule: &'a FlagRule,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
    mut record: Option<&mut Vec<ClauseTrace>>,
) -> Result<bool, Malformed> {
    for clause in &rule.clauses {
        if !clause_matches(clause, context, data, stack, record.as_deref_mut())? {
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
    trace: &mut Explanation,
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
    let mut chosen = None;
    let mut ranges = Vec::new();
    for weighted in &rollout.variations {
        let from = sum;
        #[allow(clippy::cast_precision_loss)]
        {
            sum += weighted.weight as f32 / 100_000.0;
        }
        if trace.recording {
            ranges.push(BucketRange {
                variation: weighted.variation,
                from,
                to: sum,
            });
        }
        if chosen.is_none() && bucket < sum {
            chosen = Some(weighted);
        }
    }
    if trace.recording {
        trace.rollout = Some(RolloutTrace {
            context_kind: by.kind.to_owned(),
            bucket_by: match &rollout.bucket_by {
                Some(name) if !experiment => name.clone(),
                _ => "key".to_owned(),
            },
            seed: rollout.seed,
            bucket,
            ranges,
            experiment,
        });
    }
    let chosen = chosen.unwrap_or(last);
    Ok((chosen.variation, experiment && found && !chosen.untracked))
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
    record: Option<&mut Vec<ClauseTrace>>,
) -> Result<bool, Malformed> {
    let mut segments = Vec::new();
    let (matched, context_value) = if clause.op == "segmentMatch" {
        let mut matched = false;
        for key in clause.values.iter().filter_map(Value::as_str) {
            let (inside, why, rule_index) = match data.segment(key) {
                Some(segment) => match stack.segment_results.get(segment.key.as_str()) {
                    Some(known) => *known,
                    None => {
                        let result = segment_matches(segment, context, data, stack)?;
                        stack.segment_results.insert(&segment.key, result);
                        result
                    }
                },
                None => (false, "notFound", None),
            };
            if record.is_some() {
                segments.push(SegmentTrace {
                    key: key.to_owned(),
                    why,
                    rule_index,
                    matched: inside,
                });
            }
            if inside {
                matched = true;
                break;
            }
        }
        (matched != clause.negate, None)
    } else {
        attribute_matches(clause, context)?
    };
    if let Some(record) = record {
        record.push(ClauseTrace {
            context_kind: clause
                .context_kind
                .clone()
                .unwrap_or_else(|| USER_KIND.to_owned()),
            attribute: clause.attribute.clone(),
            op: clause.op.clone(),
            values: clause.values.clone(),
            negate: clause.negate,
            context_value,
            matched,
            segments,
        });
    }
    Ok(matched)
}

/// Whether a clause on an attribute matches, and the value the context had for it.
fn attribute_matches(
    clause: &Clause,
    context: &Context,
) -> Result<(bool, Option<Value>), Malformed> {
    let attribute = reference(&clause.attribute, clause.context_kind.is_some())?;
    if attribute.is_kind() {
        let kinds: Vec<Value> = context
            .kinds()
            .map(|kind| Value::String(kind.to_owned()))
            .collect();
        let matched = kinds.iter().any(|kind| {
            clause
                .values
                .iter()
                .any(|expected| operators::matches(&clause.op, kind, expected))
        });
        let shown = match kinds.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(kinds.clone()),
        };
        return Ok((matched != clause.negate, Some(shown)));
    }
    let kind = clause.context_kind.as_deref().unwrap_or(USER_KIND);
    let Some(single) = context.as_kind(kind) else {
        return Ok((false, None));
    };
    let Some(value) = single.get(&attribute) else {
        return Ok((false, None));
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
        Value::Null => return Ok((false, None)),
        other => any(other),
    };
    Ok((matched != clause.negate, Some(value)))
}

/// Whether a context is in a segment, why, and the rule that took it in.
type SegmentResult = (bool, &'static str, Option<usize>);

/// Whether `context` is in `segment` (included, else not excluded and matched by a rule), why,
/// and the rule that took it in.
fn segment_matches<'a>(
    segment: &'a SdkSegment,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
) -> Result<SegmentResult, Malformed> {
    if stack.segments.contains(&segment.key.as_str()) || stack.segments.len() >= MAX_DEPTH {
        return Err(Malformed);
    }
    if segment.unbounded {
        return Ok((false, "noRule", None));
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
        return Ok((true, "included", None));
    }
    if listed(&segment.excluded, &segment.excluded_contexts) {
        return Ok((false, "excluded", None));
    }
    stack.segments.push(&segment.key);
    let mut taken_in = None;
    for (index, rule) in segment.rules.iter().enumerate() {
        if segment_rule_matches(segment, rule, context, data, stack)? {
            taken_in = Some(index);
            break;
        }
    }
    stack.segments.pop();
    Ok(match taken_in {
        Some(index) => (true, "rule", Some(index)),
        None => (false, "noRule", None),
    })
}

fn segment_rule_matches<'a>(
    segment: &'a SdkSegment,
    rule: &'a SegmentRule,
    context: &Context,
    data: &'a dyn FlagData,
    stack: &mut Stack<'a>,
) -> Result<bool, Malformed> {
    for clause in &rule.clauses {
        if !clause_matches(clause, context, data, stack, None)? {
            return Ok(false);
        }
    }
    let Some(weight) = rule.weight else {
        return Ok(true);
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
    Ok(bucket(context, &by).0 < weight as f32 / 100_000.0)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::HashMap;

    use serde_json::{json, Value};

    use super::*;
    use crate::evaluation::explain;

    /// Flags and segments that count how often they are asked for.
    #[derive(Default)]
    struct Counted {
        flags: HashMap<String, SdkFlag>,
        segments: HashMap<String, SdkSegment>,
        asked: Cell<usize>,
    }

    impl FlagData for Counted {
        fn flag(&self, key: &str) -> Option<&SdkFlag> {
            self.asked.set(self.asked.get() + 1);
            self.flags.get(key)
        }
        fn segment(&self, key: &str) -> Option<&SdkSegment> {
            self.asked.set(self.asked.get() + 1);
            self.segments.get(key)
        }
    }

    fn flag(value: Value) -> SdkFlag {
        serde_json::from_value(value).unwrap()
    }

    fn ann() -> Context {
        Context::from_json(&json!({"key": "ann"})).unwrap()
    }

    /// Layers of two flags, each with both flags of the next layer as prerequisites: without
    /// remembering results, 2^layers evaluations.
    #[test]
    fn shared_prerequisites_are_evaluated_once() {
        let mut data = Counted::default();
        let depth = 30;
        for layer in 0..depth {
            for side in ["l", "r"] {
                let prerequisites: Vec<Value> = if layer + 1 < depth {
                    ["l", "r"]
                        .iter()
                        .map(|s| json!({"key": format!("{s}{}", layer + 1), "variation": 0}))
                        .collect()
                } else {
                    vec![]
                };
                let key = format!("{side}{layer}");
                data.flags.insert(
                    key.clone(),
                    flag(json!({"key": key, "on": true, "offVariation": 1,
                                "variations": [true, false], "prerequisites": prerequisites,
                                "fallthrough": {"variation": 0}})),
                );
            }
        }
        let top = data.flags["l0"].clone();
        assert_eq!(
            evaluate(&top, &ann(), &data).reason,
            Reason::Fallthrough {
                in_experiment: false
            }
        );
        assert!(
            data.asked.get() <= 4 * depth,
            "{} lookups",
            data.asked.get()
        );
        let trace = serde_json::to_vec(&explain(&top, &ann(), &data)).unwrap();
        assert!(trace.len() < 100_000, "{} bytes of trace", trace.len());
    }

    /// Segments whose two rules both name the next segment: without remembering results,
    /// 2^segments checks.
    #[test]
    fn shared_segments_are_checked_once() {
        let mut data = Counted::default();
        let depth = 40;
        for i in 0..depth {
            let rules: Vec<Value> = if i + 1 < depth {
                (0..2)
                    .map(|_| {
                        json!({"clauses": [{"attribute": "key", "op": "segmentMatch",
                                                  "values": [format!("s{}", i + 1)]}]})
                    })
                    .collect()
            } else {
                vec![]
            };
            let key = format!("s{i}");
            data.segments.insert(
                key.clone(),
                serde_json::from_value(json!({"key": key, "rules": rules})).unwrap(),
            );
        }
        let top = flag(json!({"key": "f", "on": true, "variations": [true, false],
            "rules": [{"variation": 0, "clauses": [
                {"attribute": "key", "op": "segmentMatch", "values": ["s0"]}]}],
            "fallthrough": {"variation": 1}}));
        assert_eq!(evaluate(&top, &ann(), &data).value, Some(json!(false)));
        assert!(
            data.asked.get() <= 3 * depth,
            "{} lookups",
            data.asked.get()
        );
    }

    /// A prerequisite that failed leaves the evaluation stack as one that passed does: a later
    /// prerequisite depending on the same flag is no cycle (the Go SDK's behaviour; the Rust
    /// evaluation crate 2.2.1 reports it as malformed).
    #[test]
    fn a_failed_prerequisite_is_no_cycle_for_the_next() {
        let mut data = Counted::default();
        for value in [
            json!({"key": "x", "on": false, "offVariation": 0, "variations": [0, 1]}),
            json!({"key": "b", "on": true, "offVariation": 1, "variations": [0, 1],
                   "prerequisites": [{"key": "x", "variation": 1}],
                   "fallthrough": {"variation": 0}}),
            json!({"key": "c", "on": true, "offVariation": 1, "variations": [0, 1],
                   "prerequisites": [{"key": "b", "variation": 1}],
                   "fallthrough": {"variation": 0}}),
        ] {
            let flag = flag(value);
            data.flags.insert(flag.key.clone(), flag);
        }
        let a = flag(
            json!({"key": "a", "on": true, "offVariation": 1, "variations": ["yes", "no"],
            "prerequisites": [{"key": "b", "variation": 1}, {"key": "c", "variation": 0}],
            "fallthrough": {"variation": 0}}),
        );
        let detail = evaluate(&a, &ann(), &data);
        assert_eq!(detail.value, Some(json!("yes")), "{detail:?}");
    }
}
