//! The body read timeout: a request body must arrive within a set time of the request's head.
//!
//! actix-http times out request heads but not bodies, so a client that sends a head and then
//! trickles (or withholds) the body would hold its connection and handler forever. The
//! middleware wraps every request's payload in a [`Deadline`]: once the time is up, reading the
//! body fails, the request is answered 408 `request_timeout` and the connection is closed.

use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::error::PayloadError;
use actix_web::rt::time::{sleep, Sleep};
use actix_web::web::Bytes;
use futures_util::Stream;

/// A payload that fails with a timeout once `timeout` has passed since it was made.
pub(crate) struct Deadline {
    inner: Payload,
    timer: Pin<Box<Sleep>>,
    timeout: Duration,
    expired: Rc<Cell<bool>>,
    done: bool,
}

impl Deadline {
    /// Wraps `inner`; `expired` is set when the time runs out before the body is complete.
    pub(crate) fn new(inner: Payload, timeout: Duration, expired: Rc<Cell<bool>>) -> Self {
        Self {
            inner,
            timer: Box::pin(sleep(timeout)),
            timeout,
            expired,
            done: false,
        }
    }
}

impl Stream for Deadline {
    type Item = Result<Bytes, PayloadError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        // What has arrived is read, however late the handler asks for it (it may have waited
        // for its turn to write): the deadline is for a body that does not arrive.
        let next = Pin::new(&mut this.inner).poll_next(cx);
        if next.is_ready() {
            if let Poll::Ready(None) = next {
                this.done = true;
            }
            return next;
        }
        if this.timer.as_mut().poll(cx).is_ready() {
            this.done = true;
            this.expired.set(true);
            return Poll::Ready(Some(Err(PayloadError::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the request body did not arrive within {} ms",
                    this.timeout.as_millis()
                ),
            )))));
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// A body that arrived in time is read in full even when the handler reads it after the
    /// deadline (it waited behind other writes); one still missing then fails.
    #[actix_web::test]
    async fn a_body_that_arrived_is_read_after_the_deadline() {
        let (mut sender, payload) = actix_http::h1::Payload::create(true);
        sender.feed_data(Bytes::from_static(b"{}"));
        sender.feed_eof();
        let expired = Rc::new(Cell::new(false));
        let mut body = Deadline::new(
            Payload::from(payload),
            Duration::from_millis(1),
            expired.clone(),
        );
        sleep(Duration::from_millis(20)).await;
        assert_eq!(
            body.next().await.map(|r| r.ok()),
            Some(Some(Bytes::from_static(b"{}")))
        );
        assert!(body.next().await.is_none());
        assert!(!expired.get());

        let (_sender, payload) = actix_http::h1::Payload::create(false);
        let mut body = Deadline::new(
            Payload::from(payload),
            Duration::from_millis(1),
            expired.clone(),
        );
        assert!(matches!(body.next().await, Some(Err(_))));
        assert!(expired.get());
    }
}
