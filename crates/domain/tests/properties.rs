//! Property tests: whatever sequence of semantic-patch instructions or JSON Patch operations is
//! applied, a change either fails and leaves the flag as it was, or yields a flag that keeps
//! every invariant. The invariants are checked here independently of `Flag::validate`. Random
//! JSON Patch documents, `copy`/`move` chains included, never make a document grow past the size
//! limit, and are refused exactly where the `json_patch` crate alone would first cross it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashSet};

use domain::flag::{Flag, FlagFacts, NewFlag, ProjectFlags, VariationOrRollout};
use domain::instruction::SemanticPatch;
use domain::key::FlagKey;
use domain::patch::{apply_within, json_len, JsonPatchBody, PatchError};
use domain::SequentialIds;
use proptest::prelude::*;
use serde_json::{json, Value};

const ENVS: [&str; 2] = ["test", "production"];

fn fixture() -> (Flag, SequentialIds, ProjectFlags) {
    let mut ids = SequentialIds::default();
    let new = NewFlag::with_values(
        FlagKey::parse("f").unwrap(),
        "F",
        ["a", "b", "c"].map(Value::from),
    );
    let mut flag = Flag::create(new, 1, &mut ids).unwrap();
    for env in ENVS {
        let config = flag.new_config(env, 1, &mut ids);
        flag.environments.insert(env.to_owned(), config);
    }
    let project = ProjectFlags::new([FlagFacts {
        key: "other".into(),
        variation_ids: vec!["x".into(), "y".into()],
        archived: false,
        prerequisites: vec![],
    }]);
    (flag, ids, project)
}

/// Every invariant of a flag, checked without the model's own validation.
fn check_invariants(flag: &Flag, project: &ProjectFlags) -> Result<(), String> {
    let n = flag.variations.len();
    if n < 2 {
        return Err("fewer than two variations".into());
    }
    let values: Vec<&Value> = flag.variations.iter().map(|v| &v.value).collect();
    for (i, value) in values.iter().enumerate() {
        if values[..i].contains(value) {
            return Err(format!("duplicate value {value}"));
        }
    }
    let kinds: HashSet<&str> = values
        .iter()
        .map(|v| {
            if v.is_string() {
                "s"
            } else if v.is_number() {
                "n"
            } else {
                "o"
            }
        })
        .collect();
    if kinds.len() != 1 {
        return Err("mixed variation types".into());
    }
    let ids: HashSet<&str> = flag.variations.iter().map(|v| v.id.as_str()).collect();
    if ids.len() != n || ids.contains("") {
        return Err("variation ids not unique".into());
    }
    if flag.defaults.on_variation >= n || flag.defaults.off_variation >= n {
        return Err("defaults out of range".into());
    }
    for (env, config) in &flag.environments {
        let in_range = |v: usize| v < n;
        let mut targeted: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        for target in config.targets.iter().chain(&config.context_targets) {
            if !in_range(target.variation) || target.values.is_empty() {
                return Err(format!("{env}: bad target {target:?}"));
            }
            for value in &target.values {
                if let Some(v) = targeted.insert((&target.context_kind, value), target.variation) {
                    if v != target.variation {
                        return Err(format!("{env}: {value} targeted twice"));
                    }
                }
            }
        }
        let serve_ok = |s: &VariationOrRollout| match (&s.variation, &s.rollout) {
            (Some(v), None) => in_range(*v),
            (None, Some(r)) => {
                r.variations
                    .iter()
                    .all(|w| in_range(w.variation) && (0..=100_000).contains(&w.weight))
                    && r.variations.iter().map(|w| w.weight).sum::<i64>() == 100_000
            }
            _ => false,
        };
        if !serve_ok(&config.fallthrough) {
            return Err(format!("{env}: bad fallthrough"));
        }
        if config.off_variation.is_some_and(|v| !in_range(v)) {
            return Err(format!("{env}: bad off variation"));
        }
        let mut rule_ids = HashSet::new();
        for rule in &config.rules {
            if rule.id.is_empty() || !rule_ids.insert(&rule.id) {
                return Err(format!("{env}: rule ids"));
            }
            if !serve_ok(&VariationOrRollout {
                variation: rule.variation,
                rollout: rule.rollout.clone(),
            }) {
                return Err(format!("{env}: bad rule {}", rule.id));
            }
            let clause_ids: HashSet<&String> = rule.clauses.iter().map(|c| &c.id).collect();
            if clause_ids.len() != rule.clauses.len() || clause_ids.iter().any(|c| c.is_empty()) {
                return Err(format!("{env}: clause ids"));
            }
        }
        let keys: BTreeSet<&String> = config.prerequisites.iter().map(|p| &p.key).collect();
        if keys.len() != config.prerequisites.len() {
            return Err(format!("{env}: repeated prerequisite"));
        }
        for prerequisite in &config.prerequisites {
            let facts = project
                .get(&prerequisite.key)
                .ok_or("prerequisite on a missing flag")?;
            if prerequisite.key == flag.key || prerequisite.variation >= facts.variation_ids.len() {
                return Err(format!("{env}: bad prerequisite"));
            }
        }
    }
    Ok(())
}

