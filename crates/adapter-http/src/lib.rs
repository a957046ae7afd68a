//! The flagsvc REST API on actix-web.
//!
//! [`app`] builds the whole application: the routes under `/api/v2`, the middleware every request
//! passes (request id, authentication, rate limits, `Svc-API-Version`, JSON errors), body limits,
//! and the OpenAPI document, which is generated from the same route registrations.

mod auth_throttle;
mod body_timeout;
pub mod catalogue;
mod contract;
mod cors;
mod error;
mod exact_numbers;
mod input;
mod limits;
mod middleware;
mod openapi;
mod ops;
mod routes;
mod server;
mod shared_limits;
mod telemetry;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, App, HttpRequest};
use service::Service;
use utoipa_actix_web::AppExt;

pub use auth_throttle::{AuthThrottle, ClientKey, AUTH_FAILURE_WINDOW};
pub use cors::{CorsOrigins, InvalidOrigin};
pub use error::{ApiError, ErrorBody};
pub use limits::RateLimits;
pub use ops::{ReadinessCheck, READY_CHECK_EVERY, READY_TIMEOUT};
pub use routes::root::OpenApiJson;
pub use server::{server, InRequest, JsonErrorsIo};
pub use shared_limits::{RedisLimitError, RedisRateLimits, DEFAULT_KEY_PREFIX, REDIS_TIMEOUT};
pub use telemetry::{install as install_metrics, metrics_app, MetricsError};
pub use wire::{ApiRepresentations, MAX_PAGE_BYTES};

