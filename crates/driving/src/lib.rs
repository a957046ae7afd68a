//! What flagsvc's driving adapters (the API, the console, and those to come) share: the one
//! bridge from an async handler to the synchronous use cases. The use cases wait for the
//! database (diesel is synchronous), so they run on actix's blocking pool, which is sized to the
//! connection pool; a handler awaits them without holding an async thread.

use std::sync::Arc;

use service::{Service, ServiceError, ServiceResult};

/// Runs `work` (a use case) on the blocking pool, in the request's tracing span (what the use
/// case logs carries the request id).
///
/// # Errors
/// The use case's error, or [`ServiceError::Unavailable`] when the blocking pool is gone (the
/// server is shutting down).
pub async fn run_blocking<T: Send + 'static>(
    service: &Arc<Service>,
    work: impl FnOnce(&Service) -> ServiceResult<T> + Send + 'static,
) -> ServiceResult<T> {
    let service = Arc::clone(service);
    let span = tracing::Span::current();
    actix_web::web::block(move || span.in_scope(|| work(&service)))
        .await
        .map_err(|_| ServiceError::Unavailable("the server is shutting down".into()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_web::test]
    async fn a_use_case_runs_off_the_async_thread_and_its_error_comes_back() {
        let store = Arc::new(adapter_memory::MemoryStore::new());
        let service = Arc::new(Service::new(
            store,
            Arc::new(service::SystemClock::default()),
            Arc::new(service::PlainRepresentations),
        ));
        let caller = std::thread::current().id();
        let ran_on = run_blocking(&service, |_| Ok(std::thread::current().id()))
            .await
            .unwrap();
        assert_ne!(ran_on, caller);
        let refused: ServiceResult<()> =
            run_blocking(&service, |_| Err(ServiceError::NotFound("gone".into()))).await;
        assert_eq!(refused, Err(ServiceError::NotFound("gone".into())));
    }
}
