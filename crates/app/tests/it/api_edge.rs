//! The HTTP edge through the app: the order of checks (route, authentication, version header,
//! permission), methods the document does not declare, CORS, and capped page sizes.

use actix_web::http::Method;
use adapter_http::{CorsOrigins, HttpConfig};
use serde_json::json;

use crate::common::{request, spawn, spawn_with, Backend, OWNER};

const BAD_VERSIONS: [&str; 5] = ["", "2019", "BETA", "20240415x", "2024 0415"];

/// Authentication comes before the version header, the version header before the permission.
async fn authentication_before_the_version_header(backend: Backend) {
    // Many failed authentications follow: the address must not be throttled.
    let app = spawn_with(
        backend,
        HttpConfig {
            rate_limit: 0,
            auth_failure_limit: 0,
            ..HttpConfig::default()
        },
    )
    .await;
    app.project("web").await;
    let reader = app.token("reader").await;
    let routes = [
        (Method::GET, "/api/v2/projects"),
        (Method::GET, "/api/v2/versions"),
        (Method::GET, "/api/v2/projects/web"),
        (Method::POST, "/api/v2/projects"),
        (Method::PATCH, "/api/v2/projects/web"),
        (Method::DELETE, "/api/v2/projects/web"),
        (Method::GET, "/api/v2/flags/web/nope"),
    ];
    for (method, path) in &routes {
        for version in BAD_VERSIONS {
            let with = |token: Option<&str>| {
                request(method.clone(), path, token)
                    .insert_header(("Svc-API-Version", version))
                    .insert_header(("Content-Type", "application/json"))
                    .set_payload("[]")
            };
            // No token, or one that is not a token: 401 whatever the version says.
            app.send(with(None)).await.assert_error(401, "unauthorized");
            app.send(with(Some("api-not-a-token")))
                .await
                .assert_error(401, "unauthorized");
            // A valid token: the version is checked, before the role (a reader's write: 400).
            for token in [OWNER, reader.as_str()] {
                let bad = app.send(with(Some(token))).await;
                bad.assert_error(400, "invalid_request");
                assert!(
                    bad.body["message"]
                        .as_str()
                        .unwrap()
                        .contains("Svc-API-Version"),
                    "{method} {path} {version:?}: {}",
                    bad.body
                );
            }
        }
    }
    // With a valid version the role is checked: a reader may not write.
    app.send(
        request(Method::DELETE, "/api/v2/projects/web", Some(&reader))
            .insert_header(("Svc-API-Version", "20240415")),
    )
    .await
    .assert_error(403, "forbidden");
    assert_eq!(app.get("/api/v2/projects/web").await.status, 200);

    // Public routes need no token but still check the header.
    for path in ["/api/v2", "/api/v2/openapi.json"] {
        for version in BAD_VERSIONS {
            app.send(request(Method::GET, path, None).insert_header(("Svc-API-Version", version)))
                .await
                .assert_error(400, "invalid_request");
        }
        let ok = app
            .send(request(Method::GET, path, None).insert_header(("Svc-API-Version", "beta")))
            .await;
        assert_eq!(ok.status, 200);
        assert_eq!(ok.header("svc-api-version"), Some("beta"));
    }
    // Whitespace around the value is no part of it.
    let spaced = app
        .send(
            request(Method::GET, "/api/v2/versions", Some(OWNER))
                .insert_header(("Svc-API-Version", " 20220603 ")),
        )
        .await;
    assert_eq!(spaced.status, 200);
    assert_eq!(spaced.body["currentVersion"], 20220603);
    assert_eq!(spaced.header("svc-api-version"), Some("20220603"));
}

