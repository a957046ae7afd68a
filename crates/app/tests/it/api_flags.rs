use serde_json::{json, Value};

use crate::common::{spawn, Backend, SEMANTIC};

fn env_keys(flag: &Value) -> Vec<String> {
    flag["environments"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

async fn create_flag_appears_everywhere_off(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let created = app.flag("web", "dark-mode").await;
    assert_eq!(created["key"], "dark-mode");
    assert_eq!(created["kind"], "boolean");
    assert_eq!(created["_version"], 1);
    assert_eq!(created["temporary"], true);
    assert_eq!(created["description"], "");
    assert_eq!(created["archived"], false);
    assert_eq!(created["customProperties"], json!({}));
    assert_eq!(
        created["experiments"],
        json!({"baselineIdx": 0, "items": []})
    );
    assert_eq!(
        created["defaults"],
        json!({"onVariation": 0, "offVariation": 1})
    );
    assert_eq!(
        created["_links"]["self"]["href"],
        "/api/v2/flags/web/dark-mode"
    );
    assert!(created["creationDate"].as_i64().unwrap() > 1_600_000_000_000);
    let values: Vec<&Value> = created["variations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["value"])
        .collect();
    assert_eq!(values, [&json!(true), &json!(false)]);
    assert_eq!(created["variations"][0]["_id"].as_str().unwrap().len(), 36);
    assert_eq!(env_keys(&created), ["production", "test"]);
    for env in ["test", "production"] {
        let config = &created["environments"][env];
        assert_eq!(config["on"], false);
        assert_eq!(config["archived"], false);
        assert_eq!(config["version"], 1);
        assert_eq!(config["offVariation"], 1);
        assert_eq!(config["fallthrough"], json!({"variation": 0}));
        assert_eq!(config["targets"], json!([]));
        assert_eq!(config["rules"], json!([]));
        assert_eq!(config["prerequisites"], json!([]));
        assert_eq!(config["trackEvents"], false);
        assert_eq!(
            config["_site"]["href"],
            format!("/web/{env}/features/dark-mode")
        );
        assert_eq!(config["_site"]["type"], "text/html");
        assert!(config["salt"].as_str().unwrap().len() >= 16);
    }
    assert_eq!(
        created["environments"]["production"]["_environmentName"],
        "Production"
    );
    let stored = app.get("/api/v2/flags/web/dark-mode").await;
    assert_eq!(stored.status, 200);
    assert_eq!(stored.body, created);
}

async fn create_multivariate_flag(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let created = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "color", "name": "Color", "description": "Button colour", "temporary": false, "tags": ["ui"],
                   "variations": [{"value": "red", "name": "Red"}, {"value": "green"}, {"value": "blue"}],
                   "defaults": {"onVariation": 1, "offVariation": 2}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["kind"], "multivariate");
    assert_eq!(created.body["variations"][0]["name"], "Red");
    assert!(created.body["variations"][1].get("name").is_none());
    assert_eq!(
        created.body["environments"]["test"]["fallthrough"],
        json!({"variation": 1})
    );
    assert_eq!(created.body["environments"]["test"]["offVariation"], 2);
    assert_eq!(created.body["temporary"], false);
}

async fn create_flag_errors(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    app.post("/api/v2/flags/web", json!({"key": "f", "name": "F"}))
        .await
        .assert_error(409, "key_exists");
    app.post("/api/v2/flags/nope", json!({"key": "g", "name": "G"}))
        .await
        .assert_error(404, "not_found");
    app.post("/api/v2/flags/web", json!({"key": "bad key", "name": "G"}))
        .await
        .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/flags/web",
        json!({"key": "g", "name": "G", "variations": [{"value": 1}, {"value": 1}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/flags/web",
        json!({"key": "g", "name": "G", "variations": [{"value": "a"}, {"value": 2}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/flags/web",
        json!({"key": "g", "name": "G", "defaults": {"onVariation": 0, "offVariation": 5}}),
    )
    .await
    .assert_error(400, "invalid_request");
    assert_eq!(app.get("/api/v2/flags/web").await.body["totalCount"], 1);
}

async fn get_flag_with_env_filter(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let only = app.get("/api/v2/flags/web/f?env=production").await;
    assert_eq!(env_keys(&only.body), ["production"]);
    let both = app.get("/api/v2/flags/web/f?env=production&env=test").await;
    assert_eq!(env_keys(&both.body), ["production", "test"]);
    app.get("/api/v2/flags/web/nope")
        .await
        .assert_error(404, "not_found");
    app.get("/api/v2/flags/nope/f")
        .await
        .assert_error(404, "not_found");
}

/// Project `web` with flags `checkout`, `banner` and `api-v2`, created in that order.
async fn three_tagged_flags<S, B>(app: &crate::common::TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    app.project("web").await;
    for (key, name, tags) in [
        ("checkout", "New checkout", json!(["shop"])),
        ("banner", "Holiday banner", json!(["ui", "shop"])),
        ("api-v2", "API v2", json!([])),
    ] {
        let created = app
            .post(
                "/api/v2/flags/web",
                json!({"key": key, "name": name, "tags": tags}),
            )
            .await;
        assert_eq!(created.status, 201);
    }
}

/// The keys of a list of flags.
fn keys(body: &Value) -> Vec<String> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap().to_owned())
        .collect()
}

async fn list_flags(backend: Backend) {
    let app = spawn(backend).await;
    three_tagged_flags(&app).await;
    let all = app.get("/api/v2/flags/web").await;
    assert_eq!(keys(&all.body), ["checkout", "banner", "api-v2"]);
    assert_eq!(all.body["totalCount"], 3);
    assert!(
        all.body["items"][0].get("environments").is_none(),
        "no environments without env under 20240415"
    );
    assert_eq!(
        keys(&app.get("/api/v2/flags/web?filter=query:CHECK").await.body),
        ["checkout"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/flags/web?tag=shop").await.body),
        ["checkout", "banner"]
    );
    assert_eq!(
        keys(
            &app.get("/api/v2/flags/web?filter=tags:ui%2Bshop")
                .await
                .body
        ),
        ["banner"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/flags/web?sort=key").await.body),
        ["api-v2", "banner", "checkout"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/flags/web?sort=-name").await.body),
        ["checkout", "banner", "api-v2"]
    );
    assert_eq!(
        keys(&app.get("/api/v2/flags/web?sort=-creationDate").await.body),
        ["api-v2", "banner", "checkout"]
    );
    let page = app.get("/api/v2/flags/web?limit=2&offset=2").await;
    assert_eq!(keys(&page.body), ["api-v2"]);
    assert_eq!(page.body["totalCount"], 3);
    assert!(page.body["_links"].get("next").is_none());

    for bad in [
        "filter=state:gone",
        "filter=type:x",
        "filter=owner:me",
        "sort=size",
        "limit=0",
        "summary=maybe",
    ] {
        app.get(&format!("/api/v2/flags/web?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
    app.get("/api/v2/flags/nope")
        .await
        .assert_error(404, "not_found");
}

async fn list_flags_with_their_environments(backend: Backend) {
    let app = spawn(backend).await;
    three_tagged_flags(&app).await;
    // Environments on request; summary leaves out targets and rules unless summary=0.
    let with_env = app.get("/api/v2/flags/web?env=production").await;
    let config = &with_env.body["items"][0]["environments"]["production"];
    assert_eq!(config["on"], false);
    assert!(config.get("rules").is_none() && config.get("targets").is_none());
    assert_eq!(env_keys(&with_env.body["items"][0]), ["production"]);
    let detailed = app.get("/api/v2/flags/web?env=production&summary=0").await;
    assert_eq!(
        detailed.body["items"][0]["environments"]["production"]["rules"],
        json!([])
    );
    // As the original's Python client writes booleans (issue 32: its unmodified calls).
    let python = app
        .get("/api/v2/flags/web?env=production&summary=False")
        .await;
    assert_eq!(python.status, 200, "{}", python.body);
    assert_eq!(python.body["items"], detailed.body["items"]);

    // The older API version lists every flag with every environment.
    let old = app
        .send(
            crate::common::request(
                actix_web::http::Method::GET,
                "/api/v2/flags/web",
                Some(crate::common::OWNER),
            )
            .insert_header(("Svc-API-Version", "20220603")),
        )
        .await;
    assert_eq!(old.header("svc-api-version"), Some("20220603"));
    assert_eq!(old.body["items"].as_array().unwrap().len(), 3);
    assert_eq!(env_keys(&old.body["items"][0]), ["production", "test"]);
}

async fn json_patch_per_environment(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let patched = app
        .patch(
            "/api/v2/flags/web/f",
            json!({"comment": "launch", "patch": [
                {"op": "test", "path": "/_version", "value": 1},
                {"op": "replace", "path": "/environments/production/on", "value": true},
                {"op": "add", "path": "/environments/production/rules/-", "value":
                    {"variation": 0, "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"]}]}},
                {"op": "replace", "path": "/name", "value": "Feature F"}
            ]}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let body = &patched.body;
    assert_eq!(body["_version"], 2);
    assert_eq!(body["name"], "Feature F");
    assert_eq!(body["environments"]["production"]["on"], true);
    assert_eq!(body["environments"]["production"]["version"], 2);
    assert_eq!(body["environments"]["test"]["on"], false);
    assert_eq!(body["environments"]["test"]["version"], 1);
    let rule = &body["environments"]["production"]["rules"][0];
    assert_eq!(rule["_id"].as_str().unwrap().len(), 36);
    assert_eq!(rule["clauses"][0]["contextKind"], "user");
    assert_eq!(rule["clauses"][0]["negate"], false);
    assert_eq!(app.get("/api/v2/flags/web/f").await.body, patched.body);

    // Appending to a clause's values, and the bare-array form.
    let appended = app
        .patch("/api/v2/flags/web/f", json!([{"op": "add", "path": "/environments/production/rules/0/clauses/0/values/-", "value": "@example.org"}]))
        .await;
    assert_eq!(
        appended.body["environments"]["production"]["rules"][0]["clauses"][0]["values"],
        json!(["@example.com", "@example.org"])
    );
    assert_eq!(appended.body["_version"], 3);
}

async fn json_patch_failures_change_nothing(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let before = app.flag("web", "f").await;
    app.patch("/api/v2/flags/web/f", json!([{"op": "replace", "path": "/environments/test/on", "value": true}, {"op": "test", "path": "/_version", "value": 7}]))
        .await
        .assert_error(409, "optimistic_locking_error");
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "test", "path": "/environments/test/version", "value": 3}]),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    for path in [
        "/key",
        "/_version",
        "/creationDate",
        "/environments/test/version",
        "/environments/test/_site",
        "/environments/staging",
    ] {
        app.patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": path, "value": 1}]),
        )
        .await
        .assert_error(422, "patch_failed");
    }
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/environments/test/offVariation", "value": 9}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "remove", "path": "/variations/0"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/environments/test/on", "value": "yes"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "move", "from": "/name", "path": "/description"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "jump", "path": "/name"}]),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch("/api/v2/flags/web/nope", json!([]))
        .await
        .assert_error(404, "not_found");
    let body = app.get("/api/v2/flags/web/f").await.body;
    assert_eq!(body, before);
}

async fn semantic_patch_turns_one_environment_on(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let on = app
        .patch_with("/api/v2/flags/web/f", SEMANTIC, json!({"environmentKey": "production", "comment": "go", "instructions": [{"kind": "turnFlagOn"}]}))
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    assert_eq!(on.body["environments"]["production"]["on"], true);
    assert_eq!(on.body["environments"]["test"]["on"], false);
    assert_eq!(on.body["_version"], 2);
    let stored = app.get("/api/v2/flags/web/f").await.body;
    assert_eq!(stored["environments"]["production"]["on"], true);
    assert_eq!(stored["environments"]["test"]["on"], false);

    // Already on: success without a change.
    let again = app
        .patch_with(
            "/api/v2/flags/web/f",
            "application/json;domain-model=\"svc.semanticpatch\"",
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
        )
        .await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["_version"], 2);
    let off = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}]}),
        )
        .await;
    assert_eq!(off.body["environments"]["production"]["on"], false);
    assert_eq!(off.body["_version"], 3);
}

