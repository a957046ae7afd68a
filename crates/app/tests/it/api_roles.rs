//! Custom roles over HTTP: `/roles` create, read, list, patch (JSON Patch and merge patch) and
//! delete, with the statements checked, and what each role may do with them.

use serde_json::{json, Value};

use crate::common::{spawn, Backend};

fn body(key: &str, name: &str) -> Value {
    json!({
        "key": key,
        "name": name,
        "description": "toggles staging",
        "policy": [
            {"effect": "allow", "resources": ["proj/shop:env/staging:flag/*"], "actions": ["updateOn"]},
            {"effect": "deny", "resources": ["proj/*:env/production:flag/*;critical"], "actions": ["*"]}
        ]
    })
}

async fn custom_roles_round_trip(backend: Backend) {
    let app = spawn(backend).await;
    let created = app
        .post("/api/v2/roles", body("staging-toggler", "Staging toggler"))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let role = created.body.clone();
    assert_eq!(role["key"], "staging-toggler");
    assert_eq!(role["basePermissions"], "reader", "reader by default");
    assert_eq!(role["policy"], body("x", "x")["policy"]);
    assert_eq!(
        role["_links"]["self"]["href"],
        "/api/v2/roles/staging-toggler"
    );
    assert_eq!(role["_id"].as_str().map(str::len), Some(24));
    app.post("/api/v2/roles", body("staging-toggler", "Again"))
        .await
        .assert_error(409, "key_exists");
    let second = app.post("/api/v2/roles", body("auditor", "Auditor")).await;
    assert_eq!(second.status, 201, "{}", second.body);

    let fetched = app.get("/api/v2/roles/staging-toggler").await;
    assert_eq!(fetched.body, role);
    let list = app.get("/api/v2/roles").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["totalCount"], 2);
    let keys: Vec<&str> = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["auditor", "staging-toggler"]);
    let found = app
        .get("/api/v2/roles?filter=query:STAGING&sort=-name&limit=1")
        .await;
    assert_eq!(found.body["totalCount"], 1, "{}", found.body);
    assert_eq!(found.body["items"][0]["key"], "staging-toggler");
    app.get("/api/v2/roles?filter=tags:x")
        .await
        .assert_error(400, "invalid_request");

    let patched = app
        .patch(
            "/api/v2/roles/staging-toggler",
            json!([
                {"op": "test", "path": "/name", "value": "Staging toggler"},
                {"op": "replace", "path": "/name", "value": "Toggler"},
                {"op": "add", "path": "/policy/-", "value": {"effect": "allow", "resources": ["proj/shop"], "actions": ["viewProject"]}}
            ]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["name"], "Toggler");
    assert_eq!(patched.body["policy"].as_array().unwrap().len(), 3);
    let merged = app
        .patch_with(
            "/api/v2/roles/staging-toggler",
            "application/merge-patch+json",
            json!({"basePermissions": "no_access", "description": ""}),
        )
        .await;
    assert_eq!(merged.status, 200, "{}", merged.body);
    assert_eq!(merged.body["basePermissions"], "no_access");
    assert_eq!(merged.body["description"], "");
    let commented = app
        .patch(
            "/api/v2/roles/staging-toggler",
            json!({"comment": "rename", "merge": {"name": "Staging"}}),
        )
        .await;
    assert_eq!(commented.body["name"], "Staging", "{}", commented.body);
    app.patch(
        "/api/v2/roles/staging-toggler",
        json!([{"op": "test", "path": "/name", "value": "Toggler"}]),
    )
    .await
    .assert_error(409, "optimistic_locking_error");
    app.patch(
        "/api/v2/roles/staging-toggler",
        json!([{"op": "replace", "path": "/key", "value": "other"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch(
        "/api/v2/roles/staging-toggler",
        json!([{"op": "add", "path": "/policy/-", "value": {"effect": "allow", "resources": ["proj/*"], "actions": ["updatOn"]}}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch_with(
        "/api/v2/roles/staging-toggler",
        "application/json; domain-model=svc.semanticpatch",
        json!({"instructions": []}),
    )
    .await
    .assert_error(415, "unsupported_media_type");
    app.patch(
        "/api/v2/roles/staging-toggler",
        json!({"merge": {"name": "X"}, "comment": 3}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.patch(
        "/api/v2/roles/staging-toggler",
        json!([{"op": "remove", "path": "/basePermissions"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch_with(
        "/api/v2/roles/staging-toggler",
        "application/merge-patch+json",
        json!({"basePermissions": null}),
    )
    .await
    .assert_error(422, "patch_failed");
    let current = app.get("/api/v2/roles/staging-toggler").await.body;
    assert_eq!(current["name"], "Staging", "refused patches change nothing");
    assert_eq!(current["basePermissions"], "no_access");
    let sent_back = app
        .patch_with(
            "/api/v2/roles/staging-toggler",
            "application/merge-patch+json",
            current.clone(),
        )
        .await;
    assert_eq!(sent_back.status, 200, "{}", sent_back.body);
    assert_eq!(
        sent_back.body, current,
        "a GET's body sent back changes nothing"
    );

    let entries = app.get("/api/v2/auditlog?spec=role/*").await;
    let actions: Vec<&str> = entries.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["accesses"][0]["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "updateRole",
            "updateRole",
            "updateRole",
            "createRole",
            "createRole"
        ]
    );

    let deleted = app.delete("/api/v2/roles/auditor").await;
    assert_eq!(deleted.status, 204);
    app.get("/api/v2/roles/auditor")
        .await
        .assert_error(404, "not_found");
    app.delete("/api/v2/roles/auditor")
        .await
        .assert_error(404, "not_found");
}

async fn bad_roles_are_refused_with_the_field_named(backend: Backend) {
    let app = spawn(backend).await;
    let cases = [
        (json!({"key": "no way", "name": "N", "policy": []}), "key"),
        (json!({"key": "k", "name": " ", "policy": []}), "name"),
        (
            json!({"key": "k", "name": "N", "policy": [{"effect": "allow", "resources": ["project/*"]}]}),
            "policy[0].resources[0]",
        ),
        (
            json!({"key": "k", "name": "N", "policy": [{"effect": "allow", "resources": ["proj/*"], "notResources": ["acct"]}]}),
            "policy[0]",
        ),
        (
            json!({"key": "k", "name": "N", "policy": [{"effect": "allow", "resources": ["proj/*"], "actions": ["fly*"]}]}),
            "policy[0].actions[0]",
        ),
        (
            json!({"key": "k", "name": "N", "policy": [{"effect": "allow", "resources": ["proj/*"], "actions": ["*".repeat(65)]}]}),
            "policy[0].actions[0]",
        ),
        (json!({"key": "admin", "name": "N", "policy": []}), "key"),
        (
            // Only the last part carries tags (a resource is checked for its own).
            json!({"key": "k", "name": "N", "policy": [{"effect": "deny", "resources": ["proj/*;sensitive:env/*:flag/*"]}]}),
            "policy[0].resources[0]",
        ),
        (
            json!({"key": "k", "name": "N", "policy": [{"effect": "allow", "resources": ["proj/*a*b*c*d*e*f*g*h*i"]}]}),
            "policy[0].resources[0]",
        ),
        (
            json!({"key": "k", "name": "N", "policy": vec![
                json!({"effect": "allow", "resources": vec![format!("proj/{}", "p".repeat(500)); 10]}); 10
            ]}),
            "policy",
        ),
    ];
    for (post, attribute) in cases {
        let refused = app.post("/api/v2/roles", post.clone()).await;
        refused.assert_error(400, "invalid_request");
        assert!(
            refused.body["errors"]
                .as_array()
                .is_some_and(|errors| errors.iter().any(|e| e["attribute"] == attribute)),
            "{post}: {}",
            refused.body
        );
    }
    let many: Vec<Value> = (0..51)
        .map(|_| json!({"effect": "allow", "resources": ["proj/*"], "actions": ["viewProject"]}))
        .collect();
    app.post(
        "/api/v2/roles",
        json!({"key": "k", "name": "N", "policy": many}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/roles",
        json!({"key": "k", "name": "N", "policy": [], "basePermissions": "writer"}),
    )
    .await
    .assert_error(400, "invalid_request");
    assert_eq!(app.get("/api/v2/roles").await.body["totalCount"], 0);
}

async fn readers_read_roles_and_admins_change_them(backend: Backend) {
    let app = spawn(backend).await;
    assert_eq!(
        app.post("/api/v2/roles", body("ops", "Ops")).await.status,
        201
    );
    let reader = app.token("reader").await;
    let writer = app.token("writer").await;
    let admin = app.token("admin").await;
    assert_eq!(app.get_as(&reader, "/api/v2/roles/ops").await.status, 200);
    assert_eq!(app.get_as(&reader, "/api/v2/roles").await.status, 200);
    for token in [&reader, &writer] {
        app.post_as(token, "/api/v2/roles", body("x", "X"))
            .await
            .assert_error(403, "forbidden");
        app.patch_as(token, "/api/v2/roles/ops", json!([]))
            .await
            .assert_error(403, "forbidden");
        app.delete_as(token, "/api/v2/roles/ops")
            .await
            .assert_error(403, "forbidden");
    }
    assert_eq!(
        app.post_as(&admin, "/api/v2/roles", body("x", "X"))
            .await
            .status,
        201
    );
    assert_eq!(app.delete_as(&admin, "/api/v2/roles/x").await.status, 204);
}

/// Invites a `reader` holding custom role `role`: its `_id`.
async fn member_with_role<S, B>(app: &crate::common::TestApp<S>, email: &str, role: &str) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": email, "customRoles": [role]}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    invited.body["items"][0]["_id"].as_str().unwrap().to_owned()
}

/// Turns flag `f` of `project` on in `env` with `token`: the status.
pub(crate) async fn toggle<S, B>(
    app: &crate::common::TestApp<S>,
    token: &str,
    project: &str,
    env: &str,
) -> u16
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let body = json!({"environmentKey": env, "instructions": [{"kind": "turnFlagOn"}]});
    app.send(
        crate::common::request(
            actix_web::http::Method::PATCH,
            &format!("/api/v2/flags/{project}/f"),
            Some(token),
        )
        .insert_header(("Content-Type", crate::common::SEMANTIC))
        .set_payload(body.to_string()),
    )
    .await
    .status
}

async fn custom_roles_given_to_members_decide_their_requests(backend: Backend) {
    let app = spawn(backend).await;
    for project in ["shop", "blog"] {
        app.project(project).await;
        app.flag(project, "f").await;
    }
    let toggler = json!({
        "key": "toggler",
        "name": "Toggler",
        "policy": [{"effect": "allow", "resources": ["proj/shop:env/test:flag/*"], "actions": ["updateOn"]}]
    });
    assert_eq!(app.post("/api/v2/roles", toggler).await.status, 201);
    app.post(
        "/api/v2/members",
        json!([{"email": "x@example.com", "customRoles": ["nope"]}]),
    )
    .await
    .assert_error(400, "invalid_request");
    // The unknown role is named in its own invitation, and none of them is made.
    let second = app
        .post(
            "/api/v2/members",
            json!([
                {"email": "y@example.com", "customRoles": ["toggler"]},
                {"email": "z@example.com", "customRoles": ["toggler", "nope"]}
            ]),
        )
        .await;
    second.assert_error(400, "invalid_request");
    assert_eq!(second.body["errors"][0]["attribute"], "[1].customRoles");
    let members = app.get("/api/v2/members?filter=email:y@example.com").await;
    assert_eq!(members.body["totalCount"], 0, "{}", members.body);
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "t@example.com", "customRoles": ["toggler"]}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    assert_eq!(invited.body["items"][0]["customRoles"], json!(["toggler"]));
    assert_eq!(invited.body["items"][0]["role"], "reader");
    let id = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    let token = app.token_of_member(&id, domain::role::Role::Reader);

    // Exactly its action on exactly its resource; reads by its base permissions.
    assert_eq!(toggle(&app, &token, "shop", "test").await, 200);
    assert_eq!(toggle(&app, &token, "shop", "production").await, 403);
    assert_eq!(toggle(&app, &token, "blog", "test").await, 403);
    let rename = json!([{"op": "replace", "path": "/name", "value": "G"}]);
    app.patch_as(&token, "/api/v2/flags/shop/f", rename)
        .await
        .assert_error(403, "forbidden");
    let flag = app.get("/api/v2/flags/shop/f").await.body;
    assert_eq!(flag["environments"]["test"]["on"], true);
    assert_eq!(flag["environments"]["production"]["on"], false);
    assert_eq!(flag["name"], "f");

    // A role that is held is not deleted; a change to it counts at the next request.
    app.delete("/api/v2/roles/toggler")
        .await
        .assert_error(409, "optimistic_locking_error");
    let to_production = json!([{"op": "replace", "path": "/policy/0/resources/0",
        "value": "proj/shop:env/production:flag/*"}]);
    assert_eq!(
        app.patch("/api/v2/roles/toggler", to_production)
            .await
            .status,
        200
    );
    assert_eq!(toggle(&app, &token, "shop", "production").await, 200);
    let off = json!([
        {"op": "replace", "path": "/environments/test/on", "value": false},
        {"op": "replace", "path": "/environments/production/on", "value": false}
    ]);
    assert_eq!(app.patch("/api/v2/flags/shop/f", off).await.status, 200);
    assert_eq!(toggle(&app, &token, "shop", "test").await, 403);

    // A deny statement overrides the writer base role.
    let no_production = json!({
        "key": "no-production",
        "name": "No production",
        "policy": [{"effect": "deny", "resources": ["proj/*:env/production:flag/*"], "actions": ["*"]}]
    });
    assert_eq!(app.post("/api/v2/roles", no_production).await.status, 201);
    let writer = app.member("w@example.com", "writer").await;
    let writer_token = app.token_of_member(&writer, domain::role::Role::Writer);
    assert_eq!(toggle(&app, &writer_token, "blog", "production").await, 200);
    let give = json!([{"op": "add", "path": "/customRoles/-", "value": "no-production"}]);
    let given = app.patch(&format!("/api/v2/members/{writer}"), give).await;
    assert_eq!(given.status, 200, "{}", given.body);
    assert_eq!(given.body["customRoles"], json!(["no-production"]));
    assert_eq!(toggle(&app, &writer_token, "shop", "production").await, 403);
    assert_eq!(toggle(&app, &writer_token, "shop", "test").await, 200);
    let unknown = json!([{"op": "add", "path": "/customRoles/-", "value": "nope"}]);
    app.patch(&format!("/api/v2/members/{writer}"), unknown)
        .await
        .assert_error(422, "patch_failed");

    // Taken from the member: it counts at once, and the role can go.
    let take = json!([{"op": "replace", "path": "/customRoles", "value": []}]);
    assert_eq!(
        app.patch(&format!("/api/v2/members/{id}"), take)
            .await
            .status,
        200
    );
    assert_eq!(toggle(&app, &token, "shop", "production").await, 403);
    assert_eq!(app.delete("/api/v2/roles/toggler").await.status, 204);
    let audit = app
        .get("/api/v2/auditlog?spec=member/*&limit=20")
        .await
        .body;
    let actions: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["accesses"].as_array().unwrap())
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"updateCustomRole"), "{actions:?}");
}

async fn custom_roles_grant_no_power_over_custom_roles(backend: Backend) {
    let app = spawn(backend).await;
    let role = |key: &str, effect: &str, resources: &[&str], actions: &[&str]| {
        json!({"key": key, "name": key,
            "policy": [{"effect": effect, "resources": resources, "actions": actions}]})
    };
    for body in [
        role("shared", "allow", &["proj/*"], &["viewProject"]),
        role(
            "editor",
            "allow",
            &["role/*", "member/*", "webhook/*"],
            &[
                "createWebhook",
                "deleteWebhook",
                "updateRole",
                "deleteRole",
                "updateCustomRole",
                "viewMembers",
            ],
        ),
        role(
            "deny-all",
            "deny",
            &["acct", "member/*", "role/*", "proj/*"],
            &["*"],
        ),
    ] {
        assert_eq!(app.post("/api/v2/roles", body).await.status, 201);
    }
    let editor = member_with_role(&app, "e@example.com", "editor").await;
    let holder = app.member("h@example.com", "writer").await;
    let give_shared = json!([{"op": "add", "path": "/customRoles/-", "value": "shared"}]);
    assert_eq!(
        app.patch(&format!("/api/v2/members/{holder}"), give_shared.clone())
            .await
            .status,
        200
    );
    let token = app.token_of_member(&editor, domain::role::Role::Reader);

    // A reader whose policy allows the actions over roles still may not take them.
    let widen = json!([{"op": "replace", "path": "/policy/0/actions", "value": ["*"]}]);
    app.patch_as(&token, "/api/v2/roles/shared", widen)
        .await
        .assert_error(403, "forbidden");
    app.patch_as(&token, &format!("/api/v2/members/{editor}"), give_shared)
        .await
        .assert_error(403, "forbidden");
    // Refused before it could name who holds the role.
    let refused = app.delete_as(&token, "/api/v2/roles/shared").await;
    refused.assert_error(403, "forbidden");
    assert!(
        !refused.body.to_string().contains("h@example.com"),
        "{}",
        refused.body
    );
    // A webhook is sent every change of the account: not for a policy limited to some.
    let hook = app
        .post_as(
            &token,
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": true}),
        )
        .await;
    hook.assert_error(403, "forbidden");
    assert!(
        hook.body["message"]
            .as_str()
            .unwrap()
            .contains("every change"),
        "{}",
        hook.body
    );
    // Nor may it silence one.
    let owned = app
        .post(
            "/api/v2/webhooks",
            json!({"url": "https://example.com/hook", "sign": false, "on": true}),
        )
        .await;
    assert_eq!(owned.status, 200, "{}", owned.body);
    let hook_id = owned.body["_id"].as_str().unwrap();
    app.delete_as(&token, &format!("/api/v2/webhooks/{hook_id}"))
        .await
        .assert_error(403, "forbidden");
    assert_eq!(
        app.get(&format!("/api/v2/webhooks/{hook_id}")).await.status,
        200
    );
    // A statement naming no resource is refused, not stored to deny nothing.
    let nowhere = role("nowhere", "deny", &["flag/x:proj/p"], &["*"]);
    let refused = app.post("/api/v2/roles", nowhere).await;
    refused.assert_error(400, "invalid_request");
    assert!(
        refused.body.to_string().contains("policy[0].resources[0]"),
        "{}",
        refused.body
    );

    // The owner is never locked out by a custom role it holds.
    let deny = json!([{"op": "add", "path": "/customRoles/-", "value": "deny-all"}]);
    assert_eq!(app.patch("/api/v2/members/me", deny).await.status, 200);
    assert_eq!(app.get("/api/v2/members").await.status, 200);
    assert_eq!(app.get("/api/v2/roles/deny-all").await.status, 200);
}

async fn tokens_act_with_custom_roles_and_inline_roles(backend: Backend) {
    let app = spawn(backend).await;
    for project in ["shop", "blog"] {
        app.project(project).await;
        app.flag(project, "f").await;
    }
    let toggler = json!({
        "key": "toggler",
        "name": "Toggler",
        "policy": [{"effect": "allow", "resources": ["proj/shop:env/test:flag/*"], "actions": ["updateOn"]}]
    });
    let role_id = app.post("/api/v2/roles", toggler).await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();

    let created = app
        .post(
            "/api/v2/tokens",
            json!({"name": "ci", "serviceToken": true, "customRoleIds": [role_id]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["role"], "no_access");
    assert_eq!(created.body["customRoleIds"], json!([role_id]));
    let ci = created.body["token"].as_str().unwrap().to_owned();
    let ci_id = created.body["_id"].as_str().unwrap().to_owned();
    assert_eq!(toggle(&app, &ci, "shop", "test").await, 200);
    assert_eq!(toggle(&app, &ci, "shop", "production").await, 403);
    assert_eq!(
        app.get_as(&ci, "/api/v2/flags/blog/f").await.status,
        200,
        "reader base"
    );

    let inline = app
        .post(
            "/api/v2/tokens",
            json!({"name": "blog", "serviceToken": true, "inlineRole": [
                {"effect": "allow", "resources": ["proj/blog:env/*:flag/*"], "actions": ["updateOn"]},
                {"effect": "allow", "resources": ["proj/blog"], "actions": ["viewProject"]}
            ]}),
        )
        .await;
    assert_eq!(inline.status, 201, "{}", inline.body);
    let blog = inline.body["token"].as_str().unwrap().to_owned();
    assert_eq!(toggle(&app, &blog, "blog", "test").await, 200);
    assert_eq!(toggle(&app, &blog, "shop", "production").await, 403);
    app.get_as(&blog, "/api/v2/flags/shop/f")
        .await
        .assert_error(403, "forbidden");

    // A personal token with custom roles acts with them (and never beyond its member).
    let personal = app
        .post(
            "/api/v2/tokens",
            json!({"name": "mine", "customRoleIds": [role_id]}),
        )
        .await;
    assert_eq!(personal.status, 201, "{}", personal.body);
    let mine = personal.body["token"].as_str().unwrap().to_owned();
    assert_eq!(toggle(&app, &mine, "shop", "production").await, 403);
    assert_eq!(toggle(&app, &mine, "blog", "production").await, 403);

    // Whoever resets a token holds what it acts with: only an admin manages such tokens.
    let rotator = json!({
        "key": "rotator",
        "name": "Rotator",
        "policy": [{"effect": "allow", "resources": ["member/*:token/*", "webhook/*"],
            "actions": ["resetAccessToken", "viewAccessTokens", "viewWebhooks"]}]
    });
    assert_eq!(app.post("/api/v2/roles", rotator).await.status, 201);
    let member = member_with_role(&app, "r@example.com", "rotator").await;
    let rotating = app.token_of_member(&member, domain::role::Role::Reader);
    app.post_as(
        &rotating,
        &format!("/api/v2/tokens/{ci_id}/reset"),
        json!({}),
    )
    .await
    .assert_error(403, "forbidden");
    app.get_as(&rotating, "/api/v2/webhooks")
        .await
        .assert_error(403, "forbidden");
    // An inline role is at most what a custom role may be.
    let wide: Vec<Value> = (0..50)
        .map(|i| {
            let long = |n: usize| format!("proj/{}{i}x{n}", "p".repeat(400));
            json!({"effect": "allow", "resources": [long(1), long(2)]})
        })
        .collect();
    app.post("/api/v2/tokens", json!({"inlineRole": wide}))
        .await
        .assert_error(400, "invalid_request");

    // Bad grants are named.
    app.post(
        "/api/v2/tokens",
        json!({"customRoleIds": ["0123456789abcdef01234567"]}),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post("/api/v2/tokens", json!({"customRoleIds": ["nope"]}))
        .await
        .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/tokens",
        json!({"inlineRole": [{"effect": "allow"}]}),
    )
    .await
    .assert_error(400, "invalid_request");

    // A role a token acts with is not deleted; taken away, it can go.
    let refused = app.delete("/api/v2/roles/toggler").await;
    refused.assert_error(409, "optimistic_locking_error");
    assert!(
        refused.body["message"].as_str().unwrap().contains("'ci'"),
        "{}",
        refused.body
    );
    let alone = json!([{"op": "replace", "path": "/customRoleIds", "value": []}]);
    app.patch(&format!("/api/v2/tokens/{ci_id}"), alone)
        .await
        .assert_error(422, "patch_failed");
    let reader = json!([
        {"op": "replace", "path": "/customRoleIds", "value": []},
        {"op": "replace", "path": "/role", "value": "reader"}
    ]);
    let patched = app.patch(&format!("/api/v2/tokens/{ci_id}"), reader).await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert!(
        patched.body.get("customRoleIds").is_none(),
        "{}",
        patched.body
    );
    assert_eq!(toggle(&app, &ci, "shop", "test").await, 403);
    let mine_id = personal.body["_id"].as_str().unwrap();
    assert_eq!(
        app.delete(&format!("/api/v2/tokens/{mine_id}"))
            .await
            .status,
        204
    );
    assert_eq!(app.delete("/api/v2/roles/toggler").await.status, 204);
}

/// `_access` says what the caller may do to the resource a single read or write shows: each
/// action of its kind, allowed or denied, with the statement that decided and its role.
async fn answers_carry_the_callers_access(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    let role = json!({"key": "renamer", "name": "Renamer", "policy": [
        {"effect": "allow", "resources": ["proj/p"], "actions": ["updateName"]},
        {"effect": "deny", "resources": ["proj/p"], "actions": ["deleteProject"]},
        {"effect": "allow", "resources": ["proj/p:env/test:flag/*"], "actions": ["updateOn"]}
    ]});
    assert_eq!(app.post("/api/v2/roles", role).await.status, 201);
    let member = member_with_role(&app, "m@example.com", "renamer").await;
    let token = app.token_of_member(&member, domain::role::Role::Reader);
    let entry = |access: &Value, list: &str, action: &str| -> Option<Value> {
        access[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["action"] == action)
            .cloned()
    };

    let shown = app.get_as(&token, "/api/v2/projects/p").await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    let access = &shown.body["_access"];
    let renamed = entry(access, "allowed", "updateName").unwrap();
    assert_eq!(renamed["reason"]["role_name"], "renamer");
    assert_eq!(renamed["reason"]["effect"], "allow");
    assert_eq!(renamed["reason"]["resources"], json!(["proj/p"]));
    let viewed = entry(access, "allowed", "viewProject").unwrap();
    assert_eq!(viewed["reason"]["role_name"], "reader");
    let deleted = entry(access, "denied", "deleteProject").unwrap();
    assert_eq!(deleted["reason"]["effect"], "deny");
    let tagged = entry(access, "denied", "updateTags").unwrap();
    // No statement allows it: its reason is the refusal alone, as the original's schema
    // requires a reason with an effect (issue 32, item 4).
    assert_eq!(tagged["reason"], json!({"effect": "deny"}), "{tagged}");
    let all =
        access["allowed"].as_array().unwrap().len() + access["denied"].as_array().unwrap().len();
    assert_eq!(
        all,
        domain::policy::actions::of_kind(domain::policy::actions::ResourceKind::Project).count()
    );

    // The owner may do everything; its answer is its own.
    let owned = app.get("/api/v2/projects/p").await.body;
    assert_eq!(owned["_access"]["denied"], json!([]));
    assert!(entry(&owned["_access"], "allowed", "deleteProject").is_some());
    // A write's answer says it too; lists and the audit log do not.
    let patched = app
        .patch_as(
            &token,
            "/api/v2/projects/p",
            json!([{"op": "replace", "path": "/name", "value": "P2"}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert!(entry(&patched.body["_access"], "allowed", "updateName").is_some());
    let listed = app.get("/api/v2/projects").await.body;
    assert!(listed["items"][0].get("_access").is_none(), "{listed}");
    let audit = app.get("/api/v2/auditlog?spec=proj/p").await.body;
    let id = audit["items"][0]["_id"].as_str().unwrap().to_owned();
    let entry_body = app.get(&format!("/api/v2/auditlog/{id}")).await.body;
    assert!(
        entry_body["currentVersion"].get("_access").is_none(),
        "{entry_body}"
    );

    // A flag's configurations, each in its environment, with expand=_access (never from or
    // into the read cache: the owner's answer first, then the member's).
    app.flag("p", "f").await;
    let path = "/api/v2/flags/p/f?expand=_access";
    let owned = app.get(path).await;
    assert_eq!(owned.status, 200, "{}", owned.body);
    assert_eq!(
        owned.body["environments"]["test"]["_access"]["denied"],
        json!([])
    );
    let shown = app.get_as(&token, path).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    let test = &shown.body["environments"]["test"]["_access"];
    let on = entry(test, "allowed", "updateOn").unwrap();
    assert_eq!(on["reason"]["role_name"], "renamer");
    assert_eq!(on["reason"]["resources"], json!(["proj/p:env/test:flag/*"]));
    let production = &shown.body["environments"]["production"]["_access"];
    assert!(
        entry(production, "denied", "updateOn").is_some(),
        "{production}"
    );
    assert_eq!(
        test["allowed"].as_array().unwrap().len() + test["denied"].as_array().unwrap().len(),
        domain::policy::actions::of_kind(domain::policy::actions::ResourceKind::Flag).count()
    );
    let one_env = app.get_as(&token, &format!("{path}&env=test")).await.body;
    assert!(one_env["environments"]["production"].is_null(), "{one_env}");
    assert!(one_env["environments"]["test"]["_access"]["allowed"].is_array());
    let plain = app.get_as(&token, "/api/v2/flags/p/f").await.body;
    assert!(
        plain["environments"]["test"].get("_access").is_none(),
        "{plain}"
    );
    app.get("/api/v2/flags/p/f?expand=evaluation")
        .await
        .assert_error(400, "invalid_request");

    // Actions over policies need the admin base role: denied, whatever a statement says.
    let made = app
        .post("/api/v2/teams", json!({"key": "t", "name": "T"}))
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let team = app.get_as(&token, "/api/v2/teams/t").await;
    assert_eq!(team.status, 200, "{}", team.body);
    assert!(entry(&team.body["_access"], "allowed", "viewTeams").is_some());
    assert!(entry(&team.body["_access"], "denied", "deleteTeam").is_some());
    for path in [
        "/api/v2/projects/p/environments/test",
        "/api/v2/roles/renamer",
    ] {
        let shown = app.get_as(&token, path).await;
        assert_eq!(shown.status, 200, "{path}: {}", shown.body);
        assert!(shown.body["_access"]["allowed"].is_array(), "{path}");
    }
}

/// A flag's `_access` repeats the deciding statement for each action in each environment: with
/// statements as large as roles allow, the answer is refused past its bound (400, naming `env`)
/// rather than built, and one environment still fits.
async fn a_flags_access_is_bounded(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    app.flag("p", "f").await;
    let mut resources = vec!["proj/p:env/*:flag/*".to_owned()];
    resources.extend((0..49).map(|i| format!("proj/p:env/*:flag/{i}{}", "a".repeat(480))));
    let role = json!({"key": "large", "name": "Large", "policy": [
        {"effect": "allow", "resources": resources, "actions": ["*"]}
    ]});
    let made = app.post("/api/v2/roles", role).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let member = member_with_role(&app, "m@example.com", "large").await;
    let token = app.token_of_member(&member, domain::role::Role::Reader);
    let refused = app.get_as(&token, "/api/v2/flags/p/f?expand=_access").await;
    refused.assert_error(400, "invalid_request");
    assert!(
        refused.body["message"].as_str().unwrap().contains("env"),
        "{}",
        refused.body
    );
    let one = app
        .get_as(&token, "/api/v2/flags/p/f?expand=_access&env=test")
        .await;
    assert_eq!(one.status, 200, "{}", one.body);
    let allowed = one.body["environments"]["test"]["_access"]["allowed"]
        .as_array()
        .unwrap();
    assert!(
        allowed.iter().any(|a| a["action"] == "updateOn"),
        "{}",
        one.body
    );
}

/// A flag's `_access` in an environment agrees with what its requests are decided as: a change
/// to what every environment shares needs every environment, so a role limited to `test`, or
/// denied `production`, shows it denied in `test` too (with the refusing statement), and the
/// request is refused; what is the environment's own is decided there.
async fn a_flags_access_agrees_with_its_decisions(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    app.flag("p", "f").await;
    let roles = [
        (
            "test-only",
            json!([
                {"effect": "allow", "resources": ["proj/p:env/test:flag/*"], "actions": ["*"]}
            ]),
        ),
        (
            "not-production",
            json!([
                {"effect": "allow", "resources": ["proj/p:env/*:flag/*"], "actions": ["*"]},
                {"effect": "deny", "resources": ["proj/p:env/production:flag/*"], "actions": ["*"]}
            ]),
        ),
    ];
    for (i, (key, policy)) in roles.iter().enumerate() {
        let role = json!({"key": key, "name": key, "policy": policy});
        assert_eq!(app.post("/api/v2/roles", role).await.status, 201);
        let member = member_with_role(&app, &format!("m{i}@example.com"), key).await;
        let token = app.token_of_member(&member, domain::role::Role::Reader);
        let shown = app
            .get_as(&token, "/api/v2/flags/p/f?expand=_access&env=test")
            .await;
        assert_eq!(shown.status, 200, "{}", shown.body);
        let access = &shown.body["environments"]["test"]["_access"];
        let listed = |list: &str, action: &str| {
            access[list]
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["action"] == action)
                .cloned()
        };
        assert!(listed("allowed", "updateOn").is_some(), "{key}: {access}");
        let renamed = listed("denied", "updateName");
        assert!(renamed.is_some(), "{key}: {access}");
        if *key == "not-production" {
            assert_eq!(renamed.unwrap()["reason"]["effect"], "deny", "{access}");
        }
        assert!(listed("denied", "deleteFlag").is_some(), "{key}: {access}");
        // As decided: the environment's own change passes, the shared one is refused.
        assert_eq!(toggle(&app, &token, "p", "test").await, 200, "{key}");
        let rename = json!({"environmentKey": "test",
            "instructions": [{"kind": "updateName", "value": "F2"}]});
        let refused = app
            .send(
                crate::common::request(
                    actix_web::http::Method::PATCH,
                    "/api/v2/flags/p/f",
                    Some(&token),
                )
                .insert_header(("Content-Type", crate::common::SEMANTIC))
                .set_payload(rename.to_string()),
            )
            .await;
        assert_eq!(refused.status, 403, "{key}: {}", refused.body);
    }
}

/// The roles a caller acts with hold at most `MAX_CALLER_SPECIFIERS` resource specifiers
/// together: past it every request of the caller is refused (each decision reads them all),
/// with a message saying so; trimmed, the caller works again.
async fn a_callers_roles_are_bounded_together(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    let per_role = 1_000;
    let roles = service::MAX_CALLER_SPECIFIERS / per_role + 1;
    let mut keys = Vec::new();
    for r in 0..roles {
        let statements: Vec<Value> = (0..per_role / 20)
            .map(|s| {
                let resources: Vec<String> =
                    (0..20).map(|i| format!("proj/p{r}-{s}-{i}")).collect();
                json!({"effect": "allow", "resources": resources, "actions": ["viewProject"]})
            })
            .collect();
        let key = format!("wide{r}");
        let role = json!({"key": key, "name": key, "policy": statements});
        let made = app.post("/api/v2/roles", role).await;
        assert_eq!(made.status, 201, "{}", made.body);
        keys.push(key);
    }
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "m@example.com", "role": "reader", "customRoles": keys}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let member = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    let token = app.token_of_member(&member, domain::role::Role::Reader);
    let refused = app.get_as(&token, "/api/v2/projects/p").await;
    refused.assert_error(403, "forbidden");
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains(&service::MAX_CALLER_SPECIFIERS.to_string()),
        "{}",
        refused.body
    );
    let fewer = json!([{"op": "replace", "path": "/customRoles", "value": keys[..roles - 1]}]);
    let trimmed = app.patch(&format!("/api/v2/members/{member}"), fewer).await;
    assert_eq!(trimmed.status, 200, "{}", trimmed.body);
    assert_eq!(app.get_as(&token, "/api/v2/projects/p").await.status, 200);
}

on_both_backends!(
    a_callers_roles_are_bounded_together,
    a_flags_access_agrees_with_its_decisions,
    a_flags_access_is_bounded,
    answers_carry_the_callers_access,
    tokens_act_with_custom_roles_and_inline_roles,
    custom_roles_grant_no_power_over_custom_roles,
    custom_roles_given_to_members_decide_their_requests,
    custom_roles_round_trip,
    bad_roles_are_refused_with_the_field_named,
    readers_read_roles_and_admins_change_them
);
