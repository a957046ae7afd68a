//! A server-sent-events client for `GET /all`, as small as the bench's HTTP client: one
//! connection, the response head, then the chunked body decoded as it arrives and cut into
//! events (`event:` and `data:` lines up to an empty line; comment lines are heartbeats). Each
//! event carries the moment the read that completed it returned, taken before any parsing, so
//! that what the client does with earlier events does not count in a delivery's delay more
//! than the reads themselves.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::bench::http::{find, ResponseHead};

/// The most a stream buffers before it is taken for broken (a `put` of a large environment is
/// a few MiB).
const MAX_BUFFERED: usize = 64 * 1024 * 1024;
/// What a read reserves at least.
const READ_SIZE: usize = 8 * 1024;
/// How long a refused stream's answer may take to arrive whole.
const REFUSAL_WAIT: Duration = Duration::from_secs(2);

/// The kinds of event of the SDKs' protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Put,
    Patch,
    Delete,
    Other,
}

#[derive(Debug)]
pub struct Event {
    pub kind: Kind,
    /// The `data:` lines, joined.
    pub data: String,
    /// When the read that completed the event returned.
    pub arrived: Instant,
}

/// Where the chunked body's decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Expecting a size line.
    Size,
    /// This many bytes of data left in the chunk.
    Data(usize),
    /// Expecting the CRLF after a chunk's data.
    End,
    /// The last chunk was read: the stream is over.
    Done,
}

/// An open stream.
#[derive(Debug)]
pub struct SseStream {
    stream: TcpStream,
    /// Read, not yet decoded.
    raw: Vec<u8>,
    /// Decoded, not yet cut into events.
    text: Vec<u8>,
    /// How much of `text` is known to hold no event's end.
    scanned: usize,
    /// `None`: the body is not chunked (it lasts until the connection closes).
    chunk: Option<Chunk>,
    last_read: Instant,
    /// Heartbeats (comment-only blocks) read so far.
    pub heartbeats: u64,
}

/// What `GET /all` answered.
#[derive(Debug)]
pub enum Opened {
    Stream(Box<SseStream>),
    /// Not 200: the status and the start of the body.
    Refused {
        status: u16,
        body: String,
    },
}

