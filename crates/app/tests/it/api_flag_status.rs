//! Flag statuses (derived from configurations and dates at the service clock's time) and
//! `GET /caller-identity`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use actix_web::http::Method;
use actix_web::test;
use adapter_http::{AppState, HttpConfig};
use serde_json::{json, Value};
use service::Service;

use crate::common::{open, request, spawn, Backend, TestApp, OWNER, SEMANTIC};

const DAY: i64 = 24 * 60 * 60 * 1000;
const START: i64 = 1_700_000_000_000;

/// A clock the test sets.
#[derive(Debug)]
struct TestClock(AtomicI64);

impl TestClock {
    fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl ports::Clock for TestClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

async fn spawn_at(
    backend: Backend,
    clock: Arc<TestClock>,
) -> TestApp<
    impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    let db = open(backend);
    let service = Arc::new(Service::new(
        db.store.clone(),
        clock,
        Arc::new(adapter_http::ApiRepresentations),
    ));
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .expect("bootstrap");
    let config = HttpConfig {
        rate_limit: 0,
        ..HttpConfig::default()
    };
    let app = test::init_service(adapter_http::app(
        AppState::new(service, config).expect("OpenAPI document"),
    ))
    .await;
    TestApp { app, db }
}

fn status_link(path: &str) -> Value {
    json!({"href": path, "type": "application/json"})
}

/// A semantic patch of flag `key` of project `web` in production.
fn semantic(key: &str, instructions: Value) -> test::TestRequest {
    request(
        Method::PATCH,
        &format!("/api/v2/flags/web/{key}"),
        Some(OWNER),
    )
    .insert_header(("Content-Type", SEMANTIC))
    .set_payload(json!({"environmentKey": "production", "instructions": instructions}).to_string())
}

/// The (key, status name) pairs of a list of flag statuses.
fn names(body: &Value) -> Vec<(String, String)> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let href = item["_links"]["self"]["href"].as_str().unwrap();
            let key = href.rsplit('/').next().unwrap().to_owned();
            (key, item["name"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, n)| ((*k).to_owned(), (*n).to_owned()))
        .collect()
}

/// Project `web` with four flags: `archived` (archived), `launch` (turned on in production),
/// `quiet` (untouched) and `split` (on in production, serving a 50/50 split).
async fn four_flags_of_each_kind<S, B>(app: &TestApp<S>)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    app.project("web").await;
    for key in ["archived", "launch", "quiet", "split"] {
        app.flag("web", key).await;
    }
    let changed = app
        .send(semantic("launch", json!([{"kind": "turnFlagOn"}])))
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let split = app.get("/api/v2/flags/web/split").await.body;
    let (a, b) = (
        split["variations"][0]["_id"].as_str().unwrap(),
        split["variations"][1]["_id"].as_str().unwrap(),
    );
    let mut weights = serde_json::Map::new();
    weights.insert(a.to_owned(), json!(50000));
    weights.insert(b.to_owned(), json!(50000));
    let changed = app
        .send(semantic(
            "split",
            json!([{"kind": "turnFlagOn"}, {"kind": "updateFallthroughVariationOrRollout", "rolloutWeights": weights}]),
        ))
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let archived = app
        .patch(
            "/api/v2/flags/web/archived",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200, "{}", archived.body);
}

/// Flag `launch`'s statuses across environments once launched in production (inactive in
/// test), and narrowed with `env` (unknown keys left out).
async fn assert_launch_status_across_environments<S, B>(app: &TestApp<S>)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let across = app.get("/api/v2/flag-status/web/launch").await;
    assert_eq!(across.status, 200, "{}", across.body);
    assert_eq!(
        across.body,
        json!({
            "environments": {
                "production": {"name": "launched", "lastRequested": null},
                "test": {"name": "inactive", "lastRequested": null},
            },
            "key": "launch",
            "_links": {
                "parent": status_link("/api/v2/flags/web/launch"),
                "self": status_link("/api/v2/flag-status/web/launch"),
            },
        })
    );
    let narrowed = app
        .get("/api/v2/flag-status/web/launch?env=test&env=nope")
        .await
        .body;
    assert_eq!(
        narrowed["environments"],
        json!({"test": {"name": "inactive", "lastRequested": null}})
    );
    let none = app.get("/api/v2/flag-status/web/launch?env=nope").await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert_eq!(none.body["environments"], json!({}));
}