/// Methods the document does not list for a path: 405 with `Allow`, before authentication.
async fn undeclared_methods_are_405(backend: Backend) {
    let app = spawn(backend).await;
    app.project("web").await;
    let methods = [
        Method::TRACE,
        Method::CONNECT,
        Method::PUT,
        Method::HEAD,
        Method::OPTIONS,
        Method::from_bytes(b"FOO").unwrap(),
    ];
    let paths = [
        ("/api/v2", "GET"),
        ("/api/v2/openapi.json", "GET"),
        ("/api/v2/projects", "GET, POST"),
        ("/api/v2/projects/web", "GET, PATCH, DELETE"),
        (
            "/api/v2/projects/nope/environments/test",
            "GET, PATCH, DELETE",
        ),
        ("/api/v2/tokens/abc/reset", "POST"),
    ];
    for (path, allow) in paths {
        for method in &methods {
            for token in [None, Some(OWNER)] {
                let resp = app
                    .send(
                        request(method.clone(), path, token)
                            .insert_header(("Svc-API-Version", "not-a-version")),
                    )
                    .await;
                if *method == Method::HEAD {
                    // A HEAD answer has no body; the status and `Allow` are those of the others.
                    assert_eq!(resp.status, 405, "HEAD {path}");
                } else {
                    resp.assert_error(405, "method_not_allowed");
                    let message = resp.body["message"].as_str().unwrap();
                    assert!(message.contains(method.as_str()), "{message}");
                }
                assert_eq!(resp.header("allow"), Some(allow), "{method} {path}");
            }
        }
    }
    // A path that does not exist is a 404 whatever the method.
    for method in &methods[..3] {
        app.send(request(method.clone(), "/api/v2/nothing", None))
            .await
            .assert_error(404, "not_found");
    }
    // Nothing was changed on the way.
    assert_eq!(app.get("/api/v2/projects").await.body["totalCount"], 1);
}

fn cors_config(origins: &str, rate_limit: u32, body_limit: usize) -> HttpConfig {
    HttpConfig {
        rate_limit,
        body_limit,
        cors_origins: CorsOrigins::parse([origins]).unwrap(),
        ..HttpConfig::default()
    }
}

const APP_ORIGIN: &str = "https://app.example.com";

fn preflight(path: &str, origin: &str) -> actix_web::test::TestRequest {
    request(Method::OPTIONS, path, None)
        .insert_header(("Origin", origin.to_owned()))
        .insert_header(("Access-Control-Request-Method", "PATCH"))
        .insert_header((
            "Access-Control-Request-Headers",
            "authorization, content-type, svc-api-version",
        ))
}

async fn cors_preflights(backend: Backend) {
    let app = spawn_with(backend, cors_config(APP_ORIGIN, 0, 1024)).await;
    for path in ["/api/v2/projects/web", "/api/v2", "/api/v2/nothing"] {
        let ok = app.send(preflight(path, APP_ORIGIN)).await;
        assert_eq!(ok.status, 204, "{path}: {}", ok.body);
        assert_eq!(ok.body, serde_json::Value::Null);
        assert_eq!(ok.header("access-control-allow-origin"), Some(APP_ORIGIN));
        assert_eq!(
            ok.header("access-control-allow-methods"),
            Some("GET, POST, PATCH, DELETE")
        );
        let allowed = ok.header("access-control-allow-headers").unwrap();
        for name in ["Authorization", "Content-Type", "Svc-API-Version", "Accept"] {
            assert!(allowed.contains(name), "{allowed}");
        }
        assert_eq!(ok.header("access-control-max-age"), Some("300"));
        assert_eq!(ok.header("vary"), Some("Origin"));
        assert_eq!(ok.header("access-control-allow-credentials"), None);
    }
    // The origin is matched without regard to letter case, and echoed as sent.
    let upper = app
        .send(preflight("/api/v2/projects", "HTTPS://APP.EXAMPLE.COM"))
        .await;
    assert_eq!(upper.status, 204);
    assert_eq!(
        upper.header("access-control-allow-origin"),
        Some("HTTPS://APP.EXAMPLE.COM")
    );
    // Another origin: 403 without CORS headers.
    for origin in ["https://evil.example", "http://app.example.com", "null"] {
        let refused = app.send(preflight("/api/v2/projects", origin)).await;
        refused.assert_error(403, "forbidden");
        assert!(refused.body["message"].as_str().unwrap().contains(origin));
        assert_eq!(refused.header("access-control-allow-origin"), None);
        assert_eq!(refused.header("access-control-allow-methods"), None);
        assert_eq!(refused.header("vary"), Some("Origin"));
    }
    // An OPTIONS that is no preflight (no Access-Control-Request-Method) is a 405.
    let plain = app
        .send(
            request(Method::OPTIONS, "/api/v2/projects", None)
                .insert_header(("Origin", APP_ORIGIN)),
        )
        .await;
    plain.assert_error(405, "method_not_allowed");
    assert_eq!(plain.header("allow"), Some("GET, POST"));
    assert_eq!(
        plain.header("access-control-allow-origin"),
        Some(APP_ORIGIN)
    );

    // Without --cors-origins every preflight is refused and no response has CORS headers.
    let closed = spawn(backend).await;
    closed
        .send(preflight("/api/v2/projects", APP_ORIGIN))
        .await
        .assert_error(403, "forbidden");
    let get = closed
        .send(
            request(Method::GET, "/api/v2/projects", Some(OWNER))
                .insert_header(("Origin", APP_ORIGIN)),
        )
        .await;
    assert_eq!(get.status, 200);
    assert_eq!(get.header("access-control-allow-origin"), None);
    assert_eq!(get.header("vary"), None);

    // `*`: any origin, echoed.
    let open = spawn_with(backend, cors_config("*", 0, 1024)).await;
    let any = open
        .send(preflight("/api/v2/flags/p", "http://localhost:3000"))
        .await;
    assert_eq!(any.status, 204);
    assert_eq!(
        any.header("access-control-allow-origin"),
        Some("http://localhost:3000")
    );
}