/// Opens `GET /all` with `key` on `address` and reads the response head.
pub async fn open(address: SocketAddr, key: &str) -> Result<Opened> {
    let mut stream = TcpStream::connect(address)
        .await
        .with_context(|| format!("connecting to {address}"))?;
    stream.set_nodelay(true)?;
    let request = format!(
        "GET /all HTTP/1.1\r\nHost: {address}\r\nAuthorization: {key}\r\nAccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut raw = Vec::with_capacity(READ_SIZE);
    let head_end = loop {
        if let Some(at) = find(&raw, b"\r\n\r\n") {
            break at;
        }
        read_into(&mut stream, &mut raw).await?;
    };
    let head = ResponseHead::parse(std::str::from_utf8(&raw[..head_end]).context("a head")?)?;
    raw.drain(..head_end + 4);
    if head.status != 200 {
        let wanted = head.content_length.unwrap_or(0).min(64 * 1024);
        let _ = tokio::time::timeout(REFUSAL_WAIT, async {
            while raw.len() < wanted {
                if read_into(&mut stream, &mut raw).await.is_err() {
                    break;
                }
            }
        })
        .await;
        let body: String = String::from_utf8_lossy(&raw).chars().take(300).collect();
        return Ok(Opened::Refused {
            status: head.status,
            body,
        });
    }
    let mut opened = SseStream {
        stream,
        raw,
        text: Vec::new(),
        scanned: 0,
        chunk: head.chunked.then_some(Chunk::Size),
        last_read: Instant::now(),
        heartbeats: 0,
    };
    opened.decode()?;
    Ok(Opened::Stream(Box::new(opened)))
}

/// One read into `buffer`; an error when the connection closed.
async fn read_into(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<()> {
    if buffer.len() > MAX_BUFFERED {
        bail!("more than {MAX_BUFFERED} bytes buffered");
    }
    buffer.reserve(READ_SIZE);
    if stream.read_buf(buffer).await? == 0 {
        bail!("the server closed the connection");
    }
    Ok(())
}

impl SseStream {
    /// The next event; `None` when the server ended the stream (the chunked body's last
    /// chunk); an error when the connection broke or closed without that.
    pub async fn next_event(&mut self) -> Result<Option<Event>> {
        loop {
            if let Some(event) = self.cut_event() {
                return Ok(Some(event));
            }
            if self.chunk == Some(Chunk::Done) {
                return Ok(None);
            }
            read_into(&mut self.stream, &mut self.raw)
                .await
                .context("reading the stream")?;
            self.last_read = Instant::now();
            self.decode()?;
        }
    }

    /// Moves what `raw` holds of the body into `text`.
    fn decode(&mut self) -> Result<()> {
        let Some(mut chunk) = self.chunk else {
            self.text.append(&mut self.raw);
            return Ok(());
        };
        let mut at = 0;
        loop {
            let left = &self.raw[at..];
            match chunk {
                Chunk::Size => {
                    let Some(end) = find(left, b"\r\n") else {
                        break;
                    };
                    let line = std::str::from_utf8(&left[..end]).context("a chunk size")?;
                    let line = line.split(';').next().unwrap_or_default().trim();
                    let size = usize::from_str_radix(line, 16)
                        .with_context(|| format!("a chunk size: {line:?}"))?;
                    at += end + 2;
                    chunk = if size == 0 {
                        Chunk::Done
                    } else {
                        Chunk::Data(size)
                    };
                }
                Chunk::Data(size) => {
                    let take = size.min(left.len());
                    if take == 0 {
                        break;
                    }
                    self.text.extend_from_slice(&left[..take]);
                    at += take;
                    chunk = if take == size {
                        Chunk::End
                    } else {
                        Chunk::Data(size - take)
                    };
                }
                Chunk::End => {
                    if left.len() < 2 {
                        break;
                    }
                    at += 2;
                    chunk = Chunk::Size;
                }
                Chunk::Done => break,
            }
        }
        self.raw.drain(..at);
        self.chunk = Some(chunk);
        Ok(())
    }

    /// The first whole event of `text`, heartbeats counted and skipped.
    fn cut_event(&mut self) -> Option<Event> {
        loop {
            let from = self.scanned.saturating_sub(1);
            let Some(end) = find(&self.text[from..], b"\n\n").map(|at| from + at) else {
                self.scanned = self.text.len();
                return None;
            };
            self.scanned = 0;
            let block = String::from_utf8_lossy(&self.text[..end]);
            let mut kind = None;
            let mut data = String::new();
            for line in block.split('\n') {
                if let Some(name) = line.strip_prefix("event:") {
                    kind = Some(match name.trim() {
                        "put" => Kind::Put,
                        "patch" => Kind::Patch,
                        "delete" => Kind::Delete,
                        _ => Kind::Other,
                    });
                } else if let Some(value) = line.strip_prefix("data:") {
                    if !data.is_empty() {
                        data.push('\n');
                    }
                    data.push_str(value.strip_prefix(' ').unwrap_or(value));
                }
            }
            drop(block);
            self.text.drain(..end + 2);
            if kind.is_none() && data.is_empty() {
                self.heartbeats += 1;
                continue;
            }
            return Some(Event {
                kind: kind.unwrap_or(Kind::Other),
                data,
                arrived: self.last_read,
            });
        }
    }
}

/// The path and version of a `patch` or `delete` event's data, read without parsing the whole
/// JSON: `{"path":"/flags/k","data":{…,"version":N,…}}` or `{"path":"/flags/k","version":N}`.
/// The first `"version":` after the path is the item's own as long as no variation value holds
/// that text, as in the bench's flags (booleans).
pub fn path_and_version(data: &str) -> Option<(&str, u64)> {
    let rest = data.strip_prefix("{\"path\":\"")?;
    let path = &rest[..rest.find('"')?];
    let after = &rest[path.len()..];
    let at = after.find("\"version\":")? + "\"version\":".len();
    let digits: &str = after[at..].split(|c: char| !c.is_ascii_digit()).next()?;
    Some((path, digits.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_path_and_version() {
        let patch =
            r#"{"path":"/flags/f-1","data":{"key":"f-1","on":true,"version":12,"deleted":false}}"#;
        assert_eq!(path_and_version(patch), Some(("/flags/f-1", 12)));
        let delete = r#"{"path":"/flags/f-2","version":7}"#;
        assert_eq!(path_and_version(delete), Some(("/flags/f-2", 7)));
        assert_eq!(path_and_version("{}"), None);
    }
}
