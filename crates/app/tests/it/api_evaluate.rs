//! What flags serve a context over the management API: `POST .../flags/evaluate` (the
//! original's) and `POST .../flags/{flagKey}/explain` (the evaluation's trace), evaluated from
//! flags and segments as the management API configured them.

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, TestApp, SEMANTIC};

const EVALUATE: &str = "/api/v2/projects/web/environments/production/flags/evaluate";

/// Project `web` with flags `beta` (on in production: `ann` targeted with `true`, a rule
/// serving `true` to org contexts in segment `staff`, `false` to everyone else), `quiet` (off)
/// and `old` (archived); the rule's `_id`.
pub(crate) async fn configure<S, B>(app: &TestApp<S>) -> Value
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.project("web").await;
    let beta = app.flag("web", "beta").await;
    app.flag("web", "quiet").await;
    let old = app.flag("web", "old").await;
    assert_eq!(old["key"], "old");
    let (on, off) = (
        beta["variations"][0]["_id"].as_str().unwrap().to_owned(),
        beta["variations"][1]["_id"].as_str().unwrap().to_owned(),
    );
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "staff", "name": "Staff"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    assert_eq!(segment.body["salt"].as_str().map(str::len), Some(32));
    let staff = app
        .patch_with(
            "/api/v2/segments/web/production/staff",
            SEMANTIC,
            json!({"environmentKey": "production",
                   "instructions": [{"kind": "addIncludedTargets", "contextKind": "org",
                                      "values": ["acme"]}]}),
        )
        .await;
    assert_eq!(staff.status, 200, "{}", staff.body);
    let changed = app
        .patch_with(
            "/api/v2/flags/web/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "turnFlagOn"},
                {"kind": "updateFallthroughVariationOrRollout", "variationId": off},
                {"kind": "addTargets", "values": ["ann"], "variationId": on},
                {"kind": "addRule", "variationId": on, "clauses": [
                    {"contextKind": "org", "attribute": "segmentMatch", "op": "segmentMatch",
                     "values": ["staff"], "negate": false}]},
            ]}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let archived = app
        .patch(
            "/api/v2/flags/web/old",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200, "{}", archived.body);

    changed.body["environments"]["production"]["rules"][0]["_id"].clone()
}

async fn evaluate_flags_as_configured(backend: Backend) {
    let app = spawn(backend).await;
    let rule_id = configure(&app).await;
    let served = |body: &Value, key: &str| {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|item| item["key"] == key)
            .map(|item| (item["_value"].clone(), item["reason"].clone()))
    };
    let ann = app
        .post(EVALUATE, json!({"kind": "user", "key": "ann"}))
        .await;
    assert_eq!(ann.status, 200, "{}", ann.body);
    assert_eq!(
        ann.body["totalCount"], 2,
        "archived flags are left out: {}",
        ann.body
    );
    assert_eq!(
        served(&ann.body, "beta"),
        Some((json!(true), json!({"kind": "TARGET_MATCH"})))
    );
    assert_eq!(
        served(&ann.body, "quiet"),
        Some((json!(false), json!({"kind": "OFF"})))
    );
    let acme = app
        .post(
            EVALUATE,
            json!({"kind": "multi", "user": {"key": "bob"}, "org": {"key": "acme"}}),
        )
        .await;
    assert_eq!(
        served(&acme.body, "beta"),
        Some((
            json!(true),
            json!({"kind": "RULE_MATCH", "ruleIndex": 0, "ruleId": rule_id})
        ))
    );
    let bob = app.post(EVALUATE, json!({"key": "bob"})).await;
    assert_eq!(
        served(&bob.body, "beta"),
        Some((json!(false), json!({"kind": "FALLTHROUGH"})))
    );
    let paged = app
        .post(
            &format!("{EVALUATE}?limit=1&filter=query:bet"),
            json!({"key": "bob"}),
        )
        .await;
    assert_eq!(paged.status, 200, "{}", paged.body);
    assert_eq!(paged.body["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(paged.body["items"][0]["key"], "beta");
    assert_eq!(
        paged.body["items"][0]["_links"]["self"]["href"],
        "/api/v2/flags/web/beta"
    );

    // Why: the trace of one flag.
    let why = app
        .post(
            "/api/v2/projects/web/environments/production/flags/beta/explain",
            json!({"kind": "multi", "user": {"key": "bob"}, "org": {"key": "acme"}}),
        )
        .await;
    assert_eq!(why.status, 200, "{}", why.body);
    assert_eq!(why.body["flagKey"], "beta");
    let clause = &why.body["rules"][0]["clauses"][0];
    assert_eq!(
        clause["segments"],
        json!([{"key": "staff", "why": "included", "matched": true}])
    );
    assert_eq!(why.body["result"]["value"], true);
}

async fn bad_contexts_and_unknown_resources_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "beta").await;
    for context in [
        json!({"kind": "user"}),
        json!({"kind": "user", "key": 3}),
        json!([1]),
        json!({"kind": "multi"}),
        json!({"kind": "x y", "key": "a"}),
    ] {
        let refused = app.post(EVALUATE, context.clone()).await;
        refused.assert_error(400, "invalid_request");
    }
    let malformed = app
        .send(
            request(Method::POST, EVALUATE, Some(crate::common::OWNER))
                .insert_header(("Content-Type", "application/json"))
                .set_payload("{"),
        )
        .await;
    assert_eq!(malformed.status, 400, "{}", malformed.body);
    app.post(
        "/api/v2/projects/web/environments/nope/flags/evaluate",
        json!({"key": "a"}),
    )
    .await
    .assert_error(404, "not_found");
    app.post(
        "/api/v2/projects/web/environments/production/flags/nope/explain",
        json!({"key": "a"}),
    )
    .await
    .assert_error(404, "not_found");
    let anonymous = app
        .send(request(Method::POST, EVALUATE, None).set_json(json!({"key": "a"})))
        .await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
}

on_both_backends!(
    evaluate_flags_as_configured,
    bad_contexts_and_unknown_resources_are_refused,
);
