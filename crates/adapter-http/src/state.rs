//! [`AppState`]: what every worker shares (the service, the limits, the route table, the served
//! document), and the settings of the HTTP layer ([`HttpConfig`]).

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::HeaderValue;
use actix_web::http::Method;
use actix_web::HttpRequest;
use service::Service;

use crate::client::client_key;
use crate::limits::SharedRateLimits;
use crate::readiness::ReadinessCheck;
use crate::{limits, AuthThrottle, CorsOrigins};

/// In the app data of an app that does not serve the API
/// ([`mount_only_app`](crate::mount_only_app)): the middleware finds none of its routes there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApiAbsent;

/// Settings of the HTTP layer.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Requests per 10 s per (token, route); five times that per token. 0 turns limiting off.
    pub rate_limit: u32,
    /// Requests per 10 s per (SDK key's environment, route) on the SDK routes mounted beside
    /// the API (five times that per environment); 0 turns it off. Counted where `rate_limit`
    /// is (this replica, or the shared store).
    pub sdk_rate_limit: u32,
    /// Where the rate limits are counted for every replica at once (Redis: crate
    /// `adapter-redis`); `None` counts them in this replica alone. When the shared store fails,
    /// the replica counts on its own until it answers.
    pub shared_rate_limits: Option<Arc<dyn SharedRateLimits>>,
    /// Largest accepted request body in bytes.
    pub body_limit: usize,
    /// Failed authentications per client address per [`AUTH_FAILURE_WINDOW`] before further
    /// attempts with a token this replica has not verified get 429. 0 turns throttling off.
    pub auth_failure_limit: u32,
    /// Whether the client address is the last address of `X-Forwarded-For` (set by a trusted
    /// proxy in front) instead of the peer address.
    pub trust_forwarded_for: bool,
    /// How long a request's body may take to arrive, from the end of its head: 408 past it.
    pub body_timeout: Duration,
    /// How long the head of a request (request line and headers) may take to arrive: 408 past
    /// it (applied by [`server`]).
    pub head_timeout: Duration,
    /// Origins that may call the API from a browser (CORS); none by default.
    pub cors_origins: CorsOrigins,
    /// Whether `GET /metrics` is served beside the API (the default), rather than only on a
    /// listener of its own ([`metrics_app`]).
    pub metrics_on_api: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            rate_limit: 1000,
            sdk_rate_limit: 100_000,
            shared_rate_limits: None,
            body_limit: 1024 * 1024,
            auth_failure_limit: 20,
            trust_forwarded_for: false,
            body_timeout: Duration::from_secs(30),
            head_timeout: Duration::from_secs(5),
            cors_origins: CorsOrigins::None,
            metrics_on_api: true,
        }
    }
}

/// A documented route: method and path template (`/api/v2/projects/{projectKey}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// HTTP method.
    pub method: Method,
    /// Path template.
    pub path: String,
    /// The query parameters it declares.
    pub query: Vec<String>,
}

impl Route {
    /// Whether a concrete request path matches this template.
    pub fn matches(&self, path: &str) -> bool {
        // Every request is matched against the route table: segment by segment, allocating
        // nothing.
        let mut want = self.path.trim_end_matches('/').split('/');
        let mut got = path.trim_end_matches('/').split('/');
        loop {
            match (want.next(), got.next()) {
                (None, None) => return true,
                (Some(w), Some(g)) if w.starts_with('{') && !g.is_empty() => {}
                (Some(w), Some(g)) if w == g && !w.starts_with('{') => {}
                _ => return false,
            }
        }
    }
}

/// Shared state of all workers.
pub struct AppState {
    pub(crate) service: Arc<Service>,
    pub(crate) rate_limits: Option<limits::Limiter>,
    /// The SDK routes' limits (`sdk_rate_limit`).
    pub(crate) sdk_rate_limits: Option<limits::Limiter>,
    pub(crate) auth_throttle: Option<AuthThrottle>,
    pub(crate) routes: Vec<Route>,
    /// Every method of the API, for `Access-Control-Allow-Methods`.
    pub(crate) api_methods: HeaderValue,
    pub(crate) openapi_json: String,
    pub(crate) config: HttpConfig,
    /// What `/readyz` checks besides the database, by name.
    pub(crate) readiness_checks: Vec<(String, ReadinessCheck)>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// Counts one request of SDK client `client` (an environment) on `route` in the SDK
    /// routes' rate limits ([`HttpConfig::sdk_rate_limit`]): how long it must wait when over
    /// them.
    pub async fn count_sdk_request(&self, client: &str, route: &str) -> Option<Duration> {
        let limits = self.sdk_rate_limits.as_ref()?;
        match limits.check(client, route).await {
            Ok(_) => None,
            Err(limited) => Some(Duration::from_secs(limited.retry_after_secs)),
        }
    }

    /// How long the client of `req` must wait before it may present another secret, when its
    /// failed authentications reached the limit (`auth_failure_limit`): another door to the same
    /// tokens (the console's sign-in) asks this too, so that failures anywhere count together.
    pub fn authentication_blocked(&self, req: &HttpRequest) -> Option<Duration> {
        let throttle = self.auth_throttle.as_ref()?;
        throttle.blocked(
            client_key(req, self.config.trust_forwarded_for),
            std::time::Instant::now(),
        )
    }

    /// Counts a failed authentication of `req`'s client (see
    /// [`AppState::authentication_blocked`]).
    pub fn record_failed_authentication(&self, req: &HttpRequest) {
        if let Some(throttle) = &self.auth_throttle {
            throttle.record_failure(
                client_key(req, self.config.trust_forwarded_for),
                std::time::Instant::now(),
            );
        }
    }

    /// Every route of the API (under `/api/v2`), as documented; the operations endpoints
    /// (`/healthz`, `/readyz`, `/metrics`) are outside it.
    pub fn routes(&self) -> &[Route] {
        &self.routes
    }
}
