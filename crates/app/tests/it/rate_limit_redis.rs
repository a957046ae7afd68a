//! Rate limits shared by replicas through Redis (`--rate-limit-redis-url`): the limit holds
//! across replicas, and a Redis that is away, silent or back never fails a request.
//!
//! Redis comes from `FLAGSVC_TEST_REDIS_URL`, else 127.0.0.1:6379; a test that needs it says it
//! is skipped (on stderr) when none answers. Every test counts under a key prefix of its own.

use std::io::Write;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::Method;

use adapter_http::{HttpConfig, SharedRateLimits};
use adapter_redis::RedisRateLimits;

use crate::common::{open, replica, request, send, Backend, Resp, OWNER};

fn test_redis_url() -> String {
    std::env::var("FLAGSVC_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A key prefix no other test or run uses.
fn fresh_prefix() -> String {
    format!("flagsvc-test:{:016x}:", rand::random::<u64>())
}

/// The test Redis, under a prefix of this test's own; `None` (and the test says it is skipped,
/// and why) when none answers.
async fn test_redis(test: &str) -> Option<RedisRateLimits> {
    let url = test_redis_url();
    let redis = RedisRateLimits::new(&url)
        .expect("FLAGSVC_TEST_REDIS_URL is a Redis URL")
        .with_key_prefix(fresh_prefix())
        // Generous: a loaded test machine must not fall back to local counting by accident.
        .with_timeout(Duration::from_secs(2));
    match redis.ping(Duration::from_secs(1)).await {
        Ok(()) => Some(redis),
        Err(err) => {
            eprintln!(
                "SKIPPED {test}: it needs Redis, and none answers at {} ({}); start one there \
                 or point FLAGSVC_TEST_REDIS_URL at one",
                redis.address(),
                err.describe()
            );
            None
        }
    }
}

fn limited_to(rate_limit: u32, redis: Option<RedisRateLimits>) -> HttpConfig {
    HttpConfig {
        rate_limit,
        shared_rate_limits: redis.map(|redis| Arc::new(redis) as Arc<dyn SharedRateLimits>),
        ..HttpConfig::default()
    }
}

fn projects() -> actix_web::test::TestRequest {
    request(Method::GET, "/api/v2/projects", Some(OWNER))
}

fn count(resp: &Resp, header: &str) -> u32 {
    resp.header(header)
        .unwrap_or_else(|| panic!("{header} in {:?}", resp.headers))
        .parse()
        .unwrap()
}

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since.as_millis()).unwrap()
}

/// A 429 as the local limiter answers it: code, `Retry-After` of at least a second, the route
/// bucket empty, the reset ahead.
fn assert_limited(resp: &Resp) {
    resp.assert_error(429, "rate_limited");
    let retry_after: u64 = resp.header("retry-after").unwrap().parse().unwrap();
    assert!(retry_after >= 1, "Retry-After {retry_after}");
    assert_eq!(count(resp, "x-ratelimit-route-remaining"), 0);
    let reset: i64 = resp.header("x-ratelimit-reset").unwrap().parse().unwrap();
    assert!(reset >= now_ms() - 1_000, "reset {reset}");
}

