//! The complete flag model over HTTP: instructions, prerequisites, copy, clone, filters.

use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, OWNER, SEMANTIC};

fn var(flag: &Value, i: usize) -> String {
    flag["variations"][i]["_id"].as_str().unwrap().to_owned()
}

async fn semantic_patch_targets_and_rules(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag = app.flag("web", "f").await;
    let (on, off) = (var(&flag, 0), var(&flag, 1));
    let patched = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "comment": "launch to staff", "instructions": [
                {"kind": "addTargets", "values": ["alice", "bob"], "variationId": on},
                {"kind": "addRule", "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"]}], "variationId": on},
                {"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": {on.clone(): 10000, off.clone(): 90000}},
                {"kind": "turnFlagOn"}
            ]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let config = &patched.body["environments"]["production"];
    assert_eq!(
        config["targets"],
        json!([{"values": ["alice", "bob"], "variation": 0, "contextKind": "user"}])
    );
    assert_eq!(config["rules"][0]["clauses"][0]["op"], "endsWith");
    assert_eq!(
        config["fallthrough"]["rollout"]["variations"],
        json!([{"variation": 0, "weight": 10000}, {"variation": 1, "weight": 90000}])
    );
    assert_eq!(config["on"], true);
    assert_eq!(patched.body["_version"], 2, "one request, one version");
    assert_eq!(app.get("/api/v2/flags/web/f").await.body, patched.body);

    // Rule and clause ids address later instructions.
    let rule = config["rules"][0]["_id"].as_str().unwrap();
    let clause = config["rules"][0]["clauses"][0]["_id"].as_str().unwrap();
    let more = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addValuesToClause", "ruleId": rule, "clauseId": clause, "values": ["@example.org"]},
                {"kind": "updateRuleDescription", "ruleId": rule, "description": "staff"}]}),
        )
        .await;
    assert_eq!(
        more.body["environments"]["production"]["rules"][0]["clauses"][0]["values"],
        json!(["@example.com", "@example.org"])
    );

    // Errors name the instruction and change nothing.
    let before = app.get("/api/v2/flags/web/f").await.body;
    let bad = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}, {"kind": "addTargets", "values": ["alice"], "variationId": off}]}),
        )
        .await;
    bad.assert_error(400, "invalid_request");
    assert!(
        bad.body["message"]
            .as_str()
            .unwrap()
            .starts_with("instruction 1:"),
        "{}",
        bad.body
    );
    app.patch_with("/api/v2/flags/web/f", SEMANTIC, json!({"environmentKey": "production", "instructions": [{"kind": "removeClauses", "ruleId": "nope", "clauseIds": []}]}))
        .await
        .assert_error(400, "invalid_request");
    app.patch_with(
        "/api/v2/flags/web/f",
        SEMANTIC,
        json!({"instructions": [{"kind": "addTargets", "values": ["x"], "variationId": on}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    assert_eq!(app.get("/api/v2/flags/web/f").await.body, before);
}

async fn prerequisites_and_dependents(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let base = app.flag("web", "base").await;
    app.flag("web", "feature").await;
    let added = app
        .patch_with(
            "/api/v2/flags/web/feature",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "addPrerequisite", "key": "base", "variationId": var(&base, 0)}]}),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(
        added.body["environments"]["production"]["prerequisites"],
        json!([{"key": "base", "variation": 0}])
    );

    // The beta route lists the dependents, with the beta header only.
    app.get("/api/v2/flags/web/base/dependent-flags")
        .await
        .assert_error(403, "forbidden");
    let beta = request(
        Method::GET,
        "/api/v2/flags/web/base/dependent-flags",
        Some(OWNER),
    )
    .insert_header(("Svc-API-Version", "beta"));
    let dependents = app.send(beta).await;
    assert_eq!(dependents.status, 200, "{}", dependents.body);
    assert_eq!(dependents.body["items"][0]["key"], "feature");
    // Environments are objects, as the original's schema has them (issue 32, item 6).
    assert_eq!(
        dependents.body["items"][0]["environments"],
        json!([{
            "key": "production",
            "_links": {"self": {"href": "/api/v2/flags/web/feature", "type": "application/json"}},
            "_site": {"href": "/web/production/features/feature", "type": "text/html"}
        }])
    );
    assert_eq!(
        dependents.body["_site"],
        json!({"href": "/web/~/features/base", "type": "text/html"})
    );

    // A flag others depend on can be neither deleted nor archived; nor can a cycle form.
    app.delete("/api/v2/flags/web/base")
        .await
        .assert_error(409, "optimistic_locking_error");
    app.patch_with(
        "/api/v2/flags/web/base",
        SEMANTIC,
        json!({"instructions": [{"kind": "archiveFlag"}]}),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    app.patch(
        "/api/v2/flags/web/base",
        json!([{"op": "replace", "path": "/archived", "value": true}]),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    let feature = app.get("/api/v2/flags/web/feature").await.body;
    let cycle = app
        .patch("/api/v2/flags/web/base", json!([{"op": "add", "path": "/environments/test/prerequisites/-", "value": {"key": "feature", "variation": 0}}]))
        .await;
    cycle.assert_error(422, "patch_failed");
    assert!(
        cycle.body["message"].as_str().unwrap().contains("cycle"),
        "{}",
        cycle.body
    );
    app.patch_with(
        "/api/v2/flags/web/base",
        SEMANTIC,
        json!({"environmentKey": "test", "instructions": [{"kind": "addPrerequisite", "key": "feature", "variationId": var(&feature, 0)}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch("/api/v2/flags/web/feature", json!([{"op": "add", "path": "/environments/test/prerequisites/-", "value": {"key": "ghost", "variation": 0}}]))
        .await
        .assert_error(422, "patch_failed");
    // Once the prerequisite is gone, the flag can be deleted (through the deleteFlag instruction).
    app.patch_with("/api/v2/flags/web/feature", SEMANTIC, json!({"environmentKey": "production", "instructions": [{"kind": "removePrerequisite", "key": "base"}]}))
        .await;
    let deleted = app
        .patch_with(
            "/api/v2/flags/web/base",
            SEMANTIC,
            json!({"instructions": [{"kind": "deleteFlag"}]}),
        )
        .await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    app.get("/api/v2/flags/web/base")
        .await
        .assert_error(404, "not_found");
}

async fn copy_between_environments(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag = app.flag("web", "f").await;
    app.patch_with(
        "/api/v2/flags/web/f",
        SEMANTIC,
        json!({"environmentKey": "test", "instructions": [{"kind": "turnFlagOn"}, {"kind": "addTargets", "values": ["qa"], "variationId": var(&flag, 0)}]}),
    )
    .await;
    let copied = app
        .post(
            "/api/v2/flags/web/f/copy",
            json!({"source": {"key": "test"}, "target": {"key": "production", "currentVersion": 1}, "comment": "promote", "excludedActions": ["updateOn"]}),
        )
        .await;
    assert_eq!(copied.status, 201, "{}", copied.body);
    let production = &copied.body["environments"]["production"];
    assert_eq!(production["targets"][0]["values"], json!(["qa"]));
    assert_eq!(production["on"], false, "updateOn was excluded");
    assert_eq!(production["version"], 2);
    assert_eq!(
        app.get("/api/v2/flags/web/f").await.body["environments"]["production"]["targets"][0]
            ["values"],
        json!(["qa"])
    );
    app.post(
        "/api/v2/flags/web/f/copy",
        json!({"source": {"key": "test"}, "target": {"key": "production", "currentVersion": 1}}),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    app.post(
        "/api/v2/flags/web/f/copy",
        json!({"source": {"key": "test"}, "target": {"key": "test"}}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/flags/web/f/copy",
        json!({"source": {"key": "nope"}, "target": {"key": "test"}}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post("/api/v2/flags/web/f/copy", json!({"source": {"key": "test"}, "target": {"key": "production"}, "includedActions": ["updateOn"], "excludedActions": ["updateRules"]}))
        .await
        .assert_error(400, "invalid_request");
    app.post("/api/v2/flags/web/f/copy", json!({"source": {"key": "test"}, "target": {"key": "production"}, "includedActions": ["fly"]}))
        .await
        .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/flags/web/nope/copy",
        json!({"source": {"key": "test"}, "target": {"key": "production"}}),
    )
    .await
    .assert_error(404, "not_found");
}

async fn clone_a_flag(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let source = app
        .post("/api/v2/flags/web", json!({"key": "color", "name": "Color", "tags": ["ui"], "variations": [{"value": "red"}, {"value": "blue"}]}))
        .await
        .body;
    app.patch_with("/api/v2/flags/web/color", SEMANTIC, json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}, {"kind": "addTargets", "values": ["vip"], "variationId": var(&source, 1)}]}))
        .await;
    let clone = app
        .post(
            "/api/v2/flags/web?clone=color",
            json!({"key": "color-2", "name": "Color 2"}),
        )
        .await;
    assert_eq!(clone.status, 201, "{}", clone.body);
    let body = &clone.body;
    assert_eq!(body["key"], "color-2");
    assert_eq!(body["_version"], 1);
    assert_eq!(body["tags"], json!(["ui"]));
    assert_eq!(body["variations"][1]["value"], "blue");
    assert_ne!(body["variations"][1]["_id"], source["variations"][1]["_id"]);
    assert_eq!(body["environments"]["production"]["on"], true);
    assert_eq!(
        body["environments"]["production"]["targets"][0]["values"],
        json!(["vip"])
    );
    assert_eq!(body["environments"]["production"]["version"], 1);
    assert_eq!(app.get("/api/v2/flags/web/color-2").await.body, clone.body);
    app.post(
        "/api/v2/flags/web?clone=color",
        json!({"key": "color-2", "name": "Again"}),
    )
    .await
    .assert_error(409, "key_exists");
    app.post(
        "/api/v2/flags/web?clone=ghost",
        json!({"key": "x", "name": "X"}),
    )
    .await
    .assert_error(404, "not_found");
    app.post(
        "/api/v2/flags/web?clone=color",
        json!({"key": "y", "name": "Y", "variations": [{"value": 1}, {"value": 2}]}),
    )
    .await
    .assert_error(400, "invalid_request");
}

async fn list_filters_by_state_type_and_maintainer(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    for key in ["live", "old", "gone", "kept"] {
        app.flag("web", key).await;
    }
    app.patch_with(
        "/api/v2/flags/web/old",
        SEMANTIC,
        json!({"instructions": [{"kind": "deprecateFlag"}]}),
    )
    .await;
    app.patch_with(
        "/api/v2/flags/web/gone",
        SEMANTIC,
        json!({"instructions": [{"kind": "archiveFlag"}]}),
    )
    .await;
    app.patch_with(
        "/api/v2/flags/web/kept",
        SEMANTIC,
        json!({"instructions": [{"kind": "makeFlagPermanent"}, {"kind": "updateMaintainerMember", "value": "0123456789abcdef01234567"}]}),
    )
    .await;
    let keys = |path: String| {
        let app = &app;
        async move {
            let resp = app.get(&path).await;
            assert_eq!(resp.status, 200, "{path}: {}", resp.body);
            resp.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["key"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        keys("/api/v2/flags/web".into()).await,
        ["live", "old", "kept"],
        "archived flags are left out"
    );
    assert_eq!(
        keys("/api/v2/flags/web?filter=state:live".into()).await,
        ["live", "kept"]
    );
    assert_eq!(
        keys("/api/v2/flags/web?filter=state:deprecated".into()).await,
        ["old"]
    );
    assert_eq!(
        keys("/api/v2/flags/web?filter=state:archived".into()).await,
        ["gone"]
    );
    assert_eq!(
        keys("/api/v2/flags/web?filter=type:permanent".into()).await,
        ["kept"]
    );
    assert_eq!(
        keys("/api/v2/flags/web?filter=type:temporary,state:live".into()).await,
        ["live"]
    );
    assert_eq!(
        keys("/api/v2/flags/web?filter=maintainerId:0123456789abcdef01234567".into()).await,
        ["kept"]
    );
    let gone = app.get("/api/v2/flags/web/gone").await.body;
    assert_eq!(gone["archived"], true);
    assert!(gone["archivedDate"].as_i64().is_some());
}

on_both_backends!(
    semantic_patch_targets_and_rules,
    prerequisites_and_dependents,
    copy_between_environments,
    clone_a_flag,
    list_filters_by_state_type_and_maintainer,
);
