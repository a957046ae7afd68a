//! Evaluating flags in another Rust service that holds only `flagsvc-domain`: flags and segments
//! in the SDK data model (the JSON flagsvc projects for SDKs), a context as an application sends
//! it, each flag's value and reason, and the trace of one evaluation.
//!
//! Run with `cargo run -p flagsvc-domain --example evaluate_flags`.

use std::collections::HashMap;

use domain::evaluation::{evaluate, explain, Context, FlagData, SdkFlag, SdkSegment};
use serde_json::json;

/// The flags and segments of one environment, by key: where prerequisites and segments are
/// looked up during an evaluation.
struct Environment {
    flags: HashMap<String, SdkFlag>,
    segments: HashMap<String, SdkSegment>,
}

impl FlagData for Environment {
    fn flag(&self, key: &str) -> Option<&SdkFlag> {
        self.flags.get(key)
    }

    fn segment(&self, key: &str) -> Option<&SdkSegment> {
        self.segments.get(key)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `new-checkout`: gold-plan users and the `staff` segment get it; everyone else is split
    // 25/75 by key. `dark-mode` needs `new-checkout` to serve `true` first.
    let checkout: SdkFlag = serde_json::from_value(json!({
        "key": "new-checkout", "version": 7, "on": true, "salt": "checkout-salt",
        "variations": [true, false], "offVariation": 1,
        "rules": [
            {"id": "gold", "variation": 0,
             "clauses": [{"contextKind": "user", "attribute": "plan", "op": "in", "values": ["gold"]}]},
            {"id": "staff", "variation": 0,
             "clauses": [{"attribute": "segmentMatch", "op": "segmentMatch", "values": ["staff"]}]}
        ],
        "fallthrough": {"rollout": {"variations": [
            {"variation": 0, "weight": 25000}, {"variation": 1, "weight": 75000}]}}
    }))?;
    let dark_mode: SdkFlag = serde_json::from_value(json!({
        "key": "dark-mode", "version": 2, "on": true, "salt": "dark-salt",
        "variations": ["on", "off"], "offVariation": 1, "fallthrough": {"variation": 0},
        "prerequisites": [{"key": "new-checkout", "variation": 0}]
    }))?;
    let staff: SdkSegment = serde_json::from_value(json!({
        "key": "staff", "version": 1, "salt": "staff-salt", "included": ["ann"]
    }))?;
    let environment = Environment {
        flags: [checkout, dark_mode]
            .into_iter()
            .map(|flag| (flag.key.clone(), flag))
            .collect(),
        segments: HashMap::from([(staff.key.clone(), staff)]),
    };

    let contexts = [
        json!({"kind": "user", "key": "ann"}),
        json!({"kind": "user", "key": "bob", "plan": "gold"}),
        json!({"kind": "multi", "user": {"key": "cy"}, "org": {"key": "acme"}}),
    ];
    for context in &contexts {
        let context = Context::from_json(context)?;
        for key in ["new-checkout", "dark-mode"] {
            let flag = environment.flag(key).ok_or("no such flag")?;
            let detail = evaluate(flag, &context, &environment);
            println!(
                "{:>12} for {:<40} -> {:<7} {}",
                key,
                serde_json::to_string(&contexts_key(&context))?,
                detail.value.unwrap_or_default(),
                serde_json::to_string(&detail.reason)?,
            );
        }
    }

    // Why does cy get what it gets? The evaluation's trace, as JSON.
    let cy = Context::from_json(&contexts[2])?;
    let flag = environment.flag("dark-mode").ok_or("no such flag")?;
    let trace = explain(flag, &cy, &environment);
    println!("{}", serde_json::to_string_pretty(&trace)?);
    Ok(())
}

/// The kinds and keys of `context`, to print.
fn contexts_key(context: &Context) -> Vec<String> {
    context
        .kinds()
        .filter_map(|kind| {
            context
                .as_kind(kind)
                .map(|single| format!("{kind}:{}", single.key()))
        })
        .collect()
}
