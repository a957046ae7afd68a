//! A caller never creates, resets, widens or takes over a token that may do anything the caller
//! may not (issue 32, item 1): decided on the whole policy, base role and statements.

use serde_json::{json, Value};

use crate::api_roles::toggle;
use crate::common::{spawn, Backend, OWNER};

fn no_production() -> Value {
    json!([{"effect": "deny", "resources": ["proj/*:env/production:flag/*"], "actions": ["*"]}])
}

async fn restricted_tokens_cannot_mint_or_free_wider_ones(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "f").await;

    // An admin service token denied production flags.
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "bot", "role": "admin", "serviceToken": true, "inlineRole": no_production()}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let bot = made.body["token"].as_str().unwrap().to_owned();
    let bot_id = made.body["_id"].as_str().unwrap().to_owned();
    assert_eq!(toggle(&app, &bot, "shop", "production").await, 403);
    assert_eq!(toggle(&app, &bot, "shop", "test").await, 200);

    // It cannot make an unrestricted admin (nor a writer) service token...
    for role in ["admin", "writer"] {
        let refused = app
            .post_as(
                &bot,
                "/api/v2/tokens",
                json!({"name": "free", "role": role, "serviceToken": true}),
            )
            .await;
        refused.assert_error(403, "forbidden");
        assert!(
            refused.body["message"]
                .as_str()
                .unwrap()
                .contains("could do what you may not"),
            "{}",
            refused.body
        );
    }
    // ...nor a reader token whose inline role allows what it is denied...
    app.post_as(
        &bot,
        "/api/v2/tokens",
        json!({"name": "sneaky", "role": "reader", "serviceToken": true, "inlineRole": [
            {"effect": "allow", "resources": ["proj/*:env/production:flag/*"], "actions": ["updateOn"]}
        ]}),
    )
    .await
    .assert_error(403, "forbidden");
    // ...but one under the same deny, or a reader, it may.
    let same = app
        .post_as(
            &bot,
            "/api/v2/tokens",
            json!({"name": "same", "role": "admin", "serviceToken": true, "inlineRole": no_production()}),
        )
        .await;
    assert_eq!(same.status, 201, "{}", same.body);
    let reader = app
        .post_as(
            &bot,
            "/api/v2/tokens",
            json!({"name": "r", "role": "reader", "serviceToken": true}),
        )
        .await;
    assert_eq!(reader.status, 201, "{}", reader.body);

    // It cannot take over an unrestricted admin service token by resetting it.
    let free = app
        .post(
            "/api/v2/tokens",
            json!({"name": "free", "role": "admin", "serviceToken": true}),
        )
        .await;
    assert_eq!(free.status, 201);
    let free_id = free.body["_id"].as_str().unwrap();
    app.post_as(&bot, &format!("/api/v2/tokens/{free_id}/reset"), json!({}))
        .await
        .assert_error(403, "forbidden");
    // Nor clear its own inline role, nor widen the reader it made.
    let clear = json!([{"op": "replace", "path": "/inlineRole", "value": []}]);
    app.patch_as(&bot, &format!("/api/v2/tokens/{bot_id}"), clear)
        .await
        .assert_error(403, "forbidden");
    let reader_id = reader.body["_id"].as_str().unwrap();
    let widen = json!([{"op": "replace", "path": "/role", "value": "admin"}]);
    app.patch_as(&bot, &format!("/api/v2/tokens/{reader_id}"), widen)
        .await
        .assert_error(403, "forbidden");
    // A change that gives no power is still its to make; the store kept the deny.
    let rename = json!([{"op": "replace", "path": "/name", "value": "bot2"}]);
    assert_eq!(
        app.patch_as(&bot, &format!("/api/v2/tokens/{bot_id}"), rename)
            .await
            .status,
        200
    );
    let stored = app.get(&format!("/api/v2/tokens/{bot_id}")).await.body;
    assert_eq!(stored["inlineRole"], no_production());
    assert_eq!(toggle(&app, &bot, "shop", "production").await, 403);
}

