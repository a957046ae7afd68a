use serde_json::json;

use crate::common::{spawn, Backend};

async fn create_environment_adds_configs_to_existing_flags(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "a").await;
    app.flag("web", "b").await;
    // Flag b is on in production; the new environment starts off whatever other environments do.
    app.patch(
        "/api/v2/flags/web/b",
        json!([{"op": "replace", "path": "/environments/production/on", "value": true}]),
    )
    .await;
    let created = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "staging", "name": "Staging", "color": "aabbcc", "tags": ["pre"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let env = &created.body;
    assert_eq!(env["key"], "staging");
    assert_eq!(env["color"], "AABBCC");
    assert_eq!(env["defaultTtl"], 0);
    assert_eq!(env["critical"], false);
    assert_eq!(
        env["_links"]["self"]["href"],
        "/api/v2/projects/web/environments/staging"
    );
    assert!(env["apiKey"].as_str().unwrap().starts_with("sdk-"));
    for flag in ["a", "b"] {
        let body = app.get(&format!("/api/v2/flags/web/{flag}")).await.body;
        let config = &body["environments"]["staging"];
        assert_eq!(config["on"], false, "{flag}");
        assert_eq!(config["offVariation"], 1);
        assert_eq!(config["fallthrough"], json!({"variation": 0}));
        assert_eq!(config["_environmentName"], "Staging");
        assert_eq!(config["version"], 1);
    }
    assert_eq!(
        app.get("/api/v2/flags/web/b").await.body["environments"]["production"]["on"],
        true
    );
    app.get("/api/v2/projects/web/environments/staging").await;
    assert_eq!(
        app.get("/api/v2/projects/web/environments/staging")
            .await
            .body["tags"],
        json!(["pre"])
    );
}