/// An abstract instruction whose indexes are resolved against the flag when it is applied.
#[derive(Debug, Clone)]
enum Op {
    Toggle(bool),
    AddTargets {
        keys: Vec<u8>,
        variation: usize,
        org: bool,
    },
    RemoveTargets {
        keys: Vec<u8>,
        variation: usize,
    },
    ClearTargets(usize),
    AddRule {
        variation: usize,
        split: Option<i64>,
        before: Option<usize>,
        clause: u8,
    },
    RemoveRule(usize),
    ReverseRules,
    UpdateRule {
        rule: usize,
        variation: usize,
    },
    AddClause {
        rule: usize,
        value: u8,
    },
    RemoveClause {
        rule: usize,
    },
    Fallthrough {
        variation: usize,
        split: Option<i64>,
    },
    OffVariation(usize),
    AddVariation(u8),
    RemoveVariation(usize),
    UpdateVariation {
        variation: usize,
        value: u8,
    },
    Defaults {
        on: usize,
        off: usize,
    },
    Prerequisite {
        variation: usize,
        remove: bool,
    },
    Archive(bool),
    Raw(Value),
}

fn op() -> impl Strategy<Value = Op> {
    let small = 0usize..6;
    prop_oneof![
        any::<bool>().prop_map(Op::Toggle),
        (prop::collection::vec(0u8..8, 0..4), small.clone(), any::<bool>()).prop_map(|(keys, variation, org)| Op::AddTargets { keys, variation, org }),
        (prop::collection::vec(0u8..8, 0..4), small.clone()).prop_map(|(keys, variation)| Op::RemoveTargets { keys, variation }),
        small.clone().prop_map(Op::ClearTargets),
        (small.clone(), prop::option::of(-10i64..100_010), prop::option::of(small.clone()), 0u8..5)
            .prop_map(|(variation, split, before, clause)| Op::AddRule { variation, split, before, clause }),
        small.clone().prop_map(Op::RemoveRule),
        Just(Op::ReverseRules),
        (small.clone(), small.clone()).prop_map(|(rule, variation)| Op::UpdateRule { rule, variation }),
        (small.clone(), 0u8..5).prop_map(|(rule, value)| Op::AddClause { rule, value }),
        small.clone().prop_map(|rule| Op::RemoveClause { rule }),
        (small.clone(), prop::option::of(0i64..100_000)).prop_map(|(variation, split)| Op::Fallthrough { variation, split }),
        small.clone().prop_map(Op::OffVariation),
        (0u8..8).prop_map(Op::AddVariation),
        small.clone().prop_map(Op::RemoveVariation),
        (small.clone(), 0u8..8).prop_map(|(variation, value)| Op::UpdateVariation { variation, value }),
        (small.clone(), small.clone()).prop_map(|(on, off)| Op::Defaults { on, off }),
        (0usize..3, any::<bool>()).prop_map(|(variation, remove)| Op::Prerequisite { variation, remove }),
        any::<bool>().prop_map(Op::Archive),
        // Arbitrary kinds and parameters: errors must be errors, never panics or corruption.
        (prop::sample::select(domain::instruction::Instruction::KINDS.to_vec()), any::<u8>())
            .prop_map(|(kind, n)| Op::Raw(json!({"kind": kind, "values": [n.to_string()], "variationId": "nope", "ruleId": "x", "value": n}))),
    ]
}

