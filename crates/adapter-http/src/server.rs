//! The HTTP/1.1 server, and JSON bodies for the errors actix-http writes by itself.
//!
//! actix-http answers requests it cannot parse (400), heads that are too large (431) and heads
//! that do not arrive in time (408) in its connection dispatcher, before any service or
//! middleware runs, with an empty body and no hook to change it. Every such answer is the last
//! thing written on its connection and has `content-length: 0`, which no response of the
//! application has (its errors always carry a JSON body). [`JsonErrorsIo`] wraps each
//! connection and replaces those answers, as they are written, by the JSON error envelope.
//!
//! actix-http also times out only the head of a connection's *first* request: the head of a
//! later request on a kept-alive connection could trickle forever. [`JsonErrorsIo`] times
//! every head instead: the first from the connection's start, later ones from their first byte,
//! until the middleware sees the request ([`InRequest`]); past the head timeout it answers 408
//! and ends the connection.

use std::future::Future;
use std::io;
use std::net::TcpListener;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use actix_codec::{AsyncRead, AsyncWrite, ReadBuf};
use actix_http::{HttpService, KeepAlive};
use actix_server::Server;
use actix_service::{fn_service, map_config, IntoServiceFactory, ServiceFactoryExt};
use actix_web::dev::AppConfig;
use actix_web::http::StatusCode;
use actix_web::rt::net::TcpStream;
use actix_web::rt::time::{sleep, Sleep};

use crate::error::{ApiError, ErrorBody};
use crate::InRequest;
use crate::{AppState, Mount};

/// The server for `state` on `listener` with `workers` worker threads and `blocking_threads`
/// threads in all for the use cases (which block on the database): the [`app_with`] `mount`'s
/// routes beside the API, the head
/// timeout of the configuration, and JSON bodies for protocol errors. Run it with `.await`; it
/// stops on SIGINT and SIGTERM, finishing the requests in flight.
///
/// Every use case needs a database connection, so more blocking threads than connections only
/// wait for one (and every idle thread keeps memory); size them to the connection pool.
///
/// # Errors
/// The listener cannot be used.
pub fn server(
    listener: TcpListener,
    state: actix_web::web::Data<AppState>,
    workers: usize,
    blocking_threads: usize,
    mount: Option<Mount>,
) -> io::Result<Server> {
    serve(listener, state, workers, blocking_threads, (mount, true))
}

/// As [`server`], serving `mount`'s routes alone ([`mount_only_app`](crate::app::mount_only_app)):
/// the SDK routes on a listener of their own, where applications reach them without reaching
/// the API.
///
/// # Errors
/// The listener cannot be used.
pub fn mount_only_server(
    listener: TcpListener,
    state: actix_web::web::Data<AppState>,
    workers: usize,
    blocking_threads: usize,
    mount: Mount,
) -> io::Result<Server> {
    serve(
        listener,
        state,
        workers,
        blocking_threads,
        (Some(mount), false),
    )
}

fn serve(
    listener: TcpListener,
    state: actix_web::web::Data<AppState>,
    workers: usize,
    blocking_threads: usize,
    (mount, api): (Option<Mount>, bool),
) -> io::Result<Server> {
    let local = listener.local_addr()?;
    let workers = workers.max(1);
    Ok(Server::build()
        .workers(workers)
        .worker_max_blocking_threads(blocking_threads.div_ceil(workers).max(1))
        .listen("flagsvc", listener, move || {
            let head_timeout = state.config.head_timeout.max(Duration::from_millis(1));
            let factory = crate::app::build_app(state.clone(), mount.clone(), api)
                .into_factory()
                .map_err(|err| err.error_response());
            fn_service(move |io: TcpStream| {
                let peer = io.peer_addr().ok();
                std::future::ready(Ok((JsonErrorsIo::new(io, head_timeout), peer)))
            })
            .and_then(
                HttpService::build()
                    .keep_alive(KeepAlive::default())
                    // Heads are timed by `JsonErrorsIo` (every request's, on an accurate clock;
                    // actix's timer covers only the first and runs on a clock that may lag by
                    // half a second).
                    .client_request_timeout(Duration::ZERO)
                    .client_disconnect_timeout(Duration::from_secs(1))
                    .local_addr(local)
                    .on_connect_ext(|io: &JsonErrorsIo<TcpStream>, ext| {
                        ext.insert(io.in_request());
                    })
                    .h1(map_config(factory, move |()| AppConfig::default())),
            )
        })?
        .run())
}

