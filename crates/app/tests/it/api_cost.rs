//! Bounded cost over HTTP (issue 8, findings 4, 5 and `0`/`-0`): the amplification bodies of the
//! report are refused with a 4xx naming the limit, and nothing is stored.

use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, OWNER, SEMANTIC};

/// The reported body: `add <at> [64 chars]`, 23 x `copy <at> -> <at>/-`, `remove <at>`
/// (1,198 bytes as sent); applied, `<at>` would reach 570 MB.
fn copy_chain(at: &str) -> Value {
    let mut body = vec![json!({"op": "add", "path": at, "value": ["a".repeat(64)]})];
    for _ in 0..23 {
        body.push(json!({"op": "copy", "from": at, "path": format!("{at}/-")}));
    }
    body.push(json!({"op": "remove", "path": at}));
    Value::Array(body)
}

fn assert_names(resp: &crate::common::Resp, needles: &[&str]) {
    let message = resp.body["message"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(
            message.contains(needle),
            "'{message}' does not name {needle}"
        );
    }
}

async fn amplifying_json_patches_are_refused_at_the_size_limit(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let resp = app.patch("/api/v2/flags/web/f", copy_chain("/x")).await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["1048576 bytes", "operation at index"]);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 1);

    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    let resp = app
        .patch("/api/v2/segments/web/production/beta", copy_chain("/x"))
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["1048576 bytes"]);
    assert_eq!(
        app.get("/api/v2/segments/web/production/beta").await.body["version"],
        1
    );

    // Projects and environments take JSON Patch through the same applier.
    let resp = app.patch("/api/v2/projects/web", copy_chain("/tags")).await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["1048576 bytes"]);
    let resp = app
        .patch(
            "/api/v2/projects/web/environments/test",
            copy_chain("/tags"),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["1048576 bytes"]);
}

async fn merge_and_semantic_patches_cannot_grow_a_flag_past_the_size_limit(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let merge = "application/merge-patch+json";
    let first = app
        .patch_with(
            "/api/v2/flags/web/f",
            merge,
            json!({"description": "d".repeat(700_000)}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    // Each body fits the body limit; together they would pass the size limit.
    let second = app
        .patch_with(
            "/api/v2/flags/web/f",
            merge,
            json!({"customProperties": {"p": {"name": "p", "value": ["v".repeat(700_000)]}}}),
        )
        .await;
    second.assert_error(422, "patch_failed");
    assert_names(&second, &["1048576 bytes", "merge patch"]);
    // Nor can a semantic patch.
    let third = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"instructions": [{"kind": "addCustomProperties", "key": "p", "name": "p", "values": ["v".repeat(700_000)]}]}),
        )
        .await;
    third.assert_error(400, "invalid_request");
    assert_names(&third, &["1048576 bytes"]);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 2);
}

async fn operations_and_instructions_per_patch_are_limited(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let test = json!({"op": "test", "path": "/_version", "value": 1});
    let resp = app
        .patch("/api/v2/flags/web/f", Value::Array(vec![test; 1001]))
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["1000 operations", "1001"]);

    let on = json!({"kind": "turnFlagOn"});
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "test", "instructions": vec![on.clone(); 1001]}),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["1000 instructions"]);
    let ok = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "test", "instructions": vec![on; 1000]}),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);

    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    let add = json!({"kind": "addIncludedUsers", "values": ["a"]});
    let resp = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            SEMANTIC,
            json!({"instructions": vec![add; 1001]}),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["1000 instructions"]);
}

async fn variations_per_flag_are_limited(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    // The reported 50,000 variations (about 600 KB).
    let variations: Vec<Value> = (0..50_000).map(|i| json!({"value": i})).collect();
    let resp = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "many", "name": "Many", "variations": variations}),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["1000 variations", "50000"]);
    app.get("/api/v2/flags/web/many")
        .await
        .assert_error(404, "not_found");

    let variations: Vec<Value> = (0..1000).map(|i| json!({"value": i})).collect();
    let created = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "most", "name": "Most", "variations": variations}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let resp = app
        .patch(
            "/api/v2/flags/web/most",
            json!([{"op": "add", "path": "/variations/-", "value": {"value": 1000}}]),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["1000 variations"]);
}

async fn zero_and_minus_zero_are_one_variation_value(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let resp = app
        .send(
            request(Method::POST, "/api/v2/flags/web", Some(OWNER))
                .insert_header(("Content-Type", "application/json"))
                .set_payload(
                    r#"{"key": "z", "name": "Z", "variations": [{"value": 0}, {"value": -0}]}"#,
                ),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["variations[1].value", "repeats"]);
}

