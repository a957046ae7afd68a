//! The SDKs' stream `GET /all` over HTTP, with the delivery job running as the binary runs it:
//! a `put` first, then each change as a `patch` or `delete` with a higher version; the key
//! rules; the limits; and the ways a stream ends (its environment deleted, its key expired, the
//! longest connection time).

use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_http::Request;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service as ActixService, ServiceResponse};
use actix_web::http::Method;
use actix_web::test;
use adapter_http::{AppState, HttpConfig};
use background::{Runner, Schedule, SdkDelivery};
use serde_json::{json, Value};
use service::{Service, StreamLimits, SystemClock};

use crate::common::{open, request, Backend, TestApp, OWNER, SEMANTIC};
use crate::ofrep::configure;
use crate::sdk_polling::assert_sdk_error;

/// The parts of an app as the binary wires them: a service over a new database of `backend`
/// (streams limited by `limits`), its SDK delivery job running, its API state, and its SDK
/// routes (streams ended after `max_time`).
struct Parts {
    db: crate::common::Db,
    service: Arc<Service>,
    jobs: Runner,
    state: actix_web::web::Data<AppState>,
    sdk: adapter_sdk::SdkRoutes,
}

fn parts(backend: Backend, limits: StreamLimits, max_time: Option<Duration>) -> Parts {
    let db = open(backend);
    adapter_http::install_metrics().expect("metrics recorder");
    let service = Arc::new(
        Service::new(
            db.store.clone(),
            Arc::new(SystemClock::default()),
            Arc::new(adapter_http::ApiRepresentations),
        )
        .with_stream_limits(limits),
    );
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .expect("bootstrap");
    let mut jobs = Runner::new();
    jobs.start(
        Arc::new(SdkDelivery::new(service.clone())),
        Schedule {
            interval: Duration::from_millis(200),
            batch: 64,
        },
    )
    .unwrap();
    let config = HttpConfig {
        rate_limit: 0,
        ..HttpConfig::default()
    };
    let state = AppState::new(service.clone(), config).expect("OpenAPI document");
    let sdk = adapter_sdk::SdkRoutes::new(service.clone(), Arc::new(app::SdkGate(state.clone())))
        .with_max_connection_time(max_time);
    Parts {
        db,
        service,
        jobs,
        state,
        sdk,
    }
}

/// An app as the binary serves it, with the SDK delivery job, streams limited by `limits` and
/// ended after `max_time`.
async fn spawn_streaming(
    backend: Backend,
    limits: StreamLimits,
    max_time: Option<Duration>,
) -> (
    TestApp<
        impl ActixService<
            Request,
            Response = ServiceResponse<impl MessageBody>,
            Error = actix_web::Error,
        >,
    >,
    Runner,
) {
    let Parts {
        db,
        jobs,
        state,
        sdk,
        ..
    } = parts(backend, limits, max_time);
    let mount = adapter_http::Mount::new(move |routes| sdk.configure(routes));
    let app = test::init_service(adapter_http::app_with(state, Some(mount))).await;
    (TestApp { app, db }, jobs)
}

/// An app whose SDK routes are also served on a socket of their own (as `--sdk-bind` serves
/// them), for clients that speak HTTP themselves; the management API and the console through
/// `app`.
pub(crate) struct OnASocket<S> {
    pub(crate) app: TestApp<S>,
    /// `http://127.0.0.1:{port}`.
    pub(crate) origin: String,
    _jobs: Runner,
}

pub(crate) async fn spawn_on_a_socket(
    backend: Backend,
) -> OnASocket<
    impl ActixService<Request, Response = ServiceResponse<impl MessageBody>, Error = actix_web::Error>,
