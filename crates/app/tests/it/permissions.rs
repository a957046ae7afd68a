//! Every route x every role (and bad credentials): the expected status class, stated here
//! independently of the permission table the server uses. A route the server has but this table
//! lacks fails the test.

use actix_web::http::Method;
use domain::role::Role;
use serde_json::{json, Value};

use adapter_http::HttpConfig;

use crate::common::{request, spawn_with, Backend, OWNER};

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// Anyone, without a token.
    Public,
    /// Any valid access token.
    Token,
    /// At least this role.
    Role(Role),
}

use Need::*;

/// The expected permissions of every route.
const ROUTES: &[(&str, &str, Need)] = &[
    ("get", "/api/v2", Public),
    ("get", "/api/v2/openapi.json", Public),
    ("get", "/api/v2/versions", Token),
    ("get", "/api/v2/caller-identity", Token),
    (
        "get",
        "/api/v2/flag-statuses/{projectKey}/{environmentKey}",
        Role(Role::Reader),
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/flags/evaluate",
        Role(Role::Reader),
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/flags/{flagKey}/explain",
        Role(Role::Reader),
    ),
    (
        "get",
        "/api/v2/flag-statuses/{projectKey}/{environmentKey}/{flagKey}",
        Role(Role::Reader),
    ),
    (
        "get",
        "/api/v2/flag-status/{projectKey}/{flagKey}",
        Role(Role::Reader),
    ),
    ("get", "/api/v2/projects", Role(Role::Reader)),
    ("post", "/api/v2/projects", Role(Role::Writer)),
    ("get", "/api/v2/projects/{projectKey}", Role(Role::Reader)),
    ("patch", "/api/v2/projects/{projectKey}", Role(Role::Writer)),
    (
        "delete",
        "/api/v2/projects/{projectKey}",
        Role(Role::Writer),
    ),
    (
        "get",
        "/api/v2/projects/{projectKey}/environments",
        Role(Role::Reader),
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments",
        Role(Role::Writer),
    ),
    (
        "get",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
        Role(Role::Reader),
    ),
    (
        "patch",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
        Role(Role::Writer),
    ),
    (
        "delete",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}",
        Role(Role::Writer),
    ),
    ("get", "/api/v2/flags/{projectKey}", Role(Role::Reader)),
    ("post", "/api/v2/flags/{projectKey}", Role(Role::Writer)),
    (
        "get",
        "/api/v2/flags/{projectKey}/{flagKey}",
        Role(Role::Reader),
    ),
    (
        "patch",
        "/api/v2/flags/{projectKey}/{flagKey}",
        Role(Role::Writer),
    ),
    (
        "delete",
        "/api/v2/flags/{projectKey}/{flagKey}",
        Role(Role::Writer),
    ),
    (
        "post",
        "/api/v2/flags/{projectKey}/{flagKey}/copy",
        Role(Role::Writer),
    ),
    (
        "get",
        "/api/v2/flags/{projectKey}/{flagKey}/dependent-flags",
        Role(Role::Reader),
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/apiKey",
        Role(Role::Writer),
    ),
    (
        "post",
        "/api/v2/projects/{projectKey}/environments/{environmentKey}/mobileKey",
        Role(Role::Writer),
    ),
    ("get", "/api/v2/tokens", Role(Role::Admin)),
    ("post", "/api/v2/tokens", Role(Role::Admin)),
    ("get", "/api/v2/tokens/{id}", Role(Role::Admin)),
    ("patch", "/api/v2/tokens/{id}", Role(Role::Admin)),
    ("post", "/api/v2/tokens/{id}/reset", Role(Role::Admin)),
    ("delete", "/api/v2/tokens/{id}", Role(Role::Admin)),
    (
        "get",
        "/api/v2/segments/{projectKey}/{environmentKey}",
        Role(Role::Reader),
    ),
    (
        "post",
        "/api/v2/segments/{projectKey}/{environmentKey}",
        Role(Role::Writer),
    ),
    (
        "get",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Role(Role::Reader),
    ),
    (
        "patch",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Role(Role::Writer),
    ),
    (
        "delete",
        "/api/v2/segments/{projectKey}/{environmentKey}/{segmentKey}",
        Role(Role::Writer),
    ),
    ("get", "/api/v2/auditlog", Role(Role::Reader)),
    ("get", "/api/v2/auditlog/{id}", Role(Role::Reader)),
    ("get", "/api/v2/roles", Role(Role::Reader)),
    ("post", "/api/v2/roles", Role(Role::Admin)),
    ("get", "/api/v2/roles/{customRoleKey}", Role(Role::Reader)),
    ("patch", "/api/v2/roles/{customRoleKey}", Role(Role::Admin)),
    ("delete", "/api/v2/roles/{customRoleKey}", Role(Role::Admin)),
    ("get", "/api/v2/webhooks", Role(Role::Admin)),
    ("post", "/api/v2/webhooks", Role(Role::Admin)),
    ("get", "/api/v2/webhooks/{id}", Role(Role::Admin)),
    ("patch", "/api/v2/webhooks/{id}", Role(Role::Admin)),
    ("delete", "/api/v2/webhooks/{id}", Role(Role::Admin)),
    ("get", "/api/v2/webhooks/{id}/deliveries", Role(Role::Admin)),
    ("get", "/api/v2/members", Role(Role::Reader)),
    ("post", "/api/v2/members", Role(Role::Admin)),
    ("get", "/api/v2/members/{id}", Role(Role::Reader)),
    ("patch", "/api/v2/members/{id}", Role(Role::Admin)),
    ("delete", "/api/v2/members/{id}", Role(Role::Admin)),
    ("post", "/api/v2/members/{id}/teams", Role(Role::Admin)),
    ("get", "/api/v2/teams", Role(Role::Reader)),
    ("post", "/api/v2/teams", Role(Role::Admin)),
    ("get", "/api/v2/teams/{teamKey}", Role(Role::Reader)),
    ("patch", "/api/v2/teams/{teamKey}", Role(Role::Admin)),
    ("delete", "/api/v2/teams/{teamKey}", Role(Role::Admin)),
];

