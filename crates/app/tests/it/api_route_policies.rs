//! Every route of the API against custom roles: for each route of
//! `adapter_http::catalogue::ROUTES`, a custom role allowing exactly its action on exactly its
//! resource lets the call through and the same role is refused on a sibling resource; routes
//! whose actions need the admin base role as well (over policies, account-wide) are shown to
//! decide per resource by a deny statement of an administrator's custom role instead. A route
//! added to the catalogue without a case here fails the test.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::api_roles::toggle;
use crate::common::{spawn, Backend, TestApp};

/// How a route is called.
pub(crate) enum Call {
    Get(String),
    /// A GET of a beta route (with `Svc-API-Version: beta`).
    GetBeta(String),
    Delete(String),
    Post(String, Value),
    Patch(String, Value),
    /// A semantic patch: turn flag `f` of the project on in the environment.
    Toggle(&'static str, &'static str),
    /// A semantic patch of another resource.
    Semantic(String, Value),
}

/// Calls `call` with `token`: the status and the body.
pub(crate) async fn call_as<S, B>(app: &TestApp<S>, token: &str, call: &Call) -> (u16, Value)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let answer = match call {
        Call::Get(path) => app.get_as(token, path).await,
        Call::GetBeta(path) => {
            app.send(
                crate::common::request(actix_web::http::Method::GET, path, Some(token))
                    .insert_header(("Svc-API-Version", "beta")),
            )
            .await
        }
        Call::Delete(path) => app.delete_as(token, path).await,
        Call::Post(path, body) => app.post_as(token, path, body.clone()).await,
        Call::Patch(path, body) => app.patch_as(token, path, body.clone()).await,
        Call::Toggle(project, env) => return (toggle(app, token, project, env).await, Value::Null),
        Call::Semantic(path, body) => {
            app.send(
                crate::common::request(actix_web::http::Method::PATCH, path, Some(token))
                    .insert_header(("Content-Type", crate::common::SEMANTIC))
                    .set_payload(body.to_string()),
            )
            .await
        }
    };
    (answer.status, answer.body)
}

/// One route's case: a member with base role `base` and a custom role of `statements` (where
/// `{me}` stands for the member's own id) calls `call`, answered `status`, then `sibling`,
/// answered `sibling_status`.
struct Case {
    method: &'static str,
    path: &'static str,
    base: &'static str,
    statements: Value,
    call: Call,
    status: u16,
    sibling: Call,
    sibling_status: u16,
}

/// A member whose base role gives it nothing of the kind, with a role allowing exactly the
/// route's action on the resource: `call` answers `status`, `sibling` (another resource) 403.
fn allow(
    (method, path): (&'static str, &'static str),
    base: &'static str,
    statements: Value,
    call: Call,
    status: u16,
    sibling: Call,
) -> Case {
    Case {
        method,
        path,
        base,
        statements,
        call,
        status,
        sibling,
        sibling_status: 403,
    }
}

/// An administrator (whose base role the route's actions need besides a policy) with a role
/// denying the action on one resource: `call` on it is 403, `sibling` answers `sibling_status`.
fn deny(
    (method, path): (&'static str, &'static str),
    statements: Value,
    call: Call,
    sibling: Call,
    sibling_status: u16,
) -> Case {
    Case {
        method,
        path,
        base: "admin",
        statements,
        call,
        status: 403,
        sibling,
        sibling_status,
    }
}

fn statement(effect: &str, resource: &str, actions: &[&str]) -> Value {
    json!([{"effect": effect, "resources": [resource], "actions": actions}])
}

fn get(path: &str) -> Call {
    Call::Get(path.to_owned())
}

fn delete(path: &str) -> Call {
    Call::Delete(path.to_owned())
}

fn post(path: &str, body: Value) -> Call {
    Call::Post(path.to_owned(), body)
}

fn patch(path: &str, body: Value) -> Call {
    Call::Patch(path.to_owned(), body)
}

fn rename(name: &str) -> Value {
    json!([{"op": "replace", "path": "/name", "value": name}])
}

