//! The HTTP edge against a real server on 127.0.0.1 and raw TCP clients: protocol errors, head
//! and body timeouts, all as JSON errors.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use adapter_http::{AppState, HttpConfig};
use serde_json::Value;

use crate::common::{bootstrapped, open, Backend, Db, OWNER};

/// A server listening on an ephemeral port of 127.0.0.1, stopped when dropped.
struct RealServer {
    addr: SocketAddr,
    handle: actix_web::dev::ServerHandle,
    _db: Db,
}

impl Drop for RealServer {
    fn drop(&mut self) {
        let stop = self.handle.stop(false);
        actix_web::rt::spawn(stop);
    }
}

async fn real_server(backend: Backend, config: HttpConfig) -> RealServer {
    let db = open(backend);
    let service = bootstrapped(&db);
    let state = AppState::new(service, config).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = adapter_http::server(listener, state, 1, 4, None).unwrap();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    RealServer {
        addr,
        handle,
        _db: db,
    }
}

/// A response read off the wire.
#[derive(Debug)]
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The JSON error envelope with `status` and `code`, the id matching `X-Request-Id`.
    fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(
            self.header("content-type"),
            Some("application/json"),
            "{self:?}"
        );
        assert_eq!(self.body["code"], code, "{self:?}");
        assert!(
            self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{self:?}"
        );
        let id = self.header("x-request-id").expect("x-request-id");
        assert_eq!(self.body["id"], id, "{self:?}");
    }
}

/// Parses one response (the connection's last) from everything the server sent.
fn parse(bytes: &[u8]) -> Raw {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head in {text:?}"));
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(body).unwrap_or_else(|_| panic!("not JSON: {text:?}"))
    };
    Raw {
        status,
        headers,
        body,
    }
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).unwrap();
    // Only a guard against a hanging test: every case below ends well before it.
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream
}

/// Reads until the server closes the connection; a read timeout fails the test (the server
/// neither answered nor closed).
fn read_to_close(stream: &mut TcpStream) -> Vec<u8> {
    let mut bytes = vec![];
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return bytes,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return bytes,
            Err(e) => panic!(
                "the server neither answered nor closed the connection: {e}; got {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
}

/// Reads one response (by its `content-length`) and leaves the connection open.
fn read_one(stream: &mut TcpStream) -> Vec<u8> {
    let mut bytes = vec![];
    let mut byte = [0u8; 1];
    while !bytes.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "closed in the head");
        bytes.push(byte[0]);
    }
    let length: usize = parse(&bytes)
        .header("content-length")
        .and_then(|l| l.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    bytes.extend(body);
    bytes
}

/// Sends `request` and returns everything the server sends until it closes the connection.
async fn exchange(addr: SocketAddr, request: Vec<u8>) -> Vec<u8> {
    actix_web::rt::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        stream.write_all(&request).unwrap();
        read_to_close(&mut stream)
    })
    .await
    .unwrap()
}

fn edge_config() -> HttpConfig {
    HttpConfig {
        rate_limit: 0,
        body_limit: 1024,
        head_timeout: Duration::from_millis(300),
        body_timeout: Duration::from_millis(300),
        ..HttpConfig::default()
    }
}

async fn protocol_errors_are_json(backend: Backend) {
    let server = real_server(backend, edge_config()).await;
    // A request line that is not HTTP.
    parse(&exchange(server.addr, b"GARBAGE\r\n\r\n".to_vec()).await)
        .assert_error(400, "invalid_request");
    // A header line without a colon.
    parse(
        &exchange(
            server.addr,
            b"GET /api/v2 HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n".to_vec(),
        )
        .await,
    )
    .assert_error(400, "invalid_request");
    // Too many headers.
    let mut many = b"GET /api/v2 HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..120 {
        many.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let too_many = parse(&exchange(server.addr, many).await);
    too_many.assert_error(431, "headers_too_large");
    // A head larger than the server buffers.
    let mut huge = b"GET /api/v2 HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 140_000));
    huge.extend_from_slice(b"\r\n\r\n");
    parse(&exchange(server.addr, huge).await).assert_error(431, "headers_too_large");
    // A declared body over the limit, refused before it is read.
    let big = format!(
        "POST /api/v2/projects HTTP/1.1\r\nHost: x\r\nAuthorization: {OWNER}\r\nContent-Type: application/json\r\nContent-Length: 10000000\r\n\r\n{{"
    );
    parse(&exchange(server.addr, big.into_bytes()).await).assert_error(413, "payload_too_large");
}

