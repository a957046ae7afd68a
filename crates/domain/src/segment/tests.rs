use serde_json::{json, Value};

use super::*;
use crate::SequentialIds;

struct Fixture {
    segment: Segment,
    ids: SequentialIds,
}

fn fixture() -> Fixture {
    let post = SegmentPost {
        key: "beta".into(),
        name: "Beta".into(),
        ..Default::default()
    };
    Fixture {
        segment: Segment::create(post, 1, &mut crate::SequentialIds::default()).unwrap(),
        ids: SequentialIds::default(),
    }
}

impl Fixture {
    fn apply(&mut self, instructions: Value) -> Result<Segment, InstructionError> {
        let patch =
            SegmentPatch::parse(json!({"environmentKey": "e", "instructions": instructions}))?;
        self.segment.apply_instructions(&patch, 50, &mut self.ids)
    }

    fn ok(&mut self, instructions: Value) -> &Segment {
        self.segment = self
            .apply(instructions.clone())
            .unwrap_or_else(|e| panic!("{instructions}: {e}"));
        &self.segment
    }

    fn no_op(&mut self, instructions: Value) {
        let before = self.segment.clone();
        assert_eq!(
            self.apply(instructions.clone()).unwrap(),
            before,
            "{instructions}"
        );
    }

    fn err(&mut self, instructions: Value, needle: &str) {
        let err = self
            .apply(instructions.clone())
            .expect_err(&format!("{instructions}"));
        assert!(
            err.to_string().contains(needle),
            "{instructions}: '{err}' lacks '{needle}'"
        );
    }

    fn rule(&self, i: usize) -> String {
        self.segment.rules[i].id.clone()
    }
}

fn clause(attribute: &str) -> Value {
    json!({"attribute": attribute, "op": "in", "values": ["x"]})
}

#[test]
fn details() {
    let mut f = fixture();
    assert_eq!(
        f.ok(json!([{"kind": "updateName", "value": "Testers"}]))
            .name,
        "Testers"
    );
    assert_eq!(f.segment.version, 2);
    assert_eq!(f.segment.last_modified_date, 50);
    f.no_op(json!([{"kind": "updateName", "value": "Testers"}]));
    f.err(json!([{"kind": "updateName", "value": ""}]), "name");
    f.ok(json!([{"kind": "addTags", "values": ["b", "a"]}]));
    assert_eq!(f.segment.tags, ["a", "b"]);
    f.no_op(json!([{"kind": "addTags", "values": ["a"]}]));
    f.err(json!([{"kind": "addTags", "values": ["no spaces"]}]), "tag");
    f.ok(json!([{"kind": "removeTags", "values": ["a"]}]));
    f.no_op(json!([{"kind": "removeTags", "values": ["a"]}]));
    f.err(json!([{"kind": "removeTags"}]), "missing field `values`");
}

#[test]
fn targets() {
    let mut f = fixture();
    f.ok(json!([{"kind": "addIncludedUsers", "values": ["u1", "u2"]}, {"kind": "addExcludedUsers", "values": ["u3"]}]));
    assert_eq!((f.segment.included.len(), f.segment.excluded.len()), (2, 1));
    f.no_op(json!([{"kind": "addIncludedUsers", "values": ["u1"]}]));
    f.err(
        json!([{"kind": "addExcludedUsers", "values": ["u1"]}]),
        "both included and excluded",
    );
    f.ok(json!([{"kind": "removeIncludedUsers", "values": ["u1"]}, {"kind": "removeExcludedUsers", "values": ["u3"]}]));
    assert_eq!(f.segment.included, ["u2"]);
    f.no_op(json!([{"kind": "removeIncludedUsers", "values": ["u1"]}, {"kind": "removeExcludedUsers", "values": ["u3"]}]));
    f.ok(json!([{"kind": "addIncludedTargets", "contextKind": "org", "values": ["o1"]}, {"kind": "addExcludedTargets", "contextKind": "org", "values": ["o2"]}]));
    assert_eq!(
        f.segment.included_contexts,
        vec![SegmentTarget {
            values: vec!["o1".into()],
            context_kind: "org".into()
        }]
    );
    f.no_op(json!([{"kind": "addIncludedTargets", "contextKind": "org", "values": ["o1"]}]));
    f.err(
        json!([{"kind": "addExcludedTargets", "contextKind": "org", "values": ["o1"]}]),
        "both included and excluded",
    );
    f.ok(json!([{"kind": "addExcludedTargets", "contextKind": "device", "values": ["o1"]}]));
    f.ok(json!([{"kind": "removeIncludedTargets", "contextKind": "org", "values": ["o1"]}, {"kind": "removeExcludedTargets", "contextKind": "org", "values": ["o2"]}]));
    f.no_op(json!([{"kind": "removeIncludedTargets", "contextKind": "org", "values": ["o1"]}, {"kind": "removeExcludedTargets", "contextKind": "org", "values": ["o2"]}]));
    f.err(
        json!([{"kind": "addIncludedTargets", "values": ["x"]}]),
        "missing field `contextKind`",
    );
    let many: Vec<String> = (0..1501).map(|i| format!("u{i}")).collect();
    f.err(
        json!([{"kind": "addIncludedUsers", "values": many}]),
        "at most 1500",
    );
}

