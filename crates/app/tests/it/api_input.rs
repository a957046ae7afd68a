//! Input that used to answer 500: NUL and control characters, and lists long enough to break a
//! store's bound-parameter or expression limits. Every such input is a 400 naming the field or
//! the limit, and nothing is stored.

use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, Resp, OWNER, SEMANTIC};

/// A 400 `invalid_request` whose message names `field`.
fn assert_refused(resp: &Resp, field: &str) {
    resp.assert_error(400, "invalid_request");
    let message = resp.body["message"].as_str().unwrap();
    assert!(
        message.contains(field),
        "'{field}' not named: {}",
        resp.body
    );
}

/// A 400 or 422 whose message names `limit` (the limit's value).
fn assert_limit(resp: &Resp, limit: &str) {
    assert!(
        resp.status == 400 || resp.status == 422,
        "status {}: {}",
        resp.status,
        resp.body
    );
    let message = resp.body["message"].as_str().unwrap();
    assert!(
        message.contains(limit),
        "'{limit}' not named: {}",
        resp.body
    );
}

/// A project `web` (test, production) with flag `f`, segment `s` in production, a member, a
/// service token and a webhook; returns (member id, token id, webhook id).
async fn fixture<S, B>(app: &crate::common::TestApp<S>) -> (String, String, String)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    app.project("web").await;
    app.flag("web", "f").await;
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "s", "name": "S"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    let member = app.member("m@example.com", "reader").await;
    let token = app
        .post("/api/v2/tokens", json!({"name": "t", "role": "reader"}))
        .await;
    assert_eq!(token.status, 201, "{}", token.body);
    let hook = app
        .post(
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": false}),
        )
        .await;
    assert_eq!(hook.status, 200, "{}", hook.body);
    (
        member,
        token.body["_id"].as_str().unwrap().to_owned(),
        hook.body["_id"].as_str().unwrap().to_owned(),
    )
}

fn json_patch(path: &str, value: Value) -> Value {
    json!([{"op": "replace", "path": path, "value": value}])
}

const NUL: &str = "a\u{0}b";

/// Creates with a NUL in some string of the body: (path, body, the pointer named).
fn nul_in_creates() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "/api/v2/projects",
            json!({"key": "p2", "name": NUL}),
            "/name",
        ),
        ("/api/v2/projects", json!({"key": NUL, "name": "P"}), "/key"),
        (
            "/api/v2/projects/web/environments",
            json!({"key": "e2", "name": NUL, "color": "000000"}),
            "/name",
        ),
        (
            "/api/v2/flags/web",
            json!({"key": "f2", "name": "F", "description": NUL}),
            "/description",
        ),
        (
            "/api/v2/flags/web",
            json!({"key": "f3", "name": "F", "variations": [{"value": {"x": NUL}}, {"value": {"y": 1}}]}),
            "/variations/0/value/x",
        ),
        (
            "/api/v2/flags/web",
            json!({"key": "f4", "name": "F", "variations": [{"value": {NUL: 1}}, {"value": {"y": 1}}]}),
            "/variations/0/value",
        ),
        (
            "/api/v2/segments/web/production",
            json!({"key": "s2", "name": NUL}),
            "/name",
        ),
        (
            "/api/v2/members",
            json!([{"email": "x@example.com", "firstName": NUL}]),
            "/0/firstName",
        ),
        (
            "/api/v2/tokens",
            json!({"name": NUL, "role": "reader"}),
            "/name",
        ),
        (
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": false, "name": NUL}),
            "/name",
        ),
    ]
}

/// Patches of `fixture`'s resources with a NUL in some string of the body: (path, content type,
/// body, the pointer named).
fn nul_in_patches(
    member: &str,
    token: &str,
    hook: &str,
) -> Vec<(String, &'static str, Value, &'static str)> {
    vec![
        (
            "/api/v2/projects/web".to_owned(),
            "application/json",
            json!({"comment": NUL, "patch": json_patch("/name", json!("Web"))}),
            "/comment",
        ),
        (
            "/api/v2/projects/web/environments/test".to_owned(),
            "application/json",
            json_patch("/name", json!(NUL)),
            "/0/value",
        ),
        (
            "/api/v2/flags/web/f".to_owned(),
            "application/json",
            json_patch("/description", json!(NUL)),
            "/0/value",
        ),
        (
            "/api/v2/flags/web/f".to_owned(),
            "application/merge-patch+json",
            json!({"name": NUL}),
            "/name",
        ),
        (
            "/api/v2/flags/web/f".to_owned(),
            SEMANTIC,
            json!({"comment": "c", "instructions": [{"kind": "updateName", "value": NUL}]}),
            "/instructions/0/value",
        ),
        (
            "/api/v2/segments/web/production/s".to_owned(),
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "addIncludedUsers", "values": ["u", NUL]}]}),
            "/instructions/0/values/1",
        ),
        (
            format!("/api/v2/members/{member}"),
            "application/json",
            json_patch("/lastName", json!(NUL)),
            "/0/value",
        ),
        (
            format!("/api/v2/tokens/{token}"),
            "application/json",
            json_patch("/description", json!(NUL)),
            "/0/value",
        ),
        (
            format!("/api/v2/webhooks/{hook}"),
            "application/json",
            json_patch("/name", json!(NUL)),
            "/0/value",
        ),
    ]
}

