//! What every request goes through: a request id, authentication, rate limits, the API version,
//! and JSON errors for everything (including routing and body errors raised outside handlers).

use std::borrow::Cow;
use std::time::{Duration, Instant};

use std::cell::Cell;
use std::rc::Rc;

use actix_http::ConnectionType;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, FromRequest, HttpMessage, HttpRequest};
use domain::version::ApiVersion;
use service::{Caller, ServiceError};
use tracing::Instrument;

use crate::auth_throttle::AUTH_FAILURE_WINDOW;
use crate::body_timeout::Deadline;
use crate::client::{client_ip, client_key};
use crate::cors;
use crate::error::ApiError;
use crate::{telemetry, AppState, InRequest};

/// Routes that need no access token.
fn is_public(path: &str) -> bool {
    matches!(path, "/api/v2" | "/api/v2/" | "/api/v2/openapi.json")
}

const VERSION_HEADER: &str = "svc-api-version";

fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

/// The access token from `Authorization` (a leading `Bearer ` is tolerated).
fn presented_token(req: &ServiceRequest) -> Option<String> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .unwrap_or(value)
        .trim();
    (!token.is_empty()).then(|| token.to_owned())
}

/// What the checks before the handler decided.
struct Admission {
    version: ApiVersion,
    headers: Vec<(HeaderName, HeaderValue)>,
}

/// `X-Ratelimit-Route-Remaining`, `X-Ratelimit-Global-Remaining` and `X-Ratelimit-Reset`, whichever
/// limiter counted.
pub(crate) fn rate_limit_headers(
    route: u32,
    global: u32,
    reset_ms: i64,
) -> Vec<(HeaderName, HeaderValue)> {
    vec![
        (
            HeaderName::from_static("x-ratelimit-route-remaining"),
            header_value(&route.to_string()),
        ),
        (
            HeaderName::from_static("x-ratelimit-global-remaining"),
            header_value(&global.to_string()),
        ),
        (
            HeaderName::from_static("x-ratelimit-reset"),
            header_value(&reset_ms.to_string()),
        ),
    ]
}

/// A request's method as `/metrics` and the request log name it: one of HTTP's own, or
/// `other` (a client may send any token as a method, and must not make a series or a line of
/// its own choosing).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// At most this much of a request's path goes into its log line (a path may be as long as the
/// head allows).
const LOGGED_PATH_BYTES: usize = 512;

/// `path`, cut at a character boundary to [`LOGGED_PATH_BYTES`] (with `…` when cut).
fn logged_path(path: &str) -> std::borrow::Cow<'_, str> {
    if path.len() <= LOGGED_PATH_BYTES {
        return path.into();
    }
    let mut end = LOGGED_PATH_BYTES;
    while !path.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &path[..end]).into()
}

/// 429 for an address over its failed-authentication limit.
fn auth_throttled(limit: u32, wait: Duration) -> ApiError {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let secs = secs.max(1);
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "rate_limited",
        format!(
            "too many failed authentications from this address (limit: {limit} failed authentications per {} s); retry in {secs} s",
            AUTH_FAILURE_WINDOW.as_secs()
        ),
    )
    .with_header(header::RETRY_AFTER, header_value(&secs.to_string()))
}

/// The `Svc-API-Version` the request names, if any.
///
/// # Errors
/// 400 for a value that is not exactly one of the versions (surrounding whitespace is not part
/// of an HTTP field value and is ignored).
fn requested_version(req: &ServiceRequest) -> Result<Option<ApiVersion>, ApiError> {
    let Some(value) = req.headers().get(VERSION_HEADER) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .and_then(|v| ApiVersion::parse(v).ok())
        .map(Some)
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "invalid Svc-API-Version '{}': valid versions are 20240415, 20220603 and beta",
                String::from_utf8_lossy(value.as_bytes())
            ))
        })
}

/// The documented route a request is for: its method and path template.
fn route_of<'a>(state: &'a AppState, req: &ServiceRequest) -> Option<&'a crate::Route> {
    // An app that does not serve the API has none of its routes.
    if req.app_data::<crate::state::ApiAbsent>().is_some() {
        return None;
    }
    state
        .routes
        .iter()
        .find(|route| route.method == req.method() && route.matches(req.path()))
}

