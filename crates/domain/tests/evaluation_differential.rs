//! The evaluator against the original's own (`launchdarkly-server-sdk-evaluation`, a
//! dev-dependency): random flags, segments and contexts (every operator, rollouts and
//! experiments, multi-kind contexts, prerequisite chains and cycles, segment rules and segments
//! of segments) must give the same value, variation index and reason; and `explain` must come
//! to the same result as `evaluate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;

use domain::evaluation::{evaluate, explain, Context, FlagData, SdkFlag, SdkSegment};
use launchdarkly_server_sdk_evaluation as ld;
use proptest::prelude::*;
use serde_json::{json, Value};

/// A small deterministic generator: proptest picks the seed, the shapes come from it.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }
}

const KINDS: [&str; 3] = ["user", "org", "device"];
const KEYS: [&str; 4] = ["a", "b", "c", "d"];
const ATTRIBUTES: [&str; 12] = [
    "key",
    "kind",
    "plan",
    "age",
    "tags",
    "beta",
    "version",
    "joined",
    "/address/city",
    "name",
    "anonymous",
    "missing",
];
const OPERATORS: [&str; 16] = [
    "in",
    "startsWith",
    "endsWith",
    "contains",
    "matches",
    "lessThan",
    "lessThanOrEqual",
    "greaterThan",
    "greaterThanOrEqual",
    "before",
    "after",
    "semVerEqual",
    "semVerLessThan",
    "semVerGreaterThan",
    "segmentMatch",
    "noSuchOperator",
];

/// A value of the kind an attribute or a clause may hold.
fn value(g: &mut Gen) -> Value {
    match g.below(9) {
        0 => json!(g.pick(&["gold", "silver", "go", "ld", "a", "b", ""])),
        1 => json!(g.pick(&[0, 1, 18, 21, 65])),
        2 => json!(g.pick(&[1.5, 18.0, 20.999])),
        3 => json!(g.pick(&[true, false])),
        4 => json!(g.pick(&["1", "1.2", "1.2.3", "2.0.0-rc.1", "2.0.0+b", "x.y"])),
        5 => json!(g.pick(&[1_600_000_000_000_i64, 1_700_000_000_000])),
        6 => json!(g.pick(&[
            "2020-09-13T12:26:40Z",
            "2023-11-14T22:13:20.5+01:00",
            "nope"
        ])),
        7 => json!(g.pick(&["^g.*d$", "s", "[", "(a|b)"])),
        _ => json!(["gold", "b", 3]),
    }
}

fn single_context(g: &mut Gen, kind: &str) -> Value {
    let mut context = json!({"key": g.pick(&KEYS)});
    if kind != "-" {
        context["kind"] = json!(kind);
    }
    for name in [
        "plan",
        "age",
        "tags",
        "beta",
        "version",
        "joined",
        "name",
        "anonymous",
    ] {
        if g.chance(50) {
            let v = match name {
                "name" => json!(g.pick(&["Ann", "Bob"])),
                "anonymous" => json!(g.chance(50)),
                _ => value(g),
            };
            context[name] = v;
        }
    }
    if g.chance(30) {
        context["address"] = json!({"city": g.pick(&["Oslo", "gold"])});
    }
    if kind == "-" && g.chance(70) {
        // The older user form keeps its other attributes under `custom`.
        let object = context.as_object_mut().unwrap();
        let custom: serde_json::Map<String, Value> = [
            "plan", "age", "tags", "beta", "version", "joined", "address",
        ]
        .iter()
        .filter_map(|name| object.remove(*name).map(|v| ((*name).to_owned(), v)))
        .collect();
        object.insert("custom".into(), Value::Object(custom));
    }
    context
}

fn context(g: &mut Gen) -> Value {
    match g.below(4) {
        0 => single_context(g, "-"),
        1 => {
            let mut multi = json!({"kind": "multi"});
            for kind in KINDS {
                if g.chance(60) {
                    let mut part = single_context(g, kind);
                    part.as_object_mut().unwrap().remove("kind");
                    multi[kind] = part;
                }
            }
            if multi.as_object().unwrap().len() == 1 {
                multi["org"] = json!({"key": "o"});
            }
            multi
        }
        _ => {
            let kind = g.pick(&KINDS);
            single_context(g, kind)
        }
    }
}

fn clause(g: &mut Gen, segments: &[String]) -> Value {
    let op = g.pick(&OPERATORS);
    let values: Vec<Value> = if op == "segmentMatch" {
        (0..=g.below(2)).map(|_| json!(g.pick(segments))).collect()
    } else {
        (0..=g.below(3)).map(|_| value(g)).collect()
    };
    let mut clause = json!({"attribute": g.pick(&ATTRIBUTES), "op": op, "values": values,
                            "negate": g.chance(20)});
    if g.chance(50) {
        clause["contextKind"] = json!(g.pick(&KINDS));
    }
    clause
}