async fn nul_in_any_body_string_is_refused_naming_its_pointer(backend: Backend) {
    let app = spawn(backend).await;
    let (member, token, hook) = fixture(&app).await;
    let creates = nul_in_creates();
    for (path, body, field) in creates {
        let resp = app.post(path, body).await;
        assert_refused(&resp, field);
    }

    let patches = nul_in_patches(&member, &token, &hook);
    for (path, content_type, body, field) in patches {
        let resp = app.patch_with(&path, content_type, body).await;
        assert_refused(&resp, field);
    }

    // Nothing of it was stored.
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
    assert_eq!(app.get("/api/v2/projects/web").await.body["name"], "web");
    assert_eq!(app.get("/api/v2/flags/web").await.body["totalCount"], 1);
    assert_eq!(
        app.get("/api/v2/segments/web/production/s").await.body["included"],
        json!([])
    );
    assert_eq!(app.get("/api/v2/members").await.body["totalCount"], 2);
}

async fn nul_and_control_characters_in_query_and_path_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    fixture(&app).await;
    let refused = [
        ("/api/v2/projects?filter=query:a%00b", "filter"),
        ("/api/v2/projects?filter=keys:a%00b", "filter"),
        (
            "/api/v2/projects/web/environments?filter=query:%00",
            "filter",
        ),
        (
            "/api/v2/projects/web/environments?filter=name:a%0Ab",
            "filter",
        ),
        ("/api/v2/flags/web?filter=query:%00", "filter"),
        ("/api/v2/flags/web?env=%00", "env"),
        ("/api/v2/segments/web/production?filter=query:%00", "filter"),
        ("/api/v2/members?filter=query:%00", "filter"),
        ("/api/v2/members?filter=email:a%00@example.com", "filter"),
        ("/api/v2/auditlog?q=%00", "q"),
        ("/api/v2/auditlog?spec=proj/%00", "spec"),
        ("/api/v2/auditlog?q=a%09b", "q"),
        ("/api/v2/projects?sort=%00name", "sort"),
        ("/api/v2/projects/we%00b", "path"),
        ("/api/v2/projects/web/environments/te%00st", "path"),
        ("/api/v2/flags/web/f%00", "path"),
        ("/api/v2/segments/web/production/s%00", "path"),
        ("/api/v2/members/%00", "path"),
        ("/api/v2/tokens/%00", "path"),
        ("/api/v2/webhooks/%00", "path"),
        ("/api/v2/auditlog/%00", "path"),
    ];
    for (path, field) in refused {
        let resp = app.get(path).await;
        assert_refused(&resp, field);
    }
    // Writes too, and before anything is changed.
    let resp = app
        .delete("/api/v2/projects/web/environments/te%00st")
        .await;
    assert_refused(&resp, "path");
    let resp = app
        .send(
            request(Method::POST, "/api/v2/flags/web?clone=f%00", Some(OWNER))
                .set_json(json!({"key": "g", "name": "G"})),
        )
        .await;
    assert_refused(&resp, "clone");
    assert_eq!(app.get("/api/v2/flags/web").await.body["totalCount"], 1);
}

async fn odd_bytes_in_query_and_path_never_answer_500(backend: Backend) {
    let app = spawn(backend).await;
    fixture(&app).await;
    for path in [
        "/api/v2/projects/%FF",
        "/api/v2/projects/web/environments/%C0%80",
        "/api/v2/flags/web/%ED%A0%80",
        "/api/v2/projects?filter=query:%FF",
        "/api/v2/flags/web?filter=query:%E2%80%AE%FE",
        "/api/v2/members?filter=email:%FF@example.com",
        "/api/v2/auditlog?q=%FF&spec=%FF",
        "/api/v2/segments/web/production?filter=query:%",
        "/api/v2/projects?limit=%FF",
    ] {
        let resp = app.get(path).await;
        assert!(
            resp.status == 200 || resp.status == 400 || resp.status == 404,
            "{path}: {} {}",
            resp.status,
            resp.body
        );
        if resp.status != 200 {
            assert!(resp.body["code"].is_string(), "{path}: {}", resp.body);
        }
    }
}