/// Two replicas on one database and one Redis, 5 requests per 10 s per route (25 per token):
/// the requests, alternating between them, count down one budget; the sixth is refused
/// whichever replica it reaches.
#[actix_web::test]
async fn the_limit_holds_across_two_replicas() {
    let Some(redis) = test_redis("the_limit_holds_across_two_replicas").await else {
        return;
    };
    let db = open(Backend::Sqlite);
    let a = replica(db.store.clone(), limited_to(5, Some(redis.clone()))).await;
    let b = replica(db.store.clone(), limited_to(5, Some(redis))).await;
    let replicas = [&a, &b];
    let started = Instant::now();
    for (i, route_left) in [4, 3, 2, 1, 0].into_iter().enumerate() {
        let resp = send(replicas[i % 2], projects()).await;
        assert_eq!(resp.status, 200, "request {i}: {}", resp.body);
        assert_eq!(
            count(&resp, "x-ratelimit-route-remaining"),
            route_left,
            "request {i}, on replica {}",
            ["a", "b"][i % 2]
        );
        // The token's bucket (25) refills one request every 400 ms: what it says is what both
        // replicas took, give or take what came back meanwhile.
        let global = count(&resp, "x-ratelimit-global-remaining");
        let taken = u32::try_from(i + 1).unwrap();
        let refilled = u32::try_from(started.elapsed().as_millis() / 400).unwrap() + 1;
        assert!(
            global <= 25 - taken && global + refilled >= 25 - taken,
            "request {i}: {global} left of 25"
        );
        let reset: i64 = resp.header("x-ratelimit-reset").unwrap().parse().unwrap();
        assert!(reset > now_ms(), "reset {reset}");
    }
    // Past the limit on either replica (each has made at most 3 requests of its 5).
    for app in [&b, &a] {
        assert_limited(&send(app, projects()).await);
    }
    // Another route has its own bucket, in the token's shared one.
    let other = send(&a, request(Method::GET, "/api/v2/versions", Some(OWNER))).await;
    assert_eq!(other.status, 200, "{}", other.body);
    assert_eq!(count(&other, "x-ratelimit-route-remaining"), 4);
    assert!(count(&other, "x-ratelimit-global-remaining") < 25 - 5);
}

/// A Redis nobody listens at (127.0.0.1:1): requests are served, quickly, and limited by each
/// replica on its own, as without Redis.
#[actix_web::test]
async fn without_redis_each_replica_counts_on_its_own() {
    let unreachable = RedisRateLimits::new("redis://127.0.0.1:1")
        .unwrap()
        .with_key_prefix(fresh_prefix());
    let db = open(Backend::Sqlite);
    let a = replica(db.store.clone(), limited_to(3, Some(unreachable.clone()))).await;
    let b = replica(db.store.clone(), limited_to(3, Some(unreachable))).await;
    for app in [&a, &b] {
        for route_left in [2, 1, 0] {
            let asked = Instant::now();
            let resp = send(app, projects()).await;
            assert_eq!(resp.status, 200, "{}", resp.body);
            assert_eq!(count(&resp, "x-ratelimit-route-remaining"), route_left);
            assert!(resp.header("x-ratelimit-global-remaining").is_some());
            assert!(
                asked.elapsed() < Duration::from_secs(1),
                "a Redis that refuses connections must not hold requests: {:?}",
                asked.elapsed()
            );
        }
        assert_limited(&send(app, projects()).await);
    }
}

/// A "Redis" that accepts connections and never answers: the request that asks it waits the
/// timeout (100 ms) and is then counted locally; the next ones do not ask for a second.
#[actix_web::test]
async fn a_silent_redis_costs_a_request_at_most_its_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let held = Arc::new(Mutex::new(Vec::new()));
    let holding = held.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            holding.lock().unwrap().push(conn);
        }
    });
    let silent = RedisRateLimits::new(&format!("redis://{addr}"))
        .unwrap()
        .with_key_prefix(fresh_prefix());
    let app = replica(open(Backend::Sqlite).store, limited_to(3, Some(silent))).await;
    for route_left in [2, 1, 0] {
        let asked = Instant::now();
        let resp = send(&app, projects()).await;
        assert_eq!(resp.status, 200, "{}", resp.body);
        assert_eq!(count(&resp, "x-ratelimit-route-remaining"), route_left);
        assert!(
            asked.elapsed() < Duration::from_secs(1),
            "a silent Redis holds a request {:?}",
            asked.elapsed()
        );
    }
    assert_limited(&send(&app, projects()).await);
    assert!(
        !held.lock().unwrap().is_empty(),
        "the replica did try the silent Redis"
    );
}

/// A TCP proxy to the test Redis that drops every connection until it is `up`.
struct Proxy {
    addr: SocketAddr,
    up: Arc<AtomicBool>,
}

impl Proxy {
    fn to(redis: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(AtomicBool::new(false));
        let is_up = up.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if !is_up.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(redis) else {
                    continue;
                };
                let pairs = [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ];
                for (mut from, mut to) in pairs {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.flush();
                        let _ = to.shutdown(Shutdown::Write);
                    });
                }
            }
        });
        Self { addr, up }
    }
}