/// Changes flag `launch` in production and back: a target added, then removed.
async fn add_and_remove_a_target_of_launch<S, B>(app: &TestApp<S>)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let launch = app.get("/api/v2/flags/web/launch").await.body;
    let a = launch["variations"][0]["_id"].as_str().unwrap();
    let changed = app
        .send(semantic(
            "launch",
            json!([{"kind": "addTargets", "values": ["ann"], "variationId": a}]),
        ))
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let removed = app
        .send(semantic(
            "launch",
            json!([{"kind": "removeTargets", "values": ["ann"], "variationId": a}]),
        ))
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
}

async fn statuses_follow_the_rule_as_time_passes(backend: Backend) {
    let clock = Arc::new(TestClock(AtomicI64::new(START)));
    let app = spawn_at(backend, clock.clone()).await;
    four_flags_of_each_kind(&app).await;

    // Day 0: the archived flag is inactive; what changed is active; the untouched one is new.
    let day0 = app.get("/api/v2/flag-statuses/web/production").await;
    assert_eq!(day0.status, 200, "{}", day0.body);
    assert_eq!(
        names(&day0.body),
        pairs(&[
            ("archived", "inactive"),
            ("launch", "active"),
            ("quiet", "new"),
            ("split", "active"),
        ])
    );
    assert_eq!(
        day0.body["_links"],
        json!({"self": status_link("/api/v2/flag-statuses/web/production")})
    );
    assert_eq!(
        day0.body["items"][2],
        json!({
            "name": "new",
            "lastRequested": null,
            "_links": {
                "parent": status_link("/api/v2/flag-statuses/web/production"),
                "self": status_link("/api/v2/flag-statuses/web/production/quiet"),
            },
        })
    );
    // In `test` nothing changed: new (the archived one excepted).
    let test_env = app.get("/api/v2/flag-statuses/web/test").await.body;
    assert_eq!(
        names(&test_env),
        pairs(&[
            ("archived", "inactive"),
            ("launch", "new"),
            ("quiet", "new"),
            ("split", "new"),
        ])
    );

    // A day short of the window: nothing has settled yet.
    clock.advance(7 * DAY - 1);
    let almost = app.get("/api/v2/flag-statuses/web/production").await.body;
    assert_eq!(
        names(&almost),
        pairs(&[
            ("archived", "inactive"),
            ("launch", "active"),
            ("quiet", "new"),
            ("split", "active"),
        ])
    );

    // Seven days on: launched (one variation to everyone), inactive (off), active (a 50/50 split).
    clock.advance(1);
    let later = app.get("/api/v2/flag-statuses/web/production").await.body;
    assert_eq!(
        names(&later),
        pairs(&[
            ("archived", "inactive"),
            ("launch", "launched"),
            ("quiet", "inactive"),
            ("split", "active"),
        ])
    );
    let one = app.get("/api/v2/flag-statuses/web/production/launch").await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(
        one.body,
        json!({
            "name": "launched",
            "lastRequested": null,
            "_links": {
                "parent": status_link("/api/v2/flag-statuses/web/production"),
                "self": status_link("/api/v2/flag-statuses/web/production/launch"),
            },
        })
    );

    // A change makes it active again, for seven more days.
    add_and_remove_a_target_of_launch(&app).await;
    let path = "/api/v2/flag-statuses/web/production/launch";
    assert_eq!(app.get(path).await.body["name"], "active");
    clock.advance(7 * DAY);
    assert_eq!(app.get(path).await.body["name"], "launched");

    assert_launch_status_across_environments(&app).await;

    // A reader may read statuses.
    let reader = app.token("reader").await;
    let read = app
        .get_as(&reader, "/api/v2/flag-statuses/web/production/launch")
        .await;
    assert_eq!(read.status, 200, "{}", read.body);
}