async fn control_characters_in_single_line_fields_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    let (member, token, _hook) = fixture(&app).await;
    let creates = [
        (
            "/api/v2/projects",
            json!({"key": "p2", "name": "a\nb"}),
            "name",
        ),
        (
            "/api/v2/projects/web/environments",
            json!({"key": "e2", "name": "a\tb", "color": "000000"}),
            "name",
        ),
        (
            "/api/v2/flags/web",
            json!({"key": "f2", "name": "a\u{7}b"}),
            "name",
        ),
        (
            "/api/v2/segments/web/production",
            json!({"key": "s2", "name": "a\rb"}),
            "name",
        ),
        (
            "/api/v2/members",
            json!([{"email": "x@example.com", "firstName": "a\u{1b}b"}]),
            "firstName",
        ),
        (
            "/api/v2/tokens",
            json!({"name": "a\nb", "role": "reader"}),
            "name",
        ),
        (
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": false, "name": "a\u{7f}b"}),
            "name",
        ),
    ];
    for (path, body, field) in creates {
        let resp = app.post(path, body).await;
        assert_refused(&resp, field);
    }
    let resp = app
        .patch(
            &format!("/api/v2/members/{member}"),
            json_patch("/firstName", json!("a\nb")),
        )
        .await;
    assert!(resp.status == 400 || resp.status == 422, "{}", resp.body);
    assert!(resp.body["message"].as_str().unwrap().contains("firstName"));
    let resp = app
        .patch(
            &format!("/api/v2/tokens/{token}"),
            json_patch("/name", json!("a\nb")),
        )
        .await;
    assert!(resp.status == 400 || resp.status == 422, "{}", resp.body);
    assert!(resp.body["message"].as_str().unwrap().contains("name"));
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
    assert_eq!(
        app.get(&format!("/api/v2/tokens/{token}")).await.body["name"],
        "t"
    );
}