/// The checks before the handler, in the order of the API's decisions: route (a request for no
/// documented route, or with a method the path does not have, passes straight to the 404/405
/// handler), authentication (401, and 429 for a throttled address), rate limits (429), the
/// `Svc-API-Version` header (400). Public routes need no token but still check the version.
/// On success the caller is in the request's extensions.
async fn admit(
    req: &ServiceRequest,
    state: &AppState,
    route: &crate::Route,
    admission: &mut Admission,
    request_id: &str,
) -> Result<(), ApiError> {
    if is_public(req.path()) {
        if let Some(requested) = requested_version(req)? {
            admission.version = requested;
        }
        return Ok(());
    }
    let secret = presented_token(req).ok_or_else(|| {
        ApiError::unauthorized("an access token is required in the Authorization header")
    })?;
    // A token verified recently is checked here, on the async thread; only a token to verify
    // (or whose use is due to be recorded) takes a trip through the blocking pool.
    let cached = state.service.authentication().authenticate_cached(&secret);
    // Failed authentications are throttled per client address; a token this replica verified
    // recently never touches the counter.
    let throttle = state
        .auth_throttle
        .as_ref()
        .filter(|_| cached.is_none() && !state.service.authentication().is_verified(&secret))
        .map(|throttle| {
            (
                throttle,
                client_key(req.request(), state.config.trust_forwarded_for),
            )
        });
    if let Some((throttle, client)) = throttle {
        if let Some(wait) = throttle.blocked(client, Instant::now()) {
            // Others' failures from this address (a NAT, a proxy) do not lock out a valid token:
            // a generated secret (unguessable, so admitting it tells a guesser nothing) that the
            // replica knows of goes on, decided without a store lookup per guess.
            let admitted = service::is_generated_secret(&secret) && {
                let (service, secret) = (state.service.clone(), secret.clone());
                web::block(move || service.authentication().may_be_a_token(&secret))
                    .await
                    .is_ok_and(|known| known.unwrap_or(false))
            };
            if !admitted {
                return Err(auth_throttled(throttle.limit(), wait));
            }
        }
    }
    let authenticated = match cached {
        Some(caller) => Ok(caller),
        None => {
            let service = state.service.clone();
            web::block(move || service.authentication().authenticate(&secret))
                .await
                .map_err(|_| {
                    ApiError::from_status(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "the server is overloaded".into(),
                    )
                })?
        }
    };
    if let (
        Err(ServiceError::Unauthenticated(_) | ServiceError::NotAnAccessToken(_)),
        Some((throttle, client)),
    ) = (&authenticated, throttle)
    {
        throttle.record_failure(client, Instant::now());
    }
    // Named by this request's id: the webhook deliveries its changes queue carry it.
    let caller = authenticated?.for_request(request_id);
    admission.version = caller.default_api_version();
    if let Some(limits) = &state.rate_limits {
        // Keyed by the token's `_id` (never its secret) and the route's pattern (not the path).
        let key = caller
            .token_id()
            .map_or(caller.member_id().as_str(), |id| id.as_str());
        match limits
            .check(key, &format!("{} {}", req.method(), route.path))
            .await
        {
            Ok(left) => {
                admission.headers = rate_limit_headers(left.route, left.global, left.reset_ms)
            }
            Err(limited) => {
                let mut err = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    format!("too many requests; retry in {} s", limited.retry_after_secs),
                )
                .with_header(
                    header::RETRY_AFTER,
                    header_value(&limited.retry_after_secs.to_string()),
                );
                for (name, value) in rate_limit_headers(
                    limited.remaining.route,
                    limited.remaining.global,
                    limited.reset_ms,
                ) {
                    err = err.with_header(name, value);
                }
                return Err(err);
            }
        }
    }
    if let Some(requested) = requested_version(req)? {
        admission.version = requested;
    }
    // Only a caller who may use the API learns what it thinks of the request's characters.
    crate::input::check_request_line(req.path(), req.query_string())?;
    if req.method() != Method::GET {
        refuse_undeclared_query(req, &route.query)?;
    }
    req.extensions_mut().insert(caller);
    Ok(())
}

