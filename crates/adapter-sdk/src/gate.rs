//! What the SDK routes ask of the server they are mounted in ([`Gate`]), and what their
//! handlers share.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpRequest;
use service::Service;

/// What the SDK routes ask of the server they are mounted in.
pub trait Gate: Send + Sync {
    /// How long the client of `req` must wait before it may present another key, when its
    /// failed authentications reached the server's limit; `None` when it may go on.
    fn blocked(&self, req: &HttpRequest) -> Option<Duration>;

    /// Counts a failed authentication of the client of `req`.
    fn failed(&self, req: &HttpRequest);

    /// Counts one request of `client` (an environment: every application holding its SDK key)
    /// on `route`; `Some(wait)` when it is over the limit and must wait that long.
    fn count<'a>(
        &'a self,
        client: &'a str,
        route: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Duration>> + 'a>>;
}

/// A [`Gate`] that throttles and limits nothing (tests; a server with limits off).
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenGate;

impl Gate for OpenGate {
    fn blocked(&self, _: &HttpRequest) -> Option<Duration> {
        None
    }

    fn failed(&self, _: &HttpRequest) {}

    fn count<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
    ) -> Pin<Box<dyn Future<Output = Option<Duration>> + 'a>> {
        Box::pin(std::future::ready(None))
    }
}

/// What the handlers share.
pub(crate) struct Shared {
    pub(crate) service: Arc<Service>,
    pub(crate) gate: Arc<dyn Gate>,
    /// How long a stream stays open at most (`None`: until the client or the server ends it).
    pub(crate) max_connection_time: Option<Duration>,
}
