//! JSON nesting depth (issue 8): a JSON Patch cannot build a document nested deeper than
//! [`MAX_JSON_DEPTH`] levels, whatever the resource, and is refused at the operation that would;
//! variation values nest at most [`domain::MAX_VALUE_DEPTH`] levels.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use domain::patch::{apply, nests_deeper_than, JsonPatchBody, PatchError, MAX_JSON_DEPTH};
use domain::segment::{Segment, SegmentPost};
use domain::SequentialIds;
use serde_json::{json, Value};

/// `{"a": {"a": ... 1}}` with `depth` objects.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!({ "a": inner }))
}

fn down(prefix: &str, count: usize) -> String {
    format!("{prefix}{}", "/a".repeat(count))
}

fn ops(body: Value) -> Vec<domain::patch::Operation> {
    JsonPatchBody::parse(body).unwrap().operations
}

fn anything(_: &[String]) -> bool {
    false
}

#[test]
fn depth_counts_arrays_and_objects() {
    assert!(!nests_deeper_than(&json!(1), 0));
    assert!(nests_deeper_than(&json!([]), 0));
    assert!(!nests_deeper_than(&json!([]), 1));
    assert!(nests_deeper_than(&json!({"a": [1]}), 1));
    assert!(!nests_deeper_than(&json!({"a": [1], "b": 2}), 2));
    assert!(!nests_deeper_than(&nested(64), 64));
    assert!(nests_deeper_than(&nested(65), 64));
}

#[test]
fn shallow_operations_cannot_build_a_deep_document() {
    let doc = json!({"x": 1});
    // Each operation goes 30 levels further down: 1 + 30 + 30 levels fit, 30 more do not.
    let body: Vec<Value> = (0..4)
        .map(|i| {
            let path = if i == 0 {
                "/x".to_owned()
            } else {
                down("/x", 30 * i - 1) + "/a"
            };
            json!({"op": "replace", "path": path, "value": nested(30)})
        })
        .collect();
    let err = apply(&doc, &ops(Value::Array(body.clone())), anything).unwrap_err();
    assert!(
        matches!(&err, PatchError::Failed { index: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("64 levels"), "{err}");
    let patched = apply(&doc, &ops(Value::Array(body[..2].to_vec())), anything).unwrap();
    assert!(!nests_deeper_than(&patched, MAX_JSON_DEPTH));
    assert!(nests_deeper_than(&patched, MAX_JSON_DEPTH - 4));
}

#[test]
fn copies_and_moves_are_measured_where_they_land() {
    let doc = json!({"x": nested(40), "y": {}});
    for op in ["copy", "move"] {
        let deep = json!([{"op": op, "from": "/x", "path": down("/y", 0) + "/deep"}]);
        assert!(apply(&doc, &ops(deep), anything).is_ok());
        let body = json!([{"op": op, "from": "/x", "path": down("/x", 39) + "/b"}]);
        let err = apply(&doc, &ops(body), anything).unwrap_err();
        if op == "copy" {
            assert!(err.to_string().contains("64 levels"), "{err}");
        } else {
            // A value cannot move inside itself; that is refused first.
            assert!(
                matches!(err, PatchError::Failed { index: 0, .. }),
                "{err:?}"
            );
        }
        let body = json!([{"op": op, "from": "/x", "path": "/y/b"},
            {"op": op, "from": "/y/b", "path": down("/y/b", 39) + "/c"}]);
        let err = apply(&doc, &ops(body), anything).unwrap_err();
        assert!(
            matches!(err, PatchError::Failed { index: 1, .. }),
            "{err:?}"
        );
    }
}

#[test]
fn a_segment_patch_is_held_to_the_same_depth() {
    let post = SegmentPost {
        key: "beta".into(),
        name: "Beta".into(),
        ..Default::default()
    };
    let segment = Segment::create(post, 1, &mut domain::SequentialIds::default()).unwrap();
    let body = json!([
        {"op": "add", "path": "/tags/-", "value": nested(60)},
        {"op": "add", "path": down("/tags/0", 59) + "/a", "value": nested(10)},
    ]);
    let err = segment
        .apply_patch(&ops(body), 2, &mut SequentialIds::default())
        .map(drop)
        .unwrap_err();
    assert!(err.to_string().contains("operation at index 1"), "{err}");
    assert!(err.to_string().contains("64 levels"), "{err}");
}
