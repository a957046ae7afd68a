//! Every instruction kind: its effect, its no-op case, and its errors.

use serde_json::{json, Value};

use super::*;
use crate::instruction::{InstructionError, SemanticPatch};
use crate::key::FlagKey;
use crate::SequentialIds;

/// A multivariate flag "f" with variations a, b, c in environments test and production, and a
/// project that also holds flag "other" (variations x, y) and archived flag "old".
struct Fixture {
    flag: Flag,
    ids: SequentialIds,
    project: ProjectFlags,
}

fn fixture() -> Fixture {
    let mut ids = SequentialIds::default();
    let new = NewFlag::with_values(
        FlagKey::parse("f").unwrap(),
        "F",
        ["a", "b", "c"].map(Value::from),
    );
    let mut flag = Flag::create(new, 1, &mut ids).unwrap();
    for env in ["test", "production"] {
        let config = flag.new_config(env, 1, &mut ids);
        flag.environments.insert(env.to_owned(), config);
    }
    let project = ProjectFlags::new([
        FlagFacts {
            key: "other".into(),
            variation_ids: vec!["x".into(), "y".into()],
            archived: false,
            prerequisites: vec![],
        },
        FlagFacts {
            key: "old".into(),
            variation_ids: vec!["o".into()],
            archived: true,
            prerequisites: vec![],
        },
    ]);
    Fixture { flag, ids, project }
}

impl Fixture {
    fn var(&self, i: usize) -> String {
        self.flag.variations[i].id.clone()
    }

    fn apply(
        &mut self,
        env: Option<&str>,
        instructions: Value,
    ) -> Result<PatchOutcome, InstructionError> {
        let mut body = json!({"instructions": instructions});
        if let Some(env) = env {
            body["environmentKey"] = json!(env);
        }
        let patch = SemanticPatch::parse(body)?;
        self.flag
            .apply_instructions(&patch, 100, &mut self.ids, &self.project)
    }

    /// Applies and keeps the result.
    fn ok(&mut self, env: Option<&str>, instructions: Value) -> &Flag {
        let outcome = self
            .apply(env, instructions.clone())
            .unwrap_or_else(|e| panic!("{instructions}: {e}"));
        self.flag = outcome.flag;
        &self.flag
    }

    /// Applies again and expects no change at all.
    fn no_op(&mut self, env: Option<&str>, instructions: Value) {
        let before = self.flag.clone();
        let outcome = self
            .apply(env, instructions.clone())
            .unwrap_or_else(|e| panic!("{instructions}: {e}"));
        assert_eq!(outcome.flag, before, "{instructions} changed the flag");
    }

    /// Expects an error whose message contains `needle`, and no change.
    fn err(&mut self, env: Option<&str>, instructions: Value, needle: &str) -> InstructionError {
        let before = self.flag.clone();
        let err = self
            .apply(env, instructions.clone())
            .expect_err(&format!("{instructions} should fail"));
        assert!(
            err.to_string().contains(needle),
            "{instructions}: '{err}' lacks '{needle}'"
        );
        assert_eq!(self.flag, before);
        err
    }

    fn config(&self, env: &str) -> &FlagConfig {
        &self.flag.environments[env]
    }
}

const P: Option<&str> = Some("production");

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