async fn semantic_patch_errors(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let before = app.flag("web", "f").await;
    let missing_env = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"instructions": [{"kind": "turnFlagOn"}]}),
        )
        .await;
    missing_env.assert_error(400, "invalid_request");
    assert!(missing_env.body["message"]
        .as_str()
        .unwrap()
        .contains("environmentKey"));
    let unknown = app
        .patch_with("/api/v2/flags/web/f", SEMANTIC, json!({"environmentKey": "test", "instructions": [{"kind": "turnFlagOn"}, {"kind": "fly"}]}))
        .await;
    unknown.assert_error(400, "invalid_request");
    assert!(unknown.body["message"]
        .as_str()
        .unwrap()
        .contains("instruction 1"));
    app.patch_with(
        "/api/v2/flags/web/f",
        SEMANTIC,
        json!({"environmentKey": "staging", "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch_with(
        "/api/v2/flags/web/f",
        SEMANTIC,
        json!([{"kind": "turnFlagOn"}]),
    )
    .await
    .assert_error(400, "invalid_request");
    // A semantic body sent as plain JSON is refused with a hint.
    let plain = app
        .patch(
            "/api/v2/flags/web/f",
            json!({"environmentKey": "test", "instructions": [{"kind": "turnFlagOn"}]}),
        )
        .await;
    plain.assert_error(400, "invalid_request");
    assert!(plain.body["message"]
        .as_str()
        .unwrap()
        .contains("domain-model=svc.semanticpatch"));
    assert_eq!(app.get("/api/v2/flags/web/f").await.body, before);
}

async fn merge_patch(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let merged = app
        .patch_with(
            "/api/v2/flags/web/f",
            "application/merge-patch+json",
            json!({"description": "d", "environments": {"test": {"on": true}}}),
        )
        .await;
    assert_eq!(merged.status, 200, "{}", merged.body);
    assert_eq!(merged.body["description"], "d");
    assert_eq!(merged.body["environments"]["test"]["on"], true);
    let wrapped = app
        .patch(
            "/api/v2/flags/web/f",
            json!({"comment": "c", "merge": {"temporary": false}}),
        )
        .await;
    assert_eq!(wrapped.body["temporary"], false);
    assert_eq!(wrapped.body["_version"], 3);
    app.patch("/api/v2/flags/web/f", json!({"merge": {"_version": 9}}))
        .await
        .assert_error(422, "patch_failed");
}

async fn delete_flag(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    assert_eq!(app.delete("/api/v2/flags/web/f").await.status, 204);
    app.get("/api/v2/flags/web/f")
        .await
        .assert_error(404, "not_found");
    app.delete("/api/v2/flags/web/f")
        .await
        .assert_error(404, "not_found");
    assert_eq!(app.get("/api/v2/flags/web").await.body["totalCount"], 0);
    // The key is free again.
    app.flag("web", "f").await;
}

/// Pages of a sorted list, read one at a time, are the whole list in order: ties in the sort
/// field (equal names, one creation time apart) go by key, in the sort's direction, and a page
/// keeps that order whatever order the store reads its rows in.
async fn list_pages_keep_the_order_with_ties(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    for (key, name) in [
        ("d", "Same"),
        ("b", "Same"),
        ("e", "Alpha"),
        ("a", "Same"),
        ("c", "Zed"),
    ] {
        let created = app
            .post("/api/v2/flags/web", json!({"key": key, "name": name}))
            .await;
        assert_eq!(created.status, 201);
    }
    for (sort, expected) in [
        ("name", ["e", "a", "b", "d", "c"]),
        ("-name", ["c", "d", "b", "a", "e"]),
        ("key", ["a", "b", "c", "d", "e"]),
        ("-key", ["e", "d", "c", "b", "a"]),
        ("creationDate", ["d", "b", "e", "a", "c"]),
        ("-creationDate", ["c", "a", "e", "b", "d"]),
    ] {
        let mut paged = vec![];
        for offset in [0, 2, 4] {
            let page = app
                .get(&format!(
                    "/api/v2/flags/web?sort={sort}&limit=2&offset={offset}"
                ))
                .await;
            assert_eq!(page.status, 200, "{}", page.body);
            assert_eq!(page.body["totalCount"], 5);
            paged.extend(
                page.body["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f["key"].as_str().unwrap().to_owned()),
            );
        }
        assert_eq!(paged, expected, "sort={sort}");
    }
}

/// The `maintainerId` filter follows the flag's maintainer as it is now: one set and then
/// removed by a patch no longer matches (the stored column is cleared, not left as it was).
async fn a_removed_maintainer_no_longer_matches(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    app.flag("p", "f").await;
    let me = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let filtered = format!("/api/v2/flags/p?filter=maintainerId:{me}");
    let set = app
        .patch(
            "/api/v2/flags/p/f",
            json!([{"op": "add", "path": "/maintainerId", "value": me}]),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(app.get(&filtered).await.body["totalCount"], 1);
    let removed = app
        .patch(
            "/api/v2/flags/p/f",
            json!([{"op": "remove", "path": "/maintainerId"}]),
        )
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert!(
        removed.body.get("maintainerId").is_none(),
        "{}",
        removed.body
    );
    let listed = app.get(&filtered).await;
    assert_eq!(listed.body["totalCount"], 0, "{}", listed.body);
}

on_both_backends!(
    a_removed_maintainer_no_longer_matches,
    create_flag_appears_everywhere_off,
    create_multivariate_flag,
    create_flag_errors,
    get_flag_with_env_filter,
    list_flags,
    list_flags_with_their_environments,
    list_pages_keep_the_order_with_ties,
    json_patch_per_environment,
    json_patch_failures_change_nothing,
    semantic_patch_turns_one_environment_on,
    semantic_patch_errors,
    merge_patch,
    delete_flag,
);
