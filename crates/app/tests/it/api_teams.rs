//! Teams over HTTP: `/teams` create, read, list, semantic patch and delete; members joining them
//! (invitations, `POST /members/{id}/teams`); their custom roles deciding their members'
//! requests.

use serde_json::{json, Value};

use crate::common::{request, spawn, Backend, SEMANTIC};

async fn patch_team<S, B>(
    app: &crate::common::TestApp<S>,
    key: &str,
    instructions: Value,
) -> crate::common::Resp
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    app.patch_with(
        &format!("/api/v2/teams/{key}"),
        SEMANTIC,
        json!({"comment": "on call", "instructions": instructions}),
    )
    .await
}

/// Creates team `platform` (with role `toggler` and member `ann`) and team `apps`, after
/// refusals that make no team; returns `platform` as created.
async fn create_platform_and_apps<S, B>(app: &crate::common::TestApp<S>, ann: &str) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let created = app
        .post(
            "/api/v2/teams",
            json!({"key": "platform", "name": "Platform", "description": "infra",
                   "customRoleKeys": ["toggler"], "memberIDs": [ann]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let team = created.body;
    assert_eq!(team["key"], "platform");
    assert_eq!(team["customRoleKeys"], json!(["toggler"]));
    assert_eq!(team["members"]["totalCount"], 1);
    assert_eq!(team["_version"], 1);
    assert_eq!(team["_links"]["self"]["href"], "/api/v2/teams/platform");
    app.post("/api/v2/teams", json!({"key": "platform", "name": "Again"}))
        .await
        .assert_error(409, "key_exists");
    for (body, attribute) in [
        (
            json!({"key": "x", "name": "X", "customRoleKeys": ["nope"]}),
            "customRoleKeys",
        ),
        (
            json!({"key": "x", "name": "X", "memberIDs": ["0123456789abcdef01234567"]}),
            "memberIDs[0]",
        ),
        (
            json!({"key": "x", "name": "X", "memberIDs": ["nope"]}),
            "memberIDs[0]",
        ),
        (json!({"key": "-x", "name": "X"}), "key"),
    ] {
        let refused = app.post("/api/v2/teams", body).await;
        refused.assert_error(400, "invalid_request");
        assert_eq!(
            refused.body["errors"][0]["attribute"], attribute,
            "{}",
            refused.body
        );
    }
    assert_eq!(
        app.get("/api/v2/teams/x").await.status,
        404,
        "no half-made team"
    );
    assert_eq!(
        app.post("/api/v2/teams", json!({"key": "apps", "name": "Apps"}))
            .await
            .status,
        201
    );
    team
}

/// `platform` (as `team`) read, found, listed, and shown on its member `ann`.
async fn check_team_reads<S, B>(app: &crate::common::TestApp<S>, ann: &str, team: &Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let fetched = app.get("/api/v2/teams/platform").await;
    assert_eq!(&fetched.body, team);
    let list = app.get("/api/v2/teams?filter=query:PLAT").await;
    assert_eq!(list.body["totalCount"], 1, "{}", list.body);
    let all = app.get("/api/v2/teams?sort=-key").await;
    let keys: Vec<&str> = all.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["platform", "apps"]);

    // The member shows its team and the roles it holds through it.
    let member = app.get(&format!("/api/v2/members/{ann}")).await;
    assert_eq!(
        member.body["teams"][0]["key"], "platform",
        "{}",
        member.body
    );
    assert_eq!(
        member.body["teams"][0]["_links"]["self"]["href"],
        "/api/v2/teams/platform"
    );
}

/// Swaps `platform`'s member `ann` for `bob`, renames it and takes its role away in one semantic
/// patch; patches that change nothing then change nothing. Returns `platform` as patched.
async fn patch_platform<S, B>(app: &crate::common::TestApp<S>, ann: &str, bob: &str) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let patched = patch_team(
        app,
        "platform",
        json!([
            {"kind": "addMembers", "values": [bob]},
            {"kind": "removeMembers", "values": [ann]},
            {"kind": "updateName", "value": "Platform team"},
            {"kind": "removeCustomRoles", "values": ["toggler"]}
        ]),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["name"], "Platform team");
    assert_eq!(patched.body["customRoleKeys"], json!([]));
    assert_eq!(patched.body["members"]["totalCount"], 1);
    assert_eq!(patched.body["_version"], 2);
    let ann_now = app.get(&format!("/api/v2/members/{ann}")).await;
    assert_eq!(ann_now.body["teams"], json!([]));
    let bob_now = app.get(&format!("/api/v2/members/{bob}")).await;
    assert_eq!(bob_now.body["teams"][0]["name"], "Platform team");

    // What changes nothing moves no version and writes no entry.
    for instructions in [
        json!([{"kind": "addMembers", "values": [bob]}]),
        json!([{"kind": "removeMembers", "values": [ann]}]),
        json!([{"kind": "replaceMembers", "values": [bob]}]),
        json!([{"kind": "addMembers", "values": []}, {"kind": "updateName", "value": "Platform team"}]),
    ] {
        let same = patch_team(app, "platform", instructions).await;
        assert_eq!(same.status, 200, "{}", same.body);
        assert_eq!(same.body, patched.body);
    }
    patch_team(
        app,
        "platform",
        json!([{"kind": "addCustomRoles", "values": ["toggler", "toggler"]}]),
    )
    .await
    .assert_error(400, "invalid_request");
    patched.body
}

