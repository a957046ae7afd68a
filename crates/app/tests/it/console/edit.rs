//! Changing a flag from its console page, on both stores: settings, what an environment
//! serves, archiving and restoring, copying a configuration; stale forms and other roles. The
//! rules an environment sets for changes (a comment, a confirmation) are in `change_rules`.

use actix_web::test::TestRequest;
use serde_json::{json, Value};

use super::{api, console, field, form, get, shop, sign_in, visit, with_session, Page};
use crate::common::{Backend, OWNER};

pub(super) const FLAG_PAGE: &str = "/projects/shop/flags/dark-mode";

/// The flag as the API reports it.
pub(super) async fn flag_of<S, B>(app: &S) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let (status, flag) = api(app, TestRequest::get().uri("/api/v2/flags/shop/dark-mode")).await;
    assert_eq!(status, 200, "{flag}");
    flag
}

/// The CSRF token and the flag's `_version` in the flag page's settings form.
fn settings_fields(page: &Page) -> (String, String) {
    (
        field(&page.body, "settings-form", "csrf"),
        field(&page.body, "settings-form", "version"),
    )
}

/// POSTs `body` to the flag page's form at `rest` in `session`.
pub(super) async fn post<S, B>(app: &S, session: &str, rest: &str, body: &str) -> Page
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    get(
        app,
        with_session(form(&format!("{FLAG_PAGE}/{rest}"), body), session),
    )
    .await
}

/// Turns dark-mode on in `env` through the API (someone else, meanwhile).
async fn turn_on_elsewhere<S, B>(app: &S, env: &str)
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
            .uri("/api/v2/flags/shop/dark-mode")
            .insert_header((
                "content-type",
                "application/json; domain-model=svc.semanticpatch",
            ))
            .set_payload(format!(
                r#"{{"environmentKey":"{env}","instructions":[{{"kind":"turnFlagOn"}}]}}"#
            )),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

async fn the_settings_form_renames_describes_and_retags_the_flag(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let (csrf, version) = settings_fields(&page);
    let saved = post(
        &c.app,
        &session,
        "settings",
        &format!(
            "csrf={csrf}&version={version}&name=+Night+mode+&description=Dark+UI%0D%0Afor+night&tags=beta,+ui,beta&comment=rename"
        ),
    )
    .await;
    assert_eq!(
        (saved.status, saved.header("location")),
        (303, "/projects/shop/flags/dark-mode?done=settings"),
        "{}",
        saved.body
    );
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["name"], "Night mode");
    assert_eq!(flag["description"], "Dark UI\nfor night");
    let mut tags: Vec<&str> = flag["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    tags.sort_unstable();
    assert_eq!(tags, ["beta", "ui"]);
    let (_, log) = api(&c.app, TestRequest::get().uri("/api/v2/auditlog?limit=1")).await;
    assert_eq!(log["items"][0]["comment"], "rename", "{log}");
    let after = visit(&c.app, saved.header("location"), &session).await;
    assert!(
        after.body.contains("The settings were saved."),
        "{}",
        after.body
    );
    // The same form again changes nothing (and writes no audit entry).
    let version = flag["_version"].to_string();
    let same = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=Night+mode&description=Dark+UI%0D%0Afor+night&tags=ui,beta"),
    )
    .await;
    assert_eq!(
        same.header("location"),
        "/projects/shop/flags/dark-mode?done=unchanged"
    );
    assert_eq!(flag_of(&c.app).await["_version"], flag["_version"]);
    // A name the flag cannot have is said on the page, with the flag unchanged.
    let bad = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=+&tags=ui"),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body.contains("Not saved"), "{}", bad.body);
    assert_eq!(flag_of(&c.app).await["name"], "Night mode");
}

async fn a_stale_settings_form_is_refused_and_shows_the_flag_as_it_is(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    let (csrf, version) = settings_fields(&page);
    // A change anywhere in the flag makes the settings form stale.
    turn_on_elsewhere(&c.app, "test").await;
    let stale = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=Mine&tags=ui"),
    )
    .await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(
        stale.body.contains("Someone else changed this flag"),
        "{}",
        stale.body
    );
    assert!(
        stale.body.contains(r#"value="Dark mode""#),
        "the form shows the flag as it is now: {}",
        stale.body
    );
    assert_eq!(flag_of(&c.app).await["name"], "Dark mode");
}