async fn clause_values_and_regular_expressions_are_limited(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag = app.flag("web", "f").await;
    let on = flag["variations"][0]["_id"].as_str().unwrap().to_owned();
    let add_rule = |op: &str, values: Vec<Value>| {
        json!({"environmentKey": "production", "instructions": [
            {"kind": "addRule", "variationId": on, "clauses": [{"attribute": "key", "op": op, "values": values}]}]})
    };

    // The reported rule: 200 `matches` values `a{1,65535}`.
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            add_rule("matches", vec![json!("a{1,65535}"); 200]),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["65536 bytes"]);
    let rule = |values: Vec<Value>| {
        json!([{"op": "add", "path": "/environments/production/rules/-",
            "value": {"variation": 0, "clauses": [{"attribute": "key", "op": "matches", "values": values}]}}])
    };
    let resp = app
        .patch("/api/v2/flags/web/f", rule(vec![json!("a{1,65535}")]))
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["65536 bytes"]);
    let patterns: Vec<Value> = (0..101).map(|i| json!(format!("^k{i}$"))).collect();
    let resp = app.patch("/api/v2/flags/web/f", rule(patterns)).await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["100 distinct regular expressions"]);

    let keys: Vec<Value> = (0..1001).map(|i| json!(format!("k{i}"))).collect();
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            add_rule("in", keys.clone()),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["1000 values"]);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 1);

    // Segments share the rules.
    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    let resp = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "addRule", "clauses": [
                {"attribute": "key", "op": "matches", "values": ["a{1,65535}"]}]}]}),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["65536 bytes"]);
    let resp = app
        .patch(
            "/api/v2/segments/web/production/beta",
            json!([{"op": "add", "path": "/rules/-", "value": {"clauses": [
                {"attribute": "key", "op": "in", "values": keys}]}}]),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["1000 values"]);
}

/// The first `maxItems` in a schema (an optional list is `oneOf` null and the array).
fn max_items(schema: &Value) -> Option<u64> {
    match schema {
        Value::Object(fields) => fields.get("maxItems").and_then(Value::as_u64).or_else(|| {
            ["oneOf", "anyOf", "allOf"]
                .iter()
                .filter_map(|k| fields.get(*k))
                .find_map(max_items)
        }),
        Value::Array(items) => items.iter().find_map(max_items),
        _ => None,
    }
}

#[test]
fn the_openapi_document_states_the_limits() {
    let doc = adapter_http::openapi_document().unwrap();
    let schemas = &doc["components"]["schemas"];
    let limit = |value: usize| Some(value as u64);
    for path in [
        "/api/v2/flags/{projectKey}/{flagKey}",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
        "/api/v2/projects/{projectKey}",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
        "/api/v2/tokens/{id}",
        "/api/v2/members/{id}",
        "/api/v2/webhooks/{id}",
    ] {
        let body = &doc["paths"][path]["patch"]["requestBody"]["content"]["application/json"];
        assert_eq!(
            max_items(&body["schema"]),
            limit(domain::patch::MAX_OPERATIONS),
            "{path}: {body}"
        );
    }
    for (schema, field, expected) in [
        (
            "SemanticPatchBody",
            "instructions",
            domain::instruction::MAX_INSTRUCTIONS,
        ),
        (
            "SegmentSemanticPatchBody",
            "instructions",
            domain::instruction::MAX_INSTRUCTIONS,
        ),
        ("Flag", "variations", domain::flag::MAX_VARIATIONS),
        ("FlagPost", "variations", domain::flag::MAX_VARIATIONS),
        ("Clause", "values", domain::flag::MAX_CLAUSE_VALUES),
        ("ClauseInput", "values", domain::flag::MAX_CLAUSE_VALUES),
    ] {
        let property = &schemas[schema]["properties"][field];
        assert_eq!(
            max_items(property),
            limit(expected),
            "{schema}.{field}: {property}"
        );
    }
}

on_both_backends!(
    amplifying_json_patches_are_refused_at_the_size_limit,
    merge_and_semantic_patches_cannot_grow_a_flag_past_the_size_limit,
    operations_and_instructions_per_patch_are_limited,
    variations_per_flag_are_limited,
    zero_and_minus_zero_are_one_variation_value,
    clause_values_and_regular_expressions_are_limited,
);
