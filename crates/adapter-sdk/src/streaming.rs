//! Streaming: `GET /all`, the server-sent events the server-side SDKs follow.
//!
//! The stream opens with a `put` of the key's environment, then carries every change as the
//! service's channel for the environment sends it (`service::Subscription`: the same bytes for
//! every stream), and heartbeats. It ends when its environment is gone, when it falls too far
//! behind, when the key that opened it expires, and after the longest connection time when one
//! is set (so that load balancers rebalance); SDKs reconnect to a fresh `put`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::future::{select, Either};
use service::{StreamEnd, StreamItem, Subscription};

use crate::answer::{unavailable, Denied};
use crate::gate::Shared;
use crate::key::admit;

/// How a stream ended, as `/metrics` counts it (`flagsvc_sdk_stream_ends_total{cause}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// The client went away (or the connection broke).
    Client,
    TooSlow,
    /// Its environment is gone.
    Closed,
    /// The longest connection time passed.
    MaxTime,
    /// The key that opened it expired.
    KeyExpired,
}

impl Ending {
    fn label(self) -> &'static str {
        match self {
            Ending::Client => "client",
            Ending::TooSlow => "too_slow",
            Ending::Closed => "closed",
            Ending::MaxTime => "max_connection_time",
            Ending::KeyExpired => "key_expired",
        }
    }
}

/// The timer of a stream's deadline (the runtime's).
type Sleep = std::pin::Pin<Box<actix_web::rt::time::Sleep>>;

/// One open stream: what it sends, until when, and (counted when it is dropped) why it ended.
struct Open {
    subscription: Subscription,
    put_sent: bool,
    /// When the stream ends, and why then.
    deadline: Option<(Sleep, Ending)>,
    ending: Ending,
    done: bool,
}

impl Drop for Open {
    fn drop(&mut self) {
        metrics::counter!("flagsvc_sdk_stream_ends_total", "cause" => self.ending.label())
            .increment(1);
    }
}

impl Open {
    /// The next chunk to send, or `None` once the stream ends.
    async fn next(&mut self) -> Option<Bytes> {
        if self.done {
            return None;
        }
        if !self.put_sent {
            self.put_sent = true;
            return Some(self.subscription.put().clone());
        }
        loop {
            let item = match self.deadline.as_mut() {
                None => Some(self.subscription.next().await),
                Some((sleep, _)) => {
                    match select(Box::pin(self.subscription.next()), sleep.as_mut()).await {
                        Either::Left((item, _)) => Some(item),
                        Either::Right(((), _)) => None,
                    }
                }
            };
            let Some(item) = item else {
                let why = self
                    .deadline
                    .as_ref()
                    .map_or(Ending::MaxTime, |(_, why)| *why);
                return self.end(why);
            };
            match item {
                Ok(StreamItem::Event(event)) => return Some(event),
                Ok(StreamItem::KeyExpiresAt(at)) => self.end_by(until(at), Ending::KeyExpired),
                Err(StreamEnd::TooSlow) => return self.end(Ending::TooSlow),
                Err(StreamEnd::Closed) => return self.end(Ending::Closed),
                Err(StreamEnd::KeyRevoked) => return self.end(Ending::KeyExpired),
            }
        }
    }

    fn end(&mut self, why: Ending) -> Option<Bytes> {
        self.done = true;
        self.ending = why;
        None
    }

    /// Ends the stream after `wait` (for `why`), or at its deadline if that comes first.
    fn end_by(&mut self, wait: Duration, why: Ending) {
        let at = actix_web::rt::time::Instant::now() + wait;
        match self.deadline.as_mut() {
            Some((sleep, _)) if sleep.deadline() <= at => {}
            Some((sleep, ending)) => {
                sleep.as_mut().reset(at);
                *ending = why;
            }
            None => self.deadline = Some((Box::pin(actix_web::rt::time::sleep(wait)), why)),
        }
    }
}

/// How long until `expires_at` (milliseconds since the epoch).
fn until(expires_at: i64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Duration::from_millis(u64::try_from(expires_at.saturating_sub(now)).unwrap_or(0))
}

/// `GET /all`.
pub(crate) async fn all(req: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    let opened = async {
        if crate::polling::asks_for_a_filter(&req) {
            return Err(crate::polling::filters_refused());
        }
        let access = admit(&req, &shared, "GET /all").await?;
        let expires_at = access.expires_at();
        let subscription = driving::run_blocking(&shared.service, move |service| {
            service.sdk().stream(&access)
        })
        .await
        .map_err(unavailable)?;
        Ok::<_, Denied>((subscription, expires_at))
    }
    .await;
    let (subscription, expires_at) = match opened {
        Ok(opened) => opened,
        Err(denied) => return denied.answer(),
    };
    let key_ends = expires_at.map(|at| (until(at), Ending::KeyExpired));
    let time_ends = shared.max_connection_time.map(|max| (max, Ending::MaxTime));
    let deadline = match (key_ends, time_ends) {
        (Some(key), Some(time)) => Some(if key.0 <= time.0 { key } else { time }),
        (one, other) => one.or(other),
    };
    let open = Open {
        subscription,
        put_sent: false,
        deadline: deadline.map(|(wait, why)| (Box::pin(actix_web::rt::time::sleep(wait)), why)),
        ending: Ending::Client,
        done: false,
    };
    let events = futures_util::stream::unfold(open, |mut open| async move {
        let chunk = open.next().await?;
        Some((Ok::<_, actix_web::Error>(chunk), open))
    });
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        // Proxies that buffer answers (nginx) pass this one on as it comes.
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(events)
}
