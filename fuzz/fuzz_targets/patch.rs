//! Arbitrary bytes as a JSON Patch, a merge patch and a semantic patch for a flag with two
//! environments, rules and targets: the domain must answer with a result or an error, never panic.
#![no_main]

use domain::flag::{Flag, FlagFacts, NewFlag, ProjectFlags};
use domain::key::FlagKey;
use domain::instruction::SemanticPatch;
use domain::patch::JsonPatchBody;
use domain::SequentialIds;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn fixture(ids: &mut SequentialIds) -> Option<Flag> {
    let new = NewFlag::with_values(FlagKey::parse("f").ok()?, "F", ["a", "b", "c"].map(Value::from));
    let mut flag = Flag::create(new, 1, ids).ok()?;
    for env in ["test", "production"] {
        let config = flag.new_config(env, 1, ids);
        flag.environments.insert(env.to_owned(), config);
    }
    let on = flag.variations[0].id.clone();
    let setup = SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
        {"kind": "addTargets", "values": ["alice"], "variationId": on},
        {"kind": "addRule", "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@x.com"]}], "variationId": on}]}))
    .ok()?;
    Some(flag.apply_instructions(&setup, 2, ids, &ProjectFlags::default()).ok()?.flag)
}

fuzz_target!(|data: &[u8]| {
    let mut ids = SequentialIds::default();
    let Some(flag) = fixture(&mut ids) else { return };
    let project = ProjectFlags::new([FlagFacts {
        key: "other".into(),
        variation_ids: vec!["x".into(), "y".into()],
        archived: false,
        prerequisites: vec![],
    }]);
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    if let Ok(patch) = JsonPatchBody::parse(value.clone()) {
        if let Ok(next) = flag.apply_patch(&patch.operations, 3, &mut ids) {
            let _ = next.validate_in_project(&flag, &project);
        }
    }
    let _ = flag.apply_merge(&value, 3, &mut ids);
    if let Ok(patch) = SemanticPatch::parse(value) {
        let _ = flag.apply_instructions(&patch, 3, &mut ids, &project);
    }
});
