//! The create fields of the reference: isFlagOn, initialPrerequisites, environment `source`,
//! project `namingConvention`, and the fields refused with a reason.

use actix_web::http::Method;
use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, Resp, TestApp, OWNER, SEMANTIC};

/// The first field error's attribute of an error response.
fn attribute(resp: &Resp) -> &str {
    resp.body["errors"][0]["attribute"]
        .as_str()
        .unwrap_or_else(|| panic!("no field error: {}", resp.body))
}

/// The keys of the environments where flag `key` of project `web` is a prerequisite, and the
/// (beta) `dependent-flags` answer they are read from.
async fn dependent_environments<S, B>(app: &TestApp<S>, key: &str) -> (Value, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let dependents = app
        .send(
            request(
                Method::GET,
                &format!("/api/v2/flags/web/{key}/dependent-flags"),
                Some(OWNER),
            )
            .insert_header(("Svc-API-Version", "beta")),
        )
        .await;
    let keys: Vec<&Value> = dependents.body["items"][0]["environments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|env| &env["key"])
        .collect();
    (json!(keys), dependents.body)
}

async fn create_flag_on_turns_it_on_in_every_environment(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let on = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "on", "name": "On", "isFlagOn": true}),
        )
        .await;
    assert_eq!(on.status, 201, "{}", on.body);
    let stored = app.get("/api/v2/flags/web/on").await.body;
    for env in ["test", "production"] {
        assert_eq!(on.body["environments"][env]["on"], true);
        assert_eq!(stored["environments"][env]["on"], true);
        assert_eq!(stored["environments"][env]["version"], 1);
    }
    assert_eq!(stored["_version"], 1);
    let off = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "off", "name": "Off", "isFlagOn": false}),
        )
        .await;
    assert_eq!(off.body["environments"]["test"]["on"], false);
}

async fn create_flag_with_prerequisites(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let base = app.flag("web", "base").await;
    let false_id = base["variations"][1]["_id"].as_str().unwrap().to_owned();
    let child = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "child", "name": "Child",
                   "initialPrerequisites": [{"key": "base", "variationId": false_id}]}),
        )
        .await;
    assert_eq!(child.status, 201, "{}", child.body);
    let stored = app.get("/api/v2/flags/web/child").await.body;
    for env in ["test", "production"] {
        assert_eq!(
            stored["environments"][env]["prerequisites"],
            json!([{"key": "base", "variation": 1}])
        );
    }
    // The prerequisite counts like one added later: base cannot be deleted now.
    app.delete("/api/v2/flags/web/base")
        .await
        .assert_error(409, "optimistic_locking_error");
    let (keys, dependents) = dependent_environments(&app, "base").await;
    assert_eq!(keys, json!(["production", "test"]), "{}", dependents);
    // A clone takes its source's on/off state and prerequisites.
    for (field, value) in [
        ("isFlagOn", json!(true)),
        ("initialPrerequisites", json!([])),
    ] {
        let mut body = json!({"key": "copy", "name": "Copy"});
        body[field] = value;
        let resp = app.post("/api/v2/flags/web?clone=child", body).await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(attribute(&resp), field);
    }
}