async fn the_owners_restricted_token_cannot_mint_the_owner(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "f").await;
    let made = app
        .post(
            "/api/v2/tokens",
            json!({"name": "careful", "role": "admin", "inlineRole": no_production()}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let careful = made.body["token"].as_str().unwrap().to_owned();
    assert_eq!(toggle(&app, &careful, "shop", "production").await, 403);
    app.post_as(
        &careful,
        "/api/v2/tokens",
        json!({"name": "owner-again", "role": "admin"}),
    )
    .await
    .assert_error(403, "forbidden");
    // The owner's own tokens, restricted or not, stay the owner's to reset: not this one's.
    let owner_tokens = app.get("/api/v2/tokens").await.body;
    let owner_token = owner_tokens["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "owner")
        .unwrap()["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post_as(
        &careful,
        &format!("/api/v2/tokens/{owner_token}/reset"),
        json!({}),
    )
    .await
    .assert_error(403, "forbidden");
}

async fn denies_of_custom_roles_follow_into_new_tokens(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "f").await;
    let role = json!({
        "key": "no-prod",
        "name": "No production",
        "policy": no_production(),
    });
    assert_eq!(app.post("/api/v2/roles", role).await.status, 201);
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "a@example.com", "role": "admin", "customRoles": ["no-prod"]}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let member = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    let admin = app.token_of_member(&member, domain::role::Role::Admin);
    assert_eq!(toggle(&app, &admin, "shop", "production").await, 403);
    app.post_as(
        &admin,
        "/api/v2/tokens",
        json!({"name": "free", "role": "admin", "serviceToken": true}),
    )
    .await
    .assert_error(403, "forbidden");
    // A personal token acts under its member's roles too: that one it may make.
    let personal = app
        .post_as(
            &admin,
            "/api/v2/tokens",
            json!({"name": "mine", "role": "admin"}),
        )
        .await;
    assert_eq!(personal.status, 201, "{}", personal.body);
    let mine = personal.body["token"].as_str().unwrap();
    assert_eq!(toggle(&app, mine, "shop", "production").await, 403);
    // A service token carrying the role's deny, too.
    let role_id = app.get("/api/v2/roles/no-prod").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let kept = app
        .post_as(
            &admin,
            "/api/v2/tokens",
            json!({"name": "kept", "role": "admin", "serviceToken": true, "customRoleIds": [role_id]}),
        )
        .await;
    assert_eq!(kept.status, 201, "{}", kept.body);
    let kept = kept.body["token"].as_str().unwrap();
    assert_eq!(toggle(&app, kept, "shop", "production").await, 403);
    assert_eq!(toggle(&app, kept, "shop", "test").await, 200);
}

