use serde_json::json;

use serde_json::Value;

use super::*;
use crate::instruction::{InstructionError, SemanticPatch};
use crate::key::FlagKey;
use crate::patch::{JsonPatchBody, PatchError};
use crate::SequentialIds;

fn flag_in(envs: &[&str]) -> (Flag, SequentialIds) {
    let mut ids = SequentialIds::default();
    let mut flag = Flag::create(
        NewFlag::boolean(FlagKey::parse("f").unwrap(), "F"),
        1,
        &mut ids,
    )
    .unwrap();
    for env in envs {
        let config = flag.new_config(env, 1, &mut ids);
        flag.environments.insert((*env).to_owned(), config);
    }
    (flag, ids)
}

fn ops(value: serde_json::Value) -> Vec<crate::patch::Operation> {
    JsonPatchBody::parse(value).unwrap().operations
}

#[test]
fn patch_changes_one_environment_and_bumps_versions() {
    let (flag, mut ids) = flag_in(&["test", "production"]);
    let next = flag
        .apply_patch(
            &ops(json!([{"op": "replace", "path": "/environments/production/on", "value": true}])),
            9,
            &mut ids,
        )
        .unwrap();
    assert!(next.environments["production"].on);
    assert_eq!(next.environments["production"].version, 2);
    assert_eq!(next.environments["production"].last_modified, 9);
    assert_eq!(next.environments["test"], flag.environments["test"]);
    assert_eq!(next.version, 2);
}

#[test]
fn a_flag_wide_change_gives_every_environment_a_higher_version() {
    let (flag, mut ids) = flag_in(&["test", "production"]);
    let versions = |f: &Flag| {
        (
            f.environments["test"].version,
            f.environments["production"].version,
        )
    };
    let patched = |f: &Flag, value: Value, ids: &mut SequentialIds| {
        f.apply_patch(&ops(value), 9, ids).unwrap()
    };
    // What SDKs evaluate changes in both: a variation's value, archiving, client-side
    // availability.
    let valued = patched(
        &flag,
        json!([{"op": "replace", "path": "/variations/0/value", "value": false},
               {"op": "replace", "path": "/variations/1/value", "value": true}]),
        &mut ids,
    );
    assert_eq!(versions(&valued), (2, 2));
    assert_eq!(valued.environments["test"].last_modified, 9);
    let archived = patched(
        &valued,
        json!([{"op": "replace", "path": "/archived", "value": true}]),
        &mut ids,
    );
    assert_eq!(versions(&archived), (3, 3));
    let client_side = patched(
        &archived,
        json!([{"op": "replace", "path": "/clientSideAvailability/usingMobileKey",
                 "value": !archived.client_side_availability.using_mobile_key}]),
        &mut ids,
    );
    assert_eq!(versions(&client_side), (4, 4));
    // What SDKs do not see leaves the environments' versions alone.
    let renamed = patched(
        &client_side,
        json!([{"op": "replace", "path": "/name", "value": "Renamed"},
               {"op": "add", "path": "/variations/0/name", "value": "Yes"}]),
        &mut ids,
    );
    assert_eq!(versions(&renamed), (4, 4));
    assert_eq!(renamed.version, client_side.version + 1);
}

#[test]
fn read_only_paths_are_refused() {
    let (flag, mut ids) = flag_in(&["production"]);
    for path in [
        "/key",
        "/_version",
        "/kind",
        "/creationDate",
        "/environments/production/version",
        "/environments/production/_site",
        "/environments/production",
        "/environments/staging",
        "/variations/0/_id",
    ] {
        let result = flag.apply_patch(
            &ops(json!([{"op": "replace", "path": path, "value": 1}])),
            2,
            &mut ids,
        );
        assert_eq!(
            result,
            Err(PatchError::ReadOnly {
                path: path.to_owned()
            }),
            "{path}"
        );
    }
}

#[test]
fn failed_test_is_reported_as_test_failure() {
    let (flag, mut ids) = flag_in(&["production"]);
    let result = flag.apply_patch(
        &ops(json!([{"op": "test", "path": "/_version", "value": 7}])),
        2,
        &mut ids,
    );
    assert_eq!(
        result,
        Err(PatchError::TestFailed {
            index: 0,
            path: "/_version".into()
        })
    );
}

