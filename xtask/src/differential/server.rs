//! One flagsvc process of the differential run, and the blocking HTTP/1.1 client that talks to
//! it: one connection per request (`Connection: close`), so that an answer is read to the end of
//! the stream and its headers are kept for the comparison (the bench's client keeps neither).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The owner's token of every server the run starts.
pub const OWNER_TOKEN: &str = "differential-owner-token";
/// Longest wait for a server to answer (PostgreSQL migrations included).
const START_TIMEOUT: Duration = Duration::from_secs(60);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A request as sent: everything that goes on the wire.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub token: Option<String>,
    /// Other headers, e.g. `Svc-API-Version`.
    pub headers: Vec<(String, String)>,
    /// Content type and body.
    pub body: Option<(String, String)>,
}

/// An answer: its status, its headers (names in lower case) and its body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; a body that is not JSON (empty, HTML) as a JSON string.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            serde_json::Value::String(String::from_utf8_lossy(&self.body).into_owned())
        })
    }
}

/// Sends one request and reads its answer.
pub fn send(address: SocketAddr, request: &Request) -> Result<Answer> {
    let mut stream =
        TcpStream::connect(address).with_context(|| format!("connecting to {address}"))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n",
        request.method, request.path
    );
    if let Some(token) = &request.token {
        head.push_str(&format!("Authorization: {token}\r\n"));
    }
    for (name, value) in &request.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    let body = request.body.as_ref().map(|(content_type, body)| {
        head.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
            body.len()
        ));
        body.as_bytes()
    });
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.unwrap_or_default())?;
    let mut raw = vec![];
    stream
        .read_to_end(&mut raw)
        .with_context(|| format!("reading the answer to {} {}", request.method, request.path))?;
    parse(&raw)
}

fn parse(raw: &[u8]) -> Result<Answer> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .context("an answer without a complete head")?;
    let head = std::str::from_utf8(&raw[..end]).context("an answer head")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .with_context(|| format!("a status line: {status_line:?}"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"));
    let body = if chunked {
        unchunk(rest)?
    } else {
        rest.to_vec()
    };
    Ok(Answer {
        status,
        headers,
        body,
    })
}

fn unchunk(mut rest: &[u8]) -> Result<Vec<u8>> {
    let mut body = vec![];
    loop {
        let line_end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .context("a chunk size line")?;
        let size_text = std::str::from_utf8(&rest[..line_end])?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).context("a chunk size")?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(rest.get(..size).context("a truncated chunk")?);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
}

/// A running flagsvc: rate limits off, one webhook attempt, its log in a file; stopped
/// (SIGTERM, then SIGKILL) by [`Server::stop`] or on drop.
#[derive(Debug)]
pub struct Server {
    child: Child,
    pub address: SocketAddr,
    pub log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn start(binary: &Path, database_url: &str, log: &Path) -> Result<Server> {
        let port = TcpListener::bind("127.0.0.1:0")
            .context("finding a free port")?
            .local_addr()?
            .port();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let log_file = std::fs::File::create(log).with_context(|| format!("creating {log:?}"))?;
        let child = Command::new(binary)
            .args(["--bind", &address.to_string()])
            .args(["--database-url", database_url])
            .args(["--bootstrap-token", OWNER_TOKEN])
            .args(["--rate-limit", "0", "--auth-failure-limit", "0"])
            .args(["--webhook-max-attempts", "1", "--log", "warn"])
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut server = Server {
            child,
            address,
            log: log.to_path_buf(),
        };
        server.wait_until_answering()?;
        Ok(server)
    }

    fn wait_until_answering(&mut self) -> Result<()> {
        let started = Instant::now();
        let root = Request {
            method: "GET",
            path: "/api/v2".into(),
            token: None,
            headers: vec![],
            body: None,
        };
        loop {
            if send(self.address, &root).is_ok_and(|a| a.status == 200) {
                return Ok(());
            }
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "flagsvc exited with {status} before answering (log: {})",
                    self.log.display()
                );
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "flagsvc did not answer on {} within {START_TIMEOUT:?} (log: {})",
                    self.address,
                    self.log.display()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server as an operator would (SIGTERM, so that SQLite checkpoints and closes),
    /// killing it if it has not exited within 10 seconds.
    pub fn stop(mut self) -> Result<()> {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let started = Instant::now();
        while self.child.try_wait()?.is_none() {
            if started.elapsed() > Duration::from_secs(10) {
                let _ = self.child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.wait();
        Ok(())
    }
}