#[test]
fn every_route_has_an_expectation() {
    let doc = adapter_http::openapi_document().unwrap();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.push((method.clone(), path.clone()));
        }
    }
    documented.sort();
    let mut expected: Vec<(String, String)> = ROUTES
        .iter()
        .map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    expected.sort();
    assert_eq!(documented, expected, "every route needs a row in ROUTES");
}

#[test]
fn the_documented_table_is_current() {
    let doc = include_str!("../../../../docs/roles.md");
    assert!(
        doc.contains(&domain::role::permission_table_markdown())
            && doc.contains(&domain::role::actor_rules_markdown())
            && doc.contains(&domain::catalogue::catalogue_markdown(
                &adapter_http::catalogue::routes_needing
            )),
        "docs/roles.md is out of date: run `cargo xtask roles`"
    );
}

/// A credential and the role it acts with (`None`: not an access token).
struct Credential {
    name: String,
    secret: String,
    role: Option<Role>,
}

/// The credentials that are no access token: none, a wrong one, and the keys of environment
/// `env`.
fn keyless_credentials(env: &Value) -> Vec<Credential> {
    vec![
        Credential {
            name: "none".into(),
            secret: String::new(),
            role: None,
        },
        Credential {
            name: "wrong".into(),
            secret: "api-00000000-0000-4000-8000-000000000000".into(),
            role: None,
        },
        Credential {
            name: "sdk key".into(),
            secret: env["apiKey"].as_str().unwrap().into(),
            role: None,
        },
        Credential {
            name: "mobile key".into(),
            secret: env["mobileKey"].as_str().unwrap().into(),
            role: None,
        },
        Credential {
            name: "client-side id".into(),
            secret: env["_id"].as_str().unwrap().into(),
            role: None,
        },
    ]
}

/// Route `template` made concrete: project `p`, environment `test`, flag `f`, segment `s`, role
/// `r`, and as `{id}` member `victim_member` (under `/members`) or token `victim`.
fn concrete_path(template: &str, victim_member: &str, victim: &str) -> String {
    template
        .replace("{projectKey}", "p")
        .replace("{environmentKey}", "test")
        .replace("{flagKey}", "f")
        .replace("{segmentKey}", "s")
        .replace("{customRoleKey}", "r")
        .replace(
            "{id}",
            if template.starts_with("/api/v2/members") {
                victim_member
            } else {
                victim
            },
        )
}

async fn every_route_for_every_role(backend: Backend) {
    // Every route is tried with bad credentials too: failed authentications must stay 401s here
    // (their throttling is tested in api_auth).
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            auth_failure_limit: 0,
            ..HttpConfig::default()
        },
    )
    .await;
    let project = app.project("p").await;
    app.flag("p", "f").await;
    let env = &project["environments"][0];
    let victim = app
        .post("/api/v2/tokens", json!({"name": "victim"}))
        .await
        .body["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut credentials = keyless_credentials(env);
    for role in [Role::Reader, Role::Writer, Role::Admin] {
        credentials.push(Credential {
            name: role.to_string(),
            secret: app.token(role.as_str()).await,
            role: Some(role),
        });
    }
    // Members' personal tokens act with at most the member's role: an admin token of a
    // `no_access` member does nothing, of a reader only reads.
    for (email, role) in [
        ("nobody@example.com", Role::NoAccess),
        ("reader@example.com", Role::Reader),
    ] {
        let member = app.member(email, role.as_str()).await;
        credentials.push(Credential {
            name: format!("admin token of a {role}"),
            secret: app.token_of_member(&member, Role::Admin),
            role: Some(role),
        });
    }
    // The owner's admin token acts as the owner.
    credentials.push(Credential {
        name: "owner".into(),
        secret: OWNER.into(),
        role: Some(Role::Owner),
    });
    let victim_member = app.member("victim@example.com", "reader").await;

    for (method, template, need) in ROUTES {
        let path = concrete_path(template, &victim_member, &victim);
        for credential in &credentials {
            let method = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let token = (!credential.secret.is_empty()).then_some(credential.secret.as_str());
            let mut req =
                request(method.clone(), &path, token).insert_header(("Svc-API-Version", "beta"));
            if method == Method::POST || method == Method::PATCH {
                req = req
                    .insert_header(("Content-Type", "application/json"))
                    .set_payload("{}");
            }
            let status = app.send(req).await.status;
            let expected: &[u16] = match (need, credential.role) {
                (Public, _) => &[],
                (_, None) => &[401],
                (Token, Some(_)) => &[],
                (Role(least), Some(role)) if role >= *least => &[],
                (Role(_), Some(_)) => &[403],
            };
            let what = format!("{method} {template} as {}: got {status}", credential.name);
            match expected {
                [] => assert!(
                    status != 401 && status != 403,
                    "{what}, expected to be let through"
                ),
                [code] => assert_eq!(status, *code, "{what}"),
                _ => unreachable!(),
            }
        }
    }
    let _: Value = Value::Null;
}

on_both_backends!(every_route_for_every_role);