async fn escaped_control_characters_in_free_text_and_values_round_trip(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let values = json!(["a\tb", "line1\nline2", "bell\u{7}", "é\u{1f}\u{9f}"]);
    let created = app
        .post(
            "/api/v2/flags/web",
            json!({
                "key": "f",
                "name": "F",
                "description": "two\nlines\tand a tab",
                "variations": values.as_array().unwrap().iter().map(|v| json!({"value": v})).collect::<Vec<_>>(),
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let fetched = app.get("/api/v2/flags/web/f").await;
    let got: Vec<Value> = fetched.body["variations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["value"].clone())
        .collect();
    assert_eq!(Value::Array(got), values);
    assert_eq!(fetched.body["description"], "two\nlines\tand a tab");

    let patched = app
        .patch(
            "/api/v2/projects/web",
            json!({"comment": "why:\n\tbecause", "patch": json_patch("/name", json!("Web"))}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let log = app.get("/api/v2/auditlog?spec=proj/web").await;
    assert_eq!(log.body["items"][0]["comment"], "why:\n\tbecause");

    let segment = app
        .post(
            "/api/v2/segments/web/test",
            json!({"key": "s", "name": "S", "description": "a\r\nb"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    let fetched = app.get("/api/v2/segments/web/test/s").await;
    assert_eq!(fetched.body["description"], "a\r\nb");
}

fn tags(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("t{i}")).collect()
}

/// Creates of a project, an environment, a flag, a segment and a webhook, each with `tags`:
/// (path, body).
fn creates_with_tags(many: &[String]) -> [(&'static str, Value); 5] {
    [
        (
            "/api/v2/projects",
            json!({"key": "p2", "name": "P", "tags": many}),
        ),
        (
            "/api/v2/projects/web/environments",
            json!({"key": "e2", "name": "E", "color": "000000", "tags": many}),
        ),
        (
            "/api/v2/flags/web",
            json!({"key": "f2", "name": "F", "tags": many}),
        ),
        (
            "/api/v2/segments/web/production",
            json!({"key": "s2", "name": "S", "tags": many}),
        ),
        (
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": false, "tags": many}),
        ),
    ]
}

async fn thousands_of_tags_are_refused_naming_the_limit(backend: Backend) {
    let app = spawn(backend).await;
    let (_, _, hook) = fixture(&app).await;
    // 33,000 tags fit in the default body limit; they used to be a 500 on both stores.
    let many = tags(33_000);
    let creates = creates_with_tags(&many);
    for (path, body) in creates {
        let resp = app.post(path, body).await;
        assert_limit(&resp, "100");
        assert!(resp.body["message"].as_str().unwrap().contains("tags"));
    }
    let many = tags(101);
    for path in [
        "/api/v2/projects/web".to_owned(),
        "/api/v2/projects/web/environments/test".to_owned(),
        "/api/v2/flags/web/f".to_owned(),
        "/api/v2/segments/web/production/s".to_owned(),
        format!("/api/v2/webhooks/{hook}"),
    ] {
        let resp = app
            .patch(
                &path,
                json!([{"op": "add", "path": "/tags", "value": many}]),
            )
            .await;
        assert_limit(&resp, "100");
    }
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"instructions": [{"kind": "addTags", "values": many}]}),
        )
        .await;
    assert_limit(&resp, "100");
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body["tags"], json!([]));

    // Environments created with a project, prerequisites per flag environment.
    let environments: Vec<Value> = (0..101)
        .map(|i| json!({"key": format!("e{i}"), "name": "E", "color": "000000"}))
        .collect();
    let resp = app
        .post(
            "/api/v2/projects",
            json!({"key": "p4", "name": "P", "environments": environments}),
        )
        .await;
    assert_limit(&resp, "100");
    assert!(resp.body["message"]
        .as_str()
        .unwrap()
        .contains("environments"));
    let prerequisites: Vec<Value> = (0..101)
        .map(|i| json!({"key": format!("g{i}"), "variation": 0}))
        .collect();
    let resp = app
        .patch(
            "/api/v2/flags/web/f",
            json_patch(
                "/environments/production/prerequisites",
                json!(prerequisites),
            ),
        )
        .await;
    assert_limit(&resp, "100");
    assert!(resp.body["message"]
        .as_str()
        .unwrap()
        .contains("prerequisites"));

    // The limit itself is fine, on every store.
    let mut hundred = tags(100);
    let created = app
        .post(
            "/api/v2/projects",
            json!({"key": "p3", "name": "P", "tags": hundred}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    hundred.sort();
    assert_eq!(created.body["tags"], json!(hundred));
    let flag = app
        .post(
            "/api/v2/flags/p3",
            json!({"key": "f", "name": "F", "tags": hundred}),
        )
        .await;
    assert_eq!(flag.status, 201, "{}", flag.body);
    assert_eq!(
        app.get("/api/v2/flags/p3/f").await.body["tags"],
        json!(hundred)
    );
}

async fn filters_with_too_many_values_are_refused_naming_the_limit(backend: Backend) {
    let app = spawn(backend).await;
    fixture(&app).await;
    // 2,000 tags made 2,000 nested sub-queries: past SQLite's expression depth, a 500.
    let joined = tags(2_000).join("%2B");
    for path in [
        format!("/api/v2/projects?filter=tags:{joined}"),
        format!("/api/v2/projects/web/environments?filter=tags:{joined}"),
        format!("/api/v2/projects/web/environments?tags={joined}"),
        format!("/api/v2/flags/web?filter=tags:{joined}"),
        format!("/api/v2/segments/web/production?filter=tags:{joined}"),
        format!("/api/v2/projects?filter=keys:{}", tags(5_000).join("|")),
        format!(
            "/api/v2/members?filter=email:{}",
            (0..101)
                .map(|i| format!("m{i}@example.com"))
                .collect::<Vec<_>>()
                .join("|")
        ),
        format!(
            "/api/v2/flags/web?{}",
            (0..101)
                .map(|i| format!("env=e{i}"))
                .collect::<Vec<_>>()
                .join("&")
        ),
    ] {
        let resp = app.get(&path).await;
        assert_refused(&resp, "100");
    }
    // At the limit, filters work.
    let joined = tags(100).join("%2B");
    let resp = app
        .get(&format!("/api/v2/projects?filter=tags:{joined}"))
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body["totalCount"], 0);
    let resp = app
        .get(&format!(
            "/api/v2/projects?filter=keys:web|{}",
            tags(99).join("|")
        ))
        .await;
    assert_eq!(resp.body["totalCount"], 1);
}

fn keys(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}{i}")).collect()
}

async fn targets_per_segment_and_flag_environment_are_limited(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let created = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "s", "name": "S"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // 15,000 targets in 1,500-value steps: every one is stored.
    for step in 0..10 {
        let kind = if step % 2 == 0 {
            "addIncludedUsers"
        } else {
            "addExcludedUsers"
        };
        let resp = app
            .patch_with(
                "/api/v2/segments/web/production/s",
                SEMANTIC,
                json!({"environmentKey": "production", "instructions": [
                    {"kind": kind, "values": keys("u", step * 1500..(step + 1) * 1500)}
                ]}),
            )
            .await;
        assert_eq!(resp.status, 200, "step {step}: {}", resp.body);
    }
    let resp = app
        .patch_with(
            "/api/v2/segments/web/production/s",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addIncludedTargets", "contextKind": "org", "values": ["one-too-many"]}
            ]}),
        )
        .await;
    assert_limit(&resp, "15000");
    let segment = app.get("/api/v2/segments/web/production/s").await;
    assert_eq!(segment.body["included"].as_array().unwrap().len(), 7_500);
    assert_eq!(segment.body["excluded"].as_array().unwrap().len(), 7_500);
    assert_eq!(segment.body["includedContexts"], json!([]));

    let flag = app.get("/api/v2/flags/web/f").await;
    let on = flag.body["variations"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let off = flag.body["variations"][1]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addTargets", "variationId": on, "values": keys("u", 0..10_000)},
                {"kind": "addTargets", "variationId": off, "contextKind": "org", "values": keys("o", 0..5_000)},
            ]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    let resp = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addUserTargets", "variationId": off, "values": ["one-too-many"]},
            ]}),
        )
        .await;
    assert_limit(&resp, "15000");
    let resp = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "add", "path": "/environments/test/targets/-",
                    "value": {"variation": 0, "values": keys("u", 0..15_001)}}]),
        )
        .await;
    assert_limit(&resp, "15000");
    let flag = app.get("/api/v2/flags/web/f?env=production&env=test").await;
    let production = &flag.body["environments"]["production"];
    assert_eq!(
        production["targets"][0]["values"].as_array().unwrap().len(),
        10_000
    );
    assert_eq!(
        production["contextTargets"][0]["values"]
            .as_array()
            .unwrap()
            .len(),
        5_000
    );
    assert_eq!(flag.body["environments"]["test"]["targets"], json!([]));
}

