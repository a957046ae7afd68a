//! What operators and load balancers ask of a replica: `/healthz` and `/readyz`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use actix_web::http::Method;
use actix_web::test::init_service;
use adapter_http::{AppState, HttpConfig, ReadinessCheck};
use serde_json::json;

use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use background::{DatabaseReadiness, Runner, Schedule};

use crate::common::{bootstrapped, open, request, spawn, Backend, TestApp, OWNER};

/// An app whose database is watched as the binary watches it (`background::DatabaseReadiness`,
/// every `READY_CHECK_EVERY`), with `checks` besides; the runner must live as long as the app.
async fn watched(
    backend: Backend,
    checks: Vec<(String, ReadinessCheck)>,
) -> (
    TestApp<
        impl ActixService<
            actix_http::Request,
            Response = ServiceResponse<impl MessageBody>,
            Error = actix_web::Error,
        >,
    >,
    Runner,
) {
    let db = open(backend);
    let service = bootstrapped(&db);
    let mut runner = Runner::new();
    runner
        .start(
            Arc::new(DatabaseReadiness::new(service.clone())),
            Schedule {
                interval: adapter_http::READY_CHECK_EVERY,
                batch: 1,
            },
        )
        .unwrap();
    let state = AppState::with_readiness_checks(service, HttpConfig::default(), checks).unwrap();
    let app = TestApp {
        app: init_service(adapter_http::app(state)).await,
        db,
    };
    (app, runner)
}

async fn healthz_answers_without_a_token_or_the_database(backend: Backend) {
    let app = spawn(backend).await;
    let resp = app.send(request(Method::GET, "/healthz", None)).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body, json!({"status": "ok"}));
    // A probe may use HEAD; other methods are refused as on the API.
    let head = app.send(request(Method::HEAD, "/healthz", None)).await;
    assert_eq!(head.status, 200);
    let post = app.send(request(Method::POST, "/readyz", None)).await;
    post.assert_error(405, "method_not_allowed");
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    if backend == Backend::Postgres {
        app.db.take_down();
        let resp = app.send(request(Method::GET, "/healthz", None)).await;
        assert_eq!(resp.status, 200, "alive, even without its database");
    }
}

async fn readyz_is_ready_on_a_migrated_database(backend: Backend) {
    let (app, _runner) = watched(backend, Vec::new()).await;
    let resp = app.send(request(Method::GET, "/readyz", None)).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.body,
        json!({"status": "ready", "checks": [{"name": "database", "ok": true}]})
    );
}

/// `/readyz` until it answers `status`: the database is checked every
/// `READY_CHECK_EVERY`, so a change shows within two of them (and a stalled check within
/// `READY_TIMEOUT`).
async fn readyz_until<S, B>(app: &TestApp<S>, status: u16) -> crate::common::Resp
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let bound = adapter_http::READY_CHECK_EVERY * 2 + adapter_http::READY_TIMEOUT;
    let start = std::time::Instant::now();
    loop {
        let resp = app.send(request(Method::GET, "/readyz", None)).await;
        if resp.status == status {
            return resp;
        }
        assert!(
            start.elapsed() < bound,
            "/readyz still {} after {:?}: {}",
            resp.status,
            start.elapsed(),
            resp.body
        );
        actix_web::rt::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn readyz_is_503_while_a_migration_is_missing(backend: Backend) {
    let (app, _runner) = watched(backend, Vec::new()).await;
    readyz_until(&app, 200).await;
    // As if this release had a migration the database has not had yet.
    app.db.execute_sql(
        "DELETE FROM __diesel_schema_migrations WHERE version = \
         (SELECT MAX(version) FROM __diesel_schema_migrations)",
    );
    let resp = readyz_until(&app, 503).await;
    resp.assert_error(503, "not_ready");
    let message = resp.body["message"].as_str().unwrap();
    assert!(message.starts_with("database: "), "{message}");
    assert!(message.contains("migrations"), "{message}");
    assert_eq!(resp.body["errors"][0]["attribute"], "database");
}

async fn readyz_reports_a_stopped_part_of_the_process(backend: Backend) {
    let running = Arc::new(AtomicBool::new(true));
    let flag = running.clone();
    let check: ReadinessCheck = Arc::new(move || {
        if flag.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err("the loop has stopped".to_owned())
        }
    });
    let (app, _runner) = watched(backend, vec![("webhookWorker".to_owned(), check)]).await;
    let resp = app.send(request(Method::GET, "/readyz", None)).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.body["checks"][1],
        json!({"name": "webhookWorker", "ok": true})
    );
    running.store(false, Ordering::Relaxed);
    let resp = app.send(request(Method::GET, "/readyz", None)).await;
    resp.assert_error(503, "not_ready");
    assert_eq!(
        resp.body["message"], "webhookWorker: the loop has stopped",
        "the database is fine, the worker is not"
    );
    assert_eq!(
        resp.body["errors"],
        json!([{"attribute": "webhookWorker", "reason": "the loop has stopped"}])
    );
}

