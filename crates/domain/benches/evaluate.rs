//! Evaluations per second on one core: `domain::evaluation` beside the original's own Rust
//! evaluator (`launchdarkly-server-sdk-evaluation`, the differential test's reference) on the
//! same flags, segments and contexts, alternately, in one run: `cargo bench -p flagsvc-domain
//! --bench evaluate` (run by `cargo xtask bench`, which puts the ratio in docs/benchmarks.md).
//! A measurement, not a test: nothing here fails on time.
//!
//! The world: 100 flags, each with 20 individual targets, 5 rules (`in`, `endsWith`,
//! `matches`, `semVerGreaterThan`, `before`, `segmentMatch`, `greaterThan` clauses) and a 50/50
//! rollout; every fifth flag has the one before as a prerequisite; 10 segments of 100 keys and
//! a rule each. 200 contexts: users with attributes, a quarter of them multi-kind with an org.
//! Measured twice: as described, and with `startsWith` in place of `matches`.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use domain::evaluation::{evaluate, Context, FlagData, SdkFlag, SdkSegment};
use launchdarkly_server_sdk_evaluation as ld;
use serde_json::{json, Value};

const FLAGS: usize = 100;
const SEGMENTS: usize = 10;
const CONTEXTS: usize = 200;
const ROUNDS: usize = 7;

fn flag_json(i: usize, regex: bool) -> Value {
    let targets: Vec<String> = (0..20).map(|t| format!("user-{}", i * 7 + t)).collect();
    let clause = |attribute: &str, op: &str, values: Value| {
        json!({"contextKind": "user", "attribute": attribute, "op": op, "values": values,
               "negate": false})
    };
    let rules = json!([
        {"id": format!("r{i}-0"), "variation": 0, "trackEvents": false, "clauses": [
            clause("email", "endsWith", json!([format!("@team{}.example", i % 13)])),
            clause("plan", "in", json!(["gold", "platinum"]))]},
        {"id": format!("r{i}-1"), "variation": 1, "trackEvents": false, "clauses": [
            if regex {
                clause("name", "matches", json!([format!("^A.*{}$", i % 10)]))
            } else {
                clause("name", "startsWith", json!([format!("A{}", i % 10)]))
            }]},
        {"id": format!("r{i}-2"), "variation": 0, "trackEvents": false, "clauses": [
            clause("version", "semVerGreaterThan", json!([format!("2.{}.0", i % 5)]))]},
        {"id": format!("r{i}-3"), "variation": 1, "trackEvents": false, "clauses": [
            clause("created", "before", json!([1_600_000_000_000_i64 + i as i64 * 1_000_000]))]},
        {"id": format!("r{i}-4"), "trackEvents": false, "rollout": {"variations": [
            {"variation": 0, "weight": 30000}, {"variation": 1, "weight": 70000}]}, "clauses": [
            {"attribute": "segmentMatch", "op": "segmentMatch",
             "values": [format!("s{}", i % SEGMENTS)], "negate": false},
            clause("age", "greaterThan", json!([i % 60]))]},
    ]);
    let prerequisites = if i % 5 == 4 {
        json!([{"key": format!("f{}", i - 1), "variation": 0}])
    } else {
        json!([])
    };
    json!({
        "key": format!("f{i}"), "version": 3, "on": true, "salt": format!("salt-{i}"),
        "trackEvents": false, "trackEventsFallthrough": false, "clientSide": false,
        "contextTargets": [],
        "variations": [true, false], "offVariation": 1,
        "targets": [{"values": targets, "variation": 0}],
        "rules": rules,
        "prerequisites": prerequisites,
        "fallthrough": {"rollout": {"variations": [
            {"variation": 0, "weight": 50000}, {"variation": 1, "weight": 50000}]}},
    })
}

fn segment_json(i: usize) -> Value {
    let included: Vec<String> = (0..100).map(|k| format!("user-{}", i * 31 + k)).collect();
    json!({
        "key": format!("s{i}"), "version": 1, "salt": format!("segment-salt-{i}"),
        "included": included, "excluded": [], "includedContexts": [], "excludedContexts": [],
        "rules": [{"id": format!("sr{i}"), "clauses": [
            {"contextKind": "user", "attribute": "email", "op": "startsWith",
             "values": [format!("ops{i}")], "negate": false}]}],
    })
}

