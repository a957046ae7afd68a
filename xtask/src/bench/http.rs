//! A small HTTP/1.1 client on tokio: one keep-alive connection sends a request and reads its
//! response, nothing more. Written here rather than taken from a crate so that the bench adds
//! only tokio to the build, and so that what the client does per request (one write, reads until
//! the body is complete) is plain to see when judging whether it is a bottleneck.

use std::net::SocketAddr;

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response head or body the client accepts (a page of 100 flags with 50
/// environments each is a few MiB).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

pub const JSON: &str = "application/json";
pub const SEMANTIC_PATCH: &str = "application/json; domain-model=svc.semanticpatch";

#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    /// Path and query, e.g. `/api/v2/flags/bench/flag-001`.
    pub path: String,
    /// Content type and body.
    pub body: Option<(&'static str, String)>,
    /// Headers besides Host, Authorization and the body's, e.g. `If-None-Match`.
    pub headers: Vec<(&'static str, String)>,
    /// The status a load expects (`None`: any 2xx), e.g. 304 for a conditional poll.
    pub expect: Option<u16>,
}

impl Request {
    pub fn get(path: impl Into<String>) -> Request {
        Request {
            method: "GET",
            path: path.into(),
            body: None,
            headers: vec![],
            expect: None,
        }
    }

    /// The request with header `name: value` too.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Request {
        self.headers.push((name, value.into()));
        self
    }

    /// The request, answered as expected only with `status`.
    pub fn expecting(mut self, status: u16) -> Request {
        self.expect = Some(status);
        self
    }

    /// Whether `response` is what the request expects.
    pub fn is_answered_by(&self, response: &Response) -> bool {
        match self.expect {
            Some(status) => response.status == status,
            None => response.is_success(),
        }
    }

    pub fn with_body(
        method: &'static str,
        path: impl Into<String>,
        content_type: &'static str,
        body: String,
    ) -> Request {
        Request {
            method,
            path: path.into(),
            body: Some((content_type, body)),
            headers: vec![],
            expect: None,
        }
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
    /// The `ETag` header, when there is one.
    pub etag: Option<String>,
}

impl Response {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body).context("reading a JSON response")
    }

    /// The start of the body, for error messages.
    pub fn body_sample(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let mut sample: String = text.chars().take(300).collect();
        if sample.len() < text.len() {
            sample.push_str("...");
        }
        sample
    }
}

/// One connection to the server, opened on first use and again after the server closed it.
#[derive(Debug)]
pub struct Connection {
    address: SocketAddr,
    token: String,
    stream: Option<TcpStream>,
    /// Bytes read but not yet consumed.
    buffer: Vec<u8>,
    request: Vec<u8>,
}

impl Connection {
    pub fn new(address: SocketAddr, token: &str) -> Connection {
        Connection {
            address,
            token: token.to_owned(),
            stream: None,
            buffer: Vec::with_capacity(16 * 1024),
            request: Vec::with_capacity(1024),
        }
    }

    /// Sends the request and reads the response. On an error the connection is dropped, and the
    /// next request opens a new one.
    pub async fn send(&mut self, request: &Request) -> Result<Response> {
        let result = self.exchange(request).await;
        if result.is_err() {
            self.stream = None;
            self.buffer.clear();
        }
        result
    }

    async fn exchange(&mut self, request: &Request) -> Result<Response> {
        if self.stream.is_none() {
            let stream = TcpStream::connect(self.address)
                .await
                .with_context(|| format!("connecting to {}", self.address))?;
            // Requests are written in one piece and answered before the next: Nagle's
            // algorithm would only add delay.
            stream.set_nodelay(true)?;
            self.stream = Some(stream);
            self.buffer.clear();
        }
        self.encode(request);
        let stream = self.stream.as_mut().context("no connection")?;
        stream.write_all(&self.request).await?;

        let head_end = read_until_head_end(stream, &mut self.buffer).await?;
        let head = std::str::from_utf8(&self.buffer[..head_end]).context("a response head")?;
        let head = ResponseHead::parse(head)?;
        self.buffer.drain(..head_end + 4);
        let body = if head.chunked {
            read_chunked(stream, &mut self.buffer).await?
        } else {
            let length = head.content_length.unwrap_or(0);
            if length > MAX_RESPONSE_BYTES {
                bail!("a response body of {length} bytes");
            }
            while self.buffer.len() < length {
                read_more(stream, &mut self.buffer).await?;
            }
            self.buffer.drain(..length).collect()
        };
        if head.close {
            self.stream = None;
            self.buffer.clear();
        }
        Ok(Response {
            status: head.status,
            body,
            etag: head.etag,
        })
    }

    fn encode(&mut self, request: &Request) {
        use std::io::Write;
        self.request.clear();
        // Writing to a Vec cannot fail.
        let _ = write!(
            self.request,
            "{} {} HTTP/1.1\r\nHost: {}\r\nAuthorization: {}\r\n",
            request.method, request.path, self.address, self.token
        );
        for (name, value) in &request.headers {
            let _ = write!(self.request, "{name}: {value}\r\n");
        }
        match &request.body {
            Some((content_type, body)) => {
                let _ = write!(
                    self.request,
                    "Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
            None => self.request.extend_from_slice(b"\r\n"),
        }
    }
}

/// What the client reads of a response head.
#[derive(Debug)]
pub struct ResponseHead {
    pub status: u16,
    pub content_length: Option<usize>,
    pub chunked: bool,
    close: bool,
    etag: Option<String>,
}

impl ResponseHead {
    pub fn parse(head: &str) -> Result<ResponseHead> {
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("a status line: {status_line:?}"))?;
        let mut parsed = ResponseHead {
            status,
            content_length: None,
            chunked: false,
            close: false,
            etag: None,
        };
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                parsed.content_length = Some(value.parse().context("a content-length")?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                parsed.chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case("connection") {
                parsed.close = value.eq_ignore_ascii_case("close");
            } else if name.eq_ignore_ascii_case("etag") {
                parsed.etag = Some(value.to_owned());
            }
        }
        Ok(parsed)
    }
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<()> {
    if buffer.len() > MAX_RESPONSE_BYTES {
        bail!("a response over {MAX_RESPONSE_BYTES} bytes");
    }
    let mut chunk = [0u8; 16 * 1024];
    let read = stream.read(&mut chunk).await?;
    if read == 0 {
        bail!("the server closed the connection");
    }
    buffer.extend_from_slice(&chunk[..read]);
    Ok(())
}

/// Reads until the buffer holds a whole response head; returns where its `\r\n\r\n` starts.
async fn read_until_head_end(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<usize> {
    let mut searched = 0;
    loop {
        if let Some(at) = find(&buffer[searched..], b"\r\n\r\n") {
            return Ok(searched + at);
        }
        searched = buffer.len().saturating_sub(3);
        read_more(stream, buffer).await?;
    }
}

async fn read_chunked(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(at) = find(buffer, b"\r\n") {
                break at;
            }
            read_more(stream, buffer).await?;
        };
        let size_text = std::str::from_utf8(&buffer[..line_end])?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).context("a chunk size")?;
        buffer.drain(..line_end + 2);
        if size == 0 {
            // No trailers are expected: the final chunk ends with an empty line.
            while find(buffer, b"\r\n").is_none() {
                read_more(stream, buffer).await?;
            }
            let end = find(buffer, b"\r\n").unwrap_or_default();
            buffer.drain(..end + 2);
            return Ok(body);
        }
        while buffer.len() < size + 2 {
            read_more(stream, buffer).await?;
        }
        body.extend_from_slice(&buffer[..size]);
        buffer.drain(..size + 2);
    }
}

pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}