async fn bad_initial_prerequisites_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let base = app.flag("web", "base").await;
    let false_id = base["variations"][1]["_id"].as_str().unwrap().to_owned();
    let refused = [
        (
            json!({"key": "x1", "name": "X", "initialPrerequisites": [{"key": "base", "variationId": "nope"}]}),
            "initialPrerequisites[0].variationId",
            "nope",
        ),
        (
            json!({"key": "x2", "name": "X", "initialPrerequisites": [{"key": "ghost", "variationId": false_id}]}),
            "initialPrerequisites[0].key",
            "ghost",
        ),
        (
            json!({"key": "x3", "name": "X", "initialPrerequisites": [{"key": "x3", "variationId": false_id}]}),
            "initialPrerequisites[0].key",
            "own prerequisite",
        ),
        (
            json!({"key": "x4", "name": "X", "initialPrerequisites": [
                {"key": "base", "variationId": false_id}, {"key": "base", "variationId": false_id}]}),
            "initialPrerequisites[1].key",
            "more than once",
        ),
        (
            json!({"key": "x5", "name": "X", "initialPrerequisites": [{"key": "base"}]}),
            "",
            "variationId",
        ),
    ];
    for (body, field, says) in refused {
        let key = body["key"].as_str().unwrap().to_owned();
        let resp = app.post("/api/v2/flags/web", body).await;
        resp.assert_error(400, "invalid_request");
        if !field.is_empty() {
            assert_eq!(attribute(&resp), field, "{}", resp.body);
        }
        let message = resp.body["message"].as_str().unwrap();
        assert!(message.contains(says), "{message}");
        app.get(&format!("/api/v2/flags/web/{key}"))
            .await
            .assert_error(404, "not_found");
    }
    // An archived flag cannot become a prerequisite.
    app.flag("web", "old").await;
    let old = app
        .patch(
            "/api/v2/flags/web/old",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(old.status, 200, "{}", old.body);
    let old_id = old.body["variations"][0]["_id"].as_str().unwrap();
    let resp = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "x6", "name": "X", "initialPrerequisites": [{"key": "old", "variationId": old_id}]}),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    assert!(resp.body["message"].as_str().unwrap().contains("archived"));
}

async fn unsupported_flag_create_fields_are_refused_with_a_reason(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let flag_fields = [
        ("purpose", json!("migration"), "migration and holdout"),
        (
            "migrationSettings",
            json!({"contextKind": "user"}),
            "migration",
        ),
        (
            "maintainerTeamKey",
            json!("team"),
            "no team with key 'team'",
        ),
    ];
    for (field, value, says) in flag_fields {
        let mut body = json!({"key": "f", "name": "F"});
        body[field] = value;
        let resp = app.post("/api/v2/flags/web", body).await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(attribute(&resp), field);
        assert!(
            resp.body["message"].as_str().unwrap().contains(says),
            "{}",
            resp.body
        );
    }
    // `null` is as good as absent.
    let nulls = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "f", "name": "F", "purpose": null, "migrationSettings": null, "maintainerTeamKey": null}),
        )
        .await;
    assert_eq!(nulls.status, 201, "{}", nulls.body);
    // A field the reference does not know stays a 400 naming it.
    let unknown = app
        .post(
            "/api/v2/flags/web",
            json!({"key": "g", "name": "G", "colour": "red"}),
        )
        .await;
    unknown.assert_error(400, "invalid_request");
    assert!(unknown.body["message"].as_str().unwrap().contains("colour"));

    // Copy: the migration-settings action is known, and copies nothing here.
    let copied = app
        .post(
            "/api/v2/flags/web/f/copy",
            json!({"source": {"key": "test"}, "target": {"key": "production"},
                   "includedActions": ["updateFlagConfigMigrationSettings"]}),
        )
        .await;
    assert_eq!(copied.status, 201, "{}", copied.body);
    assert_eq!(copied.body["_version"], 1);
}

async fn unsupported_segment_member_and_token_fields_are_refused_with_a_reason(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    // Segments: big segments are not supported.
    let segments = "/api/v2/segments/web/production";
    for (body, field) in [
        (
            json!({"key": "s1", "name": "S", "unbounded": true}),
            "unbounded",
        ),
        (
            json!({"key": "s2", "name": "S", "unboundedContextKind": "user"}),
            "unboundedContextKind",
        ),
    ] {
        let resp = app.post(segments, body).await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(attribute(&resp), field);
        assert!(resp.body["message"]
            .as_str()
            .unwrap()
            .contains("big segments are not supported"));
    }
    let standard = app
        .post(
            segments,
            json!({"key": "s3", "name": "S", "unbounded": false}),
        )
        .await;
    assert_eq!(standard.status, 201, "{}", standard.body);

    // Members: no passwords, teams or role attributes; custom roles that exist.
    for (field, value) in [
        ("password", json!("secret")),
        ("customRoles", json!(["svc-developer"])),
        ("teamKeys", json!(["ops"])),
        ("roleAttributes", json!({"projects": ["web"]})),
    ] {
        let mut form = json!({"email": "m@example.com", "role": "reader"});
        form[field] = value;
        let resp = app.post("/api/v2/members", json!([form])).await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(attribute(&resp), format!("[0].{field}"));
    }
    let plain = app
        .post(
            "/api/v2/members",
            json!([{"email": "m@example.com", "role": "reader", "customRoles": [], "teamKeys": [], "roleAttributes": {}}]),
        )
        .await;
    assert_eq!(plain.status, 201, "{}", plain.body);

    // Tokens: custom roles that exist, inline roles that are policies.
    for (field, value, named) in [
        (
            "customRoleIds",
            json!(["0123456789abcdef01234567"]),
            "customRoleIds",
        ),
        ("inlineRole", json!([{"effect": "allow"}]), "inlineRole[0]"),
    ] {
        let mut body = json!({"name": "t", "role": "reader"});
        body[field] = value;
        let resp = app.post("/api/v2/tokens", body).await;
        resp.assert_error(400, "invalid_request");
        assert!(attribute(&resp).starts_with(named), "{}", resp.body);
    }
    let token = app
        .post(
            "/api/v2/tokens",
            json!({"name": "t", "role": "reader", "customRoleIds": [], "inlineRole": []}),
        )
        .await;
    assert_eq!(token.status, 201, "{}", token.body);
}

