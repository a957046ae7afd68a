//! Instructions on targeting: switches, targets, rules and clauses, fallthrough and off
//! variation, prerequisites, event tracking.

use super::*;

#[test]
fn turn_flag_on_and_off() {
    let mut f = fixture();
    assert!(f.ok(P, json!([{"kind": "turnFlagOn"}])).environments["production"].on);
    assert!(!f.config("test").on);
    assert_eq!(f.flag.version, 2);
    assert_eq!(f.config("production").version, 2);
    assert_eq!(f.config("production").last_modified, 100);
    f.no_op(P, json!([{"kind": "turnFlagOn"}]));
    assert!(!f.ok(P, json!([{"kind": "turnFlagOff"}])).environments["production"].on);
    f.no_op(P, json!([{"kind": "turnFlagOff"}]));
    f.err(
        None,
        json!([{"kind": "turnFlagOn"}]),
        "needs 'environmentKey'",
    );
    f.err(
        Some("staging"),
        json!([{"kind": "turnFlagOn"}]),
        "environment 'staging' does not exist",
    );
    f.err(
        P,
        json!([{"kind": "turnFlagOn", "extra": 1}]),
        "unknown field",
    );
}

#[test]
fn add_and_remove_targets() {
    let mut f = fixture();
    let (a, b) = (f.var(0), f.var(1));
    f.ok(
        P,
        json!([{"kind": "addTargets", "values": ["u1", "u2"], "variationId": a}]),
    );
    assert_eq!(
        f.config("production").targets,
        vec![Target {
            values: vec!["u1".into(), "u2".into()],
            variation: 0,
            context_kind: "user".into()
        }]
    );
    f.ok(
        P,
        json!([{"kind": "addTargets", "values": ["o1"], "variationId": b, "contextKind": "org"}]),
    );
    assert_eq!(
        f.config("production").context_targets[0].context_kind,
        "org"
    );
    f.no_op(
        P,
        json!([{"kind": "addTargets", "values": ["u1"], "variationId": a}]),
    );
    // A key targeted by another variation of the same context kind is refused...
    f.err(
        P,
        json!([{"kind": "addTargets", "values": ["u1"], "variationId": b}]),
        "already targeted",
    );
    // ...but the same key of another kind is fine.
    f.ok(
        P,
        json!([{"kind": "addTargets", "values": ["u1"], "variationId": b, "contextKind": "org"}]),
    );
    f.err(
        P,
        json!([{"kind": "addTargets", "values": ["u9"], "variationId": "nope"}]),
        "no variation with _id 'nope'",
    );
    f.err(
        P,
        json!([{"kind": "addTargets", "variationId": a}]),
        "missing field `values`",
    );
    f.err(
        P,
        json!([{"kind": "addTargets", "values": "u1", "variationId": a}]),
        "invalid type",
    );

    f.ok(
        P,
        json!([{"kind": "removeTargets", "values": ["u1"], "variationId": a}]),
    );
    assert_eq!(f.config("production").targets[0].values, ["u2"]);
    f.no_op(
        P,
        json!([{"kind": "removeTargets", "values": ["zz"], "variationId": a}]),
    );
    f.ok(
        P,
        json!([{"kind": "removeTargets", "values": ["u2"], "variationId": a}]),
    );
    assert!(
        f.config("production").targets.is_empty(),
        "empty targets disappear"
    );
    f.err(
        P,
        json!([{"kind": "removeTargets", "values": ["u1"], "variationId": "nope"}]),
        "no variation",
    );
}

