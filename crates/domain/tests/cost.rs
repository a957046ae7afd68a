//! Bounded cost (issue 8, findings 4, 5 and `0`/`-0`): patches that would amplify memory, and
//! flags or segments whose validation would cost CPU beyond reason, are refused with an error
//! naming the limit. Only public API is used, so that these tests run against any version.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use domain::flag::{Clause, Flag, NewFlag, Operator, ProjectFlags, Rule};
use domain::instruction::SemanticPatch;
use domain::key::FlagKey;
use domain::patch::{JsonPatchBody, Operation};
use domain::segment::{Segment, SegmentPatch, SegmentPost};
use domain::SequentialIds;
use serde_json::{json, Value};

fn flag() -> (Flag, SequentialIds) {
    let mut ids = SequentialIds::default();
    let mut flag = Flag::create(
        NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"),
        1,
        &mut ids,
    )
    .unwrap();
    for env in ["test", "production"] {
        let config = flag.new_config(env, 1, &mut ids);
        flag.environments.insert(env.to_owned(), config);
    }
    (flag, ids)
}

fn segment() -> Segment {
    let post = SegmentPost {
        key: "beta".into(),
        name: "Beta".into(),
        ..Default::default()
    };
    Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap()
}

fn ops(body: Value) -> Vec<Operation> {
    JsonPatchBody::parse(body).unwrap().operations
}

/// The reported body: `add /x [64 chars]`, `copies` x `copy /x -> /x/-`, then `remove /x`.
/// Each copy doubles `/x`; with 23 copies it is 1,198 bytes and would need over 500 MB.
fn copy_chain(prefix: &str, copies: usize) -> Value {
    let mut body =
        vec![json!({"op": "add", "path": format!("{prefix}/x"), "value": ["a".repeat(64)]})];
    for _ in 0..copies {
        body.push(
            json!({"op": "copy", "from": format!("{prefix}/x"), "path": format!("{prefix}/x/-")}),
        );
    }
    body.push(json!({"op": "remove", "path": format!("{prefix}/x")}));
    Value::Array(body)
}

fn assert_names(err: impl std::fmt::Display, needles: &[&str]) {
    let message = err.to_string();
    for needle in needles {
        assert!(
            message.contains(needle),
            "'{message}' does not name {needle}"
        );
    }
}

#[test]
fn a_copy_chain_that_doubles_a_flag_value_is_refused_at_the_size_limit() {
    let (flag, mut ids) = flag();
    // 16 doublings of a 67-byte array make 4 MiB: past the 1 MiB limit, cheap enough for old code.
    for copies in [16, 23] {
        let body = copy_chain("/customProperties/p", copies);
        let body = json!([{"op": "add", "path": "/customProperties/p", "value": {"name": "p", "value": []}}])
            .as_array()
            .unwrap()
            .iter()
            .chain(body.as_array().unwrap())
            .cloned()
            .collect::<Vec<_>>();
        let err = flag
            .apply_patch(&ops(Value::Array(body)), 2, &mut ids)
            .map(drop)
            .expect_err("refused");
        assert_names(&err, &["1048576 bytes", "operation at index"]);
    }
}

#[test]
fn a_copy_chain_on_a_segment_is_refused_at_the_size_limit() {
    let segment = segment();
    let mut ids = SequentialIds::default();
    let err = segment
        .apply_patch(&ops(copy_chain("", 16)), 2, &mut ids)
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1048576 bytes"]);
}

#[test]
fn a_patch_that_stays_under_the_limit_still_applies() {
    let (flag, mut ids) = flag();
    // 10 doublings: 67 KiB, then removed again.
    let body = copy_chain("/x", 10);
    let mut all = vec![json!({"op": "add", "path": "/x", "value": {}})];
    all.extend(body.as_array().unwrap().iter().cloned());
    all.push(json!({"op": "remove", "path": "/x"}));
    all.push(json!({"op": "replace", "path": "/description", "value": "d".repeat(1000)}));
    // `/x` is not a field of a flag, so the result must not keep it; it does not.
    let next = flag
        .apply_patch(&ops(Value::Array(all)), 2, &mut ids)
        .unwrap();
    assert_eq!(next.description.len(), 1000);
}

#[test]
fn a_merge_patch_cannot_grow_a_flag_past_the_limit() {
    let (mut flag, mut ids) = flag();
    flag.description = "d".repeat(700_000);
    let err = flag
        .apply_merge(&json!({"name": "n".repeat(10), "customProperties": {"p": {"name": "p", "value": ["v".repeat(700_000)]}}}), 2, &mut ids).map(drop).expect_err("refused");
    assert_names(&err, &["1048576 bytes", "merge patch"]);
    // A document already past the limit may still shrink.
    flag.description = "d".repeat(1_200_000);
    let next = flag
        .apply_patch(
            &ops(json!([{"op": "replace", "path": "/description", "value": "short"}])),
            2,
            &mut ids,
        )
        .unwrap();
    assert_eq!(next.description, "short");
    let next = flag
        .apply_merge(&json!({"description": "short"}), 2, &mut ids)
        .unwrap();
    assert_eq!(next.description, "short");
}