/// A replica that starts while Redis is away starts all the same (a warning), counts on its
/// own, and counts in Redis, with the other replicas, once Redis answers.
#[actix_web::test]
async fn a_replica_started_without_redis_counts_there_once_it_answers() {
    let Some(direct) =
        test_redis("a_replica_started_without_redis_counts_there_once_it_answers").await
    else {
        return;
    };
    let mut url = url::Url::parse(&test_redis_url()).unwrap();
    let Some(redis_addr) = url
        .host_str()
        .and_then(|host| (host, url.port().unwrap_or(6379)).to_socket_addrs().ok())
        .and_then(|mut addrs| addrs.next())
    else {
        eprintln!("SKIPPED: {url} is not a TCP address to put a proxy in front of");
        return;
    };
    let proxy = Proxy::to(redis_addr);
    url.set_host(Some("127.0.0.1")).unwrap();
    url.set_port(Some(proxy.addr.port())).unwrap();

    // Start-up: Redis does not answer, which is no reason not to start.
    let through_proxy = app::shared_rate_limits(Some(url.as_str()), 5)
        .await
        .expect("an unreachable Redis is no start-up error")
        .expect("shared limits all the same")
        .with_key_prefix(direct.key_prefix())
        .with_timeout(Duration::from_secs(2));
    let db = open(Backend::Sqlite);
    let a = replica(db.store.clone(), limited_to(5, Some(through_proxy))).await;
    let b = replica(db.store.clone(), limited_to(5, Some(direct))).await;

    // Redis away: replica a counts alone.
    let alone = send(&a, projects()).await;
    assert_eq!(alone.status, 200, "{}", alone.body);
    assert_eq!(count(&alone, "x-ratelimit-route-remaining"), 4);
    // Replica b takes four of the five in Redis.
    for route_left in [4, 3, 2, 1] {
        let resp = send(&b, projects()).await;
        assert_eq!(count(&resp, "x-ratelimit-route-remaining"), route_left);
    }

    // Redis back: once a second has passed, replica a asks it again, and counts with b (alone
    // it would have 3 left; in Redis 0, or 1 if a request came back meanwhile: one every 2 s).
    proxy.up.store(true, Ordering::SeqCst);
    actix_web::rt::time::sleep(Duration::from_millis(1_100)).await;
    let shared = send(&a, projects()).await;
    assert_eq!(shared.status, 200, "{}", shared.body);
    let left = count(&shared, "x-ratelimit-route-remaining");
    assert!(left <= 1, "replica a counts in Redis again: {left} left");
}

/// Start-up (`app::shared_rate_limits`): a malformed URL is an error that says what is wrong;
/// an unreachable Redis is not; without a URL, or with limiting off, nothing is shared.
#[actix_web::test]
async fn start_up_refuses_a_malformed_url_and_starts_without_redis() {
    for url in [
        "localhost:6379",
        "http://127.0.0.1:6379",
        "redis://127.0.0.1/db",
    ] {
        let err = app::shared_rate_limits(Some(url), 1000).await.unwrap_err();
        let message = format!("{err:#}");
        assert!(
            message
                .starts_with("reading --rate-limit-redis-url: not a Redis URL: expected redis://"),
            "{message}"
        );
    }
    let secret = app::shared_rate_limits(Some("redis://:hunter2@[::1/0"), 1000)
        .await
        .unwrap_err();
    assert!(!format!("{secret:#}").contains("hunter2"), "{secret:#}");

    let unreachable = app::shared_rate_limits(Some("redis://127.0.0.1:1/2"), 1000)
        .await
        .unwrap()
        .expect("shared limits, to use once Redis answers");
    assert_eq!(unreachable.address(), "127.0.0.1:1/2");
    assert_eq!(unreachable.key_prefix(), adapter_redis::DEFAULT_KEY_PREFIX);

    assert!(app::shared_rate_limits(None, 1000).await.unwrap().is_none());
    assert!(app::shared_rate_limits(Some("redis://127.0.0.1:1"), 0)
        .await
        .unwrap()
        .is_none());
}
