//! Writes: dry runs of flag and segment patches and the `/version` test of a flag patch; the
//! create fields of the reference are in `api_create_fields`, and the document's account of both
//! is checked here.

use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, SEMANTIC};

/// `value` without what a real write changes by nature: each environment's `lastModified` (the
/// time of the write) and the segment's `lastModifiedDate`.
fn without_times(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(Value::Object(environments)) = value.get_mut("environments") {
        for config in environments.values_mut() {
            if let Value::Object(fields) = config {
                fields.remove("lastModified");
            }
        }
    }
    if let Value::Object(fields) = &mut value {
        fields.remove("lastModifiedDate");
    }
    value
}

/// What a dry run must leave as it was: the stored resource, the audit log, the webhook outbox.
#[derive(Debug, PartialEq)]
struct State {
    stored: Value,
    audit_entries: i64,
    queued_deliveries: i64,
}

async fn state_of<S, B>(app: &crate::common::TestApp<S>, path: &str) -> State
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let stored = app.get(path).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    State {
        stored: stored.body,
        audit_entries: app.db.count_rows("audit_log"),
        queued_deliveries: app.db.count_rows("webhook_deliveries"),
    }
}

async fn dry_runs_of_flag_patches_change_nothing(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag = app.flag("web", "f").await;
    let true_id = flag["variations"][0]["_id"].as_str().unwrap().to_owned();
    // A webhook that selects every change: each real change queues one delivery.
    let hook = app
        .post(
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": true}),
        )
        .await;
    assert_eq!(hook.status, 200, "{}", hook.body);
    let path = "/api/v2/flags/web/f";
    let changes = [
        (
            "application/json",
            json!({"comment": "on in production", "patch": [
                {"op": "test", "path": "/version", "value": 1},
                {"op": "replace", "path": "/environments/production/on", "value": true}]}),
        ),
        (
            "application/merge-patch+json",
            json!({"description": "Dry", "tags": ["b", "a"]}),
        ),
        (
            SEMANTIC,
            json!({"environmentKey": "test", "instructions": [
                {"kind": "turnFlagOn"},
                {"kind": "addTargets", "variationId": true_id, "values": ["u1"]}]}),
        ),
    ];
    for (content_type, body) in changes {
        let before = state_of(&app, path).await;
        let version = before.stored["_version"].as_i64().unwrap();
        let dry = app
            .patch_with(&format!("{path}?dryRun=true"), content_type, body.clone())
            .await;
        assert_eq!(dry.status, 200, "{content_type}: {}", dry.body);
        assert_eq!(dry.body["_version"], version + 1, "{content_type}");
        assert_eq!(
            state_of(&app, path).await,
            before,
            "{content_type}: a dry run stores, audits or queues nothing"
        );
        let real = app.patch_with(path, content_type, body).await;
        assert_eq!(real.status, 200, "{content_type}: {}", real.body);
        assert_eq!(
            without_times(&dry.body),
            without_times(&real.body),
            "{content_type}: the dry run answers what the real call does"
        );
        let after = state_of(&app, path).await;
        assert_eq!(after.stored, real.body);
        assert_eq!(after.audit_entries, before.audit_entries + 1);
        assert_eq!(after.queued_deliveries, before.queued_deliveries + 1);
    }
    // `dryRun=false` (and `0`) is a real call; `1` a dry run.
    let on = json!([{"op": "replace", "path": "/environments/test/trackEvents", "value": true}]);
    let version = app.get(path).await.body["_version"].as_i64().unwrap();
    let dry = app
        .patch_with(&format!("{path}?dryRun=1"), "application/json", on.clone())
        .await;
    assert_eq!(dry.body["_version"], version + 1);
    assert_eq!(app.get(path).await.body["_version"], version);
    let real = app
        .patch_with(&format!("{path}?dryRun=false"), "application/json", on)
        .await;
    assert_eq!(real.body["_version"], version + 1);
    assert_eq!(app.get(path).await.body["_version"], version + 1);
}