async fn create_environment_errors(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.post(
        "/api/v2/projects/web/environments",
        json!({"key": "test", "name": "T", "color": "000000"}),
    )
    .await
    .assert_error(409, "key_exists");
    app.post(
        "/api/v2/projects/nope/environments",
        json!({"key": "x", "name": "X", "color": "000000"}),
    )
    .await
    .assert_error(404, "not_found");
    app.post(
        "/api/v2/projects/web/environments",
        json!({"key": "x", "name": "X", "color": "#000000"}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/projects/web/environments",
        json!({"key": "x", "name": "X"}),
    )
    .await
    .assert_error(400, "invalid_request");
    assert_eq!(
        app.get("/api/v2/projects/web/environments").await.body["totalCount"],
        2
    );
}

async fn list_environments_filters_and_sorts(backend: Backend) {
    let app = spawn(backend).await;
    app.post(
        "/api/v2/projects",
        json!({"key": "p", "name": "P", "environments": [
            {"key": "dev", "name": "Development", "color": "000000", "tags": ["internal"]},
            {"key": "qa", "name": "QA", "color": "000000", "tags": ["internal", "shared"]},
            {"key": "prod", "name": "Production", "color": "000000", "critical": true, "tags": ["shared"]}
        ]}),
    )
    .await;
    let keys = |path: &str| {
        let app = &app;
        let path = path.to_owned();
        async move {
            let resp = app.get(&path).await;
            assert_eq!(resp.status, 200, "{path}: {}", resp.body);
            resp.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["key"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        keys("/api/v2/projects/p/environments").await,
        ["dev", "qa", "prod"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?filter=query:PROD").await,
        ["prod"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?filter=query:d").await,
        ["dev", "prod"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?filter=tags:internal%2Bshared").await,
        ["qa"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?tags=shared").await,
        ["qa", "prod"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?filter=critical:true").await,
        ["prod"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?filter=key:qa").await,
        ["qa"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?filter=name:QA,critical:false").await,
        ["qa"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?sort=name").await,
        ["dev", "prod", "qa"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?sort=-name").await,
        ["qa", "prod", "dev"]
    );
    assert_eq!(
        keys("/api/v2/projects/p/environments?sort=-critical").await,
        ["prod", "dev", "qa"]
    );
    let page = app.get("/api/v2/projects/p/environments?limit=2").await;
    assert_eq!(page.body["totalCount"], 3);
    assert_eq!(page.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        page.body["_links"]["next"]["href"],
        "/api/v2/projects/p/environments?limit=2&offset=2"
    );
    for bad in [
        "filter=color:x",
        "filter=critical:maybe",
        "sort=color",
        "limit=0",
        "limit=2.5",
        "filter=nocolon",
    ] {
        app.get(&format!("/api/v2/projects/p/environments?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
    app.get("/api/v2/projects/nope/environments")
        .await
        .assert_error(404, "not_found");
}

async fn patch_and_delete_environment(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let patched = app
        .patch(
            "/api/v2/projects/web/environments/test",
            json!([{"op": "replace", "path": "/name", "value": "Testing"}, {"op": "replace", "path": "/critical", "value": true}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["name"], "Testing");
    assert_eq!(patched.body["critical"], true);
    // The flag's configuration shows the new name.
    assert_eq!(
        app.get("/api/v2/flags/web/f").await.body["environments"]["test"]["_environmentName"],
        "Testing"
    );
    let api_key = patched.body["apiKey"].clone();
    app.patch(
        "/api/v2/projects/web/environments/test",
        json!([{"op": "replace", "path": "/apiKey", "value": "sdk-x"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/projects/web/environments/test",
        json!([{"op": "replace", "path": "/color", "value": "blue"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch_with(
        "/api/v2/projects/web/environments/test",
        crate::common::SEMANTIC,
        json!({"instructions": []}),
    )
    .await
    .assert_error(415, "unsupported_media_type");
    app.patch("/api/v2/projects/web/environments/nope", json!([]))
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        app.get("/api/v2/projects/web/environments/test").await.body["apiKey"],
        api_key
    );

    assert_eq!(
        app.delete("/api/v2/projects/web/environments/test")
            .await
            .status,
        204
    );
    app.get("/api/v2/projects/web/environments/test")
        .await
        .assert_error(404, "not_found");
    app.delete("/api/v2/projects/web/environments/test")
        .await
        .assert_error(404, "not_found");
    let flag = app.get("/api/v2/flags/web/f").await.body;
    let envs: Vec<&String> = flag["environments"].as_object().unwrap().keys().collect();
    assert_eq!(envs, ["production"]);
}

on_both_backends!(
    create_environment_adds_configs_to_existing_flags,
    create_environment_errors,
    list_environments_filters_and_sorts,
    patch_and_delete_environment,
    reset_sdk_and_mobile_keys,
);

async fn reset_sdk_and_mobile_keys(backend: Backend) {
    let app = spawn(backend).await;
    let project = app.project("web").await;
    let before = &project["environments"][1];
    let (old_sdk, old_mobile) = (
        before["apiKey"].as_str().unwrap().to_owned(),
        before["mobileKey"].as_str().unwrap().to_owned(),
    );
    let reset = app
        .post(
            "/api/v2/projects/web/environments/production/apiKey?expiry=4102444800000",
            json!({}),
        )
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let new_sdk = reset.body["apiKey"].as_str().unwrap().to_owned();
    assert!(new_sdk.starts_with("sdk-") && new_sdk != old_sdk);
    assert_eq!(reset.body["mobileKey"], old_mobile.as_str());
    assert_eq!(
        app.get("/api/v2/projects/web/environments/production")
            .await
            .body["apiKey"],
        new_sdk.as_str()
    );
    let mobile = app
        .post(
            "/api/v2/projects/web/environments/production/mobileKey",
            json!({}),
        )
        .await;
    assert_eq!(mobile.status, 200);
    assert_ne!(mobile.body["mobileKey"], old_mobile.as_str());
    // Old and new keys alike are never access tokens, and the 401 says what they are.
    for (key, kind) in [
        (old_sdk.as_str(), "SDK key"),
        (new_sdk.as_str(), "SDK key"),
        (old_mobile.as_str(), "mobile key"),
    ] {
        let resp = app.get_as(key, "/api/v2/projects").await;
        resp.assert_error(401, "unauthorized");
        assert!(
            resp.body["message"].as_str().unwrap().contains(kind),
            "{}",
            resp.body
        );
    }
    // An expiry in the past retires the old key at once, as no expiry does.
    let before = app
        .get("/api/v2/projects/web/environments/production")
        .await
        .body["apiKey"]
        .clone();
    let reset = app
        .post(
            "/api/v2/projects/web/environments/production/apiKey?expiry=1",
            json!({}),
        )
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    assert_ne!(reset.body["apiKey"], before);
    app.post(
        "/api/v2/projects/web/environments/production/apiKey?expiry=soon",
        json!({}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post("/api/v2/projects/web/environments/nope/apiKey", json!({}))
        .await
        .assert_error(404, "not_found");
    let reader = app.token("reader").await;
    app.post_as(
        &reader,
        "/api/v2/projects/web/environments/production/mobileKey",
        json!({}),
    )
    .await
    .assert_error(403, "forbidden");
}