/// The owner makes `path`'s resource from `body`: its `_id`.
async fn made<S, B>(app: &TestApp<S>, path: &str, body: Value) -> String
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let made = app.post(path, body).await;
    assert!(
        made.status == 200 || made.status == 201,
        "{path}: {}",
        made.body
    );
    made.body["_id"]
        .as_str()
        .or_else(|| made.body["items"][0]["_id"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// Every route of the catalogue has a case in `cases`, and every case a route of the catalogue.
fn assert_every_catalogued_route_has_a_case(cases: &[Case]) {
    let catalogued: BTreeSet<(&str, &str)> = adapter_http::catalogue::ROUTES
        .iter()
        .map(|r| (r.method, r.path))
        .collect();
    let covered: BTreeSet<(&str, &str)> = cases.iter().map(|c| (c.method, c.path)).collect();
    assert_eq!(
        catalogued.difference(&covered).collect::<Vec<_>>(),
        Vec::<&(&str, &str)>::new(),
        "routes of the catalogue without a case"
    );
    assert_eq!(
        covered.difference(&catalogued).collect::<Vec<_>>(),
        Vec::<&(&str, &str)>::new(),
        "cases of routes the catalogue does not have"
    );
}

/// Case `i`: a member of its own with the case's base role and custom role calls the case's
/// route, then its sibling, each answered as the case says.
async fn check_case<S, B>(app: &TestApp<S>, i: usize, case: &Case)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let label = format!("case {i}: {} {}", case.method, case.path);
    let invited = app
        .post(
            "/api/v2/members",
            json!([{"email": format!("case{i}@example.com"), "role": case.base}]),
        )
        .await;
    assert_eq!(invited.status, 201, "{label}: {}", invited.body);
    let member = invited.body["items"][0]["_id"].as_str().unwrap().to_owned();
    let policy: Value =
        serde_json::from_str(&case.statements.to_string().replace("{me}", &member)).unwrap();
    let role_base = if case.base == "no_access" {
        "no_access"
    } else {
        "reader"
    };
    let role = json!({"key": format!("case{i}"), "name": format!("Case {i}"),
        "policy": policy, "basePermissions": role_base});
    let created = app.post("/api/v2/roles", role).await;
    assert_eq!(created.status, 201, "{label}: {}", created.body);
    let given = app
        .patch(
            &format!("/api/v2/members/{member}"),
            json!([{"op": "add", "path": "/customRoles/-", "value": format!("case{i}")}]),
        )
        .await;
    assert_eq!(given.status, 200, "{label}: {}", given.body);
    let token_role = if case.base == "admin" {
        domain::role::Role::Admin
    } else {
        domain::role::Role::Reader
    };
    let token = app.token_of_member(&member, token_role);
    let (status, body) = call_as(app, &token, &case.call).await;
    assert_eq!(status, case.status, "{label}: {body}");
    let (status, body) = call_as(app, &token, &case.sibling).await;
    assert_eq!(status, case.sibling_status, "{label}, sibling: {body}");
}

/// The resources known by key, in pairs (a case's and its sibling): projects `p`, `q` (each
/// with flags `f`, `d`, `c`, segments `s` in `test` and, to delete, flag, segment and environment
/// `gone`) and, to delete, `gone1` and `gone2`; teams `a`, `b`, `gone1`, `gone2`; roles `ra`,
/// `rb`, `gone1`, `gone2`.
async fn make_keyed_resource_pairs<S, B>(app: &TestApp<S>)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    for project in ["p", "q", "gone1", "gone2"] {
        app.project(project).await;
    }
    for project in ["p", "q"] {
        for flag in ["f", "d", "c", "gone"] {
            app.flag(project, flag).await;
        }
        for segment in ["s", "gone"] {
            made(
                app,
                &format!("/api/v2/segments/{project}/test"),
                json!({"key": segment, "name": segment}),
            )
            .await;
        }
        made(
            app,
            &format!("/api/v2/projects/{project}/environments"),
            json!({"key": "gone", "name": "Gone", "color": "aaaaaa"}),
        )
        .await;
    }
    for team in ["a", "b", "gone1", "gone2"] {
        made(app, "/api/v2/teams", json!({"key": team, "name": team})).await;
    }
    for role in ["ra", "rb", "gone1", "gone2"] {
        let policy = statement("allow", "proj/p", &["viewProject"]);
        made(
            app,
            "/api/v2/roles",
            json!({"key": role, "name": role, "policy": policy}),
        )
        .await;
    }
}