/// A restart with the bootstrap token set neither revives it once reset nor gives it to anyone.
async fn the_bootstrap_token_counts_only_when_the_account_is_created(backend: Backend) {
    use std::sync::Arc;
    let app = spawn(backend).await;
    let tokens = app.get("/api/v2/tokens").await.body;
    let owner_token = tokens["items"][0]["_id"].as_str().unwrap().to_owned();
    let reset = app
        .post(&format!("/api/v2/tokens/{owner_token}/reset"), json!({}))
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let new_secret = reset.body["token"].as_str().unwrap().to_owned();
    let restarted = service::Service::new(
        app.db.store.clone(),
        Arc::new(service::SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    );
    let outcome = restarted
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .unwrap();
    assert_eq!(outcome, service::BootstrapOutcome::IgnoredToken);
    app.get("/api/v2/projects")
        .await
        .assert_error(401, "unauthorized");
    let listed = app.get_as(&new_secret, "/api/v2/tokens").await;
    assert_eq!(listed.body["totalCount"], 1, "{}", listed.body);
    assert!(restarted.authentication().authenticate(OWNER).is_err());
}

/// Issue 32, item 11: rename, reset, rename back must not step around a deny naming a token.
async fn a_rename_never_steps_around_a_statement(backend: Backend) {
    let app = spawn(backend).await;
    let deploy = app
        .post(
            "/api/v2/tokens",
            json!({"name": "deploy-bot", "role": "writer", "serviceToken": true}),
        )
        .await;
    let deploy_id = deploy.body["_id"].as_str().unwrap().to_owned();
    let guarded = app
        .post(
            "/api/v2/tokens",
            json!({"name": "rotator", "role": "admin", "serviceToken": true, "inlineRole": [
                {"effect": "deny", "resources": ["member/*:token/deploy-bot"], "actions": ["resetAccessToken"]}
            ]}),
        )
        .await;
    assert_eq!(guarded.status, 201, "{}", guarded.body);
    let rotator = guarded.body["token"].as_str().unwrap().to_owned();
    let reset = format!("/api/v2/tokens/{deploy_id}/reset");
    app.post_as(&rotator, &reset, json!({}))
        .await
        .assert_error(403, "forbidden");
    let rename = |name: &str| json!([{"op": "replace", "path": "/name", "value": name}]);
    let refused = app
        .patch_as(
            &rotator,
            &format!("/api/v2/tokens/{deploy_id}"),
            rename("x"),
        )
        .await;
    refused.assert_error(403, "forbidden");
    assert!(
        refused.body["message"]
            .as_str()
            .unwrap()
            .contains("resetAccessToken"),
        "{}",
        refused.body
    );
    assert_eq!(
        app.get(&format!("/api/v2/tokens/{deploy_id}")).await.body["name"],
        "deploy-bot"
    );
    // Renaming another token onto the guarded name only takes from the caller: allowed.
    let other = app
        .post(
            "/api/v2/tokens",
            json!({"name": "other", "role": "reader", "serviceToken": true}),
        )
        .await;
    let other_id = other.body["_id"].as_str().unwrap();
    let onto = app
        .patch_as(
            &rotator,
            &format!("/api/v2/tokens/{other_id}"),
            rename("deploy-bot"),
        )
        .await;
    assert_eq!(onto.status, 200, "{}", onto.body);
}

/// Demoting a member for a moment does not hand its personal tokens to whoever outranks it then.
async fn demoting_a_member_hands_over_none_of_its_tokens(backend: Backend) {
    let app = spawn(backend).await;
    let them = app.member("b@example.com", "admin").await;
    app.token_of_member(&them, domain::role::Role::Admin);
    let invited = app.member("a@example.com", "admin").await;
    let admin = app.token_of_member(&invited, domain::role::Role::Admin);
    let listed = app.get("/api/v2/tokens?showAll=true").await.body;
    let theirs = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["_member"]["_id"] == them.as_str() || t["memberId"] == them.as_str())
        .map(|t| t["_id"].as_str().unwrap().to_owned());
    let Some(theirs) = theirs else {
        panic!("the member's token is listed: {listed}");
    };
    let demote = json!([{"op": "replace", "path": "/role", "value": "reader"}]);
    assert_eq!(
        app.patch_as(&admin, &format!("/api/v2/members/{them}"), demote)
            .await
            .status,
        200
    );
    app.post_as(&admin, &format!("/api/v2/tokens/{theirs}/reset"), json!({}))
        .await
        .assert_error(403, "forbidden");
}

on_both_backends!(
    demoting_a_member_hands_over_none_of_its_tokens,
    roles_members_and_teams_give_nobody_more_than_the_caller,
    a_rename_never_steps_around_a_statement,
    the_bootstrap_token_counts_only_when_the_account_is_created,
    restricted_tokens_cannot_mint_or_free_wider_ones,
    the_owners_restricted_token_cannot_mint_the_owner,
    denies_of_custom_roles_follow_into_new_tokens,
);