#[test]
fn add_update_and_remove_variations() {
    let mut f = fixture();
    f.ok(
        None,
        json!([{"kind": "addVariation", "value": "d", "name": "Dee"}]),
    );
    assert_eq!(f.flag.variations.len(), 4);
    assert_eq!(f.flag.variations[3].name.as_deref(), Some("Dee"));
    f.err(
        None,
        json!([{"kind": "addVariation", "value": "d"}]),
        "repeats another variation's value",
    );
    f.err(
        None,
        json!([{"kind": "addVariation", "value": 5}]),
        "one type",
    );
    let d = f.var(3);
    f.ok(None, json!([{"kind": "updateVariation", "variationId": d, "value": "dd", "description": "doubled"}]));
    assert_eq!(f.flag.variations[3].value, json!("dd"));
    f.no_op(
        None,
        json!([{"kind": "updateVariation", "variationId": d, "value": "dd"}]),
    );
    f.err(
        None,
        json!([{"kind": "updateVariation", "variationId": d, "value": "a"}]),
        "repeats",
    );
    f.err(
        None,
        json!([{"kind": "updateVariation", "variationId": "nope", "name": "x"}]),
        "no variation",
    );

    // Removing an unused variation renumbers the references after it.
    let (b, c) = (f.var(1), f.var(2));
    f.ok(P, json!([{"kind": "updateOffVariation", "variationId": c}, {"kind": "addTargets", "values": ["u"], "variationId": d}]));
    f.err(
        None,
        json!([{"kind": "removeVariation", "variationId": c}]),
        "used by",
    );
    f.err(
        None,
        json!([{"kind": "removeVariation", "variationId": f.var(0)}]),
        "defaults",
    );
    f.ok(None, json!([{"kind": "removeVariation", "variationId": b}]));
    assert_eq!(
        f.flag
            .variations
            .iter()
            .map(|v| v.value.clone())
            .collect::<Vec<_>>(),
        [json!("a"), json!("c"), json!("dd")]
    );
    assert_eq!(
        f.config("production").off_variation,
        Some(1),
        "c moved from 2 to 1"
    );
    assert_eq!(
        f.config("production").targets[0].variation,
        2,
        "dd moved from 3 to 2"
    );
    assert_eq!(f.flag.defaults.off_variation, 1, "defaults follow too");
    f.err(
        None,
        json!([{"kind": "removeVariation", "variationId": b}]),
        "no variation",
    );
}

#[test]
fn variations_other_flags_point_at_cannot_move() {
    let mut f = fixture();
    let b = f.var(1);
    f.project = ProjectFlags::new([FlagFacts {
        key: "other".into(),
        variation_ids: vec!["x".into()],
        archived: false,
        prerequisites: vec![PrerequisiteEdge {
            environment: "production".into(),
            key: "f".into(),
            variation: 2,
        }],
    }]);
    f.ok(
        P,
        json!([{"kind": "updateOffVariation", "variationId": f.var(0)}]),
    );
    let err = f.err(
        None,
        json!([{"kind": "removeVariation", "variationId": b}]),
        "flag 'other' uses variation 2",
    );
    assert!(matches!(
        err,
        InstructionError::Instruction { index: 0, .. }
    ));
}

#[test]
fn update_default_variation() {
    let mut f = fixture();
    f.ok(None, json!([{"kind": "updateDefaultVariation", "onVariationValue": "c", "offVariationValue": "a"}]));
    assert_eq!(
        (f.flag.defaults.on_variation, f.flag.defaults.off_variation),
        (2, 0)
    );
    f.no_op(
        None,
        json!([{"kind": "updateDefaultVariation", "OnVariationValue": "c"}]),
    );
    f.err(
        None,
        json!([{"kind": "updateDefaultVariation", "onVariationValue": "zzz"}]),
        "no variation has the value",
    );
    f.err(
        None,
        json!([{"kind": "updateDefaultVariation"}]),
        "needs onVariationValue",
    );
}

