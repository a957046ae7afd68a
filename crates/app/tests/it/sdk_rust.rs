//! The original's Rust server-side SDK (`launchdarkly-server-sdk` 3.2.0 from crates.io,
//! unmodified) against flagsvc, in streaming and in polling mode, on both stores: it
//! initialises from the SDK routes on a real socket, evaluates flags with targets, rules on
//! another context kind and on an attribute, a rollout, a prerequisite and a segment for several
//! contexts to what the `domain` evaluator serves (the management API's `flags/evaluate`), sees a
//! change through the API (within 1 s when streaming, at its next poll when polling), loses
//! archived and deleted flags, and does not initialise with a wrong key.

use std::time::{Duration, Instant};

use actix_http::Request;
use actix_web::body::MessageBody;
use actix_web::dev::{Service as ActixService, ServiceResponse};
use launchdarkly_sdk_transport::HyperTransport;
use launchdarkly_server_sdk::{
    Client, ConfigBuilder, Context, FlagValue, NullEventProcessorBuilder, PollingDataSourceBuilder,
    ServiceEndpointsBuilder, StreamingDataSourceBuilder,
};
use serde_json::{json, Value};

use crate::common::{Backend, TestApp, SEMANTIC};

/// The modes an SDK reads flag data in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Streaming,
    Polling,
}

/// A client of the original's SDK against `origin` with `key`, started.
async fn sdk(origin: &str, key: &str, mode: Mode) -> Client {
    let transport = HyperTransport::new().unwrap();
    let mut endpoints = ServiceEndpointsBuilder::new();
    endpoints.relay_proxy(origin);
    let mut config = ConfigBuilder::new(key)
        .service_endpoints(&endpoints)
        .event_processor(&NullEventProcessorBuilder::new());
    config = match mode {
        Mode::Streaming => {
            let mut source = StreamingDataSourceBuilder::<HyperTransport>::new();
            source.transport(transport);
            config.data_source(&source)
        }
        Mode::Polling => {
            let mut source = PollingDataSourceBuilder::<HyperTransport>::new();
            source.transport(transport);
            config.data_source(&source)
        }
    };
    let client = Client::build(config.build().unwrap()).unwrap();
    client.start_with_default_executor();
    client
}