async fn a_slow_head_gets_408(backend: Backend) {
    let server = real_server(backend, edge_config()).await;
    // Half a request line, then nothing.
    let slow = parse(&exchange(server.addr, b"GET /api/v2/proj".to_vec()).await);
    slow.assert_error(408, "request_timeout");
    assert!(
        slow.body["message"].as_str().unwrap().contains("300 ms"),
        "{slow:?}"
    );
    // A connection that sends nothing at all.
    parse(&exchange(server.addr, vec![]).await).assert_error(408, "request_timeout");
    // The same for the second request of a kept-alive connection.
    let addr = server.addr;
    let (first, second) = actix_web::rt::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        stream
            .write_all(b"GET /api/v2 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut first = read_one(&mut stream);
        assert_eq!(
            parse(&first).status,
            200,
            "{}",
            String::from_utf8_lossy(&first)
        );
        // A kept-alive connection serves whole requests as usual...
        std::thread::sleep(Duration::from_millis(400));
        stream
            .write_all(b"GET /api/v2 HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        first = read_one(&mut stream);
        // ...and times out a head that stalls.
        stream.write_all(b"GET /api/v2/proj").unwrap();
        (first, read_to_close(&mut stream))
    })
    .await
    .unwrap();
    assert_eq!(parse(&first).status, 200);
    parse(&second).assert_error(408, "request_timeout");
}

async fn a_stalled_body_gets_408_and_the_connection_closes(backend: Backend) {
    let server = real_server(backend, edge_config()).await;
    let head = format!(
        "POST /api/v2/projects HTTP/1.1\r\nHost: x\r\nAuthorization: {OWNER}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{{\"key\":"
    );
    let stalled = parse(&exchange(server.addr, head.into_bytes()).await);
    stalled.assert_error(408, "request_timeout");
    assert!(
        stalled.body["message"].as_str().unwrap().contains("300 ms"),
        "{stalled:?}"
    );
    assert_eq!(stalled.header("connection"), Some("close"));
}

async fn a_trickled_body_gets_408_while_it_trickles(backend: Backend) {
    let config = HttpConfig {
        body_limit: 1024 * 1024,
        ..edge_config()
    };
    let server = real_server(backend, config).await;
    let addr = server.addr;
    let (answered_while_sending, sent) = actix_web::rt::task::spawn_blocking(move || {
        let mut stream = connect(addr);
        // 100,000 bytes announced; one every 10 ms would take over 16 minutes.
        let head = format!(
            "POST /api/v2/projects HTTP/1.1\r\nHost: x\r\nAuthorization: {OWNER}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).unwrap();
        let answered = Arc::new(AtomicBool::new(false));
        let sent = Arc::new(AtomicUsize::new(0));
        let writer = {
            let mut stream = stream.try_clone().unwrap();
            let (answered, sent) = (answered.clone(), sent.clone());
            std::thread::spawn(move || {
                // Stops when the answer is in, when the server closed, or after 3,000 bytes.
                for _ in 0..3_000 {
                    if answered.load(Ordering::SeqCst) || stream.write_all(b" ").is_err() {
                        return true;
                    }
                    sent.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(10));
                }
                false
            })
        };
        let bytes = read_to_close(&mut stream);
        answered.store(true, Ordering::SeqCst);
        let stopped_early = writer.join().unwrap();
        ((stopped_early, bytes), sent.load(Ordering::SeqCst))
    })
    .await
    .unwrap();
    let (stopped_early, bytes) = answered_while_sending;
    assert!(
        stopped_early,
        "the answer came only after the client stopped sending ({sent} bytes)"
    );
    parse(&bytes).assert_error(408, "request_timeout");
}

/// Methods the document does not declare, over the wire: 405 with `Allow`, as JSON (HEAD: the
/// same head, no body).
async fn undeclared_methods_over_the_wire(backend: Backend) {
    let server = real_server(backend, edge_config()).await;
    for (method, path, allow) in [
        ("TRACE", "/api/v2", "GET"),
        ("TRACE", "/api/v2/projects", "GET, POST"),
        ("FOO", "/api/v2/projects/web", "GET, PATCH, DELETE"),
        ("PUT", "/api/v2/openapi.json", "GET"),
        ("CONNECT", "/api/v2", "GET"),
        ("OPTIONS", "/api/v2/projects", "GET, POST"),
    ] {
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nSvc-API-Version: nope\r\nConnection: close\r\n\r\n"
        );
        let answer = parse(&exchange(server.addr, request.into_bytes()).await);
        answer.assert_error(405, "method_not_allowed");
        assert_eq!(answer.header("allow"), Some(allow), "{method} {path}");
    }
    let head = exchange(
        server.addr,
        b"HEAD /api/v2/projects HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(),
    )
    .await;
    let text = String::from_utf8_lossy(&head);
    assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
    assert!(
        text.to_ascii_lowercase()
            .contains("\r\nallow: get, post\r\n"),
        "{text}"
    );
    assert!(
        text.ends_with("\r\n\r\n"),
        "a HEAD answer has no body: {text}"
    );
}

on_both_backends!(
    undeclared_methods_over_the_wire,
    protocol_errors_are_json,
    a_slow_head_gets_408,
    a_stalled_body_gets_408_and_the_connection_closes,
    a_trickled_body_gets_408_while_it_trickles
);
