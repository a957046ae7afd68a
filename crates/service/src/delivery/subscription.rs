//! [`Subscription`]: one stream's share of its environment's channel.

use std::sync::Arc;

use async_broadcast::{Receiver, RecvError, TryRecvError};
use bytes::Bytes;

/// What a channel sends its streams.
#[derive(Debug, Clone)]
pub(crate) enum Message {
    /// An event, serialised: the same bytes for every stream.
    Event(Bytes),
    /// The streams opened with SDK key `key` end at `at` (milliseconds since the epoch), or at
    /// once when `None` (the key no longer opens the environment).
    KeyEnds { key: Arc<str>, at: Option<i64> },
}

/// What a stream is to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem {
    /// Send this event (a `put`, `patch`, `delete` or heartbeat, serialised).
    Event(Bytes),
    /// The key that opened the stream was replaced: end the stream at this moment
    /// (milliseconds since the epoch), when the old key expires.
    KeyExpiresAt(i64),
}

/// Why a stream ends on the server's side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// It fell more than [`STREAM_BUFFER`](crate::STREAM_BUFFER) events behind.
    TooSlow,
    /// Its environment is gone, or this replica stopped serving it.
    Closed,
    /// The key that opened it no longer opens the environment (replaced without an expiry,
    /// or the environment's keys changed so).
    KeyRevoked,
}

/// What gives a stream's place back (in the limits and the channel's keys) when it ends.
pub(crate) trait Release: Send + Sync {
    fn release(&self, key: &Arc<str>);
}

/// One stream's share of its environment's channel: the `put` to send first, then the events.
/// Dropping it gives the stream's place in the limits back.
pub struct Subscription {
    pub(crate) put: Bytes,
    pub(crate) events: Receiver<Message>,
    pub(crate) key: Arc<str>,
    pub(crate) place: Arc<dyn Release>,
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription").finish_non_exhaustive()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.place.release(&self.key);
    }
}

impl Subscription {
    /// The `put` event to send first.
    pub fn put(&self) -> &Bytes {
        &self.put
    }

    /// What `message` asks of this stream; `None` when it is for other streams.
    fn read(&self, message: Message) -> Option<Result<StreamItem, StreamEnd>> {
        match message {
            Message::Event(event) => Some(Ok(StreamItem::Event(event))),
            Message::KeyEnds { key, at } if key == self.key => Some(match at {
                Some(at) => Ok(StreamItem::KeyExpiresAt(at)),
                None => Err(StreamEnd::KeyRevoked),
            }),
            Message::KeyEnds { .. } => None,
        }
    }

    /// The next item, if one is waiting (see [`Subscription::next`]); `None` if none is.
    pub fn try_next(&mut self) -> Option<Result<StreamItem, StreamEnd>> {
        loop {
            let message = match self.events.try_recv() {
                Ok(message) => message,
                Err(TryRecvError::Overflowed(_)) => return Some(Err(StreamEnd::TooSlow)),
                Err(TryRecvError::Closed) => return Some(Err(StreamEnd::Closed)),
                Err(TryRecvError::Empty) => return None,
            };
            if let Some(item) = self.read(message) {
                return Some(item);
            }
        }
    }

    /// The next item, once there is one; why the stream ends otherwise.
    ///
    /// # Errors
    /// [`StreamEnd`]: the stream is to be closed.
    pub async fn next(&mut self) -> Result<StreamItem, StreamEnd> {
        loop {
            let message = match self.events.recv_direct().await {
                Ok(message) => message,
                Err(RecvError::Overflowed(_)) => return Err(StreamEnd::TooSlow),
                Err(RecvError::Closed) => return Err(StreamEnd::Closed),
            };
            if let Some(item) = self.read(message) {
                return item;
            }
        }
    }
}