#[test]
fn replace_and_clear_targets() {
    let mut f = fixture();
    let (a, b) = (f.var(0), f.var(1));
    let replace = json!([{"kind": "replaceTargets", "targets": [
        {"variationId": a, "values": ["u1"]},
        {"variationId": b, "values": ["o1"], "contextKind": "org"}]}]);
    f.ok(P, replace.clone());
    assert_eq!(f.config("production").targets.len(), 1);
    assert_eq!(f.config("production").context_targets.len(), 1);
    f.no_op(P, replace);
    f.err(P, json!([{"kind": "replaceTargets", "targets": [{"variationId": a, "values": ["x"]}, {"variationId": b, "values": ["x"]}]}]), "already targeted");
    f.ok(P, json!([{"kind": "clearTargets", "variationId": b}]));
    assert!(f.config("production").context_targets.is_empty());
    assert_eq!(f.config("production").targets.len(), 1);
    f.no_op(P, json!([{"kind": "clearTargets", "variationId": b}]));
    f.err(
        P,
        json!([{"kind": "clearTargets", "variationId": "nope"}]),
        "no variation",
    );
}

#[test]
fn legacy_user_target_instructions() {
    let mut f = fixture();
    let (a, b) = (f.var(0), f.var(1));
    f.ok(
        P,
        json!([{"kind": "addUserTargets", "values": ["u1"], "variationId": a}]),
    );
    f.ok(
        P,
        json!([{"kind": "addTargets", "values": ["o1"], "variationId": a, "contextKind": "org"}]),
    );
    f.no_op(
        P,
        json!([{"kind": "addUserTargets", "values": ["u1"], "variationId": a}]),
    );
    f.err(
        P,
        json!([{"kind": "addUserTargets", "values": ["u1"], "variationId": b}]),
        "already targeted",
    );
    f.ok(
        P,
        json!([{"kind": "removeUserTargets", "values": ["u1"], "variationId": a}]),
    );
    assert!(f.config("production").targets.is_empty());
    f.no_op(
        P,
        json!([{"kind": "removeUserTargets", "values": ["u1"], "variationId": a}]),
    );
    f.ok(
        P,
        json!([{"kind": "replaceUserTargets", "targets": [{"variationId": b, "values": ["u5"]}]}]),
    );
    assert_eq!(f.config("production").targets[0].values, ["u5"]);
    assert_eq!(
        f.config("production").context_targets.len(),
        1,
        "other kinds are kept"
    );
    f.no_op(
        P,
        json!([{"kind": "replaceUserTargets", "targets": [{"variationId": b, "values": ["u5"]}]}]),
    );
    f.err(P, json!([{"kind": "replaceUserTargets", "targets": [{"variationId": b, "values": ["x"], "contextKind": "org"}]}]), "context kind 'user'");
    f.ok(P, json!([{"kind": "clearUserTargets", "variationId": b}]));
    assert!(f.config("production").targets.is_empty());
    assert_eq!(f.config("production").context_targets.len(), 1);
    f.no_op(P, json!([{"kind": "clearUserTargets", "variationId": b}]));
    f.err(
        P,
        json!([{"kind": "clearUserTargets", "variationId": "nope"}]),
        "no variation",
    );
}

fn clause(attribute: &str, op: &str, values: Value) -> Value {
    json!({"attribute": attribute, "op": op, "values": values})
}

