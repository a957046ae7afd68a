use serde_json::json;

use crate::common::{spawn, Backend};

async fn create_project_with_default_environments(backend: Backend) {
    let app = spawn(backend).await;
    let created = app
        .post(
            "/api/v2/projects",
            json!({"key": "web", "name": "Web", "tags": ["b", "a"]}),
        )
        .await;
    assert_eq!(created.status, 201);
    let body = &created.body;
    assert_eq!(body["key"], "web");
    assert_eq!(body["name"], "Web");
    assert_eq!(body["tags"], json!(["a", "b"]));
    assert_eq!(body["includeInSnippetByDefault"], false);
    assert_eq!(
        body["defaultClientSideAvailability"],
        json!({"usingMobileKey": true, "usingEnvironmentId": false})
    );
    assert_eq!(body["_links"]["self"]["href"], "/api/v2/projects/web");
    let id = body["_id"].as_str().unwrap();
    assert_eq!(id.len(), 24);
    assert!(id
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    let envs = body["environments"].as_array().unwrap();
    let keys: Vec<&str> = envs.iter().map(|e| e["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["test", "production"]);
    for env in envs {
        assert!(env["apiKey"].as_str().unwrap().starts_with("sdk-"));
        assert!(env["mobileKey"].as_str().unwrap().starts_with("mob-"));
        assert_eq!(env["_id"].as_str().unwrap().len(), 24);
    }

    // Stored: GET returns it, without environments unless expanded.
    let fetched = app.get("/api/v2/projects/web").await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.body["_id"], body["_id"]);
    assert!(fetched.body.get("environments").is_none());
    let expanded = app.get("/api/v2/projects/web?expand=environments").await;
    assert_eq!(expanded.body["environments"]["totalCount"], 2);
    assert_eq!(
        expanded.body["environments"]["items"][1]["key"],
        "production"
    );
}

async fn create_project_with_named_environments(backend: Backend) {
    let app = spawn(backend).await;
    let created = app
        .post(
            "/api/v2/projects",
            json!({"key": "api", "name": "API", "environments": [
                {"key": "dev", "name": "Dev", "color": "00ff00"},
                {"key": "prod", "name": "Prod", "color": "FF0000", "critical": true, "tags": ["live"]}
            ]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let envs = created.body["environments"].as_array().unwrap();
    assert_eq!(envs.len(), 2);
    assert_eq!(envs[0]["color"], "00FF00");
    assert_eq!(envs[1]["critical"], true);
    assert_eq!(envs[1]["tags"], json!(["live"]));
    let list = app.get("/api/v2/projects/api/environments").await;
    assert_eq!(list.body["totalCount"], 2);
}

async fn create_project_errors(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.post("/api/v2/projects", json!({"key": "web", "name": "Again"}))
        .await
        .assert_error(409, "key_exists");
    let invalid = app
        .post("/api/v2/projects", json!({"key": "-bad", "name": ""}))
        .await;
    invalid.assert_error(400, "invalid_request");
    let attributes: Vec<&str> = invalid.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["attribute"].as_str().unwrap())
        .collect();
    assert_eq!(attributes, ["key", "name"]);
    app.post("/api/v2/projects", json!({"key": "x", "name": "X", "environments": [{"key": "a", "name": "A", "color": "red"}]}))
        .await
        .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/projects",
        json!({"key": "x", "name": "X", "colour": 1}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post("/api/v2/projects", json!({"name": "no key"}))
        .await
        .assert_error(400, "invalid_request");
    // Nothing of the failed creates was stored.
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
    app.get("/api/v2/projects/x")
        .await
        .assert_error(404, "not_found");
}

async fn list_projects_filters_sorts_and_pages(backend: Backend) {
    let app = spawn(backend).await;
    for (key, name, tags) in [
        ("alpha", "Zeta site", json!(["web", "eu"])),
        ("beta", "Mobile", json!(["mobile"])),
        ("gamma", "Web shop", json!(["web"])),
    ] {
        let created = app
            .post(
                "/api/v2/projects",
                json!({"key": key, "name": name, "tags": tags}),
            )
            .await;
        assert_eq!(created.status, 201);
    }
    let keys = |body: &serde_json::Value| -> Vec<String> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["key"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = app.get("/api/v2/projects").await;
    assert_eq!(keys(&all.body), ["alpha", "beta", "gamma"]);
    assert_eq!(all.body["totalCount"], 3);
    assert_eq!(
        all.body["_links"]["self"]["href"],
        "/api/v2/projects?limit=20&offset=0"
    );

    assert_eq!(
        keys(&app.get("/api/v2/projects?filter=query:WEB").await.body),
        ["gamma"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/projects?filter=query:a").await.body),
        ["alpha", "beta", "gamma"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/projects?filter=tags:web%2Beu").await.body),
        ["alpha"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/projects?filter=tags:web").await.body),
        ["alpha", "gamma"]
    );
    assert_eq!(
        keys(
            &app.get("/api/v2/projects?filter=keys:beta%7Cgamma")
                .await
                .body
        ),
        ["beta", "gamma"]
    );
    assert_eq!(
        keys(
            &app.get("/api/v2/projects?filter=tags:web,query:shop")
                .await
                .body
        ),
        ["gamma"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/projects?sort=name").await.body),
        ["beta", "gamma", "alpha"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/projects?sort=-createdOn").await.body),
        ["gamma", "beta", "alpha"]
    );

    let page = app.get("/api/v2/projects?limit=1&offset=1").await;
    assert_eq!(keys(&page.body), ["beta"]);
    assert_eq!(page.body["totalCount"], 3);
    let links = &page.body["_links"];
    assert_eq!(links["first"]["href"], "/api/v2/projects?limit=1&offset=0");
    assert_eq!(links["prev"]["href"], "/api/v2/projects?limit=1&offset=0");
    assert_eq!(links["next"]["href"], "/api/v2/projects?limit=1&offset=2");
    assert_eq!(links["last"]["href"], "/api/v2/projects?limit=1&offset=2");

    let expanded = app
        .get("/api/v2/projects?expand=environments&limit=2")
        .await;
    assert_eq!(expanded.body["items"][0]["environments"]["totalCount"], 2);
    assert_eq!(
        expanded.body["items"][1]["environments"]["items"][0]["key"],
        "test"
    );

    for bad in [
        "limit=0",
        "limit=-1",
        "limit=x",
        "offset=-1",
        "filter=color:red",
        "filter=oops",
        "sort=size",
    ] {
        app.get(&format!("/api/v2/projects?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
}

async fn patch_project(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let patched = app
        .patch(
            "/api/v2/projects/web",
            json!([{"op": "replace", "path": "/name", "value": "Website"}, {"op": "add", "path": "/tags/-", "value": "new"}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["name"], "Website");
    assert_eq!(patched.body["tags"], json!(["new"]));
    assert_eq!(patched.body["environments"].as_array().unwrap().len(), 2);
    let stored = app.get("/api/v2/projects/web").await;
    assert_eq!(stored.body["name"], "Website");
    assert_eq!(
        app.get("/api/v2/projects?filter=tags:new").await.body["totalCount"],
        1
    );

    // The comment form.
    let commented = app
        .patch(
            "/api/v2/projects/web",
            json!({"comment": "why", "patch": [{"op": "replace", "path": "/name", "value": "W"}]}),
        )
        .await;
    assert_eq!(commented.body["name"], "W");

    // Read-only paths, failed tests, inapplicable ops and invalid results change nothing.
    app.patch(
        "/api/v2/projects/web",
        json!([{"op": "replace", "path": "/key", "value": "x"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/projects/web",
        json!([{"op": "replace", "path": "/_id", "value": "x"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/projects/web",
        json!([{"op": "replace", "path": "/name", "value": "Changed"}, {"op": "test", "path": "/name", "value": "nope"}]),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    app.patch(
        "/api/v2/projects/web",
        json!([{"op": "remove", "path": "/nothing"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/projects/web",
        json!([{"op": "replace", "path": "/name", "value": ""}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch("/api/v2/projects/web", json!({"op": "replace"}))
        .await
        .assert_error(400, "invalid_request");
    app.patch("/api/v2/projects/nope", json!([]))
        .await
        .assert_error(404, "not_found");
    assert_eq!(app.get("/api/v2/projects/web").await.body["name"], "W");
}

async fn delete_project_removes_everything(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.project("other").await;
    app.flag("web", "f").await;
    app.flag("other", "f").await;
    let deleted = app.delete("/api/v2/projects/web").await;
    assert_eq!(deleted.status, 204);
    assert!(deleted.body.is_null());
    app.get("/api/v2/projects/web")
        .await
        .assert_error(404, "not_found");
    app.get("/api/v2/flags/web/f")
        .await
        .assert_error(404, "not_found");
    app.delete("/api/v2/projects/web")
        .await
        .assert_error(404, "not_found");
    // A new project with the same key starts empty; the other project is untouched.
    app.project("web").await;
    app.get("/api/v2/flags/web/f")
        .await
        .assert_error(404, "not_found");
    assert_eq!(app.get("/api/v2/flags/other/f").await.status, 200);
}

on_both_backends!(
    create_project_with_default_environments,
    create_project_with_named_environments,
    create_project_errors,
    list_projects_filters_sorts_and_pages,
    patch_project,
    delete_project_removes_everything,
);