#[test]
fn a_semantic_patch_cannot_grow_a_flag_or_segment_past_the_limit() {
    let (mut flag, mut ids) = flag();
    flag.description = "d".repeat(700_000);
    let patch = SemanticPatch::parse(json!({"instructions": [
        {"kind": "addCustomProperties", "key": "p", "name": "p", "values": ["v".repeat(400_000)]}]}))
    .unwrap();
    let err = flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1048576 bytes"]);
    let mut segment = segment();
    segment.description = Some("d".repeat(700_000));
    let values: Vec<String> = (0..1000).map(|i| format!("{i:0>400}")).collect();
    let patch = SegmentPatch::parse(json!({"environmentKey": "production", "instructions": [
        {"kind": "addRule", "clauses": [{"attribute": "key", "op": "in", "values": values}]}]}))
    .unwrap();
    let err = segment
        .apply_instructions(&patch, 2, &mut ids)
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1048576 bytes"]);
}

#[test]
fn a_json_patch_has_at_most_1000_operations() {
    let op = json!({"op": "test", "path": "/_version", "value": 1});
    assert!(JsonPatchBody::parse(Value::Array(vec![op.clone(); 1000])).is_ok());
    let err = JsonPatchBody::parse(Value::Array(vec![op.clone(); 1001]))
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1000 operations", "1001"]);
    let err = JsonPatchBody::parse(json!({"patch": vec![op; 1001]}))
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1000 operations"]);
}

#[test]
fn a_semantic_patch_has_at_most_1000_instructions() {
    let on = json!({"kind": "turnFlagOn"});
    assert!(SemanticPatch::parse(json!({"instructions": vec![on.clone(); 1000]})).is_ok());
    let err = SemanticPatch::parse(json!({"instructions": vec![on; 1001]}))
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1000 instructions", "1001"]);
    let add = json!({"kind": "addIncludedUsers", "values": ["a"]});
    let err = SegmentPatch::parse(json!({"instructions": vec![add; 1001]}))
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1000 instructions"]);
}

fn with_values(values: Vec<Value>) -> Result<Flag, domain::ValidationError> {
    let new = NewFlag::with_values(FlagKey::parse("f").unwrap(), "F", values);
    Flag::create(new, 1, &mut SequentialIds::default())
}

#[test]
fn a_flag_has_at_most_1000_variations() {
    assert!(with_values((0..1000).map(Value::from).collect()).is_ok());
    let err = with_values((0..1001).map(Value::from).collect())
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["variations", "1000"]);
    // Also by JSON Patch, and by semantic patch.
    let mut flag = with_values((0..1000).map(Value::from).collect()).unwrap();
    let config = flag.new_config("Test", 1, &mut SequentialIds::default());
    flag.environments.insert("test".into(), config);
    let mut ids = SequentialIds::default();
    let err = flag
        .apply_patch(
            &ops(json!([{"op": "add", "path": "/variations/-", "value": {"value": 1000}}])),
            2,
            &mut ids,
        )
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["variations", "1000"]);
    let patch =
        SemanticPatch::parse(json!({"instructions": [{"kind": "addVariation", "value": 1000}]}))
            .unwrap();
    let err = flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["variations", "1000"]);
}

