//! Account members, the single owner, and how members' roles bound their tokens.

use domain::role::Role;
use serde_json::json;

use crate::common::{spawn, Backend};

async fn invite_list_and_read_members(backend: Backend) {
    let app = spawn(backend).await;
    let invited = app
        .post(
            "/api/v2/members",
            json!([
                {"email": "ann@example.com", "role": "writer", "firstName": "Ann", "lastName": "Lee"},
                {"email": "bob@example.com"}
            ]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let items = invited.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["role"], "writer");
    assert_eq!(items[0]["_pendingInvite"], true);
    assert_eq!(items[0]["_verified"], false);
    assert_eq!(items[0]["_lastSeen"], 0);
    assert_eq!(items[0]["mfa"], "disabled");
    assert_eq!(items[0]["customRoles"], json!([]));
    assert_eq!(items[1]["role"], "reader", "reader is the default");
    let ann = items[0]["_id"].as_str().unwrap();
    assert_eq!(
        items[0]["_links"]["self"]["href"],
        format!("/api/v2/members/{ann}")
    );

    let fetched = app.get(&format!("/api/v2/members/{ann}")).await;
    assert_eq!(fetched.body, items[0]);
    let me = app.get("/api/v2/members/me").await;
    assert_eq!(me.body["role"], "owner");
    assert_eq!(me.body["email"], "owner@example.com");
    app.get("/api/v2/members/000000000000000000000000")
        .await
        .assert_error(404, "not_found");

    let emails = |path: &str| {
        let app = &app;
        let path = path.to_owned();
        async move {
            let resp = app.get(&path).await;
            assert_eq!(resp.status, 200, "{path}: {}", resp.body);
            resp.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| m["email"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        emails("/api/v2/members").await,
        ["ann@example.com", "bob@example.com", "owner@example.com"]
    );
    assert_eq!(
        emails("/api/v2/members?sort=-displayName").await,
        ["owner@example.com", "bob@example.com", "ann@example.com"]
    );
    assert_eq!(
        emails("/api/v2/members?filter=query:LEE").await,
        ["ann@example.com"]
    );
    assert_eq!(
        emails("/api/v2/members?filter=role:admin").await,
        ["owner@example.com"],
        "the owner counts as admin"
    );
    assert_eq!(
        emails("/api/v2/members?filter=role:reader%7Cwriter").await,
        ["ann@example.com", "bob@example.com"]
    );
    assert_eq!(
        emails("/api/v2/members?filter=email:BOB@example.com").await,
        ["bob@example.com"]
    );
    assert_eq!(
        app.get("/api/v2/members?limit=1").await.body["totalCount"],
        3
    );
    for bad in ["filter=role:boss", "filter=team:x", "sort=age", "limit=0"] {
        app.get(&format!("/api/v2/members?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
}

async fn invitations_are_all_or_nothing(backend: Backend) {
    let app = spawn(backend).await;
    app.member("ann@example.com", "reader").await;
    let taken = app
        .post(
            "/api/v2/members",
            json!([{"email": "new@example.com"}, {"email": "ANN@example.com"}]),
        )
        .await;
    taken.assert_error(400, "email_already_exists_in_account");
    let repeated = app
        .post(
            "/api/v2/members",
            json!([{"email": "x@example.com"}, {"email": "X@example.com"}]),
        )
        .await;
    repeated.assert_error(400, "duplicate_email");
    app.post("/api/v2/members", json!([{"email": "not-an-email"}]))
        .await
        .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/members",
        json!([{"email": "y@example.com", "role": "owner"}]),
    )
    .await
    .assert_error(400, "invalid_request");
    app.post("/api/v2/members", json!([]))
        .await
        .assert_error(400, "invalid_request");
    let many: Vec<_> = (0..51)
        .map(|i| json!({"email": format!("u{i}@example.com")}))
        .collect();
    app.post("/api/v2/members", json!(many))
        .await
        .assert_error(400, "invalid_request");
    app.post("/api/v2/members", json!({"email": "z@example.com"}))
        .await
        .assert_error(400, "invalid_request");
    // Nothing of the refused batches was stored.
    assert_eq!(app.get("/api/v2/members").await.body["totalCount"], 2);
    // An admin cannot invite above... nothing is above admin but owner; a writer cannot invite.
    let writer = app.member("w@example.com", "writer").await;
    let writer_token = app.token_of_member(&writer, Role::Admin);
    app.post_as(
        &writer_token,
        "/api/v2/members",
        json!([{"email": "q@example.com"}]),
    )
    .await
    .assert_error(403, "forbidden");
}

async fn change_roles_and_transfer_ownership(backend: Backend) {
    let app = spawn(backend).await;
    let ann = app.member("ann@example.com", "reader").await;
    let patched = app
        .patch(&format!("/api/v2/members/{ann}"), json!([{"op": "replace", "path": "/role", "value": "admin"}, {"op": "add", "path": "/firstName", "value": "Ann"}]))
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(
        (
            patched.body["role"].as_str(),
            patched.body["firstName"].as_str()
        ),
        (Some("admin"), Some("Ann"))
    );
    assert_eq!(
        app.get(&format!("/api/v2/members/{ann}")).await.body["role"],
        "admin"
    );
    app.patch(
        &format!("/api/v2/members/{ann}"),
        json!([{"op": "replace", "path": "/email", "value": "x@y.z"}]),
    )
    .await
    .assert_error(422, "patch_failed");

    // An admin cannot make anyone owner, nor demote or delete the owner.
    let ann_token = app.token_of_member(&ann, Role::Admin);
    let owner_id = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bob = app.member("bob@example.com", "reader").await;
    app.patch_as(
        &ann_token,
        &format!("/api/v2/members/{bob}"),
        json!([{"op": "replace", "path": "/role", "value": "owner"}]),
    )
    .await
    .assert_error(422, "patch_failed");
    app.patch_as(
        &ann_token,
        &format!("/api/v2/members/{owner_id}"),
        json!([{"op": "replace", "path": "/role", "value": "reader"}]),
    )
    .await
    .assert_error(403, "forbidden");
    app.delete_as(&ann_token, &format!("/api/v2/members/{owner_id}"))
        .await
        .assert_error(409, "optimistic_locking_error");

    // The owner transfers ownership: ann becomes owner, the old owner an admin.
    let transferred = app
        .patch(
            &format!("/api/v2/members/{ann}"),
            json!([{"op": "replace", "path": "/role", "value": "owner"}]),
        )
        .await;
    assert_eq!(transferred.status, 200, "{}", transferred.body);
    assert_eq!(
        app.get(&format!("/api/v2/members/{owner_id}")).await.body["role"],
        "admin"
    );
    let owners = app.get("/api/v2/members?filter=role:owner").await;
    assert_eq!(owners.body["totalCount"], 1);
    assert_eq!(owners.body["items"][0]["_id"], ann.as_str());
    // The former owner, now admin, can no longer transfer ownership back.
    app.patch(
        &format!("/api/v2/members/{bob}"),
        json!([{"op": "replace", "path": "/role", "value": "owner"}]),
    )
    .await
    .assert_error(422, "patch_failed");
}

async fn member_roles_bound_their_tokens(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    let ann = app.member("ann@example.com", "writer").await;
    let token = app.token_of_member(&ann, Role::Admin);
    // A writer's admin token writes flags but cannot manage tokens.
    assert_eq!(
        app.post_as(&token, "/api/v2/flags/p", json!({"key": "f", "name": "F"}))
            .await
            .status,
        201
    );
    app.get_as(&token, "/api/v2/tokens")
        .await
        .assert_error(403, "forbidden");
    // Demoted, the member's token is capped at once.
    app.patch(
        &format!("/api/v2/members/{ann}"),
        json!([{"op": "replace", "path": "/role", "value": "reader"}]),
    )
    .await;
    app.post_as(&token, "/api/v2/flags/p", json!({"key": "g", "name": "G"}))
        .await
        .assert_error(403, "forbidden");
    assert_eq!(app.get_as(&token, "/api/v2/flags/p/f").await.status, 200);
}

async fn deleting_a_member_deletes_its_personal_tokens(backend: Backend) {
    let app = spawn(backend).await;
    let ann = app.member("ann@example.com", "admin").await;
    let personal = app.token_of_member(&ann, Role::Admin);
    // Ann creates a service token: it belongs to the account and survives her.
    let service = app
        .post_as(
            &personal,
            "/api/v2/tokens",
            json!({"name": "ci", "serviceToken": true, "role": "writer"}),
        )
        .await;
    assert_eq!(service.status, 201, "{}", service.body);
    let service_secret = service.body["token"].as_str().unwrap().to_owned();
    assert_eq!(
        app.delete(&format!("/api/v2/members/{ann}")).await.status,
        204
    );
    app.get(&format!("/api/v2/members/{ann}"))
        .await
        .assert_error(404, "not_found");
    app.get_as(&personal, "/api/v2/projects")
        .await
        .assert_error(401, "unauthorized");
    assert_eq!(
        app.get_as(&service_secret, "/api/v2/projects").await.status,
        200
    );
    app.delete(&format!("/api/v2/members/{ann}"))
        .await
        .assert_error(404, "not_found");
}

on_both_backends!(
    invite_list_and_read_members,
    invitations_are_all_or_nothing,
    change_roles_and_transfer_ownership,
    member_roles_bound_their_tokens,
    deleting_a_member_deletes_its_personal_tokens,
);