/// The CORS headers of an answer (`what`) to [`APP_ORIGIN`]: the origin allowed, the headers a
/// page may read exposed, `Vary: Origin`, and no credentials.
fn assert_cors_headers(resp: &crate::common::Resp, what: &str) {
    assert_eq!(
        resp.header("access-control-allow-origin"),
        Some(APP_ORIGIN),
        "{what}"
    );
    let exposed = resp.header("access-control-expose-headers").unwrap();
    for name in [
        "X-Ratelimit-Route-Remaining",
        "X-Ratelimit-Global-Remaining",
        "X-Ratelimit-Reset",
        "Retry-After",
        "Svc-API-Version",
        "X-Request-Id",
    ] {
        assert!(exposed.contains(name), "{what}: {exposed}");
    }
    assert_eq!(resp.header("vary"), Some("Origin"), "{what}");
    assert_eq!(resp.header("access-control-allow-credentials"), None);
}

/// Every answer to an allowed origin carries the CORS headers, errors included.
async fn cors_headers_on_every_answer(backend: Backend) {
    let app = spawn_with(backend, cors_config(APP_ORIGIN, 2, 64)).await;
    let from = |method: Method, path: &str, token: Option<&str>, origin: &str| {
        request(method, path, token).insert_header(("Origin", origin.to_owned()))
    };
    let ok = app
        .send(from(
            Method::GET,
            "/api/v2/projects",
            Some(OWNER),
            APP_ORIGIN,
        ))
        .await;
    assert_eq!(ok.status, 200);
    assert!(ok.header("x-ratelimit-route-remaining").is_some());
    assert_cors_headers(&ok, "200");
    let root = app
        .send(from(Method::GET, "/api/v2", None, APP_ORIGIN))
        .await;
    assert_eq!(root.status, 200);
    assert_cors_headers(&root, "public 200");

    let unauthorized = app
        .send(from(Method::GET, "/api/v2/projects", None, APP_ORIGIN))
        .await;
    unauthorized.assert_error(401, "unauthorized");
    assert_cors_headers(&unauthorized, "401");
    let missing = app
        .send(from(
            Method::GET,
            "/api/v2/nothing",
            Some(OWNER),
            APP_ORIGIN,
        ))
        .await;
    missing.assert_error(404, "not_found");
    assert_cors_headers(&missing, "404");
    let not_allowed = app
        .send(from(
            Method::TRACE,
            "/api/v2/projects",
            Some(OWNER),
            APP_ORIGIN,
        ))
        .await;
    not_allowed.assert_error(405, "method_not_allowed");
    assert_cors_headers(&not_allowed, "405");
    let bad_version = app
        .send(
            from(Method::GET, "/api/v2/versions", Some(OWNER), APP_ORIGIN)
                .insert_header(("Svc-API-Version", "1999")),
        )
        .await;
    bad_version.assert_error(400, "invalid_request");
    assert_cors_headers(&bad_version, "400");
    let too_large = app
        .send(
            from(Method::POST, "/api/v2/tokens", Some(OWNER), APP_ORIGIN)
                .insert_header(("Content-Type", "application/json"))
                .set_payload(json!({"name": "x".repeat(100)}).to_string()),
        )
        .await;
    too_large.assert_error(413, "payload_too_large");
    assert_cors_headers(&too_large, "413");
    // The rate limit of GET /projects is 2 per window: the third is refused.
    let second = app
        .send(from(
            Method::GET,
            "/api/v2/projects",
            Some(OWNER),
            APP_ORIGIN,
        ))
        .await;
    assert_eq!(second.status, 200);
    let limited = app
        .send(from(
            Method::GET,
            "/api/v2/projects",
            Some(OWNER),
            APP_ORIGIN,
        ))
        .await;
    limited.assert_error(429, "rate_limited");
    assert!(limited.header("retry-after").is_some());
    assert_cors_headers(&limited, "429");

    // Another origin gets the answer without CORS headers (the browser keeps it from the page).
    let other = app
        .send(from(Method::GET, "/api/v2", None, "https://evil.example"))
        .await;
    assert_eq!(other.status, 200);
    assert_eq!(other.header("access-control-allow-origin"), None);
    assert_eq!(other.header("access-control-expose-headers"), None);
    assert_eq!(other.header("vary"), Some("Origin"));
    // And so does a request without `Origin`.
    let plain = app.send(request(Method::GET, "/api/v2", None)).await;
    assert_eq!(plain.header("access-control-allow-origin"), None);
}

