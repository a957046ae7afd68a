use actix_web::http::Method;
use serde_json::json;

use adapter_http::HttpConfig;

use crate::common::{request, spawn, spawn_with, Backend, OWNER};

async fn requests_need_a_valid_token(backend: Backend) {
    let app = spawn(backend).await;
    app.send(request(Method::GET, "/api/v2/projects", None))
        .await
        .assert_error(401, "unauthorized");
    app.send(request(
        Method::GET,
        "/api/v2/projects",
        Some("api-00000000-0000-4000-8000-000000000000"),
    ))
    .await
    .assert_error(401, "unauthorized");
    app.send(
        request(Method::POST, "/api/v2/projects", None).set_json(json!({"key": "x", "name": "X"})),
    )
    .await
    .assert_error(401, "unauthorized");
    assert_eq!(
        app.get("/api/v2/projects").await.body["totalCount"],
        0,
        "nothing was created"
    );
    let bearer = app
        .send(request(
            Method::GET,
            "/api/v2/projects",
            Some(&format!("Bearer {OWNER}")),
        ))
        .await;
    assert_eq!(bearer.status, 200);
}

async fn environment_keys_are_not_access_tokens(backend: Backend) {
    let app = spawn(backend).await;
    let project = app.project("web").await;
    let env = &project["environments"][0];
    for (key, kind) in [
        ("apiKey", "SDK key"),
        ("mobileKey", "mobile key"),
        ("_id", "client-side ID"),
    ] {
        let secret = env[key].as_str().unwrap();
        let resp = app.get_as(secret, "/api/v2/projects").await;
        resp.assert_error(401, "unauthorized");
        let message = resp.body["message"].as_str().unwrap();
        assert!(message.contains(kind), "{key}: {message}");
    }
}

async fn roles_limit_what_tokens_do(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    app.flag("web", "f").await;
    let reader = app.token("reader").await;
    let writer = app.token("writer").await;

    // Readers read and write nothing.
    assert_eq!(
        app.get_as(&reader, "/api/v2/projects/web").await.status,
        200
    );
    assert_eq!(app.get_as(&reader, "/api/v2/flags/web/f").await.status, 200);
    app.post_as(
        &reader,
        "/api/v2/projects",
        json!({"key": "r", "name": "R"}),
    )
    .await
    .assert_error(403, "forbidden");
    app.post_as(
        &reader,
        "/api/v2/flags/web",
        json!({"key": "g", "name": "G"}),
    )
    .await
    .assert_error(403, "forbidden");
    app.patch_as(
        &reader,
        "/api/v2/flags/web/f",
        json!([{"op": "replace", "path": "/environments/test/on", "value": true}]),
    )
    .await
    .assert_error(403, "forbidden");
    app.delete_as(&reader, "/api/v2/projects/web")
        .await
        .assert_error(403, "forbidden");
    app.post_as(
        &reader,
        "/api/v2/projects/web/environments",
        json!({"key": "e", "name": "E", "color": "000000"}),
    )
    .await
    .assert_error(403, "forbidden");
    app.get_as(&reader, "/api/v2/tokens")
        .await
        .assert_error(403, "forbidden");
    assert_eq!(
        app.get("/api/v2/flags/web/f").await.body["environments"]["test"]["on"],
        false
    );

    // Writers change projects, environments and flags, but not tokens.
    assert_eq!(
        app.post_as(
            &writer,
            "/api/v2/projects",
            json!({"key": "w", "name": "W"})
        )
        .await
        .status,
        201
    );
    assert_eq!(
        app.patch_as(
            &writer,
            "/api/v2/flags/web/f",
            json!([{"op": "replace", "path": "/environments/test/on", "value": true}])
        )
        .await
        .status,
        200
    );
    app.post_as(&writer, "/api/v2/tokens", json!({"role": "reader"}))
        .await
        .assert_error(403, "forbidden");
    app.get_as(&writer, "/api/v2/tokens")
        .await
        .assert_error(403, "forbidden");
}

const WRONG: &str = "api-00000000-0000-4000-8000-000000000000";

fn from(addr: &str, token: Option<&str>) -> actix_web::test::TestRequest {
    request(Method::GET, "/api/v2/projects", token).peer_addr(addr.parse().unwrap())
}