on_both_backends!(
    healthz_answers_without_a_token_or_the_database,
    readyz_is_ready_on_a_migrated_database,
    readyz_is_503_while_a_migration_is_missing,
    readyz_reports_a_stopped_part_of_the_process,
    metrics_parse_and_move_with_the_requests,
);

/// The database refuses connections (as during an outage or a restart) and comes back: the
/// replica says so, and is ready again without a restart.
#[actix_web::test]
async fn readyz_follows_postgres_going_away_and_coming_back() {
    let (app, _runner) = watched(Backend::Postgres, Vec::new()).await;
    let ready = app.send(request(Method::GET, "/readyz", None)).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    app.db.refuse_connections();
    let down = readyz_until(&app, 503).await;
    down.assert_error(503, "not_ready");
    assert_eq!(down.body["errors"][0]["attribute"], "database");
    // Fit to show to anyone: no host, database name or driver message.
    let reason = down.body["errors"][0]["reason"].as_str().unwrap();
    assert!(
        [
            "the database cannot be reached",
            "the database does not answer"
        ]
        .contains(&reason),
        "{}",
        down.body
    );
    // And the API says the database is unavailable.
    let api = app
        .send(request(Method::GET, "/api/v2/projects", Some(OWNER)))
        .await;
    assert_eq!(api.status, 503, "{}", api.body);
    app.db.allow_connections();
    readyz_until(&app, 200).await;
}

/// A replica whose every pooled connection is busy (long transactions, a table lock) is slow,
/// not unready: the readiness check asks on a connection of its own.
#[test]
fn a_busy_pool_does_not_make_the_replica_unready() {
    let db = open(Backend::Postgres);
    let service = bootstrapped(&db);
    let (hold, release) = std::sync::mpsc::channel::<()>();
    let release = Arc::new(std::sync::Mutex::new(release));
    let (held_tx, held) = std::sync::mpsc::channel::<()>();
    let holders: Vec<_> = (0..4)
        .map(|_| {
            let (store, release, held_tx) = (db.store.clone(), release.clone(), held_tx.clone());
            std::thread::spawn(move || {
                store
                    .read(&mut |_repo| {
                        held_tx.send(()).unwrap();
                        // Holds its connection until the test lets go.
                        let _ = release.lock().unwrap().recv();
                        Ok(())
                    })
                    .unwrap();
            })
        })
        .collect();
    for _ in 0..4 {
        held.recv().unwrap();
    }
    let asked = std::time::Instant::now();
    service
        .check_ready()
        .expect("ready, though every pooled connection is busy");
    assert!(asked.elapsed() < std::time::Duration::from_secs(1));
    drop(hold);
    for holder in holders {
        holder.join().unwrap();
    }
}

/// Replicas that start together on a new database each migrate it: they take turns, one
/// applies every migration, the others find nothing left to do, and none fails.
#[test]
fn replicas_migrating_together_take_turns() {
    let db = adapter_postgres::TestDatabase::create(&crate::common::postgres_server_url()).unwrap();
    let outcomes: Vec<_> = std::thread::scope(|scope| {
        let started: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| adapter_postgres::migrate(db.url())))
            .collect();
        started.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let applied: Vec<Vec<String>> = outcomes
        .into_iter()
        .map(|outcome| outcome.expect("every replica's migration succeeds"))
        .collect();
    let migrating: Vec<_> = applied.iter().filter(|a| !a.is_empty()).collect();
    assert_eq!(migrating.len(), 1, "one applied them all: {applied:?}");
    assert!(migrating[0].len() >= 10, "{applied:?}");
    // And the schema is complete: a store opened without migrating is ready.
    let store = adapter_postgres::open(db.url(), 2).unwrap();
    use ports::Store;
    store.check_ready().expect("ready");
}