async fn naming_conventions_govern_new_flag_keys(backend: Backend) {
    let app = spawn(backend).await;
    let created = app
        .post(
            "/api/v2/projects",
            json!({"key": "web", "name": "Web", "namingConvention": {"case": "kebabCase", "prefix": "web-"}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let convention = json!({"case": "kebabCase", "prefix": "web-"});
    assert_eq!(created.body["namingConvention"], convention);
    assert_eq!(
        app.get("/api/v2/projects/web").await.body["namingConvention"],
        convention
    );
    assert_eq!(
        app.flag("web", "web-new-checkout").await["key"],
        "web-new-checkout"
    );
    for (key, says) in [
        ("new-checkout", "start with 'web-'"),
        ("web-NewCheckout", "kebabCase"),
        ("web-new--checkout", "kebabCase"),
    ] {
        let resp = app
            .post("/api/v2/flags/web", json!({"key": key, "name": "X"}))
            .await;
        resp.assert_error(400, "invalid_request");
        assert_eq!(attribute(&resp), "key");
        let message = resp.body["message"].as_str().unwrap();
        assert!(
            message.contains("naming convention") && message.contains(says),
            "{message}"
        );
    }
    // Clones too.
    app.post(
        "/api/v2/flags/web?clone=web-new-checkout",
        json!({"key": "Copy", "name": "Copy"}),
    )
    .await
    .assert_error(400, "invalid_request");
    let clone = app
        .post(
            "/api/v2/flags/web?clone=web-new-checkout",
            json!({"key": "web-copy", "name": "Copy"}),
        )
        .await;
    assert_eq!(clone.status, 201, "{}", clone.body);

    // The convention is patched like any project field; it governs flags created afterwards.
    let patched = app
        .patch(
            "/api/v2/projects/web",
            json!([{"op": "replace", "path": "/namingConvention", "value": {"case": "constantCase"}}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        patched.body["namingConvention"],
        json!({"case": "constantCase"})
    );
    app.post("/api/v2/flags/web", json!({"key": "web-x", "name": "X"}))
        .await
        .assert_error(400, "invalid_request");
    app.flag("web", "NEW_FLAG_2").await;
    assert_eq!(app.get("/api/v2/flags/web/web-copy").await.status, 200);
    let removed = app
        .patch(
            "/api/v2/projects/web",
            json!([{"op": "remove", "path": "/namingConvention"}]),
        )
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert!(removed.body.get("namingConvention").is_none());
    assert!(app
        .get("/api/v2/projects/web")
        .await
        .body
        .get("namingConvention")
        .is_none());
    app.flag("web", "anyThing_goes").await;
}

async fn bad_naming_conventions_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let bad_case = app
        .post(
            "/api/v2/projects",
            json!({"key": "p1", "name": "P", "namingConvention": {"case": "shouting"}}),
        )
        .await;
    bad_case.assert_error(400, "invalid_request");
    assert!(bad_case.body["message"]
        .as_str()
        .unwrap()
        .contains("shouting"));
    let bad_prefix = app
        .post(
            "/api/v2/projects",
            json!({"key": "p2", "name": "P", "namingConvention": {"prefix": "-x"}}),
        )
        .await;
    bad_prefix.assert_error(400, "invalid_request");
    assert_eq!(attribute(&bad_prefix), "namingConvention.prefix");
    app.patch(
        "/api/v2/projects/web",
        json!([{"op": "add", "path": "/namingConvention", "value": {"prefix": "a b"}}]),
    )
    .await
    .assert_error(422, "patch_failed");
    // A project without a convention shows none.
    let plain = app.project("plain").await;
    assert!(plain.get("namingConvention").is_none());
}

/// Flag `f` of project `web` set up in production with everything an environment holds: on,
/// targets of two context kinds, a rule on segment `beta` (which includes `u1`), a prerequisite
/// on flag `base` and event tracking. Returns the patched flag.
async fn configure_f_in_production<S, B>(app: &TestApp<S>) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let base = app.flag("web", "base").await;
    let base_true = base["variations"][0]["_id"].as_str().unwrap().to_owned();
    let f = app.flag("web", "f").await;
    let f_false = f["variations"][1]["_id"].as_str().unwrap().to_owned();
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "beta", "name": "Beta", "tags": ["qa"]}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    let included = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "addIncludedUsers", "values": ["u1"]}]}),
        )
        .await;
    assert_eq!(included.status, 200, "{}", included.body);
    let configured = app
        .patch_with(
            "/api/v2/flags/web/f",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [
                {"kind": "turnFlagOn"},
                {"kind": "addTargets", "variationId": f_false, "values": ["u9"]},
                {"kind": "addTargets", "variationId": f_false, "values": ["o1"], "contextKind": "org"},
                {"kind": "addRule", "variationId": f_false, "clauses": [
                    {"attribute": "segmentMatch", "op": "segmentMatch", "values": ["beta"], "negate": false}]},
                {"kind": "addPrerequisite", "key": "base", "variationId": base_true},
                {"kind": "updateTrackEvents", "trackEvents": true}]}),
        )
        .await;
    assert_eq!(configured.status, 200, "{}", configured.body);
    configured.body
}

