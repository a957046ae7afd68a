//! The actix application: the state built from the OpenAPI document, the routes, the fallback,
//! and what another adapter mounts beside the API ([`Mount`]).

use std::sync::Arc;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceFactory, ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderValue};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, App, HttpRequest};
use service::Service;
use utoipa_actix_web::AppExt;

use crate::readiness::ReadinessCheck;
use crate::state::ApiAbsent;
use crate::{
    limits, middleware, openapi, ops, telemetry, ApiError, AppState, AuthThrottle, HttpConfig,
    OpenApiJson,
};

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
            rate_limits: limits::Limiter::new(
                config.rate_limit,
                config.shared_rate_limits.as_ref(),
            ),
            sdk_rate_limits: limits::Limiter::new(
                config.sdk_rate_limit,
                config.shared_rate_limits.as_ref(),
            ),
            auth_throttle: AuthThrottle::new(config.auth_failure_limit),
            api_methods,
            routes,
            openapi_json,
            config,
            readiness_checks: checks,
        }))
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
    let allowed = if req.app_data::<ApiAbsent>().is_some() {
        Vec::new()
    } else {
        middleware::allowed_methods(&state, req.path())
    };
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
    build_app(state, mount, true)
}

/// `mount`'s routes alone (the SDK routes, on a listener of their own) with `/healthz`,
/// `/readyz` and the same middleware, but not the API: any other request is a 404, and no
/// token is asked for.
pub fn mount_only_app(
    state: web::Data<AppState>,
    mount: Mount,
) -> App<
    impl ServiceFactory<
        ServiceRequest,
        Config = (),
        Response = ServiceResponse<impl MessageBody>,
        Error = actix_web::Error,
        InitError = (),
    >,
> {
    build_app(state, Some(mount), false)
}

pub(crate) fn build_app(
    state: web::Data<AppState>,
    mount: Option<Mount>,
    api: bool,
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
    let metrics_on_api = state.config.metrics_on_api && api;
    let utoipa = App::new().into_utoipa_app();
    let utoipa = if api {
        utoipa.service(openapi::api_scope())
    } else {
        utoipa
    };
    let (app, _) = utoipa.split_for_parts();
    app.app_data(web::Data::new(OpenApiJson(state.openapi_json.clone())))
        .app_data(state)
        // Every body is read as bytes (after the permission check) within this limit: 413 past it.
        .app_data(web::PayloadConfig::new(limit))
        .service(ops::resource("/healthz", ops::healthz))
        .service(ops::resource("/readyz", ops::readyz))
        .configure(|routes| {
            if !api {
                routes.app_data(ApiAbsent);
            }
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
