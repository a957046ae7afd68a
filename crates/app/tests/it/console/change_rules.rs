//! The rules an environment sets for changing a flag from the console, on both stores: a comment
//! and a confirmation, asked for by switches, the serving form, archiving and copying.

use actix_web::test::TestRequest;
use serde_json::{json, Value};

use super::edit::{flag_of, post, FLAG_PAGE};
use super::{api, console, field, form, get, shop, sign_in, visit, with_session};
use crate::common::{Backend, OWNER};

/// The form of `dark-mode`'s switch in `env`, sent with `body` in `session` (by htmx if `htmx`).
fn switch_request(env: &str, session: &str, body: &str, htmx: bool) -> TestRequest {
    let mut req = with_session(
        form(&format!("{FLAG_PAGE}/environments/{env}/targeting"), body),
        session,
    );
    if htmx {
        req = req.insert_header(("hx-request", "true"));
    }
    req
}

/// Has environment `test` require a comment and a confirmation for every change.
async fn require_comments_and_confirmation_in_test<S, B>(app: &S)
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
        TestRequest::patch()
            .uri("/api/v2/projects/shop/environments/test")
            .set_json(json!([
                {"op": "replace", "path": "/requireComments", "value": true},
                {"op": "replace", "path": "/confirmChanges", "value": true}
            ])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// The serving form of `test` (which requires a comment and a confirmation) refuses a change
/// without either, says both on the flag page, and saves one with both. `flag` is the flag as it
/// is, `csrf` the session's CSRF token.
async fn check_the_serving_form_asks_for_both<S, B>(
    app: &S,
    session: &str,
    csrf: &str,
    flag: &Value,
) where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    // The serving form: confirmed and with a comment, or refused.
    let id = |i: usize| flag["variations"][i]["_id"].as_str().unwrap().to_owned();
    let version = flag["environments"]["test"]["version"].to_string();
    let serving = |extra: &str| {
        format!(
            "csrf={csrf}&version={version}&off={}&off_was={}{extra}",
            id(0),
            id(1)
        )
    };
    for (extra, reason) in [
        ("&comment=x", "Changes in Test must be confirmed"),
        ("&confirmed=true", "Test requires a comment"),
    ] {
        let refused = post(app, session, "environments/test/serving", &serving(extra)).await;
        assert_eq!(refused.status, 400, "{extra}: {}", refused.body);
        assert!(refused.body.contains(reason), "{extra}: {}", refused.body);
    }
    let page = visit(app, FLAG_PAGE, session).await;
    assert!(
        page.body.contains(
            r#"id="serving-confirmed-test" type="checkbox" name="confirmed" value="true" required"#
        ),
        "{}",
        page.body
    );
    let saved = post(
        app,
        session,
        "environments/test/serving",
        &serving("&comment=x&confirmed=true"),
    )
    .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(
        flag_of(app).await["environments"]["test"]["offVariation"],
        0
    );
}