/// Patches of `platform` that are refused leave it as `patched`; only semantic patches are
/// taken, in plain JSON too.
async fn check_refused_patches<S, B>(app: &crate::common::TestApp<S>, patched: &Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Refusals name the instruction, and change nothing.
    let unknown = patch_team(
        app,
        "platform",
        json!([{"kind": "updateName", "value": "Z"}, {"kind": "addCustomRoles", "values": ["nope"]}]),
    )
    .await;
    unknown.assert_error(400, "invalid_request");
    assert!(
        unknown.body["message"]
            .as_str()
            .unwrap()
            .contains("instruction 1"),
        "{}",
        unknown.body
    );
    let ghost = patch_team(
        app,
        "platform",
        json!([{"kind": "replaceMembers", "values": ["0123456789abcdef01234567"]}]),
    )
    .await;
    ghost.assert_error(400, "invalid_request");
    assert_eq!(&app.get("/api/v2/teams/platform").await.body, patched);
    patch_team(app, "nope", json!([{"kind": "updateName", "value": "Z"}]))
        .await
        .assert_error(404, "not_found");
    let json_patch = app
        .patch(
            "/api/v2/teams/platform",
            json!([{"op": "replace", "path": "/name", "value": "Z"}]),
        )
        .await;
    assert_eq!(json_patch.status, 415, "{}", json_patch.body);
    // Instructions in plain JSON, as the original's clients send them, are a semantic patch.
    let plain = app
        .patch(
            "/api/v2/teams/platform",
            json!({"instructions": [{"kind": "updateDescription", "value": "plain"}]}),
        )
        .await;
    assert_eq!(plain.status, 200, "{}", plain.body);
    assert_eq!(plain.body["description"], "plain");
}

