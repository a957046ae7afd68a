//! Where webhooks may point: private, loopback, link-local and other non-public targets are
//! refused at creation, at update and again at delivery (DNS may change); the deliveries list
//! does not tell one kind of connection failure from another.

use std::collections::HashMap;
use std::io::Read;
use std::net::{IpAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapter_webhooks::HttpSender;
use domain::patch::JsonPatchBody;
use domain::webhook::{RetryPolicy, WebhookPost};
use ports::HostResolver;
use serde_json::{json, Value};
use service::{use_case, Service, ServiceError, SystemClock, WebhookSettings};

use crate::common::{open, spawn, Backend, OWNER};
use crate::webhooks::{setup, turn_on, Receiver};

/// URLs whose host is, or is written as, a non-public address or a local name.
const NON_PUBLIC: &[&str] = &[
    // Loopback, in every spelling the URL standard reads as 127.0.0.1.
    "http://127.0.0.1/hook",
    "http://127.0.0.1:8080/hook",
    "http://127.1/",
    "http://2130706433/",
    "http://0x7f000001/",
    "http://0x7f.0.0.1/",
    "http://017700000001/",
    "http://0177.0.0.1/",
    "http://127.0.0.%31/",
    "http://[::1]/",
    "http://[0:0:0:0:0:0:0:1]:8080/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::127.0.0.1]/",
    "http://[64:ff9b::127.0.0.1]/",
    "http://[2002:7f00:1::1]/",
    "http://localhost/",
    "http://LOCALHOST.:8080/",
    "http://api.localhost/",
    // Unspecified.
    "http://0.0.0.0/",
    "http://0/",
    "http://[::]/",
    // Link-local and cloud metadata.
    "http://169.254.169.254/latest/meta-data/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[fe80::1]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://metadata/",
    "http://instance-data/",
    "http://metadata.goog/",
    "http://100.100.100.200/",
    "http://192.0.0.192/",
    // Private, unique-local, shared (CGNAT).
    "http://10.0.0.1/",
    "http://10.255.255.255/",
    "http://172.16.0.1/",
    "http://172.31.255.1/",
    "http://192.168.1.1/",
    "http://[fd00::1]/",
    "http://[fc00::1]/",
    "http://100.64.0.1/",
    // Broadcast, multicast, documentation, benchmarking, reserved.
    "http://255.255.255.255/",
    "http://224.0.0.1/",
    "http://[ff02::1]/",
    "http://[ff0e::1]/",
    "http://192.0.2.1/",
    "http://198.51.100.1/",
    "http://203.0.113.1/",
    "http://[2001:db8::1]/",
    "http://198.18.0.1/",
    "http://240.0.0.1/",
    // Names that only mean something on a local network.
    "http://printer.local/",
    "http://db.internal/",
    "http://router.home.arpa/",
    "http://intranet/",
];

/// URLs the check and an HTTP client could read differently; refused whatever the host.
const AMBIGUOUS: &[&str] = &[
    "http://127.0.0.1:1\\@hooks.example.com:2/",
    "http://hooks.example.com\\@127.0.0.1/",
    "http://user:pass@hooks.example.com/",
    "http://user@hooks.example.com/",
    "http://hooks.example.com\t/",
];

fn refusal_names_url(body: &Value, url: &str) {
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("url: "),
        "{url}: the message names the field: {body}"
    );
}

mod http {
    use super::*;

