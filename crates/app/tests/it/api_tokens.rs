use serde_json::json;

use crate::common::{spawn, Backend};

async fn create_and_use_a_token(backend: Backend) {
    let app = spawn(backend).await;
    let created = app
        .post("/api/v2/tokens", json!({"name": "ci", "description": "for CI", "role": "writer", "serviceToken": true, "defaultApiVersion": 20220603}))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let body = &created.body;
    let secret = body["token"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("api-") && secret.len() == 40, "{secret}");
    assert_eq!(body["name"], "ci");
    assert_eq!(body["role"], "writer");
    assert_eq!(body["serviceToken"], true);
    assert_eq!(body["defaultApiVersion"], 20220603);
    let id = body["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        body["_links"]["self"]["href"],
        format!("/api/v2/tokens/{id}")
    );

    // The secret works, with the token's default API version.
    let versions = app.get_as(&secret, "/api/v2/versions").await;
    assert_eq!(versions.status, 200);
    assert_eq!(versions.body["currentVersion"], 20220603);
    assert_eq!(versions.header("svc-api-version"), Some("20220603"));

    // Afterwards only the last four characters are shown.
    let fetched = app.get(&format!("/api/v2/tokens/{id}")).await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.body["token"], secret[secret.len() - 4..]);
    let list = app.get("/api/v2/tokens").await;
    assert_eq!(
        list.body["totalCount"], 2,
        "the owner's bootstrap token and the new one"
    );
    assert!(list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["token"].as_str().unwrap().len() == 4));

    // Deleted tokens stop working at once.
    assert_eq!(
        app.delete(&format!("/api/v2/tokens/{id}")).await.status,
        204
    );
    app.get_as(&secret, "/api/v2/projects")
        .await
        .assert_error(401, "unauthorized");
    app.get(&format!("/api/v2/tokens/{id}"))
        .await
        .assert_error(404, "not_found");
    app.delete(&format!("/api/v2/tokens/{id}"))
        .await
        .assert_error(404, "not_found");
}

async fn token_errors(backend: Backend) {
    let app = spawn(backend).await;
    for body in [
        json!({"role": "owner"}),
        json!({"role": "superuser"}),
        json!({"defaultApiVersion": 20200101}),
        json!({"unknown": true}),
    ] {
        app.post("/api/v2/tokens", body)
            .await
            .assert_error(400, "invalid_request");
    }
    let list = app.get("/api/v2/tokens?limit=200").await;
    list.assert_error(400, "invalid_request");
    assert_eq!(app.get("/api/v2/tokens").await.body["totalCount"], 1);
    // A reader's token defaults to reader and cannot write.
    let created = app.post("/api/v2/tokens", json!({})).await;
    assert_eq!(created.body["role"], "reader");
}

async fn tokens_list_pages_by_25(backend: Backend) {
    let app = spawn(backend).await;
    for i in 0..26 {
        assert_eq!(
            app.post("/api/v2/tokens", json!({"name": format!("t{i}")}))
                .await
                .status,
            201
        );
    }
    let first = app.get("/api/v2/tokens").await;
    assert_eq!(first.body["items"].as_array().unwrap().len(), 25);
    assert_eq!(first.body["totalCount"], 27);
    assert_eq!(
        first.body["_links"]["next"]["href"],
        "/api/v2/tokens?limit=25&offset=25"
    );
}

on_both_backends!(
    create_and_use_a_token,
    token_errors,
    tokens_list_pages_by_25
);
