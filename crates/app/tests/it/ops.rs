//! What operators and load balancers ask of a replica: `/healthz` and `/readyz`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use actix_web::http::Method;
use actix_web::test::init_service;
use adapter_http::{AppState, HttpConfig, ReadinessCheck};
use serde_json::json;
use service::{Service, SystemClock};

use crate::common::{open, request, spawn, Backend, TestApp, OWNER};

async fn healthz_answers_without_a_token_or_the_database(backend: Backend) {
    let app = spawn(backend).await;
    let resp = app.send(request(Method::GET, "/healthz", None)).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(resp.body, json!({"status": "ok"}));
    if backend == Backend::Postgres {
        app.db.take_down();
        let resp = app.send(request(Method::GET, "/healthz", None)).await;
        assert_eq!(resp.status, 200, "alive, even without its database");
    }
}

async fn readyz_is_ready_on_a_migrated_database(backend: Backend) {
    let app = spawn(backend).await;
    let resp = app.send(request(Method::GET, "/readyz", None)).await;
    assert_eq!(resp.status, 200, "{}", resp.body);
    assert_eq!(
        resp.body,
        json!({"status": "ready", "checks": [{"name": "database", "ok": true}]})
    );
}

async fn readyz_is_503_while_a_migration_is_missing(backend: Backend) {
    let app = spawn(backend).await;
    // As if this release had a migration the database has not had yet.
    app.db.execute_sql(
        "DELETE FROM __diesel_schema_migrations WHERE version = \
         (SELECT MAX(version) FROM __diesel_schema_migrations)",
    );
    let resp = app.send(request(Method::GET, "/readyz", None)).await;
    resp.assert_error(503, "not_ready");
    let message = resp.body["message"].as_str().unwrap();
    assert!(message.starts_with("database: "), "{message}");
    assert!(message.contains("migrations"), "{message}");
    assert_eq!(resp.body["errors"][0]["attribute"], "database");
}

async fn readyz_reports_a_stopped_part_of_the_process(backend: Backend) {
    let db = open(backend);
    let service = Arc::new(Service::new(
        db.store.clone(),
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    ));
    service.bootstrap(Some(OWNER), "owner@example.com").unwrap();
    let running = Arc::new(AtomicBool::new(true));
    let flag = running.clone();
    let check: ReadinessCheck = Arc::new(move || {
        if flag.load(Ordering::Relaxed) {
            Ok(())
        } else {
            Err("the loop has stopped".to_owned())
        }
    });
    let state = AppState::with_readiness_checks(
        service,
        HttpConfig::default(),
        vec![("webhookWorker".to_owned(), check)],
    )
    .unwrap();
    let app = TestApp {
        app: init_service(adapter_http::app(state)).await,
        db,
    };
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
);

/// The database refuses connections (as during an outage or a restart) and comes back: the
/// replica says so, and is ready again without a restart.
#[actix_web::test]
async fn readyz_follows_postgres_going_away_and_coming_back() {
    let app = spawn(Backend::Postgres).await;
    let ready = app.send(request(Method::GET, "/readyz", None)).await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    app.db.refuse_connections();
    let down = app.send(request(Method::GET, "/readyz", None)).await;
    down.assert_error(503, "not_ready");
    assert_eq!(down.body["errors"][0]["attribute"], "database");
    // And the API says the database is unavailable.
    let api = app
        .send(request(Method::GET, "/api/v2/projects", Some(OWNER)))
        .await;
    assert_eq!(api.status, 503, "{}", api.body);
    app.db.allow_connections();
    let back = app.send(request(Method::GET, "/readyz", None)).await;
    assert_eq!(back.status, 200, "{}", back.body);
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
    store
        .check_ready(std::time::Duration::from_secs(2))
        .expect("ready");
}