#[test]
fn add_rule_with_variation_or_rollout() {
    let mut f = fixture();
    let (a, b) = (f.var(0), f.var(1));
    f.ok(P, json!([{"kind": "addRule", "clauses": [clause("email", "endsWith", json!(["@x.com"]))], "variationId": a, "description": "staff"}]));
    let rule = f.config("production").rules[0].clone();
    assert_eq!(rule.variation, Some(0));
    assert_eq!(rule.description.as_deref(), Some("staff"));
    assert_eq!(rule.clauses[0].context_kind, "user");
    assert!(!rule.id.is_empty() && !rule.clauses[0].id.is_empty());
    let weights = json!({a.clone(): 60000, b.clone(): 40000});
    f.ok(P, json!([{"kind": "addRule", "clauses": [clause("country", "in", json!(["de"]))], "rolloutWeights": weights, "rolloutBucketBy": "email", "beforeRuleId": rule.id}]));
    let first = &f.config("production").rules[0];
    let rollout = first.rollout.as_ref().unwrap();
    assert_eq!(
        rollout
            .variations
            .iter()
            .map(|w| (w.variation, w.weight))
            .collect::<Vec<_>>(),
        [(0, 60000), (1, 40000)]
    );
    assert_eq!(rollout.bucket_by.as_deref(), Some("email"));
    assert_eq!(
        f.config("production").rules[1].id,
        rule.id,
        "inserted before"
    );
    f.err(P, json!([{"kind": "addRule", "clauses": [], "variationId": a, "rolloutWeights": {a.clone(): 100000}}]), "exactly one of");
    f.err(
        P,
        json!([{"kind": "addRule", "clauses": []}]),
        "exactly one of",
    );
    f.err(
        P,
        json!([{"kind": "addRule", "clauses": [], "rolloutWeights": {a.clone(): 50000}}]),
        "weights sum to 50000",
    );
    f.err(
        P,
        json!([{"kind": "addRule", "clauses": [], "variationId": a, "beforeRuleId": "nope"}]),
        "no rule with _id 'nope'",
    );
    f.err(P, json!([{"kind": "addRule", "clauses": [clause("v", "semVerEqual", json!(["banana"]))], "variationId": a}]), "semantic version");
    f.err(P, json!([{"kind": "addRule", "clauses": [clause("n", "matches", json!(["(unclosed"]))], "variationId": a}]), "regular expression");
    f.err(P, json!([{"kind": "addRule", "clauses": [clause("t", "before", json!(["yesterday"]))], "variationId": a}]), "time");
    f.err(P, json!([{"kind": "addRule", "clauses": [clause("n", "greaterThan", json!(["5"]))], "variationId": a}]), "number");
    f.err(P, json!([{"kind": "addRule", "clauses": [clause("n", "isOdd", json!([1]))], "variationId": a}]), "unknown variant `isOdd`");
    // Valid typed values.
    f.ok(
        P,
        json!([{"kind": "addRule", "variationId": a, "clauses": [
        clause("v", "semVerLessThan", json!(["2.0", "1.2.3-beta"])),
        clause("t", "after", json!([1700000000000_i64, "2024-01-01T00:00:00Z"])),
        clause("n", "matches", json!(["^a.*z$"]))]}]),
    );
}

#[test]
fn remove_reorder_and_replace_rules() {
    let mut f = fixture();
    let a = f.var(0);
    for attribute in ["one", "two", "three"] {
        f.ok(P, json!([{"kind": "addRule", "clauses": [clause(attribute, "in", json!(["x"]))], "variationId": a}]));
    }
    let ids: Vec<String> = f
        .config("production")
        .rules
        .iter()
        .map(|r| r.id.clone())
        .collect();
    f.ok(P, json!([{"kind": "removeRule", "ruleId": ids[1]}]));
    assert_eq!(f.config("production").rules.len(), 2);
    f.no_op(P, json!([{"kind": "removeRule", "ruleId": ids[1]}]));
    f.ok(
        P,
        json!([{"kind": "reorderRules", "ruleIds": [ids[2], ids[0]]}]),
    );
    assert_eq!(f.config("production").rules[0].id, ids[2]);
    f.no_op(
        P,
        json!([{"kind": "reorderRules", "ruleIds": [ids[2], ids[0]]}]),
    );
    f.err(
        P,
        json!([{"kind": "reorderRules", "ruleIds": [ids[2]]}]),
        "every current rule",
    );
    f.err(
        P,
        json!([{"kind": "reorderRules", "ruleIds": [ids[2], ids[2]]}]),
        "every current rule",
    );
    f.ok(P, json!([{"kind": "replaceRules", "rules": [{"clauses": [clause("k", "in", json!(["z"]))], "variationId": a, "description": "only", "trackEvents": true}]}]));
    let rules = &f.config("production").rules;
    assert_eq!(rules.len(), 1);
    assert!(rules[0].track_events);
    assert_eq!(rules[0].description.as_deref(), Some("only"));
    f.err(
        P,
        json!([{"kind": "replaceRules", "rules": [{"clauses": []}]}]),
        "rules[0]",
    );
    f.ok(P, json!([{"kind": "replaceRules", "rules": []}]));
    assert!(f.config("production").rules.is_empty());
    f.no_op(P, json!([{"kind": "replaceRules", "rules": []}]));
}

