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
    // Above 100 the page is capped, not refused.
    let list = app.get("/api/v2/tokens?limit=200").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(
        list.body["_links"]["self"]["href"],
        "/api/v2/tokens?limit=100&offset=0"
    );
    app.get("/api/v2/tokens?limit=0")
        .await
        .assert_error(400, "invalid_request");
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

async fn patch_reset_and_show_all(backend: Backend) {
    let app = spawn(backend).await;
    let created = app
        .post("/api/v2/tokens", json!({"name": "ci", "role": "reader"}))
        .await
        .body;
    let id = created["_id"].as_str().unwrap().to_owned();
    let first = created["token"].as_str().unwrap().to_owned();

    let patched = app
        .patch(
            &format!("/api/v2/tokens/{id}"),
            json!([
            {"op": "replace", "path": "/name", "value": "deploys"},
            {"op": "replace", "path": "/role", "value": "writer"},
            {"op": "replace", "path": "/defaultApiVersion", "value": 20220603}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        (patched.body["name"].as_str(), patched.body["role"].as_str()),
        (Some("deploys"), Some("writer"))
    );
    assert_eq!(patched.body["token"], first[first.len() - 4..]);
    // The new role applies at once.
    assert_eq!(
        app.post_as(&first, "/api/v2/projects", json!({"key": "p", "name": "P"}))
            .await
            .status,
        201
    );
    for (path, value) in [
        ("/role", json!("owner")),
        ("/serviceToken", json!(true)),
        ("/defaultApiVersion", json!(1)),
    ] {
        app.patch(
            &format!("/api/v2/tokens/{id}"),
            json!([{"op": "replace", "path": path, "value": value}]),
        )
        .await
        .assert_error(422, "patch_failed");
    }
    app.patch("/api/v2/tokens/000000000000000000000000", json!([]))
        .await
        .assert_error(404, "not_found");

    // Reset with an expiry: both secrets work until then.
    let future = 4_102_444_800_000_i64; // 2100-01-01
    let reset = app
        .post(
            &format!("/api/v2/tokens/{id}/reset?expiry={future}"),
            json!({}),
        )
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let second = reset.body["token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert_eq!(app.get_as(&first, "/api/v2/projects").await.status, 200);
    assert_eq!(app.get_as(&second, "/api/v2/projects").await.status, 200);
    // Reset without an expiry: the old secret stops at once.
    let third = app
        .post(&format!("/api/v2/tokens/{id}/reset"), json!({}))
        .await
        .body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    app.get_as(&second, "/api/v2/projects")
        .await
        .assert_error(401, "unauthorized");
    assert_eq!(app.get_as(&third, "/api/v2/projects").await.status, 200);
    // An expiry in the past means "at once", as no expiry does.
    let past = app
        .post(&format!("/api/v2/tokens/{id}/reset?expiry=5"), json!({}))
        .await;
    assert_eq!(past.status, 200, "{}", past.body);
    let fourth = past.body["token"].as_str().unwrap().to_owned();
    app.get_as(&third, "/api/v2/projects")
        .await
        .assert_error(401, "unauthorized");
    assert_eq!(app.get_as(&fourth, "/api/v2/projects").await.status, 200);
    app.post(&format!("/api/v2/tokens/{id}/reset?expiry=soon"), json!({}))
        .await
        .assert_error(400, "invalid_request");

    // lastUsed is recorded.
    let used = app.get(&format!("/api/v2/tokens/{id}")).await.body;
    assert!(
        used["lastUsed"].as_i64().unwrap() > 1_600_000_000_000,
        "{used}"
    );

    // showAll lists other members' personal tokens too.
    let ann = app.member("ann@example.com", "admin").await;
    app.token_of_member(&ann, domain::role::Role::Reader);
    let mine = app.get("/api/v2/tokens").await.body["totalCount"]
        .as_u64()
        .unwrap();
    let all = app.get("/api/v2/tokens?showAll=true").await.body["totalCount"]
        .as_u64()
        .unwrap();
    assert_eq!(all, mine + 1);
}

async fn personal_tokens_stay_within_their_member_role(backend: Backend) {
    let app = spawn(backend).await;
    let ann = app.member("ann@example.com", "admin").await;
    let ann_token = app.token_of_member(&ann, domain::role::Role::Admin);
    let created = app
        .post_as(
            &ann_token,
            "/api/v2/tokens",
            json!({"name": "mine", "role": "reader"}),
        )
        .await
        .body;
    let id = created["_id"].as_str().unwrap().to_owned();
    app.patch(
        &format!("/api/v2/members/{ann}"),
        json!([{"op": "replace", "path": "/role", "value": "writer"}]),
    )
    .await;
    // Ann is a writer now: her personal token cannot become admin, even by the owner.
    app.patch(
        &format!("/api/v2/tokens/{id}"),
        json!([{"op": "replace", "path": "/role", "value": "admin"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    assert_eq!(
        app.patch(
            &format!("/api/v2/tokens/{id}"),
            json!([{"op": "replace", "path": "/role", "value": "writer"}])
        )
        .await
        .status,
        200
    );
}

on_both_backends!(
    create_and_use_a_token,
    token_errors,
    tokens_list_pages_by_25,
    patch_reset_and_show_all,
    personal_tokens_stay_within_their_member_role,
);
