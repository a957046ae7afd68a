//! [`Console`]: what the console's handlers share.

use std::sync::Arc;

use actix_web::HttpRequest;
use service::Service;

/// Counts failed sign-ins per client, with the API's failed authentications (the app wires the
/// API's throttle in), so that guessing tokens is as slow through the console as through the API.
pub trait SignInThrottle: Send + Sync {
    /// How long the client of `req` must wait before it may try another token, if it must.
    fn blocked(&self, req: &HttpRequest) -> Option<std::time::Duration>;
    /// Counts a failed sign-in of `req`'s client.
    fn failed(&self, req: &HttpRequest);
}

/// What the console's handlers share.
#[derive(Clone)]
pub struct Console {
    pub(crate) service: Arc<Service>,
    pub(crate) throttle: Option<Arc<dyn SignInThrottle>>,
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("throttled", &self.throttle.is_some())
            .finish_non_exhaustive()
    }
}

impl Console {
    /// The console over `service`, its sign-ins not throttled (see [`Console::throttled_by`]).
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            throttle: None,
        }
    }

    /// The same console, its failed sign-ins counted by `throttle`.
    #[must_use]
    pub fn throttled_by(mut self, throttle: Arc<dyn SignInThrottle>) -> Self {
        self.throttle = Some(throttle);
        self
    }
}