    async fn non_public_targets_are_refused(backend: Backend) {
        let app = spawn(backend).await;
        for url in NON_PUBLIC.iter().chain(AMBIGUOUS) {
            let refused = app
                .post(
                    "/api/v2/webhooks",
                    json!({"url": url, "sign": false, "on": true}),
                )
                .await;
            assert_eq!(refused.status, 400, "{url}: {}", refused.body);
            refused.assert_error(400, "invalid_request");
            refusal_names_url(&refused.body, url);
        }
        assert_eq!(app.get("/api/v2/webhooks").await.body["items"], json!([]));

        // Public hosts, by name or address, are accepted (a name that does not resolve yet too:
        // it is checked again at delivery).
        for url in [
            "https://hooks.example.com/in",
            "http://93.184.215.14:8080/x",
            "http://[2606:4700::6810:85e5]/x",
            "http://[::ffff:93.184.215.14]/x",
        ] {
            let created = app
                .post(
                    "/api/v2/webhooks",
                    json!({"url": url, "sign": false, "on": true}),
                )
                .await;
            assert_eq!(created.status, 200, "{url}: {}", created.body);
        }

        // An update to a non-public URL is refused and changes nothing.
        let hooks = app.get("/api/v2/webhooks").await.body;
        let id = hooks["items"][0]["_id"].as_str().unwrap().to_owned();
        let before = app.get(&format!("/api/v2/webhooks/{id}")).await.body;
        for url in NON_PUBLIC {
            let refused = app
                .patch(
                    &format!("/api/v2/webhooks/{id}"),
                    json!([{"op": "replace", "path": "/url", "value": url}]),
                )
                .await;
            assert_eq!(refused.status, 400, "{url}: {}", refused.body);
            refused.assert_error(400, "invalid_request");
            refusal_names_url(&refused.body, url);
        }
        for url in AMBIGUOUS {
            // Like any other malformed URL in a patch: the patch cannot be applied.
            let refused = app
                .patch(
                    &format!("/api/v2/webhooks/{id}"),
                    json!([{"op": "replace", "path": "/url", "value": url}]),
                )
                .await;
            refused.assert_error(422, "patch_failed");
            assert!(
                refused.body["message"].as_str().unwrap().contains("url: "),
                "{url}: {}",
                refused.body
            );
        }
        assert_eq!(
            app.get(&format!("/api/v2/webhooks/{id}")).await.body,
            before
        );
    }

    on_both_backends!(non_public_targets_are_refused);
}

fn the_allow_list_is_not_fooled(backend: Backend) {
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
    for url in [
        // An HTTP client reads the host as 127.0.0.1; a naive check reads hooks.example.com.
        "http://127.0.0.1:1\\@hooks.example.com:2/",
        "http://127.0.0.1:1\\@hooks.example.com/",
        "http://127.0.0.1#@hooks.example.com/",
        "http://127.0.0.1?@hooks.example.com/",
    ] {
        let refused = service.webhooks().create_webhook(&permit, post(url));
        assert!(refused.is_err(), "{url} was accepted");
    }
    assert!(service
        .webhooks()
        .list_webhooks(&caller.may(use_case::ListWebhooks).unwrap())
        .unwrap()
        .is_empty());
    assert!(service
        .webhooks()
        .create_webhook(&permit, post("https://hooks.example.com/x"))
        .is_ok());
}

/// A port nothing listens on: connecting is refused.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A listener that reads the request's first bytes and hangs up without answering.
fn hanging_up() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0; 16];
            let _ = stream.read(&mut buf);
        }
    });
    port
}

/// A listener that accepts and never answers: the sender times out.
fn silent() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = Arc::new(Mutex::new(Vec::new()));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            held.lock().unwrap().push(stream);
        }
    });
    port
}

