use actix_web::http::Method;
use serde_json::json;

use crate::common::{request, spawn, Backend, OWNER};

async fn requests_need_a_valid_token(backend: Backend) {
    let app = spawn(backend).await;
    app.send(request(Method::GET, "/api/v2/projects", None))
        .await
        .assert_error(401, "unauthorized");
    app.send(request(
        Method::GET,
        "/api/v2/projects",
        Some("api-00000000-0000-4000-8000-000000000000"),
    ))
    .await
    .assert_error(401, "unauthorized");
    app.send(
        request(Method::POST, "/api/v2/projects", None).set_json(json!({"key": "x", "name": "X"})),
    )
    .await
    .assert_error(401, "unauthorized");
    assert_eq!(
        app.get("/api/v2/projects").await.body["totalCount"],
        0,
        "nothing was created"
    );
    let bearer = app
        .send(request(
            Method::GET,
            "/api/v2/projects",
            Some(&format!("Bearer {OWNER}")),
        ))
        .await;
    assert_eq!(bearer.status, 200);
}

async fn environment_keys_are_not_access_tokens(backend: Backend) {
    let app = spawn(backend).await;
    let project = app.project("web").await;
    let env = &project["environments"][0];
    for (key, kind) in [
        ("apiKey", "SDK key"),
        ("mobileKey", "mobile key"),
        ("_id", "client-side ID"),
    ] {
        let secret = env[key].as_str().unwrap();
        let resp = app.get_as(secret, "/api/v2/projects").await;
        resp.assert_error(401, "unauthorized");
        let message = resp.body["message"].as_str().unwrap();
        assert!(message.contains(kind), "{key}: {message}");
    }
}

async fn roles_limit_what_tokens_do(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let reader = app.token("reader").await;
    let writer = app.token("writer").await;

    // Readers read and write nothing.
    assert_eq!(
        app.get_as(&reader, "/api/v2/projects/web").await.status,
        200
    );
    assert_eq!(app.get_as(&reader, "/api/v2/flags/web/f").await.status, 200);
    app.post_as(
        &reader,
        "/api/v2/projects",
        json!({"key": "r", "name": "R"}),
    )
    .await
    .assert_error(403, "forbidden");
    app.post_as(
        &reader,
        "/api/v2/flags/web",
        json!({"key": "g", "name": "G"}),
    )
    .await
    .assert_error(403, "forbidden");
    app.patch_as(
        &reader,
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/environments/test/on", "value": true}]),
    )
    .await
    .assert_error(403, "forbidden");
    app.delete_as(&reader, "/api/v2/projects/web")
        .await
        .assert_error(403, "forbidden");
    app.post_as(
        &reader,
        "/api/v2/projects/web/environments",
        json!({"key": "e", "name": "E", "color": "000000"}),
    )
    .await
    .assert_error(403, "forbidden");
    app.get_as(&reader, "/api/v2/tokens")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(
        app.get("/api/v2/flags/web/f").await.body["environments"]["test"]["on"],
        false
    );

    // Writers change projects, environments and flags, but not tokens.
    assert_eq!(
        app.post_as(
            &writer,
            "/api/v2/projects",
            json!({"key": "w", "name": "W"})
        )
        .await
        .status,
        201
    );
    assert_eq!(
        app.patch_as(
            &writer,
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/environments/test/on", "value": true}])
        )
        .await
        .status,
        200
    );
    app.post_as(&writer, "/api/v2/tokens", json!({"role": "reader"}))
        .await
        .assert_error(403, "forbidden");
    app.get_as(&writer, "/api/v2/tokens")
        .await
        .assert_error(403, "forbidden");
}

on_both_backends!(
    requests_need_a_valid_token,
    environment_keys_are_not_access_tokens,
    roles_limit_what_tokens_do
);