/// Patches that fail, with the status and code they fail with: (path, content type, body,
/// status, code). `a_true` is the `_id` of flag `a`'s `true` variation (`a` has `b` as a
/// prerequisite in production).
fn failing_patches(a_true: &str) -> [(&'static str, &'static str, Value, u16, &'static str); 6] {
    [
        // A read-only path: 422.
        (
            "/api/v2/flags/web/a",
            "application/json",
            json!([{"op": "replace", "path": "/key", "value": "x"}]),
            422,
            "patch_failed",
        ),
        // A failed version test: 409.
        (
            "/api/v2/flags/web/a",
            "application/json",
            json!([{"op": "test", "path": "/_version", "value": 99},
                   {"op": "replace", "path": "/name", "value": "A"}]),
            409,
            "optimistic_locking_error",
        ),
        // An unknown instruction: 400.
        (
            "/api/v2/flags/web/a",
            SEMANTIC,
            json!({"instructions": [{"kind": "doSomething"}]}),
            400,
            "invalid_request",
        ),
        // b -> a would close a cycle: found by the cross-flag check, which a dry run runs too.
        (
            "/api/v2/flags/web/b",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addPrerequisite", "key": "a", "variationId": a_true}]}),
            400,
            "invalid_request",
        ),
        // Deleting a flag others depend on: 409.
        (
            "/api/v2/flags/web/b",
            SEMANTIC,
            json!({"instructions": [{"kind": "deleteFlag"}]}),
            409,
            "optimistic_locking_error",
        ),
        // A segment patch touching a read-only field: 422.
        (
            "/api/v2/segments/web/production/s",
            "application/json",
            json!([{"op": "replace", "path": "/version", "value": 7}]),
            422,
            "patch_failed",
        ),
    ]
}

async fn dry_runs_fail_as_real_calls_do(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "a").await;
    let b = app.flag("web", "b").await;
    let b_true = b["variations"][0]["_id"].as_str().unwrap().to_owned();
    // a -> b
    let added = app
        .patch_with(
            "/api/v2/flags/web/a",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addPrerequisite", "key": "b", "variationId": b_true}]}),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let a = app.get("/api/v2/flags/web/a").await.body;
    let a_true = a["variations"][0]["_id"].as_str().unwrap().to_owned();
    let failing = failing_patches(&a_true);
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "s", "name": "S"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    for (path, content_type, body, status, code) in failing {
        let dry = app
            .patch_with(&format!("{path}?dryRun=true"), content_type, body.clone())
            .await;
        dry.assert_error(status, code);
        let real = app.patch_with(path, content_type, body).await;
        real.assert_error(status, code);
        assert_eq!(dry.body["message"], real.body["message"], "{path}");
        assert_eq!(dry.body["errors"], real.body["errors"], "{path}");
    }
    // A bad value is a 400 naming the parameter, as for other boolean parameters.
    for path in ["/api/v2/flags/web/a", "/api/v2/segments/web/production/s"] {
        let bad = app
            .patch_with(
                &format!("{path}?dryRun=maybe"),
                "application/json",
                json!([{"op": "replace", "path": "/name", "value": "Z"}]),
            )
            .await;
        bad.assert_error(400, "invalid_request");
        let message = bad.body["message"].as_str().unwrap();
        assert!(
            message.contains("dryRun") && message.contains("maybe"),
            "{message}"
        );
        assert_ne!(app.get(path).await.body["name"], "Z");
    }
    // A dry run needs the role a real change needs.
    let reader = app.token("reader").await;
    let forbidden = app
        .send(
            request(
                Method::PATCH,
                "/api/v2/flags/web/a?dryRun=true",
                Some(&reader),
            )
            .set_json(json!([{"op": "replace", "path": "/name", "value": "Z"}])),
        )
        .await;
    forbidden.assert_error(403, "forbidden");
}

async fn dry_runs_of_segment_patches_change_nothing(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let created = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "beta", "name": "Beta"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let hook = app
        .post(
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": true}),
        )
        .await;
    assert_eq!(hook.status, 200, "{}", hook.body);
    let path = "/api/v2/segments/web/production/beta";
    let changes = [
        (
            "application/json",
            json!([{"op": "replace", "path": "/name", "value": "Beta testers"}]),
        ),
        (
            "application/merge-patch+json",
            json!({"description": "Early access"}),
        ),
        (
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "addIncludedUsers", "values": ["u1", "u2"]}]}),
        ),
    ];
    for (content_type, body) in changes {
        let before = state_of(&app, path).await;
        let version = before.stored["version"].as_i64().unwrap();
        let dry = app
            .patch_with(&format!("{path}?dryRun=true"), content_type, body.clone())
            .await;
        assert_eq!(dry.status, 200, "{content_type}: {}", dry.body);
        assert_eq!(dry.body["version"], version + 1);
        assert_eq!(state_of(&app, path).await, before, "{content_type}");
        let real = app.patch_with(path, content_type, body).await;
        assert_eq!(real.status, 200, "{content_type}: {}", real.body);
        assert_eq!(without_times(&dry.body), without_times(&real.body));
        let after = state_of(&app, path).await;
        assert_eq!(after.stored["version"], version + 1);
        assert_eq!(after.audit_entries, before.audit_entries + 1);
        assert_eq!(after.queued_deliveries, before.queued_deliveries + 1);
    }
}

