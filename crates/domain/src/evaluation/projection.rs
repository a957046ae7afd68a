//! Flags and segments as the management API keeps them, projected into the SDK data model of
//! one environment: what the evaluator reads and what the SDK stream sends.

use super::model::{
    Clause, ClientSideAvailability, FlagRule, Prerequisite, Rollout, SdkFlag, SdkSegment,
    SegmentRule, SegmentTarget, Target, VariationOrRollout, WeightedVariation, USER_KIND,
};
use crate::flag::{self, Flag, FlagConfig};
use crate::segment::{self, Segment};
use crate::targeting;

/// `flag`'s configuration in environment `environment_key` as SDKs evaluate it, or `None` when
/// the flag has no configuration there. An archived flag (or one archived in the environment)
/// is a tombstone (`deleted`): SDKs drop it and evaluate it as not found.
///
/// Once the configuration has targets of other kinds (`contextTargets`), SDKs read its user
/// targets only through `user` entries without values in `contextTargets`, which mark their
/// order: the projection adds one per user target, before the other kinds. Disabled rules are
/// left out.
///
/// ```
/// use domain::evaluation::{evaluate, sdk_flag, Context, FlagData, SdkFlag, SdkSegment};
/// # let flag: domain::flag::Flag = serde_json::from_value(serde_json::json!({
/// #   "key": "beta", "name": "Beta", "kind": "boolean", "_version": 1, "creationDate": 0,
/// #   "variations": [{"_id": "t", "value": true}, {"_id": "f", "value": false}],
/// #   "temporary": false, "tags": [], "archived": false, "deprecated": false,
/// #   "customProperties": {}, "experiments": {"baselineIdx": 0, "items": []},
/// #   "clientSideAvailability": {"usingMobileKey": false, "usingEnvironmentId": false},
/// #   "includeInSnippet": false, "defaults": {"onVariation": 0, "offVariation": 1},
/// #   "environments": {"production": {"on": true, "archived": false, "salt": "s", "sel": "x",
/// #     "lastModified": 0, "version": 3, "targets": [{"values": ["ann"], "variation": 0}],
/// #     "contextTargets": [], "rules": [], "fallthrough": {"variation": 1},
/// #     "offVariation": 1, "prerequisites": []}}
/// # })).unwrap();
/// struct Nothing;
/// impl FlagData for Nothing {
///     fn flag(&self, _: &str) -> Option<&SdkFlag> { None }
///     fn segment(&self, _: &str) -> Option<&SdkSegment> { None }
/// }
/// let projected = sdk_flag(&flag, "production").unwrap();
/// assert_eq!(projected.version, 3);
/// let ann = Context::from_json(&serde_json::json!({"key": "ann"})).unwrap();
/// assert_eq!(evaluate(&projected, &ann, &Nothing).value, Some(serde_json::json!(true)));
/// ```
pub fn sdk_flag(flag: &Flag, environment_key: &str) -> Option<SdkFlag> {
    let config = flag.environments.get(environment_key)?;
    let availability = ClientSideAvailability {
        using_mobile_key: flag.client_side_availability.using_mobile_key,
        using_environment_id: flag.client_side_availability.using_environment_id,
    };
    Some(SdkFlag {
        key: flag.key.to_string(),
        version: u64::try_from(config.version).unwrap_or(0),
        on: config.on,
        deleted: flag.archived || config.archived,
        prerequisites: config
            .prerequisites
            .iter()
            .map(|p| Prerequisite {
                key: p.key.clone(),
                variation: index(p.variation),
            })
            .collect(),
        targets: config.targets.iter().map(target).collect(),
        context_targets: context_targets(config),
        rules: config
            .rules
            .iter()
            .filter(|rule| !rule.disabled)
            .map(flag_rule)
            .collect(),
        fallthrough: serve(&config.fallthrough),
        off_variation: config.off_variation.map(index),
        variations: flag.variations.iter().map(|v| v.value.clone()).collect(),
        client_side_availability: Some(availability),
        client_side: availability.using_environment_id,
        salt: config.salt.clone(),
        track_events: config.track_events,
        track_events_fallthrough: config.track_events_fallthrough,
        debug_events_until_date: None,
        sampling_ratio: None,
        exclude_from_summaries: false,
    })
}