on_both_backends!(
    nul_in_any_body_string_is_refused_naming_its_pointer,
    nul_and_control_characters_in_query_and_path_are_refused,
    odd_bytes_in_query_and_path_never_answer_500,
    control_characters_in_single_line_fields_are_refused,
    escaped_control_characters_in_free_text_and_values_round_trip,
    thousands_of_tags_are_refused_naming_the_limit,
    filters_with_too_many_values_are_refused_naming_the_limit,
    targets_per_segment_and_flag_environment_are_limited,
);

#[test]
fn limits_and_the_single_line_rule_are_schema_constraints() {
    let document = adapter_http::openapi_document().unwrap();
    let schemas = &document["components"]["schemas"];
    for schema in [
        "ProjectPost",
        "EnvironmentPost",
        "FlagPost",
        "SegmentPost",
        "WebhookPost",
        "Project",
        "Environment",
        "Flag",
        "Segment",
        "Webhook",
    ] {
        assert_eq!(
            schemas[schema]["properties"]["tags"]["maxItems"], 100,
            "{schema}"
        );
    }
    // Names have a non-blank character; labels (token and webhook names) may be empty.
    for (schema, pattern) in [
        ("ProjectPost", domain::text::NAME_PATTERN),
        ("EnvironmentPost", domain::text::NAME_PATTERN),
        ("FlagPost", domain::text::NAME_PATTERN),
        ("SegmentPost", domain::text::NAME_PATTERN),
        ("TokenPost", domain::text::SINGLE_LINE_PATTERN),
        ("WebhookPost", domain::text::SINGLE_LINE_PATTERN),
    ] {
        let name = &schemas[schema]["properties"]["name"];
        assert_eq!(name["maxLength"], 256, "{schema}");
        assert_eq!(name["pattern"], pattern, "{schema}");
    }
    assert_eq!(
        schemas["ProjectPost"]["properties"]["environments"]["maxItems"],
        100
    );
    assert_eq!(
        schemas["FlagConfig"]["properties"]["prerequisites"]["maxItems"],
        100
    );
}
