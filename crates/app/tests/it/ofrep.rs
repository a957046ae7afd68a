//! OFREP over HTTP, mounted beside the API as the binary serves it: the protocol's answers and
//! errors, the SDK key rules (its own environment only, a reset key until its expiry, nothing
//! else opens anything), and the bulk route's `ETag`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use actix_web::http::Method;
use adapter_http::HttpConfig;
use serde_json::{json, Value};

use crate::common::{request, spawn, spawn_with, Backend, Resp, TestApp, SEMANTIC};

const ONE: &str = "/ofrep/v1/evaluate/flags/beta";
const BULK: &str = "/ofrep/v1/evaluate/flags";

/// Project `web` with flags `beta` (on in production: `ann` targeted with `true`, everyone
/// else `false`) and `quiet` (off, no off variation); the production and test SDK keys.
pub(crate) async fn configure<S, B>(app: &TestApp<S>) -> (String, String)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let project = app.project("web").await;
    let beta = app.flag("web", "beta").await;
    let (on, off) = (
        beta["variations"][0]["_id"].as_str().unwrap().to_owned(),
        beta["variations"][1]["_id"].as_str().unwrap().to_owned(),
    );
    let changed = app
        .patch_with(
            "/api/v2/flags/web/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "turnFlagOn"},
                {"kind": "updateFallthroughVariationOrRollout", "variationId": off},
                {"kind": "addTargets", "values": ["ann"], "variationId": on},
            ]}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    app.flag("web", "quiet").await;
    let quiet = app
        .patch(
            "/api/v2/flags/web/quiet",
            json!([{"op": "remove", "path": "/environments/production/offVariation"}]),
        )
        .await;
    assert_eq!(quiet.status, 200, "{}", quiet.body);
    let key_of = |name: &str| {
        project["environments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|env| env["key"] == name)
            .map(|env| env["apiKey"].as_str().unwrap().to_owned())
            .unwrap()
    };
    (key_of("production"), key_of("test"))
}

/// `POST path` with `key` in `Authorization` and `body` as it is.
async fn ofrep<S, B>(app: &TestApp<S>, path: &str, key: &str, body: &str) -> Resp
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.send(
        request(Method::POST, path, Some(key))
            .insert_header(("Content-Type", "application/json"))
            .set_payload(body.to_owned()),
    )
    .await
}

fn context(key: &str) -> String {
    json!({"context": {"targetingKey": key}}).to_string()
}

async fn one_flag_in_the_protocols_shapes(backend: Backend) {
    let app = spawn(backend).await;
    let (production, test) = configure(&app).await;
    let ann = ofrep(&app, ONE, &format!("Bearer {production}"), &context("ann")).await;
    assert_eq!(ann.status, 200, "{}", ann.body);
    assert_eq!(ann.body["key"], "beta");
    assert_eq!(ann.body["value"], true);
    assert_eq!(ann.body["reason"], "TARGETING_MATCH");
    assert!(ann.body["variant"].is_string(), "{}", ann.body);
    assert_eq!(ann.body["metadata"]["reason"], "TARGET_MATCH");
    assert_eq!(ann.body["metadata"]["variationIndex"], 0);
    assert!(ann.body["metadata"]["version"].as_u64().is_some());
    let bob = ofrep(&app, ONE, &production, &context("bob")).await;
    assert_eq!(
        (&bob.body["value"], &bob.body["reason"]),
        (&json!(false), &json!("STATIC"))
    );
    // The test environment's key reads the test environment: there the flag is off.
    let elsewhere = ofrep(&app, ONE, &test, &context("ann")).await;
    assert_eq!(elsewhere.body["reason"], "DISABLED", "{}", elsewhere.body);
    assert_eq!(elsewhere.body["value"], false);
    // Off without an off variation: no value, the application's default applies.
    let quiet = ofrep(
        &app,
        "/ofrep/v1/evaluate/flags/quiet",
        &production,
        &context("ann"),
    )
    .await;
    assert_eq!(quiet.status, 200, "{}", quiet.body);
    assert_eq!(quiet.body.get("value"), None, "{}", quiet.body);
    assert_eq!(quiet.body["reason"], "DISABLED");
    assert_eq!(quiet.body["variant"], Value::Null);
    // X-API-Key, with a multi-kind context.
    let multi = app
        .send(
            request(Method::POST, ONE, None)
                .insert_header(("X-API-Key", production.clone()))
                .set_payload(
                    json!({"context": {"kind": "multi", "user": {"targetingKey": "ann"},
                                       "org": {"targetingKey": "acme"}}})
                    .to_string(),
                ),
        )
        .await;
    assert_eq!(multi.body["value"], true, "{}", multi.body);
}