/// `segment` as SDKs evaluate it (a segment belongs to one environment).
pub fn sdk_segment(segment: &Segment) -> SdkSegment {
    let targets = |targets: &[segment::SegmentTarget]| {
        targets
            .iter()
            .map(|t| SegmentTarget {
                context_kind: t.context_kind.clone(),
                values: t.values.clone(),
            })
            .collect()
    };
    SdkSegment {
        key: segment.key.to_string(),
        version: u64::try_from(segment.version).unwrap_or(0),
        deleted: segment.deleted,
        included: segment.included.clone(),
        excluded: segment.excluded.clone(),
        included_contexts: targets(&segment.included_contexts),
        excluded_contexts: targets(&segment.excluded_contexts),
        rules: segment
            .rules
            .iter()
            .map(|rule| SegmentRule {
                id: non_empty(&rule.id),
                clauses: rule.clauses.iter().map(clause).collect(),
                weight: rule.weight,
                bucket_by: rule.bucket_by.clone(),
                rollout_context_kind: rule.rollout_context_kind.clone(),
            })
            .collect(),
        salt: segment.salt.clone(),
        unbounded: false,
        generation: None,
    }
}

fn index(variation: usize) -> i64 {
    i64::try_from(variation).unwrap_or(i64::MAX)
}

fn non_empty(id: &str) -> Option<String> {
    (!id.is_empty()).then(|| id.to_owned())
}

fn target(target: &flag::Target) -> Target {
    Target {
        context_kind: target.context_kind.clone(),
        values: target.values.clone(),
        variation: index(target.variation),
    }
}

/// The configuration's targets of other kinds, after one value-less `user` entry per user
/// target when there are any (SDKs then read user targets through those entries only).
fn context_targets(config: &FlagConfig) -> Vec<Target> {
    if config.context_targets.is_empty() {
        return Vec::new();
    }
    let users = config.targets.iter().map(|t| Target {
        context_kind: USER_KIND.to_owned(),
        values: Vec::new(),
        variation: index(t.variation),
    });
    users
        .chain(config.context_targets.iter().map(target))
        .collect()
}

fn flag_rule(rule: &flag::Rule) -> FlagRule {
    FlagRule {
        id: non_empty(&rule.id),
        clauses: rule.clauses.iter().map(clause).collect(),
        serve: VariationOrRollout {
            variation: rule.variation.map(index),
            rollout: rule.rollout.as_ref().map(rollout),
        },
        track_events: rule.track_events,
    }
}

fn clause(clause: &targeting::Clause) -> Clause {
    let op = serde_json::to_value(clause.op)
        .ok()
        .and_then(|op| op.as_str().map(str::to_owned))
        .unwrap_or_default();
    Clause {
        context_kind: Some(clause.context_kind.clone()),
        attribute: clause.attribute.clone(),
        op,
        values: clause.values.clone(),
        negate: clause.negate,
        ..Clause::default()
    }
}

fn serve(serve: &flag::VariationOrRollout) -> VariationOrRollout {
    VariationOrRollout {
        variation: serve.variation.map(index),
        rollout: serve.rollout.as_ref().map(rollout),
    }
}