/// A write with a query parameter its route does not declare is refused rather than run
/// without it: `?dryrun=true` (for `dryRun`) must not make a real change. Reads ignore unknown
/// parameters, as caches and browsers add their own.
fn refuse_undeclared_query(req: &ServiceRequest, declared: &[String]) -> Result<(), ApiError> {
    for (name, _) in form_urlencoded::parse(req.query_string().as_bytes()) {
        if !declared.iter().any(|d| *d == name) {
            let takes = if declared.is_empty() {
                "none".to_owned()
            } else {
                declared.join(", ")
            };
            return Err(ApiError::invalid(format!(
                "unknown query parameter '{name}' for {} {}: it takes {takes}",
                req.method(),
                req.path()
            )));
        }
    }
    Ok(())
}

/// Marks the connection as handling a request for as long as it lives.
struct Handling(InRequest);

impl Handling {
    fn start(flag: InRequest) -> Self {
        flag.set(true);
        Self(flag)
    }
}

impl Drop for Handling {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Puts the body behind a deadline of `timeout` from now; the flag says whether it expired.
fn limit_body(req: &mut ServiceRequest, timeout: Option<std::time::Duration>) -> Rc<Cell<bool>> {
    let body_expired = Rc::new(Cell::new(false));
    if let Some(timeout) = timeout {
        let payload = req.take_payload();
        if !matches!(payload, Payload::None) {
            let deadline = Deadline::new(payload, timeout, body_expired.clone());
            req.set_payload(Payload::Stream {
                payload: Box::pin(deadline),
            });
        }
    }
    body_expired
}

/// A CORS preflight, answered before routing and authentication (a browser sends no token
/// with it): 204 with the allowed methods, or 403 for an origin not allowed.
fn answer_preflight(
    req: ServiceRequest,
    cors_origin: Option<&HeaderValue>,
    state: Option<&AppState>,
    request_id: &str,
) -> ServiceResponse<BoxBody> {
    match (cors_origin, state) {
        (Some(origin), Some(state)) => {
            let mut answer = actix_web::HttpResponse::NoContent().finish();
            cors::add_preflight_headers(answer.headers_mut(), origin.clone(), &state.api_methods);
            req.into_response(answer)
        }
        _ => {
            let origin = req
                .headers()
                .get(header::ORIGIN)
                .map(|o| String::from_utf8_lossy(o.as_bytes()).into_owned())
                .unwrap_or_default();
            let err = ApiError::forbidden(format!(
                "cross-origin requests from '{origin}' are not allowed: the server's --cors-origins does not list it"
            ));
            req.into_response(err.to_response(Some(request_id)))
        }
    }
}

/// The headers of every answer: CORS, the request id, the API version and what admission added.
fn add_answer_headers(
    headers: &mut actix_web::http::header::HeaderMap,
    (cors_enabled, cors_origin): (bool, Option<HeaderValue>),
    request_id: &str,
    admission: Admission,
) {
    if cors_enabled {
        cors::add_vary(headers);
    }
    if let Some(origin) = cors_origin {
        cors::add_response_headers(headers, origin);
    }
    headers.insert(
        HeaderName::from_static("x-request-id"),
        header_value(request_id),
    );
    headers.insert(
        HeaderName::from_static(VERSION_HEADER),
        header_value(&admission.version.to_string()),
    );
    for (name, value) in admission.headers {
        headers.insert(name, value);
    }
}

/// The middleware, installed on the whole app.
///
/// # Errors
/// Only actix's own failures; every API error becomes a JSON error response.
pub async fn api_middleware(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let request_id = uuid::Uuid::new_v4().simple().to_string();
    let started = Instant::now();
    let _in_flight = telemetry::InFlight::start();
    let method = method_label(req.method());
    let state = req.app_data::<web::Data<AppState>>().cloned();
    // Looked up once: admission, `/metrics` and the log line all name it.
    let route = state.as_deref().and_then(|state| route_of(state, &req));
    let route_label = metrics_route(route, &req);
    let peer = state.as_ref().map_or_else(
        || req.peer_addr().map(|a| a.ip()),
        |state| client_ip(req.request(), state.config.trust_forwarded_for),
    );
    // What the handler logs (on this thread or, see `wire`, in the blocking pool) is in it.
    let span = tracing::info_span!("request", request_id = %request_id, route = %route_label);
    // The head has arrived: the connection's head timer stops until this request is answered.
    let handling = req.conn_data::<InRequest>().cloned().map(Handling::start);
    // The body must arrive within the body timeout of the head.
    let body_timeout = state.as_ref().map(|state| state.config.body_timeout);
    let body_expired = limit_body(&mut req, body_timeout);
    let mut admission = Admission {
        version: ApiVersion::CURRENT,
        headers: vec![],
    };
    let cors_origin = state
        .as_ref()
        .and_then(|state| cors::allowed_origin(&state.config.cors_origins, req.headers()));
    let cors_enabled = state
        .as_ref()
        .is_some_and(|state| state.config.cors_origins.enabled());
    let preflight = cors::is_preflight(req.method(), req.headers());
    let mut response = if preflight {
        // Answered before routing and authentication: a browser sends no token with it.
        answer_preflight(
            req,
            cors_origin.as_ref(),
            state.as_deref().map(|state| &**state),
            &request_id,
        )
    } else {
        let admitted = match (&state, route) {
            (Some(state), Some(route)) => {
                admit(&req, state, route, &mut admission, &request_id).await
            }
            // No documented route: straight to the 404/405 handler.
            _ => Ok(()),
        };
        match admitted {
            Ok(()) => {
                req.extensions_mut().insert(admission.version);
                // Handler and routing errors arrive as responses; an `Err` here is actix's own
                // failure and is rendered by actix.
                let response = next
                    .call(req)
                    .instrument(span.clone())
                    .await?
                    .map_into_boxed_body();
                match body_timeout.filter(|_| body_expired.get()) {
                    Some(timeout) => {
                        if let Some(Handling(flag)) = &handling {
                            flag.closing();
                        }
                        body_timed_out(response, timeout, &request_id)
                    }
                    None => json_errors(response, &request_id),
                }
            }
            Err(err) => {
                count_refusal(&err);
                req.into_response(err.to_response(Some(&request_id)))
            }
        }
    };
    add_answer_headers(
        response.headers_mut(),
        (cors_enabled, cors_origin.filter(|_| !preflight)),
        &request_id,
        admission,
    );
    let took = started.elapsed();
    let status = response.status().as_u16();
    telemetry::answered(&route_label, method, status, took);
    // The caller's token by `_id` (never its secret); `-` when none was verified.
    let token_id = response
        .request()
        .extensions()
        .get::<Caller>()
        .and_then(|caller| caller.token_id().map(ToString::to_string));
    tracing::info!(
        parent: &span,
        method = %method,
        path = %logged_path(response.request().path()),
        status,
        duration_ms = took.as_secs_f64() * 1000.0,
        token_id = token_id.as_deref().unwrap_or("-"),
        peer = %peer.map_or_else(|| "-".to_owned(), |ip| ip.to_string()),
        "answered"
    );
    Ok(response)
}

/// The route a request is counted under in `/metrics`: its pattern (`/api/v2/flags/{projectKey}`),
/// the operations endpoints by name, and `unmatched` for anything else (so that no path a client
/// makes up adds a series).
fn metrics_route<'a>(route: Option<&'a crate::Route>, req: &ServiceRequest) -> Cow<'a, str> {
    match (route, req.path()) {
        (Some(route), _) => Cow::Borrowed(&route.path),
        (None, "/healthz") => Cow::Borrowed("/healthz"),
        (None, "/readyz") => Cow::Borrowed("/readyz"),
        (None, "/metrics") => Cow::Borrowed("/metrics"),
        // A route mounted beside the API (the console's pages) by its registered pattern: as
        // bounded a set as the API's.
        (None, path) if !(path == "/api" || path.starts_with("/api/")) => req
            .match_pattern()
            .map_or(Cow::Borrowed("unmatched"), Cow::Owned),
        (None, _) => Cow::Borrowed("unmatched"),
    }
}