#[test]
fn update_rule_parts() {
    let mut f = fixture();
    let (a, b) = (f.var(0), f.var(1));
    f.ok(P, json!([{"kind": "addRule", "clauses": [clause("email", "in", json!(["x"]))], "variationId": a}]));
    let rule = f.config("production").rules[0].id.clone();
    f.ok(
        P,
        json!([{"kind": "updateRuleDescription", "ruleId": rule, "description": "why"}]),
    );
    assert_eq!(
        f.config("production").rules[0].description.as_deref(),
        Some("why")
    );
    f.no_op(
        P,
        json!([{"kind": "updateRuleDescription", "ruleId": rule, "description": "why"}]),
    );
    f.err(
        P,
        json!([{"kind": "updateRuleDescription", "ruleId": "nope", "description": "x"}]),
        "no rule",
    );
    f.ok(
        P,
        json!([{"kind": "updateRuleTrackEvents", "ruleId": rule, "trackEvents": true}]),
    );
    assert!(f.config("production").rules[0].track_events);
    f.no_op(
        P,
        json!([{"kind": "updateRuleTrackEvents", "ruleId": rule, "trackEvents": true}]),
    );
    f.err(
        P,
        json!([{"kind": "updateRuleTrackEvents", "ruleId": rule, "trackEvents": "yes"}]),
        "invalid type",
    );
    f.ok(
        P,
        json!([{"kind": "updateRuleVariationOrRollout", "ruleId": rule, "variationId": b}]),
    );
    assert_eq!(f.config("production").rules[0].variation, Some(1));
    f.no_op(
        P,
        json!([{"kind": "updateRuleVariationOrRollout", "ruleId": rule, "variationId": b}]),
    );
    f.ok(P, json!([{"kind": "updateRuleVariationOrRollout", "ruleId": rule, "rolloutWeights": {a.clone(): 100000}}]));
    assert!(
        f.config("production").rules[0].rollout.is_some()
            && f.config("production").rules[0].variation.is_none()
    );
    f.err(
        P,
        json!([{"kind": "updateRuleVariationOrRollout", "ruleId": "nope", "variationId": b}]),
        "no rule",
    );
}