async fn a_new_environment_and_a_clone_start_new(backend: Backend) {
    let clock = Arc::new(TestClock(AtomicI64::new(START)));
    let app = spawn_at(backend, clock.clone()).await;
    app.project("web").await;
    app.flag("web", "old").await;
    let on = app
        .patch_with(
            "/api/v2/flags/web/old",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOn"}]}),
        )
        .await;
    assert_eq!(on.status, 200, "{}", on.body);
    clock.advance(30 * DAY);
    let env = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "staging", "name": "Staging", "color": "00FF00"}),
        )
        .await;
    assert_eq!(env.status, 201, "{}", env.body);
    let cloned = app
        .post(
            "/api/v2/flags/web?clone=old",
            json!({"key": "copy", "name": "Copy"}),
        )
        .await;
    assert_eq!(cloned.status, 201, "{}", cloned.body);
    // The old flag in a month-old configuration is launched; in a brand-new environment it is
    // off and fresh, but the flag is a month old: active until its configuration is a week old.
    let old = app.get("/api/v2/flag-status/web/old").await.body;
    assert_eq!(old["environments"]["production"]["name"], "launched");
    assert_eq!(old["environments"]["test"]["name"], "inactive");
    assert_eq!(old["environments"]["staging"]["name"], "active");
    // The clone is new everywhere, even where it is on.
    let copy = app.get("/api/v2/flag-status/web/copy").await.body;
    for env in ["production", "staging", "test"] {
        assert_eq!(copy["environments"][env]["name"], "new", "{copy}");
    }
}

async fn statuses_answer_401_and_404(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    for path in [
        "/api/v2/flag-statuses/web/production",
        "/api/v2/flag-statuses/web/production/f",
        "/api/v2/flag-status/web/f",
        "/api/v2/caller-identity",
    ] {
        app.send(request(Method::GET, path, None))
            .await
            .assert_error(401, "unauthorized");
        app.send(request(Method::GET, path, Some("api-not-a-token")))
            .await
            .assert_error(401, "unauthorized");
        assert_eq!(app.get(path).await.status, 200, "{path}");
    }
    for (path, names) in [
        (
            "/api/v2/flag-statuses/nope/production",
            "project with key 'nope'",
        ),
        (
            "/api/v2/flag-statuses/web/nope",
            "environment with key 'nope'",
        ),
        (
            "/api/v2/flag-statuses/nope/production/f",
            "project with key 'nope'",
        ),
        (
            "/api/v2/flag-statuses/web/nope/f",
            "environment with key 'nope'",
        ),
        (
            "/api/v2/flag-statuses/web/production/nope",
            "flag with key 'nope'",
        ),
        ("/api/v2/flag-status/nope/f", "project with key 'nope'"),
        ("/api/v2/flag-status/web/nope", "flag with key 'nope'"),
    ] {
        let resp = app.get(path).await;
        resp.assert_error(404, "not_found");
        let message = resp.body["message"].as_str().unwrap();
        assert!(message.contains(names), "{path}: {message}");
    }
}

async fn caller_identity_describes_the_token(backend: Backend) {
    let app = spawn(backend).await;
    let me = app.get("/api/v2/members/me").await.body;
    let personal = app.get("/api/v2/caller-identity").await;
    assert_eq!(personal.status, 200, "{}", personal.body);
    let account = personal.body["accountId"].as_str().unwrap().to_owned();
    assert_eq!(account.len(), 24);
    let owner_token = app.get("/api/v2/tokens").await.body["items"][0].clone();
    assert_eq!(
        personal.body,
        json!({
            "accountId": account,
            "authKind": "token",
            "tokenKind": "personal",
            "tokenName": owner_token["name"],
            "tokenId": owner_token["_id"],
            "memberId": me["_id"],
            "serviceToken": false,
        })
    );
    let created = app
        .post(
            "/api/v2/tokens",
            json!({"name": "deploys", "role": "reader", "serviceToken": true}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let secret = created.body["token"].as_str().unwrap();
    let service = app.get_as(secret, "/api/v2/caller-identity").await;
    assert_eq!(service.status, 200, "{}", service.body);
    assert_eq!(
        service.body,
        json!({
            "accountId": account,
            "authKind": "token",
            "tokenKind": "service",
            "tokenName": "deploys",
            "tokenId": created.body["_id"],
            "serviceToken": true,
        })
    );
    // The account id is stored: a second service (another replica, or a restart) on the same
    // database reports the same one.
    let again = Service::new(
        app.db.store.clone(),
        Arc::new(service::SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    );
    assert_eq!(again.account_id().unwrap(), account);
    again
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .expect("bootstrap again");
    assert_eq!(again.account_id().unwrap(), account);
}

on_both_backends!(
    statuses_follow_the_rule_as_time_passes,
    a_new_environment_and_a_clone_start_new,
    statuses_answer_401_and_404,
    caller_identity_describes_the_token,
);