fn rollout(g: &mut Gen, variations: usize) -> Value {
    let count = g.below(3);
    let mut weights = Vec::new();
    for _ in 0..count {
        let weight = g.pick(&[0, 1, 25_000, 50_000, 60_000, 100_000]);
        weights.push(
            json!({"variation": g.below(variations + 1), "weight": weight,
                            "untracked": g.chance(20)}),
        );
    }
    let mut rollout = json!({"variations": weights});
    if g.chance(40) {
        rollout["kind"] = json!("experiment");
    }
    if g.chance(40) {
        rollout["contextKind"] = json!(g.pick(&KINDS));
    }
    if g.chance(30) {
        rollout["bucketBy"] = json!(g.pick(&["plan", "age", "/address/city", "name"]));
    }
    if g.chance(30) {
        rollout["seed"] = json!(g.pick(&[61, -3, 1000]));
    }
    rollout
}

fn serve(g: &mut Gen, variations: usize) -> Value {
    if g.chance(60) {
        json!({"variation": g.below(variations + 1)})
    } else {
        json!({"rollout": rollout(g, variations)})
    }
}

fn flag(g: &mut Gen, key: &str, flags: &[String], segments: &[String]) -> Value {
    let variations = 2 + g.below(2);
    let values: Vec<Value> = (0..variations).map(|i| json!(format!("v{i}"))).collect();
    let mut flag = json!({
        "key": key, "version": 1, "on": g.chance(85), "salt": g.pick(&["salt", "", "x.y"]),
        "variations": values, "fallthrough": serve(g, variations),
        "targets": [], "contextTargets": [], "rules": [], "prerequisites": [],
        "trackEvents": false, "trackEventsFallthrough": false, "clientSide": false,
    });
    if g.chance(80) {
        flag["offVariation"] = json!(g.below(variations + 1));
    }
    for _ in 0..g.below(3) {
        let target = json!({"values": [g.pick(&KEYS)], "variation": g.below(variations)});
        flag["targets"].as_array_mut().unwrap().push(target);
    }
    for _ in 0..g.below(3) {
        let kind = g.pick(&KINDS);
        let values: Vec<&str> = if kind == "user" && g.chance(50) {
            vec![]
        } else {
            vec![g.pick(&KEYS)]
        };
        let target =
            json!({"contextKind": kind, "values": values, "variation": g.below(variations)});
        flag["contextTargets"].as_array_mut().unwrap().push(target);
    }
    for i in 0..g.below(4) {
        let clauses: Vec<Value> = (0..=g.below(2)).map(|_| clause(g, segments)).collect();
        let mut rule = serve(g, variations);
        rule["clauses"] = json!(clauses);
        rule["trackEvents"] = json!(false);
        if g.chance(80) {
            rule["id"] = json!(format!("r{i}"));
        }
        flag["rules"].as_array_mut().unwrap().push(rule);
    }
    if g.chance(40) {
        let prerequisite = json!({"key": g.pick(flags), "variation": g.below(variations)});
        flag["prerequisites"]
            .as_array_mut()
            .unwrap()
            .push(prerequisite);
    }
    flag
}

fn segment(g: &mut Gen, key: &str, segments: &[String]) -> Value {
    let mut segment = json!({
        "key": key, "version": 1, "salt": g.pick(&["s", "salt"]),
        "included": if g.chance(30) { json!([g.pick(&KEYS)]) } else { json!([]) },
        "excluded": if g.chance(30) { json!([g.pick(&KEYS)]) } else { json!([]) },
        "includedContexts": [], "excludedContexts": [], "rules": [],
    });
    if g.chance(30) {
        segment["includedContexts"] =
            json!([{"contextKind": g.pick(&KINDS), "values": [g.pick(&KEYS)]}]);
    }
    if g.chance(30) {
        segment["excludedContexts"] =
            json!([{"contextKind": g.pick(&KINDS), "values": [g.pick(&KEYS)]}]);
    }
    for _ in 0..g.below(3) {
        let clauses: Vec<Value> = (0..=g.below(2)).map(|_| clause(g, segments)).collect();
        let mut rule = json!({"clauses": clauses});
        if g.chance(40) {
            rule["weight"] = json!(g.pick(&[0, 30_000, 70_000, 100_000]));
        }
        if g.chance(30) {
            rule["bucketBy"] = json!(g.pick(&["plan", "age", "/address/city"]));
        }
        if g.chance(30) {
            rule["rolloutContextKind"] = json!(g.pick(&KINDS));
        }
        segment["rules"].as_array_mut().unwrap().push(rule);
    }
    segment
}

