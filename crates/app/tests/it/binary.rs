//! The `flagsvc` binary itself, as an operator runs it: subcommands, the configuration file,
//! JSON logs, and a graceful stop under load (SIGTERM while writes are in flight: nothing that
//! was acknowledged is lost). Each test runs the binary on a SQLite file of its own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const TOKEN: &str = "owner-token-for-the-binary";

fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_flagsvc")
}

/// A file path of this test's own (removed with its `-wal`/`-shm` when dropped).
struct TempDb(PathBuf);

impl TempDb {
    fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!(
            "flagsvc-bin-{name}-{}-{:x}.db",
            std::process::id(),
            rand::random::<u32>()
        ));
        Self(path)
    }

    fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for TempDb {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
        }
    }
}

/// A free port on the loopback interface.
fn free_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// A running `flagsvc serve`, its stderr collected.
struct Server {
    child: Child,
    address: String,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts the binary with `args` (and `--bind`, `--bootstrap-token`, `--rate-limit 0`) and
    /// waits until `/healthz` answers.
    fn start(db: &TempDb, args: &[&str]) -> Self {
        let address = free_address();
        let mut child = Command::new(binary())
            .args(args)
            .args([
                "--database-url",
                &db.path(),
                "--bind",
                &address,
                "--bootstrap-token",
                TOKEN,
                "--rate-limit",
                "0",
            ])
            .env_remove("DATABASE_URL")
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start flagsvc");
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().unwrap();
        let collected = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = collected.lock().unwrap();
                all.push_str(&line);
                all.push('\n');
            }
        });
        let start = Instant::now();
        while http(&address, "GET", "/healthz", None, None).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("flagsvc exited ({status}): {}", stderr.lock().unwrap());
            }
            assert!(start.elapsed() < Duration::from_secs(20), "never answered");
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            address,
            stderr,
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn request(&self, method: &str, path: &str, body: Option<Value>) -> (u16, String, Value) {
        http(&self.address, method, path, Some(TOKEN), body).expect("an answer")
    }

    /// SIGTERM, then waits for the process to end (at most 30 s).
    fn terminate(&mut self) -> ExitStatus {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < Duration::from_secs(30), "did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request on a connection of its own: status, `X-Request-Id`, JSON body.
fn http(
    address: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> std::io::Result<(u16, String, Value)> {
    let mut stream = TcpStream::connect(address)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: {token}\r\n"));
    }
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no HTTP answer: {answer:?}")))?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status: {head}")))?;
    let request_id = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("x-request-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    // Bodies here are small and not chunked (Content-Length), or chunked JSON: take the JSON.
    let json_start = body.find(['{', '[']).unwrap_or(body.len());
    let json_end = body.rfind(['}', ']']).map_or(json_start, |i| i + 1);
    let value = serde_json::from_str(&body[json_start..json_end]).unwrap_or(Value::Null);
    Ok((status, request_id, value))
}

#[test]
fn migrate_then_serve_without_migrating() {
    let db = TempDb::new("migrate");
    // A replica started with --no-migrate on a database nobody migrated refuses to start,
    // saying what to do.
    let refused = Command::new(binary())
        .args(["serve", "--no-migrate", "--database-url", &db.path()])
        .args(["--bind", &free_address(), "--bootstrap-token", TOKEN])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("flagsvc migrate"), "{said}");
    let migrated = Command::new(binary())
        .args(["migrate", "--database-url", &db.path()])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let again = Command::new(binary())
        .args(["migrate", "--database-url", &db.path()])
        .env_remove("DATABASE_URL")
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("up to date"));
    let server = Server::start(&db, &["serve", "--no-migrate"]);
    let (status, _, body) = http(&server.address, "GET", "/readyz", None, None).unwrap();
    assert_eq!(status, 200, "{body}");
}

#[test]
fn settings_come_from_the_configuration_file() {
    let db = TempDb::new("config");
    let config = std::env::temp_dir().join(format!(
        "flagsvc-bin-{}-{:x}.toml",
        std::process::id(),
        rand::random::<u32>()
    ));
    // The flags given by `Server::start` win over the file's; the file's limit applies.
    std::fs::write(&config, "body-limit = 64\nbind = \"127.0.0.1:1\"\n").unwrap();
    let server = Server::start(&db, &["--config", &config.display().to_string()]);
    let (status, _, body) = server.request(
        "POST",
        "/api/v2/projects",
        Some(json!({"key": "a-project-whose-body-is-longer-than-64-bytes", "name": "P"})),
    );
    assert_eq!(status, 413, "{body}");
    let _ = std::fs::remove_file(&config);
}

#[test]
fn json_logs_carry_the_request_id_route_status_and_token_id() {
    let db = TempDb::new("logs");
    let mut server = Server::start(&db, &["--log-format", "json", "--log", "info"]);
    let (status, request_id, _) = server.request("GET", "/api/v2/projects", None);
    assert_eq!(status, 200);
    assert!(!request_id.is_empty());
    assert!(server.terminate().success());
    let logs = server.stderr();
    let line: Value = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["span"]["request_id"] == request_id.as_str())
        .unwrap_or_else(|| panic!("no line for {request_id} in:\n{logs}"));
    assert_eq!(line["message"], "answered");
    assert_eq!(line["span"]["route"], "/api/v2/projects");
    assert_eq!(line["method"], "GET");
    assert_eq!(line["status"], 200);
    assert!(line["duration_ms"].as_f64().is_some());
    let token_id = line["token_id"].as_str().unwrap();
    assert_eq!(token_id.len(), 24, "the token's _id: {line}");
    assert!(!logs.contains(TOKEN), "the secret is never logged");
}

/// SIGTERM while eight clients write: the process stops within the grace period, and every
/// change it acknowledged (201) is there when it starts again.
#[test]
fn sigterm_during_writes_loses_nothing_acknowledged() {
    let db = TempDb::new("sigterm");
    let mut server = Server::start(&db, &[]);
    let (status, _, body) = server.request(
        "POST",
        "/api/v2/projects",
        Some(json!({"key": "p", "name": "P"})),
    );
    assert_eq!(status, 201, "{body}");
    let acknowledged = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|writer| {
            let (address, acknowledged, stop) =
                (server.address.clone(), acknowledged.clone(), stop.clone());
            std::thread::spawn(move || {
                for n in 0.. {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        return;
                    }
                    let key = format!("f-{writer}-{n}");
                    let body = json!({"key": key, "name": key});
                    // Refused or cut while stopping: not acknowledged, may or may not exist.
                    let answer = http(&address, "POST", "/api/v2/flags/p", Some(TOKEN), Some(body));
                    if let Ok((201, _, _)) = answer {
                        acknowledged.lock().unwrap().push(key);
                    }
                }
            })
        })
        .collect();
    // Writes are under way.
    let start = Instant::now();
    while acknowledged.lock().unwrap().len() < 40 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no writes succeeded"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let exit = server.terminate();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for writer in writers {
        writer.join().unwrap();
    }
    assert!(exit.success(), "a clean stop: {exit}\n{}", server.stderr());
    let acknowledged = acknowledged.lock().unwrap().clone();
    drop(server);
    let again = Server::start(&db, &[]);
    for key in &acknowledged {
        let (status, _, body) = again.request("GET", &format!("/api/v2/flags/p/{key}"), None);
        assert_eq!(status, 200, "{key} was acknowledged but is missing: {body}");
    }
}