/// The value of the sample of `name` whose labels include every one of `labels`, summed over
/// the samples that match (0 when none does).
fn sample(scrape: &prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .filter(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
        .map(|s| match s.value {
            prometheus_parse::Value::Counter(v)
            | prometheus_parse::Value::Gauge(v)
            | prometheus_parse::Value::Untyped(v) => v,
            prometheus_parse::Value::Histogram(ref buckets) => {
                buckets.iter().map(|b| b.count).fold(0.0, f64::max)
            }
            prometheus_parse::Value::Summary(_) => 0.0,
        })
        .sum()
}

async fn scrape<S, B>(app: &TestApp<S>) -> prometheus_parse::Scrape
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    B: actix_web::body::MessageBody,
{
    let req = request(Method::GET, "/metrics", None).to_request();
    let resp = actix_web::test::call_service(&app.app, req).await;
    assert_eq!(resp.status(), 200);
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    let body = actix_web::test::read_body(resp).await;
    let text = String::from_utf8(body.to_vec()).expect("UTF-8");
    let lines = text.lines().map(|l| Ok(l.to_owned()));
    prometheus_parse::Scrape::parse(lines).expect("Prometheus text")
}

async fn metrics_parse_and_move_with_the_requests(backend: Backend) {
    let app = spawn(backend).await;
    let route = [
        ("route", "/api/v2/projects"),
        ("method", "GET"),
        ("status", "200"),
    ];
    let before = scrape(&app).await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/v2/projects").await.status, 200);
    }
    let refused = app
        .send(request(
            Method::GET,
            "/api/v2/projects",
            Some("not-a-token"),
        ))
        .await;
    assert_eq!(refused.status, 401);
    // An evaluation keeps a snapshot, which the snapshot gauges count.
    app.project("metered").await;
    app.flag("metered", "f").await;
    let evaluated = app
        .post(
            "/api/v2/projects/metered/environments/production/flags/evaluate",
            serde_json::json!({"key": "a"}),
        )
        .await;
    assert_eq!(evaluated.status, 200, "{}", evaluated.body);
    let after = scrape(&app).await;
    // Other tests run in this process too: counters only grow, by at least what this one did.
    let grew = |name: &str, labels: &[(&str, &str)]| {
        sample(&after, name, labels) - sample(&before, name, labels)
    };
    assert!(grew("flagsvc_http_requests_total", &route) >= 3.0);
    assert!(grew("flagsvc_http_request_duration_seconds_count", &route) >= 3.0);
    assert!(grew("flagsvc_auth_failures_total", &[]) >= 1.0);
    for present in [
        "flagsvc_build_info",
        "flagsvc_http_requests_in_flight",
        "flagsvc_db_pool_connections",
        "flagsvc_db_pool_idle_connections",
        "flagsvc_db_pool_wait_seconds_count",
        "flagsvc_db_conflicts_total",
        "flagsvc_db_transaction_retries_total",
        "flagsvc_rate_limit_rejections_total",
        "flagsvc_webhook_delivery_attempts_total",
        "flagsvc_evaluation_snapshots",
        "flagsvc_evaluation_snapshot_bytes",
    ] {
        assert!(
            after.samples.iter().any(|s| s.metric == present),
            "{present} is missing"
        );
    }
    // A path nobody documented is counted, but not under a name of its own; nor is a method.
    let _ = app.get("/api/v2/no-such-thing-ever").await;
    let made_up = Method::from_bytes(b"MADEUPMETHOD").unwrap();
    let _ = app
        .send(request(made_up, "/api/v2/projects", Some(OWNER)))
        .await;
    let last = scrape(&app).await;
    assert!(!last
        .samples
        .iter()
        .any(|s| s.labels.get("method") == Some("MADEUPMETHOD")));
    assert!(sample(&last, "flagsvc_http_requests_total", &[("method", "other")]) >= 1.0);
    assert!(!last
        .samples
        .iter()
        .any(|s| s.labels.get("route") == Some("/api/v2/no-such-thing-ever")));
    assert!(
        sample(
            &last,
            "flagsvc_http_requests_total",
            &[("route", "unmatched")]
        ) >= 1.0
    );
}