/// Flags of project `web` in production: `beta` (ann targeted; the `org` acme by a rule; else
/// false), `mail` (a rule on `email`), `split` (a 50/50 rollout), `child` (on when `beta` serves
/// true), `staff-only` (a rule on segment `staff`, which includes kim).
async fn configure<S, B>(app: &TestApp<S>)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let change = |flag: &'static str, instructions: Value| async move {
        let changed = app
            .patch_with(
                &format!("/api/v2/flags/web/{flag}"),
                SEMANTIC,
                json!({"environmentKey": "production", "instructions": instructions}),
            )
            .await;
        assert_eq!(changed.status, 200, "{flag}: {}", changed.body);
    };
    let ids = |flag: &Value| -> Vec<String> {
        flag["variations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["_id"].as_str().unwrap().to_owned())
            .collect()
    };
    app.project("web").await;
    let segment = app
        .post(
            "/api/v2/segments/web/production",
            json!({"key": "staff", "name": "Staff"}),
        )
        .await;
    assert_eq!(segment.status, 201, "{}", segment.body);
    let staff = app
        .patch_with(
            "/api/v2/segments/web/production/staff",
            SEMANTIC,
            json!({"environmentKey": "production",
                   "instructions": [{"kind": "addIncludedUsers", "values": ["kim"]}]}),
        )
        .await;
    assert_eq!(staff.status, 200, "{}", staff.body);
    let beta = ids(&app.flag("web", "beta").await);
    change(
        "beta",
        json!([
            {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": beta[1]},
            {"kind": "addTargets", "values": ["ann"], "variationId": beta[0]},
            {"kind": "addRule", "variationId": beta[0], "clauses": [{"contextKind": "org",
                "attribute": "key", "op": "in", "values": ["acme"], "negate": false}]},
        ]),
    )
    .await;
    let mail = ids(&app.flag("web", "mail").await);
    change("mail", json!([
        {"kind": "turnFlagOn"},
        {"kind": "updateFallthroughVariationOrRollout", "variationId": mail[1]},
        {"kind": "addRule", "variationId": mail[0], "clauses": [{"contextKind": "user",
            "attribute": "email", "op": "endsWith", "values": ["@example.com"], "negate": false}]},
    ]))
    .await;
    let split = ids(&app.flag("web", "split").await);
    change(
        "split",
        json!([
            {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout",
             "rolloutWeights": {split[0].clone(): 50000, split[1].clone(): 50000}},
        ]),
    )
    .await;
    let child = ids(&app.flag("web", "child").await);
    change(
        "child",
        json!([
            {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": child[0]},
            {"kind": "addPrerequisite", "key": "beta", "variationId": beta[0]},
        ]),
    )
    .await;
    let only = ids(&app.flag("web", "staff-only").await);
    change(
        "staff-only",
        json!([
            {"kind": "turnFlagOn"},
            {"kind": "updateFallthroughVariationOrRollout", "variationId": only[1]},
            {"kind": "addRule", "variationId": only[0], "clauses": [{"contextKind": "user",
                "attribute": "segmentMatch", "op": "segmentMatch", "values": ["staff"],
                "negate": false}]},
        ]),
    )
    .await;
}

/// The contexts every flag is evaluated for.
fn contexts() -> Vec<Value> {
    let mut all = vec![
        json!({"key": "ann"}),
        json!({"key": "bob"}),
        json!({"key": "kim"}),
        json!({"kind": "org", "key": "acme"}),
        json!({"kind": "multi", "user": {"key": "bob"}, "org": {"key": "acme"}}),
        json!({"key": "dan", "email": "dan@example.com"}),
    ];
    all.extend((0..8).map(|i| json!({"key": format!("user-{i}")})));
    all
}

const FLAGS: [&str; 5] = ["beta", "mail", "split", "child", "staff-only"];

/// What the SDK serves `context` for `flag`: value and reason, as JSON.
fn served(client: &Client, context: &Value, flag: &str) -> (Value, Value) {
    let context: Context = serde_json::from_value(context.clone()).unwrap();
    let detail = client.variation_detail(&context, flag, FlagValue::Str("default".into()));
    let value = detail
        .value
        .map_or(Value::Null, |value| serde_json::to_value(value).unwrap());
    (value, serde_json::to_value(&detail.reason).unwrap())
}

/// Asserts that `client` serves every flag to every context as the `domain` evaluator does.
async fn agrees_with_the_evaluator<S, B>(app: &TestApp<S>, client: &Client, mode: Mode)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    for context in contexts() {
        let ours = app
            .post(
                "/api/v2/projects/web/environments/production/flags/evaluate",
                context.clone(),
            )
            .await;
        assert_eq!(ours.status, 200, "{}", ours.body);
        for flag in FLAGS {
            let item = ours.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|item| item["key"] == flag);
            let (value, reason) = served(client, &context, flag);
            let Some(item) = item else {
                // Archived or deleted: unknown to the SDK too.
                let not_found = json!({"kind": "ERROR", "errorKind": "FLAG_NOT_FOUND"});
                assert_eq!(reason, not_found, "{mode:?} {flag} for {context}");
                continue;
            };
            assert_eq!(value, item["_value"], "{mode:?} {flag} for {context}");
            assert_eq!(
                reason["kind"], item["reason"]["kind"],
                "{mode:?} {flag} for {context}"
            );
            assert_eq!(reason.get("ruleIndex"), item["reason"].get("ruleIndex"));
        }
    }
}

