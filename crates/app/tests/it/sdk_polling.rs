//! The server-side SDKs' polling routes over HTTP, mounted beside the API as the binary serves
//! them: `/sdk/latest-all` and its parts in the SDK data model, the raw SDK key, strong ETags
//! with 304, gzip, and what is refused.

use std::io::Read;

use actix_web::http::Method;
use actix_web::test;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, Resp, SEMANTIC};
use crate::ofrep::configure;

/// The SDK routes' error shape: `{"code", "message"}` with the status.
pub(crate) fn assert_sdk_error(r: &Resp, status: u16, code: &str) {
    assert_eq!(
        (r.status, &r.body["code"]),
        (status, &json!(code)),
        "{}",
        r.body
    );
    assert!(
        r.body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        r.body
    );
}

async fn the_environments_data_in_the_sdk_model(backend: Backend) {
    let app = spawn(backend).await;
    let (production, test) = configure(&app).await;
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "staff", "name": "Staff"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    let included = app
        .patch_with(
            "/api/v2/segments/web/production/staff",
            SEMANTIC,
            json!({"environmentKey": "production",
                   "instructions": [{"kind": "addIncludedUsers", "values": ["kim"]}]}),
        )
        .await;
    assert_eq!(included.status, 200, "{}", included.body);
    app.flag("web", "old").await;
    let archived = app
        .patch(
            "/api/v2/flags/web/old",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200, "{}", archived.body);
    let all = app
        .send(request(Method::GET, "/sdk/latest-all", Some(&production)))
        .await;
    assert_eq!(all.status, 200, "{}", all.body);
    let flags = all.body["flags"].as_object().unwrap();
    assert_eq!(
        flags.keys().collect::<Vec<_>>(),
        ["beta", "quiet"],
        "live flags in creation order, the archived one left out"
    );
    let beta = &all.body["flags"]["beta"];
    assert_eq!(beta["key"], "beta");
    assert_eq!(beta["on"], true);
    assert_eq!(beta["variations"], json!([true, false]));
    assert_eq!(
        beta["targets"],
        json!([{"values": ["ann"], "variation": 0}])
    );
    assert_eq!(beta["fallthrough"], json!({"variation": 1}));
    assert_eq!(beta["offVariation"], 1);
    let management = app.get("/api/v2/flags/web/beta").await.body;
    assert_eq!(
        beta["version"], management["environments"]["production"]["version"],
        "the SDK version is the environment's version"
    );
    assert_eq!(all.body["flags"]["quiet"].get("offVariation"), None);
    assert_eq!(all.body["segments"]["staff"]["included"], json!(["kim"]));
    assert_eq!(all.body["segments"]["staff"]["version"], 2);
    // The test environment's key reads the test environment (no segments there).
    let other = app
        .send(request(Method::GET, "/sdk/latest-all", Some(&test)))
        .await;
    assert_eq!(other.body["flags"]["beta"]["on"], false);
    assert_eq!(other.body["segments"], json!({}));
    // The parts, and the PHP SDK's routes.
    let cases: [(&str, Value); 7] = [
        ("/sdk/latest-flags", all.body["flags"].clone()),
        ("/sdk/latest-flags/beta", beta.clone()),
        ("/sdk/latest-segments", all.body["segments"].clone()),
        (
            "/sdk/latest-segments/staff",
            all.body["segments"]["staff"].clone(),
        ),
        ("/sdk/flags", all.body["flags"].clone()),
        ("/sdk/flags/quiet", all.body["flags"]["quiet"].clone()),
        ("/sdk/segments/staff", all.body["segments"]["staff"].clone()),
    ];
    for (path, expected) in cases {
        let r = app
            .send(request(Method::GET, path, Some(&production)))
            .await;
        assert_eq!((r.status, &r.body), (200, &expected), "{path}");
        assert!(r.headers.get("etag").is_some(), "{path}");
    }
    for path in [
        "/sdk/latest-flags/old",
        "/sdk/latest-flags/nope",
        "/sdk/latest-segments/nope",
        "/sdk/flags/old",
    ] {
        let r = app
            .send(request(Method::GET, path, Some(&production)))
            .await;
        assert_sdk_error(&r, 404, "not_found");
    }
}

async fn a_poll_is_304_until_something_changes(backend: Backend) {
    let app = spawn(backend).await;
    let (production, _) = configure(&app).await;
    let poll = |etag: Option<String>| {
        let mut req = request(Method::GET, "/sdk/latest-all", Some(&production));
        if let Some(etag) = etag {
            req = req.insert_header(("If-None-Match", etag));
        }
        app.send(req)
    };
    let first = poll(None).await;
    assert_eq!(first.status, 200);
    let etag = first
        .headers
        .get("etag")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert!(etag.starts_with('"') && etag.len() == 34, "strong: {etag}");
    let again = poll(Some(etag.clone())).await;
    assert_eq!(again.status, 304);
    assert_eq!(again.headers.get("etag").unwrap().to_str().unwrap(), etag);
    assert_eq!(again.body, Value::Null);
    let turned = app
        .patch_with(
            "/api/v2/flags/web/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}]}),
        )
        .await;
    assert_eq!(turned.status, 200, "{}", turned.body);
    let changed = poll(Some(etag.clone())).await;
    assert_eq!(changed.status, 200, "a change is seen at once");
    assert_eq!(changed.body["flags"]["beta"]["on"], false);
    assert_ne!(changed.headers.get("etag").unwrap().to_str().unwrap(), etag);
    // gzip when asked, the same tag and the same data.
    let zipped = test::call_service(
        &app.app,
        request(Method::GET, "/sdk/latest-all", Some(&production))
            .insert_header(("Accept-Encoding", "gzip"))
            .to_request(),
    )
    .await;
    assert_eq!(zipped.status(), 200);
    assert_eq!(zipped.headers().get("content-encoding").unwrap(), "gzip");
    let plain = changed.headers.get("etag").unwrap().to_str().unwrap();
    assert_eq!(
        zipped.headers().get("etag").unwrap().to_str().unwrap(),
        format!("{}-gzip\"", plain.trim_end_matches('"')),
        "a strong tag per representation"
    );
    let bytes = test::read_body(zipped).await;
    let mut text = String::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), changed.body);
}