/// For every route: the case above, on a fresh member per case.
async fn every_route_decides_its_action_on_its_resource(backend: Backend) {
    let app = spawn(backend).await;
    // Pairs of resources: the first the case's role names, the second its sibling.
    make_keyed_resource_pairs(&app).await;
    let mut members = Vec::new();
    for name in ["a", "b", "gone1", "gone2"] {
        members.push(app.member(&format!("{name}@example.com"), "reader").await);
    }
    let [member_a, member_b, member_gone1, member_gone2] = &members[..] else {
        unreachable!()
    };
    let mut tokens = Vec::new();
    for name in ["t1", "t2", "gone1", "gone2"] {
        let body = json!({"name": name, "role": "reader", "serviceToken": true});
        tokens.push(made(&app, "/api/v2/tokens", body).await);
    }
    let [token_1, token_2, token_gone1, token_gone2] = &tokens[..] else {
        unreachable!()
    };
    let mut hooks = Vec::new();
    for _ in 0..4 {
        let body = json!({"url": "https://example.com/hook", "sign": false, "on": false});
        hooks.push(made(&app, "/api/v2/webhooks", body).await);
    }
    let [hook_1, hook_2, hook_gone1, hook_gone2] = &hooks[..] else {
        unreachable!()
    };
    let entry_of = |listed: Value| listed["items"][0]["_id"].as_str().unwrap().to_owned();
    let entry_p = entry_of(app.get("/api/v2/auditlog?spec=proj/p").await.body);
    let entry_q = entry_of(app.get("/api/v2/auditlog?spec=proj/q").await.body);

    let view_p = || statement("allow", "proj/p", &["viewProject"]);
    let rename_team = |name: &str| json!({"instructions": [{"kind": "updateName", "value": name}]});
    let token_patch = json!([{"op": "replace", "path": "/description", "value": "d"}]);
    let name_patch = json!([{"op": "add", "path": "/firstName", "value": "N"}]);
    let environment = json!({"key": "staging", "name": "Staging", "color": "aaaaaa"});
    let copy = |from: &str, to: &str| json!({"source": {"key": from}, "target": {"key": to}});
    let hook = json!({"url": "https://example.com/other", "sign": false, "on": false});
    let hook_on = json!([{"op": "replace", "path": "/on", "value": true}]);
    let cases: Vec<Case> = vec![
        // The audit log.
        allow(
            ("GET", "/auditlog"),
            "no_access",
            statement("allow", "acct", &["viewAuditLog"]),
            get("/api/v2/auditlog"),
            200,
            get("/api/v2/members"),
        ),
        allow(
            ("GET", "/auditlog/{id}"),
            "no_access",
            json!([
                {"effect": "allow", "resources": ["acct"], "actions": ["viewAuditLog"]},
                {"effect": "allow", "resources": ["proj/p"], "actions": ["viewProject"]}
            ]),
            get(&format!("/api/v2/auditlog/{entry_p}")),
            200,
            get(&format!("/api/v2/auditlog/{entry_q}")),
        ),
        // Projects.
        allow(
            ("GET", "/projects"),
            "no_access",
            view_p(),
            get("/api/v2/projects"),
            200,
            get("/api/v2/projects/q"),
        ),
        allow(
            ("POST", "/projects"),
            "reader",
            json!([{"effect": "allow", "resources": ["proj/n1", "proj/n1:env/*"],
                "actions": ["createProject", "createEnvironment"]}]),
            post("/api/v2/projects", json!({"key": "n1", "name": "N1"})),
            201,
            post("/api/v2/projects", json!({"key": "n2", "name": "N2"})),
        ),
        allow(
            ("GET", "/projects/{projectKey}"),
            "no_access",
            view_p(),
            get("/api/v2/projects/p"),
            200,
            get("/api/v2/projects/q"),
        ),
        allow(
            ("PATCH", "/projects/{projectKey}"),
            "reader",
            statement("allow", "proj/p", &["updateName"]),
            patch("/api/v2/projects/p", rename("P2")),
            200,
            patch("/api/v2/projects/q", rename("Q2")),
        ),
        allow(
            ("DELETE", "/projects/{projectKey}"),
            "reader",
            statement("allow", "proj/gone1", &["deleteProject"]),
            delete("/api/v2/projects/gone1"),
            204,
            delete("/api/v2/projects/gone2"),
        ),
        // Environments.
        allow(
            ("GET", "/projects/{projectKey}/environments"),
            "no_access",
            view_p(),
            get("/api/v2/projects/p/environments"),
            200,
            get("/api/v2/projects/q/environments"),
        ),
        allow(
            ("POST", "/projects/{projectKey}/environments"),
            "reader",
            statement("allow", "proj/p:env/*", &["createEnvironment"]),
            post("/api/v2/projects/p/environments", environment.clone()),
            201,
            post("/api/v2/projects/q/environments", environment),
        ),
        allow(
            (
                "GET",
                "/projects/{projectKey}/environments/{environmentKey}",
            ),
            "no_access",
            view_p(),
            get("/api/v2/projects/p/environments/test"),
            200,
            get("/api/v2/projects/q/environments/test"),
        ),
        allow(
            (
                "PATCH",
                "/projects/{projectKey}/environments/{environmentKey}",
            ),
            "reader",
            statement("allow", "proj/p:env/test", &["updateName"]),
            patch("/api/v2/projects/p/environments/test", rename("Test 2")),
            200,
            patch("/api/v2/projects/p/environments/production", rename("P")),
        ),
        allow(
            (
                "DELETE",
                "/projects/{projectKey}/environments/{environmentKey}",
            ),
            "reader",
            statement("allow", "proj/p:env/gone", &["deleteEnvironment"]),
            delete("/api/v2/projects/p/environments/gone"),
            204,
            delete("/api/v2/projects/q/environments/gone"),
        ),
        allow(
            (
                "POST",
                "/projects/{projectKey}/environments/{environmentKey}/apiKey",
            ),
            "reader",
            statement("allow", "proj/p:env/test", &["updateApiKey"]),
            post("/api/v2/projects/p/environments/test/apiKey", json!({})),
            200,
            post(
                "/api/v2/projects/p/environments/production/apiKey",
                json!({}),
            ),
        ),
        allow(
            (
                "POST",
                "/projects/{projectKey}/environments/{environmentKey}/mobileKey",
            ),
            "reader",
            statement("allow", "proj/p:env/test", &["updateMobileKey"]),
            post("/api/v2/projects/p/environments/test/mobileKey", json!({})),
            200,
            post(
                "/api/v2/projects/p/environments/production/mobileKey",
                json!({}),
            ),
        ),
        // Flags.
        allow(
            ("GET", "/flags/{projectKey}"),
            "no_access",
            view_p(),
            get("/api/v2/flags/p"),
            200,
            get("/api/v2/flags/q"),
        ),
        allow(
            ("POST", "/flags/{projectKey}"),
            "reader",
            statement("allow", "proj/p:env/*:flag/*", &["createFlag"]),
            post("/api/v2/flags/p", json!({"key": "g", "name": "G"})),
            201,
            post("/api/v2/flags/q", json!({"key": "g", "name": "G"})),
        ),
        allow(
            ("GET", "/flags/{projectKey}/{flagKey}"),
            "no_access",
            view_p(),
            get("/api/v2/flags/p/f"),
            200,
            get("/api/v2/flags/q/f"),
        ),
        allow(
            ("PATCH", "/flags/{projectKey}/{flagKey}"),
            "reader",
            statement("allow", "proj/p:env/production:flag/f", &["updateOn"]),
            Call::Toggle("p", "production"),
            200,
            Call::Toggle("p", "test"),
        ),
        allow(
            ("PATCH", "/flags/{projectKey}/{flagKey}"),
            "reader",
            statement("allow", "proj/p:env/*:flag/f", &["updateName"]),
            patch("/api/v2/flags/p/f", rename("F2")),
            200,
            patch("/api/v2/flags/p/d", rename("D2")),
        ),
        allow(
            // A deny statement overrides an allow.
            ("PATCH", "/flags/{projectKey}/{flagKey}"),
            "reader",
            json!([
                {"effect": "allow", "resources": ["proj/*:env/*:flag/*"], "actions": ["updateOn"]},
                {"effect": "deny", "resources": ["proj/q:env/production:flag/*"], "actions": ["updateOn"]}
            ]),
            Call::Toggle("q", "test"),
            200,
            Call::Toggle("q", "production"),
        ),
        allow(
            ("DELETE", "/flags/{projectKey}/{flagKey}"),
            "reader",
            statement("allow", "proj/p:env/*:flag/gone", &["deleteFlag"]),
            delete("/api/v2/flags/p/gone"),
            204,
            delete("/api/v2/flags/q/gone"),
        ),
        allow(
            ("POST", "/flags/{projectKey}/{flagKey}/copy"),
            "reader",
            json!([
                {"effect": "allow", "resources": ["proj/p:env/test:flag/c"], "actions": ["copyFlagConfigFrom"]},
                {"effect": "allow", "resources": ["proj/p:env/production:flag/c"], "actions": ["copyFlagConfigTo"]}
            ]),
            post("/api/v2/flags/p/c/copy", copy("test", "production")),
            201,
            post("/api/v2/flags/p/c/copy", copy("production", "test")),
        ),
        allow(
            ("GET", "/flags/{projectKey}/{flagKey}/dependent-flags"),
            "no_access",
            view_p(),
            Call::GetBeta("/api/v2/flags/p/f/dependent-flags".into()),
            200,
            Call::GetBeta("/api/v2/flags/q/f/dependent-flags".into()),
        ),
        allow(
            ("GET", "/flag-status/{projectKey}/{flagKey}"),
            "no_access",
            view_p(),
            get("/api/v2/flag-status/p/f"),
            200,
            get("/api/v2/flag-status/q/f"),
        ),
        allow(
            (
                "POST",
                "/projects/{projectKey}/environments/{environmentKey}/flags/evaluate",
            ),
            "no_access",
            view_p(),
            post(
                "/api/v2/projects/p/environments/test/flags/evaluate",
                json!({"key": "ann"}),
            ),
            200,
            post(
                "/api/v2/projects/q/environments/test/flags/evaluate",
                json!({"key": "ann"}),
            ),
        ),
        allow(
            (
                "POST",
                "/projects/{projectKey}/environments/{environmentKey}/flags/{flagKey}/explain",
            ),
            "no_access",
            view_p(),
            post(
                "/api/v2/projects/p/environments/test/flags/f/explain",
                json!({"key": "ann"}),
            ),
            200,
            post(
                "/api/v2/projects/q/environments/test/flags/f/explain",
                json!({"key": "ann"}),
            ),
        ),
        allow(
            ("GET", "/flag-statuses/{projectKey}/{environmentKey}"),
            "no_access",
            view_p(),
            get("/api/v2/flag-statuses/p/test"),
            200,
            get("/api/v2/flag-statuses/q/test"),
        ),
        allow(
            (
                "GET",
                "/flag-statuses/{projectKey}/{environmentKey}/{flagKey}",
            ),
            "no_access",
            view_p(),
            get("/api/v2/flag-statuses/p/test/f"),
            200,
            get("/api/v2/flag-statuses/q/test/f"),
        ),
        // Segments.
        allow(
            ("GET", "/segments/{projectKey}/{environmentKey}"),
            "no_access",
            view_p(),
            get("/api/v2/segments/p/test"),
            200,
            get("/api/v2/segments/q/test"),
        ),
        allow(
            ("POST", "/segments/{projectKey}/{environmentKey}"),
            "reader",
            statement("allow", "proj/p:env/test:segment/*", &["createSegment"]),
            post("/api/v2/segments/p/test", json!({"key": "t", "name": "T"})),
            201,
            post(
                "/api/v2/segments/p/production",
                json!({"key": "t", "name": "T"}),
            ),
        ),
        allow(
            (
                "GET",
                "/segments/{projectKey}/{environmentKey}/{segmentKey}",
            ),
            "no_access",
            view_p(),
            get("/api/v2/segments/p/test/s"),
            200,
            get("/api/v2/segments/q/test/s"),
        ),
        allow(
            (
                "PATCH",
                "/segments/{projectKey}/{environmentKey}/{segmentKey}",
            ),
            "reader",
            statement("allow", "proj/p:env/test:segment/s", &["updateName"]),
            patch("/api/v2/segments/p/test/s", rename("S2")),
            200,
            patch("/api/v2/segments/q/test/s", rename("S2")),
        ),
        allow(
            (
                "DELETE",
                "/segments/{projectKey}/{environmentKey}/{segmentKey}",
            ),
            "reader",
            statement("allow", "proj/p:env/test:segment/gone", &["deleteSegment"]),
            delete("/api/v2/segments/p/test/gone"),
            204,
            delete("/api/v2/segments/q/test/gone"),
        ),
        // Members.
        allow(
            ("GET", "/members"),
            "no_access",
            statement("allow", "member/*", &["viewMembers"]),
            get("/api/v2/members"),
            200,
            get("/api/v2/teams"),
        ),
        allow(
            ("POST", "/members"),
            "reader",
            statement("allow", "member/*", &["createMember"]),
            post(
                "/api/v2/members",
                json!([{"email": "new@example.com", "role": "reader"}]),
            ),
            201,
            post(
                "/api/v2/members",
                json!([{"email": "new2@example.com", "role": "reader", "customRoles": ["ra"]}]),
            ),
        ),
        allow(
            ("GET", "/members/{id}"),
            "no_access",
            statement("allow", &format!("member/{member_a}"), &["viewMembers"]),
            get(&format!("/api/v2/members/{member_a}")),
            200,
            get(&format!("/api/v2/members/{member_b}")),
        ),
        allow(
            ("PATCH", "/members/{id}"),
            "reader",
            statement(
                "allow",
                &format!("member/{member_a}"),
                &["updateMemberName"],
            ),
            patch(&format!("/api/v2/members/{member_a}"), name_patch.clone()),
            200,
            patch(&format!("/api/v2/members/{member_b}"), name_patch),
        ),
        allow(
            ("DELETE", "/members/{id}"),
            "reader",
            statement(
                "allow",
                &format!("member/{member_gone1}"),
                &["deleteMember"],
            ),
            delete(&format!("/api/v2/members/{member_gone1}")),
            204,
            delete(&format!("/api/v2/members/{member_gone2}")),
        ),
        deny(
            ("POST", "/members/{id}/teams"),
            statement(
                "deny",
                &format!("member/{member_a}"),
                &["updateMemberTeams"],
            ),
            post(
                &format!("/api/v2/members/{member_a}/teams"),
                json!({"teamKeys": ["a"]}),
            ),
            post(
                &format!("/api/v2/members/{member_b}/teams"),
                json!({"teamKeys": ["a"]}),
            ),
            201,
        ),
        // Access tokens.
        allow(
            ("GET", "/tokens"),
            "reader",
            statement("allow", "member/{me}:token/*", &["viewAccessTokens"]),
            get("/api/v2/tokens"),
            200,
            get("/api/v2/tokens?showAll=true"),
        ),
        allow(
            ("POST", "/tokens"),
            "reader",
            statement("allow", "member/{me}:token/n1", &["createAccessToken"]),
            post("/api/v2/tokens", json!({"name": "n1", "role": "reader"})),
            201,
            post("/api/v2/tokens", json!({"name": "n2", "role": "reader"})),
        ),
        allow(
            ("GET", "/tokens/{id}"),
            "reader",
            statement("allow", "member/*:token/t1", &["viewAccessTokens"]),
            get(&format!("/api/v2/tokens/{token_1}")),
            200,
            get(&format!("/api/v2/tokens/{token_2}")),
        ),
        allow(
            ("PATCH", "/tokens/{id}"),
            "reader",
            statement("allow", "member/*:token/t1", &["updateAccessToken"]),
            patch(&format!("/api/v2/tokens/{token_1}"), token_patch.clone()),
            200,
            patch(&format!("/api/v2/tokens/{token_2}"), token_patch),
        ),
        allow(
            ("POST", "/tokens/{id}/reset"),
            "reader",
            statement("allow", "member/*:token/t1", &["resetAccessToken"]),
            post(&format!("/api/v2/tokens/{token_1}/reset"), json!({})),
            200,
            post(&format!("/api/v2/tokens/{token_2}/reset"), json!({})),
        ),
        allow(
            ("DELETE", "/tokens/{id}"),
            "reader",
            statement("allow", "member/*:token/gone1", &["deleteAccessToken"]),
            delete(&format!("/api/v2/tokens/{token_gone1}")),
            204,
            delete(&format!("/api/v2/tokens/{token_gone2}")),
        ),
        // Webhooks: account-wide, the admin base role besides a policy.
        deny(
            ("GET", "/webhooks"),
            statement("deny", "webhook/*", &["viewWebhooks"]),
            get("/api/v2/webhooks"),
            get("/api/v2/members"),
            200,
        ),
        deny(
            ("POST", "/webhooks"),
            statement("deny", "webhook/*", &["createWebhook"]),
            post("/api/v2/webhooks", hook.clone()),
            get("/api/v2/webhooks"),
            200,
        ),
        deny(
            ("GET", "/webhooks/{id}"),
            statement("deny", &format!("webhook/{hook_1}"), &["viewWebhooks"]),
            get(&format!("/api/v2/webhooks/{hook_1}")),
            get(&format!("/api/v2/webhooks/{hook_2}")),
            200,
        ),
        deny(
            ("GET", "/webhooks/{id}/deliveries"),
            statement("deny", &format!("webhook/{hook_1}"), &["viewWebhooks"]),
            get(&format!("/api/v2/webhooks/{hook_1}/deliveries")),
            get(&format!("/api/v2/webhooks/{hook_2}/deliveries")),
            200,
        ),
        deny(
            ("PATCH", "/webhooks/{id}"),
            statement("deny", &format!("webhook/{hook_1}"), &["updateWebhook"]),
            patch(&format!("/api/v2/webhooks/{hook_1}"), hook_on.clone()),
            patch(&format!("/api/v2/webhooks/{hook_2}"), hook_on),
            200,
        ),
        deny(
            ("DELETE", "/webhooks/{id}"),
            statement("deny", &format!("webhook/{hook_gone1}"), &["deleteWebhook"]),
            delete(&format!("/api/v2/webhooks/{hook_gone1}")),
            delete(&format!("/api/v2/webhooks/{hook_gone2}")),
            204,
        ),
        // Custom roles: reading them takes a policy; changing them the admin base role too.
        allow(
            ("GET", "/roles"),
            "no_access",
            statement("allow", "role/*", &["viewRoles"]),
            get("/api/v2/roles"),
            200,
            get("/api/v2/teams"),
        ),
        allow(
            ("GET", "/roles/{customRoleKey}"),
            "no_access",
            statement("allow", "role/ra", &["viewRoles"]),
            get("/api/v2/roles/ra"),
            200,
            get("/api/v2/roles/rb"),
        ),
        deny(
            ("POST", "/roles"),
            statement("deny", "role/n1", &["createRole"]),
            post(
                "/api/v2/roles",
                json!({"key": "n1", "name": "N1", "policy": view_p()}),
            ),
            post(
                "/api/v2/roles",
                json!({"key": "n2", "name": "N2", "policy": view_p()}),
            ),
            201,
        ),
        deny(
            ("PATCH", "/roles/{customRoleKey}"),
            statement("deny", "role/ra", &["updateRole"]),
            patch("/api/v2/roles/ra", rename("RA")),
            patch("/api/v2/roles/rb", rename("RB")),
            200,
        ),
        deny(
            ("DELETE", "/roles/{customRoleKey}"),
            statement("deny", "role/gone1", &["deleteRole"]),
            delete("/api/v2/roles/gone1"),
            delete("/api/v2/roles/gone2"),
            204,
        ),
        // Teams: the same.
        allow(
            ("GET", "/teams"),
            "no_access",
            statement("allow", "team/*", &["viewTeams"]),
            get("/api/v2/teams"),
            200,
            get("/api/v2/roles"),
        ),
        allow(
            ("GET", "/teams/{teamKey}"),
            "no_access",
            statement("allow", "team/a", &["viewTeams"]),
            get("/api/v2/teams/a"),
            200,
            get("/api/v2/teams/b"),
        ),
        allow(
            ("PATCH", "/teams/{teamKey}"),
            "reader",
            statement("allow", "team/a", &["updateTeamName"]),
            Call::Semantic("/api/v2/teams/a".into(), rename_team("A2")),
            200,
            Call::Semantic("/api/v2/teams/b".into(), rename_team("B2")),
        ),
        deny(
            ("POST", "/teams"),
            statement("deny", "team/n1", &["createTeam"]),
            post("/api/v2/teams", json!({"key": "n1", "name": "N1"})),
            post("/api/v2/teams", json!({"key": "n2", "name": "N2"})),
            201,
        ),
        deny(
            ("DELETE", "/teams/{teamKey}"),
            statement("deny", "team/gone1", &["deleteTeam"]),
            delete("/api/v2/teams/gone1"),
            delete("/api/v2/teams/gone2"),
            204,
        ),
    ];

    assert_every_catalogued_route_has_a_case(&cases);
    for (i, case) in cases.iter().enumerate() {
        check_case(&app, i, case).await;
    }
}

on_both_backends!(every_route_decides_its_action_on_its_resource);