struct Ours {
    flags: HashMap<String, SdkFlag>,
    segments: HashMap<String, SdkSegment>,
}

impl FlagData for Ours {
    fn flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags.get(key)
    }
    fn segment(&self, key: &str) -> Option<&SdkSegment> {
        self.segments.get(key)
    }
}

struct Theirs {
    flags: HashMap<String, ld::Flag>,
    segments: HashMap<String, ld::Segment>,
}

impl ld::Store for Theirs {
    fn flag(&self, key: &str) -> Option<ld::Flag> {
        self.flags.get(key).cloned()
    }
    fn segment(&self, key: &str) -> Option<ld::Segment> {
        self.segments.get(key).cloned()
    }
}

/// Evaluates every flag of one generated world both ways; the first difference, if any.
fn compare(seed: u64) -> Result<usize, String> {
    let mut g = Gen(seed | 1);
    let flag_keys: Vec<String> = (0..4).map(|i| format!("f{i}")).collect();
    let segment_keys: Vec<String> = (0..3).map(|i| format!("s{i}")).collect();
    let flags: Vec<Value> = flag_keys
        .iter()
        .map(|k| flag(&mut g, k, &flag_keys, &segment_keys))
        .collect();
    let segments: Vec<Value> = segment_keys
        .iter()
        .map(|k| segment(&mut g, k, &segment_keys))
        .collect();
    let ours = Ours {
        flags: flags
            .iter()
            .map(|f| {
                (
                    f["key"].as_str().unwrap().to_owned(),
                    serde_json::from_value(f.clone()).unwrap(),
                )
            })
            .collect(),
        segments: segments
            .iter()
            .map(|s| {
                (
                    s["key"].as_str().unwrap().to_owned(),
                    serde_json::from_value(s.clone()).unwrap(),
                )
            })
            .collect(),
    };
    let theirs = Theirs {
        flags: flags
            .iter()
            .map(|f| {
                (
                    f["key"].as_str().unwrap().to_owned(),
                    serde_json::from_value(f.clone()).unwrap(),
                )
            })
            .collect(),
        segments: segments
            .iter()
            .map(|s| {
                (
                    s["key"].as_str().unwrap().to_owned(),
                    serde_json::from_value(s.clone()).unwrap(),
                )
            })
            .collect(),
    };
    let mut compared = 0;
    for _ in 0..4 {
        let context_json = context(&mut g);
        let their_context: Result<ld::Context, _> = serde_json::from_value(context_json.clone());
        let our_context = Context::from_json(&context_json);
        let (Ok(their_context), Ok(our_context)) = (their_context, our_context) else {
            continue;
        };
        for key in &flag_keys {
            let mine = evaluate(&ours.flags[key], &our_context, &ours);
            let explained = explain(&ours.flags[key], &our_context, &ours);
            if explained.result != mine {
                return Err(format!(
                    "explain gave {:?}, evaluate {mine:?}",
                    explained.result
                ));
            }
            let reference = ld::evaluate(&theirs, &theirs.flags[key], &their_context, None);
            let mine_json = serde_json::to_value(&mine).unwrap();
            // The reference keeps an out-of-range index beside its error reason; the contract
            // (every SDK) gives none with an error, as ours does.
            let reference_index = match reference.reason {
                ld::Reason::Error { .. } => None,
                _ => reference.variation_index,
            };
            let reference_json = json!({
                "value": reference.value.map(|v| serde_json::to_value(v).unwrap()),
                "variationIndex": reference_index,
                "reason": serde_json::to_value(&reference.reason).unwrap(),
            });
            let mine_json = json!({
                "value": mine_json.get("value").cloned(),
                "variationIndex": mine_json.get("variationIndex").cloned(),
                "reason": mine_json["reason"].clone(),
            });
            if mine_json != reference_json {
                return Err(format!(
                    "flag {key} for {context_json}:\n ours   {mine_json}\n theirs {reference_json}\n flags {}\n segments {}",
                    json!(flags), json!(segments)
                ));
            }
            compared += 1;
        }
    }
    Ok(compared)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn the_evaluator_agrees_with_the_originals(seed in any::<u64>()) {
        if let Err(difference) = compare(seed) {
            prop_assert!(false, "seed {seed}: {difference}");
        }
    }
}

/// The generator reaches what it is meant to: evaluations, not only refused contexts.
#[test]
fn the_worlds_compare_many_evaluations() {
    let compared: usize = (1..200_u64)
        .map(|seed| compare(seed * 7919).unwrap_or(0))
        .sum();
    assert!(compared > 2_000, "only {compared} evaluations compared");
}