#[test]
fn clause_instructions() {
    let mut f = fixture();
    let a = f.var(0);
    f.ok(P, json!([{"kind": "addRule", "clauses": [clause("email", "in", json!(["x"]))], "variationId": a}]));
    let rule = f.config("production").rules[0].id.clone();
    f.ok(P, json!([{"kind": "addClauses", "ruleId": rule, "clauses": [clause("country", "in", json!(["de"])), clause("plan", "in", json!(["pro"]))]}]));
    let clauses: Vec<String> = f.config("production").rules[0]
        .clauses
        .iter()
        .map(|c| c.id.clone())
        .collect();
    assert_eq!(clauses.len(), 3);
    f.err(
        P,
        json!([{"kind": "addClauses", "ruleId": "nope", "clauses": []}]),
        "no rule",
    );
    f.ok(
        P,
        json!([{"kind": "removeClauses", "ruleId": rule, "clauseIds": [clauses[2]]}]),
    );
    assert_eq!(f.config("production").rules[0].clauses.len(), 2);
    f.err(
        P,
        json!([{"kind": "removeClauses", "ruleId": rule, "clauseIds": [clauses[2]]}]),
        "no clause",
    );
    f.ok(P, json!([{"kind": "updateClause", "ruleId": rule, "clauseId": clauses[1], "clause": {"attribute": "region", "op": "startsWith", "values": ["eu"], "negate": true, "contextKind": "org"}}]));
    let updated = &f.config("production").rules[0].clauses[1];
    assert_eq!(
        (
            updated.attribute.as_str(),
            updated.negate,
            updated.context_kind.as_str(),
            updated.id.as_str()
        ),
        ("region", true, "org", clauses[1].as_str())
    );
    f.no_op(P, json!([{"kind": "updateClause", "ruleId": rule, "clauseId": clauses[1], "clause": {"attribute": "region", "op": "startsWith", "values": ["eu"], "negate": true, "contextKind": "org"}}]));
    f.err(P, json!([{"kind": "updateClause", "ruleId": rule, "clauseId": "nope", "clause": {"attribute": "a", "op": "in", "values": []}}]), "no clause");
    f.ok(P, json!([{"kind": "addValuesToClause", "ruleId": rule, "clauseId": clauses[0], "values": ["y", "x"]}]));
    assert_eq!(
        f.config("production").rules[0].clauses[0].values,
        [json!("x"), json!("y")]
    );
    f.no_op(P, json!([{"kind": "addValuesToClause", "ruleId": rule, "clauseId": clauses[0], "values": ["y"]}]));
    f.err(
        P,
        json!([{"kind": "addValuesToClause", "ruleId": rule, "clauseId": "nope", "values": ["y"]}]),
        "no clause",
    );
    f.ok(P, json!([{"kind": "removeValuesFromClause", "ruleId": rule, "clauseId": clauses[0], "values": ["x"]}]));
    assert_eq!(
        f.config("production").rules[0].clauses[0].values,
        [json!("y")]
    );
    f.no_op(P, json!([{"kind": "removeValuesFromClause", "ruleId": rule, "clauseId": clauses[0], "values": ["x"]}]));
    f.err(P, json!([{"kind": "removeValuesFromClause", "ruleId": "nope", "clauseId": clauses[0], "values": ["x"]}]), "no rule");
}

#[test]
fn fallthrough_and_off_variation() {
    let mut f = fixture();
    let (a, c) = (f.var(0), f.var(2));
    f.ok(P, json!([{"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": {a.clone(): 50000, c.clone(): 50000}, "rolloutContextKind": "org"}]));
    let rollout = f.config("production").fallthrough.rollout.clone().unwrap();
    assert_eq!(rollout.context_kind.as_deref(), Some("org"));
    f.no_op(P, json!([{"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": {a.clone(): 50000, c.clone(): 50000}, "rolloutContextKind": "org"}]));
    f.ok(
        P,
        json!([{"kind": "updateFallthroughVariationOrRollout", "variationId": c}]),
    );
    assert_eq!(
        f.config("production").fallthrough,
        VariationOrRollout {
            variation: Some(2),
            rollout: None
        }
    );
    f.err(P, json!([{"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": {a.clone(): 100001}}]), "between 0 and 100000");
    f.ok(P, json!([{"kind": "updateOffVariation", "variationId": a}]));
    assert_eq!(f.config("production").off_variation, Some(0));
    f.no_op(P, json!([{"kind": "updateOffVariation", "variationId": a}]));
    f.err(
        P,
        json!([{"kind": "updateOffVariation", "variationId": "nope"}]),
        "no variation",
    );
}