/// Settings of the HTTP layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// Requests per 10 s per (token, route); five times that per token. 0 turns limiting off.
    pub rate_limit: u32,
    /// Where the rate limits are counted for every replica at once (Redis); `None` counts them
    /// in this replica alone. When Redis fails, the replica counts on its own until it answers.
    pub rate_limit_redis: Option<RedisRateLimits>,
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
            rate_limit_redis: None,
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
    service: Arc<Service>,
    rate_limits: Option<limits::Limiter>,
    auth_throttle: Option<AuthThrottle>,
    routes: Vec<Route>,
    /// Every method of the API, for `Access-Control-Allow-Methods`.
    api_methods: HeaderValue,
    openapi_json: String,
    config: HttpConfig,
    /// What `/readyz` checks besides the database, by name.
    readiness_checks: Vec<(String, ops::ReadinessCheck)>,
    /// The database's readiness, checked on a thread of its own from the first `/readyz` on.
    readiness: std::sync::OnceLock<Arc<ops::ReadinessMonitor>>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// State for `service` with `config`; build once and share with every worker.
    ///
    /// # Errors
    /// The OpenAPI document could not be serialised (the server would otherwise serve a wrong
    /// one, so it does not start).
    pub fn new(
        service: Arc<Service>,
        config: HttpConfig,
    ) -> Result<web::Data<Self>, serde_json::Error> {
        Self::with_readiness_checks(service, config, Vec::new())
    }

    /// As [`AppState::new`], with `checks` (by name) that `GET /readyz` runs besides asking the
    /// database: the parts of the process that must run for it to serve.
    ///
    /// # Errors
    /// As [`AppState::new`].
    pub fn with_readiness_checks(
        service: Arc<Service>,
        config: HttpConfig,
        checks: Vec<(String, ReadinessCheck)>,
    ) -> Result<web::Data<Self>, serde_json::Error> {
        let document = openapi::document();
        let routes = openapi::routes(&document);
        let openapi_json = openapi::constrained(&document)?.to_string();
        let mut methods: Vec<&str> = Vec::new();
        for route in &routes {
            if !methods.contains(&route.method.as_str()) {
                methods.push(route.method.as_str());
            }
        }
        let api_methods = HeaderValue::from_str(&methods.join(", "))
            .unwrap_or_else(|_| HeaderValue::from_static("GET"));
        Ok(web::Data::new(Self {
            service,
            rate_limits: limits::Limiter::new(config.rate_limit, config.rate_limit_redis.as_ref()),
            auth_throttle: AuthThrottle::new(config.auth_failure_limit),
            api_methods,
            routes,
            openapi_json,
            config,
            readiness_checks: checks,
            readiness: std::sync::OnceLock::new(),
        }))
    }

    /// How long the client of `req` must wait before it may present another secret, when its
    /// failed authentications reached the limit (`auth_failure_limit`): another door to the same
    /// tokens (the console's sign-in) asks this too, so that failures anywhere count together.
    pub fn authentication_blocked(&self, req: &HttpRequest) -> Option<Duration> {
        let throttle = self.auth_throttle.as_ref()?;
        throttle.blocked(
            middleware::client_key(req, self.config.trust_forwarded_for),
            std::time::Instant::now(),
        )
    }

    /// Counts a failed authentication of `req`'s client (see
    /// [`AppState::authentication_blocked`]).
    pub fn record_failed_authentication(&self, req: &HttpRequest) {
        if let Some(throttle) = &self.auth_throttle {
            throttle.record_failure(
                middleware::client_key(req, self.config.trust_forwarded_for),
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

/// The OpenAPI document, as served at `/api/v2/openapi.json`.
///
/// # Errors
/// The document could not be serialised (a bug: the server refuses to start on it).
pub fn openapi_document() -> Result<serde_json::Value, serde_json::Error> {
    openapi::constrained(&openapi::document())
}

/// Requests that match no route: 405 (with `Allow`) when the path exists with other methods,
/// else 404; outside `/api/`, what the mounted adapter answers (see [`Mount::with_not_found`]).
async fn fallback(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> Result<actix_web::HttpResponse, ApiError> {
    // Outside the API, the mounted adapter's own page (the console's HTML 404).
    if !(req.path() == "/api" || req.path().starts_with("/api/")) {
        if let Some(page) = req.app_data::<web::Data<NotFoundPage>>() {
            return Ok((page.0)(&req));
        }
    }
    let allowed = middleware::allowed_methods(&state, req.path());
    // A path the route table knows for this method but the router did not take (another
    // spelling of it) is no route either.
    if allowed.is_empty() || allowed.contains(req.method()) {
        return Err(ApiError::not_found(format!(
            "no route {} {}",
            req.method(),
            req.path()
        )));
    }
    let names: Vec<&str> = allowed.iter().map(Method::as_str).collect();
    let allow = HeaderValue::from_str(&names.join(", "))
        .unwrap_or_else(|_| HeaderValue::from_static("GET"));
    Err(ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not allowed on {}; allowed: {}",
            req.method(),
            req.path(),
            names.join(", ")
        ),
    )
    .with_header(header::ALLOW, allow))
}

/// Routes another driving adapter registers beside the API (the web console, at `/`): they
/// pass the same middleware (request id, log line, metrics), and are neither in the OpenAPI
/// document nor authenticated by the API's `Authorization` header.
#[derive(Clone)]
pub struct Mount {
    routes: Arc<dyn Fn(&mut web::ServiceConfig) + Send + Sync>,
    not_found: Option<NotFoundPage>,
}

/// What answers a request outside the API that matches no route.
#[derive(Clone)]
struct NotFoundPage(Arc<dyn Fn(&HttpRequest) -> actix_web::HttpResponse + Send + Sync>);

impl Mount {
    /// The routes `routes` registers, beside the API's.
    pub fn new(routes: impl Fn(&mut web::ServiceConfig) + Send + Sync + 'static) -> Self {
        Self {
            routes: Arc::new(routes),
            not_found: None,
        }
    }

    /// A request outside `/api/` that matches no route is answered by `page` (the console's
    /// own 404 page) instead of the API's JSON error.
    #[must_use]
    pub fn with_not_found(
        mut self,
        page: impl Fn(&HttpRequest) -> actix_web::HttpResponse + Send + Sync + 'static,
    ) -> Self {
        self.not_found = Some(NotFoundPage(Arc::new(page)));
        self
    }
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mount")
            .field("not_found", &self.not_found.is_some())
            .finish_non_exhaustive()
    }
}

/// The application: routes, middleware, limits and the OpenAPI document.
pub fn app(
    state: web::Data<AppState>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    app_with(state, None)
}

/// [`app`], with `mount`'s routes beside the API's.
pub fn app_with(
    state: web::Data<AppState>,
    mount: Option<Mount>,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    let limit = state.config.body_limit;
    let metrics_on_api = state.config.metrics_on_api;
    let (app, _) = App::new()
        .into_utoipa_app()
        .service(openapi::api_scope())
        .split_for_parts();
    app.app_data(web::Data::new(OpenApiJson(state.openapi_json.clone())))
        .app_data(state)
        // Every body is read as bytes (after the permission check) within this limit: 413 past it.
        .app_data(web::PayloadConfig::new(limit))
        .service(ops::resource("/healthz", ops::healthz))
        .service(ops::resource("/readyz", ops::readyz))
        .configure(|routes| {
            if metrics_on_api {
                routes.service(ops::resource("/metrics", telemetry::metrics));
            }
            if let Some(mount) = mount {
                if let Some(not_found) = mount.not_found {
                    routes.app_data(web::Data::new(not_found));
                }
                (mount.routes)(routes);
            }
        })
        .default_service(web::to(fallback))
        // It also writes the request's log line (see `middleware::api_middleware`).
        .wrap(actix_web::middleware::from_fn(middleware::api_middleware))
}
