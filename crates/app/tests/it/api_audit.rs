//! The audit log: each kind of change writes the right entry, the filters work, secrets never
//! appear.

use serde_json::{json, Value};

use crate::common::{spawn, Backend, SEMANTIC};

fn actions(entry: &Value) -> Vec<String> {
    entry["accesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap().to_owned())
        .collect()
}

async fn every_change_writes_an_entry(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    app.patch_with(
        "/api/v2/flags/web/f",
        SEMANTIC,
        json!({"environmentKey": "production", "comment": "launch", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .await;
    app.patch("/api/v2/flags/web/f", json!({"comment": "rename", "patch": [{"op": "replace", "path": "/name", "value": "Feature"}]})).await;
    app.post(
        "/api/v2/segments/web/test",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    app.post("/api/v2/members", json!([{"email": "ann@example.com"}]))
        .await;
    let token = app.post("/api/v2/tokens", json!({"name": "ci"})).await.body;
    app.post(
        &format!("/api/v2/tokens/{}/reset", token["_id"].as_str().unwrap()),
        json!({}),
    )
    .await;
    app.post("/api/v2/projects/web/environments/test/apiKey", json!({}))
        .await;
    app.delete("/api/v2/flags/web/f").await;

    let list = app.get("/api/v2/auditlog?limit=20").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let items = list.body["items"].as_array().unwrap();
    let kinds: Vec<&str> = items.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "flag",
            "environment",
            "token",
            "token",
            "member",
            "segment",
            "flag",
            "flag",
            "flag",
            "project"
        ],
        "newest first"
    );
    let dates: Vec<i64> = items.iter().map(|e| e["date"].as_i64().unwrap()).collect();
    assert!(dates.windows(2).all(|w| w[0] > w[1]));

    // The project's creation names its environments too.
    assert_eq!(
        actions(&items[9]),
        ["createProject", "createEnvironment", "createEnvironment"]
    );
    assert_eq!(items[9]["accesses"][0]["resource"], "proj/web");
    // Turning the flag on in production.
    let on = &items[7];
    assert_eq!(actions(on), ["updateOn"]);
    assert_eq!(
        on["accesses"][0]["resource"],
        "proj/web:env/production:flag/f"
    );
    assert_eq!(on["comment"], "launch");
    assert_eq!(on["member"]["email"], "owner@example.com");
    assert_eq!(on["token"]["name"], "owner");
    assert!(
        on.get("delta").is_none(),
        "the listing has no detail fields"
    );
    // Renaming it, by JSON Patch.
    assert_eq!(actions(&items[6]), ["updateName"]);
    assert_eq!(items[6]["accesses"][0]["resource"], "proj/web:env/*:flag/f");
    assert_eq!(actions(&items[0]), ["deleteFlag"]);
    assert_eq!(actions(&items[2]), ["resetAccessToken"]);
    assert_eq!(actions(&items[1]), ["updateApiKey"]);

    // The detail view: delta, before and after.
    let detail = app
        .get(&format!("/api/v2/auditlog/{}", on["_id"].as_str().unwrap()))
        .await
        .body;
    assert_eq!(detail["delta"]["instructions"][0]["kind"], "turnFlagOn");
    assert_eq!(
        detail["previousVersion"]["environments"]["production"]["on"],
        false
    );
    assert_eq!(
        detail["currentVersion"]["environments"]["production"]["on"],
        true
    );
    let rename = app
        .get(&format!(
            "/api/v2/auditlog/{}",
            items[6]["_id"].as_str().unwrap()
        ))
        .await
        .body;
    assert_eq!(rename["delta"][0]["path"], "/name");
    app.get("/api/v2/auditlog/000000000000000000000000")
        .await
        .assert_error(404, "not_found");

    // Secrets never appear: not the token's, not the environment's keys.
    let secret = token["token"].as_str().unwrap();
    for item in items {
        let detail = app
            .get(&format!(
                "/api/v2/auditlog/{}",
                item["_id"].as_str().unwrap()
            ))
            .await
            .body
            .to_string();
        assert!(!detail.contains(secret), "token secret in {detail}");
        let sdk_keys = detail.matches("sdk-").count();
        let masked = detail.matches("sdk-****").count();
        assert_eq!(sdk_keys, masked, "every SDK key is masked: {detail}");
    }
}

async fn audit_filters(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.project("api").await;
    for key in ["a", "b"] {
        app.flag("web", key).await;
    }
    app.patch_with(
        "/api/v2/flags/web/a",
        SEMANTIC,
        json!({"environmentKey": "test", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .await;
    app.patch_with(
        "/api/v2/flags/web/b",
        SEMANTIC,
        json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .await;
    let names = |path: &str| {
        let app = &app;
        let path = path.to_owned();
        async move {
            let resp = app.get(&path).await;
            assert_eq!(resp.status, 200, "{path}: {}", resp.body);
            resp.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{}:{}",
                        e["kind"].as_str().unwrap(),
                        e["name"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        names("/api/v2/auditlog?spec=proj/*:env/production:flag/*").await,
        ["flag:b"]
    );
    assert_eq!(
        names("/api/v2/auditlog?spec=proj/web:env/*:flag/a").await,
        ["flag:a", "flag:a"]
    );
    assert_eq!(
        names("/api/v2/auditlog?spec=proj/*").await,
        ["project:api", "project:web"],
        "parts line up: flags are not projects"
    );
    assert_eq!(names("/api/v2/auditlog?q=API").await, ["project:api"]);
    // A spec is a specifier of the statements' grammar (and bounds).
    for bad in ["proj/*:", "garbage", "proj/*a*a*a*a*a*a*a*a*a"] {
        app.get(&format!("/api/v2/auditlog?spec={bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
    assert_eq!(
        names("/api/v2/auditlog?limit=2").await,
        ["flag:b", "flag:a"]
    );
    let all = app.get("/api/v2/auditlog").await.body;
    let items = all["items"].as_array().unwrap();
    assert_eq!(items.len(), 6);
    assert!(all["_links"].get("next").is_none());
    let middle = items[2]["date"].as_i64().unwrap();
    assert_eq!(
        names(&format!("/api/v2/auditlog?before={middle}"))
            .await
            .len(),
        3
    );
    assert_eq!(
        names(&format!("/api/v2/auditlog?after={middle}"))
            .await
            .len(),
        2
    );
    // Paging by `next`.
    let first = app.get("/api/v2/auditlog?limit=4").await.body;
    let next = first["_links"]["next"]["href"].as_str().unwrap().to_owned();
    let rest = app.get(&next).await.body;
    assert_eq!(rest["items"].as_array().unwrap().len(), 2);
    assert_eq!(rest["items"][1]["name"], "web");
    for bad in ["limit=21", "limit=0", "before=yesterday"] {
        app.get(&format!("/api/v2/auditlog?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
}

/// Audit entries name the caller as it is now: after the member renames itself (through this
/// replica, which then verifies its token again), the next change's entry carries the new name
/// and email-based description, not the ones of the cached caller.
async fn entries_name_the_caller_as_renamed(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let renamed = app
        .patch(
            "/api/v2/members/me",
            json!([{"op": "add", "path": "/firstName", "value": "Renamed"}]),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    let patched = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/name", "value": "G"}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let list = app.get("/api/v2/auditlog?limit=1").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let entry = &list.body["items"][0];
    assert_eq!(entry["kind"], "flag", "{entry}");
    assert_eq!(entry["member"]["firstName"], "Renamed", "{entry}");
}

/// The `delta` of a semantic patch is the body as sent: a flag-wide patch sent without
/// `environmentKey` records none (no `null` the client never sent).
async fn a_semantic_delta_is_what_was_sent(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    for body in [
        json!({"instructions": [{"kind": "updateName", "value": "X"}]}),
        json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
    ] {
        let patched = app
            .patch_with("/api/v2/flags/web/f", SEMANTIC, body.clone())
            .await;
        assert_eq!(patched.status, 200, "{}", patched.body);
        let list = app.get("/api/v2/auditlog?limit=1").await;
        let id = list.body["items"][0]["_id"].as_str().unwrap().to_owned();
        let detail = app.get(&format!("/api/v2/auditlog/{id}")).await.body;
        assert_eq!(detail["delta"], body, "{detail}");
    }
}

/// Issue 32, item 8: a caller allowed one project pages past the newest entries of others.
async fn a_caller_with_custom_roles_pages_past_what_it_may_not_read(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "old").await;
    app.project("blog").await;
    for i in 0..12 {
        app.flag("blog", &format!("f{i}")).await;
    }
    let auditor = crate::api_probes::shop_reader(&app).await;
    let mut path = "/api/v2/auditlog?limit=5".to_owned();
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let page = app.get_as(&auditor, &path).await;
        assert_eq!(page.status, 200, "{}", page.body);
        pages += 1;
        for item in page.body["items"].as_array().unwrap() {
            seen.push(item["target"]["name"].as_str().unwrap().to_owned());
        }
        match page.body["_links"]["next"]["href"].as_str() {
            Some(next) => path = next.to_owned(),
            None => break,
        }
        assert!(pages < 20);
    }
    assert!(
        pages > 2,
        "the first pages held only others' entries: {pages}"
    );
    assert!(seen.contains(&"old".to_owned()), "{seen:?}");
    assert!(seen.iter().all(|name| !name.starts_with('f')), "{seen:?}");
}

on_both_backends!(
    a_caller_with_custom_roles_pages_past_what_it_may_not_read,
    every_change_writes_an_entry,
    audit_filters,
    entries_name_the_caller_as_renamed,
    a_semantic_delta_is_what_was_sent
);