fn context_json(i: usize) -> Value {
    let user = json!({
        "kind": "user", "key": format!("user-{}", i * 13),
        "email": format!("{}{i}@team{}.example", if i.is_multiple_of(4) { "ops" } else { "dev" }, i % 17),
        "name": format!("{}person {}", if i.is_multiple_of(3) { "A" } else { "B" }, i % 10),
        "plan": if i.is_multiple_of(5) { "gold" } else { "free" },
        "version": format!("{}.{}.{}", i % 4, i % 7, i % 3),
        "created": 1_550_000_000_000_i64 + i as i64 * 700_000_000,
        "age": i % 90,
    });
    if i % 4 == 3 {
        json!({"kind": "multi", "user": user,
               "org": {"key": format!("org-{}", i % 9), "tier": "enterprise"}})
    } else {
        user
    }
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

/// The original's store, as its own SDKs hand it data: by value.
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

fn by_key<T: serde::de::DeserializeOwned>(items: &[Value]) -> HashMap<String, T> {
    items
        .iter()
        .map(|item| {
            let key = item["key"].as_str().unwrap_or_default().to_owned();
            let parsed = serde_json::from_value(item.clone()).unwrap_or_else(|e| panic!("{e}"));
            (key, parsed)
        })
        .collect()
}

/// The time one pass takes: every flag for every context.
fn time(mut pass: impl FnMut() -> usize) -> Duration {
    let started = Instant::now();
    black_box(pass());
    started.elapsed()
}

/// Measures one world (with `matches` clauses or not) and prints `label: ...`.
fn measure(label: &str, regex: bool) {
    let flags: Vec<Value> = (0..FLAGS).map(|i| flag_json(i, regex)).collect();
    let segments: Vec<Value> = (0..SEGMENTS).map(segment_json).collect();
    let contexts: Vec<Value> = (0..CONTEXTS).map(context_json).collect();
    let ours = Ours {
        flags: by_key(&flags),
        segments: by_key(&segments),
    };
    let theirs = Theirs {
        flags: by_key(&flags),
        segments: by_key(&segments),
    };
    let our_contexts: Vec<Context> = contexts
        .iter()
        .map(|c| Context::from_json(c).unwrap_or_else(|e| panic!("{e:?}")))
        .collect();
    let their_contexts: Vec<ld::Context> = contexts
        .iter()
        .map(|c| serde_json::from_value(c.clone()).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let keys: Vec<String> = (0..FLAGS).map(|i| format!("f{i}")).collect();
    let ours_pass = || {
        let mut served = 0;
        for context in &our_contexts {
            for key in &keys {
                served += usize::from(evaluate(&ours.flags[key], context, &ours).value.is_some());
            }
        }
        served
    };
    let theirs_pass = || {
        let mut served = 0;
        for context in &their_contexts {
            for key in &keys {
                let detail = ld::evaluate(&theirs, &theirs.flags[key], context, None);
                served += usize::from(detail.value.is_some());
            }
        }
        served
    };
    // Both serve the same: the differential test holds it; here a count must agree too.
    assert_eq!(ours_pass(), theirs_pass(), "the two evaluators disagree");
    let (mut best_ours, mut best_theirs) = (Duration::MAX, Duration::MAX);
    for _ in 0..ROUNDS {
        best_ours = best_ours.min(time(ours_pass));
        best_theirs = best_theirs.min(time(theirs_pass));
    }
    let evaluations = (FLAGS * CONTEXTS) as f64;
    let ours_rate = evaluations / best_ours.as_secs_f64();
    let theirs_rate = evaluations / best_theirs.as_secs_f64();
    println!(
        "{label}: ours {ours_rate:.0}/s, original {theirs_rate:.0}/s, ratio {:.2}",
        ours_rate / theirs_rate
    );
}

fn main() {
    // The original compiles a `matches` clause's expression at every evaluation (flagsvc once
    // per snapshot); without such clauses the ratio is the rest of the work.
    measure("evaluate", true);
    measure("evaluate without matches", false);
}
