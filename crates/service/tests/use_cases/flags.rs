//! Cross-flag rules: prerequisites must name live flags and variations and form no cycle, a flag
//! others depend on is neither deleted nor archived, and a variation in use stays where it is.

use domain::flag::{Flag, FlagPost};
use domain::instruction::SemanticPatch;
use domain::key::FlagKey;
use domain::project::Project;
use serde_json::{json, Value};
use service::{use_case, FlagChange, ServiceError};

use crate::{json_patch, Fixture};

/// A fixture with project `web` (environments `test` and `production`).
fn with_project() -> (Fixture, Project) {
    let fx = Fixture::new();
    let post = serde_json::from_value(json!({"key": "web", "name": "Web"})).unwrap();
    let permit = fx.owner.may(use_case::CreateProject).unwrap();
    let project = fx
        .service
        .projects()
        .create_project(&permit, post)
        .unwrap()
        .project;
    (fx, project)
}

fn create(fx: &Fixture, body: Value) -> Result<Flag, ServiceError> {
    let post: FlagPost = serde_json::from_value(body).unwrap();
    let permit = fx.owner.may(use_case::CreateFlag)?;
    fx.service
        .flags()
        .create_flag(&permit, "web", post)
        .map(|view| view.flag)
}

fn stored(fx: &Fixture, project: &Project, key: &str) -> Option<Flag> {
    fx.read(|repo| repo.get_flag(&project.id, &FlagKey::parse(key).unwrap()))
}

fn semantic(body: Value) -> FlagChange {
    FlagChange::Semantic(SemanticPatch::parse(body).unwrap())
}

fn message(err: &ServiceError) -> String {
    err.to_string()
}

#[test]
fn prerequisites_must_name_live_flags() {
    let (fx, project) = with_project();
    let base = create(&fx, json!({"key": "base", "name": "Base"})).unwrap();
    let false_id = base.variations[1].id.clone();

    let child = create(
        &fx,
        json!({"key": "child", "name": "Child",
               "initialPrerequisites": [{"key": "base", "variationId": false_id}]}),
    )
    .unwrap();
    assert_eq!(child.environments.len(), 2);
    let child = stored(&fx, &project, "child").unwrap();
    for config in child.environments.values() {
        assert_eq!(config.prerequisites.len(), 1);
        assert_eq!(
            (
                config.prerequisites[0].key.as_str(),
                config.prerequisites[0].variation
            ),
            ("base", 1)
        );
    }

    // A flag that does not exist, a variation it does not have, the flag itself.
    for (key, prerequisite, variation) in [
        ("x1", "ghost", false_id.as_str()),
        ("x2", "base", "nope"),
        ("x3", "x3", false_id.as_str()),
    ] {
        let refused = create(
            &fx,
            json!({"key": key, "name": "X",
                   "initialPrerequisites": [{"key": prerequisite, "variationId": variation}]}),
        );
        assert!(
            matches!(refused, Err(ServiceError::Invalid { .. })),
            "{key}: {refused:?}"
        );
        assert!(stored(&fx, &project, key).is_none(), "{key}");
    }

    // An archived flag cannot become a prerequisite.
    create(&fx, json!({"key": "old", "name": "Old"})).unwrap();
    let archive = FlagChange::JsonPatch(json_patch(
        json!([{"op": "replace", "path": "/archived", "value": true}]),
    ));
    let permit = fx.owner.may(use_case::PatchFlag).unwrap();
    let old = fx
        .service
        .flags()
        .patch_flag(&permit, "web", "old", &archive)
        .unwrap()
        .flag;
    let refused = create(
        &fx,
        json!({"key": "x4", "name": "X",
               "initialPrerequisites": [{"key": "old", "variationId": old.variations[0].id}]}),
    )
    .unwrap_err();
    assert!(
        matches!(refused, ServiceError::Invalid { .. }),
        "{refused:?}"
    );
    assert!(message(&refused).contains("archived"), "{refused}");
    assert!(stored(&fx, &project, "x4").is_none());
}