#[test]
fn invalid_results_are_refused() {
    let (flag, mut ids) = flag_in(&["production"]);
    let out_of_range = ops(
        json!([{"op": "replace", "path": "/environments/production/offVariation", "value": 5}]),
    );
    assert!(matches!(
        flag.apply_patch(&out_of_range, 2, &mut ids),
        Err(PatchError::Invalid(_))
    ));
    let wrong_type =
        ops(json!([{"op": "replace", "path": "/environments/production/on", "value": "yes"}]));
    assert!(matches!(
        flag.apply_patch(&wrong_type, 2, &mut ids),
        Err(PatchError::InvalidResult(_))
    ));
    let unknown_field =
        ops(json!([{"op": "add", "path": "/environments/production/colour", "value": 1}]));
    assert!(matches!(
        flag.apply_patch(&unknown_field, 2, &mut ids),
        Err(PatchError::InvalidResult(_))
    ));
}

#[test]
fn new_rules_get_ids() {
    let (flag, mut ids) = flag_in(&["production"]);
    let next = flag
        .apply_patch(
            &ops(json!([{"op": "add", "path": "/environments/production/rules/-", "value":
                {"variation": 0, "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"]}]}}])),
            2,
            &mut ids,
        )
        .unwrap();
    let rule = &next.environments["production"].rules[0];
    assert!(!rule.id.is_empty());
    assert!(!rule.clauses[0].id.is_empty());
    assert_eq!(rule.clauses[0].context_kind, "user");
}

#[test]
fn turn_flag_on_needs_an_environment() {
    let (flag, mut ids) = flag_in(&["production"]);
    let patch = SemanticPatch::parse(json!({"instructions": [{"kind": "turnFlagOn"}]})).unwrap();
    let err = flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .unwrap_err();
    assert!(err.to_string().contains("environmentKey"), "{err}");
    let patch = SemanticPatch::parse(
        json!({"environmentKey": "nope", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .unwrap();
    assert!(flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .is_err());
}

#[test]
fn variations_must_be_consistent() {
    let mut ids = SequentialIds::default();
    let post = |values: Vec<serde_json::Value>| FlagPost {
        key: "k".into(),
        name: "K".into(),
        variations: Some(
            values
                .into_iter()
                .map(|value| VariationPost {
                    value,
                    name: None,
                    description: None,
                })
                .collect(),
        ),
        ..Default::default()
    };
    assert!(Flag::create(
        post(vec![json!("a"), json!("a")]).validate().unwrap(),
        1,
        &mut ids
    )
    .is_err());
    assert!(Flag::create(
        post(vec![json!("a"), json!(1)]).validate().unwrap(),
        1,
        &mut ids
    )
    .is_err());
    assert!(Flag::create(
        post(vec![json!(true), json!(true)]).validate().unwrap(),
        1,
        &mut ids
    )
    .is_err());
    assert!(Flag::create(post(vec![json!("a")]).validate().unwrap(), 1, &mut ids).is_err());
    assert!(Flag::create(
        post(vec![json!(1), json!(2.5)]).validate().unwrap(),
        1,
        &mut ids
    )
    .is_ok());
}

#[test]
fn summaries_follow_the_configuration() {
    let (flag, mut ids) = flag_in(&["production"]);
    let on = flag.variations[0].id.clone();
    let patch = SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
        {"kind": "addTargets", "values": ["a", "b"], "variationId": on},
        {"kind": "addRule", "clauses": [], "variationId": on}]}))
    .unwrap();
    let next = flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .unwrap()
        .flag;
    let summary = &next.environments["production"].summary(next.variations.len());
    assert_eq!(summary.prerequisites, 0);
    let first = &summary.variations["0"];
    assert_eq!(
        (
            first.targets,
            first.rules,
            first.null_rules,
            first.is_fallthrough,
            first.is_off
        ),
        (2, 1, 1, true, false)
    );
    assert!(summary.variations["1"].is_off);
}