#[test]
fn flag_settings() {
    let mut f = fixture();
    f.ok(None, json!([{"kind": "updateName", "value": "New"}, {"kind": "updateDescription", "value": "Text"}]));
    assert_eq!(
        (f.flag.name.as_str(), f.flag.description.as_str()),
        ("New", "Text")
    );
    f.no_op(None, json!([{"kind": "updateName", "value": "New"}]));
    f.err(
        None,
        json!([{"kind": "updateName", "value": ""}]),
        "name: must not be empty",
    );
    f.err(
        None,
        json!([{"kind": "updateName"}]),
        "missing field `value`",
    );
    f.ok(None, json!([{"kind": "addTags", "values": ["b", "a"]}]));
    assert_eq!(f.flag.tags, ["a", "b"]);
    f.no_op(None, json!([{"kind": "addTags", "values": ["a"]}]));
    f.err(
        None,
        json!([{"kind": "addTags", "values": ["bad tag"]}]),
        "tag",
    );
    f.ok(None, json!([{"kind": "removeTags", "values": ["a"]}]));
    assert_eq!(f.flag.tags, ["b"]);
    f.no_op(None, json!([{"kind": "removeTags", "values": ["a"]}]));
    f.ok(None, json!([{"kind": "makeFlagPermanent"}]));
    assert!(!f.flag.temporary);
    f.no_op(None, json!([{"kind": "makeFlagPermanent"}]));
    f.ok(None, json!([{"kind": "makeFlagTemporary"}]));
    assert!(f.flag.temporary);
    f.no_op(None, json!([{"kind": "makeFlagTemporary"}]));
    f.err(
        None,
        json!([{"kind": "makeFlagTemporary", "value": true}]),
        "unknown field",
    );
}

#[test]
fn custom_properties() {
    let mut f = fixture();
    f.ok(
        None,
        json!([{"kind": "addCustomProperties", "key": "jira", "name": "Jira", "values": ["T-1"]}]),
    );
    f.ok(None, json!([{"kind": "addCustomProperties", "key": "jira", "name": "Jira", "values": ["T-2", "T-1"]}]));
    assert_eq!(f.flag.custom_properties["jira"].value, ["T-1", "T-2"]);
    f.no_op(
        None,
        json!([{"kind": "addCustomProperties", "key": "jira", "name": "Jira", "values": ["T-2"]}]),
    );
    f.ok(None, json!([{"kind": "replaceCustomProperties", "key": "jira", "name": "Tickets", "values": ["T-9"]}]));
    assert_eq!(
        f.flag.custom_properties["jira"],
        CustomProperty {
            name: "Tickets".into(),
            value: vec!["T-9".into()]
        }
    );
    f.no_op(None, json!([{"kind": "replaceCustomProperties", "key": "jira", "name": "Tickets", "values": ["T-9"]}]));
    f.ok(
        None,
        json!([{"kind": "removeCustomProperties", "key": "jira", "values": ["T-9"]}]),
    );
    assert!(
        f.flag.custom_properties.is_empty(),
        "removed with its last value"
    );
    f.no_op(
        None,
        json!([{"kind": "removeCustomProperties", "key": "jira", "values": ["T-9"]}]),
    );
    f.err(
        None,
        json!([{"kind": "addCustomProperties", "key": "jira", "values": ["x"]}]),
        "missing field `name`",
    );
}