#[test]
fn prerequisites_form_no_cycle() {
    let (fx, project) = with_project();
    let a = create(&fx, json!({"key": "a", "name": "A"})).unwrap();
    let b = create(&fx, json!({"key": "b", "name": "B"})).unwrap();
    let add = |on: &str, variation_id: &str| {
        semantic(json!({"environmentKey": "production", "instructions": [
            {"kind": "addPrerequisite", "key": on, "variationId": variation_id}]}))
    };
    let permit = fx.owner.may(use_case::PatchFlag).unwrap();
    fx.service
        .flags()
        .patch_flag(&permit, "web", "a", &add("b", &b.variations[0].id))
        .unwrap();

    // b -> a would close the cycle a -> b -> a; a dry run finds it as the real call does.
    let change = add("a", &a.variations[0].id);
    for refused in [
        fx.service
            .flags()
            .dry_run_patch_flag(&permit, "web", "b", &change),
        fx.service.flags().patch_flag(&permit, "web", "b", &change),
    ] {
        let refused = refused.unwrap_err();
        assert!(
            matches!(refused, ServiceError::Invalid { .. }),
            "{refused:?}"
        );
        assert!(message(&refused).contains("cycle"), "{refused}");
    }
    let b = stored(&fx, &project, "b").unwrap();
    assert!(b.environments["production"].prerequisites.is_empty());
    assert_eq!(b.version, 1);
}

#[test]
fn a_flag_others_depend_on_is_neither_deleted_nor_archived() {
    let (fx, project) = with_project();
    let base = create(&fx, json!({"key": "base", "name": "Base"})).unwrap();
    create(
        &fx,
        json!({"key": "child", "name": "Child",
               "initialPrerequisites": [{"key": "base", "variationId": base.variations[0].id}]}),
    )
    .unwrap();

    let dependents = fx
        .service
        .flags()
        .dependent_flags(
            &fx.owner.may(use_case::DependentFlags).unwrap(),
            "web",
            "base",
        )
        .unwrap();
    assert_eq!(dependents.len(), 1);
    assert_eq!(dependents[0].key, "child");
    assert_eq!(dependents[0].environments, ["production", "test"]);

    let refused =
        fx.service
            .flags()
            .delete_flag(&fx.owner.may(use_case::DeleteFlag).unwrap(), "web", "base");
    assert!(
        matches!(refused, Err(ServiceError::StillReferenced(_))),
        "{refused:?}"
    );
    let delete = semantic(json!({"instructions": [{"kind": "deleteFlag"}]}));
    let permit = fx.owner.may(use_case::PatchFlag).unwrap();
    let refused = fx
        .service
        .flags()
        .patch_flag(&permit, "web", "base", &delete);
    assert!(
        matches!(refused, Err(ServiceError::StillReferenced(_))),
        "{refused:?}"
    );
    let archive = FlagChange::JsonPatch(json_patch(
        json!([{"op": "replace", "path": "/archived", "value": true}]),
    ));
    let refused = fx
        .service
        .flags()
        .patch_flag(&permit, "web", "base", &archive);
    assert!(
        matches!(refused, Err(ServiceError::StillReferenced(_))),
        "{refused:?}"
    );
    let kept = stored(&fx, &project, "base").unwrap();
    assert!(!kept.archived);
    assert_eq!(kept.version, base.version);

    // Without dependents, it goes.
    fx.service
        .flags()
        .delete_flag(&fx.owner.may(use_case::DeleteFlag).unwrap(), "web", "child")
        .unwrap();
    fx.service
        .flags()
        .delete_flag(&fx.owner.may(use_case::DeleteFlag).unwrap(), "web", "base")
        .unwrap();
    assert!(stored(&fx, &project, "base").is_none());
    assert!(fx
        .read(|repo| repo.flag_dependents(&project.id, &FlagKey::parse("base").unwrap()))
        .is_empty());
}

#[test]
fn a_variation_in_use_as_a_prerequisite_stays_where_it_is() {
    let (fx, project) = with_project();
    let base = create(
        &fx,
        json!({"key": "base", "name": "Base", "variations": [
            {"value": "red"}, {"value": "green"}, {"value": "blue"}]}),
    )
    .unwrap();
    create(
        &fx,
        json!({"key": "child", "name": "Child",
               "initialPrerequisites": [{"key": "base", "variationId": base.variations[1].id}]}),
    )
    .unwrap();

    // Moving green first would make index 1 another variation.
    let reorder = FlagChange::JsonPatch(json_patch(
        json!([{"op": "move", "from": "/variations/1", "path": "/variations/0"}]),
    ));
    let permit = fx.owner.may(use_case::PatchFlag).unwrap();
    let refused = fx
        .service
        .flags()
        .patch_flag(&permit, "web", "base", &reorder)
        .unwrap_err();
    assert!(
        matches!(refused, ServiceError::StillReferenced(_)),
        "{refused:?}"
    );
    assert!(
        message(&refused).contains("cannot be removed or moved"),
        "{refused}"
    );
    let kept = stored(&fx, &project, "base").unwrap();
    assert_eq!(kept.variations, base.variations);
}