> {
    let Parts {
        db,
        service,
        jobs,
        state,
        sdk,
    } = parts(backend, StreamLimits::default(), None);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    let served = sdk.clone();
    let server = adapter_http::mount_only_server(
        listener,
        state.clone(),
        1,
        4,
        adapter_http::Mount::new(move |routes| served.configure(routes)),
    )
    .unwrap();
    actix_web::rt::spawn(server);
    // The console too: a switch turned there reaches the SDKs as one turned through the API.
    let console = adapter_web::Console::new(service);
    let not_found = console.clone();
    let mount = adapter_http::Mount::new(move |routes| {
        console.configure(routes);
        sdk.configure(routes);
    })
    .with_not_found(move |req| not_found.not_found(req));
    let app = test::init_service(adapter_http::app_with(state, Some(mount))).await;
    OnASocket {
        app: TestApp { app, db },
        origin,
        _jobs: jobs,
    }
}

/// An open stream's body.
struct Stream(Pin<Box<BoxBody>>);

impl Stream {
    /// The next chunk within `wait`: `Some(None)` when the stream ended, `None` on timeout.
    async fn next(&mut self, wait: Duration) -> Option<Option<String>> {
        let chunk = std::future::poll_fn(|cx| self.0.as_mut().poll_next(cx));
        match tokio::time::timeout(wait, chunk).await {
            Ok(Some(Ok(bytes))) => Some(Some(String::from_utf8(bytes.to_vec()).unwrap())),
            Ok(Some(Err(e))) => panic!("the stream failed: {e}"),
            Ok(None) => Some(None),
            Err(_) => None,
        }
    }

    /// The next event within 2 s, skipping heartbeats: its name and data.
    async fn event(&mut self) -> (String, Value) {
        loop {
            let chunk = self
                .next(Duration::from_secs(2))
                .await
                .expect("an event within 2 s")
                .expect("an open stream");
            if chunk.starts_with(':') {
                continue;
            }
            let (name, data) = chunk
                .trim_end()
                .strip_prefix("event: ")
                .and_then(|rest| rest.split_once("\ndata: "))
                .unwrap_or_else(|| panic!("not one event: {chunk:?}"));
            return (name.to_owned(), serde_json::from_str(data).unwrap());
        }
    }

    /// Whether the stream ends within `wait`.
    async fn ends_within(&mut self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            match self.next(left).await {
                Some(None) => return true,
                Some(Some(_)) => {}
                None => return false,
            }
        }
        false
    }
}

/// Opens `/all` with `key`: the status and, for a 200, the stream.
async fn open_stream<S, B>(app: &TestApp<S>, key: Option<&str>) -> (u16, Option<Stream>, Value)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + 'static,
{
    let response =
        test::call_service(&app.app, request(Method::GET, "/all", key).to_request()).await;
    let status = response.status().as_u16();
    if status != 200 {
        let retry = response.headers().get("retry-after").is_some();
        let body: Value = test::read_body_json(response).await;
        return (status, None, json!({"body": body, "retryAfter": retry}));
    }
    assert_eq!(
        response.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let body = response.into_body().boxed();
    (status, Some(Stream(Box::pin(body))), Value::Null)
}

async fn a_stream_carries_every_change_with_a_higher_version(backend: Backend) {
    let (app, _jobs) = spawn_streaming(backend, StreamLimits::default(), None).await;
    let (production, _) = configure(&app).await;
    let (_, stream, _) = open_stream(&app, Some(&production)).await;
    let mut stream = stream.unwrap();
    let (name, put) = stream.event().await;
    assert_eq!(name, "put");
    assert_eq!(put["path"], "/");
    let held = put["data"]["flags"]["beta"]["version"].as_u64().unwrap();
    assert_eq!(put["data"]["flags"]["beta"]["on"], true);
    // A switch.
    let off = app
        .patch_with(
            "/api/v2/flags/web/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}]}),
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
    let (name, patch) = stream.event().await;
    assert_eq!(
        (name.as_str(), &patch["path"]),
        ("patch", &json!("/flags/beta"))
    );
    assert_eq!(patch["data"]["on"], false);
    let switched = patch["data"]["version"].as_u64().unwrap();
    assert!(switched > held);
    // A flag-wide change: the variations' values.
    let swapped = app
        .patch(
            "/api/v2/flags/web/beta",
            json!([{"op": "replace", "path": "/variations/0/value", "value": false},
                   {"op": "replace", "path": "/variations/1/value", "value": true}]),
        )
        .await;
    assert_eq!(swapped.status, 200, "{}", swapped.body);
    let (_, patch) = stream.event().await;
    assert_eq!(patch["data"]["variations"], json!([false, true]));
    let renewed = patch["data"]["version"].as_u64().unwrap();
    assert!(renewed > switched);
    // A segment, then archiving (a delete at its version) and deleting (a delete above it).
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "staff", "name": "Staff"}),
        )
        .await;
    assert_eq!(segment.status, 201);
    let (name, patch) = stream.event().await;
    assert_eq!(
        (name.as_str(), &patch["path"]),
        ("patch", &json!("/segments/staff"))
    );
    let archived = app
        .patch(
            "/api/v2/flags/web/quiet",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200, "{}", archived.body);
    let (name, delete) = stream.event().await;
    assert_eq!(
        (name.as_str(), &delete["path"]),
        ("delete", &json!("/flags/quiet"))
    );
    let tombstone = delete["version"].as_u64().unwrap();
    assert_eq!(
        json!(tombstone),
        archived.body["environments"]["production"]["version"]
    );
    assert_eq!(app.delete("/api/v2/flags/web/beta").await.status, 204);
    let (name, delete) = stream.event().await;
    assert_eq!(
        (name.as_str(), &delete["path"]),
        ("delete", &json!("/flags/beta"))
    );
    assert_eq!(delete["version"].as_u64().unwrap(), renewed + 1);
    // Another environment's change sends nothing here; deleting this one ends the stream.
    let elsewhere = app
        .post(
            "/api/v2/segments/web/test",
            json!({"key": "other", "name": "Other"}),
        )
        .await;
    assert_eq!(elsewhere.status, 201);
    assert_eq!(
        stream.next(Duration::from_millis(500)).await,
        None,
        "nothing sent"
    );
    assert_eq!(
        app.delete("/api/v2/projects/web/environments/production")
            .await
            .status,
        204
    );
    assert!(stream.ends_within(Duration::from_secs(3)).await);
    let (status, _, _) = open_stream(&app, Some(&production)).await;
    assert_eq!(status, 401, "the deleted environment's key opens nothing");
}