/// Counts a request refused before its handler: failed authentications, and rate limits (of
/// requests, or of failed authentications from one address).
fn count_refusal(err: &ApiError) {
    match err.status {
        StatusCode::UNAUTHORIZED => {
            metrics::counter!("flagsvc_auth_failures_total").increment(1);
        }
        StatusCode::TOO_MANY_REQUESTS => {
            // Only the limit of requests tells what is left of it.
            let limit = if err
                .headers
                .iter()
                .any(|(name, _)| name.as_str() == "x-ratelimit-route-remaining")
            {
                "requests"
            } else {
                "failed_authentications"
            };
            metrics::counter!("flagsvc_rate_limit_rejections_total", "limit" => limit).increment(1);
        }
        _ => {}
    }
}

/// 408 for a body that did not arrive in time; the connection is closed, since the rest of the
/// body may still be on its way.
fn body_timed_out(
    response: ServiceResponse<BoxBody>,
    timeout: Duration,
    request_id: &str,
) -> ServiceResponse<BoxBody> {
    let error = ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "request_timeout",
        format!(
            "the request body did not arrive within {} ms",
            timeout.as_millis()
        ),
    );
    let mut answer = error.to_response(Some(request_id));
    answer.head_mut().set_connection_type(ConnectionType::Close);
    let (req, _) = response.into_parts();
    ServiceResponse::new(req, answer)
}

