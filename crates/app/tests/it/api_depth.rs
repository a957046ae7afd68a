//! JSON nesting depth (issue 8): deeply nested values could make a stored flag and the whole
//! audit log unreadable (serde_json refuses more than 128 levels when it reads them back), so
//! every stored JSON value, every request body and every document being patched has a depth
//! limit. And case-insensitive and Unicode-class regular expressions work in `matches` clauses.

use serde_json::{json, Value};

use actix_web::http::Method;

use crate::common::{request, spawn, Backend, Resp, OWNER, SEMANTIC};

/// `{"a": {"a": ... 1}}` with `depth` objects.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(1), |inner, _| json!({ "a": inner }))
}

/// `prefix` followed by `/a` `count` times.
fn down(prefix: &str, count: usize) -> String {
    format!("{prefix}{}", "/a".repeat(count))
}

fn assert_names(resp: &Resp, needles: &[&str]) {
    let message = resp.body["message"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(
            message.contains(needle),
            "'{message}' does not name {needle}"
        );
    }
}

/// Everything that read the flag or the audit log still answers.
async fn assert_readable<S, B>(app: &crate::common::TestApp<S>, flag: &str, version: i64)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let got = app.get(&format!("/api/v2/flags/web/{flag}")).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["_version"], version);
    let list = app.get("/api/v2/flags/web").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let log = app.get("/api/v2/auditlog?limit=20").await;
    assert_eq!(log.status, 200, "{}", log.body);
    for entry in log.body["items"].as_array().unwrap() {
        let id = entry["_id"].as_str().unwrap();
        let detail = app.get(&format!("/api/v2/auditlog/{id}")).await;
        assert_eq!(detail.status, 200, "{}", detail.body);
    }
}

/// The reported sequence: a flag whose variation value is `{"a": 1}`, then a JSON Patch putting
/// an object nested 120 deep at `/variations/0/value/a` (it answered 200), then another 100
/// levels below it. Afterwards the flag (GET, list, PATCH, DELETE) and `GET /auditlog` answered
/// 500 for everyone. Now the first step past the limits is refused and everything stays readable.
async fn the_reported_nesting_is_refused_and_everything_stays_readable(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let created = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "j", "name": "x", "variations": [{"value": {"a": 1}}, {"value": {"b": 1}}]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);

    let resp = app
        .patch(
            "/api/v2/flags/web/j",
            json!([{"op": "replace", "path": "/variations/0/value/a", "value": nested(120)}]),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["64 levels"]);
    let resp = app
        .patch(
            "/api/v2/flags/web/j",
            json!([{"op": "add", "path": down("/variations/0/value/a", 120), "value": nested(100)}]),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["64 levels"]);
    assert_readable(&app, "j", 1).await;

    // The same growth in steps a body allows: the value limit stops it at the step past it.
    let first = app
        .patch(
            "/api/v2/flags/web/j",
            json!([{"op": "replace", "path": "/variations/0/value/a", "value": nested(20)}]),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let resp = app
        .patch(
            "/api/v2/flags/web/j",
            json!([{"op": "replace", "path": down("/variations/0/value/a", 20), "value": nested(20)}]),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["/variations/0/value", "32 levels"]);
    assert_readable(&app, "j", 2).await;
    let stored = app.get("/api/v2/flags/web/j").await.body;
    assert_eq!(stored["variations"][0]["value"], json!({"a": nested(20)}));

    let deleted = app.delete("/api/v2/flags/web/j").await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let log = app.get("/api/v2/auditlog").await;
    assert_eq!(log.status, 200, "{}", log.body);
}

/// A variation value may nest 32 levels; one level more is refused by every form of change.
async fn variation_values_nest_at_most_32_levels(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let post = |key: &str, value: Value| json!({"key": key, "name": key, "variations": [{"value": value}, {"value": {"b": 1}}]});
    let resp = app
        .post("/api/v2/flags/web", post("deep", nested(33)))
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["variations[0].value", "32 levels"]);
    assert_eq!(app.get("/api/v2/flags/web/deep").await.status, 404);
    let ok = app.post("/api/v2/flags/web", post("f", nested(32))).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.body["variations"][0]["value"], nested(32));
    let first = ok.body["variations"][0]["_id"].as_str().unwrap().to_owned();
    let second = ok.body["variations"][1]["_id"].as_str().unwrap().to_owned();

    // JSON Patch.
    let resp = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "add", "path": "/variations/-", "value": {"value": nested(33)}}]),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["/variations/2/value", "32 levels"]);
    let resp = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": down("/variations/0/value", 32), "value": []}]),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["32 levels"]);

    // Merge patch, as its own media type and as `{merge}`.
    let variations =
        json!([{"_id": first, "value": nested(33)}, {"_id": second, "value": {"b": 1}}]);
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            "application/merge-patch+json",
            json!({"variations": variations}),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["32 levels"]);
    let resp = app
        .patch(
            "/api/v2/flags/web/f",
            json!({"merge": {"variations": variations}}),
        )
        .await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["32 levels"]);

    // Semantic patch.
    for instruction in [
        json!({"kind": "addVariation", "value": nested(33)}),
        json!({"kind": "updateVariation", "variationId": first, "value": nested(33)}),
    ] {
        let resp = app
            .patch_with(
                "/api/v2/flags/web/f",
                SEMANTIC,
                json!({"instructions": [instruction]}),
            )
            .await;
        resp.assert_error(400, "invalid_request");
        assert_names(&resp, &["32 levels"]);
    }
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 1);
    assert_readable(&app, "f", 1).await;

    // A clone carries the (valid) values over.
    let clone = app
        .post(
            "/api/v2/flags/web?clone=f",
            json!({"key": "g", "name": "g"}),
        )
        .await;
    assert_eq!(clone.status, 201, "{}", clone.body);
    assert_eq!(clone.body["variations"][0]["value"], nested(32));
}