fn rollout(rollout: &flag::Rollout) -> Rollout {
    Rollout {
        kind: None,
        context_kind: rollout.context_kind.clone(),
        bucket_by: rollout.bucket_by.clone(),
        seed: rollout.seed,
        variations: rollout
            .variations
            .iter()
            .map(|v| WeightedVariation {
                variation: index(v.variation),
                weight: v.weight,
                untracked: v.untracked,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::evaluation::{evaluate, Context, FlagData, Reason};

    struct Segments(Vec<SdkSegment>);

    impl FlagData for Segments {
        fn flag(&self, _: &str) -> Option<&SdkFlag> {
            None
        }
        fn segment(&self, key: &str) -> Option<&SdkSegment> {
            self.0.iter().find(|s| s.key == key)
        }
    }

    fn flag(production: Value) -> Flag {
        serde_json::from_value(json!({
            "key": "beta", "name": "Beta", "kind": "multivariate", "_version": 4,
            "creationDate": 0, "temporary": false, "tags": [], "archived": false,
            "deprecated": false, "customProperties": {},
            "experiments": {"baselineIdx": 0, "items": []},
            "variations": [{"_id": "a", "value": "a"}, {"_id": "b", "value": "b"}],
            "clientSideAvailability": {"usingMobileKey": true, "usingEnvironmentId": false},
            "includeInSnippet": false, "defaults": {"onVariation": 0, "offVariation": 1},
            "environments": {"production": production},
        }))
        .unwrap()
    }

    fn production() -> Value {
        json!({
            "on": true, "archived": false, "salt": "s", "sel": "x", "lastModified": 0,
            "version": 7, "offVariation": 1, "prerequisites": [],
            "targets": [{"values": ["ann"], "variation": 0, "contextKind": "user"}],
            "contextTargets": [{"values": ["acme"], "variation": 1, "contextKind": "org"}],
            "rules": [
                {"_id": "off", "disabled": true, "variation": 0, "trackEvents": false,
                 "clauses": []},
                {"_id": "mail", "trackEvents": false, "clauses": [
                    {"_id": "c", "attribute": "email", "op": "endsWith",
                     "values": ["@x.com"], "negate": false, "contextKind": "user"}],
                 "rollout": {"variations": [{"variation": 0, "weight": 100000}],
                             "bucketBy": "email"}},
                {"_id": "seg", "trackEvents": false, "variation": 0, "clauses": [
                    {"_id": "d", "attribute": "segmentMatch", "op": "segmentMatch",
                     "values": ["half"], "negate": false, "contextKind": "user"}]},
            ],
            "fallthrough": {"variation": 1},
        })
    }

    fn served(flag: &SdkFlag, context: Value, data: &Segments) -> (Option<Value>, Reason) {
        let detail = evaluate(flag, &Context::from_json(&context).unwrap(), data);
        (detail.value, detail.reason)
    }

    #[test]
    fn a_projected_flag_evaluates_as_its_configuration_says() {
        let projected = sdk_flag(&flag(production()), "production").unwrap();
        assert_eq!((projected.version, projected.salt.as_str()), (7, "s"));
        assert_eq!(projected.variations, [json!("a"), json!("b")]);
        // User targets are read through a user entry of contextTargets, before other kinds.
        assert_eq!(projected.context_targets[0].context_kind, "user");
        assert!(projected.context_targets[0].values.is_empty());
        assert_eq!(projected.rules.len(), 2, "the disabled rule is left out");
        let data = Segments(vec![]);
        assert_eq!(
            served(&projected, json!({"key": "ann"}), &data),
            (Some(json!("a")), Reason::TargetMatch)
        );
        assert_eq!(
            served(
                &projected,
                json!({"kind": "multi", "user": {"key": "bob"}, "org": {"key": "acme"}}),
                &data
            ),
            (Some(json!("b")), Reason::TargetMatch)
        );
        let rule = |index: usize, id: &str| Reason::RuleMatch {
            rule_index: index,
            rule_id: Some(id.into()),
            in_experiment: false,
        };
        assert_eq!(
            served(
                &projected,
                json!({"kind": "user", "key": "bob", "email": "b@x.com"}),
                &data
            ),
            (Some(json!("a")), rule(0, "mail"))
        );
        assert_eq!(
            served(&projected, json!({"kind": "user", "key": "bob"}), &data),
            (
                Some(json!("b")),
                Reason::Fallthrough {
                    in_experiment: false
                }
            )
        );
    }

    #[test]
    fn a_projected_segment_buckets_with_its_own_salt() {
        let projected = sdk_flag(&flag(production()), "production").unwrap();
        let post = crate::segment::SegmentPost {
            key: "half".into(),
            name: "Half".into(),
            ..Default::default()
        };
        let mut segment = Segment::create(post, 1, &mut crate::SequentialIds::default()).unwrap();
        segment.rules.push(
            serde_json::from_value(json!({
                "_id": "r", "weight": 50000, "clauses": [
                    {"_id": "c", "attribute": "key", "op": "startsWith", "values": ["u"],
                     "negate": false, "contextKind": "user"}]
            }))
            .unwrap(),
        );
        let sdk = sdk_segment(&segment);
        assert_eq!(sdk.salt, segment.salt);
        let data = Segments(vec![sdk]);
        let inside = (0..100)
            .filter(|i| {
                let (_, reason) = served(&projected, json!({"key": format!("u{i}")}), &data);
                matches!(reason, Reason::RuleMatch { ref rule_id, .. } if rule_id.as_deref() == Some("seg"))
            })
            .count();
        assert!(
            (30..70).contains(&inside),
            "{inside} of 100 in a 50 % segment"
        );
    }

    #[test]
    fn archived_flags_are_tombstones_and_other_environments_have_none() {
        let mut archived = flag(production());
        archived.archived = true;
        assert!(sdk_flag(&archived, "production").unwrap().deleted);
        assert!(!sdk_flag(&flag(production()), "production").unwrap().deleted);
        assert!(sdk_flag(&archived, "test").is_none());
    }
}