/// A connection whose bodiless 4xx/5xx answers (written by actix-http itself) are rewritten as
/// the JSON error envelope.
#[derive(Debug)]
pub struct JsonErrorsIo<T> {
    inner: T,
    /// Bytes accepted from the writer but not yet written to `inner` (only ever a rewritten
    /// answer and what surrounded it in the same write).
    pending: Vec<u8>,
    head_timeout: Duration,
    in_request: InRequest,
    /// Runs while a request head is arriving, with the count of heads when it started.
    head_timer: Option<(Pin<Box<Sleep>>, u64)>,
    /// The head timed out: reads end, and the 408 is written when the connection shuts down
    /// (after anything the dispatcher still has to write).
    timed_out: Option<Vec<u8>>,
}

impl<T> JsonErrorsIo<T> {
    /// Wraps `inner`; `head_timeout` limits every request head and is named in the 408 message.
    pub fn new(inner: T, head_timeout: Duration) -> Self {
        Self {
            inner,
            pending: vec![],
            head_timeout,
            in_request: InRequest::default(),
            head_timer: None,
            timed_out: None,
        }
    }

    /// The flag the middleware sets while it handles a request of this connection.
    pub fn in_request(&self) -> InRequest {
        self.in_request.clone()
    }
}

/// A bodiless error answer found in written bytes.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    /// Where its status line starts.
    start: usize,
    /// Just past the blank line that ends its head.
    end: usize,
    status: u16,
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    // Every response passes here: jump between candidates for the first byte (memchr), rather
    // than comparing a window at every position.
    let (&first, _) = needle.split_first()?;
    let rest = haystack.get(from..)?;
    let mut at = 0;
    while let Some(offset) = memchr::memchr2(
        first.to_ascii_lowercase(),
        first.to_ascii_uppercase(),
        rest.get(at..)?,
    ) {
        let start = at + offset;
        if rest
            .get(start..start + needle.len())
            .is_some_and(|w| w.eq_ignore_ascii_case(needle))
        {
            return Some(from + start);
        }
        at = start + 1;
    }
    None
}

/// The first `HTTP/1.x 4xx|5xx ...\r\ncontent-length: 0\r\n...\r\n\r\n` in `buf`. Application
/// responses never match: their error responses have JSON bodies (never `content-length: 0`),
/// and no header value or JSON body contains a raw line break.
fn find_bodiless_error(buf: &[u8]) -> Option<Found> {
    let mut from = 0;
    while let Some(start) = find(buf, b"HTTP/1.", from) {
        from = start + 1;
        let line = &buf[start..];
        let status = line
            .get(9..12)
            .filter(|d| d.iter().all(u8::is_ascii_digit) && matches!(d[0], b'4' | b'5'))
            .filter(|_| line.get(8) == Some(&b' '))
            .and_then(|d| std::str::from_utf8(d).ok()?.parse::<u16>().ok());
        let Some(status) = status else { continue };
        let Some(line_end) = find(buf, b"\r\n", start).filter(|&e| e - start < 128) else {
            continue;
        };
        let next = line_end + 2;
        let Some(rest) = buf.get(next..next + 19) else {
            continue;
        };
        if !rest.eq_ignore_ascii_case(b"content-length: 0\r\n") {
            continue;
        }
        let Some(blank) = find(buf, b"\r\n\r\n", line_end) else {
            continue;
        };
        return Some(Found {
            start,
            end: blank + 4,
            status,
        });
    }
    None
}