/// Turns `beta` off in production through the API.
async fn switch_off<S, B>(app: &TestApp<S>)
where
    S: ActixService<Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let off = app
        .patch_with(
            "/api/v2/flags/web/beta",
            SEMANTIC,
            json!({"environmentKey": "production", "instructions": [{"kind": "turnFlagOff"}]}),
        )
        .await;
    assert_eq!(off.status, 200, "{}", off.body);
}

/// Waits up to `within` for `client` to serve `want` to ann for `flag`; how long it took.
async fn sees(client: &Client, flag: &str, want: &Value, within: Duration) -> Option<Duration> {
    let since = Instant::now();
    while since.elapsed() <= within {
        if served(client, &json!({"key": "ann"}), flag).0 == *want {
            return Some(since.elapsed());
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

async fn the_original_rust_sdk_follows_flagsvc(backend: Backend) {
    let served_at = crate::sdk_stream::spawn_on_a_socket(backend).await;
    let (app, origin) = (&served_at.app, served_at.origin.as_str());
    configure(app).await;
    let key = app
        .get("/api/v2/projects/web/environments/production")
        .await
        .body["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let streaming = sdk(origin, &key, Mode::Streaming).await;
    let polling = sdk(origin, &key, Mode::Polling).await;
    for client in [&streaming, &polling] {
        let ready = client
            .wait_for_initialization(Duration::from_secs(10))
            .await;
        assert_eq!(ready, Some(true));
    }
    agrees_with_the_evaluator(app, &streaming, Mode::Streaming).await;
    agrees_with_the_evaluator(app, &polling, Mode::Polling).await;
    // A switch through the API: streaming sees it within 1 s, polling at its next poll (the
    // SDK polls every 30 s at the most often).
    switch_off(app).await;
    let delay = sees(&streaming, "beta", &json!(false), Duration::from_secs(1)).await;
    assert!(
        delay.is_some(),
        "the streaming SDK sees the switch within 1 s"
    );
    // The same through the console, and back through the API.
    let switched =
        crate::console::switch_in_console(&app.app, ("web", "beta", "production"), true).await;
    assert_eq!(switched, 303, "the console's switch");
    let delay = sees(&streaming, "beta", &json!(true), Duration::from_secs(1)).await;
    assert!(
        delay.is_some(),
        "the streaming SDK sees the console's switch within 1 s"
    );
    switch_off(app).await;
    assert!(
        sees(&streaming, "beta", &json!(false), Duration::from_secs(1))
            .await
            .is_some()
    );
    // Archived and deleted flags are gone.
    let archived = app
        .patch(
            "/api/v2/flags/web/mail",
            json!([{"op": "replace", "path": "/archived", "value": true}]),
        )
        .await;
    assert_eq!(archived.status, 200, "{}", archived.body);
    assert_eq!(app.delete("/api/v2/flags/web/split").await.status, 204);
    let default = json!("default");
    for flag in ["mail", "split"] {
        assert!(sees(&streaming, flag, &default, Duration::from_secs(1))
            .await
            .is_some());
        let (_, reason) = served(&streaming, &json!({"key": "ann"}), flag);
        assert_eq!(
            reason,
            json!({"kind": "ERROR", "errorKind": "FLAG_NOT_FOUND"})
        );
    }
    assert!(
        sees(&polling, "beta", &json!(false), Duration::from_secs(35))
            .await
            .is_some(),
        "the polling SDK sees the switch at its next poll"
    );
    assert_eq!(served(&polling, &json!({"key": "ann"}), "split").0, default);
    agrees_with_the_evaluator(app, &streaming, Mode::Streaming).await;
    // A wrong key: the SDK gives up without initialising.
    let wrong = sdk(
        origin,
        "sdk-00000000-0000-4000-8000-000000000000",
        Mode::Streaming,
    )
    .await;
    assert_eq!(
        wrong.wait_for_initialization(Duration::from_secs(10)).await,
        Some(false)
    );
    for client in [streaming, polling, wrong] {
        client.close();
    }
}

on_both_backends!(the_original_rust_sdk_follows_flagsvc);