async fn failed_authentications_are_throttled_per_address(backend: Backend) {
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            auth_failure_limit: 3,
            ..HttpConfig::default()
        },
    )
    .await;
    let attacker = "203.0.113.7:40000";
    // The owner's token is verified (and cached) before the address fails.
    assert_eq!(app.send(from(attacker, Some(OWNER))).await.status, 200);
    let fresh = app.token("reader").await;
    for _ in 0..3 {
        app.send(from(attacker, Some(WRONG)))
            .await
            .assert_error(401, "unauthorized");
    }
    // The fourth failure in the window is not even looked up.
    let limited = app.send(from(attacker, Some(WRONG))).await;
    limited.assert_error(429, "rate_limited");
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "Retry-After {retry}");
    let message = limited.body["message"].as_str().unwrap();
    assert!(message.contains("3 failed authentications"), "{message}");
    // Environment keys and secrets of no token, from another port of the same host, wait too...
    app.send(from("203.0.113.7:40001", Some("sdk-whatever")))
        .await
        .assert_error(429, "rate_limited");
    app.send(from("203.0.113.7:40001", Some("not-a-generated-secret")))
        .await
        .assert_error(429, "rate_limited");
    // ...but a valid token is not refused for others' failures from its address (issue 32,
    // item 10), even one this replica has not verified yet; a verified token is never slowed
    // down, and other addresses have their own count.
    assert_eq!(app.send(from(attacker, Some(&fresh))).await.status, 200);
    // A token created since is known at once, without waiting for a reading of the secrets.
    let newer = app.token("reader").await;
    assert_eq!(app.send(from(attacker, Some(&newer))).await.status, 200);
    app.send(from(attacker, Some(WRONG)))
        .await
        .assert_error(429, "rate_limited");
    assert_eq!(app.send(from(attacker, Some(OWNER))).await.status, 200);
    assert_eq!(
        app.send(from("198.51.100.1:40000", Some(&fresh)))
            .await
            .status,
        200
    );
    app.send(from("198.51.100.2:40000", Some(WRONG)))
        .await
        .assert_error(401, "unauthorized");
    // IPv6 clients count per /64 network.
    for host in [
        "[2001:db8:0:1::1]",
        "[2001:db8:0:1::2]",
        "[2001:db8:0:1::3]",
    ] {
        app.send(from(&format!("{host}:1"), Some(WRONG)))
            .await
            .assert_error(401, "unauthorized");
    }
    app.send(from("[2001:db8:0:1::ffff]:1", Some(WRONG)))
        .await
        .assert_error(429, "rate_limited");
    app.send(from("[2001:db8:0:2::1]:1", Some(WRONG)))
        .await
        .assert_error(401, "unauthorized");
}

async fn forwarded_for_counts_only_when_trusted(backend: Backend) {
    let proxy = "10.0.0.1:5000";
    let behind = |client: &str| {
        from(proxy, Some(WRONG)).insert_header((
            "X-Forwarded-For",
            format!("{client}, 192.0.2.{}", client.len()),
        ))
    };
    // Not trusted: every client behind the proxy is the proxy.
    let app = spawn_with(
        backend,
        HttpConfig {
            auth_failure_limit: 2,
            ..HttpConfig::default()
        },
    )
    .await;
    for client in ["a", "bb"] {
        app.send(behind(client))
            .await
            .assert_error(401, "unauthorized");
    }
    app.send(behind("ccc"))
        .await
        .assert_error(429, "rate_limited");
    // Trusted: the address the proxy appended counts.
    let app = spawn_with(
        backend,
        HttpConfig {
            auth_failure_limit: 2,
            trust_forwarded_for: true,
            ..HttpConfig::default()
        },
    )
    .await;
    for client in ["a", "bb", "ccc", "a", "bb"] {
        app.send(behind(client))
            .await
            .assert_error(401, "unauthorized");
    }
    app.send(behind("x"))
        .await
        .assert_error(429, "rate_limited");
}

async fn throttling_can_be_turned_off(backend: Backend) {
    let app = spawn_with(
        backend,
        HttpConfig {
            auth_failure_limit: 0,
            ..HttpConfig::default()
        },
    )
    .await;
    for _ in 0..30 {
        app.send(from("203.0.113.9:1", Some(WRONG)))
            .await
            .assert_error(401, "unauthorized");
    }
}

on_both_backends!(
    requests_need_a_valid_token,
    environment_keys_are_not_access_tokens,
    roles_limit_what_tokens_do,
    failed_authentications_are_throttled_per_address,
    forwarded_for_counts_only_when_trusted,
    throttling_can_be_turned_off
);