#[test]
fn rules_and_clauses() {
    let mut f = fixture();
    f.ok(json!([{"kind": "addRule", "clauses": [clause("email")], "description": "staff", "weight": 50000, "bucketBy": "key"}]));
    f.ok(json!([{"kind": "addRule", "clauses": [clause("country")]}]));
    let (first, second) = (f.rule(0), f.rule(1));
    assert_eq!(f.segment.rules[0].weight, Some(50000));
    f.err(
        json!([{"kind": "addRule", "clauses": [], "weight": 100001}]),
        "between 0 and 100000",
    );
    f.err(json!([{"kind": "addRule", "clauses": [{"attribute": "v", "op": "semVerEqual", "values": ["x"]}]}]), "semantic version");
    f.ok(json!([{"kind": "reorderRules", "ruleIds": [second, first]}]));
    assert_eq!(f.rule(0), second);
    f.no_op(json!([{"kind": "reorderRules", "ruleIds": [second, first]}]));
    f.err(
        json!([{"kind": "reorderRules", "ruleIds": [first]}]),
        "every current rule",
    );
    f.ok(json!([{"kind": "updateRuleDescription", "ruleId": first, "description": "why"}]));
    f.no_op(json!([{"kind": "updateRuleDescription", "ruleId": first, "description": "why"}]));
    f.err(
        json!([{"kind": "updateRuleDescription", "ruleId": "nope", "description": "x"}]),
        "no rule",
    );
    f.ok(json!([{"kind": "updateRuleRolloutAndContextKind", "ruleId": first, "weight": 25000, "contextKind": "org"}]));
    assert_eq!(
        f.segment.rules[1].rollout_context_kind.as_deref(),
        Some("org")
    );
    f.no_op(json!([{"kind": "updateRuleRolloutAndContextKind", "ruleId": first, "weight": 25000, "contextKind": "org"}]));
    f.err(
        json!([{"kind": "updateRuleRolloutAndContextKind", "ruleId": first, "weight": -1}]),
        "between 0 and 100000",
    );
    f.ok(json!([{"kind": "addClauses", "ruleId": first, "clauses": [clause("plan")]}]));
    let clause_id = f.segment.rules[1].clauses[1].id.clone();
    f.err(
        json!([{"kind": "addClauses", "ruleId": "nope", "clauses": []}]),
        "no rule",
    );
    f.ok(json!([{"kind": "addValuesToClause", "ruleId": first, "clauseId": clause_id, "values": ["y"]}]));
    f.no_op(json!([{"kind": "addValuesToClause", "ruleId": first, "clauseId": clause_id, "values": ["y"]}]));
    f.ok(json!([{"kind": "removeValuesFromClause", "ruleId": first, "clauseId": clause_id, "values": ["y"]}]));
    f.no_op(json!([{"kind": "removeValuesFromClause", "ruleId": first, "clauseId": clause_id, "values": ["y"]}]));
    f.err(json!([{"kind": "removeValuesFromClause", "ruleId": first, "clauseId": "nope", "values": ["y"]}]), "no clause");
    f.ok(json!([{"kind": "updateClause", "ruleId": first, "clauseId": clause_id, "clause": {"attribute": "tier", "op": "in", "values": [1]}}]));
    assert_eq!(f.segment.rules[1].clauses[1].attribute, "tier");
    f.no_op(json!([{"kind": "updateClause", "ruleId": first, "clauseId": clause_id, "clause": {"attribute": "tier", "op": "in", "values": [1]}}]));
    f.err(json!([{"kind": "updateClause", "ruleId": first, "clauseId": "nope", "clause": clause("a")}]), "no clause");
    f.ok(json!([{"kind": "removeClauses", "ruleId": first, "clauseIds": [clause_id]}]));
    f.err(
        json!([{"kind": "removeClauses", "ruleId": first, "clauseIds": [clause_id]}]),
        "no clause",
    );
    f.ok(json!([{"kind": "removeRule", "ruleId": first}]));
    assert_eq!(f.segment.rules.len(), 1);
    f.no_op(json!([{"kind": "removeRule", "ruleId": first}]));
}