async fn the_serving_form_sets_the_off_variation_and_the_fallthrough(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let flag = flag_of(&c.app).await;
    let id = |i: usize| flag["variations"][i]["_id"].as_str().unwrap().to_owned();
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    let form_id = "serving-test";
    let (csrf, version) = (
        field(&page.body, form_id, "csrf"),
        field(&page.body, form_id, "version"),
    );
    let (off_was, fallthrough_was) = (
        field(&page.body, form_id, "off_was"),
        field(&page.body, form_id, "fallthrough_was"),
    );
    assert_eq!(
        (off_was.as_str(), fallthrough_was.as_str()),
        (id(1).as_str(), id(0).as_str()),
        "a new boolean flag serves true, and false when off"
    );
    let body = format!(
        "csrf={csrf}&version={version}&off={}&off_was={off_was}&fallthrough={}&fallthrough_was={fallthrough_was}",
        id(0),
        id(1)
    );
    let saved = post(&c.app, &session, "environments/test/serving", &body).await;
    assert_eq!(
        (saved.status, saved.header("location")),
        (303, "/projects/shop/flags/dark-mode?done=serving"),
        "{}",
        saved.body
    );
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["environments"]["test"]["offVariation"], 0);
    assert_eq!(flag["environments"]["test"]["fallthrough"]["variation"], 1);
    assert_eq!(
        flag["environments"]["production"]["fallthrough"]["variation"], 0,
        "only the form's environment"
    );
    // The same form again, from the page as it was: the configuration is no longer at the
    // version it showed, so nothing changes.
    let stale = post(&c.app, &session, "environments/test/serving", &body).await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert_eq!(
        flag_of(&c.app).await["environments"]["test"]["offVariation"],
        0
    );
    // A variation the flag does not have.
    let version = flag["environments"]["test"]["version"].to_string();
    let unknown = post(
        &c.app,
        &session,
        "environments/test/serving",
        &format!("csrf={csrf}&version={version}&off=nothing"),
    )
    .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    assert!(unknown.body.contains("Not saved"), "{}", unknown.body);
}

async fn archiving_and_restoring_a_flag(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    assert!(page.body.contains("Archive this flag"));
    let csrf = field(&page.body, "archive-form", "csrf");
    let version = field(&page.body, "archive-form", "version");
    assert_eq!(field(&page.body, "archive-form", "archived"), "true");
    let archived = post(
        &c.app,
        &session,
        "archived",
        &format!("csrf={csrf}&version={version}&archived=true&comment=done+with+it&confirmed=true"),
    )
    .await;
    assert_eq!(
        archived.header("location"),
        "/projects/shop/flags/dark-mode?done=archived",
        "{}",
        archived.body
    );
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["archived"], true);
    let live = visit(&c.app, "/projects/shop/flags", &session).await;
    assert!(live.body.contains("0 flags"), "{}", live.body);
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    assert!(page.body.contains("Restore this flag"));
    let version = field(&page.body, "archive-form", "version");
    let restored = post(
        &c.app,
        &session,
        "archived",
        &format!("csrf={csrf}&version={version}&archived=false&confirmed=true"),
    )
    .await;
    assert_eq!(
        restored.header("location"),
        "/projects/shop/flags/dark-mode?done=restored"
    );
    assert_eq!(flag_of(&c.app).await["archived"], false);
}

async fn copying_one_environments_configuration_onto_another(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    turn_on_elsewhere(&c.app, "test").await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    let csrf = field(&page.body, "copy-form", "csrf");
    let test_version = field(&page.body, "copy-form", "version.test");
    let production_version = field(&page.body, "copy-form", "version.production");
    let body = format!(
        "csrf={csrf}&from=test&to=production&version.test={test_version}&version.production={production_version}&comment=promote&confirmed=true"
    );
    let copied = post(&c.app, &session, "copy", &body).await;
    assert_eq!(
        (copied.status, copied.header("location")),
        (303, "/projects/shop/flags/dark-mode?done=copied"),
        "{}",
        copied.body
    );
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["environments"]["production"]["on"], true);
    let (_, log) = api(&c.app, TestRequest::get().uri("/api/v2/auditlog?limit=1")).await;
    assert_eq!(log["items"][0]["comment"], "promote", "{log}");
    // The same form again: production is no longer at the version the page showed.
    let stale = post(&c.app, &session, "copy", &body).await;
    assert_eq!(stale.status, 409, "{}", stale.body);
    assert!(stale.body.contains("Someone else changed this flag"));
    // An environment the page did not show, and one onto itself.
    let unknown = post(
        &c.app,
        &session,
        "copy",
        &format!("csrf={csrf}&from=test&to=staging&version.test=1"),
    )
    .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    let production_version = flag["environments"]["production"]["version"].to_string();
    let itself = post(
        &c.app,
        &session,
        "copy",
        &format!(
            "csrf={csrf}&from=production&to=production&version.production={production_version}&confirmed=true"
        ),
    )
    .await;
    assert_eq!(itself.status, 400, "{}", itself.body);
}