/// The actions of the first entry of `kind` an audit log search for `q` finds.
async fn audit_actions<S, B>(app: &TestApp<S>, q: &str, kind: &str) -> Vec<String>
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let log = app.get(&format!("/api/v2/auditlog?q={q}")).await;
    let entry = log.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == kind)
        .unwrap_or_else(|| panic!("{}", log.body))
        .clone();
    entry["accesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap().to_owned())
        .collect()
}

async fn environments_are_cloned_with_configurations_and_segments(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let configured = configure_f_in_production(&app).await;
    let source_config = configured["environments"]["production"].clone();
    let flag_version = configured["_version"].clone();

    let cloned = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "staging", "name": "Staging", "color": "00FF00", "source": {"key": "production"}}),
        )
        .await;
    assert_eq!(cloned.status, 201, "{}", cloned.body);
    assert_eq!(cloned.body["key"], "staging");
    assert_eq!(
        cloned.body["critical"], false,
        "settings come from the body"
    );

    // Every flag's configuration is copied; versions start over; the flag's own stays.
    let stored = app.get("/api/v2/flags/web/f").await.body;
    assert_eq!(stored["_version"], flag_version);
    let copy = &stored["environments"]["staging"];
    for field in [
        "on",
        "archived",
        "targets",
        "contextTargets",
        "rules",
        "fallthrough",
        "offVariation",
        "prerequisites",
        "trackEvents",
        "trackEventsFallthrough",
        "_summary",
    ] {
        assert_eq!(copy[field], source_config[field], "{field}");
    }
    assert_eq!(copy["on"], true);
    assert_eq!(copy["version"], 1);
    assert_eq!(copy["_environmentName"], "Staging");
    assert_eq!(copy["_site"]["href"], "/web/staging/features/f");
    assert_ne!(copy["salt"], source_config["salt"]);
    assert_eq!(
        app.get("/api/v2/flags/web/base").await.body["environments"]["staging"]["on"],
        false
    );
    // Segments are copied, and the copied rules use the copies.
    let beta = app.get("/api/v2/segments/web/staging/beta").await;
    assert_eq!(beta.status, 200, "{}", beta.body);
    assert_eq!(beta.body["included"], json!(["u1"]));
    assert_eq!(beta.body["tags"], json!(["qa"]));
    assert_eq!(beta.body["version"], 1);
    assert_eq!(beta.body["_flags"][0]["key"], "f", "{}", beta.body);
    app.delete("/api/v2/segments/web/staging/beta")
        .await
        .assert_error(409, "optimistic_locking_error");
    let (keys, dependents) = dependent_environments(&app, "base").await;
    assert_eq!(keys, json!(["production", "staging"]), "{}", dependents);

    // Afterwards the environments are independent.
    let off = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/environments/staging/on", "value": false}]),
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
    assert_eq!(off.body["environments"]["production"]["on"], true);
    let renamed = app
        .patch(
            "/api/v2/segments/web/production/beta",
            json!([{"op": "replace", "path": "/name", "value": "Production beta"}]),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    assert_eq!(
        app.get("/api/v2/segments/web/staging/beta").await.body["name"],
        "Beta"
    );
    // Flags created later get a configuration in the clone like in any environment.
    let later = app.flag("web", "later").await;
    assert_eq!(later["environments"]["staging"]["on"], false);
    // The audit entry says where the clone came from.
    assert_eq!(
        audit_actions(&app, "staging", "environment").await,
        ["createEnvironment", "cloneEnvironment"]
    );
}