#[test]
fn parsing() {
    assert!(
        SegmentPatch::parse(json!({"instructions": [{"kind": "updateName", "value": "x"}]}))
            .unwrap_err()
            .to_string()
            .contains("environmentKey")
    );
    let unknown = SegmentPatch::parse(json!({"environmentKey": "e", "instructions": [{"kind": "addBigSegmentIncludedTargets", "values": []}]})).unwrap_err();
    assert!(
        unknown.to_string().starts_with("instruction 0:"),
        "{unknown}"
    );
    let extra = SegmentPatch::parse(json!({"environmentKey": "e", "instructions": [{"kind": "updateName", "value": "x", "extra": 1}]})).unwrap_err();
    assert!(extra.to_string().contains("unknown field"), "{extra}");
}

#[test]
fn json_patch_and_merge() {
    let mut f = fixture();
    let ops: Vec<crate::patch::Operation> = serde_json::from_value(json!([
        {"op": "add", "path": "/included/-", "value": "u1"},
        {"op": "add", "path": "/rules/-", "value": {"clauses": [{"attribute": "a", "op": "in", "values": [1]}]}}])).unwrap();
    let next = f.segment.apply_patch(&ops, 9, &mut f.ids).unwrap();
    assert_eq!(next.included, ["u1"]);
    assert!(!next.rules[0].id.is_empty() && !next.rules[0].clauses[0].id.is_empty());
    assert_eq!(next.version, 2);
    for path in ["/key", "/version", "/_links", "/generation"] {
        let ops: Vec<crate::patch::Operation> =
            serde_json::from_value(json!([{"op": "replace", "path": path, "value": 1}])).unwrap();
        assert!(
            matches!(
                f.segment.apply_patch(&ops, 9, &mut f.ids),
                Err(PatchError::ReadOnly { .. })
            ),
            "{path}"
        );
    }
    let conflicting: Vec<crate::patch::Operation> = serde_json::from_value(json!([
        {"op": "add", "path": "/included/-", "value": "u1"}, {"op": "add", "path": "/excluded/-", "value": "u1"}])).unwrap();
    assert!(matches!(
        f.segment.apply_patch(&conflicting, 9, &mut f.ids),
        Err(PatchError::Invalid(_))
    ));
    let merged = f
        .segment
        .apply_merge(&json!({"description": "d"}), 9, &mut f.ids)
        .unwrap();
    assert_eq!(merged.description.as_deref(), Some("d"));
}

#[test]
fn every_kind_is_tested_here() {
    let source = include_str!("tests.rs");
    for kind in SegmentInstruction::KINDS {
        assert!(
            source.contains(&format!("\"kind\": \"{kind}\"")),
            "no test uses '{kind}'"
        );
    }
}

#[test]
fn segment_match_references() {
    let clauses = [
        crate::rules::clause_from(&serde_json::from_value(json!({"attribute": "segmentMatch", "op": "segmentMatch", "values": ["b", "a", "b"]})).unwrap(), "1".into()),
        crate::rules::clause_from(&serde_json::from_value(json!({"attribute": "x", "op": "in", "values": ["c"]})).unwrap(), "2".into()),
    ];
    assert_eq!(Segment::referenced_by(&clauses), ["a", "b"]);
}