/// Member `ann` joins `apps` and `platform`; members are invited straight into `apps`.
async fn join_and_invite_into_teams<S, B>(app: &crate::common::TestApp<S>, ann: &str)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // Joining from the member's side; a team it is in is left as it is.
    let joined = app
        .post(
            &format!("/api/v2/members/{ann}/teams"),
            json!({"teamKeys": ["apps", "platform"]}),
        )
        .await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    let teams: Vec<&str> = joined.body["teams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(teams, ["apps", "platform"]);
    app.post(
        &format!("/api/v2/members/{ann}/teams"),
        json!({"teamKeys": ["nope"]}),
    )
    .await
    .assert_error(400, "invalid_request");

    // Invited straight into a team.
    let apps_before = app.get("/api/v2/teams/apps").await.body;
    let invited = app
        .post(
            "/api/v2/members",
            json!([
                {"email": "cy@example.com", "teamKeys": ["apps"]},
                {"email": "cyd@example.com", "teamKeys": ["apps"]}
            ]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    assert_eq!(invited.body["items"][0]["teams"][0]["key"], "apps");
    assert_eq!(invited.body["items"][1]["teams"][0]["key"], "apps");
    // The team gains both at once: one change.
    let apps_after = app.get("/api/v2/teams/apps").await.body;
    assert_eq!(
        apps_after["_version"],
        apps_before["_version"].as_u64().unwrap() + 1
    );
    assert_eq!(
        apps_after["members"]["totalCount"],
        apps_before["members"]["totalCount"].as_u64().unwrap() + 2
    );
    let refused = app
        .post(
            "/api/v2/members",
            json!([{"email": "dee@example.com", "teamKeys": ["nope"]}]),
        )
        .await;
    refused.assert_error(400, "invalid_request");
    assert_eq!(refused.body["errors"][0]["attribute"], "[0].teamKeys");
    assert_eq!(
        app.get("/api/v2/teams/apps").await.body["members"]["totalCount"],
        3,
        "ann, cy and cyd; not dee"
    );
}

/// Deleting member `bob` takes it out of `platform`; deleting `platform` takes `ann` out of it.
async fn delete_a_member_and_a_team<S, B>(app: &crate::common::TestApp<S>, ann: &str, bob: &str)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // A deleted member leaves its teams, which change (and say so); a deleted team's members
    // leave it.
    let before = app.get("/api/v2/teams/platform").await.body;
    assert_eq!(
        app.delete(&format!("/api/v2/members/{bob}")).await.status,
        204
    );
    let after = app.get("/api/v2/teams/platform").await.body;
    assert_eq!(after["members"]["totalCount"], 1);
    assert_eq!(after["_version"], before["_version"].as_u64().unwrap() + 1);
    let deleted = app.get("/api/v2/auditlog?spec=member/*").await.body;
    assert_eq!(deleted["items"][0]["kind"], "member");
    assert!(
        deleted["items"][0]["accesses"]
            .as_array()
            .unwrap()
            .contains(&json!({"action": "updateTeamMembers", "resource": "team/platform"})),
        "{deleted}"
    );
    assert_eq!(app.delete("/api/v2/teams/platform").await.status, 204);
    let gone = app.get("/api/v2/auditlog?spec=team/platform").await.body;
    assert_eq!(gone["items"][0]["titleVerb"], "deleted the team");
    assert_eq!(gone["items"][0]["target"]["_links"], json!({}), "{gone}");
    assert!(
        gone["items"][0]["title"]
            .as_str()
            .unwrap()
            .ends_with("deleted the team platform"),
        "{gone}"
    );
    app.get("/api/v2/teams/platform")
        .await
        .assert_error(404, "not_found");
    let ann_after = app.get(&format!("/api/v2/members/{ann}")).await;
    assert_eq!(ann_after.body["teams"].as_array().unwrap().len(), 1);
}

async fn teams_round_trip(backend: Backend) {
    let app = spawn(backend).await;
    let ann = app.member("ann@example.com", "reader").await;
    let bob = app.member("bob@example.com", "reader").await;
    let role = json!({"key": "toggler", "name": "Toggler", "policy": []});
    assert_eq!(app.post("/api/v2/roles", role).await.status, 201);

    let team = create_platform_and_apps(&app, &ann).await;
    check_team_reads(&app, &ann, &team).await;
    let patched = patch_platform(&app, &ann, &bob).await;
    check_refused_patches(&app, &patched).await;
    join_and_invite_into_teams(&app, &ann).await;

    // Audited as team/{key}.
    let audit = app.get("/api/v2/auditlog?spec=team/platform").await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let kinds: Vec<&str> = audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    // Created, patched (by semantic patch, then by plain instructions), and the member's
    // joining (which accessed the team).
    assert_eq!(kinds, ["member", "team", "team", "team"], "{}", audit.body);

    delete_a_member_and_a_team(&app, &ann, &bob).await;
}

/// A team's custom roles decide its members' requests, from their next request; a role a team
/// gives is not deleted; only admins change teams.
async fn team_roles_decide_members_requests(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    app.flag("shop", "f").await;
    let toggler = json!({
        "key": "toggler",
        "name": "Toggler",
        "policy": [{"effect": "allow", "resources": ["proj/shop:env/test:flag/*"], "actions": ["updateOn"]}]
    });
    assert_eq!(app.post("/api/v2/roles", toggler).await.status, 201);
    let id = app.member("t@example.com", "reader").await;
    let token = app.token_of_member(&id, domain::role::Role::Reader);
    let toggle = |env: &'static str| {
        let token = token.clone();
        let app = &app;
        async move {
            app.send(
                request(
                    actix_web::http::Method::PATCH,
                    "/api/v2/flags/shop/f",
                    Some(&token),
                )
                .insert_header(("Content-Type", SEMANTIC))
                .set_payload(
                    json!({"environmentKey": env, "instructions": [{"kind": "turnFlagOn"}]})
                        .to_string(),
                ),
            )
            .await
            .status
        }
    };
    assert_eq!(toggle("test").await, 403, "a reader alone");
    let created = app
        .post(
            "/api/v2/teams",
            json!({"key": "ops", "name": "Ops", "customRoleKeys": ["toggler"], "memberIDs": [id]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(toggle("test").await, 200, "through the team's role");
    assert_eq!(
        toggle("production").await,
        403,
        "only where the role allows"
    );

    let held = app.delete("/api/v2/roles/toggler").await;
    held.assert_error(409, "optimistic_locking_error");
    assert!(
        held.body["message"]
            .as_str()
            .unwrap()
            .contains("the team 'ops'"),
        "{}",
        held.body
    );

    // Its member may not change teams: power over who holds which role needs an admin.
    let reader_patch = app
        .send(
            request(
                actix_web::http::Method::PATCH,
                "/api/v2/teams/ops",
                Some(&token),
            )
            .insert_header(("Content-Type", SEMANTIC))
            .set_payload(
                json!({"instructions": [{"kind": "updateName", "value": "Mine"}]}).to_string(),
            ),
        )
        .await;
    reader_patch.assert_error(403, "forbidden");
    let everything = json!({
        "key": "everything",
        "name": "Everything",
        "policy": [{"effect": "allow", "resources": ["team/*", "member/*"], "actions": ["*"]}]
    });
    assert_eq!(app.post("/api/v2/roles", everything).await.status, 201);
    let writer = app.member("w@example.com", "writer").await;
    let patched = patch_team(
        &app,
        "ops",
        json!([{"kind": "addCustomRoles", "values": ["everything"]}, {"kind": "addMembers", "values": [writer]}]),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let writer_token = app.token_of_member(&writer, domain::role::Role::Writer);
    let escalate = app
        .send(
            request(
                actix_web::http::Method::PATCH,
                "/api/v2/teams/ops",
                Some(&writer_token),
            )
            .insert_header(("Content-Type", SEMANTIC))
            .set_payload(
                json!({"instructions": [{"kind": "addCustomRoles", "values": ["toggler"]}]})
                    .to_string(),
            ),
        )
        .await;
    escalate.assert_error(403, "forbidden");
    // Deleting a team takes its roles from its members: an admin's too.
    app.delete_as(&writer_token, "/api/v2/teams/ops")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(app.get_as(&writer_token, "/api/v2/teams").await.status, 200);
    // An admin does not change the owner's teams.
    let admin = app
        .post(
            "/api/v2/tokens",
            json!({"name": "ci", "role": "admin", "serviceToken": true}),
        )
        .await;
    assert_eq!(admin.status, 201, "{}", admin.body);
    let admin = admin.body["token"].as_str().unwrap().to_owned();
    let owner = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post_as(
        &admin,
        &format!("/api/v2/members/{owner}/teams"),
        json!({"teamKeys": ["ops"]}),
    )
    .await
    .assert_error(403, "forbidden");

    // Leaving the team takes its roles at the next request.
    let removed = patch_team(
        &app,
        "ops",
        json!([{"kind": "removeMembers", "values": [id]}]),
    )
    .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(toggle("test").await, 403, "no longer in the team");
    let back = app
        .post(
            &format!("/api/v2/members/{id}/teams"),
            json!({"teamKeys": ["ops"]}),
        )
        .await;
    assert_eq!(back.status, 201, "{}", back.body);
    assert_eq!(toggle("test").await, 200, "in it again");
    assert_eq!(app.delete("/api/v2/teams/ops").await.status, 204);
    assert_eq!(toggle("test").await, 403, "the team is gone");
}

/// A member belongs to at most 20 teams, whichever way it joins.
async fn a_member_belongs_to_a_bounded_number_of_teams(backend: Backend) {
    let app = spawn(backend).await;
    let id = app.member("m@example.com", "reader").await;
    for i in 0..21 {
        let created = app
            .post(
                "/api/v2/teams",
                json!({"key": format!("t{i:02}"), "name": "T"}),
            )
            .await;
        assert_eq!(created.status, 201, "{}", created.body);
    }
    let first: Vec<String> = (0..20).map(|i| format!("t{i:02}")).collect();
    let joined = app
        .post(
            &format!("/api/v2/members/{id}/teams"),
            json!({"teamKeys": first}),
        )
        .await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    assert_eq!(joined.body["teams"].as_array().unwrap().len(), 20);
    app.post(
        &format!("/api/v2/members/{id}/teams"),
        json!({"teamKeys": ["t20"]}),
    )
    .await
    .assert_error(400, "invalid_request");
    patch_team(&app, "t20", json!([{"kind": "addMembers", "values": [id]}]))
        .await
        .assert_error(400, "invalid_request");
    app.post(
        "/api/v2/teams",
        json!({"key": "u", "name": "U", "memberIDs": [id]}),
    )
    .await
    .assert_error(400, "invalid_request");
    // A team it is in already is no new one.
    let again = patch_team(
        &app,
        "t00",
        json!([{"kind": "replaceMembers", "values": [id]}]),
    )
    .await;
    assert_eq!(again.status, 200, "{}", again.body);
    let teams: Vec<String> = (0..21).map(|i| format!("t{i:02}")).collect();
    app.post(
        "/api/v2/members",
        json!([{"email": "n@example.com", "teamKeys": teams}]),
    )
    .await
    .assert_error(400, "invalid_request");
    assert_eq!(
        app.get("/api/v2/teams/t20").await.body["members"]["totalCount"],
        0
    );
}

/// A flag is maintained by a member or a team: `maintainerTeamKey` at creation, the
/// `updateMaintainerTeam` instruction and JSON Patch, shown as `_maintainerTeam` while the team
/// exists.
async fn flags_are_maintained_by_a_team(backend: Backend) {
    let app = spawn(backend).await;
    app.project("shop").await;
    let created = app
        .post("/api/v2/teams", json!({"key": "ops", "name": "Ops"}))
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let flag = app
        .post(
            "/api/v2/flags/shop",
            json!({"key": "f", "name": "F", "maintainerTeamKey": "ops"}),
        )
        .await;
    assert_eq!(flag.status, 201, "{}", flag.body);
    assert_eq!(flag.body["maintainerTeamKey"], "ops");
    assert_eq!(flag.body["_maintainerTeam"]["name"], "Ops");
    assert_eq!(
        flag.body["_maintainerTeam"]["_links"]["self"]["href"],
        "/api/v2/teams/ops"
    );
    assert!(flag.body.get("maintainerId").is_none());
    for (body, why) in [
        (
            json!({"key": "g", "name": "G", "maintainerTeamKey": "nope"}),
            "unknown team",
        ),
        (
            json!({"key": "g", "name": "G", "maintainerTeamKey": "no way"}),
            "bad key",
        ),
        (
            json!({"key": "g", "name": "G", "maintainerTeamKey": "ops", "maintainerId": "0123456789abcdef01234567"}),
            "both",
        ),
    ] {
        let refused = app.post("/api/v2/flags/shop", body).await;
        refused.assert_error(400, "invalid_request");
        assert_eq!(
            refused.body["errors"][0]["attribute"], "maintainerTeamKey",
            "{why}: {}",
            refused.body
        );
    }
    app.get("/api/v2/flags/shop/g")
        .await
        .assert_error(404, "not_found");

    let semantic = |instructions: Value| {
        let app = &app;
        async move {
            app.patch_with(
                "/api/v2/flags/shop/f",
                SEMANTIC,
                json!({"instructions": instructions}),
            )
            .await
        }
    };
    let owner = app.get("/api/v2/members/me").await.body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let to_member = semantic(json!([{"kind": "updateMaintainerMember", "value": owner}])).await;
    assert_eq!(to_member.status, 200, "{}", to_member.body);
    assert!(
        to_member.body.get("maintainerTeamKey").is_none(),
        "{}",
        to_member.body
    );
    assert_eq!(to_member.body["_maintainer"]["_id"], owner.as_str());
    let to_team = semantic(json!([{"kind": "updateMaintainerTeam", "value": "ops"}])).await;
    assert_eq!(to_team.status, 200, "{}", to_team.body);
    assert!(
        to_team.body.get("maintainerId").is_none(),
        "{}",
        to_team.body
    );
    assert_eq!(to_team.body["_maintainerTeam"]["key"], "ops");
    semantic(json!([{"kind": "updateMaintainerTeam", "value": "nope"}]))
        .await
        .assert_error(400, "invalid_request");
    let both = app
        .patch(
            "/api/v2/flags/shop/f",
            json!([{"op": "add", "path": "/maintainerId", "value": owner}]),
        )
        .await;
    assert_eq!(both.status, 422, "{}", both.body);
    let unknown = app
        .patch(
            "/api/v2/flags/shop/f",
            json!([{"op": "replace", "path": "/maintainerTeamKey", "value": "nope"}]),
        )
        .await;
    assert_eq!(unknown.status, 422, "{}", unknown.body);
    assert_eq!(app.get("/api/v2/flags/shop/f").await.body, to_team.body);

    // Changing the maintaining team is `updateMaintainer`, by whichever kind of patch.
    let keeper = json!({"key": "keeper", "name": "Keeper", "basePermissions": "no_access",
        "policy": [{"effect": "deny", "resources": ["proj/*:env/*:flag/*"], "actions": ["updateMaintainer"]}]});
    assert_eq!(app.post("/api/v2/roles", keeper).await.status, 201);
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": "w@example.com", "role": "writer", "customRoles": ["keeper"]}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{}", invited.body);
    let writer = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    let token = app.token_of_member(&writer, domain::role::Role::Writer);
    for body in [
        json!([{"op": "remove", "path": "/maintainerTeamKey"}]),
        json!({"merge": {"maintainerTeamKey": null}}),
    ] {
        app.patch_as(&token, "/api/v2/flags/shop/f", body)
            .await
            .assert_error(403, "forbidden");
    }
    let audit = app
        .get("/api/v2/auditlog?spec=proj/shop:env/*:flag/f")
        .await
        .body;
    let recorded = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["accesses"].to_string().contains("updateMaintainer"))
        .cloned();
    assert!(
        recorded.is_some(),
        "the team's changes are recorded: {audit}"
    );

    // A clone takes the maintainer its request names, else its source's.
    let cloned = app
        .post(
            "/api/v2/flags/shop?clone=f",
            json!({"key": "c", "name": "C", "maintainerId": owner}),
        )
        .await;
    assert_eq!(cloned.status, 201, "{}", cloned.body);
    assert_eq!(cloned.body["maintainerId"], owner.as_str());
    assert!(
        cloned.body.get("maintainerTeamKey").is_none(),
        "{}",
        cloned.body
    );
    let same = app
        .post(
            "/api/v2/flags/shop?clone=f",
            json!({"key": "d", "name": "D"}),
        )
        .await;
    assert_eq!(same.body["maintainerTeamKey"], "ops", "{}", same.body);
    app.post(
        "/api/v2/flags/shop?clone=f",
        json!({"key": "e", "name": "E", "maintainerTeamKey": "nope"}),
    )
    .await
    .assert_error(400, "invalid_request");

    // A deleted team leaves its key; `_maintainerTeam` goes with the team.
    assert_eq!(app.delete("/api/v2/teams/ops").await.status, 204);
    let after = app.get("/api/v2/flags/shop/f").await.body;
    assert_eq!(after["maintainerTeamKey"], "ops");
    assert!(after.get("_maintainerTeam").is_none(), "{after}");
    let removed = semantic(json!([{"kind": "removeMaintainer"}])).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert!(removed.body.get("maintainerTeamKey").is_none());
}

on_both_backends!(
    teams_round_trip,
    team_roles_decide_members_requests,
    a_member_belongs_to_a_bounded_number_of_teams,
    flags_are_maintained_by_a_team
);
