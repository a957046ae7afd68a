//! The bridge from a handler to the blocking use cases: at once, or queued behind a write.

use actix_web::web;
use service::{Queued, QueuedWrite, Service, ServiceResult};

use crate::error::ApiError;
use crate::AppState;

/// Runs a use case on the blocking pool (diesel is synchronous) and maps its error.
///
/// # Errors
/// The use case's error, or 503 when the blocking pool is gone.
pub async fn call<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&Service) -> ServiceResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    let service = state.service.clone();
    // The request's span goes along: what the use case logs carries the request id.
    let span = tracing::Span::current();
    web::block(move || span.in_scope(|| work(&service)))
        .await
        .map_err(|_| {
            ApiError::from_status(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                "the server is shutting down".into(),
            )
        })?
        .map_err(ApiError::from)
}

/// Runs a use case's queued write: waits for its turn here, holding no blocking thread (the
/// changes queued behind one writer leave the pool to the next writer and the reads), and
/// writes on the blocking pool when its turn comes.
///
/// # Errors
/// The use case's error, or 503 when the blocking pool is gone.
pub async fn call_queued<T: Send + 'static>(
    state: &AppState,
    queued: QueuedWrite<T>,
) -> Result<T, ApiError> {
    match queued.await {
        Queued::Answered(outcome) => outcome.map_err(ApiError::from),
        Queued::Writes(turn) => call(state, move |_| turn.write()).await,
    }
}
