//! A patch applies to a resource as GET shows it: a client may `test` and `copy` from the
//! derived members (`_links`, `_site`, `_summary`) and send them back unchanged in a merge patch,
//! though never change them; and a resource whose stored key predates today's key rules can
//! still be patched.

use serde_json::{json, Value};

use crate::common::{spawn, Backend};

async fn patches_read_the_resource_as_shown(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;

    // A `test` of a derived member passes when it holds the value, and fails as a version
    // conflict when it does not; `copy` can read one.
    let ok = app
        .patch(
            "/api/v2/flags/web/f",
            json!([
                {"op": "test", "path": "/_links/self/href", "value": "/api/v2/flags/web/f"},
                {"op": "test", "path": "/environments/production/_summary/prerequisites", "value": 0},
                {"op": "copy", "from": "/environments/production/_site/href", "path": "/description"}
            ]),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["description"], "/web/production/features/f");
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "test", "path": "/_links/self/href", "value": "/elsewhere"}]),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    // Writing one is still refused.
    app.patch(
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/_links/self/href", "value": "/elsewhere"}]),
    )
    .await
    .assert_error(422, "patch_failed");

    // GET, change a field, send the whole body back as a merge patch.
    let mut shown: Value = app.get("/api/v2/flags/web/f").await.body;
    shown["description"] = json!("round trip");
    let merged = app
        .patch_with("/api/v2/flags/web/f", "application/merge-patch+json", shown)
        .await;
    assert_eq!(merged.status, 200, "{}", merged.body);
    assert_eq!(merged.body["description"], "round trip");
    assert_eq!(merged.body["_links"]["self"]["href"], "/api/v2/flags/web/f");

    // With a maintainer, `_maintainer` is part of what GET shows, and of what a patch reads.
    let owner = app.get("/api/v2/members").await.body["items"][0]["_id"].clone();
    let maintained = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "add", "path": "/maintainerId", "value": owner}]),
        )
        .await;
    assert_eq!(maintained.status, 200, "{}", maintained.body);
    let mut shown = maintained.body;
    assert_eq!(shown["_maintainer"]["_id"], owner);
    shown["description"] = json!("round trip with a maintainer");
    let merged = app
        .patch_with("/api/v2/flags/web/f", "application/merge-patch+json", shown)
        .await;
    assert_eq!(merged.status, 200, "{}", merged.body);
    let tested = app
        .patch(
            "/api/v2/flags/web/f",
            json!([{"op": "test", "path": "/_maintainer/_id", "value": owner}]),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.body);

    // The same for a segment.
    let created = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "beta", "name": "Beta"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let mut segment = created.body;
    segment["name"] = json!("Beta users");
    let merged = app
        .patch_with(
            "/api/v2/segments/web/production/beta",
            "application/merge-patch+json",
            segment,
        )
        .await;
    assert_eq!(merged.status, 200, "{}", merged.body);
    assert_eq!(merged.body["name"], "Beta users");
    let tested = app
        .patch(
            "/api/v2/segments/web/production/beta",
            json!([{"op": "test", "path": "/_links/parent/href", "value": "/api/v2/segments/web/production"},
                   {"op": "add", "path": "/description", "value": "d"}]),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.body);
}

async fn keys_stored_under_older_rules_still_patch(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let created = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "beta", "name": "Beta"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    // Keys written when the rules allowed a leading underscore.
    for sql in [
        "INSERT INTO flags (project_id, key, name, search, version, creation_date, archived, \
         deprecated, temporary, maintainer_id, default_on, default_off, settings) \
         SELECT project_id, '_f', name, search, version, creation_date, archived, deprecated, \
         temporary, maintainer_id, default_on, default_off, \
         replace(settings, '\"key\":\"f\"', '\"key\":\"_f\"') FROM flags WHERE key = 'f'",
        "UPDATE flag_configs SET flag_key = '_f' WHERE flag_key = 'f'",
        "DELETE FROM flags WHERE key = 'f'",
        "UPDATE segments SET key = '_beta', \
         doc = replace(doc, '\"key\":\"beta\"', '\"key\":\"_beta\"') WHERE key = 'beta'",
    ] {
        app.db.execute_sql(sql);
    }
    let patched = app
        .patch(
            "/api/v2/flags/web/_f",
            json!([{"op": "replace", "path": "/description", "value": "still mine"}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["key"], "_f");
    let patched = app
        .patch_with(
            "/api/v2/segments/web/production/_beta",
            "application/merge-patch+json",
            json!({"description": "still mine"}),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["key"], "_beta");
}

async fn json_patches_read_links_of_projects_environments_and_members(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let member = app.member("ann@example.com", "reader").await;
    for (path, href, field) in [
        (
            "/api/v2/projects/web",
            "/api/v2/projects/web".to_owned(),
            "/name",
        ),
        (
            "/api/v2/projects/web/environments/production",
            "/api/v2/projects/web/environments/production".to_owned(),
            "/name",
        ),
        (
            &format!("/api/v2/members/{member}") as &str,
            format!("/api/v2/members/{member}"),
            "/firstName",
        ),
    ] {
        let ok = app
            .patch(
                path,
                json!([{"op": "test", "path": "/_links/self/href", "value": href},
                       {"op": "add", "path": field, "value": "Renamed"}]),
            )
            .await;
        assert_eq!(ok.status, 200, "{path}: {}", ok.body);
        assert_eq!(ok.body["_links"]["self"]["href"], href.as_str(), "{path}");
        app.patch(
            path,
            json!([{"op": "test", "path": "/_links/self/href", "value": "/elsewhere"}]),
        )
        .await
        .assert_error(409, "optimistic_locking_error");
        app.patch(
            path,
            json!([{"op": "replace", "path": "/_links/self/href", "value": "/elsewhere"}]),
        )
        .await
        .assert_error(422, "patch_failed");
    }
}

async fn sdk_keys_cannot_be_copied_out_of_their_fields(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let path = "/api/v2/projects/web/environments/production";
    let before = app.get(path).await.body;
    for op in [
        json!({"op": "copy", "from": "/apiKey", "path": "/name"}),
        json!({"op": "copy", "from": "/mobileKey", "path": "/tags/-"}),
        json!({"op": "move", "from": "/apiKey", "path": "/color"}),
    ] {
        app.patch(path, json!([op]))
            .await
            .assert_error(422, "patch_failed");
    }
    assert_eq!(app.get(path).await.body, before, "nothing changed");
}

on_both_backends!(
    sdk_keys_cannot_be_copied_out_of_their_fields,
    patches_read_the_resource_as_shown,
    keys_stored_under_older_rules_still_patch,
    json_patches_read_links_of_projects_environments_and_members
);
