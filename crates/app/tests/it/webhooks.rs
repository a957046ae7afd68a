//! Webhooks: CRUD over HTTP, and deliveries to a receiver on 127.0.0.1 that checks what arrives.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_webhooks::HttpSender;
use domain::instruction::SemanticPatch;
use domain::webhook::{RetryPolicy, WebhookPost};
use serde_json::{json, Value};
use service::{use_case, FlagChange, Service, SystemClock, WebhookSettings};

use crate::common::{open, spawn, Backend, OWNER};

/// What a receiver got: headers (lower-cased names) and body.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    body: String,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP receiver on 127.0.0.1 answering with `statuses` in turn (then 200), recording requests.
pub(crate) struct Receiver {
    pub(crate) url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub(crate) fn start(statuses: Vec<u16>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let log = received.clone();
        std::thread::spawn(move || {
            let mut statuses = statuses.into_iter();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut headers = Vec::new();
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                loop {
                    line.clear();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some((name, value)) = line.trim_end().split_once(':') {
                        headers.push((name.trim().to_lowercase(), value.trim().to_owned()));
                    }
                }
                let length: usize = headers
                    .iter()
                    .find(|(n, _)| n == "content-length")
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                log.lock().unwrap().push(Received {
                    headers,
                    body: String::from_utf8(body).unwrap(),
                });
                let status = statuses.next().unwrap_or(200);
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
            }
        });
        Self { url, received }
    }

    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}

fn service(db: &crate::common::Db, retry_ms: i64) -> Arc<Service> {
    // The receiver is on 127.0.0.1: private networks must be allowed explicitly.
    let settings = WebhookSettings {
        allow_private_networks: true,
        retry: RetryPolicy {
            max_attempts: 4,
            base_delay_ms: retry_ms,
            max_delay_ms: 1000,
        },
        ..Default::default()
    };
    let service = Service::new(
        db.store.clone(),
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    )
    .with_webhook_settings(settings);
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .unwrap();
    Arc::new(service)
}

pub(crate) fn turn_on(service: &Service, env: &str) {
    turn_on_as(
        service,
        &service.authentication().authenticate(OWNER).unwrap(),
        env,
    );
}

/// Turns flag `f` of project `p` on in `env`, as `caller`.
fn turn_on_as(service: &Service, caller: &service::Caller, env: &str) {
    let permit = caller.may(use_case::PatchFlag).unwrap();
    let patch = SemanticPatch::parse(
        json!({"environmentKey": env, "instructions": [{"kind": "turnFlagOn"}]}),
    )
    .unwrap();
    service
        .flags()
        .patch_flag(&permit, "p", "f", &FlagChange::Semantic(patch))
        .unwrap();
}

pub(crate) fn setup(service: &Service, url: &str, statements: Value) {
    let caller = service.authentication().authenticate(OWNER).unwrap();
    service
        .projects()
        .create_project(
            &caller.may(use_case::CreateProject).unwrap(),
            serde_json::from_value(json!({"key": "p", "name": "P"})).unwrap(),
        )
        .unwrap();
    service
        .flags()
        .create_flag(
            &caller.may(use_case::CreateFlag).unwrap(),
            "p",
            serde_json::from_value(json!({"key": "f", "name": "F"})).unwrap(),
        )
        .unwrap();
    let post = WebhookPost {
        url: url.to_owned(),
        sign: true,
        on: true,
        secret: Some("s3cret".into()),
        statements: serde_json::from_value(statements).unwrap(),
        ..Default::default()
    };
    let permit = caller.may(use_case::CreateWebhook).unwrap();
    service.webhooks().create_webhook(&permit, post).unwrap();
}

