//! "Test a context" on a flag's console page, on both stores: the form, the trace of a
//! context's evaluation, and what it says of bad input.

use actix_web::test::TestRequest;
use serde_json::json;

use super::{api, console, form, get, shop, sign_in, visit, with_session};
use crate::common::{Backend, OWNER};

const EXPLAIN: &str = "/projects/shop/flags/dark-mode/explain";

fn body(csrf: &str, environment: &str, context: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", csrf)
        .append_pair("environment", environment)
        .append_pair("context", context)
        .finish()
}

async fn a_context_is_evaluated_and_its_trace_shown(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let (status, flag) = api(
        &c.app,
        TestRequest::patch()
            .uri("/api/v2/flags/shop/dark-mode")
            .set_json(json!([
                {"op": "replace", "path": "/environments/production/on", "value": true},
                {"op": "add", "path": "/environments/production/rules/-",
                 "value": {"clauses": [{"attribute": "email", "op": "endsWith",
                                        "values": ["@example.com"], "contextKind": "user",
                                        "negate": false}], "variation": 0}}
            ])),
    )
    .await;
    assert_eq!(status, 200, "{flag}");
    let session = sign_in(&c.app, OWNER).await;
    let flag_page = visit(&c.app, "/projects/shop/flags/dark-mode", &session).await;
    assert!(
        flag_page.body.contains(&format!(r#"href="{EXPLAIN}""#)),
        "{}",
        flag_page.body
    );
    let page = visit(&c.app, EXPLAIN, &session).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = page.csrf();
    let context = r#"{"kind": "user", "key": "ann", "email": "ann@example.com"}"#;
    let traced = get(
        &c.app,
        with_session(form(EXPLAIN, &body(&csrf, "production", context)), &session),
    )
    .await;
    assert_eq!(traced.status, 200, "{}", traced.body);
    for shown in [
        "Result in production",
        "RULE_MATCH",
        "&quot;ann@example.com&quot;",
        "matched",
    ] {
        assert!(traced.body.contains(shown), "{shown}: {}", traced.body);
    }
    assert!(
        traced.body.contains("ann@example.com"),
        "the form keeps the context"
    );
    // Another environment: targeting off there.
    let test = get(
        &c.app,
        with_session(form(EXPLAIN, &body(&csrf, "test", context)), &session),
    )
    .await;
    assert!(test.body.contains("targeting is off"), "{}", test.body);
    // Bad input is said on the page; a forged form is refused.
    let not_json = get(
        &c.app,
        with_session(form(EXPLAIN, &body(&csrf, "production", "{")), &session),
    )
    .await;
    assert_eq!(not_json.status, 400, "{}", not_json.body);
    assert!(not_json.body.contains("not JSON"), "{}", not_json.body);
    let keyless = get(
        &c.app,
        with_session(
            form(EXPLAIN, &body(&csrf, "production", r#"{"kind": "user"}"#)),
            &session,
        ),
    )
    .await;
    assert_eq!(keyless.status, 400, "{}", keyless.body);
    let nowhere = get(
        &c.app,
        with_session(form(EXPLAIN, &body(&csrf, "nowhere", context)), &session),
    )
    .await;
    assert_eq!(nowhere.status, 404, "{}", nowhere.body);
    // A large context (about 40 KB, 120 KB percent-encoded) is evaluated too.
    let large =
        json!({"kind": "user", "key": "ann", "tags": vec!["x".repeat(40); 1_000]}).to_string();
    let evaluated = get(
        &c.app,
        with_session(form(EXPLAIN, &body(&csrf, "production", &large)), &session),
    )
    .await;
    assert_eq!(
        evaluated.status,
        200,
        "{}",
        &evaluated.body[..evaluated.body.len().min(500)]
    );
    let forged = get(
        &c.app,
        with_session(
            form(EXPLAIN, &body("forged", "production", context)),
            &session,
        ),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
}

on_both_backends!(a_context_is_evaluated_and_its_trace_shown);