async fn environments_cloned_from_a_bad_source_are_refused(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let unknown = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "qa", "name": "QA", "color": "00FF00", "source": {"key": "nowhere"}}),
        )
        .await;
    unknown.assert_error(400, "invalid_request");
    assert_eq!(attribute(&unknown), "source.key");
    let versioned = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "qa", "name": "QA", "color": "00FF00", "source": {"key": "production", "version": 3}}),
        )
        .await;
    versioned.assert_error(400, "invalid_request");
    assert_eq!(attribute(&versioned), "source.version");
    app.get("/api/v2/projects/web/environments/qa")
        .await
        .assert_error(404, "not_found");
    let in_project = app
        .post(
            "/api/v2/projects",
            json!({"key": "p2", "name": "P2", "environments": [
                {"key": "a", "name": "A", "color": "00FF00", "source": {"key": "b"}}]}),
        )
        .await;
    in_project.assert_error(400, "invalid_request");
    assert_eq!(attribute(&in_project), "environments[0].source");
}

async fn a_clone_that_would_make_a_flag_too_large_is_refused(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "big").await;
    // About 660 KB of targets in production: under the 1 MiB limit once, over it twice.
    let values: Vec<String> = (0..15_000).map(|i| format!("{i:040}")).collect();
    let filled = app
        .patch(
            "/api/v2/flags/web/big",
            json!([{"op": "replace", "path": "/environments/production/targets",
                    "value": [{"variation": 0, "values": values}]}]),
        )
        .await;
    assert_eq!(filled.status, 200, "{}", filled.body["message"]);
    let before = app.db.count_rows("environments");
    let resp = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "staging", "name": "Staging", "color": "00FF00", "source": {"key": "production"}}),
        )
        .await;
    resp.assert_error(400, "invalid_request");
    let message = resp.body["message"].as_str().unwrap();
    assert!(
        message.contains("'big'") && message.contains("1048576"),
        "{message}"
    );
    assert_eq!(app.db.count_rows("environments"), before);
    // A clone of the small environment is fine.
    let small = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "staging", "name": "Staging", "color": "00FF00", "source": {"key": "test"}}),
        )
        .await;
    assert_eq!(small.status, 201, "{}", small.body);
}

on_both_backends!(
    a_clone_that_would_make_a_flag_too_large_is_refused,
    create_flag_on_turns_it_on_in_every_environment,
    create_flag_with_prerequisites,
    bad_initial_prerequisites_are_refused,
    unsupported_flag_create_fields_are_refused_with_a_reason,
    unsupported_segment_member_and_token_fields_are_refused_with_a_reason,
    naming_conventions_govern_new_flag_keys,
    bad_naming_conventions_are_refused,
    environments_are_cloned_with_configurations_and_segments,
    environments_cloned_from_a_bad_source_are_refused,
);