async fn only_an_sdk_key_polls(backend: Backend) {
    let app = spawn(backend).await;
    let (production, _) = configure(&app).await;
    let env = app
        .get("/api/v2/projects/web/environments/production")
        .await
        .body;
    let mobile = env["mobileKey"].as_str().unwrap().to_owned();
    for key in [
        Some(crate::common::OWNER),
        Some(mobile.as_str()),
        Some("sdk-00000000-0000-4000-8000-000000000000"),
        None,
    ] {
        let r = app.send(request(Method::GET, "/sdk/latest-all", key)).await;
        assert_sdk_error(&r, 401, "unauthorized");
    }
    // The management API takes no SDK key.
    let api = app
        .send(request(Method::GET, "/api/v2/flags/web", Some(&production)))
        .await;
    assert_eq!(api.status, 401, "{}", api.body);
    let filtered = app
        .send(request(
            Method::GET,
            "/sdk/latest-all?filter=mobile",
            Some(&production),
        ))
        .await;
    assert_sdk_error(&filtered, 400, "invalid_request");
    let encoded = app
        .send(request(
            Method::GET,
            "/sdk/latest-all?%66ILTER=x",
            Some(&production),
        ))
        .await;
    assert_sdk_error(&encoded, 400, "invalid_request");
    // Other routes and methods under /sdk: JSON too.
    let unknown = app
        .send(request(Method::GET, "/sdk/nothing-here", Some(&production)))
        .await;
    assert_sdk_error(&unknown, 404, "not_found");
    let posted = app
        .send(request(Method::POST, "/sdk/latest-all", Some(&production)))
        .await;
    assert_sdk_error(&posted, 405, "method_not_allowed");
    assert_eq!(posted.headers.get("allow").unwrap(), "GET");
}

async fn a_key_created_again_starts_above_its_deletion(backend: Backend) {
    let app = spawn(backend).await;
    let (production, _) = configure(&app).await;
    let sdk = |path: &'static str| app.send(request(Method::GET, path, Some(&production)));
    let before = sdk("/sdk/latest-flags/beta").await.body["version"]
        .as_i64()
        .unwrap();
    assert_eq!(app.delete("/api/v2/flags/web/beta").await.status, 204);
    app.flag("web", "beta").await;
    let again = sdk("/sdk/latest-flags/beta").await.body["version"]
        .as_i64()
        .unwrap();
    assert!(
        again > before + 1,
        "above the deletion's version ({} > {} + 1)",
        again,
        before
    );
    let management = app.get("/api/v2/flags/web/beta").await.body;
    assert_eq!(management["environments"]["production"]["version"], again);
    // Segments, per environment.
    let staff = "/api/v2/segments/web/production/staff";
    for _ in 0..2 {
        let created = app
            .post(
                "/api/v2/segments/web/production",
                json!({"key": "staff", "name": "Staff"}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
        let renamed = app
            .patch(
                staff,
                json!([{"op": "replace", "path": "/name", "value": "S"}]),
            )
            .await;
        assert_eq!(renamed.status, 200, "{}", renamed.body);
        assert_eq!(app.delete(staff).await.status, 204);
    }
    let last = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "staff", "name": "Staff"}),
        )
        .await;
    assert_eq!(
        last.body["version"], 7,
        "1, 2, deleted at 3; 4, 5, deleted at 6; 7"
    );
    let polled = sdk("/sdk/latest-segments/staff").await;
    assert_eq!(polled.body["version"], 7);
}

on_both_backends!(
    a_key_created_again_starts_above_its_deletion,
    the_environments_data_in_the_sdk_model,
    a_poll_is_304_until_something_changes,
    only_an_sdk_key_polls,
);

/// PostgreSQL refuses connections (an outage, a restart): polls and new streams get 503 with
/// `Retry-After` once the replica cannot vouch for what it keeps, and data again when it is back.
#[actix_web::test]
async fn an_unreachable_store_is_503_with_retry_after_until_it_is_back() {
    let app = spawn(Backend::Postgres).await;
    let (production, _) = configure(&app).await;
    let poll = || app.send(request(Method::GET, "/sdk/latest-all", Some(&production)));
    assert_eq!(poll().await.status, 200);
    app.db.refuse_connections();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let down = loop {
        let answer = poll().await;
        if answer.status != 200 || std::time::Instant::now() > until {
            break answer;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_sdk_error(&down, 503, "service_unavailable");
    assert!(down.headers.get("retry-after").is_some());
    let stream = app
        .send(request(Method::GET, "/all", Some(&production)))
        .await;
    assert_eq!(stream.status, 503, "{}", stream.body);
    app.db.allow_connections();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while poll().await.status != 200 {
        assert!(std::time::Instant::now() < until, "back within 20 s");
        actix_web::rt::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
