//! The flagsvc REST API on actix-web.
//!
//! [`app`] builds the whole application: the routes under `/api/v2`, the middleware every request
//! passes (request id, authentication, rate limits, `Svc-API-Version`, JSON errors), body limits,
//! and the OpenAPI document, which is generated from the same route registrations.

mod app;
mod auth_throttle;
mod body_timeout;
pub mod catalogue;
mod client;
mod contract;
mod cors;
mod error;
mod exact_numbers;
mod in_request;
mod input;
pub mod limits;
mod list_params;
mod middleware;
mod openapi;
mod ops;
mod readiness;
mod routes;
mod server;
mod state;
mod telemetry;
mod wire;

pub use app::{app, app_with, mount_only_app, openapi_document, Mount};
pub use auth_throttle::{AuthThrottle, ClientKey, AUTH_FAILURE_WINDOW};
pub use cors::{CorsOrigins, InvalidOrigin};
pub use error::{ApiError, ErrorBody};
pub use in_request::InRequest;
pub use limits::{RateLimits, SharedBuckets, SharedRateLimits};
pub use readiness::{ReadinessCheck, READY_CHECK_EVERY, READY_TIMEOUT};
pub use routes::root::OpenApiJson;
pub use server::{mount_only_server, server, JsonErrorsIo};
pub use state::{AppState, HttpConfig, Route};
pub use telemetry::{
    install as install_metrics, metrics_app, run_upkeep as run_metrics_upkeep, MetricsError,
    UPKEEP_EVERY as METRICS_UPKEEP_EVERY,
};
pub use wire::{ApiRepresentations, MAX_PAGE_BYTES};
