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
        let next = Pin::new(&mut this.inner).poll_next(cx);
        if let Poll::Ready(None) = next {
            this.done = true;
        }
        next
    }
}
