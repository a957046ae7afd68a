//! The web console over HTTP, on both stores: signing in and out, the session cookie, the
//! checks on state-changing forms, and the pages.

use std::sync::Arc;

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use actix_web::http::header::HeaderMap;
use actix_web::test::{self, TestRequest};
use adapter_http::{AppState, HttpConfig};
use serde_json::json;
use service::{Service, SystemClock};

use crate::common::{open, Backend, Db, OWNER};

mod admin;
mod change_rules;
mod edit;
mod explain;

struct Page {
    status: u16,
    headers: HeaderMap,
    body: String,
}

impl Page {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The session id a `Set-Cookie` of this answer gives, if any ("" when it clears it).
    fn session_cookie(&self) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .filter_map(|v| v.to_str().ok())
            .find_map(|c| c.strip_prefix("flagsvc_session="))
            .map(|rest| rest.split(';').next().unwrap_or("").to_owned())
    }

    /// The value of the first `name="csrf"` hidden field.
    fn csrf(&self) -> String {
        let at = self
            .body
            .find(r#"name="csrf" value=""#)
            .expect("a CSRF field");
        let rest = &self.body[at + r#"name="csrf" value=""#.len()..];
        rest[..rest.find('"').unwrap()].to_owned()
    }
}

struct Console<S> {
    app: S,
    _db: Db,
}

async fn console(
    backend: Backend,
) -> Console<
    impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    console_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            ..HttpConfig::default()
        },
    )
    .await
}

/// The console as the binary wires it (its sign-ins throttled with the API's failures).
async fn console_with(
    backend: Backend,
    config: HttpConfig,
) -> Console<
    impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    let db = open(backend);
    // The metrics recorder the binary has (one per process).
    adapter_http::install_metrics().expect("metrics recorder");
    let service = Arc::new(Service::new(
        db.store.clone(),
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    ));
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .unwrap();
    let state = AppState::new(service.clone(), config).unwrap();
    let console = adapter_web::Console::new(service)
        .throttled_by(Arc::new(app::SharedAuthThrottle(state.clone())));
    let not_found = console.clone();
    let mount = adapter_http::Mount::new(move |routes| console.configure(routes))
        .with_not_found(move |req| not_found.not_found(req));
    let app = test::init_service(adapter_http::app_with(state, Some(mount))).await;
    Console { app, _db: db }
}

async fn get<S, B>(app: &S, req: TestRequest) -> Page
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let res = test::call_service(app, req.to_request()).await;
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    Page {
        status,
        headers,
        body,
    }
}

fn with_session(req: TestRequest, session: &str) -> TestRequest {
    req.insert_header(("cookie", format!("flagsvc_session={session}")))
}

fn form(path: &str, body: &str) -> TestRequest {
    TestRequest::post()
        .uri(path)
        .insert_header(("host", "console.test"))
        .insert_header(("origin", "http://console.test"))
        .insert_header(("content-type", "application/x-www-form-urlencoded"))
        .set_payload(body.to_owned())
}

/// Signs in with `token` and returns the session id.
async fn sign_in<S, B>(app: &S, token: &str) -> String
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let page = get(app, form("/sign-in", &format!("token={token}"))).await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.header("location"), "/projects");
    page.session_cookie().expect("a session cookie")
}

