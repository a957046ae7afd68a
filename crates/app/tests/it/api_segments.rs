//! Segments over HTTP, and flags' references to them.

use serde_json::json;

use crate::common::{spawn, Backend, SEMANTIC};

async fn create_list_and_read_segments(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let created = app
        .post("/api/v2/segments/web/production", json!({"key": "beta", "name": "Beta testers", "description": "Early access", "tags": ["qa"]}))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let body = &created.body;
    assert_eq!(body["key"], "beta");
    assert_eq!(body["version"], 1);
    assert_eq!(body["deleted"], false);
    assert_eq!(body["generation"], 0);
    assert_eq!(body["included"], json!([]));
    assert_eq!(body["rules"], json!([]));
    assert_eq!(
        body["_links"]["self"]["href"],
        "/api/v2/segments/web/production/beta"
    );
    let fetched = app.get("/api/v2/segments/web/production/beta").await;
    assert_eq!(fetched.status, 200);
    assert_eq!(fetched.body["_flags"], json!([]));
    assert_eq!(fetched.body["name"], "Beta testers");
    // Segments belong to one environment.
    app.get("/api/v2/segments/web/test/beta")
        .await
        .assert_error(404, "not_found");
    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Again"}),
    )
    .await
    .assert_error(409, "key_exists");
    app.post(
        "/api/v2/segments/web/staging",
        json!({"key": "x", "name": "X"}),
    )
    .await
    .assert_error(404, "not_found");
    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "bad key", "name": "X"}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "big", "name": "X", "unbounded": true}),
    )
    .await
    .assert_error(400, "invalid_request");

    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "vip", "name": "Account VIPs", "tags": ["qa", "sales"]}),
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
                .map(|s| s["key"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        keys("/api/v2/segments/web/production").await,
        ["beta", "vip"]
    );
    assert_eq!(
        keys("/api/v2/segments/web/production?filter=query:early").await,
        ["beta"]
    );
    assert_eq!(
        keys("/api/v2/segments/web/production?filter=tags:qa%2Bsales").await,
        ["vip"]
    );
    assert_eq!(
        keys("/api/v2/segments/web/production?sort=-name").await,
        ["beta", "vip"]
    );
    assert_eq!(
        keys("/api/v2/segments/web/production?sort=-creationDate&limit=1").await,
        ["vip"]
    );
    assert_eq!(
        keys("/api/v2/segments/web/test").await,
        Vec::<String>::new()
    );
    for bad in ["sort=size", "filter=owner:x", "limit=0"] {
        app.get(&format!("/api/v2/segments/web/production?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
}

async fn patch_segments_three_ways(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    let semantic = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addIncludedUsers", "values": ["alice"]},
                {"kind": "addExcludedTargets", "contextKind": "org", "values": ["acme"]},
                {"kind": "addRule", "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"]}], "weight": 50000}]}),
        )
        .await;
    assert_eq!(semantic.status, 200, "{}", semantic.body);
    assert_eq!(semantic.body["included"], json!(["alice"]));
    assert_eq!(
        semantic.body["excludedContexts"],
        json!([{"values": ["acme"], "contextKind": "org"}])
    );
    assert_eq!(semantic.body["rules"][0]["weight"], 50000);
    assert_eq!(semantic.body["version"], 2);
    let json_patch = app
        .patch(
            "/api/v2/segments/web/production/beta",
            json!([{"op": "add", "path": "/excluded/-", "value": "bob"}]),
        )
        .await;
    assert_eq!(json_patch.body["excluded"], json!(["bob"]));
    let merged = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            "application/merge-patch+json",
            json!({"description": "d"}),
        )
        .await;
    assert_eq!(merged.body["description"], "d");
    assert_eq!(merged.body["version"], 4);
    // A GET body sent back (with what reads derive: `_flags`, `_access`) changes nothing.
    let current = app.get("/api/v2/segments/web/production/beta").await.body;
    assert!(current.get("_flags").is_some(), "{current}");
    let sent_back = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            "application/merge-patch+json",
            current.clone(),
        )
        .await;
    assert_eq!(sent_back.status, 200, "{}", sent_back.body);
    assert_eq!(sent_back.body["version"], 4, "{}", sent_back.body);
    assert_eq!(
        app.get("/api/v2/segments/web/production/beta").await.body["excluded"],
        json!(["bob"])
    );

    let before = app.get("/api/v2/segments/web/production/beta").await.body;
    app.patch(
        "/api/v2/segments/web/production/beta",
        json!([{"op": "add", "path": "/excluded/-", "value": "alice"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/segments/web/production/beta",
        json!([{"op": "replace", "path": "/version", "value": 9}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch_with(
        "/api/v2/segments/web/production/beta",
        SEMANTIC,
        json!({"environmentKey": "test", "instructions": [{"kind": "updateName", "value": "x"}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch_with(
        "/api/v2/segments/web/production/beta",
        SEMANTIC,
        json!({"instructions": [{"kind": "updateName", "value": "x"}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch_with(
        "/api/v2/segments/web/production/beta",
        SEMANTIC,
        json!({"environmentKey": "production", "instructions": [{"kind": "removeRule"}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch("/api/v2/segments/web/production/nope", json!([]))
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        app.get("/api/v2/segments/web/production/beta").await.body,
        before
    );
}

async fn flags_use_segments(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag = app.flag("web", "f").await;
    let on = flag["variations"][0]["_id"].as_str().unwrap().to_owned();
    let rule = |segment: &str| {
        json!({"environmentKey": "production", "instructions": [{"kind": "addRule", "variationId": on,
            "clauses": [{"attribute": "segmentMatch", "op": "segmentMatch", "values": [segment]}]}]})
    };
    // A clause cannot name a segment that does not exist in that environment.
    let missing = app
        .patch_with("/api/v2/flags/web/f", SEMANTIC, rule("beta"))
        .await;
    missing.assert_error(400, "invalid_request");
    assert!(
        missing.body["message"]
            .as_str()
            .unwrap()
            .contains("'beta' in 'production'"),
        "{}",
        missing.body
    );
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "add", "path": "/environments/test/rules/-", "value": {"variation": 0, "clauses": [{"attribute": "s", "op": "segmentMatch", "values": ["beta"]}]}}]),
    )
    .await
    .assert_error(422, "patch_failed");

    app.post(
        "/api/v2/segments/web/production",
        json!({"key": "beta", "name": "Beta"}),
    )
    .await;
    assert_eq!(
        app.patch_with("/api/v2/flags/web/f", SEMANTIC, rule("beta"))
            .await
            .status,
        200
    );
    let segment = app.get("/api/v2/segments/web/production/beta").await;
    assert_eq!(segment.body["_flags"][0]["key"], "f");
    assert_eq!(
        segment.body["_flags"][0]["_links"]["self"]["href"],
        "/api/v2/flags/web/f"
    );
    // In use: the segment cannot be deleted until the rule is gone.
    app.delete("/api/v2/segments/web/production/beta")
        .await
        .assert_error(409, "optimistic_locking_error");
    let rule_id = app.get("/api/v2/flags/web/f").await.body["environments"]["production"]["rules"]
        [0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.patch_with("/api/v2/flags/web/f", SEMANTIC, json!({"environmentKey": "production", "instructions": [{"kind": "removeRule", "ruleId": rule_id}]}))
        .await;
    assert_eq!(
        app.get("/api/v2/segments/web/production/beta").await.body["_flags"],
        json!([])
    );
    assert_eq!(
        app.delete("/api/v2/segments/web/production/beta")
            .await
            .status,
        204
    );
    app.get("/api/v2/segments/web/production/beta")
        .await
        .assert_error(404, "not_found");
    app.delete("/api/v2/segments/web/production/beta")
        .await
        .assert_error(404, "not_found");
}

/// A JSON Patch that changes only which segment a rule's clause names (nothing else of the
/// configuration, no tag): the flag is then found among the new segment's users, no longer
/// among the old one's, and only the old segment can be deleted.
async fn a_clause_moved_to_another_segment_moves_the_flag(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    for key in ["beta", "gamma"] {
        let created = app
            .post(
                "/api/v2/segments/web/production",
                json!({"key": key, "name": key}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let added = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "add", "path": "/environments/production/rules/-", "value": {"variation": 0, "clauses": [{"attribute": "s", "op": "segmentMatch", "values": ["beta"]}]}}]),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let moved = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/environments/production/rules/0/clauses/0/values/0", "value": "gamma"}]),
        )
        .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    let users = |body: &serde_json::Value| {
        body["_flags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["key"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let beta = app.get("/api/v2/segments/web/production/beta").await;
    assert!(users(&beta.body).is_empty(), "{}", beta.body);
    let gamma = app.get("/api/v2/segments/web/production/gamma").await;
    assert_eq!(users(&gamma.body), ["f"], "{}", gamma.body);
    app.delete("/api/v2/segments/web/production/gamma")
        .await
        .assert_error(409, "optimistic_locking_error");
    assert_eq!(
        app.delete("/api/v2/segments/web/production/beta")
            .await
            .status,
        204
    );
}

on_both_backends!(
    create_list_and_read_segments,
    patch_segments_three_ways,
    flags_use_segments,
    a_clause_moved_to_another_segment_moves_the_flag,
);