/// Issue 32, the same ideas by other paths: a caller restricted by a custom role cannot free
/// itself or anyone through roles, members or teams, and gives nobody a power it lacks.
async fn roles_members_and_teams_give_nobody_more_than_the_caller(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "f").await;
    for role in [
        json!({"key": "no-prod", "name": "No production", "basePermissions": "no_access", "policy": no_production()}),
        json!({"key": "no-prod-2", "name": "No production", "basePermissions": "no_access", "policy": no_production()}),
    ] {
        assert_eq!(app.post("/api/v2/roles", role).await.status, 201);
    }
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "a@example.com", "role": "admin", "customRoles": ["no-prod"]}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let me = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    let team = json!({"key": "restricted", "name": "Restricted", "customRoleKeys": ["no-prod-2"], "memberIDs": [me]});
    assert_eq!(app.post("/api/v2/teams", team).await.status, 201);
    let admin = app.token_of_member(&me, domain::role::Role::Admin);
    assert_eq!(toggle(&app, &admin, "shop", "production").await, 403);

    // Editing the role that restricts it (dropping the deny) is refused; renaming it is not.
    let drop_deny = json!([{"op": "replace", "path": "/policy", "value": []}]);
    app.patch_as(&admin, "/api/v2/roles/no-prod", drop_deny)
        .await
        .assert_error(403, "forbidden");
    let rename = json!([{"op": "replace", "path": "/name", "value": "Still no production"}]);
    assert_eq!(
        app.patch_as(&admin, "/api/v2/roles/no-prod", rename)
            .await
            .status,
        200
    );
    // Taking the role from itself is allowed while its team's role keeps the same deny (it
    // gains nothing), as is freeing nobody; freeing another member is refused.
    let free = json!([{"op": "replace", "path": "/customRoles", "value": []}]);
    let kept = app
        .patch_as(&admin, &format!("/api/v2/members/{me}"), free.clone())
        .await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(toggle(&app, &admin, "shop", "production").await, 403);
    let other = app
        .post(
            "/api/v2/members",
            json!([{"email": "o@example.com", "role": "writer", "customRoles": ["no-prod"]}]),
        )
        .await;
    let other = other.body["items"][0]["_id"].as_str().unwrap().to_owned();
    app.patch_as(&admin, &format!("/api/v2/members/{other}"), free)
        .await
        .assert_error(403, "forbidden");
    // Leaving its team, or deleting the team: refused.
    let leave = json!({"instructions": [{"kind": "removeMembers", "values": [me]}]});
    app.send(
        crate::common::request(
            actix_web::http::Method::PATCH,
            "/api/v2/teams/restricted",
            Some(&admin),
        )
        .insert_header(("Content-Type", crate::common::SEMANTIC))
        .set_payload(leave.to_string()),
    )
    .await
    .assert_error(403, "forbidden");
    app.delete_as(&admin, "/api/v2/teams/restricted")
        .await
        .assert_error(403, "forbidden");
    // Inviting an unrestricted admin or writer: refused; a reader, or a writer under the same
    // deny: allowed.
    for (email, role, roles, status) in [
        ("w@example.com", "writer", json!([]), 403),
        ("b@example.com", "admin", json!([]), 403),
        ("r@example.com", "reader", json!([]), 201),
        ("v@example.com", "writer", json!(["no-prod"]), 201),
    ] {
        let sent = app
            .post_as(
                &admin,
                "/api/v2/members",
                json!([{"email": email, "role": role, "customRoles": roles}]),
            )
            .await;
        assert_eq!(sent.status, status, "{email}: {}", sent.body);
    }
    // Still restricted, on every path.
    assert_eq!(toggle(&app, &admin, "shop", "production").await, 403);
    // The owner may do all of it.
    assert_eq!(app.delete("/api/v2/teams/restricted").await.status, 204);
}
