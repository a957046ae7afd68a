use actix_web::http::Method;
use adapter_http::HttpConfig;
use serde_json::json;

use crate::common::{request, spawn, spawn_with, Backend, OWNER};

async fn root_versions_and_document(backend: Backend) {
    let app = spawn(backend).await;
    let root = app.send(request(Method::GET, "/api/v2", None)).await;
    assert_eq!(root.status, 200);
    assert_eq!(root.body["links"]["projects"]["href"], "/api/v2/projects");
    assert_eq!(root.header("svc-api-version"), Some("20240415"));
    let doc = app
        .send(request(Method::GET, "/api/v2/openapi.json", None))
        .await;
    assert_eq!(doc.status, 200);
    assert!(doc.body["openapi"].as_str().unwrap().starts_with("3."));

    let versions = app.get("/api/v2/versions").await;
    assert_eq!(
        versions.body,
        json!({"validVersions": [20240415, 20220603], "latestVersion": 20240415, "currentVersion": 20240415, "beta": false})
    );
    let beta = app
        .send(
            request(Method::GET, "/api/v2/versions", Some(OWNER))
                .insert_header(("Svc-API-Version", "beta")),
        )
        .await;
    assert_eq!(beta.body["beta"], true);
    assert_eq!(beta.header("svc-api-version"), Some("beta"));
    let bad = app
        .send(
            request(Method::GET, "/api/v2/projects", Some(OWNER))
                .insert_header(("Svc-API-Version", "2019")),
        )
        .await;
    bad.assert_error(400, "invalid_request");
    assert!(bad.body["message"].as_str().unwrap().contains("20240415"));
    app.send(request(Method::GET, "/api/v2/versions", None))
        .await
        .assert_error(401, "unauthorized");
}

async fn unknown_routes_and_methods_are_json(backend: Backend) {
    let app = spawn(backend).await;
    app.get("/api/v2/nothing-here")
        .await
        .assert_error(404, "not_found");
    app.get("/elsewhere").await.assert_error(404, "not_found");
    let wrong = app
        .send(request(Method::PUT, "/api/v2/projects", Some(OWNER)))
        .await;
    wrong.assert_error(405, "method_not_allowed");
    assert_eq!(wrong.header("allow"), Some("GET, POST"));
    app.send(request(
        Method::POST,
        "/api/v2/projects/web/environments/test",
        Some(OWNER),
    ))
    .await
    .assert_error(405, "method_not_allowed");
}

async fn bodies_must_be_json_and_small(backend: Backend) {
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            body_limit: 256,
            ..HttpConfig::default()
        },
    )
    .await;
    let text = app
        .send(
            request(Method::POST, "/api/v2/projects", Some(OWNER))
                .insert_header(("Content-Type", "text/plain"))
                .set_payload("key=x"),
        )
        .await;
    text.assert_error(415, "unsupported_media_type");
    let missing = app
        .send(
            request(Method::POST, "/api/v2/projects", Some(OWNER))
                .set_payload(r#"{"key":"x","name":"X"}"#),
        )
        .await;
    missing.assert_error(415, "unsupported_media_type");
    let malformed = app
        .send(
            request(Method::POST, "/api/v2/projects", Some(OWNER))
                .insert_header(("Content-Type", "application/json"))
                .set_payload("{\"key\": "),
        )
        .await;
    malformed.assert_error(400, "invalid_request");
    let big = json!({"key": "x", "name": "x".repeat(400)});
    let too_large = app.post("/api/v2/projects", big.clone()).await;
    too_large.assert_error(413, "payload_too_large");
    assert_eq!(
        too_large.body["message"], "the request body is larger than the limit of 256 bytes",
        "the limit is named"
    );
    app.project("web").await;
    app.flag("web", "f").await;
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/description", "value": "d".repeat(400)}]),
    )
    .await
    .assert_error(413, "payload_too_large");
    app.patch_with("/api/v2/flags/web/f", "text/plain", json!([]))
        .await
        .assert_error(415, "unsupported_media_type");
    app.patch_with(
        "/api/v2/flags/web/f",
        "application/json",
        json!("not a patch"),
    )
    .await
    .assert_error(400, "invalid_request");
    let broken = app
        .send(
            request(Method::PATCH, "/api/v2/flags/web/f", Some(OWNER))
                .insert_header(("Content-Type", "application/json"))
                .set_payload("[{"),
        )
        .await;
    broken.assert_error(400, "invalid_request");
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
}

async fn rate_limits(backend: Backend) {
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 3,
            body_limit: 1024 * 1024,
            ..HttpConfig::default()
        },
    )
    .await;
    for left in ["2", "1", "0"] {
        let resp = app.get("/api/v2/projects").await;
        assert_eq!(resp.status, 200);
        assert_eq!(resp.header("x-ratelimit-route-remaining"), Some(left));
        assert!(resp.header("x-ratelimit-global-remaining").is_some());
        assert!(
            resp.header("x-ratelimit-reset")
                .unwrap()
                .parse::<i64>()
                .unwrap()
                > 1_600_000_000_000
        );
    }
    let limited = app.get("/api/v2/projects").await;
    limited.assert_error(429, "rate_limited");
    assert!(
        limited
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert_eq!(limited.header("x-ratelimit-route-remaining"), Some("0"));
    // Other routes have their own bucket; the token-wide bucket is five times larger.
    assert_eq!(app.get("/api/v2/versions").await.status, 200);
    // Public routes are not limited.
    for _ in 0..5 {
        assert_eq!(
            app.send(request(Method::GET, "/api/v2", None)).await.status,
            200
        );
    }
}

on_both_backends!(
    root_versions_and_document,
    unknown_routes_and_methods_are_json,
    bodies_must_be_json_and_small,
    rate_limits
);