async fn a_reader_cannot_change_the_flag_from_its_page(backend: Backend) {
    let c = console(backend).await;
    let reader = shop(&c.app).await;
    let session = sign_in(&c.app, &reader).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body.matches(" disabled>").count(), 6, "{}", page.body);
    let (csrf, version) = settings_fields(&page);
    for (rest, body) in [
        (
            "settings",
            format!("csrf={csrf}&version={version}&name=Mine"),
        ),
        (
            "archived",
            format!("csrf={csrf}&version={version}&archived=true"),
        ),
        (
            "copy",
            format!("csrf={csrf}&from=test&to=production&version.test=1&version.production=1"),
        ),
    ] {
        let refused = post(&c.app, &session, rest, &body).await;
        assert_eq!(refused.status, 403, "{rest}: {}", refused.body);
        assert!(refused.body.contains("Not permitted"), "{}", refused.body);
    }
    let flag = flag_of(&c.app).await;
    assert_eq!(
        (flag["name"].as_str(), flag["archived"].as_bool()),
        (Some("Dark mode"), Some(false))
    );
    // And no form without the session's CSRF token, whoever sends it.
    let owner = sign_in(&c.app, OWNER).await;
    let forged = post(
        &c.app,
        &owner,
        "settings",
        &format!("csrf={csrf}&version={version}&name=Mine"),
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(flag_of(&c.app).await["name"], "Dark mode");
}

async fn a_settings_form_changes_only_what_was_changed_in_it(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    // Spaces around the name and line breaks of every kind, as the API may store them.
    let (status, body) = api(
        &c.app,
        TestRequest::patch()
            .uri("/api/v2/flags/shop/dark-mode")
            .set_json(json!([
                {"op": "replace", "path": "/name", "value": "  spaced  "},
                {"op": "replace", "path": "/description", "value": "\nlead\r\nnext\rlast"}
            ])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    assert!(
        page.body.contains("rows=\"3\">\n\nlead"),
        "the browser drops the first newline, not the description's: {}",
        page.body
    );
    let (csrf, version) = settings_fields(&page);
    // What a browser sends back with only a tag added: every line break as CR LF.
    let saved = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=++spaced++&description=%0D%0Alead%0D%0Anext%0D%0Alast&tags=ui,new"),
    )
    .await;
    assert_eq!(
        saved.header("location"),
        "/projects/shop/flags/dark-mode?done=settings"
    );
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["name"], "  spaced  ");
    assert_eq!(flag["description"], "\nlead\r\nnext\rlast");
    let (_, log) = api(&c.app, TestRequest::get().uri("/api/v2/auditlog?limit=1")).await;
    let id = log["items"][0]["_id"].as_str().unwrap().to_owned();
    let (_, entry) = api(
        &c.app,
        TestRequest::get().uri(&format!("/api/v2/auditlog/{id}")),
    )
    .await;
    assert_eq!(
        entry["delta"]["instructions"],
        json!([{"kind": "addTags", "values": ["new"]}]),
        "{entry}"
    );
    // A NUL, which no API client could send back, is refused; a long description is not.
    let version = flag["_version"].to_string();
    let nul = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=x&description=a%00b"),
    )
    .await;
    assert_eq!(nul.status, 400, "{}", nul.body);
    assert_eq!(flag_of(&c.app).await["name"], "  spaced  ");
    let long = "%E6%97%A5".repeat(4000);
    let saved = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=x&description={long}&tags=ui,new"),
    )
    .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(
        flag_of(&c.app).await["description"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        4000
    );
}