/// `limit` above 100 is served as 100 (links included); 0, negative and non-integers are 400.
async fn large_limits_are_capped(backend: Backend) {
    let app = spawn(backend).await;
    for batch in 0..3 {
        let invites: Vec<_> = (0..if batch < 2 { 50 } else { 10 })
            .map(|i| json!({"email": format!("m{batch}-{i:02}@example.com")}))
            .collect();
        let invited = app.post("/api/v2/members", json!(invites)).await;
        assert_eq!(invited.status, 201, "{}", invited.body);
    }
    // Up to the int32 the document declares; past it, a 400 (as a negative limit is).
    app.get("/api/v2/members?limit=2147483648")
        .await
        .assert_error(400, "invalid_request");
    for limit in ["500", "101", "2147483647"] {
        let page = app.get(&format!("/api/v2/members?limit={limit}")).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(page.body["items"].as_array().unwrap().len(), 100);
        assert_eq!(page.body["totalCount"], 111);
        let links = &page.body["_links"];
        assert_eq!(links["self"]["href"], "/api/v2/members?limit=100&offset=0");
        assert_eq!(
            links["next"]["href"],
            "/api/v2/members?limit=100&offset=100"
        );
        assert_eq!(
            links["last"]["href"],
            "/api/v2/members?limit=100&offset=100"
        );
    }
    let rest = app.get("/api/v2/members?limit=500&offset=100").await;
    assert_eq!(rest.body["items"].as_array().unwrap().len(), 11);
    assert_eq!(
        rest.body["_links"]["prev"]["href"],
        "/api/v2/members?limit=100&offset=0"
    );
    assert_eq!(rest.body["_links"].get("next"), None);
    let exact = app.get("/api/v2/members?limit=100").await;
    assert_eq!(exact.body["items"].as_array().unwrap().len(), 100);
    // Other lists cap the same way.
    app.project("web").await;
    let projects = app.get("/api/v2/projects?limit=1000&sort=-name").await;
    assert_eq!(projects.status, 200);
    assert_eq!(
        projects.body["_links"]["self"]["href"],
        "/api/v2/projects?sort=-name&limit=100&offset=0"
    );
    for path in [
        "/api/v2/members",
        "/api/v2/projects",
        "/api/v2/tokens",
        "/api/v2/flags/web",
        "/api/v2/projects/web/environments",
        "/api/v2/segments/web/test",
    ] {
        for bad in [
            "limit=0",
            "limit=-1",
            "limit=1.5",
            "limit=ten",
            "limit=",
            "offset=-1",
            "offset=x",
        ] {
            let resp = app.get(&format!("{path}?{bad}")).await;
            resp.assert_error(400, "invalid_request");
        }
        assert_eq!(
            app.get(&format!("{path}?limit=101")).await.status,
            200,
            "{path}"
        );
    }
    // The audit log keeps its documented 1..20.
    assert_eq!(app.get("/api/v2/auditlog?limit=20").await.status, 200);
    for bad in ["limit=21", "limit=0"] {
        app.get(&format!("/api/v2/auditlog?{bad}"))
            .await
            .assert_error(400, "invalid_request");
    }
    // `expand` takes `environments` only.
    assert_eq!(
        app.get("/api/v2/projects/web?expand=environments")
            .await
            .status,
        200
    );
    app.get("/api/v2/projects?expand=flags")
        .await
        .assert_error(400, "invalid_request");
}

on_both_backends!(
    authentication_before_the_version_header,
    undeclared_methods_are_405,
    cors_preflights,
    cors_headers_on_every_answer,
    large_limits_are_capped
);