/// Delivers until nothing is due (waiting out retry delays), at most `rounds` times.
pub(crate) fn drain(service: &Service, rounds: usize) {
    let sender = HttpSender::new(Duration::from_secs(5));
    for _ in 0..rounds {
        service.webhooks().deliver_due(&sender, 20).unwrap();
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn signed_deliveries_of_matching_changes_only(backend: Backend) {
    let db = open(backend);
    let service = service(&db, 5);
    let receiver = Receiver::start(vec![]);
    setup(
        &service,
        &receiver.url,
        json!([{"effect": "allow", "resources": ["proj/*:env/production:flag/*"]}]),
    );
    turn_on(&service, "test");
    turn_on(&service, "production");
    drain(&service, 3);
    let got = receiver.received();
    assert_eq!(got.len(), 1, "only the production change: {got:?}");
    let entry: Value = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(entry["accesses"][0]["action"], "updateOn");
    assert_eq!(
        entry["accesses"][0]["resource"],
        "proj/p:env/production:flag/f"
    );
    assert!(
        entry.get("previousVersion").is_none(),
        "the listing view is sent"
    );
    assert_eq!(
        got[0].header("x-svc-signature"),
        Some(service::sign("s3cret", got[0].body.as_bytes()).as_str())
    );
    assert_eq!(got[0].header("content-type"), Some("application/json"));
}

fn failed_deliveries_are_retried(backend: Backend) {
    let db = open(backend);
    let service = service(&db, 5);
    // A redirect is not followed: it counts as a failure like a 5xx.
    let receiver = Receiver::start(vec![302, 503]);
    setup(
        &service,
        &receiver.url,
        json!([{"effect": "allow", "resources": ["proj/*:env/*:flag/*"]}]),
    );
    turn_on(&service, "production");
    drain(&service, 20);
    let got = receiver.received();
    assert_eq!(got.len(), 3, "two failures, then success: {got:?}");
    assert_eq!(got[0].body, got[2].body, "the same delivery, retried");
    assert_eq!(
        got[0].header("x-svc-delivery"),
        got[2].header("x-svc-delivery")
    );
    let caller = service.authentication().authenticate(OWNER).unwrap();
    let hooks = service
        .webhooks()
        .list_webhooks(&caller.may(use_case::ListWebhooks).unwrap())
        .unwrap();
    let attempts = service
        .webhooks()
        .webhook_deliveries(&caller.may(use_case::GetWebhook).unwrap(), &hooks[0].id)
        .unwrap();
    let summary: Vec<(u32, Option<u16>)> = attempts
        .iter()
        .map(|a| (a.attempt, a.status_code))
        .collect();
    assert_eq!(summary, [(3, Some(200)), (2, Some(503)), (1, Some(302))]);
    assert!(attempts[1].error.as_deref().unwrap().contains("503"));
}

fn deliveries_survive_a_restart(backend: Backend) {
    let db = open(backend);
    let receiver = Receiver::start(vec![]);
    {
        // A first "process" makes the change and stops before delivering anything.
        let first = service(&db, 5);
        setup(&first, &receiver.url, json!([]));
        turn_on(&first, "production");
    }
    assert!(receiver.received().is_empty());
    let second = service(&db, 5);
    drain(&second, 3);
    // Without statements a webhook gets every change made after it exists: its own creation,
    // then the flag change.
    let kinds: Vec<String> = receiver
        .received()
        .iter()
        .map(|r| {
            serde_json::from_str::<Value>(&r.body).unwrap()["accesses"][0]["action"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["createWebhook", "updateOn"]);
}

/// A change made by a request (the HTTP adapter names the caller's request) queues deliveries
/// that carry the request's id to the receiver (`X-Svc-Request-Id`) and the delivery log; a
/// change made outside a request sends none.
fn a_delivery_names_the_request_that_queued_it(backend: Backend) {
    let db = open(backend);
    let service = service(&db, 5);
    let receiver = Receiver::start(vec![]);
    setup(
        &service,
        &receiver.url,
        json!([{"effect": "allow", "resources": ["proj/*:env/*:flag/*"]}]),
    );
    let caller = service
        .authentication()
        .authenticate(OWNER)
        .unwrap()
        .for_request("0123456789abcdef0123456789abcdef");
    turn_on_as(&service, &caller, "production");
    turn_on(&service, "test");
    drain(&service, 3);
    let got = receiver.received();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(
        got[0].header("x-svc-request-id"),
        Some("0123456789abcdef0123456789abcdef")
    );
    assert_eq!(got[1].header("x-svc-request-id"), None);
}

storage_on_both_backends!(
    signed_deliveries_of_matching_changes_only,
    failed_deliveries_are_retried,
    deliveries_survive_a_restart,
    a_delivery_names_the_request_that_queued_it
);

mod http {
    use super::*;

    async fn webhook_crud(backend: Backend) {
        let app = spawn(backend).await;
        let created = app
            .post("/api/v2/webhooks", json!({"url": "https://hooks.example.com/in", "sign": true, "on": true, "name": "CI", "tags": ["b", "a"],
                "statements": [{"effect": "allow", "resources": ["proj/*:env/production:flag/*"], "actions": ["updateOn"]}]}))
            .await;
        assert_eq!(created.status, 200, "{}", created.body);
        let id = created.body["_id"].as_str().unwrap().to_owned();
        assert_eq!(
            created.body["secret"].as_str().unwrap().len(),
            32,
            "a generated secret"
        );
        assert_eq!(created.body["tags"], json!(["a", "b"]));
        assert_eq!(
            created.body["_links"]["self"]["href"],
            format!("/api/v2/webhooks/{id}")
        );
        assert_eq!(
            app.get("/api/v2/webhooks").await.body["items"][0]["_id"],
            id.as_str()
        );
        assert_eq!(
            app.get(&format!("/api/v2/webhooks/{id}")).await.body,
            created.body
        );
        let off = app
            .patch(
                &format!("/api/v2/webhooks/{id}"),
                json!([{"op": "replace", "path": "/on", "value": false}]),
            )
            .await;
        assert_eq!(off.body["on"], false);
        app.patch(
            &format!("/api/v2/webhooks/{id}"),
            json!([{"op": "replace", "path": "/url", "value": "ftp://x"}]),
        )
        .await
        .assert_error(422, "patch_failed");
        app.patch(
            &format!("/api/v2/webhooks/{id}"),
            json!([{"op": "replace", "path": "/_id", "value": "x"}]),
        )
        .await
        .assert_error(422, "patch_failed");
        assert_eq!(
            app.get(&format!("/api/v2/webhooks/{id}/deliveries"))
                .await
                .body["items"],
            json!([])
        );
        for bad in [
            json!({"url": "file:///etc/passwd", "sign": false, "on": true}),
            json!({"url": "https://x.io", "on": true}),
            json!({"url": "https://x.io", "sign": false, "on": true, "statements": [{"effect": "allow"}]}),
        ] {
            app.post("/api/v2/webhooks", bad)
                .await
                .assert_error(400, "invalid_request");
        }
        // Its statements are a role's: the same grammar, catalogue and bounds, the field named.
        for (statement, attribute) in [
            (
                json!({"effect": "allow", "resources": ["garbage:::"]}),
                "statements[0].resources[0]",
            ),
            (
                json!({"effect": "allow", "resources": []}),
                "statements[0].resources",
            ),
            (
                json!({"effect": "allow", "resources": ["proj/*"], "actions": ["notAnAction"]}),
                "statements[0].actions[0]",
            ),
            (
                json!({"effect": "allow", "resources": [format!("proj/{}", "*a".repeat(9))]}),
                "statements[0].resources[0]",
            ),
            (
                json!({"effect": "allow", "resources": [format!("proj/{}", "a".repeat(600))]}),
                "statements[0].resources[0]",
            ),
        ] {
            let hook = json!({"url": "https://x.io", "sign": false, "on": true, "statements": [statement]});
            let refused = app.post("/api/v2/webhooks", hook).await;
            refused.assert_error(400, "invalid_request");
            assert!(
                refused.body["errors"]
                    .as_array()
                    .is_some_and(|errors| errors.iter().any(|e| e["attribute"] == attribute)),
                "{attribute}: {}",
                refused.body
            );
        }
        // As large as a custom role at most (each change is matched against every webhook's).
        let large: Vec<Value> = (0..50)
            .map(|s| {
                let resources: Vec<String> = (0..50)
                    .map(|i| format!("proj/project-{s}-{i}:env/*:flag/*"))
                    .collect();
                json!({"effect": "allow", "resources": resources})
            })
            .collect();
        let hook = json!({"url": "https://x.io", "sign": false, "on": true, "statements": large});
        let refused = app.post("/api/v2/webhooks", hook).await;
        refused.assert_error(400, "invalid_request");
        assert_eq!(
            refused.body["errors"][0]["attribute"], "statements",
            "{}",
            refused.body
        );
        // Its creation is audited, its secret masked.
        let audit = app.get("/api/v2/auditlog?spec=webhook/*").await.body;
        let entry = app
            .get(&format!(
                "/api/v2/auditlog/{}",
                audit["items"][1]["_id"].as_str().unwrap()
            ))
            .await
            .body;
        assert_eq!(
            entry["currentVersion"]["secret"]
                .as_str()
                .unwrap()
                .matches('*')
                .count(),
            4
        );
        assert_eq!(
            app.delete(&format!("/api/v2/webhooks/{id}")).await.status,
            204
        );
        app.get(&format!("/api/v2/webhooks/{id}"))
            .await
            .assert_error(404, "not_found");
        app.get(&format!("/api/v2/webhooks/{id}/deliveries"))
            .await
            .assert_error(404, "not_found");
    }

    on_both_backends!(webhook_crud);
}

fn allowed_hosts_are_enforced(backend: Backend) {
    let db = open(backend);
    let settings = WebhookSettings {
        allowed_hosts: Some(vec!["hooks.example.com".into()]),
        ..Default::default()
    };
    let service = Service::new(
        db.store.clone(),
        Arc::new(SystemClock::default()),
        Arc::new(adapter_http::ApiRepresentations),
    )
    .with_webhook_settings(settings);
    service
        .authentication()
        .bootstrap(Some(OWNER), "owner@example.com")
        .unwrap();
    let caller = service.authentication().authenticate(OWNER).unwrap();
    let permit = caller.may(use_case::CreateWebhook).unwrap();
    let post = |url: &str| WebhookPost {
        url: url.into(),
        on: true,
        ..Default::default()
    };
    assert!(service
        .webhooks()
        .create_webhook(&permit, post("https://hooks.example.com/x"))
        .is_ok());
    let refused = service
        .webhooks()
        .create_webhook(&permit, post("http://127.0.0.1:9/x"))
        .unwrap_err();
    assert!(refused.to_string().contains("127.0.0.1"), "{refused}");
}

mod hosts {
    use super::*;
    storage_on_both_backends!(allowed_hosts_are_enforced);
}