async fn only_an_sdk_key_opens_a_stream(backend: Backend) {
    let (app, _jobs) = spawn_streaming(backend, StreamLimits::default(), None).await;
    let (production, _) = configure(&app).await;
    for key in [
        None,
        Some(OWNER),
        Some("sdk-00000000-0000-4000-8000-000000000000"),
    ] {
        let (status, _, body) = open_stream(&app, key).await;
        assert_eq!(status, 401, "{key:?}: {body}");
        assert_eq!(body["body"]["code"], "unauthorized");
    }
    let filtered = app
        .send(request(Method::GET, "/all?filter=x", Some(&production)))
        .await;
    assert_sdk_error(&filtered, 400, "invalid_request");
    let post = app
        .send(request(Method::POST, "/all", Some(&production)))
        .await;
    assert_eq!(post.status, 405, "{}", post.body);
}

async fn streams_beyond_the_limit_are_refused_until_one_closes(backend: Backend) {
    let limits = StreamLimits {
        max_streams: 10,
        max_streams_per_environment: 1,
        ..StreamLimits::default()
    };
    let (app, _jobs) = spawn_streaming(backend, limits, None).await;
    let (production, test_key) = configure(&app).await;
    let (status, first, _) = open_stream(&app, Some(&production)).await;
    assert_eq!(status, 200);
    let (status, _, refused) = open_stream(&app, Some(&production)).await;
    assert_eq!(status, 503, "{refused}");
    assert_eq!(refused["retryAfter"], true);
    // Another environment has its own share.
    let (status, _, _) = open_stream(&app, Some(&test_key)).await;
    assert_eq!(status, 200);
    drop(first);
    let (status, _, _) = open_stream(&app, Some(&production)).await;
    assert_eq!(status, 200, "a closed stream gives its place back");
}