#[test]
fn maintainer_and_client_side_availability() {
    let mut f = fixture();
    f.ok(
        None,
        json!([{"kind": "updateMaintainerMember", "value": "0123456789abcdef01234567"}]),
    );
    assert_eq!(
        f.flag.maintainer_id.as_deref(),
        Some("0123456789abcdef01234567")
    );
    f.no_op(
        None,
        json!([{"kind": "updateMaintainerMember", "value": "0123456789abcdef01234567"}]),
    );
    // A team replaces the member, and the other way round.
    f.ok(
        None,
        json!([{"kind": "updateMaintainerTeam", "value": "platform"}]),
    );
    assert_eq!(
        (
            f.flag.maintainer_id.as_deref(),
            f.flag.maintainer_team_key.as_deref()
        ),
        (None, Some("platform"))
    );
    f.err(
        None,
        json!([{"kind": "updateMaintainerTeam", "value": "no way"}]),
        "maintainerTeamKey",
    );
    f.ok(
        None,
        json!([{"kind": "updateMaintainerMember", "value": "0123456789abcdef01234567"}]),
    );
    assert_eq!(f.flag.maintainer_team_key, None);
    f.ok(
        None,
        json!([{"kind": "updateMaintainerTeam", "value": "platform"}]),
    );
    f.ok(None, json!([{"kind": "removeMaintainer"}]));
    assert_eq!(
        (
            f.flag.maintainer_id.as_deref(),
            f.flag.maintainer_team_key.as_deref()
        ),
        (None, None)
    );
    f.no_op(None, json!([{"kind": "removeMaintainer"}]));
    f.err(
        None,
        json!([{"kind": "updateMaintainerMember"}]),
        "missing field `value`",
    );
    f.ok(
        None,
        json!([{"kind": "turnOnClientSideAvailability", "value": "usingEnvironmentId"}]),
    );
    assert!(f.flag.client_side_availability.using_environment_id && f.flag.include_in_snippet);
    f.no_op(
        None,
        json!([{"kind": "turnOnClientSideAvailability", "value": "usingEnvironmentId"}]),
    );
    f.ok(
        None,
        json!([{"kind": "turnOffClientSideAvailability", "value": "usingMobileKey"}]),
    );
    assert!(!f.flag.client_side_availability.using_mobile_key);
    f.no_op(
        None,
        json!([{"kind": "turnOffClientSideAvailability", "value": "usingMobileKey"}]),
    );
    f.err(
        None,
        json!([{"kind": "turnOnClientSideAvailability", "value": "everywhere"}]),
        "neither usingMobileKey nor usingEnvironmentId",
    );
}

#[test]
fn lifecycle() {
    let mut f = fixture();
    f.ok(None, json!([{"kind": "archiveFlag"}]));
    assert!(f.flag.archived && f.config("test").archived);
    assert_eq!(f.flag.archived_date, Some(100));
    f.no_op(None, json!([{"kind": "archiveFlag"}]));
    f.ok(None, json!([{"kind": "restoreFlag"}]));
    assert!(!f.flag.archived && f.flag.archived_date.is_none());
    f.no_op(None, json!([{"kind": "restoreFlag"}]));
    f.ok(None, json!([{"kind": "deprecateFlag"}]));
    assert!(f.flag.deprecated && f.flag.deprecated_date == Some(100));
    f.no_op(None, json!([{"kind": "deprecateFlag"}]));
    f.ok(None, json!([{"kind": "restoreDeprecatedFlag"}]));
    assert!(!f.flag.deprecated);
    f.no_op(None, json!([{"kind": "restoreDeprecatedFlag"}]));
    let outcome = f.apply(None, json!([{"kind": "deleteFlag"}])).unwrap();
    assert!(outcome.delete);
    f.err(
        None,
        json!([{"kind": "deleteFlag", "now": true}]),
        "unknown field",
    );
    // A flag others depend on cannot be archived.
    f.project = ProjectFlags::new([FlagFacts {
        key: "other".into(),
        variation_ids: vec!["x".into()],
        archived: false,
        prerequisites: vec![PrerequisiteEdge {
            environment: "test".into(),
            key: "f".into(),
            variation: 0,
        }],
    }]);
    let err = f.err(
        None,
        json!([{"kind": "archiveFlag"}]),
        "prerequisite of other",
    );
    assert!(matches!(err, InstructionError::Conflict { .. }));
}

#[test]
fn all_or_nothing() {
    let mut f = fixture();
    let err = f.err(P, json!([{"kind": "turnFlagOn"}, {"kind": "updateName", "value": "X"}, {"kind": "updateOffVariation", "variationId": "nope"}]), "instruction 2");
    assert!(matches!(
        err,
        InstructionError::Instruction { index: 2, .. }
    ));
    assert!(!f.config("production").on);
}

#[test]
fn every_kind_is_tested_here() {
    let source = include_str!("instruction_tests.rs");
    for kind in crate::instruction::Instruction::KINDS {
        assert!(
            source.contains(&format!("\"kind\": \"{kind}\"")),
            "no test uses '{kind}'"
        );
    }
}