/// The instruction JSON for `op` against the current `flag` (ids looked up by index; an index
/// past the end names an id that does not exist).
fn materialize(op: &Op, flag: &Flag, env: &str) -> Value {
    let var = |i: usize| {
        flag.variations
            .get(i)
            .map_or("missing".to_owned(), |v| v.id.clone())
    };
    let rules = &flag.environments[env].rules;
    let rule = |i: usize| rules.get(i).map_or("missing".to_owned(), |r| r.id.clone());
    let weights = |v: usize, split: i64| json!({var(0): split, var(v.max(1)): 100_000 - split});
    match op {
        Op::Toggle(on) => json!({"kind": if *on { "turnFlagOn" } else { "turnFlagOff" }}),
        Op::AddTargets {
            keys,
            variation,
            org,
        } => {
            let mut value = json!({"kind": "addTargets", "values": keys.iter().map(|k| format!("k{k}")).collect::<Vec<_>>(), "variationId": var(*variation)});
            if *org {
                value["contextKind"] = json!("org");
            }
            value
        }
        Op::RemoveTargets { keys, variation } => {
            json!({"kind": "removeTargets", "values": keys.iter().map(|k| format!("k{k}")).collect::<Vec<_>>(), "variationId": var(*variation)})
        }
        Op::ClearTargets(v) => json!({"kind": "clearTargets", "variationId": var(*v)}),
        Op::AddRule {
            variation,
            split,
            before,
            clause,
        } => {
            let mut value = json!({"kind": "addRule", "clauses": [{"attribute": "email", "op": "endsWith", "values": [format!("@{clause}.com")]}]});
            match split {
                Some(split) => value["rolloutWeights"] = weights(*variation, *split),
                None => value["variationId"] = json!(var(*variation)),
            }
            if let Some(before) = before {
                value["beforeRuleId"] = json!(rule(*before));
            }
            value
        }
        Op::RemoveRule(i) => json!({"kind": "removeRule", "ruleId": rule(*i)}),
        Op::ReverseRules => {
            json!({"kind": "reorderRules", "ruleIds": rules.iter().rev().map(|r| r.id.clone()).collect::<Vec<_>>()})
        }
        Op::UpdateRule { rule: r, variation } => {
            json!({"kind": "updateRuleVariationOrRollout", "ruleId": rule(*r), "variationId": var(*variation)})
        }
        Op::AddClause { rule: r, value } => {
            json!({"kind": "addClauses", "ruleId": rule(*r), "clauses": [{"attribute": "n", "op": "greaterThan", "values": [value]}]})
        }
        Op::RemoveClause { rule: r } => {
            let clause = rules
                .get(*r)
                .and_then(|r| r.clauses.first())
                .map_or("missing".to_owned(), |c| c.id.clone());
            json!({"kind": "removeClauses", "ruleId": rule(*r), "clauseIds": [clause]})
        }
        Op::Fallthrough { variation, split } => match split {
            Some(split) => {
                json!({"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": weights(*variation, *split)})
            }
            None => {
                json!({"kind": "updateFallthroughVariationOrRollout", "variationId": var(*variation)})
            }
        },
        Op::OffVariation(v) => json!({"kind": "updateOffVariation", "variationId": var(*v)}),
        Op::AddVariation(n) => json!({"kind": "addVariation", "value": format!("v{n}")}),
        Op::RemoveVariation(v) => json!({"kind": "removeVariation", "variationId": var(*v)}),
        Op::UpdateVariation { variation, value } => {
            json!({"kind": "updateVariation", "variationId": var(*variation), "value": format!("v{value}")})
        }
        Op::Defaults { on, off } => json!({"kind": "updateDefaultVariation",
            "onVariationValue": flag.variations.get(*on).map(|v| v.value.clone()),
            "offVariationValue": flag.variations.get(*off).map(|v| v.value.clone())}),
        Op::Prerequisite {
            variation,
            remove: true,
        } => {
            let _ = variation;
            json!({"kind": "removePrerequisite", "key": "other"})
        }
        Op::Prerequisite { variation, .. } => {
            let id = ["x", "y", "z"][*variation];
            json!({"kind": "addPrerequisite", "key": "other", "variationId": id})
        }
        Op::Archive(on) => json!({"kind": if *on { "archiveFlag" } else { "restoreFlag" }}),
        Op::Raw(value) => value.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn instruction_sequences_keep_every_invariant(ops in prop::collection::vec((op(), any::<bool>(), 1usize..4), 1..40)) {
        let (mut flag, mut ids, project) = fixture();
        let mut now = 10;
        for (op, production, batch) in ops {
            let env = if production { "production" } else { "test" };
            // Sometimes several copies of one instruction in a request: all apply or none.
            let instructions: Vec<Value> = (0..batch).map(|_| materialize(&op, &flag, env)).collect();
            let Ok(patch) = SemanticPatch::parse(json!({"environmentKey": env, "instructions": instructions})) else { continue };
            now += 1;
            if let Ok(outcome) = flag.apply_instructions(&patch, now, &mut ids, &project) {
                let next = outcome.flag;
                prop_assert!(check_invariants(&next, &project).is_ok(), "{:?} broke {:?}", op, check_invariants(&next, &project));
                let changed = next.version != flag.version;
                prop_assert!(next.version == flag.version || next.version == flag.version + 1);
                let mut unbumped = next.clone();
                unbumped.version = flag.version;
                for (key, config) in &mut unbumped.environments {
                    if let Some(old) = flag.environments.get(key) {
                        config.version = old.version;
                        config.last_modified = old.last_modified;
                    }
                }
                unbumped.archived_date = flag.archived_date;
                unbumped.deprecated_date = flag.deprecated_date;
                prop_assert_eq!(changed, unbumped != flag, "version grows exactly when something changed");
                flag = next;
            }
        }
    }

    #[test]
    fn json_patches_keep_every_invariant(ops in prop::collection::vec((
        prop::sample::select(vec![
            "/environments/test/offVariation", "/environments/production/fallthrough/variation",
            "/environments/test/targets/-", "/environments/production/rules/-", "/variations/-",
            "/variations/0", "/defaults/onVariation", "/environments/test/on", "/name", "/tags/-",
            "/environments/production/prerequisites/-", "/environments/test/rules/0/variation",
        ]),
        prop::sample::select(vec!["add", "replace", "remove"]),
        0i64..5,
    ), 1..25)) {
        let (mut flag, mut ids, project) = fixture();
        for (path, op, n) in ops {
            let value = match path {
                "/environments/test/targets/-" => json!({"values": [format!("k{n}")], "variation": n}),
                "/environments/production/rules/-" => json!({"variation": n, "clauses": [{"attribute": "a", "op": "in", "values": [n]}]}),
                "/variations/-" | "/variations/0" => json!({"value": format!("v{n}")}),
                "/environments/test/on" => json!(n % 2 == 0),
                "/name" | "/tags/-" => json!(format!("t{n}")),
                "/environments/production/prerequisites/-" => json!({"key": "other", "variation": n}),
                _ => json!(n),
            };
            let body = json!([{"op": op, "path": path, "value": value}]);
            let Ok(patch) = JsonPatchBody::parse(body) else { continue };
            if let Ok(next) = flag.apply_patch(&patch.operations, 5, &mut ids) {
                // Cross-flag rules are the service's second step for JSON Patch.
                if next.needs_project_check(&flag) && next.validate_in_project(&flag, &project).is_err() {
                    continue;
                }
                prop_assert!(check_invariants(&next, &project).is_ok(), "{} {} broke {:?}", op, path, check_invariants(&next, &project));
                flag = next;
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let (flag, mut ids, project) = fixture();
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            if let Ok(patch) = SemanticPatch::parse(value.clone()) {
                let _ = flag.apply_instructions(&patch, 2, &mut ids, &project);
            }
            if let Ok(patch) = JsonPatchBody::parse(value.clone()) {
                let _ = flag.apply_patch(&patch.operations, 2, &mut ids);
            }
            let _ = flag.apply_merge(&value, 2, &mut ids);
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn json_patches_never_grow_a_document_past_the_limit(ops in prop::collection::vec(patch_op(), 1..60)) {
        const LIMIT: usize = 600;
        let links = json!({"self": {"href": "h".repeat(100)}});
        let doc = json!({"_links": links, "a": ["x".repeat(40)], "b": {"c": 1}});
        // The derived `_links` member (and its comma) is not counted against the limit.
        let derived = json_len(&doc) - json_len(&json!({"a": doc["a"], "b": doc["b"]}));
        let budget = LIMIT + derived;
        let read_only = |path: &[String]| path.is_empty() || path.iter().any(|s| s.starts_with('_'));
        let Ok(body) = JsonPatchBody::parse(Value::Array(ops)) else { return Ok(()) };
        // Long chains: keep the operations that apply in turn (and writes only where allowed),
        // until the document is four times the budget.
        let mut scratch = doc.clone();
        let mut ops = Vec::new();
        for op in body.operations {
            let path: Vec<String> = op.path().tokens().map(|t| t.decoded().into_owned()).collect();
            if json_len(&scratch) > 4 * budget || read_only(&path) {
                continue;
            }
            let before = scratch.clone();
            if json_patch::patch(&mut scratch, std::slice::from_ref(&op)).is_ok() {
                ops.push(op);
            } else {
                scratch = before; // a failed `move` is not undone by the crate
            }
        }
        let result = apply_within(&doc, &ops, read_only, LIMIT);
        if matches!(result, Err(PatchError::ReadOnly { .. })) {
            return Ok(());
        }
        // The reference: the json_patch crate, one operation at a time, stopped at the first
        // operation that fails or grows the document past the budget.
        let mut reference = doc.clone();
        let mut expected_failure = None;
        for (index, op) in ops.iter().enumerate() {
            let before = json_len(&reference);
            if json_patch::patch(&mut reference, std::slice::from_ref(op)).is_err() {
                expected_failure = Some((index, false));
                break;
            }
            let after = json_len(&reference);
            if after > budget && after > before {
                expected_failure = Some((index, true));
                break;
            }
        }
        match (expected_failure, result) {
            (None, Ok(patched)) => {
                prop_assert!(json_len(&patched) <= budget);
                prop_assert_eq!(patched, reference);
            }
            (Some((index, true)), Err(err @ PatchError::TooLarge { .. })) => {
                let message = err.to_string();
                prop_assert!(message.contains(&format!("operation at index {index} ")), "{}", message);
                prop_assert!(message.contains("600 bytes"), "{}", message);
            }
            (Some((index, false)), Err(PatchError::Failed { index: i, .. } | PatchError::TestFailed { index: i, .. })) => {
                prop_assert_eq!(i, index);
            }
            // An operation that fails anyway may be refused for its size first.
            (Some((index, false)), Err(err @ PatchError::TooLarge { .. })) => {
                prop_assert!(err.to_string().contains(&format!("operation at index {index} ")), "{}", err);
            }
            (expected, got) => prop_assert!(false, "expected {:?}, got {:?}", expected, got),
        }
    }
}

/// One random JSON Patch operation over the small document of
/// `json_patches_never_grow_a_document_past_the_limit`, biased towards `copy` and `move` chains.
fn patch_op() -> impl Strategy<Value = Value> {
    // Where operations write (mostly places that exist), and where `copy`/`move` read from
    // (the whole document and the derived `_links` included).
    let path = prop::sample::select(vec![
        "/a/-", "/a/-", "/a/0", "/a/1", "/a", "/b", "/b/c", "/b/d", "/b/d", "/e", "/a/0/x",
        "/b/c/0",
    ]);
    let from = prop::sample::select(vec![
        "/a", "/a", "/a", "/b", "/a/0", "/b/c", "/b/d", "/e", "", "/_links", "/a/-",
    ]);
    let value = prop_oneof![
        Just(json!(1)),
        Just(json!(null)),
        (0usize..300).prop_map(|n| json!("v".repeat(n))),
        (0usize..5).prop_map(|n| json!(vec!["w"; n])),
        Just(json!({"k": "v", "l": [1, 2]})),
    ];
    let op = prop::sample::select(vec![
        "add", "remove", "replace", "copy", "copy", "copy", "move", "move", "test",
    ]);
    (op, path, from, value).prop_map(|(op, path, from, value)| match op {
        "copy" | "move" => json!({"op": op, "from": from, "path": path}),
        "remove" => json!({"op": op, "path": path}),
        _ => json!({"op": op, "path": path, "value": value}),
    })
}