#[test]
fn zero_and_minus_zero_are_the_same_variation_value() {
    let values: Vec<Value> = serde_json::from_str("[0, -0]").unwrap();
    let err = with_values(values).map(drop).expect_err("refused");
    assert_names(&err, &["variations[1].value", "repeats"]);
    let values: Vec<Value> = serde_json::from_str(r#"[{"n": [0]}, {"n": [-0.0]}]"#).unwrap();
    assert_names(
        with_values(values).map(drop).expect_err("refused"),
        &["repeats"],
    );
    // Far apart in a long list too.
    let mut values: Vec<Value> = (1..900).map(Value::from).collect();
    values.push(serde_json::from_str("1.0").unwrap());
    let err = with_values(values).map(drop).expect_err("refused");
    assert_names(&err, &["variations[899].value", "repeats"]);
    // Distinct values stay distinct.
    let values: Vec<Value> =
        serde_json::from_str(r#"[0, 0.5, -1, "0", {"a": 1, "b": 2}, {"a": 2, "b": 1}]"#).unwrap();
    let err = with_values(values).map(drop).expect_err("refused");
    assert!(!err.to_string().contains("repeats"), "{err}");
}

fn rule(op: Operator, values: Vec<Value>) -> Rule {
    Rule {
        id: String::new(),
        clauses: vec![Clause {
            id: String::new(),
            attribute: "key".into(),
            op,
            values,
            negate: false,
            context_kind: "user".into(),
        }],
        track_events: false,
        variation: Some(0),
        rollout: None,
        description: None,
        disabled: false,
    }
}

fn add_rules(rules: Vec<Rule>) -> Vec<Operation> {
    ops(json!([{"op": "replace", "path": "/environments/test/rules", "value": rules}]))
}

#[test]
fn a_clause_has_at_most_1000_values() {
    let (flag, mut ids) = flag();
    let values = |n: usize| {
        (0..n)
            .map(|i| Value::from(format!("k{i}")))
            .collect::<Vec<_>>()
    };
    assert!(flag
        .apply_patch(
            &add_rules(vec![rule(Operator::In, values(1000))]),
            2,
            &mut ids
        )
        .is_ok());
    let err = flag
        .apply_patch(
            &add_rules(vec![rule(Operator::In, values(1001))]),
            2,
            &mut ids,
        )
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["clauses/0/values", "1000 values"]);
    // Semantic patch: adding values to a clause.
    let next = flag
        .apply_patch(
            &add_rules(vec![rule(Operator::In, values(1000))]),
            2,
            &mut ids,
        )
        .unwrap();
    let rule_id = &next.environments["test"].rules[0].id;
    let clause_id = &next.environments["test"].rules[0].clauses[0].id;
    let patch = SemanticPatch::parse(json!({"environmentKey": "test", "instructions": [
        {"kind": "addValuesToClause", "ruleId": rule_id, "clauseId": clause_id, "values": ["more"]}]}))
    .unwrap();
    let err = next
        .apply_instructions(&patch, 3, &mut ids, &ProjectFlags::default())
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1000 values"]);
    // And on a segment.
    let segment = segment();
    let clause = json!({"attribute": "key", "op": "in", "values": values(1001)});
    let err = segment
        .apply_patch(
            &ops(json!([{"op": "add", "path": "/rules/-", "value": {"clauses": [clause]}}])),
            2,
            &mut ids,
        )
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["1000 values"]);
}

#[test]
fn a_regular_expression_has_a_size_limit() {
    let (flag, mut ids) = flag();
    let err = flag
        .apply_patch(
            &add_rules(vec![rule(Operator::Matches, vec![json!("a{1,65535}")])]),
            2,
            &mut ids,
        )
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["clauses/0/values/0", "65536 bytes"]);
    // Ordinary expressions fit.
    for pattern in [
        r"^[a-z0-9._%+-]+@example\.com$",
        r"\w+@corp\.com",
        r"^\d{3}-\d{4}$",
        r".*beta.*",
    ] {
        flag.apply_patch(
            &add_rules(vec![rule(Operator::Matches, vec![json!(pattern)])]),
            2,
            &mut ids,
        )
        .unwrap_or_else(|e| panic!("{pattern}: {e}"));
    }
    // The same on a segment.
    let clause = json!({"attribute": "key", "op": "matches", "values": ["a{1,65535}"]});
    let err = segment()
        .apply_patch(
            &ops(json!([{"op": "add", "path": "/rules/-", "value": {"clauses": [clause]}}])),
            2,
            &mut ids,
        )
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["65536 bytes"]);
}

#[test]
fn a_flag_has_at_most_100_distinct_regular_expressions() {
    let (flag, mut ids) = flag();
    let patterns = |n: usize| (0..n).map(|i| json!(format!("^k{i}$"))).collect::<Vec<_>>();
    let next = flag
        .apply_patch(
            &add_rules(vec![rule(Operator::Matches, patterns(100))]),
            2,
            &mut ids,
        )
        .unwrap();
    // The same expressions in another environment are not more of them.
    let same = ops(
        json!([{"op": "replace", "path": "/environments/production/rules", "value": [rule(Operator::Matches, patterns(100))]}]),
    );
    next.apply_patch(&same, 3, &mut ids).unwrap();
    let err = flag
        .apply_patch(
            &add_rules(vec![rule(Operator::Matches, patterns(101))]),
            2,
            &mut ids,
        )
        .map(drop)
        .expect_err("refused");
    assert_names(&err, &["100 distinct regular expressions"]);
}