#[test]
fn patches_cannot_remove_variations_in_use_and_errors_name_pointers() {
    let mut ids = SequentialIds::default();
    let new = NewFlag::with_values(
        FlagKey::parse("m").unwrap(),
        "M",
        ["a", "b", "c"].map(Value::from),
    );
    let mut flag = Flag::create(new, 1, &mut ids).unwrap();
    let config = flag.new_config("test", 1, &mut ids);
    flag.environments.insert("test".into(), config);
    // Variation 0 serves the defaults and the fallthrough: removing it is refused.
    let err = flag
        .apply_patch(
            &ops(json!([{"op": "remove", "path": "/variations/0"}])),
            2,
            &mut ids,
        )
        .unwrap_err();
    assert!(err.to_string().contains("/variations/0"), "{err}");
    assert!(err.to_string().contains("is used by"), "{err}");
    // Variation 1 is unused; but then the off variation (2) is out of range, named as a pointer.
    let err = flag
        .apply_patch(
            &ops(json!([{"op": "remove", "path": "/variations/1"}])),
            2,
            &mut ids,
        )
        .unwrap_err();
    assert!(err.to_string().contains("/defaults/offVariation"), "{err}");
    assert!(
        err.to_string().contains("/environments/test/offVariation"),
        "{err}"
    );
}

#[test]
fn a_copy_cannot_grow_a_flag_past_the_size_limit() {
    let (mut flag, _) = flag_in(&["test", "production", "staging"]);
    let values: Vec<String> = (0..15_000).map(|i| format!("user-{i:0>19}")).collect();
    flag.environments.get_mut("test").unwrap().targets = vec![Target {
        variation: 0,
        values,
        context_kind: "user".into(),
    }];
    let post = |target: &str| FlagCopyPost {
        source: CopyEnvironment {
            key: "test".into(),
            current_version: None,
        },
        target: CopyEnvironment {
            key: target.into(),
            current_version: None,
        },
        comment: None,
        included_actions: None,
        excluded_actions: None,
    };
    let once = flag.copy_config(&post("production"), 2).unwrap();
    let err = once.copy_config(&post("staging"), 3).unwrap_err();
    assert!(
        matches!(&err, CopyError::Invalid(m) if m.starts_with("the copy would make the resource larger than 1048576 bytes")),
        "{err}"
    );
    // Copying an empty configuration back shrinks it: allowed.
    let mut back = post("production");
    back.source.key = "staging".into();
    assert!(once.copy_config(&back, 3).is_ok());
}

/// `{"a": {"a": ... 1}}` with `depth` objects.
fn nested(depth: usize) -> serde_json::Value {
    (0..depth).fold(json!(1), |inner, _| json!({ "a": inner }))
}

#[test]
fn variation_values_nest_at_most_max_value_depth_levels() {
    let with_values = |deep: usize| {
        NewFlag::with_values(
            FlagKey::parse("j").unwrap(),
            "J",
            [nested(deep), json!({"b": 1})],
        )
    };
    let mut fresh = SequentialIds::default();
    assert!(Flag::create(with_values(crate::MAX_VALUE_DEPTH), 1, &mut fresh).is_ok());
    let err = Flag::create(with_values(crate::MAX_VALUE_DEPTH + 1), 1, &mut fresh).unwrap_err();
    assert_eq!(err.errors[0].attribute, "variations[0].value");
    assert!(err.errors[0].reason.contains("32 levels"), "{err}");

    let (json_flag, mut ids) = {
        let mut ids = SequentialIds::default();
        let flag = Flag::create(with_values(1), 1, &mut ids).unwrap();
        (flag, ids)
    };
    let deeper = json!([{"op": "replace", "path": "/variations/0/value/a", "value": nested(32)}]);
    match json_flag.apply_patch(&ops(deeper), 2, &mut ids) {
        Err(PatchError::Invalid(err)) => {
            assert_eq!(err.errors[0].attribute, "/variations/0/value", "{err}");
            assert!(err.to_string().contains("32 levels"), "{err}");
        }
        other => panic!("expected a validation error, got {other:?}"),
    }
    let merge = json!({"variations": [{"value": nested(33)}, {"value": 2}]});
    assert!(matches!(
        json_flag.apply_merge(&merge, 2, &mut ids),
        Err(PatchError::Invalid(_))
    ));
    let id = json_flag.variations[0].id.clone();
    let patch = SemanticPatch::parse(json!({"instructions": [
        {"kind": "updateVariation", "variationId": id, "value": nested(33)}]}))
    .unwrap();
    let err = json_flag
        .apply_instructions(&patch, 2, &mut ids, &Default::default())
        .unwrap_err();
    assert!(err.to_string().contains("32 levels"), "{err}");
}