fn delivery_errors_do_not_tell_refused_from_reset_or_timeout(backend: Backend) {
    let db = open(backend);
    let settings = WebhookSettings {
        allow_private_networks: true,
        retry: RetryPolicy {
            max_attempts: 1,
            ..Default::default()
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
    let permit = caller.may(use_case::CreateWebhook).unwrap();
    let mut ids = Vec::new();
    for port in [closed_port(), hanging_up(), silent()] {
        let post = WebhookPost {
            url: format!("http://127.0.0.1:{port}/hook"),
            on: true,
            statements: serde_json::from_value(
                json!([{"effect": "allow", "resources": ["proj/*:env/*:flag/*"]}]),
            )
            .unwrap(),
            ..Default::default()
        };
        ids.push(service.webhooks().create_webhook(&permit, post).unwrap().id);
    }
    turn_on(&service, "production");
    let sender = HttpSender::new(Duration::from_millis(300));
    service.webhooks().deliver_due(&sender, 20).unwrap();
    let errors: Vec<Option<String>> = ids
        .iter()
        .map(|id| {
            let attempts = service
                .webhooks()
                .webhook_deliveries(&caller.may(use_case::GetWebhook).unwrap(), id)
                .unwrap();
            assert_eq!(attempts.len(), 1, "{attempts:?}");
            assert_eq!(attempts[0].status_code, None);
            attempts[0].error.clone()
        })
        .collect();
    let generic = Some("connection failed".to_owned());
    assert_eq!(errors, [generic.clone(), generic.clone(), generic]);
}

storage_on_both_backends!(
    the_allow_list_is_not_fooled,
    delivery_errors_do_not_tell_refused_from_reset_or_timeout
);

/// DNS under the test's control: names answer what they were last set to; others do not resolve.
#[derive(Debug, Default)]
struct FakeDns(Mutex<HashMap<String, Vec<IpAddr>>>);

impl FakeDns {
    fn set(&self, name: &str, addresses: &[&str]) {
        let addresses = addresses.iter().map(|a| a.parse().unwrap()).collect();
        self.0.lock().unwrap().insert(name.to_owned(), addresses);
    }
}

impl HostResolver for FakeDns {
    fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        self.0
            .lock()
            .unwrap()
            .get(host)
            .cloned()
            .ok_or_else(|| format!("{host}: no such name"))
    }
}

fn service_with(db: &crate::common::Db, settings: WebhookSettings) -> Arc<Service> {
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

fn post(url: &str) -> WebhookPost {
    WebhookPost {
        url: url.into(),
        on: true,
        ..Default::default()
    }
}

fn set_url(url: &str) -> JsonPatchBody {
    JsonPatchBody::parse(json!([{"op": "replace", "path": "/url", "value": url}])).unwrap()
}

fn names_of_non_public_addresses_are_refused_at_creation_and_update(backend: Backend) {
    let db = open(backend);
    let dns = Arc::new(FakeDns::default());
    dns.set(
        "public.example.com",
        &["93.184.215.14", "2606:4700::6810:85e5"],
    );
    dns.set("private.example.com", &["10.0.0.5"]);
    dns.set("mixed.example.com", &["93.184.215.14", "127.0.0.1"]);
    dns.set("mapped.example.com", &["::ffff:169.254.169.254"]);
    dns.set("v6.example.com", &["fd12::1"]);
    let service = service_with(
        &db,
        WebhookSettings {
            resolver: Some(dns.clone()),
            ..Default::default()
        },
    );
    let caller = service.authentication().authenticate(OWNER).unwrap();
    let permit = caller.may(use_case::CreateWebhook).unwrap();
    for (name, why) in [
        ("private.example.com", "a private address"),
        ("mixed.example.com", "a loopback address"),
        ("mapped.example.com", "a link-local address"),
        ("v6.example.com", "a unique-local address"),
    ] {
        let err = service
            .webhooks()
            .create_webhook(&permit, post(&format!("https://{name}/in")))
            .unwrap_err();
        let ServiceError::Invalid { message, errors } = &err else {
            panic!("{name}: {err:?}")
        };
        assert!(
            message.starts_with(&format!("url: '{name}' resolves to {why}")),
            "{message}"
        );
        assert_eq!(errors[0].attribute, "url");
    }
    assert!(service
        .webhooks()
        .list_webhooks(&caller.may(use_case::ListWebhooks).unwrap())
        .unwrap()
        .is_empty());

    let hook = service
        .webhooks()
        .create_webhook(&permit, post("https://public.example.com/in"))
        .unwrap();
    // A name that does not resolve (yet) is accepted: each delivery resolves it again.
    service
        .webhooks()
        .create_webhook(&permit, post("https://later.example.com/in"))
        .unwrap();
    let err = service
        .webhooks()
        .patch_webhook(
            &caller.may(use_case::PatchWebhook).unwrap(),
            &hook.id,
            &set_url("https://private.example.com/in"),
        )
        .unwrap_err();
    assert!(matches!(err, ServiceError::Invalid { .. }), "{err:?}");
    assert_eq!(
        service
            .webhooks()
            .get_webhook(&caller.may(use_case::GetWebhook).unwrap(), &hook.id)
            .unwrap()
            .url,
        "https://public.example.com/in"
    );

    // With private networks allowed, the same names are accepted.
    let open_service = service_with(
        &db,
        WebhookSettings {
            resolver: Some(dns),
            allow_private_networks: true,
            ..Default::default()
        },
    );
    open_service
        .webhooks()
        .patch_webhook(
            &caller.may(use_case::PatchWebhook).unwrap(),
            &hook.id,
            &set_url("https://private.example.com/in"),
        )
        .unwrap();
}

fn a_name_that_resolves_to_loopback_at_delivery_is_refused(backend: Backend) {
    let db = open(backend);
    let receiver = Receiver::start(vec![]);
    let port = receiver
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let dns = Arc::new(FakeDns::default());
    // Public when the webhook is created...
    dns.set("hooks.rebind.example", &["93.184.215.14"]);
    let service = service_with(
        &db,
        WebhookSettings {
            resolver: Some(dns.clone()),
            retry: RetryPolicy {
                max_attempts: 1,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    setup(
        &service,
        &format!("http://hooks.rebind.example:{port}/hook"),
        json!([{"effect": "allow", "resources": ["proj/*:env/*:flag/*"]}]),
    );
    // ...loopback by the time it is delivered to.
    dns.set("hooks.rebind.example", &["127.0.0.1"]);
    turn_on(&service, "production");
    let sender = HttpSender::with_resolver(Duration::from_secs(5), dns.clone());
    assert_eq!(service.webhooks().deliver_due(&sender, 20).unwrap(), 1);
    assert!(receiver.received().is_empty(), "nothing reached 127.0.0.1");
    let caller = service.authentication().authenticate(OWNER).unwrap();
    let hook = &service
        .webhooks()
        .list_webhooks(&caller.may(use_case::ListWebhooks).unwrap())
        .unwrap()[0];
    let attempts = service
        .webhooks()
        .webhook_deliveries(&caller.may(use_case::GetWebhook).unwrap(), &hook.id)
        .unwrap();
    assert_eq!(attempts.len(), 1, "{attempts:?}");
    assert_eq!(attempts[0].status_code, None);
    assert_eq!(
        attempts[0].error.as_deref(),
        Some(
            "'hooks.rebind.example' resolves to a loopback address; webhooks reach only public \
             addresses unless the service is configured to allow private networks"
        )
    );
}

fn deliveries_connect_to_the_address_that_was_checked(backend: Backend) {
    let db = open(backend);
    let receiver = Receiver::start(vec![]);
    let port = receiver
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    // Only this resolver knows the name: the system's could not find it, so a delivery that
    // arrives went to the address the sender resolved and checked, and nowhere else.
    let dns = Arc::new(FakeDns::default());
    dns.set("receiver.example", &["127.0.0.1"]);
    let service = service_with(
        &db,
        WebhookSettings {
            // A listed host is trusted with a private address.
            allowed_hosts: Some(vec!["receiver.example".into()]),
            resolver: Some(dns.clone()),
            ..Default::default()
        },
    );
    setup(
        &service,
        &format!("http://receiver.example:{port}/hook"),
        json!([{"effect": "allow", "resources": ["proj/*:env/*:flag/*"]}]),
    );
    turn_on(&service, "production");
    let sender = HttpSender::with_resolver(Duration::from_secs(5), dns);
    service.webhooks().deliver_due(&sender, 20).unwrap();
    let got = receiver.received();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].header("host"),
        Some(format!("receiver.example:{port}").as_str())
    );
    // Not listed: refused, however it resolves.
    let caller = service.authentication().authenticate(OWNER).unwrap();
    let permit = caller.may(use_case::CreateWebhook).unwrap();
    assert!(service
        .webhooks()
        .create_webhook(&permit, post(&format!("http://127.0.0.1:{port}/hook")))
        .is_err());
}

mod dns {
    use super::*;
    storage_on_both_backends!(
        names_of_non_public_addresses_are_refused_at_creation_and_update,
        a_name_that_resolves_to_loopback_at_delivery_is_refused,
        deliveries_connect_to_the_address_that_was_checked
    );
}