#[test]
fn stored_expressions_are_not_compiled_again_on_every_change() {
    // A flag stored before the size limit holds an expression over it; other changes still apply,
    // because only the expressions a change brings are compiled.
    let (mut flag, mut ids) = flag();
    let mut old = rule(Operator::Matches, vec![json!("a{1,65535}")]);
    old.id = "r".into();
    old.clauses[0].id = "c".into();
    flag.environments.get_mut("test").unwrap().rules.push(old);
    let next = flag
        .apply_patch(
            &ops(json!([{"op": "replace", "path": "/name", "value": "Renamed"}])),
            2,
            &mut ids,
        )
        .unwrap();
    assert_eq!(next.name, "Renamed");
    let patch = SemanticPatch::parse(
        json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .unwrap();
    flag.apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .unwrap();
    // But a new expression over the limit is refused.
    let err = flag
        .apply_patch(&ops(json!([{"op": "add", "path": "/environments/production/rules/-", "value": rule(Operator::Matches, vec![json!("a{1,65534}")])}])), 2, &mut ids).map(drop).expect_err("refused");
    assert_names(&err, &["65536 bytes"]);
}

/// A flag semantic patch names at most `MAX_TARGETS` target values in all (probe: 90,000 values
/// in one `addTargets` ran 13 s in a release build, holding the flag's lock, before the
/// 15,000-per-environment limit refused the result). Refused when parsed, before anything runs.
#[test]
fn target_values_per_flag_semantic_patch_are_limited_before_anything_runs() {
    let values: Vec<String> = (0..=domain::MAX_TARGETS).map(|n| n.to_string()).collect();
    for kind in [
        "addTargets",
        "removeTargets",
        "addUserTargets",
        "removeUserTargets",
    ] {
        let err = SemanticPatch::parse(json!({"environmentKey": "test", "instructions": [
            {"kind": kind, "variationId": "v", "values": values}]}))
        .unwrap_err();
        assert_names(err, &["15000", "15001"]);
    }
    let half: Vec<String> = values[..8_000].to_vec();
    let err = SemanticPatch::parse(json!({"environmentKey": "test", "instructions": [
        {"kind": "replaceTargets", "targets": [{"variationId": "a", "values": half}, {"variationId": "b", "values": half}]}]}))
    .unwrap_err();
    assert_names(err, &["15000", "16000"]);
}

/// The full per-environment allowance of targets can be added, and removed, in one request.
#[test]
fn the_full_allowance_of_targets_is_added_and_removed_in_one_request() {
    let (flag, mut ids) = flag();
    let variation = flag.variations[0].id.clone();
    let values: Vec<String> = (0..domain::MAX_TARGETS)
        .map(|n| format!("user-{n}"))
        .collect();
    let add = SemanticPatch::parse(json!({"environmentKey": "test", "instructions": [
        {"kind": "addTargets", "variationId": variation, "values": values}]}))
    .unwrap();
    let added = flag
        .apply_instructions(&add, 2, &mut ids, &ProjectFlags::default())
        .unwrap()
        .flag;
    assert_eq!(
        added.environments["test"].targets[0].values.len(),
        domain::MAX_TARGETS
    );
    let remove = SemanticPatch::parse(json!({"environmentKey": "test", "instructions": [
        {"kind": "removeTargets", "variationId": variation, "values": values}]}))
    .unwrap();
    let removed = added
        .apply_instructions(&remove, 3, &mut ids, &ProjectFlags::default())
        .unwrap()
        .flag;
    assert!(removed.environments["test"].targets.is_empty());
}

/// Measuring what an operation moves, removes or replaces reads that part of the resource, so a
/// patch of many operations on one large subtree reads the resource many times over (probe:
/// 1,000 `move`s of a 1 MiB subtree back and forth, 2.1 s in a release build). The work of one
/// patch is bounded: past 16 times the size limit it is refused, naming the limit.
#[test]
fn a_patch_that_rereads_a_large_subtree_many_times_is_refused() {
    let big: Vec<String> = (0..20_000)
        .map(|n| format!("value-{n:08}-padding-padding"))
        .collect();
    let doc = json!({"a": big, "b": []});
    let moves: Vec<Value> = (0..1000)
        .map(|i| {
            let (from, to) = if i % 2 == 0 {
                ("/a", "/b")
            } else {
                ("/b", "/a")
            };
            json!({"op": "move", "from": from, "path": to})
        })
        .collect();
    let Err(err) = domain::patch::apply(&doc, &ops(Value::Array(moves)), |_| false) else {
        panic!("1,000 moves of a large subtree were applied");
    };
    assert_names(err, &["16777216 bytes"]);
    // A few moves of the same subtree are fine.
    let few = ops(
        json!([{"op": "move", "from": "/a", "path": "/b"}, {"op": "move", "from": "/b", "path": "/a"}]),
    );
    // (`/b` is replaced by the first move, then moved back to `/a`.)
    let applied = domain::patch::apply(&doc, &few, |_| false).unwrap();
    assert!(
        applied == json!({"a": doc["a"]}),
        "two moves were not applied as RFC 6902 says"
    );
}