/// One JSON Patch cannot build a deep document from many shallow operations: every operation is
/// checked, before it is applied, against the 64 levels a document may nest while it is patched.
async fn a_patch_cannot_nest_a_document_past_64_levels(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    // Each operation puts 30 levels below the previous ones: 3 + 30 + 30 fit, 30 more do not.
    let ops: Vec<Value> = (0..4)
        .map(|i| {
            let path = if i == 0 {
                "/variations/0/value".to_owned()
            } else {
                down("/variations/0/value", 30 * i - 1) + "/a"
            };
            json!({"op": "replace", "path": path, "value": nested(30)})
        })
        .collect();
    let resp = app.patch("/api/v2/flags/web/f", Value::Array(ops)).await;
    resp.assert_error(422, "patch_failed");
    assert_names(&resp, &["operation at index 2", "64 levels"]);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 1);

    // Projects, environments and segments take JSON Patch through the same applier.
    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    for path in [
        "/api/v2/projects/web",
        "/api/v2/projects/web/environments/test",
        "/api/v2/segments/web/production/beta",
    ] {
        let ops = json!([
            {"op": "add", "path": "/tags/-", "value": nested(60)},
            {"op": "add", "path": down("/tags/0", 59) + "/a", "value": nested(10)},
        ]);
        let resp = app.patch(path, ops).await;
        resp.assert_error(422, "patch_failed");
        assert_names(&resp, &["operation at index 1", "64 levels"]);
    }
}

/// `{"a":{"a": ... 1}}` with `depth` objects, written directly (a `Value` that deep would
/// take the test's own stack to build and drop).
fn nested_text(depth: usize) -> String {
    format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
}

/// A request body nests at most 64 levels; deeper bodies (also past serde_json's own 128) are a
/// 400 naming the limit, on every route that reads a body, before the body is parsed.
async fn request_bodies_nest_at_most_64_levels(backend: Backend) {
    let app = spawn(backend).await;
    let raw = |method: Method, path: &str, content_type: &str, body: String| {
        request(method, path, Some(OWNER))
            .insert_header(("Content-Type", content_type.to_owned()))
            .set_payload(body)
    };
    for depth in [65, 129, 100_000] {
        let body = format!(
            r#"{{"key": "web", "name": "web", "x": {}}}"#,
            nested_text(depth - 1)
        );
        let resp = app
            .send(raw(
                Method::POST,
                "/api/v2/projects",
                "application/json",
                body,
            ))
            .await;
        resp.assert_error(400, "invalid_request");
        assert_names(&resp, &["64 levels"]);
    }
    // 64 levels are read (and then refused for the unknown field).
    let body = format!(
        r#"{{"key": "web", "name": "web", "x": {}}}"#,
        nested_text(63)
    );
    let resp = app
        .send(raw(
            Method::POST,
            "/api/v2/projects",
            "application/json",
            body,
        ))
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["unknown field"]);

    app.project("web").await;
    app.flag("web", "f").await;
    let body = format!(
        r#"{{"instructions": [{{"kind": "addVariation", "value": {}}}]}}"#,
        nested_text(62)
    );
    let resp = app
        .send(raw(Method::PATCH, "/api/v2/flags/web/f", SEMANTIC, body))
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["64 levels"]);
    let body = format!(r#"{{"description": {}}}"#, nested_text(64));
    let resp = app
        .send(raw(
            Method::PATCH,
            "/api/v2/flags/web/f",
            "application/merge-patch+json",
            body,
        ))
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["64 levels"]);
    let body = format!(
        r#"[{{"email": "a@example.com", "x": {}}}]"#,
        nested_text(64)
    );
    let resp = app
        .send(raw(
            Method::POST,
            "/api/v2/members",
            "application/json",
            body,
        ))
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["64 levels"]);
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 1);
}

/// `(?i)`, `\pL` and Unicode `\w` in a `matches` clause are accepted (they were refused with
/// "make sure the unicode-case feature is enabled"); the size limit still applies to them.
async fn unicode_regular_expressions_are_accepted_within_the_size_limit(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag = app.flag("web", "f").await;
    let on = flag["variations"][0]["_id"].as_str().unwrap().to_owned();
    let add_rule = |values: Value| {
        json!({"environmentKey": "production", "instructions": [
            {"kind": "addRule", "variationId": on, "clauses": [{"attribute": "key", "op": "matches", "values": values}]}]})
    };
    let patterns = json!(["(?i)abc", "\\pL", "(?i)\\w", "^\\p{Greek}+$", "(?i)straße"]);
    let resp = app
        .patch_with("/api/v2/flags/web/f", SEMANTIC, add_rule(patterns.clone()))
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.body["environments"]["production"]["rules"][0]["clauses"][0]["values"],
        patterns
    );
    let resp = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "add", "path": "/environments/test/rules/-", "value": {"variation": 0,
                "clauses": [{"attribute": "name", "op": "matches", "values": ["(?i)^\\w+$"]}]}}]),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);

    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            add_rule(json!(["(?i)\\w{500}"])),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert_names(&resp, &["65536 bytes"]);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["_version"], 3);

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
                {"attribute": "email", "op": "matches", "values": ["(?i)@EXAMPLE\\.com$", "\\pL"]}]}]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
}

on_both_backends!(
    the_reported_nesting_is_refused_and_everything_stays_readable,
    variation_values_nest_at_most_32_levels,
    a_patch_cannot_nest_a_document_past_64_levels,
    request_bodies_nest_at_most_64_levels,
    unicode_regular_expressions_are_accepted_within_the_size_limit,
);
