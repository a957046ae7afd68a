//! The members, tokens and segments pages over HTTP, on both stores.

use actix_web::test::TestRequest;
use serde_json::json;

use super::{api, console, field, form, get, shop, sign_in, visit, with_session};
use crate::common::{Backend, OWNER};

async fn the_members_page_lists_the_account_and_a_reader_sees_it_too(backend: Backend) {
    let c = console(backend).await;
    let reader = shop(&c.app).await;
    let (status, body) = api(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/members")
            .set_json(json!([{"email": "ann@example.com", "role": "writer", "firstName": "Ann"}])),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let session = sign_in(&c.app, &reader).await;
    let page = visit(&c.app, "/members", &session).await;
    assert_eq!(page.status, 200, "{}", page.body);
    for text in [
        "owner@example.com",
        "ann@example.com",
        "Ann",
        "invited",
        "2 members",
    ] {
        assert!(page.body.contains(text), "{text}: {}", page.body);
    }
    let search = visit(&c.app, "/members?q=ANN", &session).await;
    assert!(search.body.contains("1 member<"), "{}", search.body);
    assert!(!search.body.contains("owner@example.com"));
    // A reader has no tokens page link, and the page refuses it what its role may not.
    assert!(!page.body.contains(r#"href="/tokens""#));
}

async fn an_admin_creates_a_token_sees_its_secret_once_and_deletes_it(backend: Backend) {
    let c = console(backend).await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, "/tokens", &session).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(r#"href="/tokens""#));
    let csrf = field(&page.body, "create-token", "csrf");
    let created = get(
        &c.app,
        with_session(
            form(
                "/tokens",
                &format!(
                    "csrf={csrf}&name=ci+deploys&description=for+CI&role=writer&service_token=true"
                ),
            ),
            &session,
        ),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(
        created.header("location").is_empty(),
        "no redirect: the secret is in no address"
    );
    let marker = r#"<code class="secret" id="secret">"#;
    let at = created.body.find(marker).expect("the secret") + marker.len();
    let secret = created.body[at..at + created.body[at..].find('<').unwrap()].to_owned();
    // The secret works, with the role chosen.
    let (status, me) = api(&c.app, TestRequest::get().uri("/api/v2/tokens")).await;
    assert_eq!(status, 200);
    let token = me["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ci deploys")
        .expect("the new token")
        .clone();
    assert_eq!(
        (token["role"].as_str(), token["serviceToken"].as_bool()),
        (Some("writer"), Some(true))
    );
    let used = get(
        &c.app,
        TestRequest::get()
            .uri("/api/v2/projects")
            .insert_header(("authorization", secret.as_str())),
    )
    .await;
    assert_eq!(used.status, 200, "{}", used.body);
    // Listed afterwards without its secret.
    let listed = visit(&c.app, "/tokens", &session).await;
    assert!(listed.body.contains("ci deploys"));
    assert!(!listed.body.contains(&secret));
    // Deleted: the secret stops working.
    let id = token["_id"].as_str().unwrap();
    let deleted = get(
        &c.app,
        with_session(
            form(&format!("/tokens/{id}/delete"), &format!("csrf={csrf}")),
            &session,
        ),
    )
    .await;
    assert_eq!(
        (deleted.status, deleted.header("location")),
        (303, "/tokens?deleted=1"),
        "{}",
        deleted.body
    );
    let after = visit(&c.app, "/tokens?deleted=1", &session).await;
    assert!(after.body.contains("The token was deleted."));
    assert!(!after.body.contains("ci deploys"));
    let refused = get(
        &c.app,
        TestRequest::get()
            .uri("/api/v2/projects")
            .insert_header(("authorization", secret.as_str())),
    )
    .await;
    assert_eq!(refused.status, 401);
}

async fn token_forms_are_refused_to_other_roles_and_without_the_csrf_token(backend: Backend) {
    let c = console(backend).await;
    let (status, writer) = api(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/tokens")
            .set_json(json!({"name": "w", "role": "writer"})),
    )
    .await;
    assert_eq!(status, 201);
    let session = sign_in(&c.app, writer["token"].as_str().unwrap()).await;
    let page = visit(&c.app, "/tokens", &session).await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(page.body.contains("Not permitted"));
    let csrf = visit(&c.app, "/members", &session).await.csrf();
    let created = get(
        &c.app,
        with_session(
            form("/tokens", &format!("csrf={csrf}&name=x&role=reader")),
            &session,
        ),
    )
    .await;
    assert_eq!(created.status, 403, "{}", created.body);
    assert!(created.body.contains("Not permitted"), "{}", created.body);
    // The owner: a role above its own is refused (an owner token cannot be made), and so is a
    // form without the session's CSRF token.
    let owner = sign_in(&c.app, OWNER).await;
    let csrf = visit(&c.app, "/tokens", &owner).await.csrf();
    let above = get(
        &c.app,
        with_session(
            form("/tokens", &format!("csrf={csrf}&name=x&role=owner")),
            &owner,
        ),
    )
    .await;
    assert_eq!(above.status, 400, "{}", above.body);
    let forged = get(
        &c.app,
        with_session(form("/tokens", "csrf=forged&name=x&role=reader"), &owner),
    )
    .await;
    assert_eq!(forged.status, 403);
    let (_, tokens) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/tokens?showAll=true"),
    )
    .await;
    assert_eq!(
        tokens["totalCount"], 2,
        "the owner's and the writer's: {tokens}"
    );
}

async fn deleting_the_sessions_own_token_ends_the_session(backend: Backend) {
    let c = console(backend).await;
    let (_, admin) = api(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/tokens")
            .set_json(json!({"name": "me", "role": "admin"})),
    )
    .await;
    let session = sign_in(&c.app, admin["token"].as_str().unwrap()).await;
    let page = visit(&c.app, "/tokens", &session).await;
    assert!(page.body.contains("this session ends"), "{}", page.body);
    let id = admin["_id"].as_str().unwrap();
    let deleted = get(
        &c.app,
        with_session(
            form(
                &format!("/tokens/{id}/delete"),
                &format!("csrf={}", page.csrf()),
            ),
            &session,
        ),
    )
    .await;
    assert_eq!(deleted.status, 303);
    let after = visit(&c.app, "/tokens", &session).await;
    assert_eq!((after.status, after.header("location")), (303, "/sign-in"));
}

/// Segment `beta` of shop's production, with a target and a rule, in a rule of `dark-mode`.
async fn beta_segment_in_a_rule_of_dark_mode<S, B>(app: &S)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, body) = api(
        app,
        TestRequest::post()
            .uri("/api/v2/segments/shop/production")
            .set_json(json!({"key": "beta", "name": "Beta testers", "tags": ["qa"]})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = api(
        app,
        TestRequest::patch()
            .uri("/api/v2/segments/shop/production/beta")
            .set_json(json!([
                {"op": "add", "path": "/included/0", "value": "ann"},
                {"op": "add", "path": "/rules/0", "value": {"clauses": [
                    {"attribute": "country", "op": "in", "values": ["de"], "contextKind": "user", "negate": false}
                ]}}
            ])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = api(
        app,
        TestRequest::patch()
            .uri("/api/v2/flags/shop/dark-mode")
            .set_json(json!([{"op": "add", "path": "/environments/production/rules/0", "value": {
                "variation": 0,
                "clauses": [{"attribute": "segmentMatch", "op": "segmentMatch", "values": ["beta"], "contextKind": "user", "negate": false}]
            }}])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

async fn segments_are_listed_per_environment_with_their_targets_rules_and_flags(backend: Backend) {
    let c = console(backend).await;
    let reader = shop(&c.app).await;
    beta_segment_in_a_rule_of_dark_mode(&c.app).await;
    let session = sign_in(&c.app, &reader).await;
    let projects = visit(&c.app, "/projects", &session).await;
    assert!(projects
        .body
        .contains(r#"href="/projects/shop/environments/production/segments""#));
    let list = visit(
        &c.app,
        "/projects/shop/environments/production/segments",
        &session,
    )
    .await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(
        list.body.contains("Beta testers") && list.body.contains("1 segment<"),
        "{}",
        list.body
    );
    let none = visit(
        &c.app,
        "/projects/shop/environments/test/segments?q=BETA",
        &session,
    )
    .await;
    assert!(none.body.contains("0 segments"), "{}", none.body);
    let found = visit(
        &c.app,
        "/projects/shop/environments/production/segments?q=BETA",
        &session,
    )
    .await;
    assert!(
        found.body.contains("1 segment<"),
        "searches ignore case: {}",
        found.body
    );
    let detail = visit(
        &c.app,
        "/projects/shop/environments/production/segments/beta",
        &session,
    )
    .await;
    assert_eq!(detail.status, 200, "{}", detail.body);
    for text in [
        "ann",
        "user country is one of &quot;de&quot;",
        "Dark mode",
        r#"href="/projects/shop/flags/dark-mode""#,
    ] {
        assert!(detail.body.contains(text), "{text}: {}", detail.body);
    }
    for (uri, status) in [
        ("/projects/shop/environments/staging/segments", 404),
        (
            "/projects/shop/environments/production/segments/nothing",
            404,
        ),
        ("/projects/nothing/environments/production/segments", 404),
        (
            "/projects/shop/environments/production/segments?page=x",
            400,
        ),
    ] {
        let page = visit(&c.app, uri, &session).await;
        assert_eq!(page.status, status, "{uri}: {}", page.body);
        assert!(
            page.header("content-type").starts_with("text/html"),
            "{uri}"
        );
    }
}

async fn token_names_and_pages_past_the_end_are_said_plainly(backend: Backend) {
    let c = console(backend).await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, "/tokens", &session).await;
    let blank = get(
        &c.app,
        with_session(
            form(
                "/tokens",
                &format!("csrf={}&name=++&role=reader", page.csrf()),
            ),
            &session,
        ),
    )
    .await;
    assert_eq!(blank.status, 400, "{}", blank.body);
    let (_, tokens) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/tokens?showAll=true"),
    )
    .await;
    assert_eq!(tokens["totalCount"], 1, "{tokens}");
    for uri in ["/tokens?page=4", "/members?page=4"] {
        let past = visit(&c.app, uri, &session).await;
        assert_eq!(past.status, 200);
        assert!(
            past.body.contains("There is no page 4"),
            "{uri}: {}",
            past.body
        );
    }
    // A service token's form makes service tokens.
    let (_, service) = api(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/tokens")
            .set_json(json!({"name": "svc", "role": "admin", "serviceToken": true})),
    )
    .await;
    let as_service = sign_in(&c.app, service["token"].as_str().unwrap()).await;
    let page = visit(&c.app, "/tokens", &as_service).await;
    assert!(page
        .body
        .contains(r#"type="hidden" name="service_token" value="true""#));
    let created = get(
        &c.app,
        with_session(
            form(
                "/tokens",
                &format!(
                    "csrf={}&name=made&role=reader&service_token=true",
                    page.csrf()
                ),
            ),
            &as_service,
        ),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
}

on_both_backends!(
    token_names_and_pages_past_the_end_are_said_plainly,
    the_members_page_lists_the_account_and_a_reader_sees_it_too,
    an_admin_creates_a_token_sees_its_secret_once_and_deletes_it,
    token_forms_are_refused_to_other_roles_and_without_the_csrf_token,
    deleting_the_sessions_own_token_ends_the_session,
    segments_are_listed_per_environment_with_their_targets_rules_and_flags
);
