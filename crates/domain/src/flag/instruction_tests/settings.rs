//! Instructions on variations, the flag's settings, its custom properties, maintainer and
//! availability, and its lifecycle; a patch applies all or nothing.

use super::*;

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