async fn forms_that_change_nothing_say_so_and_their_addresses_lead_back(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    let (csrf, version) = settings_fields(&page);
    let restore = post(
        &c.app,
        &session,
        "archived",
        &format!("csrf={csrf}&version={version}&archived=false&confirmed=true"),
    )
    .await;
    assert_eq!(
        restore.header("location"),
        "/projects/shop/flags/dark-mode?done=unchanged"
    );
    assert_eq!(flag_of(&c.app).await["_version"].to_string(), version);
    // A form's address opened again (after a refusal, the browser shows it): the flag's page.
    for rest in [
        "settings",
        "archived",
        "copy",
        "environments/test/serving",
        "environments/test/targeting",
    ] {
        let opened = visit(&c.app, &format!("{FLAG_PAGE}/{rest}"), &session).await;
        assert_eq!(
            (opened.status, opened.header("location")),
            (303, FLAG_PAGE),
            "{rest}"
        );
    }
    // An address that names no flag (an encoded slash is no key) is not encoded again.
    let odd = visit(
        &c.app,
        "/projects/shop/flags/%2F%2Fevil.example/archived",
        &session,
    )
    .await;
    assert_eq!(
        odd.header("location"),
        "/projects/shop/flags/%2F%2Fevil.example"
    );
    let opened = visit(&c.app, "/tokens/some-id/delete", &session).await;
    assert_eq!(opened.header("location"), "/tokens");
    // The copy form is read as strictly as the others, and its CSRF token apart from the rest.
    let flag = flag_of(&c.app).await;
    let versions = format!(
        "version.test={}&version.production={}",
        flag["environments"]["test"]["version"], flag["environments"]["production"]["version"]
    );
    for body in [
        format!("csrf={csrf}&from=test&to=production&version.test=abc&version.production=1"),
        format!("csrf={csrf}&from=production&from=test&to=production&{versions}&confirmed=true"),
    ] {
        let refused = post(&c.app, &session, "copy", &body).await;
        assert_eq!(refused.status, 400, "{body}: {}", refused.body);
    }
    let twice = post(
        &c.app,
        &session,
        "copy",
        &format!("csrf=forged&csrf={csrf}&from=test&to=production&{versions}&confirmed=true"),
    )
    .await;
    assert_eq!(twice.status, 403, "{}", twice.body);
    // Copying what is already there changes nothing, and says so.
    let same = post(
        &c.app,
        &session,
        "copy",
        &format!("csrf={csrf}&from=test&to=production&{versions}&confirmed=true"),
    )
    .await;
    assert_eq!(
        same.header("location"),
        "/projects/shop/flags/dark-mode?done=unchanged",
        "{}",
        same.body
    );
}

async fn a_description_left_alone_is_not_checked(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let (status, body) = api(
        &c.app,
        TestRequest::patch()
            .uri("/api/v2/flags/shop/dark-mode")
            .set_json(json!([{"op": "replace", "path": "/description", "value": "bell \u{7} x"}])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, FLAG_PAGE, &session).await;
    let (csrf, version) = settings_fields(&page);
    let saved = post(
        &c.app,
        &session,
        "settings",
        &format!("csrf={csrf}&version={version}&name=Dark+mode&description=bell+%07+x&tags=ui,x"),
    )
    .await;
    assert_eq!(
        saved.header("location"),
        "/projects/shop/flags/dark-mode?done=settings",
        "{}",
        saved.body
    );
    let flag = flag_of(&c.app).await;
    assert_eq!(flag["description"], "bell \u{7} x");
    assert_eq!(flag["tags"], json!(["ui", "x"]));
}

on_both_backends!(
    a_description_left_alone_is_not_checked,
    a_settings_form_changes_only_what_was_changed_in_it,
    forms_that_change_nothing_say_so_and_their_addresses_lead_back,
    the_settings_form_renames_describes_and_retags_the_flag,
    a_stale_settings_form_is_refused_and_shows_the_flag_as_it_is,
    the_serving_form_sets_the_off_variation_and_the_fallthrough,
    archiving_and_restoring_a_flag,
    copying_one_environments_configuration_onto_another,
    a_reader_cannot_change_the_flag_from_its_page
);
