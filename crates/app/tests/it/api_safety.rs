//! Authorization on *whom*: an admin cannot take over the owner through the owner's tokens; and
//! secrets do not leak into the audit log.

use domain::role::Role;
use serde_json::{json, Value};

use crate::common::{spawn, Backend};

fn token_id_of_member(list: &Value, member_id: &str) -> String {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["ownerId"] == member_id && t["serviceToken"] == false)
        .unwrap_or_else(|| panic!("no personal token of {member_id} in {list}"))["_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The reported takeover: an admin lists every token, resets the owner's personal token, and
/// acts as the owner with the new secret. Now the owner's tokens are out of an admin's reach
/// (reset, patch, delete), whether the admin calls with a personal or a service token.
async fn an_admin_cannot_touch_the_owners_tokens(backend: Backend) {
    let app = spawn(backend).await;
    let owner = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let admin_member = app.member("admin@example.com", "admin").await;
    let admin = app.token_of_member(&admin_member, Role::Admin);
    let service = app
        .post(
            "/api/v2/tokens",
            json!({"name": "svc", "role": "admin", "serviceToken": true}),
        )
        .await;
    assert_eq!(service.status, 201, "{}", service.body);
    let service = service.body["token"].as_str().unwrap().to_owned();

    for caller in [&admin, &service] {
        let all = app.get_as(caller, "/api/v2/tokens?showAll=true").await;
        assert_eq!(all.status, 200, "{}", all.body);
        let owners = token_id_of_member(&all.body, &owner);
        let path = format!("/api/v2/tokens/{owners}");
        app.post_as(caller, &format!("{path}/reset"), json!({}))
            .await
            .assert_error(403, "forbidden");
        app.patch_as(
            caller,
            &path,
            json!([{"op": "replace", "path": "/name", "value": "mine"}]),
        )
        .await
        .assert_error(403, "forbidden");
        app.delete_as(caller, &path)
            .await
            .assert_error(403, "forbidden");
    }
    // The owner is still the owner, with its token intact.
    let me = app.get("/api/v2/members/me").await;
    assert_eq!((me.status, me.body["role"].as_str()), (200, Some("owner")));
    let tokens = app.get("/api/v2/tokens?showAll=true").await;
    let owners = token_id_of_member(&tokens.body, &owner);
    let token = app.get(&format!("/api/v2/tokens/{owners}")).await;
    assert_eq!(token.body["name"], "owner");
}

/// An admin manages the tokens of members it outranks, never those of another admin; the owner
/// manages everyone's. A reset secret acts with its member's role, not more.
async fn token_authority_follows_rank(backend: Backend) {
    let app = spawn(backend).await;
    let admin_member = app.member("admin@example.com", "admin").await;
    let other_admin = app.member("admin2@example.com", "admin").await;
    let writer_member = app.member("writer@example.com", "writer").await;
    let admin = app.token_of_member(&admin_member, Role::Admin);
    app.token_of_member(&other_admin, Role::Admin);
    // A token stored with `admin` for a member who is only a writer (e.g. demoted since).
    app.token_of_member(&writer_member, Role::Admin);
    let all = app.get("/api/v2/tokens?showAll=true").await.body;

    let others = token_id_of_member(&all, &other_admin);
    app.post_as(&admin, &format!("/api/v2/tokens/{others}/reset"), json!({}))
        .await
        .assert_error(403, "forbidden");
    let owner_reset = app
        .post(&format!("/api/v2/tokens/{others}/reset"), json!({}))
        .await;
    assert_eq!(owner_reset.status, 200, "{}", owner_reset.body);

    let writers = token_id_of_member(&all, &writer_member);
    // An admin outranks the writer but not the token's own role: demoting a member for a moment
    // must not hand its tokens to whoever outranks it then (issue 32).
    app.post_as(
        &admin,
        &format!("/api/v2/tokens/{writers}/reset"),
        json!({}),
    )
    .await
    .assert_error(403, "forbidden");
    let reset = app
        .post(&format!("/api/v2/tokens/{writers}/reset"), json!({}))
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let secret = reset.body["token"].as_str().unwrap();
    // The new secret writes (a writer may) but cannot manage tokens (an admin could).
    let created = app
        .post_as(secret, "/api/v2/projects", json!({"key": "w", "name": "W"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    app.get_as(secret, "/api/v2/tokens")
        .await
        .assert_error(403, "forbidden");
    // The admin's own tokens are its own to manage.
    let mine = token_id_of_member(&all, &admin_member);
    let renamed = app
        .patch_as(
            &admin,
            &format!("/api/v2/tokens/{mine}"),
            json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
}

/// A JSON Patch may `test` an environment's SDK key; the audit entry's `delta` shows it masked,
/// like the versions do.
async fn sdk_and_mobile_keys_are_masked_in_the_audit_delta(backend: Backend) {
    let app = spawn(backend).await;
    app.project("p").await;
    let env = app
        .get("/api/v2/projects/p/environments/production")
        .await
        .body;
    let (sdk, mobile) = (
        env["apiKey"].as_str().unwrap().to_owned(),
        env["mobileKey"].as_str().unwrap().to_owned(),
    );
    let patched = app
        .patch(
            "/api/v2/projects/p/environments/production",
            json!([
                {"op": "test", "path": "/apiKey", "value": sdk},
                {"op": "test", "path": "/mobileKey", "value": mobile},
                {"op": "replace", "path": "/name", "value": "Prod"}
            ]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let latest = app.get("/api/v2/auditlog?limit=1").await.body["items"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let entry = app.get(&format!("/api/v2/auditlog/{latest}")).await;
    assert_eq!(entry.status, 200);
    assert_eq!(entry.body["delta"][2]["value"], "Prod", "{}", entry.body);
    let text = entry.body.to_string();
    assert!(!text.contains(&sdk), "{text}");
    assert!(!text.contains(&mobile), "{text}");
}

on_both_backends!(
    an_admin_cannot_touch_the_owners_tokens,
    token_authority_follows_rank,
    sdk_and_mobile_keys_are_masked_in_the_audit_delta,
    a_service_token_never_acts_as_its_creator,
    environments_per_project_are_limited,
);

/// The database goes away under a running service: requests with a cached token and with an
/// unknown one get a 503 `service_unavailable` whose message names no host, port, database or
/// driver text (those go to the log). The pool gives up after `CONNECTION_WAIT`.
/// Pooled connections are not pinged before use (that would cost every request a round trip):
/// when the server has closed them (a restart, an idle timeout), a read runs again on a new
/// connection, and so does a write whose `BEGIN` failed; no request sees the cut.
#[actix_web::test]
async fn connections_closed_by_the_server_are_replaced_unseen() {
    let app = spawn(Backend::Postgres).await;
    app.project("p").await;
    app.flag("p", "f").await;
    for round in 0..3 {
        app.db.cut_connections();
        let read = app.get("/api/v2/flags/p/f").await;
        assert_eq!(read.status, 200, "round {round}: {}", read.body);
        app.db.cut_connections();
        let toggled = app
            .patch_with(
                "/api/v2/flags/p/f",
                "application/json; domain-model=svc.semanticpatch",
                json!({"environmentKey": "production", "instructions": [
                    {"kind": if round % 2 == 0 { "turnFlagOn" } else { "turnFlagOff" }}]}),
            )
            .await;
        assert_eq!(toggled.status, 200, "round {round}: {}", toggled.body);
        assert_eq!(
            toggled.body["environments"]["production"]["on"],
            json!(round % 2 == 0)
        );
    }
    // Each toggle was written exactly once.
    let flag = app.get("/api/v2/flags/p/f").await;
    assert_eq!(flag.body["_version"], json!(4), "{}", flag.body);
}

#[actix_web::test]
async fn a_database_outage_is_a_plain_503() {
    let app = spawn(Backend::Postgres).await;
    app.project("p").await;
    app.db.take_down();
    let known = app.get("/api/v2/projects/p").await;
    known.assert_error(503, "service_unavailable");
    let unknown = app.get_as("api-not-a-token", "/api/v2/projects").await;
    unknown.assert_error(503, "service_unavailable");
    for response in [&known, &unknown] {
        let message = response.body["message"].as_str().unwrap().to_lowercase();
        for leak in [
            "127.0.0.1",
            "5432",
            "flagsvc_test",
            "does not exist",
            "fatal",
            "connection",
        ] {
            assert!(!message.contains(leak), "{message}");
        }
    }
}

/// A service token acts for the account, never as the member who created it: it cannot mint a
/// personal token of that member (the owner's would act as the owner), `me` is nobody, and it
/// cannot edit a member ranked above its role. Nor can an admin edit the owner.
async fn a_service_token_never_acts_as_its_creator(backend: Backend) {
    let app = spawn(backend).await;
    let owner = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let service = app
        .post(
            "/api/v2/tokens",
            json!({"name": "ci", "role": "admin", "serviceToken": true}),
        )
        .await
        .body["token"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post_as(
        &service,
        "/api/v2/tokens",
        json!({"name": "x", "role": "admin"}),
    )
    .await
    .assert_error(403, "forbidden");
    let minted = app
        .post_as(
            &service,
            "/api/v2/tokens",
            json!({"name": "y", "role": "writer", "serviceToken": true}),
        )
        .await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    app.get_as(&service, "/api/v2/members/me")
        .await
        .assert_error(404, "not_found");
    app.patch_as(
        &service,
        "/api/v2/members/me",
        json!([{"op": "add", "path": "/lastName", "value": "x"}]),
    )
    .await
    .assert_error(404, "not_found");
    app.patch_as(
        &service,
        &format!("/api/v2/members/{owner}"),
        json!([{"op": "add", "path": "/lastName", "value": "x"}]),
    )
    .await
    .assert_error(403, "forbidden");

    let admin_member = app.member("admin@example.com", "admin").await;
    let admin = app.token_of_member(&admin_member, Role::Admin);
    app.patch_as(
        &admin,
        &format!("/api/v2/members/{owner}"),
        json!([{"op": "add", "path": "/lastName", "value": "x"}]),
    )
    .await
    .assert_error(403, "forbidden");
    let me = app.get("/api/v2/members/me").await.body;
    assert_eq!(
        (me["role"].as_str(), me.get("lastName")),
        (Some("owner"), None)
    );
    // An admin still edits members it does not rank below, itself included.
    let writer = app.member("writer@example.com", "writer").await;
    for member in [&writer, &admin_member] {
        let renamed = app
            .patch_as(
                &admin,
                &format!("/api/v2/members/{member}"),
                json!([{"op": "add", "path": "/lastName", "value": "y"}]),
            )
            .await;
        assert_eq!(renamed.status, 200, "{}", renamed.body);
    }
}

/// A project holds at most 100 environments, whether they come with the project or one by one:
/// each adds a configuration to every flag, so their number bounds a flag's size.
async fn environments_per_project_are_limited(backend: Backend) {
    let app = spawn(backend).await;
    let environments: Vec<Value> = (0..100)
        .map(|n| json!({"key": format!("e{n}"), "name": format!("E{n}"), "color": "aabbcc"}))
        .collect();
    let created = app
        .post(
            "/api/v2/projects",
            json!({"key": "p", "name": "P", "environments": environments}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let refused = app
        .post(
            "/api/v2/projects/p/environments",
            json!({"key": "one-more", "name": "One more", "color": "aabbcc"}),
        )
        .await;
    refused.assert_error(400, "invalid_request");
    assert!(
        refused.body["message"].as_str().unwrap().contains("100"),
        "{}",
        refused.body
    );
    let listed = app.get("/api/v2/projects/p/environments").await;
    assert_eq!(listed.body["totalCount"], 100);
}