async fn version_test_reads_the_flag_version(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let patch = |version: i64, description: &str| {
        json!([{"op": "test", "path": "/version", "value": version},
               {"op": "replace", "path": "/description", "value": description}])
    };
    let ok = app.patch("/api/v2/flags/web/f", patch(1, "first")).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["_version"], 2);
    assert_eq!(ok.body["description"], "first");
    // The same check again: the flag is at version 2 now.
    let stale = app.patch("/api/v2/flags/web/f", patch(1, "second")).await;
    stale.assert_error(409, "optimistic_locking_error");
    let stored = app.get("/api/v2/flags/web/f").await.body;
    assert_eq!(
        (stored["_version"].clone(), stored["description"].clone()),
        (json!(2), json!("first"))
    );
    // With the merge-patch wrapper too, and `/version` cannot be written.
    let ok = app.patch("/api/v2/flags/web/f", patch(2, "second")).await;
    assert_eq!(ok.body["_version"], 3, "{}", ok.body);
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/version", "value": 9}]),
    )
    .await
    .assert_error(422, "patch_failed");
}

on_both_backends!(
    dry_runs_of_flag_patches_change_nothing,
    dry_runs_fail_as_real_calls_do,
    dry_runs_of_segment_patches_change_nothing,
    version_test_reads_the_flag_version,
);

/// server does with them.
#[test]
fn document_declares_dry_runs_and_create_fields() {
    let doc = adapter_http::openapi_document().unwrap();
    for path in [
        "/api/v2/flags/{projectKey}/{flagKey}",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
    ] {
        let params = doc["paths"][path]["patch"]["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{path}"));
        let dry_run = params
            .iter()
            .find(|p| p["name"] == "dryRun")
            .unwrap_or_else(|| panic!("{path} declares no dryRun"));
        assert_eq!(dry_run["in"], "query");
        assert_eq!(dry_run["schema"]["type"], "boolean", "{dry_run}");
        assert!(dry_run["description"]
            .as_str()
            .unwrap()
            .contains("rolled back"));
    }
    let schemas = &doc["components"]["schemas"];
    for (schema, fields) in [
        (
            "FlagPost",
            &[
                "isFlagOn",
                "initialPrerequisites",
                "purpose",
                "migrationSettings",
                "maintainerTeamKey",
            ][..],
        ),
        ("InitialPrerequisite", &["key", "variationId"][..]),
        ("ProjectPost", &["namingConvention"][..]),
        ("Project", &["namingConvention"][..]),
        ("NamingConvention", &["case", "prefix"][..]),
        ("EnvironmentPost", &["source"][..]),
        ("EnvironmentSource", &["key", "version"][..]),
        ("SegmentPost", &["unbounded", "unboundedContextKind"][..]),
        (
            "NewMemberForm",
            &["password", "customRoles", "teamKeys", "roleAttributes"][..],
        ),
        ("TokenPost", &["customRoleIds", "inlineRole"][..]),
    ] {
        for field in fields {
            let property = &schemas[schema]["properties"][*field];
            assert!(property.is_object(), "{schema}.{field} is not documented");
        }
    }
    assert_eq!(
        schemas["NamingCase"]["enum"],
        json!([
            "camelCase",
            "upperCamelCase",
            "snakeCase",
            "kebabCase",
            "constantCase"
        ])
    );
    let actions = schemas["CopyAction"]["enum"].as_array().unwrap();
    assert!(actions.contains(&json!("updateFlagConfigMigrationSettings")));
}