async fn an_environments_rules_ask_for_a_comment_and_a_confirmation(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    require_comments_and_confirmation_in_test(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    assert!(
        list.body
            .contains("hx-confirm=\"Test asks to confirm every change (it also requires a comment: the field above the switches). Turn Dark mode on there?\""),
        "{}",
        list.body
    );
    assert!(list.body.contains("required in Test"), "{}", list.body);
    let csrf = field(&list.body, "switch-9-dark-mode.test", "csrf");
    let version = field(&list.body, "switch-9-dark-mode.test", "version");
    let switch = |body: String, htmx: bool| switch_request("test", &session, &body, htmx);
    // From the list (htmx, after its dialog) without a comment: refused, in the switch's place.
    let bare = get(
        &c.app,
        switch(
            format!("csrf={csrf}&on=true&version={version}&confirmed=true"),
            true,
        ),
    )
    .await;
    assert_eq!(bare.status, 200);
    assert!(
        bare.body.contains("Test requires a comment"),
        "{}",
        bare.body
    );
    // Without JavaScript, unconfirmed: a confirmation page, which sends it confirmed.
    let unconfirmed = get(
        &c.app,
        switch(
            format!("csrf={csrf}&on=true&version={version}&comment=why"),
            false,
        ),
    )
    .await;
    assert_eq!(unconfirmed.status, 200, "{}", unconfirmed.body);
    assert!(
        unconfirmed.body.contains("Confirm the change"),
        "{}",
        unconfirmed.body
    );
    assert!(unconfirmed
        .body
        .contains(r#"name="confirmed" value="true""#));
    assert!(
        unconfirmed.body.contains(r#"value="why" required"#),
        "{}",
        unconfirmed.body
    );
    assert_eq!(
        flag_of(&c.app).await["environments"]["test"]["on"],
        false,
        "nothing changed yet"
    );
    let confirmed = get(
        &c.app,
        switch(
            format!("csrf={csrf}&on=true&version={version}&comment=why&confirmed=true"),
            false,
        ),
    )
    .await;
    assert_eq!(confirmed.status, 303, "{}", confirmed.body);
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["environments"]["test"]["on"], true);
    check_the_serving_form_asks_for_both(&c.app, &session, &csrf, &flag).await;
    // Copying onto it needs a comment too.
    let flag = flag_of(&c.app).await;
    let copy = format!(
        "csrf={csrf}&from=production&to=test&version.production={}&version.test={}&confirmed=true",
        flag["environments"]["production"]["version"], flag["environments"]["test"]["version"]
    );
    let refused = post(&c.app, &session, "copy", &copy).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("Test requires a comment"));
    let copied = post(&c.app, &session, "copy", &format!("{copy}&comment=reset")).await;
    assert_eq!(copied.status, 303, "{}", copied.body);
    assert_eq!(flag_of(&c.app).await["environments"]["test"]["on"], false);
}

/// In `staging` (which requires a comment), a switch by htmx with a comment of invisible
/// characters is refused; one with a comment empties the page's comment field; the same switch
/// again changes nothing and leaves it. `csrf` is the session's CSRF token.
async fn check_comments_of_htmx_switches<S, B>(app: &S, session: &str, csrf: &str)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let switch = |body: String, htmx: bool| switch_request("staging", session, &body, htmx);
    // A comment of invisible characters is none; one that says something empties the page's
    // comment field with the new switch (it went with this change).
    let version = flag_of(app).await["environments"]["staging"]["version"].to_string();
    let invisible = get(
        app,
        switch(
            format!("csrf={csrf}&on=false&version={version}&comment=%E2%80%8B%E3%85%A4+%C2%AD"),
            true,
        ),
    )
    .await;
    assert!(
        invisible.body.contains("Staging requires a comment"),
        "{}",
        invisible.body
    );
    let switched = get(
        app,
        switch(
            format!("csrf={csrf}&on=false&version={version}&comment=rollback"),
            true,
        ),
    )
    .await;
    assert!(
        switched.body.contains(r#"aria-checked="false""#),
        "{}",
        switched.body
    );
    assert!(
        switched.body.contains(r#"id="change-comment""#)
            && switched.body.contains(r#"hx-swap-oob="true""#),
        "{}",
        switched.body
    );
    // The same switch again changes nothing: the comment stays in its field.
    let version = flag_of(app).await["environments"]["staging"]["version"].to_string();
    let again = get(
        app,
        switch(
            format!("csrf={csrf}&on=false&version={version}&comment=rollback"),
            true,
        ),
    )
    .await;
    assert!(
        again.body.contains(r#"aria-checked="false""#),
        "{}",
        again.body
    );
    assert!(!again.body.contains("hx-swap-oob"), "{}", again.body);
}

/// Archiving changes every environment: it needs what each asks for (a comment in `staging`, a
/// confirmation in the critical `production`).
async fn check_archiving_asks_what_every_environment_asks<S, B>(app: &S, session: &str, csrf: &str)
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let flag = flag_of(app).await;
    let version = flag["_version"].to_string();
    for (extra, reason) in [
        ("&confirmed=true", "Staging requires a comment"),
        ("&comment=retire", "Changes in Production must be confirmed"),
    ] {
        let refused = post(
            app,
            session,
            "archived",
            &format!("csrf={csrf}&version={version}&archived=true{extra}"),
        )
        .await;
        assert_eq!(refused.status, 400, "{extra}: {}", refused.body);
        assert!(refused.body.contains(reason), "{extra}: {}", refused.body);
    }
    assert_eq!(flag_of(app).await["archived"], false);
    let archived = post(
        app,
        session,
        "archived",
        &format!("csrf={csrf}&version={version}&archived=true&comment=retire&confirmed=true"),
    )
    .await;
    assert_eq!(
        archived.header("location"),
        "/projects/shop/flags/dark-mode?done=archived"
    );
}

async fn the_rules_hold_for_every_way_a_flag_changes(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    // Staging requires a comment, and asks for no confirmation.
    let (status, body) = api(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/projects/shop/environments")
            .set_json(json!({"key": "staging", "name": "Staging", "color": "0000ff", "requireComments": true})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    let form_id = "switch-9-dark-mode.staging";
    let csrf = field(&page.body, form_id, "csrf");
    let version = field(&page.body, form_id, "version");
    assert_eq!(field(&page.body, form_id, "from"), "flag");
    let switch = |body: String, htmx: bool| switch_request("staging", &session, &body, htmx);
    // Without JavaScript and without a comment: a page that asks for it, and goes back where
    // the switch was.
    let asked = get(
        &c.app,
        switch(
            format!("csrf={csrf}&on=true&version={version}&from=flag"),
            false,
        ),
    )
    .await;
    assert_eq!(asked.status, 200, "{}", asked.body);
    assert!(
        asked.body.contains("Comment on the change"),
        "{}",
        asked.body
    );
    assert!(asked.body.contains("Staging requires a comment"));
    assert!(asked.body.contains(r#"name="from" value="flag""#));
    assert_eq!(
        flag_of(&c.app).await["environments"]["staging"]["on"],
        false
    );
    let done = get(
        &c.app,
        switch(
            format!("csrf={csrf}&on=true&version={version}&from=flag&comment=why&confirmed=true"),
            false,
        ),
    )
    .await;
    assert_eq!((done.status, done.header("location")), (303, FLAG_PAGE));
    assert_eq!(flag_of(&c.app).await["environments"]["staging"]["on"], true);
    check_comments_of_htmx_switches(&c.app, &session, &csrf).await;
    check_archiving_asks_what_every_environment_asks(&c.app, &session, &csrf).await;
    // A copy must name both environments.
    let unchosen = post(
        &c.app,
        &session,
        "copy",
        &format!("csrf={csrf}&from=&to=&confirmed=true"),
    )
    .await;
    assert_eq!(unchosen.status, 400, "{}", unchosen.body);
    // A console address does not answer another method in the API's JSON.
    let wrong = get(&c.app, with_session(form("/projects", ""), &session)).await;
    assert_eq!(wrong.status, 405);
    assert!(
        wrong.header("content-type").starts_with("text/html"),
        "{}",
        wrong.body
    );
}

on_both_backends!(
    an_environments_rules_ask_for_a_comment_and_a_confirmation,
    the_rules_hold_for_every_way_a_flag_changes,
);