impl<T> JsonErrorsIo<T> {
    /// `found`'s answer with the JSON envelope: the status line and header lines it had (but
    /// `content-length`), the JSON headers, and the body.
    fn rewrite(&self, head: &[u8], status: u16) -> Vec<u8> {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
        let error = match status.as_u16() {
            400 => ApiError::invalid(
                "the request is not valid HTTP/1.1: malformed request line or headers",
            ),
            408 => ApiError::from_status(
                status,
                format!(
                    "the request head (request line and headers) did not arrive within {} ms",
                    self.head_timeout.as_millis()
                ),
            ),
            431 => ApiError::from_status(
                status,
                "the request head is too large: at most 96 headers and 128 KiB".to_owned(),
            ),
            _ => ApiError::from_status(
                status,
                status.canonical_reason().unwrap_or("error").to_owned(),
            ),
        };
        let body = serde_json::to_vec(&ErrorBody {
            code: error.code.to_owned(),
            message: error.message,
            id: Some(id.clone()),
            errors: vec![],
        })
        .unwrap_or_default();
        let text = String::from_utf8_lossy(head);
        let mut lines = text.trim_end_matches("\r\n").split("\r\n");
        let mut out = Vec::with_capacity(head.len() + body.len() + 128);
        if let Some(status_line) = lines.next() {
            out.extend_from_slice(status_line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(
            format!(
                "content-length: {}\r\ncontent-type: application/json\r\nx-request-id: {id}\r\n",
                body.len()
            )
            .as_bytes(),
        );
        for line in lines
            .filter(|l| !l.to_ascii_lowercase().starts_with("content-length:") && !l.is_empty())
        {
            out.extend_from_slice(line.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
        out
    }
}

impl<T: AsyncWrite + Unpin> JsonErrorsIo<T> {
    /// Writes `pending` to the connection.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.pending.is_empty() {
            let written = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending))?;
            if written == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.pending.drain(..written);
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for JsonErrorsIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.timed_out.is_some() {
            // The end of input makes the dispatcher shut the connection down.
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        let state = &this.in_request.0;
        if state.handling.get() || state.closing.get() {
            this.head_timer = None;
            return read;
        }
        if this
            .head_timer
            .as_ref()
            .is_some_and(|(_, heads)| *heads != state.heads.get())
        {
            // A head arrived since the timer started.
            this.head_timer = None;
        }
        let got_bytes = matches!(read, Poll::Ready(Ok(()))) && buf.filled().len() > before;
        // The first head is timed from the connection's start, later ones from their first byte.
        let first = state.heads.get() == 0;
        if (got_bytes || first) && this.head_timer.is_none() {
            this.head_timer = Some((Box::pin(sleep(this.head_timeout)), state.heads.get()));
        }
        let expired = this
            .head_timer
            .as_mut()
            .is_some_and(|(timer, _)| timer.as_mut().poll(cx).is_ready());
        if expired && !got_bytes {
            this.head_timer = None;
            let answer = format!(
                "HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\ndate: {}\r\n\r\n",
                actix_web::http::header::HttpDate::from(std::time::SystemTime::now())
            );
            this.timed_out = Some(this.rewrite(answer.as_bytes(), 408));
            return Poll::Ready(Ok(()));
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrorsIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        let Some(found) = find_bodiless_error(buf) else {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        };
        let mut replaced = buf[..found.start].to_vec();
        replaced.extend(this.rewrite(&buf[found.start..found.end], found.status));
        replaced.extend_from_slice(&buf[found.end..]);
        this.pending = replaced;
        // Everything is accepted; what the connection does not take now goes out on flush.
        if let Poll::Ready(Err(err)) = this.poll_drain(cx) {
            return Poll::Ready(Err(err));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(answer) = this.timed_out.as_mut() {
            this.pending.append(answer);
        }
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: &[u8] =
        b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\ndate: Thu, 01 Jan 2026 00:00:00 GMT\r\n\r\n";

    #[test]
    fn finds_the_bodiless_answers_of_the_dispatcher() {
        let mut buf = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}".to_vec();
        buf.extend_from_slice(TIMEOUT);
        assert_eq!(
            find_bodiless_error(&buf),
            Some(Found {
                start: 40,
                end: buf.len(),
                status: 408
            })
        );
        assert_eq!(
            find_bodiless_error(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                .map(|f| f.status),
            Some(400)
        );
    }

    #[test]
    fn leaves_application_answers_alone() {
        for buf in [
            &b"HTTP/1.1 404 Not Found\r\ncontent-length: 40\r\n\r\n{\"message\":\"HTTP/1.1 400 Bad Request\"}"[..],
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"{\"name\": \"HTTP/1.1 400 x\\r\\ncontent-length: 0\\r\\n\\r\\n\"}",
        ] {
            assert_eq!(find_bodiless_error(buf), None, "{}", String::from_utf8_lossy(buf));
        }
    }

    #[test]
    fn rewrites_with_the_json_envelope() {
        let io = JsonErrorsIo::new((), Duration::from_millis(250));
        let out = io.rewrite(TIMEOUT, 408);
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.starts_with("HTTP/1.1 408 Request Timeout\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\ncontent-type: application/json\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
        assert!(
            head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())),
            "{head}"
        );
        assert!(!head.contains("content-length: 0"), "{head}");
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["code"], "request_timeout");
        assert!(json["message"].as_str().unwrap().contains("250 ms"));
    }
}