async fn bad_requests_get_the_protocols_errors(backend: Backend) {
    let app = spawn(backend).await;
    let (production, _) = configure(&app).await;
    let deep = format!("{{\"context\":{}{}}}", "[".repeat(200), "]".repeat(200));
    let large =
        json!({"context": {"targetingKey": "a", "blob": "x".repeat(300 * 1024)}}).to_string();
    let cases: [(&str, &str, u16, &str); 10] = [
        (ONE, "{", 400, "PARSE_ERROR"),
        (ONE, "[1]", 400, "PARSE_ERROR"),
        (ONE, &deep, 400, "PARSE_ERROR"),
        (ONE, &large, 413, "PARSE_ERROR"),
        (ONE, r#"{"context": "ann"}"#, 400, "INVALID_CONTEXT"),
        (
            ONE,
            r#"{"context": {"targetingKey": 7}}"#,
            400,
            "INVALID_CONTEXT",
        ),
        (
            ONE,
            r#"{"context": {"kind": "kind", "targetingKey": "a"}}"#,
            400,
            "INVALID_CONTEXT",
        ),
        (
            ONE,
            r#"{"context": {"plan": "gold"}}"#,
            400,
            "TARGETING_KEY_MISSING",
        ),
        ("/ofrep/v1/evaluate/flags/nope", "{}", 404, "FLAG_NOT_FOUND"),
        (BULK, "{", 400, "PARSE_ERROR"),
    ];
    for (path, body, status, code) in cases {
        let r = ofrep(&app, path, &production, body).await;
        assert_eq!(
            r.status,
            status,
            "{path} {}: {}",
            &body[..body.len().min(60)],
            r.body
        );
        assert_eq!(r.body["errorCode"], code, "{}", r.body);
        assert!(r.body["errorDetails"]
            .as_str()
            .is_some_and(|d| !d.is_empty()));
        if path != BULK {
            assert!(r.body["key"].is_string(), "{}", r.body);
        }
    }
    // A flag that is off needs no key; an empty body is an empty context.
    let off = ofrep(&app, "/ofrep/v1/evaluate/flags/quiet", &production, "").await;
    assert_eq!(
        (off.status, &off.body["reason"]),
        (200, &json!("DISABLED")),
        "{}",
        off.body
    );
    // An archived flag is not found.
    let archived = app
        .patch(
            "/api/v2/flags/web/quiet",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200);
    let gone = ofrep(&app, "/ofrep/v1/evaluate/flags/quiet", &production, "{}").await;
    assert_eq!(
        (gone.status, &gone.body["errorCode"]),
        (404, &json!("FLAG_NOT_FOUND"))
    );
    // Another method, another path.
    let get = app.send(request(Method::GET, ONE, Some(&production))).await;
    assert_eq!(
        (get.status, get.header("allow")),
        (405, Some("POST")),
        "{}",
        get.body
    );
    let nowhere = ofrep(&app, "/ofrep/v1/nowhere", &production, "{}").await;
    assert_eq!(nowhere.status, 404, "{}", nowhere.body);
}

pub(crate) fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

async fn only_an_sdk_key_opens_its_environment(backend: Backend) {
    let app = spawn(backend).await;
    let (production, _) = configure(&app).await;
    let env = app
        .get("/api/v2/projects/web/environments/production")
        .await
        .body;
    let mobile = env["mobileKey"].as_str().unwrap().to_owned();
    let client_side_id = env["_id"].as_str().unwrap().to_owned();
    for key in [
        crate::common::OWNER,
        &mobile,
        &client_side_id,
        "sdk-00000000-0000-4000-8000-000000000000",
        "Bearer",
    ] {
        let r = ofrep(&app, ONE, key, &context("ann")).await;
        assert_eq!(r.status, 401, "{key}: {}", r.body);
        assert_eq!(r.body["errorCode"], "GENERAL");
    }
    let anonymous = app
        .send(request(Method::POST, BULK, None).set_payload(context("ann")))
        .await;
    assert_eq!(anonymous.status, 401, "{}", anonymous.body);
    // Reset with an expiry: both keys work until it; reset without: the old one stops.
    let expiry = now_ms() + 1_500;
    let reset = app
        .post(
            &format!("/api/v2/projects/web/environments/production/apiKey?expiry={expiry}"),
            json!({}),
        )
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let renewed = reset.body["apiKey"].as_str().unwrap().to_owned();
    for key in [&production, &renewed] {
        assert_eq!(ofrep(&app, ONE, key, &context("ann")).await.status, 200);
    }
    std::thread::sleep(Duration::from_millis(1_600));
    assert_eq!(
        ofrep(&app, ONE, &production, &context("ann")).await.status,
        401
    );
    let reset = app
        .post(
            "/api/v2/projects/web/environments/production/apiKey",
            json!({}),
        )
        .await;
    assert_eq!(reset.status, 200);
    assert_eq!(
        ofrep(&app, ONE, &renewed, &context("ann")).await.status,
        401
    );
    let newest = reset.body["apiKey"].as_str().unwrap().to_owned();
    assert_eq!(ofrep(&app, ONE, &newest, &context("ann")).await.status, 200);
    // A deleted environment's key opens nothing.
    let deleted = app
        .delete("/api/v2/projects/web/environments/production")
        .await;
    assert_eq!(deleted.status, 204);
    assert_eq!(ofrep(&app, ONE, &newest, &context("ann")).await.status, 401);
}

async fn bulk_answers_every_flag_with_an_etag(backend: Backend) {
    let app = spawn(backend).await;
    let (production, _) = configure(&app).await;
    let first = ofrep(&app, BULK, &production, &context("ann")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    let flags = first.body["flags"].as_array().unwrap();
    let keys: Vec<&str> = flags.iter().map(|f| f["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["beta", "quiet"], "creation order");
    assert_eq!(flags[0]["value"], true);
    let etag = first.header("etag").unwrap().to_owned();
    let again = app
        .send(
            request(Method::POST, BULK, Some(&production))
                .insert_header(("If-None-Match", etag.clone()))
                .set_payload(context("ann")),
        )
        .await;
    assert_eq!(again.status, 304);
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let any = app
        .send(
            request(Method::POST, BULK, Some(&production))
                .insert_header(("If-None-Match", "*"))
                .set_payload(context("ann")),
        )
        .await;
    assert_eq!(any.status, 200, "`*` matches no answer");
    // Another context, or a change, is another answer.
    let bob = ofrep(&app, BULK, &production, &context("bob")).await;
    assert_ne!(bob.header("etag"), Some(etag.as_str()));
    let off = app
        .patch_with(
            "/api/v2/flags/web/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}]}),
        )
        .await;
    assert_eq!(off.status, 200);
    let changed = app
        .send(
            request(Method::POST, BULK, Some(&production))
                .insert_header(("If-None-Match", etag.clone()))
                .set_payload(context("ann")),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_eq!(changed.body["flags"][0]["reason"], "DISABLED");
    // Without a key, flags that are on answer an error of their own; those off still serve.
    let keyless = ofrep(&app, BULK, &production, "{}").await;
    assert_eq!(keyless.status, 200, "{}", keyless.body);
    assert_eq!(keyless.body["flags"][0]["reason"], "DISABLED");
    app.patch_with(
        "/api/v2/flags/web/beta",
        SEMANTIC,
        json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .await;
    let keyless = ofrep(&app, BULK, &production, "{}").await;
    assert_eq!(
        keyless.body["flags"][0]["errorCode"], "TARGETING_KEY_MISSING",
        "{}",
        keyless.body
    );
}

async fn sdk_requests_share_the_rate_limiter(backend: Backend) {
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            sdk_rate_limit: 2,
            ..HttpConfig::default()
        },
    )
    .await;
    let (production, _) = configure(&app).await;
    for _ in 0..2 {
        assert_eq!(
            ofrep(&app, ONE, &production, &context("a")).await.status,
            200
        );
    }
    let limited = ofrep(&app, ONE, &production, &context("a")).await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert!(limited.header("retry-after").is_some());
    assert_eq!(limited.body["errorCode"], "GENERAL");
    // Another route has its own bucket.
    assert_eq!(
        ofrep(&app, BULK, &production, &context("a")).await.status,
        200
    );
}

/// One client's stale keys do not lock out the others behind the same address: a key of the
/// generated form is still looked up while the address is throttled.
async fn a_throttled_address_still_opens_with_a_generated_key(backend: Backend) {
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            auth_failure_limit: 3,
            ..HttpConfig::default()
        },
    )
    .await;
    let (production, _) = configure(&app).await;
    for _ in 0..3 {
        let stale = ofrep(&app, ONE, "a-stale-key", &context("ann")).await;
        assert_eq!(stale.status, 401, "{}", stale.body);
    }
    let throttled = ofrep(&app, ONE, "a-stale-key", &context("ann")).await;
    assert_eq!(throttled.status, 429, "{}", throttled.body);
    let guess = ofrep(
        &app,
        ONE,
        "sdk-00000000-0000-4000-8000-000000000000",
        &context("ann"),
    )
    .await;
    assert_eq!(
        guess.status, 401,
        "a well-formed guess is looked up, and fails: {}",
        guess.body
    );
    let valid = ofrep(&app, ONE, &production, &context("ann")).await;
    assert_eq!(valid.status, 200, "{}", valid.body);
}

on_both_backends!(
    a_throttled_address_still_opens_with_a_generated_key,
    one_flag_in_the_protocols_shapes,
    bad_requests_get_the_protocols_errors,
    only_an_sdk_key_opens_its_environment,
    bulk_answers_every_flag_with_an_etag,
    sdk_requests_share_the_rate_limiter,
);