async fn a_stream_ends_when_its_key_expires_or_its_time_is_up(backend: Backend) {
    let (app, _jobs) = spawn_streaming(
        backend,
        StreamLimits::default(),
        Some(Duration::from_secs(2)),
    )
    .await;
    let (production, _) = configure(&app).await;
    let expiry = crate::ofrep::now_ms() + 1_000;
    let reset = app
        .post(
            &format!("/api/v2/projects/web/environments/production/apiKey?expiry={expiry}"),
            json!({}),
        )
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let renewed = reset.body["apiKey"].as_str().unwrap().to_owned();
    let (_, old, _) = open_stream(&app, Some(&production)).await;
    let (_, new, _) = open_stream(&app, Some(&renewed)).await;
    let (mut old, mut new) = (old.unwrap(), new.unwrap());
    let opened = Instant::now();
    assert!(
        old.ends_within(Duration::from_secs(3)).await,
        "at the old key's expiry"
    );
    assert!(opened.elapsed() < Duration::from_millis(1_900));
    assert!(
        new.ends_within(Duration::from_secs(3)).await,
        "at the longest connection time"
    );
    assert!(opened.elapsed() >= Duration::from_millis(1_900));
}

async fn a_replaced_key_ends_the_streams_it_opened(backend: Backend) {
    let (app, _jobs) = spawn_streaming(backend, StreamLimits::default(), None).await;
    let (production, _) = configure(&app).await;
    let reset = |expiry: Option<i64>| {
        let query = expiry.map(|at| format!("?expiry={at}")).unwrap_or_default();
        let path = format!("/api/v2/projects/web/environments/production/apiKey{query}");
        let app = &app;
        async move { app.post(&path, json!({})).await }
    };
    // Opened before the reset: it ends when the old key expires, not before.
    let (_, stream, _) = open_stream(&app, Some(&production)).await;
    let mut old = stream.unwrap();
    old.event().await;
    let expiry = crate::ofrep::now_ms() + 1_500;
    let renewed = reset(Some(expiry)).await;
    assert_eq!(renewed.status, 200, "{}", renewed.body);
    let renewed = renewed.body["apiKey"].as_str().unwrap().to_owned();
    let (_, stream, _) = open_stream(&app, Some(&renewed)).await;
    let mut new = stream.unwrap();
    new.event().await;
    assert!(
        !old.ends_within(Duration::from_millis(700)).await,
        "open until the expiry"
    );
    assert!(
        old.ends_within(Duration::from_secs(3)).await,
        "ended at the expiry"
    );
    assert!(crate::ofrep::now_ms() >= expiry);
    // Replaced without an expiry: at once.
    assert_eq!(reset(None).await.status, 200);
    assert!(
        new.ends_within(Duration::from_secs(2)).await,
        "ended at once"
    );
}

async fn an_environment_created_again_with_the_key_is_not_the_deleted_one(backend: Backend) {
    let (app, _jobs) = spawn_streaming(backend, StreamLimits::default(), None).await;
    let (production, _) = configure(&app).await;
    let (_, stream, _) = open_stream(&app, Some(&production)).await;
    let mut old = stream.unwrap();
    let (_, put) = old.event().await;
    assert_eq!(put["data"]["flags"]["beta"]["on"], true);
    assert_eq!(
        app.delete("/api/v2/projects/web/environments/production")
            .await
            .status,
        204
    );
    let again = app
        .post(
            "/api/v2/projects/web/environments",
            json!({"key": "production", "name": "Production", "color": "417505"}),
        )
        .await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert!(
        old.ends_within(Duration::from_secs(3)).await,
        "the deleted one's stream ends"
    );
    let key = again.body["apiKey"].as_str().unwrap().to_owned();
    let (_, stream, _) = open_stream(&app, Some(&key)).await;
    let (_, put) = stream.unwrap().event().await;
    assert_eq!(
        put["data"]["flags"]["beta"]["on"], false,
        "the new environment's own data: {put}"
    );
}

on_both_backends!(
    an_environment_created_again_with_the_key_is_not_the_deleted_one,
    a_replaced_key_ends_the_streams_it_opened,
    a_stream_carries_every_change_with_a_higher_version,
    only_an_sdk_key_opens_a_stream,
    streams_beyond_the_limit_are_refused_until_one_closes,
    a_stream_ends_when_its_key_expires_or_its_time_is_up,
);