async fn signing_in_sets_a_strict_http_only_cookie_and_signing_out_ends_it(backend: Backend) {
    let c = console(backend).await;
    // Not signed in: every page leads to the sign-in page.
    for path in ["/", "/projects"] {
        let page = get(&c.app, TestRequest::get().uri(path)).await;
        assert_eq!(
            (page.status, page.header("location")),
            (303, "/sign-in"),
            "{path}"
        );
    }
    let sign_in_page = get(&c.app, TestRequest::get().uri("/sign-in")).await;
    assert_eq!(sign_in_page.status, 200);
    assert!(sign_in_page.body.contains(r#"name="token""#));
    assert!(sign_in_page
        .header("content-security-policy")
        .contains("script-src 'self'"));
    assert_eq!(sign_in_page.header("x-frame-options"), "DENY");

    let answer = get(&c.app, form("/sign-in", &format!("token={OWNER}"))).await;
    assert_eq!(answer.status, 303);
    let cookie = answer
        .headers
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains("Secure"), "plain http: {cookie}");
    let session = answer.session_cookie().unwrap();
    assert_eq!(session.len(), 64);
    assert!(!cookie.contains(OWNER), "the cookie never holds the token");

    let projects = visit(&c.app, "/projects", &session).await;
    assert_eq!(projects.status, 200, "{}", projects.body);
    assert!(projects.body.contains("Projects"));
    assert_eq!(projects.header("cache-control"), "no-store");
    let csrf = projects.csrf();

    // Signing out needs the session's CSRF token.
    let refused = get(
        &c.app,
        with_session(form("/sign-out", "csrf=wrong"), &session),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let still = visit(&c.app, "/projects", &session).await;
    assert_eq!(still.status, 200);
    let out = get(
        &c.app,
        with_session(form("/sign-out", &format!("csrf={csrf}")), &session),
    )
    .await;
    assert_eq!((out.status, out.header("location")), (303, "/sign-in"));
    assert_eq!(out.session_cookie().as_deref(), Some(""));
    let after = visit(&c.app, "/projects", &session).await;
    assert_eq!(
        (after.status, after.header("location")),
        (303, "/sign-in"),
        "the session ended"
    );
}

async fn a_wrong_token_or_a_foreign_origin_signs_nobody_in(backend: Backend) {
    let c = console(backend).await;
    let wrong = get(&c.app, form("/sign-in", "token=api-not-a-token")).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.body.contains("not a valid access token"));
    assert_eq!(wrong.session_cookie(), None);
    let empty = get(&c.app, form("/sign-in", "token=")).await;
    assert_eq!(empty.status, 400);
    let foreign = get(
        &c.app,
        form("/sign-in", &format!("token={OWNER}")).insert_header(("origin", "https://evil.test")),
    )
    .await;
    assert_eq!(foreign.status, 403);
    assert_eq!(foreign.session_cookie(), None);
    let cross_site = get(
        &c.app,
        form("/sign-in", &format!("token={OWNER}")).insert_header(("sec-fetch-site", "cross-site")),
    )
    .await;
    assert_eq!(cross_site.status, 403);
    // A form or query that cannot be read gets a page that says so, not the API's JSON.
    let unreadable = get(&c.app, form("/sign-in", "nothing=1")).await;
    assert_eq!(unreadable.status, 400);
    assert!(unreadable.header("content-type").starts_with("text/html"));
    assert!(
        unreadable.body.contains("The form could not be read"),
        "{}",
        unreadable.body
    );
    let session = sign_in(&c.app, OWNER).await;
    let bad_page = visit(&c.app, "/projects?page=abc", &session).await;
    assert_eq!(bad_page.status, 400);
    assert!(
        bad_page.body.contains("could not be read"),
        "{}",
        bad_page.body
    );
    // A failed sign-in in a signed-in browser leaves it signed in.
    let failed = get(
        &c.app,
        with_session(form("/sign-in", "token=api-wrong"), &session),
    )
    .await;
    assert_eq!(failed.status, 401);
    assert_eq!(visit(&c.app, "/projects", &session).await.status, 200);
    // A cookie that is no session is no session.
    for bogus in ["x", &"f".repeat(64), "../../etc"] {
        let page = visit(&c.app, "/projects", bogus).await;
        assert_eq!(page.status, 303, "{bogus}");
    }
}

async fn deleting_the_token_ends_its_console_sessions(backend: Backend) {
    let c = console(backend).await;
    let created = get(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/tokens")
            .insert_header(("authorization", OWNER))
            .set_json(json!({"name": "console", "role": "reader"})),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let created: serde_json::Value = serde_json::from_str(&created.body).unwrap();
    let session = sign_in(&c.app, created["token"].as_str().unwrap()).await;
    let page = visit(&c.app, "/projects", &session).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("(reader)"), "{}", page.body);
    let id = created["_id"].as_str().unwrap();
    let deleted = get(
        &c.app,
        TestRequest::delete()
            .uri(&format!("/api/v2/tokens/{id}"))
            .insert_header(("authorization", OWNER)),
    )
    .await;
    assert_eq!(deleted.status, 204);
    let after = visit(&c.app, "/projects", &session).await;
    assert_eq!((after.status, after.header("location")), (303, "/sign-in"));
}

async fn the_projects_page_shows_projects_and_their_environments(backend: Backend) {
    let c = console(backend).await;
    let created = get(
        &c.app,
        TestRequest::post()
            .uri("/api/v2/projects")
            .insert_header(("authorization", OWNER))
            .set_json(json!({
                "key": "shop", "name": "Shop <&> \"quoted\"",
                "environments": [
                    {"key": "production", "name": "Production", "color": "ff0000", "critical": true},
                    {"key": "test", "name": "Test", "color": "00ff00"}
                ]
            })),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, "/projects", &session).await;
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("Shop &lt;&amp;&gt; &quot;quoted&quot;"),
        "names are escaped: {}",
        page.body
    );
    for text in ["production", "Production", "critical", "#FF0000", "#00FF00"] {
        assert!(page.body.contains(text), "{text}: {}", page.body);
    }
    let searched = visit(&c.app, "/projects?q=nothing", &session).await;
    assert!(searched.body.contains("0 projects"), "{}", searched.body);
    // The console's pages are not API: no JSON, not in the OpenAPI document.
    let document = get(&c.app, TestRequest::get().uri("/api/v2/openapi.json")).await;
    assert!(!document.body.contains("\"/projects\""));
    assert!(!document.body.contains("sign-in"));
}

