//! The bridge from a handler to the blocking use cases: at once, or queued behind a write.

use service::{Queued, QueuedWrite, Service, ServiceResult};

use crate::error::ApiError;
use crate::AppState;

/// Runs a use case on the blocking pool (`driving::run_blocking`) and maps its error.
///
/// # Errors
/// The use case's error, or 503 when the blocking pool is gone.
pub async fn call<T: Send + 'static>(
    state: &AppState,
    work: impl FnOnce(&Service) -> ServiceResult<T> + Send + 'static,
) -> Result<T, ApiError> {
    driving::run_blocking(&state.service, work)
        .await
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