#[test]
fn patches_cannot_move_variations_in_use() {
    let mut ids = SequentialIds::default();
    let post: crate::flag::FlagPost = serde_json::from_value(json!({"key": "mv", "name": "MV",
        "variations": [{"value": "a"}, {"value": "b"}, {"value": "c"}],
        "defaults": {"onVariation": 1, "offVariation": 1}}))
    .unwrap();
    let mut flag = Flag::create(post.validate().unwrap(), 1, &mut ids).unwrap();
    let config = flag.new_config("Production", 1, &mut ids);
    flag.environments.insert("production".into(), config);
    // Variation 0 is unused, but removing it would move `b` (served everywhere) to index 0.
    let next = flag
        .apply_patch(
            &ops(json!([{"op": "remove", "path": "/variations/0"}])),
            2,
            &mut ids,
        )
        .unwrap();
    let err = next.check_variation_moves(&flag).unwrap_err();
    assert!(err.to_string().contains("would move to index 0"), "{err}");
    // Removing the unused last one moves nothing.
    let next = flag
        .apply_patch(
            &ops(json!([{"op": "remove", "path": "/variations/2"}])),
            2,
            &mut ids,
        )
        .unwrap();
    assert_eq!(next.check_variation_moves(&flag), Ok(()));
    assert_eq!(next.variations.len(), 2);
    assert_eq!(
        next.environments["production"].fallthrough.variation,
        Some(1)
    );
}

#[test]
fn targeting_can_be_switched_on_a_flag_at_the_size_limit() {
    // A flag at the limit (an environment created later pushes one past it): turning
    // targeting off adds a byte (`false`), and a version may gain a digit; the kill switch must
    // still work, and so must turning it back on.
    let (mut flag, mut ids) = flag_in(&["production"]);
    flag.environments.get_mut("production").unwrap().on = true;
    flag.environments.get_mut("production").unwrap().version = 9;
    let size = |flag: &Flag| serde_json::to_string(flag).unwrap().len();
    // Past the limit by what three new environments' configurations add.
    flag.description = "d".repeat(crate::patch::MAX_DOCUMENT_BYTES + 1_000 - size(&flag));
    assert_eq!(size(&flag), crate::patch::MAX_DOCUMENT_BYTES + 1_000);
    let switch = |kind: &str| {
        SemanticPatch::parse(
            json!({"environmentKey": "production", "instructions": [{"kind": kind}]}),
        )
        .unwrap()
    };
    let off = flag
        .apply_instructions(
            &switch("turnFlagOff"),
            2,
            &mut ids,
            &ProjectFlags::default(),
        )
        .unwrap()
        .flag;
    assert!(!off.environments["production"].on);
    assert!(size(&off) > crate::patch::MAX_DOCUMENT_BYTES);
    let on = off
        .apply_instructions(&switch("turnFlagOn"), 3, &mut ids, &ProjectFlags::default())
        .unwrap()
        .flag;
    assert!(on.environments["production"].on);
    // Anything else that grows it is still refused.
    let grow = SemanticPatch::parse(json!({"environmentKey": "production", "instructions": [
        {"kind": "turnFlagOff"}, {"kind": "updateDescription", "value": format!("{}x", flag.description)}]}))
    .unwrap();
    let err = flag
        .apply_instructions(&grow, 2, &mut ids, &ProjectFlags::default())
        .unwrap_err();
    assert!(err.to_string().contains("larger than"), "{err}");
}

#[test]
fn no_instruction_may_follow_delete_flag() {
    let (flag, mut ids) = flag_in(&["production"]);
    let patch = SemanticPatch::parse(json!({"instructions": [
        {"kind": "deleteFlag"}, {"kind": "updateName", "value": "After"}]}))
    .unwrap();
    let err = flag
        .apply_instructions(&patch, 2, &mut ids, &ProjectFlags::default())
        .unwrap_err();
    assert!(
        matches!(&err, InstructionError::Instruction { index: 1, message } if message.contains("deleteFlag")),
        "{err}"
    );
    // Alone, or last, it deletes.
    let last = SemanticPatch::parse(json!({"instructions": [
        {"kind": "updateName", "value": "Before"}, {"kind": "deleteFlag"}]}))
    .unwrap();
    assert!(
        flag.apply_instructions(&last, 2, &mut ids, &ProjectFlags::default())
            .unwrap()
            .delete
    );
}