async fn static_files_are_served_from_the_binary(backend: Backend) {
    let c = console(backend).await;
    let htmx = get(&c.app, TestRequest::get().uri("/static/htmx.min.js")).await;
    assert_eq!(htmx.status, 200);
    assert!(htmx.header("content-type").starts_with("text/javascript"));
    assert!(htmx.body.contains("htmx"));
    let css = get(&c.app, TestRequest::get().uri("/static/console.css")).await;
    assert_eq!(css.status, 200);
    assert!(css.body.contains("prefers-color-scheme: dark"));
}

/// Sends an API request with the owner's token and returns the JSON answer.
async fn api<S, B>(app: &S, req: TestRequest) -> (u16, serde_json::Value)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let page = get(app, req.insert_header(("authorization", OWNER))).await;
    let body = if page.body.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::from_str(&page.body).unwrap()
    };
    (page.status, body)
}

/// Project `shop` (production, critical; test) with flag `dark-mode`, and a reader's token.
async fn shop<S, B>(app: &S) -> String
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let (status, body) = api(
        app,
        TestRequest::post().uri("/api/v2/projects").set_json(json!({
            "key": "shop", "name": "Shop",
            "environments": [
                {"key": "production", "name": "Production", "color": "ff0000", "critical": true},
                {"key": "test", "name": "Test", "color": "00ff00"}
            ]
        })),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = api(
        app,
        TestRequest::post()
            .uri("/api/v2/flags/shop")
            .set_json(json!({"key": "dark-mode", "name": "Dark mode", "tags": ["ui"]})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = api(
        app,
        TestRequest::post()
            .uri("/api/v2/tokens")
            .set_json(json!({"name": "reader", "role": "reader"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// POSTs `body` to dark-mode's production switch in `session`, as htmx (`htmx`) or as a plain
/// form.
async fn toggle<S, B>(app: &S, session: &str, body: &str, htmx: bool) -> Page
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    // Production asks to confirm: htmx sends `confirmed` after its dialog (the switch's
    // `hx-vals`), a browser without JavaScript from the confirmation page.
    let mut req = with_session(form(TARGETING, &format!("{body}&confirmed=true")), session);
    if htmx {
        req = req.insert_header(("hx-request", "true"));
    }
    get(app, req).await
}

/// GET `uri` in `session`.
async fn visit<S, B>(app: &S, uri: &str, session: &str) -> Page
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    get(app, with_session(TestRequest::get().uri(uri), session)).await
}

/// Switches `flag` in `env` of project `project` through the console as the owner does it:
/// signed in, the flag list's switch, confirmed. The answer's status.
pub(crate) async fn switch_in_console<S, B>(
    app: &S,
    (project, flag, env): (&str, &str, &str),
    on: bool,
) -> u16
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let session = sign_in(app, OWNER).await;
    let list = visit(app, &format!("/projects/{project}/flags"), &session).await;
    let end = list
        .body
        .find(&format!(r#"-{flag}.{env}""#))
        .expect("the flag's switch");
    let start = list.body[..end].rfind(r#"id=""#).expect("its id") + 4;
    let id = &list.body[start..end + flag.len() + env.len() + 2];
    let (csrf, version) = (
        field(&list.body, id, "csrf"),
        field(&list.body, id, "version"),
    );
    let body = format!("csrf={csrf}&on={on}&version={version}&confirmed=true");
    let path = format!("/projects/{project}/flags/{flag}/environments/{env}/targeting");
    let answer = get(app, with_session(form(&path, &body), &session)).await;
    answer.status
}

/// The CSRF token and the version in `dark-mode`'s production switch of a flag list.
fn switch_fields(list: &Page) -> (String, String) {
    (
        field(&list.body, PRODUCTION_SWITCH, "csrf"),
        field(&list.body, PRODUCTION_SWITCH, "version"),
    )
}

/// The value of hidden field `name` in the form whose id is `id`.
fn field(body: &str, id: &str, name: &str) -> String {
    let form = &body[body.find(&format!(r#"id="{id}""#)).expect("the switch")..];
    let form = &form[..form.find("</form>").unwrap()];
    let marker = format!(r#"name="{name}" value=""#);
    let at = form.find(&marker).expect("the field");
    let rest = &form[at + marker.len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

const PRODUCTION_SWITCH: &str = "switch-9-dark-mode.production";
const TARGETING: &str = "/projects/shop/flags/dark-mode/environments/production/targeting";

async fn a_switch_turns_targeting_on_as_a_semantic_patch_with_its_comment(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains("Dark mode") && list.body.contains("dark-mode"));
    assert!(list.body.contains(r#"aria-checked="false""#));
    assert!(
        list.body
            .contains("hx-confirm=\"Production is a critical environment"),
        "a critical environment asks first: {}",
        list.body
    );
    let (csrf, version) = switch_fields(&list);
    let switched = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=true&version={version}&comment=launch+day"),
        true,
    )
    .await;
    assert_eq!(switched.status, 200, "{}", switched.body);
    assert!(
        switched.body.starts_with("<form"),
        "a fragment: {}",
        switched.body
    );
    assert!(
        switched.body.contains(r#"aria-checked="true""#),
        "{}",
        switched.body
    );
    let (_, flag) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/flags/shop/dark-mode"),
    )
    .await;
    assert_eq!(flag["environments"]["production"]["on"], true);
    assert_eq!(flag["environments"]["test"]["on"], false);
    let (_, log) = api(&c.app, TestRequest::get().uri("/api/v2/auditlog")).await;
    let entry = &log["items"][0];
    assert_eq!(entry["comment"], "launch day", "{log}");
    assert_eq!(entry["member"]["email"], "owner@example.com");
    let (_, detail) = api(
        &c.app,
        TestRequest::get().uri(&format!(
            "/api/v2/auditlog/{}",
            entry["_id"].as_str().unwrap()
        )),
    )
    .await;
    assert_eq!(
        detail["delta"]["instructions"],
        json!([{"kind": "turnFlagOn"}]),
        "{detail}"
    );
    // Without JavaScript, the form posts and the browser goes back to the list.
    let version = flag["environments"]["production"]["version"].to_string();
    let plain = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=false&version={version}"),
        false,
    )
    .await;
    assert_eq!(
        (plain.status, plain.header("location")),
        (303, "/projects/shop/flags")
    );
    let (_, flag) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/flags/shop/dark-mode"),
    )
    .await;
    assert_eq!(flag["environments"]["production"]["on"], false);
}

async fn a_stale_page_gets_the_conflict_message_and_changes_nothing(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    let (csrf, version) = switch_fields(&list);
    // Someone turns it on through the API meanwhile.
    let (status, _) = api(
        &c.app,
        TestRequest::patch()
            .uri("/api/v2/flags/shop/dark-mode")
            .insert_header((
                "content-type",
                "application/json; domain-model=svc.semanticpatch",
            ))
            .set_payload(
                r#"{"environmentKey":"production","instructions":[{"kind":"turnFlagOn"}]}"#,
            ),
    )
    .await;
    assert_eq!(status, 200);
    // The page still shows it off, and asks to turn it on: refused, with the current state.
    let stale = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=true&version={version}"),
        true,
    )
    .await;
    assert_eq!(stale.status, 200, "{}", stale.body);
    assert!(
        stale.body.contains("Someone else changed this flag"),
        "{}",
        stale.body
    );
    assert!(
        stale.body.contains(r#"aria-checked="true""#),
        "the current state: {}",
        stale.body
    );
    let (_, log) = api(&c.app, TestRequest::get().uri("/api/v2/auditlog?limit=20")).await;
    let flag_entries = log["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "flag")
        .count();
    assert_eq!(flag_entries, 2, "created and turned on once: {log}");
    // Without JavaScript: the conflict page.
    let page = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=true&version={version}"),
        false,
    )
    .await;
    assert_eq!(page.status, 409);
    assert!(page.body.contains("Changed meanwhile"), "{}", page.body);
}

async fn a_reader_sees_no_enabled_switch_and_cannot_toggle(backend: Backend) {
    let c = console(backend).await;
    let reader = shop(&c.app).await;
    let session = sign_in(&c.app, &reader).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    assert_eq!(list.status, 200, "{}", list.body);
    let switches = list.body.matches(r#"role="switch""#).count();
    assert_eq!(switches, 2);
    assert_eq!(list.body.matches("disabled").count(), 3, "{}", list.body);
    let (csrf, version) = switch_fields(&list);
    let refused = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=true&version={version}"),
        false,
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("Not permitted"), "{}", refused.body);
    let (_, flag) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/flags/shop/dark-mode"),
    )
    .await;
    assert_eq!(flag["environments"]["production"]["on"], false);
}

async fn a_switch_without_the_csrf_token_is_refused(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    for body in ["on=true&version=1", "csrf=forged&on=true&version=1"] {
        let refused = get(&c.app, with_session(form(TARGETING, body), &session)).await;
        assert_eq!(refused.status, 403, "{body}: {}", refused.body);
    }
    let (_, flag) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/flags/shop/dark-mode"),
    )
    .await;
    assert_eq!(flag["environments"]["production"]["on"], false);
}

async fn the_flag_list_searches_filters_and_pages(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    for n in 0..55 {
        let (status, body) = api(
            &c.app,
            TestRequest::post()
                .uri("/api/v2/flags/shop")
                .set_json(json!({"key": format!("f{n:02}"), "name": format!("Feature {n:02}")})),
        )
        .await;
        assert_eq!(status, 201, "{body}");
    }
    let session = sign_in(&c.app, OWNER).await;
    let first = visit(&c.app, "/projects/shop/flags", &session).await;
    assert!(first.body.contains("56 flags"), "{}", first.body);
    assert!(first.body.contains("Page 1 of 2"));
    let second = visit(&c.app, "/projects/shop/flags?page=2", &session).await;
    assert!(second.body.contains("Page 2 of 2"), "{}", second.body);
    let searched = visit(&c.app, "/projects/shop/flags?q=dark", &session).await;
    assert!(searched.body.contains("1 flag<"), "{}", searched.body);
    assert!(searched.body.contains("Dark mode"));
    let tagged = visit(&c.app, "/projects/shop/flags?tag=ui", &session).await;
    assert!(tagged.body.contains("1 flag<"), "{}", tagged.body);
    let archived = visit(&c.app, "/projects/shop/flags?state=archived", &session).await;
    assert!(archived.body.contains("0 flags"), "{}", archived.body);
    // One column: test only.
    let one = visit(&c.app, "/projects/shop/flags?envs=test", &session).await;
    assert!(!one.body.contains("> Production</th>"), "{}", one.body);
    assert!(one.body.contains("> Test</th>"));
    let missing = visit(&c.app, "/projects/nothing/flags", &session).await;
    assert_eq!(missing.status, 404);
}

async fn the_flag_page_reads_its_targeting_as_sentences(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let (status, body) = api(
        &c.app,
        TestRequest::patch().uri("/api/v2/flags/shop/dark-mode").set_json(json!([
            {"op": "add", "path": "/environments/production/rules/-", "value": {
                "description": "Staff <first>",
                "clauses": [{"attribute": "email", "op": "endsWith", "values": ["@example.com"], "contextKind": "user"}],
                "variation": 0
            }},
            {"op": "replace", "path": "/environments/production/fallthrough", "value": {
                "rollout": {"variations": [{"variation": 0, "weight": 25000}, {"variation": 1, "weight": 75000}]}
            }},
            {"op": "replace", "path": "/environments/production/offVariation", "value": 1},
            {"op": "add", "path": "/environments/production/targets/-", "value": {"values": ["alice", "bob"], "variation": 0}}
        ])),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let session = sign_in(&c.app, OWNER).await;
    let page = visit(&c.app, "/projects/shop/flags/dark-mode", &session).await;
    assert_eq!(page.status, 200, "{}", page.body);
    for text in [
        "user email ends with &quot;@example.com&quot;",
        "Staff &lt;first&gt;",
        "25% true, 75% false",
        "true for user alice, bob",
        "When targeting is off, serve",
        r#"href="/projects/shop/flags/dark-mode/history""#,
    ] {
        assert!(page.body.contains(text), "{text}: {}", page.body);
    }
    let missing = visit(&c.app, "/projects/shop/flags/nothing", &session).await;
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("no flag with key"),
        "{}",
        missing.body
    );
}

async fn the_history_shows_who_when_the_comment_and_what_changed(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    let (csrf, version) = switch_fields(&list);
    let switched = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=true&version={version}&comment=%3Cb%3Elaunch%3C%2Fb%3E"),
        false,
    )
    .await;
    assert_eq!(switched.status, 303, "{}", switched.body);
    let history = visit(&c.app, "/projects/shop/flags/dark-mode/history", &session).await;
    assert_eq!(history.status, 200, "{}", history.body);
    for text in [
        "owner@example.com",
        "&lt;b&gt;launch&lt;/b&gt;",
        "environments.production.on",
        "Created.",
        " UTC",
    ] {
        assert!(history.body.contains(text), "{text}: {}", history.body);
    }
    assert!(
        !history.body.contains("environments.test.on"),
        "{}",
        history.body
    );
    assert!(!history.body.contains("_version"));
}

async fn searches_ignore_case(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    for uri in [
        "/projects/shop/flags?q=DARK",
        "/projects/shop/flags?q=Dark%20M",
    ] {
        let page = visit(&c.app, uri, &session).await;
        assert!(page.body.contains("1 flag<"), "{uri}: {}", page.body);
    }
    // The search box keeps what was typed (the store matches it whatever its case).
    let typed = visit(&c.app, "/projects/shop/flags?q=DARK", &session).await;
    assert!(
        typed.body.contains(r#"name="q" value="DARK""#),
        "{}",
        typed.body
    );
    let projects = visit(&c.app, "/projects?q=SHOP", &session).await;
    assert!(projects.body.contains("1 project<"), "{}", projects.body);
}

async fn failed_sign_ins_are_throttled_with_the_apis_failures(backend: Backend) {
    let c = console_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            auth_failure_limit: 3,
            ..HttpConfig::default()
        },
    )
    .await;
    // Two failures through the API, one through the console: the limit of 3 is reached.
    for _ in 0..2 {
        let page = get(
            &c.app,
            TestRequest::get()
                .uri("/api/v2/projects")
                .insert_header(("authorization", "api-guess")),
        )
        .await;
        assert_eq!(page.status, 401);
    }
    let third = get(&c.app, form("/sign-in", "token=api-guess-3")).await;
    assert_eq!(third.status, 401);
    let blocked = get(&c.app, form("/sign-in", &format!("token={OWNER}"))).await;
    assert_eq!(blocked.status, 429, "{}", blocked.body);
    assert!(blocked.body.contains("Too many failed sign-ins"));
    assert!(!blocked.header("retry-after").is_empty());
    assert_eq!(blocked.session_cookie(), None);
    // And the API refuses that address too.
    let api_blocked = get(
        &c.app,
        TestRequest::get()
            .uri("/api/v2/projects")
            .insert_header(("authorization", "api-guess")),
    )
    .await;
    assert_eq!(api_blocked.status, 429);
}

async fn htmx_switches_are_told_what_to_do_when_refused(backend: Backend) {
    let c = console(backend).await;
    let reader = shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    assert!(list.body.contains(r#"id="change-comment""#));
    assert!(list.body.contains(r##"hx-include="#change-comment""##));
    let (csrf, version) = switch_fields(&list);
    let body = format!("csrf={csrf}&on=true&version={version}");
    // A stale CSRF token (a page of an earlier session): htmx reloads the page.
    let stale = get(
        &c.app,
        with_session(form(TARGETING, "csrf=old&on=true&version=1"), &session)
            .insert_header(("hx-request", "true")),
    )
    .await;
    assert_eq!((stale.status, stale.header("hx-refresh")), (200, "true"));
    // No session any more: htmx loads the sign-in page rather than swapping it in.
    let gone = get(
        &c.app,
        with_session(form(TARGETING, &body), &"0".repeat(64)).insert_header(("hx-request", "true")),
    )
    .await;
    assert_eq!((gone.status, gone.header("hx-redirect")), (200, "/sign-in"));
    // A reader: the switch comes back with the reason.
    let reader_session = sign_in(&c.app, &reader).await;
    let reader_list = visit(&c.app, "/projects/shop/flags", &reader_session).await;
    let reader_csrf = field(&reader_list.body, PRODUCTION_SWITCH, "csrf");
    let refused = toggle(
        &c.app,
        &reader_session,
        &format!("csrf={reader_csrf}&on=true&version={version}"),
        true,
    )
    .await;
    assert_eq!(refused.status, 200);
    assert!(refused.body.contains("Not permitted"), "{}", refused.body);
    // An unknown environment: the reason in the switch's place.
    let unknown = get(
        &c.app,
        with_session(
            form(
                "/projects/shop/flags/dark-mode/environments/nope/targeting",
                &body,
            ),
            &session,
        )
        .insert_header(("hx-request", "true")),
    )
    .await;
    assert_eq!(unknown.status, 200);
    assert!(unknown.body.contains(r#"role="alert""#), "{}", unknown.body);
    let (_, flag) = api(
        &c.app,
        TestRequest::get().uri("/api/v2/flags/shop/dark-mode"),
    )
    .await;
    assert_eq!(flag["environments"]["production"]["on"], false);
}

async fn odd_input_is_refused_before_the_store(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    let (csrf, version) = switch_fields(&list);
    for on in ["maybe", "TRUE", ""] {
        let refused = toggle(
            &c.app,
            &session,
            &format!("csrf={csrf}&on={on}&version={version}"),
            false,
        )
        .await;
        assert_eq!(refused.status, 400, "on={on}: {}", refused.body);
    }
    for uri in [
        "/projects/shop/flags?q=a%00b",
        "/projects/shop/flags?tag=a%00b",
        "/projects?q=a%00b",
        "/projects/a%00b/flags",
        "/projects/shop/flags/a%00b",
        "/projects/shop/flags/a%00b/history",
    ] {
        let page = visit(&c.app, uri, &session).await;
        assert_eq!(page.status, 400, "{uri}: {}", page.body);
    }
    let token = get(&c.app, form("/sign-in", "token=a%00b")).await;
    assert_eq!(token.status, 401, "{}", token.body);
    // A comment with control characters is kept without them.
    let switched = toggle(
        &c.app,
        &session,
        &format!("csrf={csrf}&on=true&version={version}&comment=go%00live"),
        false,
    )
    .await;
    assert_eq!(switched.status, 303, "{}", switched.body);
    let (_, log) = api(&c.app, TestRequest::get().uri("/api/v2/auditlog")).await;
    assert_eq!(log["items"][0]["comment"], "golive");
    // A project's address leads to its flags.
    let project = visit(&c.app, "/projects/shop", &session).await;
    assert_eq!(
        (project.status, project.header("location")),
        (303, "/projects/shop/flags")
    );
}

async fn unknown_pages_are_html_and_counted_by_their_route(backend: Backend) {
    let c = console(backend).await;
    shop(&c.app).await;
    let session = sign_in(&c.app, OWNER).await;
    let missing = visit(&c.app, "/no-such-page", &session).await;
    assert_eq!(missing.status, 404);
    assert!(missing.header("content-type").starts_with("text/html"));
    assert!(missing.body.contains("Page not found"), "{}", missing.body);
    // The API's own paths keep their JSON errors.
    for path in ["/api/v2/no-such-thing", "/api"] {
        let api_missing = get(&c.app, TestRequest::get().uri(path)).await;
        assert_eq!(api_missing.status, 404, "{path}");
        assert!(
            api_missing
                .header("content-type")
                .starts_with("application/json"),
            "{path}"
        );
    }
    let list = visit(&c.app, "/projects/shop/flags", &session).await;
    assert_eq!(list.status, 200);
    // In /metrics, a console page is counted under its route's pattern, a made-up path is not.
    let metrics = get(&c.app, TestRequest::get().uri("/metrics")).await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .body
            .contains(r#"route="/projects/{project}/flags""#),
        "{}",
        metrics.body
    );
    assert!(!metrics.body.contains("no-such-page"));
}

on_both_backends!(
    unknown_pages_are_html_and_counted_by_their_route,
    signing_in_sets_a_strict_http_only_cookie_and_signing_out_ends_it,
    a_wrong_token_or_a_foreign_origin_signs_nobody_in,
    deleting_the_token_ends_its_console_sessions,
    the_projects_page_shows_projects_and_their_environments,
    static_files_are_served_from_the_binary,
    a_switch_turns_targeting_on_as_a_semantic_patch_with_its_comment,
    a_stale_page_gets_the_conflict_message_and_changes_nothing,
    a_reader_sees_no_enabled_switch_and_cannot_toggle,
    a_switch_without_the_csrf_token_is_refused,
    the_flag_list_searches_filters_and_pages,
    the_flag_page_reads_its_targeting_as_sentences,
    the_history_shows_who_when_the_comment_and_what_changed,
    searches_ignore_case,
    failed_sign_ins_are_throttled_with_the_apis_failures,
    htmx_switches_are_told_what_to_do_when_refused,
    odd_input_is_refused_before_the_store
);