#[test]
fn prerequisites() {
    let mut f = fixture();
    f.ok(
        P,
        json!([{"kind": "addPrerequisite", "key": "other", "variationId": "y"}]),
    );
    assert_eq!(
        f.config("production").prerequisites,
        vec![Prerequisite {
            key: "other".into(),
            variation: 1
        }]
    );
    f.no_op(
        P,
        json!([{"kind": "addPrerequisite", "key": "other", "variationId": "y"}]),
    );
    f.err(
        P,
        json!([{"kind": "addPrerequisite", "key": "other", "variationId": "x"}]),
        "use updatePrerequisite",
    );
    f.err(
        P,
        json!([{"kind": "addPrerequisite", "key": "f", "variationId": "x"}]),
        "its own prerequisite",
    );
    f.err(
        P,
        json!([{"kind": "addPrerequisite", "key": "ghost", "variationId": "x"}]),
        "no flag 'ghost'",
    );
    f.err(
        P,
        json!([{"kind": "addPrerequisite", "key": "old", "variationId": "o"}]),
        "archived",
    );
    f.err(
        P,
        json!([{"kind": "addPrerequisite", "key": "other", "variationId": "nope"}]),
        "no variation with _id 'nope'",
    );
    f.ok(
        P,
        json!([{"kind": "updatePrerequisite", "key": "other", "variationId": "x"}]),
    );
    assert_eq!(f.config("production").prerequisites[0].variation, 0);
    f.no_op(
        P,
        json!([{"kind": "updatePrerequisite", "key": "other", "variationId": "x"}]),
    );
    f.err(
        Some("test"),
        json!([{"kind": "updatePrerequisite", "key": "other", "variationId": "x"}]),
        "is not a prerequisite",
    );
    f.ok(P, json!([{"kind": "removePrerequisite", "key": "other"}]));
    assert!(f.config("production").prerequisites.is_empty());
    f.no_op(P, json!([{"kind": "removePrerequisite", "key": "other"}]));
    f.ok(P, json!([{"kind": "replacePrerequisites", "prerequisites": [{"key": "other", "variationId": "y"}]}]));
    assert_eq!(f.config("production").prerequisites.len(), 1);
    f.no_op(P, json!([{"kind": "replacePrerequisites", "prerequisites": [{"key": "other", "variationId": "y"}]}]));
    f.err(P, json!([{"kind": "replacePrerequisites", "prerequisites": [{"key": "other", "variationId": "y"}, {"key": "other", "variationId": "x"}]}]), "listed twice");
}

#[test]
fn prerequisite_cycles_are_refused() {
    let mut f = fixture();
    // "other" already depends on "f": f -> other would close a cycle.
    f.project = ProjectFlags::new([FlagFacts {
        key: "other".into(),
        variation_ids: vec!["x".into(), "y".into()],
        archived: false,
        prerequisites: vec![PrerequisiteEdge {
            environment: "test".into(),
            key: "f".into(),
            variation: 0,
        }],
    }]);
    let err = f.err(
        P,
        json!([{"kind": "addPrerequisite", "key": "other", "variationId": "x"}]),
        "cycle",
    );
    assert!(err.to_string().contains("f -> other -> f"), "{err}");
}

#[test]
fn track_events() {
    let mut f = fixture();
    let a = f.var(0);
    f.ok(
        P,
        json!([{"kind": "addRule", "clauses": [], "variationId": a}]),
    );
    f.ok(
        P,
        json!([{"kind": "updateTrackEvents", "trackEvents": true}]),
    );
    assert!(f.config("production").track_events && f.config("production").rules[0].track_events);
    f.no_op(
        P,
        json!([{"kind": "updateTrackEvents", "trackEvents": true}]),
    );
    f.err(
        P,
        json!([{"kind": "updateTrackEvents"}]),
        "missing field `trackEvents`",
    );
    f.ok(
        P,
        json!([{"kind": "updateTrackEventsFallthrough", "trackEvents": true}]),
    );
    assert!(f.config("production").track_events_fallthrough);
    f.no_op(
        P,
        json!([{"kind": "updateTrackEventsFallthrough", "trackEvents": true}]),
    );
    f.err(
        None,
        json!([{"kind": "updateTrackEventsFallthrough", "trackEvents": true}]),
        "environmentKey",
    );
}