/// Turns every error response into the JSON error shape, with the request id.
fn json_errors(response: ServiceResponse<BoxBody>, request_id: &str) -> ServiceResponse<BoxBody> {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    // A page of a mounted adapter (the web console) says what went wrong in its own words, and
    // so does any answer a mounted adapter made itself outside the API (the SDK routes' JSON
    // errors, in their protocol's shape).
    let is_page = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/html"));
    let path = response.request().path();
    let outside_api = !(path == "/api" || path.starts_with("/api/"));
    if is_page || (outside_api && response.response().error().is_none()) {
        return response;
    }
    let api_error = match response.response().error() {
        Some(err) => match err.as_error::<ApiError>() {
            Some(api) => api.clone(),
            // A body past the limit (actix's extractor): say what the limit is.
            None if status == StatusCode::PAYLOAD_TOO_LARGE => {
                match response.request().app_data::<web::Data<AppState>>() {
                    Some(state) => ApiError::payload_too_large(state.config.body_limit),
                    None => ApiError::from_status(status, err.to_string()),
                }
            }
            None => ApiError::from_status(status, err.to_string()),
        },
        None => ApiError::from_status(
            status,
            status.canonical_reason().unwrap_or("error").to_owned(),
        ),
    };
    let (req, _) = response.into_parts();
    ServiceResponse::new(req, api_error.to_response(Some(request_id)))
}

/// The caller, for handlers of authenticated routes.
#[derive(Debug, Clone)]
pub struct Auth(pub Caller);

impl FromRequest for Auth {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(
            req.extensions()
                .get::<Caller>()
                .cloned()
                .map(Auth)
                .ok_or_else(|| {
                    ApiError::unauthorized(
                        "an access token is required in the Authorization header",
                    )
                }),
        )
    }
}

/// The API version in effect for the request.
#[derive(Debug, Clone, Copy)]
pub struct Version(pub ApiVersion);

impl FromRequest for Version {
    type Error = ApiError;
    type Future = std::future::Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(Ok(Version(
            req.extensions()
                .get::<ApiVersion>()
                .copied()
                .unwrap_or(ApiVersion::CURRENT),
        )))
    }
}

/// Methods allowed on a path, from the route table; used for 405 versus 404.
pub fn allowed_methods(state: &AppState, path: &str) -> Vec<Method> {
    state
        .routes
        .iter()
        .filter(|route| route.matches(path))
        .map(|route| route.method.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_rate_limit_headers_say_what_is_left_and_when_all_is_back() {
        let headers = super::rate_limit_headers(3, 24, 1_700_000_004_000);
        let values: Vec<(&str, &str)> = headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().unwrap()))
            .collect();
        assert_eq!(
            values,
            [
                ("x-ratelimit-route-remaining", "3"),
                ("x-ratelimit-global-remaining", "24"),
                ("x-ratelimit-reset", "1700000004000"),
            ]
        );
    }
}
